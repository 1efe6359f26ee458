"""Curvature of a loss: Hessian traces, Gauss-Newton traces, gradient-noise covariance (torch.func).

Parameters are a flat float tensor ``theta`` (``trace_hessian`` also takes a dict, list or tuple of tensors,
flattened in order). For softmax models
``logits_fn(theta, x)`` returns the logits of one input; a finite input set ``inputs`` with probabilities
``weights`` plays the population.

* ``trace_hessian(loss_fn, theta, method)``: $\\mathrm{Tr}\\nabla^2L$ exactly (``"exact"``: $d$ Hessian-vector
  products $e_i^\\top He_i$, vectorised with ``vmap`` over forward-over-reverse ``jvp(grad)``; or the dense
  ``torch.func.hessian`` for $d\\le$ ``dense_limit``) or by Hutchinson ($\\mathbb E_v v^\\top Hv$, Rademacher $v$),
  which also returns a standard error.
* ``trace_ggn``: $\\mathrm{Tr}\\,G$, $G=\\mathbb E_x J^\\top(\\mathrm{diag}\\,p-pp^\\top)J=\\mathbb E_x\\mathbb E_{y\\sim p}
  \\nabla\\log p_y\\nabla\\log p_y^\\top$ (model Fisher), exact.
* ``gradient_covariance``: $\\Sigma=\\mathbb E_x\\mathbb E_{y\\sim p^*}gg^\\top-\\nabla L\\nabla L^\\top$,
  $g=\\nabla\\log f_y$ (Lemma 3.2 of ``000_7523275b422019f8.txt``; the printed $\\nabla L^\\top\\nabla L$ is an
  outer product).
* ``trace_estimator``: the B.1 Monte Carlo estimator (contexts from data, $y$ from the **model**), unbiased for
  $\\mathrm{Tr}\\,G$ at every $\\theta$, hence for $\\mathrm{Tr}\\nabla^2L$ only at saturation.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from theorylab._extras import needs

with needs("trained"):
    import torch
    from torch.func import functional_call, grad, hessian, jacrev, jvp, vmap

__all__ = [
    "TraceEstimate",
    "cross_entropy_loss",
    "flatten_params",
    "gradient_covariance",
    "hessian_matrix",
    "per_sample_grads",
    "trace_estimator",
    "trace_ggn",
    "trace_hessian",
    "trace_hessian_loop",
]


@dataclass(frozen=True)
class TraceEstimate:
    """A trace value with its standard error (0 for exact methods) and the number of probes used."""

    value: float
    stderr: float
    probes: int

    def __float__(self) -> float:
        return self.value


def _as_vector(theta, name: str = "theta") -> torch.Tensor:
    if isinstance(theta, np.ndarray):
        theta = torch.from_numpy(theta)
    if not isinstance(theta, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor or numpy array, got {type(theta).__name__}")
    if theta.ndim != 1 or theta.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D parameter vector, got shape {tuple(theta.shape)}")
    if not theta.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {theta.dtype}")
    if not torch.isfinite(theta).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    return theta.detach()


def flatten_params(params: dict[str, torch.Tensor]):
    """``(theta, unflatten)``: the concatenated parameters and the inverse map to a dict (for ``functional_call``)."""
    if not isinstance(params, dict) or not params:
        raise TypeError("params must be a non-empty dict of tensors")
    names = list(params)
    shapes = [params[n].shape for n in names]
    sizes = [math.prod(s) for s in shapes]
    theta = torch.cat([params[n].detach().reshape(-1) for n in names])

    def unflatten(vec: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: c.reshape(s) for n, c, s in zip(names, torch.split(vec, sizes), shapes, strict=True)}

    return theta, unflatten


def module_loss(module: torch.nn.Module, loss: Callable):
    """``(theta, loss_fn)`` for a module: ``loss_fn(theta) = loss(functional_call(module, unflatten(theta)))``."""
    theta, unflatten = flatten_params(dict(module.named_parameters()))
    return theta, lambda vec: loss(lambda *a: functional_call(module, unflatten(vec), a))


@cache
def _forward_ad_ready() -> None:
    """Load torch's forward-mode AD decompositions once, quietly: torch scripts each of them with the deprecated
    ``torch.jit.script`` on first use of ``jvp`` (one DeprecationWarning per decomposition, from torch's code)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\.script.*deprecated", category=DeprecationWarning
        )
        from torch._decomp import decompositions_for_jvp  # noqa: F401


def hessian_matrix(loss_fn: Callable[[torch.Tensor], torch.Tensor], theta) -> torch.Tensor:
    """The dense Hessian $\\nabla^2L(\\theta)$ (``torch.func.hessian``)."""
    _forward_ad_ready()
    return hessian(loss_fn)(_as_vector(theta))


def _hvp_fn(loss_fn, theta):
    _forward_ad_ready()
    g = grad(loss_fn)
    return lambda v: jvp(g, (theta,), (v,))[1]


