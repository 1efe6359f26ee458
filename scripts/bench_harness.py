"""Time the training harness on the 19M flip-flop baseline (full model size, T = 512) for a few steps on this
machine and print the per-seed losses, so that two versions of the harness can be compared (same losses, time).

    python scripts/bench_harness.py --steps 2 --seeds 2 --batch 1 [--fast] [--sdpa] [--graph]

``--fast`` switches on the CUDA paths (fused AdamW, multi-tensor clipping, prefetching feed) on any device,
``--sdpa`` the fused attention kernel, ``--graph`` the captured training step (a CUDA graph on CUDA; on the CPU
its static-buffer step runs eagerly from the second step on); without them a CPU run takes the default (bit-reproducible) paths. An older
version of the library (without these options) is timed by running this script with it on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--sdpa", action="store_true")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--clip", type=float, default=1.0)
    args = ap.parse_args()

    import torch

    from theorylab.languages.flipflop import FlipFlopTask
    from theorylab.nn import models
    from theorylab.nn.recipes import flipflop_baseline
    from theorylab.nn.train import train

    r = flipflop_baseline(T=args.T, n_seeds=args.seeds)
    budget = dataclasses.replace(
        r.budget, steps=args.steps, batch_size=args.batch, eval_every=0, eval_batches=1, grad_clip=args.clip
    )
    kw = {"fast": True} if args.fast else {}
    if "fast" not in inspect.signature(train).parameters:
        kw = {}
    if args.graph:
        if "graph" not in inspect.signature(train).parameters:
            raise SystemExit("--graph: this version of the harness has no captured step")
        kw["graph"] = True
    backend = models.attention_backend("sdpa") if args.sdpa else contextlib.nullcontext()
    t0 = time.perf_counter()
    with backend:
        res = train(FlipFlopTask.ffl(0.8), r.config, budget, seeds=r.seeds, device=args.device, **kw)
    wall = time.perf_counter() - t0
    out = {
        "torch": torch.__version__,
        "threads": res.throughput.get("threads"),
        "params": sum(p.numel() for p in res.models[0].parameters()),
        "wall_s": round(wall, 2),
        "train_seconds": round(res.throughput["train_seconds"], 3),
        "marginal_step_ms": res.throughput.get("marginal_step_ms"),
        "train_loss": [float(v).hex() for v in res.final["train_loss"]],
        "eval_loss": [float(v).hex() for v in res.final["loss"]],
        "train_loss_dec": res.final["train_loss"].tolist(),
        "cuda_graph": res.throughput.get("cuda_graph"),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
