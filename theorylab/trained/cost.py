r"""Cost and memory of a full-size training on a device, before running it.

A training step costs $\max(t_{\rm device}, t_{\rm launch}) + t_{\rm host}$ (host sampling serial; with the
prefetching feed it overlaps: $\max$ of all three). $t_{\rm device}$ = model FLOPs / (peak x matmul efficiency) +
attention-score memory traffic (the explicit path writes and reads the ``[S, B, H, T, T]`` scores ~14 times per layer
per step, forward and backward; the fused kernel never materialises them); $t_{\rm launch}$ = kernels per step x
the per-kernel host cost of eager PyTorch. Kernel counts per step (counted on the 19M baseline: 1,681, of which
AdamW 816): forward + backward ~6 per parameter tensor + per layer 16 (explicit attention) or 4 (fused); the
per-tensor AdamW 8 per tensor, the fused one ~4 in all; clipping 3 per tensor (per-tensor norms) or 1 per tensor
(multi-tensor norms). These are estimates for planning a GPU window; measured step times replace them
(:func:`theorylab.trained.runner` scales the plan by the throughput it measures first).

Three harnesses (``code``): ``before`` (eager, per-tensor optimiser, explicit attention, serial host sampling),
``fused`` (fused attention, fused AdamW, multi-tensor clipping, prefetching feed) and ``after`` (``fused`` plus the
whole step captured as a CUDA graph for AdamW trainings, :mod:`theorylab.nn.graphs`). A captured step costs the
host one replay, three batch copies and a rate fill ($5 \times$ the launch cost) and the device the larger of its
arithmetic and a floor of ``DeviceProfile.graph_kernel_s`` (2 µs) per kernel: small kernels in a graph still take
~1-2 µs each to start and run, an assumption that the first measured step replaces. Held-out evaluations
(``eval_every``) are eager forwards: per batch, a third of an eager step's kernels or FLOPs. Trainings that a
check loads from another check's checkpoint (:mod:`theorylab.trained.checkpoints`) are not counted again.
"""

from __future__ import annotations

from dataclasses import dataclass

CODES = (
    "before",
    "fused",
    "after",
)  # the harness before the CUDA fast paths, with them, and with CUDA graphs
GRAPH_HOST_LAUNCHES = 5  # host work of a replay: the graph launch, three batch copies, the learning-rate fill


@dataclass(frozen=True)
class DeviceProfile:
    """A device for the cost model: dense bf16 peak, memory bandwidth, usable memory, per-kernel launch cost and
    the fraction of peak that the matmuls of a model of width >= 512 reach (smaller widths scale it down)."""

    name: str
    peak_flops: float
    mem_bandwidth: float
    memory_bytes: float
    launch_s: float = 6e-6
    matmul_efficiency: float = 0.55
    host_cores: int = 16
    graph_kernel_s: float = 2e-6  # device time floor per kernel of a replayed CUDA graph (an assumption)


DEVICES: dict[str, DeviceProfile] = {
    "h100-sxm": DeviceProfile("NVIDIA H100 SXM", 989e12, 3.35e12, 80e9),
    "h100-pcie": DeviceProfile("NVIDIA H100 PCIe", 756e12, 2.0e12, 80e9),
    "h200": DeviceProfile("NVIDIA H200", 989e12, 4.8e12, 141e9),
    "a100": DeviceProfile("NVIDIA A100", 312e12, 2.0e12, 80e9),
}


def profile_for(device: str) -> DeviceProfile:
    """``cuda`` means an H100 SXM (989 TFLOP/s); a key of :data:`DEVICES` or a CUDA device name picks another."""
    key = device.lower()
    if key in ("cuda", "gpu"):
        return DEVICES["h100-sxm"]
    if key in DEVICES:
        return DEVICES[key]
    for k, prof in DEVICES.items():
        if prof.name.lower() in key or k.replace("-", " ") in key:
            return prof
    if "h100" in key:
        return DEVICES["h100-pcie" if "pcie" in key else "h100-sxm"]
    raise ValueError(f"unknown device {device!r}; known: cuda, {', '.join(DEVICES)}")


