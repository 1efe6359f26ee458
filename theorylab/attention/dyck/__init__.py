"""The bounded-Dyck attention family (Liu §3.6 = Li §2.2).

Modules: :mod:`.exact` (exact sums of exponentials), :mod:`.balance` (balance condition, constructions,
pumping), :mod:`.bounds` (Thm 2, Lemmas 24 and 41), :mod:`.trained` (torch model; imported on demand),
:mod:`.counterexamples` (registered generators).
"""
