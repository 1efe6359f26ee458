r"""For comparison only: the balance metric logged as ``balance_variation`` by the authors' training code
(YuchenLi01/transformers_are_uninterpretable), rewritten from its description on theorylab's weights.

It is **not** the thesis's balance violation $\beta=\mathbb E_{\rho,i,\ell}[\|S_{\rho,i,\ell}\|/P_\rho]$
(:func:`theorylab.attention.dyck.balance.balance_ratio`, 0 on every exact Theorem-1 solution). It probes the
sequence $t_S\,(^D\,)^D\,[^D\,]^D$ and differs in three ways:

1. the closing brackets of that sequence come in decreasing depth $D-1, \dots, 0$ but are indexed as if
   increasing, so "the close at depth $d$" is the close at depth $D-1-d$: the query $(j, d')$ is the close of
   depth $D-1-d'$ and the "pair" $(i, \ell)$ couples the open at depth $\ell$ with the close at depth
   $D-\ell$ instead of $\ell-1$;
2. per query it takes the **max** over pairs of $\|u(\text{open}) + u(\text{close})\|$ (the thesis: the mean of
   the ratios over pairs);
3. the denominator is the **minimum** of $\|Q(\rho, \tilde t)\|$ over all stacks $\tilde t$ (the thesis's
   $P_\rho$ (3.35) minimises over the stacks whose top differs from the minimiser's).

The softmax normalisation at a query cancels in each ratio, so the unnormalised $u$ of (3.29) is used.
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.attention.dyck.balance import DyckWeights, _u_table, close_index, open_index

__all__ = ["authors_balance_variation"]


def authors_balance_variation(w: DyckWeights) -> float:
    """The authors' ``balance_variation`` of a minimal-first-layer model (comparison only, see the module
    docstring): the mean over closing queries of max-pair norm / min-stack norm, with their depth indexing."""
    if not isinstance(w, DyckWeights):
        raise TypeError(f"w must be DyckWeights, got {type(w).__name__}")
    G, V = _u_table(w)
    D, start = w.depth, 2 * w.k * w.depth

    def listed(t: int, d: int, closing: bool) -> int:
        """Index of the token at the probe position the code reads as (type t, depth d)."""
        return close_index(t, D - 1 - d, D) if closing else open_index(t, d + 1, D)

    ratios = []
    for tq in range(w.k):
        for dq in range(1, D):
            rho = listed(tq, dq, True)

            def u(idx: int, rho: int = rho) -> np.ndarray:
                return np.exp(G[idx, rho]) * V[:, idx]

            num = max(
                np.linalg.norm(u(listed(t, d, False)) + u(listed(t, d, True)))
                for t in range(w.k)
                for d in range(D)
            )
            base = u(start) + u(listed(tq, dq, False)) + u(listed(tq, dq, True))
            den = min(
                np.linalg.norm(base + sum((u(listed(t, d, False)) for d, t in enumerate(stack)), 0 * base))
                for stack in itertools.product(range(w.k), repeat=dq)
            )
            ratios.append(num / den)
    return float(np.mean(ratios))