def _model_shape(config) -> dict:
    """Parameter tensors, parameters and layers of ``config``'s model, built on the meta device (no memory)."""
    from theorylab._extras import require

    torch = require("torch", extra="trained")

    with torch.device("meta"):
        model = config.build(0)
    params = [p for p in model.parameters()]
    inner = getattr(config, "config", config)
    return {
        "tensors": len(params),
        "trainable_tensors": sum(p.requires_grad for p in params),
        "params": sum(p.numel() for p in params),
        "layers": getattr(inner, "n_layers", 1),
        "heads": getattr(inner, "n_heads", 0),
        "d_model": getattr(inner, "d_model", getattr(inner, "hidden", getattr(inner, "d_hidden", 512))),
        "transformer": type(inner).__name__ == "TransformerConfig",
        "lstm": type(inner).__name__ == "LSTMConfig",
        "fused_ok": type(inner).__name__ == "TransformerConfig"
        and inner.attention == "softmax"
        and inner.pos != "alibi"
        and not inner.uniform_attention
        and type(config).__name__ != "AttentionSharpening",
    }


def _flops_per_token(config, T: int, params: int) -> float:
    fpt = getattr(config, "flops_per_token", None)
    return float(fpt(T)) if callable(fpt) else 6.0 * params


def kernels_per_step(shape: dict, T: int, code: str, clip: bool, optimizer: str) -> int:
    """Kernel launches of one training step (see the module docstring for the counts)."""
    fused = code in ("fused", "after")
    n, L = shape["tensors"], shape["layers"]
    k = 6 * n + 20
    if shape["transformer"]:
        k += L * (4 if fused and shape["fused_ok"] else 16)
    if shape["lstm"]:
        k += 12 * T * L  # the hand-written loop over positions, forward and backward
    per_opt = 8 if optimizer == "adamw" else 3
    k += 4 if fused else per_opt * shape["trainable_tensors"]
    if clip:
        k += (shape["tensors"] + 4) if fused else 3 * shape["tensors"] + 4
    return k


