"""Progressive distillation on sparse parity (Liu §4.2 of ``001_6a230b9a9faf2198.txt``).

Two parts:

* **The theory's two-layer teacher, exactly** (numpy, over all 2^d inputs): the symmetric Barak-style
  initialisation of Algorithm 2, the population first-layer gradient (Claim 7), the idealised one-step weights
  of Lemma 63 (``w^(1) = -eta_1 g`` with ``eta_1 = m / (k |zeta_{k-1}|)``, i.e. the weight decay that cancels the
  init) and the teacher's correlations ``E[f^(1)(x) x_j]`` (Lemma 64).
* **Trained teachers and students** (torch, imported lazily): one-hidden-layer ReLU MLPs on +-1 inputs, many
  seeds and schedules trained together as one batched stack (every weight has a leading "run" axis, so R runs
  cost one batched matmul per layer: the seeds are vmapped by construction). Teacher checkpoints are saved every
  ``checkpoint_every`` steps; a student's supervision is a :class:`ProgressiveSchedule` of teacher checkpoints
  (Defs 21-22) queried in the loop with temperature ``tau`` (soft cross-entropy, Eq. 4.91), or the labels.

The harness :func:`theorylab.nn.train` samples batches through a ``Task`` that does not know the step, so a
schedule whose teacher changes with the step does not fit it; :class:`DistillTask` is the harness ``Task`` for a
fixed teacher (one-shot distillation) and shows how the targets are formed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from theorylab.boolean.fourier import hypercube, majority_coefficient
from theorylab.boolean.tasks import SparseParity


# --------------------------------------------------------------------------------------- the theory's teacher
def _check_width(name: str, m: int) -> int:
    if isinstance(m, bool) or not isinstance(m, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"{name} must be a positive int, got {m}")
    return int(m)


@dataclass(frozen=True)
class TwoLayerReLU:
    """``f(x) = sum_i a_i relu(<w_i, x> + b_i)`` with ``W [m, d]``, ``b [m]``, ``a [m]``."""

    W: np.ndarray
    b: np.ndarray
    a: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(np.asarray(x, dtype=np.float64) @ self.W.T + self.b, 0.0) @ self.a

    def pair_outputs(self, x: np.ndarray) -> np.ndarray:
        """Per mirrored pair (i, i + m/2): ``h_i(x) = relu(z + b_i) - relu(-z + b_i)`` with ``z = <w_i, x>``,
        which is what the pair computes up to the factor ``a_i`` when ``w_{i+m/2} = -w_i`` (``[n, m/2]``)."""
        half = len(self.a) // 2
        z = np.asarray(x, dtype=np.float64) @ self.W[:half].T
        return np.maximum(z + self.b[:half], 0.0) - np.maximum(-z + self.b[:half], 0.0)


def symmetric_init(d: int, m: int, k: int, rng: np.random.Generator) -> TwoLayerReLU:
    """Algorithm 2's initialisation: for i < m/2, ``w_i ~ Unif{+-1}^d``, ``b_i`` uniform on the grid
    ``{-1 + 1/k, ..., 1 - 1/k}``, ``a_i ~ Unif{+-1/m}``; mirrored ``w_{i+m/2} = w_i``, ``b_{i+m/2} = b_i``,
    ``a_{i+m/2} = -a_i``, so ``f = 0`` at initialisation."""
    d, m, k = _check_width("d", d), _check_width("m", m), _check_width("k", k)
    if m % 2:
        raise ValueError(f"the symmetric initialisation needs an even width m, got {m}")
    if k > d:
        raise ValueError(f"sparsity k = {k} exceeds the dimension d = {d}")
    h = m // 2
    W = (1 - 2 * rng.integers(0, 2, size=(h, d))).astype(np.float64)
    grid = -1 + np.arange(1, 2 * k) / k
    b = rng.choice(grid, size=h)
    a = (1 - 2 * rng.integers(0, 2, size=h)) / m
    return TwoLayerReLU(np.vstack([W, W]), np.concatenate([b, b]), np.concatenate([a, -a]))


def population_first_layer_gradient(net: TwoLayerReLU, S: Sequence[int], chunk: int = 512) -> np.ndarray:
    """Exact population gradient of the hinge loss ``max(0, 1 - f(x) chi_S(x))`` in the first-layer weights at a
    network with ``f = 0`` on the cube: ``g_ij = -a_i E[chi_S(x) 1[<w_i,x> + b_i >= 0] x_j]`` (``[m, d]``)."""
    d = net.W.shape[1]
    task = SparseParity(d, len(S), tuple(S))
    x, y = task.all_inputs()
    x = x.astype(np.float64)
    yx = (y[:, None] * x).T  # [d, 2^d]
    out = np.empty_like(net.W)
    for s in range(0, len(net.a), chunk):
        ind = (x @ net.W[s : s + chunk].T + net.b[s : s + chunk] >= 0).astype(np.float64)
        out[s : s + chunk] = -(yx @ ind).T * net.a[s : s + chunk, None] / 2**d
    return out


def claim7_gradient(net: TwoLayerReLU, S: Sequence[int]) -> np.ndarray:
    """Claim 7 (sign as derived here): ``g_ij = -1/2 a_i zeta_{|S xor {j}|} chi_{S xor {j}}(w_i)`` (d odd,
    ``w_i`` in {+-1}^d, ``|b_i| < 1``)."""
    m, d = net.W.shape
    if d % 2 == 0:
        raise ValueError(f"Claim 7 needs odd d (no ties in <w, x>), got d = {d}")
    S = set(S)
    g = np.empty((m, d))
    chiS = np.prod(net.W[:, sorted(S)], axis=1)
    for j in range(d):
        size = len(S ^ {j})
        zeta = float(majority_coefficient(d, size))
        chi = chiS * net.W[:, j]  # chi_{S xor {j}}(w) = chi_S(w) w_j for w in {+-1}^d
        g[:, j] = -0.5 * net.a * zeta * chi
    return g


def idealized_one_step_weights(net: TwoLayerReLU, S: Sequence[int]) -> TwoLayerReLU:
    """Lemma 63 with the population gradient (tau_g = 0): ``w^(1) = -eta_1 g``, ``eta_1 = m / (k |zeta_{k-1}|)``.

    Then ``w^(1)_ij = sign(a_i zeta_{k-1}) chi_{S \\ j}(w^(0)_i) / (2k)`` on S. (The printed weight decay
    ``lambda_1 = 1`` does not cancel the initialisation; the cancelling choice is ``lambda_1 = 1/(2 eta_1)``.)
    """
    m, d = net.W.shape
    k = len(S)
    zeta = float(majority_coefficient(d, k - 1))
    if zeta == 0:
        raise ValueError(f"Lemma 63 needs zeta_(k-1) != 0, i.e. even k; got k = {k}")
    eta = m / (k * abs(zeta))
    return TwoLayerReLU(-eta * claim7_gradient(net, S), net.b, net.a)


def degree_one_correlations(net: TwoLayerReLU) -> np.ndarray:
    """``E[f(x) x_j]`` for every coordinate j, exactly over the cube."""
    d = net.W.shape[1]
    x = hypercube(d).astype(np.float64)
    return x.T @ net(x) / 2**d


def sign_corrected_pair_correlations(net0: TwoLayerReLU, net1: TwoLayerReLU, S: Sequence[int]) -> np.ndarray:
    """Per mirrored pair i and j in S: ``s_ij E[h_i(x) x_j]`` with ``s_ij = sign(zeta_{k-1}) chi_S(w^(0)_i)
    w^(0)_ij sign(a_i)`` (the sign Lemma 63 gives ``w^(1)_ij``), ``[m/2, k]``. The proof of Lemma 64 bounds this
    per pair before summing; the sum over pairs is where the signs cancel."""
    d = net0.W.shape[1]
    k = len(S)
    half = len(net0.a) // 2
    x = hypercube(d).astype(np.float64)
    h = net1.pair_outputs(x)  # [2^d, m/2]
    corr = (x[:, list(S)].T @ h).T / 2**d  # [m/2, k]
    zeta = float(majority_coefficient(d, k - 1))
    s = np.sign(zeta) * np.prod(net0.W[:half][:, list(S)], axis=1)[:, None] * net0.W[:half][:, list(S)]
    return s * np.sign(net0.a[:half])[:, None] * corr