def _flat_loss(loss_fn: Callable, params) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]:
    """``(loss of one flat vector, that vector)`` for ``params`` given as one flat tensor (``loss_fn`` takes it as
    is) or as a dict, list, tuple or other iterable of tensors (``model.parameters()``,
    ``dict(model.named_parameters())``): ``loss_fn`` then receives the same structure, rebuilt from the vector."""
    if isinstance(params, torch.Tensor | np.ndarray):
        return loss_fn, _as_vector(params, "params")
    if isinstance(params, Mapping):
        names, tensors = list(params), list(params.values())
    elif isinstance(params, str | bytes) or not hasattr(params, "__iter__"):
        raise TypeError(
            f"params must be a tensor or a dict, list or tuple of tensors, got {type(params).__name__}"
        )
    else:
        names, tensors = None, list(params)
    if not tensors:
        raise ValueError("params is empty: no parameter tensors")
    bad = [i for i, t in enumerate(tensors) if not isinstance(t, torch.Tensor)]
    if bad:
        where = names[bad[0]] if names else f"entry {bad[0]}"
        raise TypeError(f"params {where} is a {type(tensors[bad[0]]).__name__}, not a torch tensor")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise TypeError(f"params mix dtypes {sorted(str(d) for d in dtypes)}: use one floating dtype")
    shapes = [t.shape for t in tensors]
    sizes = [math.prod(sh) for sh in shapes]
    theta = _as_vector(torch.cat([t.detach().reshape(-1) for t in tensors]), "params")
    as_tuple = isinstance(params, tuple)

    def flat_loss(vec: torch.Tensor) -> torch.Tensor:
        parts = [c.reshape(sh) for c, sh in zip(torch.split(vec, sizes), shapes, strict=True)]
        if names is not None:
            return loss_fn(dict(zip(names, parts, strict=True)))
        return loss_fn(tuple(parts) if as_tuple else parts)

    return flat_loss, theta


def trace_hessian(
    loss_fn: Callable[..., torch.Tensor],
    params,
    method: str = "exact",
    *,
    n_probes: int = 100,
    generator: torch.Generator | None = None,
    chunk: int = 256,
    dense_limit: int = 0,
) -> TraceEstimate:
    """$\\mathrm{Tr}\\nabla^2L(\\theta)$: ``method="exact"`` (all $d$ diagonal entries through batched HVPs, or the
    dense Hessian when $d\\le$ ``dense_limit``) or ``"hutchinson"`` (``n_probes`` Rademacher probes).

    ``params``: one flat tensor $\\theta$, or a dict, list or tuple of tensors (``dict(model.named_parameters())``,
    ``list(model.parameters())``, or the generator ``model.parameters()`` itself, passed on as a list); ``loss_fn``
    takes the same structure. The trace is over all their entries."""
    _forward_ad_ready()
    loss_fn, theta = _flat_loss(loss_fn, params)
    d = theta.numel()
    if method == "exact":
        if d <= dense_limit:
            return TraceEstimate(float(torch.trace(hessian(loss_fn)(theta))), 0.0, d)
        hvp = vmap(_hvp_fn(loss_fn, theta))
        eye = torch.eye(d, dtype=theta.dtype)
        total = 0.0
        for start in range(0, d, chunk):
            block = eye[start : start + chunk]
            total += float((hvp(block) * block).sum())
        return TraceEstimate(total, 0.0, d)
    if method == "hutchinson":
        if int(n_probes) < 2:
            raise ValueError(f"n_probes must be >= 2 for a standard error, got {n_probes}")
        hvp = vmap(_hvp_fn(loss_fn, theta))
        vals = []
        for start in range(0, int(n_probes), chunk):
            b = min(chunk, int(n_probes) - start)
            v = torch.randint(0, 2, (b, d), generator=generator).to(theta.dtype) * 2 - 1
            vals.append((hvp(v) * v).sum(dim=1))
        vals = torch.cat(vals)
        return TraceEstimate(float(vals.mean()), float(vals.std() / math.sqrt(vals.numel())), vals.numel())
    raise ValueError(f"method must be 'exact' or 'hutchinson', got {method!r}")


def trace_hessian_loop(loss_fn: Callable[[torch.Tensor], torch.Tensor], theta) -> float:
    """The naive reference: one double-backward per coordinate, $\\partial_i(\\partial_iL)$ (benchmark peer)."""
    theta = _as_vector(theta).clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss_fn(theta), theta, create_graph=True)
    total = 0.0
    for i in range(theta.numel()):
        (row,) = torch.autograd.grad(g[i], theta, retain_graph=True)
        total += float(row[i])
    return total


def per_sample_grads(
    loss_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], theta, inputs, targets
) -> torch.Tensor:
    """(N, d) per-example gradients of ``loss_fn(theta, x, y)`` by ``torch.func.vmap(grad)``."""
    theta = _as_vector(theta)
    return vmap(grad(loss_fn), in_dims=(None, 0, 0))(theta, inputs, targets)