def estimate_training(
    training, device: DeviceProfile, code: str = "after", host_sample_s: float = 0.0
) -> dict:
    """Seconds, step time and MFU of ``training`` (a :class:`~theorylab.trained.catalog.Training`) on ``device``
    with the harness ``code`` (see :data:`CODES`). ``host_sample_s``: seconds to sample one
    step's batches on the host (measured by the caller; serial before, overlapped after)."""
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    b = training.budget
    shape = _model_shape(training.config)
    S, B, T = training.n_seeds, b.batch_size, b.seq_len
    fpt = _flops_per_token(training.config, T, shape["params"])
    step_flops = fpt * S * B * T
    eff = device.matmul_efficiency * min(1.0, shape["d_model"] / 512)
    compute_s = step_flops / (device.peak_flops * max(eff, 0.02))
    traffic_s = 0.0
    fused = code in ("fused", "after")
    if shape["transformer"] and not (fused and shape["fused_ok"]):
        traffic_s = 14 * 4 * S * B * shape["heads"] * T * T * shape["layers"] / device.mem_bandwidth
    kernels = kernels_per_step(shape, T, code, b.grad_clip is not None, b.optimizer)
    eager_launch_s = kernels * device.launch_s
    graph = code == "after" and b.optimizer == "adamw"
    launch_s = GRAPH_HOST_LAUNCHES * device.launch_s if graph else eager_launch_s
    floor_s = kernels * device.graph_kernel_s if graph else 0.0
    device_s = max(compute_s + traffic_s, floor_s)
    if fused:  # seeds sampled in parallel threads (half efficiency: the GIL), overlapped with the device
        host_sample_s /= max(1.0, min(S, device.host_cores) / 2)
        step_s = max(device_s, launch_s, host_sample_s)
    else:
        step_s = max(device_s, launch_s) + host_sample_s
    steps = b.steps * training.repeats
    evals = (b.steps // b.eval_every) * b.eval_batches * training.repeats if b.eval_every else 0
    eval_s = evals * max((compute_s + traffic_s) / 3, eager_launch_s / 3)
    return {
        "label": training.label,
        "steps": steps,
        "step_ms": 1e3 * step_s,
        "seconds": steps * step_s + eval_s,
        "eval_seconds": eval_s,
        "flops": step_flops * steps,
        "mfu": step_flops / step_s / device.peak_flops,
        "bound": max(
            ("compute", compute_s),
            ("attention traffic", traffic_s),
            ("graph kernels" if graph else "launches", floor_s if graph else launch_s),
            ("host", host_sample_s),
            key=lambda kv: kv[1],
        )[0],
        "memory_bytes": memory_estimate(training, code, shape),
    }


def memory_estimate(training, code: str = "after", shape: dict | None = None) -> float:
    """Peak device bytes of a training, from the meta-device model: fp32 weights, gradients and two AdamW moments
    (16 bytes per parameter per seed) plus bf16 activations kept for backward. Transformers: per token and layer
    34 d + 5 H T bytes (Korthikanti et al. 2022; the 5 H T score term vanishes with the fused kernel); other
    models: 2 x 4 x 8 widths per token."""
    shape = shape or _model_shape(training.config)
    b = training.budget
    S, B, T = training.n_seeds, b.batch_size, b.seq_len
    weights = 16 * shape["params"] * S
    d, H, L = shape["d_model"], shape["heads"], shape["layers"]
    if shape["transformer"]:
        per_token = L * (34 * d + (0 if code in ("fused", "after") and shape["fused_ok"] else 5 * H * T))
    else:
        per_token = 64 * d * max(L, 1)
    return float(weights + per_token * S * B * T)


def estimate_check(trainings, device: DeviceProfile, code: str = "after", host_seconds: float = 0.0,
                   host_sample=None) -> dict:  # fmt: skip
    """Sum of :func:`estimate_training` over a check's trainings, plus its host work."""
    host_sample = host_sample or {}
    rows = [
        estimate_training(t, device, code, _host_for(host_sample.get(t.label, 0.0), code)) for t in trainings
    ]
    train_s = sum(r["seconds"] for r in rows)
    return {
        "trainings": rows,
        "train_seconds": train_s,
        "host_seconds": host_seconds,
        "seconds": train_s + host_seconds,
        "flops": sum(r["flops"] for r in rows),
        "memory_bytes": max((r["memory_bytes"] for r in rows), default=0.0),
    }


def _host_for(measured, code: str) -> float:
    """The host seconds of ``code``: a (per-seed loop, vectorised) pair picks the vectorised sampler for "after"."""
    if isinstance(measured, tuple):
        return measured[1] if code == "after" else measured[0]
    return float(measured)


def host_sample_seconds(training, reps: int = 2, vectorised: bool = True) -> float:
    """Seconds this machine's host takes to sample one step's batches (all seeds): the numpy sampler, measured;
    ``vectorised``: through the task's multi-seed ``sample_batches`` where it has one (else the per-seed loop)."""
    import time

    import numpy as np

    b = training.budget
    if b.fixed_dataset is not None:
        return 0.0  # minibatches are index draws from a dataset sampled once
    rng = np.random.default_rng(0)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        if vectorised and hasattr(training.task, "sample_batches"):  # the multi-seed sampler the feed uses
            training.task.sample_batches([rng] * training.n_seeds, b.batch_size, b.seq_len)
        else:
            for _ in range(training.n_seeds):
                training.task.sample_batch(rng, b.batch_size, b.seq_len)
        best = min(best, time.perf_counter() - t0)
    return best
