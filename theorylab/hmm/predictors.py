"""Exact optimal predictors $f(x)=E[\\otimes_{\\tau\\in\\mathcal T}x_\\tau\\mid x_t=x]$ for masked prediction
(eq. 2.35).

Under Assumption 5 the hidden chain is stationary and uniform, and the reversed chain has transition
$T^\\top$. Conditioning on the hidden state $h_t$ of the given token (posterior $\\phi(x)$), the targets after
$t$ and those before $t$ are independent, and each side is a product of emission means and transition powers:

$$E[x_{t+s}\\mid h_t]=E\\,T^{s},\\qquad E[x_{t-s}\\mid h_t]=E\\,(T^\\top)^{s},$$

with $E=O$ (one-hot tokens) or $E=M$ (Gaussian means). Examples: $f^{1+s|1}=OT^s\\phi$,
$f^{2\\otimes3|1}=O\\,\\mathrm{diag}(T\\phi)\\,(OT)^\\top$,
$f^{1\\otimes3|2}=(OT^\\top)\\mathrm{diag}(\\phi)(OT)^\\top$,
$f^{1\\otimes2|3}=(OT^\\top)\\mathrm{diag}(T^\\top\\phi)O^\\top$. ``predictor_by_enumeration`` recomputes the
same quantities by summing over all hidden paths (a reference).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

import numpy as np

from theorylab.hmm.models import GHMM, HMM

__all__ = [
    "parse_task",
    "optimal_predictor",
    "predictor_by_enumeration",
    "triple_factors",
    "stack_predictor",
]


def parse_task(task) -> tuple[tuple[int, ...], int]:
    """``"x2x3|x1"``, ``"2,3|1"``, ``"x_2 ⊗ x_3 | x_1"`` or ``((2, 3), 1)`` -> ``((2, 3), 1)``."""
    if isinstance(task, str):
        if task.count("|") != 1:
            raise ValueError(f"task {task!r} must look like 'x2x3|x1' (targets | given)")
        left, right = task.split("|")
        targets = tuple(int(v) for v in re.findall(r"\d+", left))
        given = [int(v) for v in re.findall(r"\d+", right)]
        if len(given) != 1 or not targets:
            raise ValueError(f"task {task!r}: need one given position and at least one target")
        return _check_positions(targets, given[0])
    try:
        targets, given = task
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"task must be a string like 'x2x3|x1' or a pair (targets, given), got {task!r}"
        ) from err
    if isinstance(targets, int | np.integer):
        targets = (targets,)
    return _check_positions(tuple(targets), given)


def _check_positions(targets: Sequence[int], given: int) -> tuple[tuple[int, ...], int]:
    pos = [*targets, given]
    if not all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in pos):
        raise TypeError(f"positions must be integers, got targets={targets!r}, given={given!r}")
    if min(pos) < 1:
        raise ValueError(f"positions are 1-based, got {pos}")
    if len(set(pos)) != len(pos):
        raise ValueError(f"target and given positions must be distinct, got targets={targets}, given={given}")
    return tuple(int(t) for t in targets), int(given)


def _side_moment(E: np.ndarray, P: np.ndarray, distances: Sequence[int]) -> np.ndarray:
    """$S[j,a_1..a_m]=E[\\otimes x\\mid h=j]$ for tokens at the given increasing distances along the chain
    ``P``."""
    k = P.shape[0]
    S = np.eye(k)  # axes (j, [a_1..a_i], h): joint of emitted tokens so far and the current hidden state
    prev = 0
    for dist in distances:
        S = S @ np.linalg.matrix_power(P, dist - prev).T
        S = np.einsum("...h,ah->...ah", S, E)
        prev = dist
    return S.sum(axis=-1)


def _conditional_moment(E: np.ndarray, T: np.ndarray, phi: np.ndarray, offsets: Sequence[int]) -> np.ndarray:
    """$\\sum_j\\phi_j\\,E[\\otimes_\\tau x_\\tau\\mid h_t=j]$ with target offsets $\\tau-t$ (any order,
    non-zero)."""
    d, k = E.shape
    right = sorted(o for o in offsets if o > 0)
    left = sorted(-o for o in offsets if o < 0)
    R = _side_moment(E, T, right).reshape(k, -1)
    L = _side_moment(E, T.T, left).reshape(k, -1)
    out = np.einsum("nj,jl,jr->nlr", phi, L, R).reshape(phi.shape[0], *([d] * (len(left) + len(right))))
    # current axis order: left targets by increasing distance, then right targets by increasing distance
    current = [-o for o in left] + right
    order = [current.index(o) for o in offsets]
    return out.transpose(0, *[1 + i for i in order])


def optimal_predictor(model: HMM | GHMM, target, given: int | None = None):
    """The optimal squared-loss predictor of $\\otimes_{\\tau\\in\\text{target}}x_\\tau$ from
    $x_{\\text{given}}$.

    ``target``: a position or a sequence of positions (1-based, in output-axis order), or a task string
    ``"x2x3|x1"`` with ``given=None``. HMM: an array ``f`` of shape ``(d, d, ..., d)`` with ``f[j] =
    E[e_{x_t1} ⊗ ... | x_given = e_j]`` (the conditional pmf of the targets). G-HMM: a function mapping points
    of shape ``(..., d)`` to ``(..., d, ..., d)``.
    """
    targets, g = parse_task(target) if given is None else parse_task((target, given))
    offsets = [t - g for t in targets]
    if isinstance(model, HMM):
        return _conditional_moment(model.O, model.T, model.posterior(), offsets)
    if isinstance(model, GHMM):

        def f(x) -> np.ndarray:
            x = np.asarray(x, dtype=float)
            phi = model.posterior(x)
            flat = phi.reshape(-1, model.k)
            out = _conditional_moment(model.M, model.T, flat, offsets)
            return out.reshape(*phi.shape[:-1], *out.shape[1:])

        f.__doc__ = f"E[⊗ x_{targets} | x_{g} = x] for a G-HMM"
        f.d = model.d  # type: ignore[attr-defined]
        return f
    raise TypeError(f"model must be an HMM or GHMM, got {type(model).__name__}")


def _paths(k: int, length: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=length)), dtype=int).reshape(-1, length)


def predictor_by_enumeration(model: HMM | GHMM, target, given: int):
    """Reference predictor summing over all $k^L$ hidden paths $h_1..h_L$ ($L$ = the largest position).

    $P(h_{1:L})=\\frac1k\\prod_t T_{h_{t+1}h_t}$. HMM: joint pmf of the tokens, divided by the marginal of the
    given token. G-HMM: path weights times the Gaussian likelihood of the given point, normalized.
    """
    targets, g = parse_task((target, given))
    L = max(*targets, g)
    k = model.k
    if k**L > 2_000_000:
        raise ValueError(f"{k}^{L} hidden paths are too many to enumerate")
    paths = _paths(k, L)
    w = np.full(len(paths), 1.0 / k)
    for t in range(L - 1):
        w = w * model.T[paths[:, t + 1], paths[:, t]]
    E = model.emission
    means = [E[:, paths[:, t - 1]].T for t in targets]  # each (paths, d)
    letters = "abcdefghi"[: len(targets)]
    spec_t = ",".join(f"p{c}" for c in letters)
    if isinstance(model, HMM):
        joint = np.einsum(f"p,pj,{spec_t}->j{letters}", w, model.O[:, paths[:, g - 1]].T, *means)
        marg = joint.reshape(model.d, -1).sum(axis=1)
        return joint / marg.reshape(-1, *([1] * len(targets)))

    def f(x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1, model.d)
        logl = -0.5 * np.sum((flat[:, None, :] - model.M.T[None, :, :]) ** 2, axis=-1)  # (n, k)
        logl -= logl.max(axis=1, keepdims=True)
        lik = np.exp(logl)[:, paths[:, g - 1]] * w  # (n, paths)
        lik /= lik.sum(axis=1, keepdims=True)
        out = np.einsum(f"np,{spec_t}->n{letters}", lik, *means)
        return out.reshape(*x.shape[:-1], *out.shape[1:])

    f.d = model.d  # type: ignore[attr-defined]
    return f


def triple_factors(model: HMM | GHMM, task, points=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CP factors $(A, B, C)$ of the stacked triple predictor $W[n]=f(x^{(n)})$ (Theorems 7, 8, eqs. 2.36-2.41).

    Everything is conditioned on the middle hidden state $h_2$: $E[x_1\\mid h_2]=ET^\\top$, $E[x_2\\mid
    h_2]=E$, $E[x_3\\mid h_2]=ET$, and $P(h_2\\mid x_1)=T\\phi$, $P(h_2\\mid x_2)=\\phi$, $P(h_2\\mid
    x_3)=T^\\top\\phi$. Mode 1 is indexed by the inputs: all one-hot tokens (HMM) or ``points`` (G-HMM, shape
    (N, d)).
    """
    targets, g = parse_task(task)
    if len(targets) != 2 or sorted([*targets, g]) != [1, 2, 3]:
        raise ValueError(f"triple_factors needs a task on positions 1, 2, 3 with two targets, got {task!r}")
    T = model.T
    # P(h_2 | h_g) and P(h_p | h_2) as column-stochastic kernels
    to_mid = {1: T, 2: np.eye(model.k), 3: T.T}[g]
    from_mid = {1: T.T, 2: np.eye(model.k), 3: T}
    if isinstance(model, HMM):
        phi = model.posterior()
    else:
        if points is None:
            raise ValueError("a G-HMM needs query points (N, d) for the first mode")
        phi = model.posterior(np.asarray(points, dtype=float).reshape(-1, model.d))
    A = phi @ to_mid.T
    B = model.emission @ from_mid[targets[0]]
    C = model.emission @ from_mid[targets[1]]
    return A, B, C


def stack_predictor(pred: np.ndarray | Callable, points=None) -> np.ndarray:
    """The 3-tensor $W=\\sum_x x\\otimes f(x)$ of the thesis: for a discrete predictor array this is the array
    itself ($W[j]=f(e_j)$); for a G-HMM predictor function, $W[n]=f(x^{(n)})$ over the query ``points``."""
    if callable(pred):
        if points is None:
            raise ValueError("a predictor function needs query points")
        return np.asarray(pred(np.asarray(points, dtype=float)))
    W = np.asarray(pred, dtype=float)
    if W.ndim != 3:
        raise ValueError(f"a triple predictor array has shape (d, d, d), got {W.shape}")
    return W
