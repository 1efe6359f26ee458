"""theorylab: the theorems of modern ML theory as checkable code.

Subpackages are organised by field of objects: ``tensors``, ``hmm``, ``algebra``, ``automata``,
``languages``, ``attention`` and ``nn``. The claim registry lives in :mod:`theorylab.claims`.
Heavy dependencies (torch, tensorly, cvxpy) are imported lazily by the modules that need them.
"""

__version__ = "0.1.0"
