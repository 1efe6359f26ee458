"""Samplers of an Ising model as exact Markov chains on its $2^N$ states (``theorylab.markov.FiniteChain``).

* weighted block dynamics (Def 4.1.6): $P=\\sum_Kp_{\\mathcal K}(K)P_K$, $P_K(x,y)=\\mathbf 1[x_{-K}=y_{-K}]p(y_K\\mid x_{-K})$;
* k-Gibbs (Def 4.1.10): K uniform over k-subsets; random-scan Gibbs is k = 1;
* adaptive block dynamics (the X-chain of Prop 4.1.1):
  $P(x,y)=\\sum_Kp_{\\mathcal K}(K\\mid x)\\mathbf 1[y_{-K}=x_{-K}]p(y_K\\mid x_{-K},K)$;
* independent parallel sampler (Def 4.1.11): $P(x,y)=\\prod_ip(y_i\\mid x_{-i})$; it is reversible with stationary law
  $\\pi_{\\rm par}(x)\\propto e^{h^\\top x}\\prod_i\\cosh(h_i+(J_{\\rm eff}x)_i)\\ne p$ (a derived fact).
"""

from __future__ import annotations

import numpy as np

from theorylab.ising.expfam import mask_law
from theorylab.ising.model import IsingModel
from theorylab.markov import FiniteChain


def _check_model(model) -> IsingModel:
    if not isinstance(model, IsingModel):
        raise TypeError(f"model must be an IsingModel, got {type(model).__name__}")
    return model


def block_matrix(model: IsingModel, K, mask_weight=None) -> np.ndarray:
    """$P_K(x,y)=\\mathbf 1[x_{-K}=y_{-K}]\\,p(y)w(y)/\\sum_{z:z_{-K}=x_{-K}}p(z)w(z)$ (w = mask weight, default 1)."""
    fam = model.exp_family([])
    inv = fam.group_index(K)
    w = model.probs() if mask_weight is None else model.probs() * mask_weight
    W = np.bincount(inv, weights=w)
    col = w / np.where(W > 0, W, 1.0)[inv]
    return (inv[:, None] == inv[None, :]) * col[None, :]


def block_dynamics(model: IsingModel, masks, weights=None) -> FiniteChain:
    """Weighted block dynamics; ``masks`` an int k (uniform k-subsets) or a list of subsets with ``weights``."""
    model = _check_model(model)
    law = mask_law(model.N, masks, weights)
    if law.adaptive:
        raise ValueError("weights depend on the state: use adaptive_block_dynamics")
    S = 2**model.N
    P = np.zeros((S, S))
    for K, w in zip(law.masks, law.weights, strict=True):
        if w > 0:
            P += w * block_matrix(model, K)
    return FiniteChain(P, pi=model.probs())


def k_gibbs(model: IsingModel, k: int) -> FiniteChain:
    """k-Gibbs: resample a uniform random k-subset of spins from its conditional law."""
    return block_dynamics(_check_model(model), k)


def random_scan_gibbs(model: IsingModel) -> FiniteChain:
    """Random-scan (1-)Gibbs sampler."""
    return k_gibbs(model, 1)


def adaptive_block_dynamics(model: IsingModel, masks, weights) -> FiniteChain:
    """The X-chain of adaptive masking; ``weights`` has shape (2^N, M): $p_{\\mathcal K}(K\\mid x)$ per state."""
    model = _check_model(model)
    law = mask_law(model.N, masks, weights)
    W = law.weights if law.adaptive else np.broadcast_to(law.weights, (2**model.N, len(law.masks)))
    S = 2**model.N
    P = np.zeros((S, S))
    for m, K in enumerate(law.masks):
        if W[:, m].any():
            P += W[:, m][:, None] * block_matrix(model, K, W[:, m])
    return FiniteChain(P)


def independent_parallel_matrix(model: IsingModel) -> np.ndarray:
    """$P(x,y)=\\prod_i\\sigma(2y_if_i(x))$ with $f=h+J_{\\rm eff}x$."""
    X = model.states().astype(float)
    F = model.local_fields()
    logc = np.logaddexp(F, -F)  # log 2cosh f
    logP = F @ X.T - logc.sum(axis=1)[:, None]
    P = np.exp(logP)
    return P / P.sum(axis=1, keepdims=True)


def independent_parallel(model: IsingModel) -> FiniteChain:
    """Independent parallel sampler: every spin resampled from $p(x_i\\mid x_{-i})$ at once, independently."""
    return FiniteChain(independent_parallel_matrix(_check_model(model)))


def independent_parallel_stationary(model: IsingModel) -> np.ndarray:
    """Closed-form stationary law $\\pi_{\\rm par}(x)\\propto e^{h^\\top x}\\prod_i\\cosh(h_i+(J_{\\rm eff}x)_i)$."""
    model = _check_model(model)
    F = model.local_fields()
    logpi = model.states() @ model.h + (np.logaddexp(F, -F) - np.log(2)).sum(axis=1)
    pi = np.exp(logpi - logpi.max())
    return pi / pi.sum()
