"""Claim check of paper 000's meta-learning adversary (``000_7523275b422019f8.txt``, A.4): the ridge head in closed
form, the validation loss's gradient through it, and the adversary's step."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.landscape.adversary import (
    adversary_objective,
    ridge_head,
    validation_gradient,
    validation_loss,
)
from theorylab.testing import rejects


def _instance(seed: int = 0):
    """D1: 12 samples, D2: 9 samples, 5 features, one-hot labels of 3 classes (n1 > k and n1 < k are both used)."""
    rng = np.random.default_rng(seed)
    H1, H2 = rng.normal(size=(12, 5)), rng.normal(size=(9, 5))
    return H1, np.eye(3)[rng.integers(0, 3, 12)], H2, np.eye(3)[rng.integers(0, 3, 9)]


def _central_differences(H1, Y1, H2, Y2, rho, e=1e-6):
    out = []
    for which in (0, 1):
        base = (H1, H2)[which]
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[idx] += e
            minus[idx] -= e
            args_p = (plus, Y1, H2, Y2) if which == 0 else (H1, Y1, plus, Y2)
            args_m = (minus, Y1, H2, Y2) if which == 0 else (H1, Y1, minus, Y2)
            g[idx] = (validation_loss(*args_p, rho) - validation_loss(*args_m, rho)) / (2 * e)
        out.append(g)
    return out


@pytest.mark.claim("flat.alg.adversarial", tier="exact")
def test_closed_form_head_and_gradient_through_it(measure) -> None:
    H1, Y1, H2, Y2 = _instance()
    for rho, rows in ((0.3, 12), (0.05, 4)):  # n1 > k, and n1 < k where only the ridge term makes phi unique
        h1, y1 = H1[:rows], Y1[:rows]
        phi = ridge_head(h1, y1, rho)
        aug = np.linalg.lstsq(
            np.vstack([h1, np.sqrt(rho) * np.eye(5)]), np.vstack([y1, np.zeros((5, 3))]), rcond=None
        )
        assert np.abs(phi - aug[0]).max() <= 1e-12
        assert (
            np.abs(2 * h1.T @ (h1 @ phi - y1) + 2 * rho * phi).max() <= 1e-12
        )  # the ridge objective's gradient
        g1, g2 = validation_gradient(h1, y1, H2, Y2, rho)
        fd1, fd2 = _central_differences(h1, y1, H2, Y2, rho)
        # central differences: truncation O(e^2 V''') + round-off O(1e-16 V / e), both below 1e-7 here
        assert np.abs(g1 - fd1).max() <= 1e-7 and np.abs(g2 - fd2).max() <= 1e-7
    # the adversary's step: at fixed pre-training loss, moving the features along +grad V lowers L - lambda V at
    # the first-order rate eps |grad V|^2
    g1, g2 = validation_gradient(H1, Y1, H2, Y2, 0.3)
    eps, lam = 1e-4, 2.0
    before = adversary_objective(1.0, H1, Y1, H2, Y2, lam, 0.3)
    after = adversary_objective(1.0, H1 + eps * g1, Y1, H2 + eps * g2, Y2, lam, 0.3)
    rate = eps * lam * (np.sum(g1**2) + np.sum(g2**2))
    assert abs((before - after) / rate - 1) <= 1e-3
    measure("first-order rate ratio", (before - after) / rate)


@pytest.mark.claim("flat.alg.adversarial", tier="exact", control=True)
def test_control_head_held_fixed_misses_the_gradient() -> None:
    # differentiating V with phi held fixed (ignoring that the head is refit on D1) gives dV/dH1 = 0
    H1, Y1, H2, Y2 = _instance()
    fd1, _ = _central_differences(H1, Y1, H2, Y2, 0.3)
    assert np.abs(fd1).max() > 0.05
    rejects(lambda: ridge_head(H1[:4], Y1[:4], 0.0), r"rho must be > 0")
    rejects(lambda: validation_loss(H1, Y1, H2[:, :4], Y2, 0.3), r"D1 and D2 must have the same")
    rejects(lambda: adversary_objective(1.0, H1, Y1, H2, Y2, -1.0, 0.3), r"lam must be >= 0")