def _population(inputs, weights) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(inputs, torch.Tensor):
        inputs = torch.as_tensor(np.asarray(inputs))
    n = inputs.shape[0]
    if weights is None:
        w = torch.full((n,), 1.0 / n, dtype=torch.float64)
    else:
        w = torch.as_tensor(np.asarray(weights, dtype=np.float64))
        if w.shape != (n,) or (w < 0).any() or abs(float(w.sum()) - 1) > 1e-9:
            raise ValueError(f"weights must be a probability vector over the {n} inputs")
    return inputs, w


def _log_probs_jac(logits_fn, theta, inputs):
    """(N, c) log-probabilities and their (N, c, d) Jacobian."""

    def logp(th, x):
        return torch.log_softmax(logits_fn(th, x), dim=-1)

    lp = vmap(logp, in_dims=(None, 0))(theta, inputs)
    J = vmap(jacrev(logp), in_dims=(None, 0))(theta, inputs)
    return lp, J


def cross_entropy_loss(logits_fn, inputs, target_probs, weights=None):
    """$L(\\theta)=\\mathbb E_x\\sum_yp^*(y\\mid x)(-\\log f_\\theta(x)_y)$ as a function of ``theta``."""
    inputs, w = _population(inputs, weights)
    P = torch.as_tensor(np.asarray(target_probs, dtype=np.float64))
    if P.ndim != 2 or P.shape[0] != inputs.shape[0]:
        raise ValueError(f"target_probs must be (N, c) with N = {inputs.shape[0]}, got {tuple(P.shape)}")

    def loss(theta):
        lp = vmap(lambda x: torch.log_softmax(logits_fn(theta, x), dim=-1))(inputs)
        return -(w * (P * lp).sum(dim=1)).sum()

    return loss


def trace_ggn(logits_fn, theta, inputs, weights=None) -> float:
    """$\\mathrm{Tr}\\,G(\\theta)=\\mathbb E_x\\sum_yp_\\theta(y\\mid x)\\|\\nabla_\\theta\\log p_\\theta(y\\mid x)\\|^2$ (exact)."""
    theta = _as_vector(theta)
    inputs, w = _population(inputs, weights)
    lp, J = _log_probs_jac(logits_fn, theta, inputs)
    return float((w[:, None] * lp.exp() * (J**2).sum(dim=2)).sum())


def gradient_covariance(logits_fn, theta, inputs, target_probs, weights=None) -> torch.Tensor:
    """$\\Sigma(\\theta)=\\mathbb E_x\\mathbb E_{y\\sim p^*(\\cdot|x)}gg^\\top-\\nabla L\\nabla L^\\top$ with
    $g=\\nabla_\\theta\\log f_\\theta(x)_y$ (per-sample gradients by ``jacrev``/``vmap``)."""
    theta = _as_vector(theta)
    inputs, w = _population(inputs, weights)
    P = torch.as_tensor(np.asarray(target_probs, dtype=np.float64))
    _, J = _log_probs_jac(logits_fn, theta, inputs)
    if P.shape != J.shape[:2]:
        raise ValueError(f"target_probs must have shape {tuple(J.shape[:2])}, got {tuple(P.shape)}")
    coef = w[:, None] * P
    second = torch.einsum("nc,ncd,nce->de", coef, J, J)
    mean = -torch.einsum("nc,ncd->d", coef, J)  # = grad L
    return second - torch.outer(mean, mean)


def trace_estimator(
    logits_fn, theta, inputs, weights=None, *, n_contexts: int = 1000, n_labels: int = 10, rng=None
) -> TraceEstimate:
    """B.1 of ``000_7523275b422019f8.txt``: sample contexts from the data, $y\\sim f_\\theta$ (the model), average
    $\\|\\nabla\\log f_y\\|^2$. Per-sample gradients by ``vmap(grad)``; returns mean and standard error."""
    theta = _as_vector(theta)
    inputs, w = _population(inputs, weights)
    rng = np.random.default_rng(0) if rng is None else rng
    idx = rng.choice(inputs.shape[0], size=int(n_contexts), p=w.numpy())
    x = inputs[torch.as_tensor(idx)]
    probs = vmap(lambda xx: torch.softmax(logits_fn(theta, xx), dim=-1))(x).detach().numpy()
    cum = probs.cumsum(axis=1)
    u = rng.random((int(n_contexts), int(n_labels), 1))
    ys = (u > cum[:, None, :]).sum(axis=2).clip(max=probs.shape[1] - 1)

    def logp(th, xx, onehot):
        return (torch.log_softmax(logits_fn(th, xx), dim=-1) * onehot).sum()

    xs = x.repeat_interleave(int(n_labels), dim=0)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(ys.reshape(-1)), probs.shape[1]).to(theta.dtype)
    g = vmap(grad(logp), in_dims=(None, 0, 0))(theta, xs, onehot)
    per_ctx = (g**2).sum(dim=1).reshape(int(n_contexts), int(n_labels)).mean(dim=1)
    return TraceEstimate(
        float(per_ctx.mean()), float(per_ctx.std() / math.sqrt(per_ctx.numel())), per_ctx.numel()
    )
