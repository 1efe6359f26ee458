r"""The whole training step captured once as a CUDA graph and replayed: one launch per step instead of hundreds.

Small models over long budgets are launch-bound in eager PyTorch: every kernel costs the host ~6 µs to launch and a
step of a 4-layer $d=512$ Transformer has ~700 of them, while its arithmetic takes a fraction of that. A CUDA graph
records the kernels of one step (forward, backward, clipping, the fused optimiser and the metric window) and
replays them with one call. The recipe is PyTorch's whole-network capture: a few eager steps first (on a side
stream: lazy initialisation of the optimiser state and the libraries' workspaces), gradients set to ``None``
before capture (so the captured backward writes them rather than accumulating), static input buffers that each
step's batch is copied into, and the learning rate as a device tensor that the captured fused AdamW reads.

The replayed step computes what the eager step computes (the same kernels on the same buffers). A graph is tied to
the tensors it was captured with, so it is captured once per ``train()`` stack (a few milliseconds, against
40,000 replays), not compiled. On the CPU there is nothing to capture: :class:`StaticStep` runs the same
static-buffer step eagerly, which is how the code path is rehearsed and tested without a GPU. If capture fails on a
GPU (an operation that synchronises with the host, for instance), the step falls back to eager and says why.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

from theorylab._extras import needs

with needs("trained"):
    import torch

#: eager steps before capture on CUDA (PyTorch's recipe warms up on a side stream); on the CPU one eager step, so
#: that a 2-step rehearsal exercises the static-buffer step too
WARMUP_STEPS = {"cuda": 3, "cpu": 1}


def graphs_enabled() -> bool:
    """``THEORYLAB_CUDA_GRAPHS=0`` switches the captured step off (default on where the harness chooses it)."""
    return os.environ.get("THEORYLAB_CUDA_GRAPHS", "1") != "0"


class StaticStep:
    """A training step over static buffers: ``step(x, y, m, lr)`` copies the batch and the learning rate in and
    runs ``body(x, y, m, zero_grad)`` (captured as a CUDA graph on CUDA, eagerly on the CPU).

    ``body`` must be free of host synchronisation and update its outputs in place (the metric window); ``lr`` is the
    optimiser's learning-rate tensor (every param group shares it). ``status`` is ``"captured"``, ``"eager"`` (CPU)
    or ``"eager (capture failed: ...)"``.
    """

    def __init__(self, body: Callable, lr: torch.Tensor, example: tuple, optimizer, device: torch.device):
        if not torch.is_tensor(lr) or lr.dim() != 0:
            raise TypeError("lr must be a 0-dim tensor shared by the optimiser's param groups")
        self.body, self.lr, self.device = body, lr, device
        self.static = tuple(t.detach().clone() for t in example)
        self.graph = None
        self.status = "eager"
        if device.type == "cuda":
            self._capture(optimizer)

    def _capture(self, optimizer) -> None:
        optimizer.zero_grad(set_to_none=True)  # the captured backward then writes the gradients afresh
        graph = torch.cuda.CUDAGraph()
        try:
            torch.cuda.synchronize(self.device)
            # thread_local: the feed's prefetch thread pins host memory meanwhile (cudaHostAlloc), which the
            # default "global" mode forbids process-wide (seen on an H100: the capture was invalidated)
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                self.body(*self.static, zero_grad=False)
        except Exception as exc:  # noqa: BLE001 - reported and recorded; training goes on eagerly
            optimizer.zero_grad(set_to_none=True)
            self.status = f"eager (capture failed: {type(exc).__name__}: {str(exc)[:200]})"
            warnings.warn(f"CUDA graph capture failed, training eagerly: {exc}", RuntimeWarning, stacklevel=3)
            return
        self.graph, self.status = graph, "captured"

    def step(self, x: torch.Tensor, y: torch.Tensor, m: torch.Tensor, lr: float) -> None:
        for buf, t in zip(self.static, (x, y, m), strict=True):
            if buf.shape != t.shape:
                raise ValueError(
                    f"a captured step needs batches of shape {tuple(buf.shape)}, got {tuple(t.shape)}"
                )
            buf.copy_(t, non_blocking=True)
        self.lr.fill_(lr)
        if self.graph is not None:
            self.graph.replay()
        else:
            self.body(*self.static, zero_grad=True)


def eager_warmup(body: Callable, device: torch.device, *args) -> None:
    """One eager step before capture: on CUDA on a side stream (PyTorch's capture recipe), else plainly."""
    if device.type != "cuda":
        body(*args, zero_grad=True)
        return
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        body(*args, zero_grad=True)
    torch.cuda.current_stream(device).wait_stream(side)
