"""The 19M flip-flop baseline (6 layers, d=512, T=512, batch 16 per seed) on one device: marginal ms per step and
MFU for 1 seed and for the 8-seed stack, with the harness before the CUDA fast paths (``fast=False``: per-tensor
AdamW, explicit attention, synchronous feed) and after (fused attention and optimiser, prefetching feed, the step
captured as a CUDA graph), all in the same run. The MFU counts model FLOPs against the device's dense bf16 peak.

The peer of the stacked run is the single-seed run of the same code: ``stack_speedup`` is 8 x (1-seed step) /
(8-seed step), i.e. how much faster the stack trains 8 seeds than 8 sequential runs.
The 8 seeds are stacked explicitly (``max_stack=8``): on CUDA the harness's default now trains these seeds one
after another (:func:`theorylab.nn.train.auto_stack_size`), because on an H100 the stack lost (2026-11-27).

Usage: ``python benchmarks/bench_full_baseline.py --device cuda [--steps 30] [--json out.json]``;
``--smoke`` runs a 1-layer d=32 T=32 version (a test that the script runs, not a measurement); ``--quick`` is
``--smoke`` on the CPU for 4 steps.
``--diagnose`` first times one seed with deterministic algorithms on and off (``train(deterministic=)``), each in a
fresh process: cuBLAS reads ``CUBLAS_WORKSPACE_CONFIG`` (set by the deterministic mode) once per process.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys

import torch

from theorylab.nn import train
from theorylab.trained.catalog import _r1


def measure(steps: int, seeds: int, device: str, fast: bool, smoke: bool, **kw) -> dict:
    t = _r1()[0]
    cfg, budget = t.config, dataclasses.replace(t.budget, steps=steps, eval_every=0, eval_batches=0)
    if smoke:
        cfg = dataclasses.replace(cfg, n_layers=1, d_model=32, n_heads=2, d_ff=64)
        budget = dataclasses.replace(budget, seq_len=32, batch_size=2)
    res = train(t.task, cfg, budget, seeds=tuple(range(seeds)), device=device, progress=False,
                fast=fast, **({"graph": None if fast else False} | kw))  # fmt: skip
    tp = res.throughput
    return {"seeds": seeds, "code": "after" if fast else "before", "steps": steps, **{k: str(v) for k, v in kw.items()},
            "marginal_step_ms": tp.get("marginal_step_ms"), "mfu": tp.get("mfu"),
            "cuda_graph": tp.get("cuda_graph"), "final_loss": [float(x) for x in res.final.get("loss", [])]}  # fmt: skip


def measure_in_child(a, seeds: int, deterministic: bool) -> dict:
    """:func:`measure` of the fast harness in a fresh process without ``CUBLAS_WORKSPACE_CONFIG`` in its
    environment, so that the deterministic mode's cuBLAS workspace is what the child's own training sets."""
    cmd = [sys.executable, os.path.abspath(__file__), "--device", a.device, "--steps", str(a.steps),
           "--row", str(seeds), "--deterministic", "on" if deterministic else "off"] + (["--smoke"] if a.smoke else [])  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        return {"seeds": seeds, "deterministic": str(deterministic), "error": proc.stderr[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def diagnose(a) -> None:
    """Where the time goes: one seed with deterministic algorithms on and off (fresh processes), the 8-seed stack
    against sequential seeds and stacks of 2, explicit against fused attention, bf16 autocast against fp32, and the
    top CUDA kernels of a profiled single-seed run (6 eager steps)."""
    from theorylab.nn.models import attention_backend

    rows = [measure_in_child(a, 1, det) for det in (True, False)]
    for row in rows:
        print(json.dumps(row), flush=True)
    rows.append(measure(a.steps, 1, a.device, True, a.smoke))
    rows.append(measure(a.steps, 8, a.device, True, a.smoke, vectorize=False))
    rows.append(measure(a.steps, 8, a.device, True, a.smoke, max_stack=2))
    with attention_backend("explicit"):
        rows.append(measure(a.steps, 8, a.device, True, a.smoke, max_stack=8) | {"attention": "explicit"})
        rows.append(measure(a.steps, 1, a.device, True, a.smoke) | {"attention": "explicit"})
    rows.append(measure(a.steps, 1, a.device, True, a.smoke, amp=False))
    for row in rows[2:]:
        print(json.dumps(row), flush=True)
    profile = ""
    if a.device.startswith("cuda"):
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as prof

        with prof(activities=[ProfilerActivity.CUDA]) as p:
            measure(6, 1, a.device, True, a.smoke, graph=False)  # eager, so that kernels are attributed
        profile = p.key_averages().table(sort_by="cuda_time_total", row_limit=15)
        print(profile)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "profile": profile}, f, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument(
        "--quick", action="store_true", help="= --smoke --device cpu --steps 4 (a test that it runs)"
    )
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="1 seed deterministic on/off; 8 seeds: sequential, stacks of 2, explicit attention; fp32; profile",
    )
    ap.add_argument("--row", type=int, metavar="SEEDS", help="one row of the fast harness (printed as JSON)")
    ap.add_argument("--deterministic", choices=("on", "off"), default="on", help="with --row")
    a = ap.parse_args()
    if a.quick:
        a.smoke, a.device, a.steps = True, "cpu", 4
    if a.row:
        print(
            json.dumps(
                measure(a.steps, a.row, a.device, True, a.smoke, deterministic=a.deterministic == "on")
            )
        )
        return
    if a.diagnose:
        diagnose(a)
        return
    rows = []
    for fast in (False, True):
        for seeds in (1, 8):
            row = measure(
                a.steps, seeds, a.device, fast, a.smoke, max_stack=seeds
            )  # the stack, whatever the rule
            rows.append(row)
            print(json.dumps(row), flush=True)
    by = {(r["code"], r["seeds"]): r["marginal_step_ms"] for r in rows}
    summary = {
        code: {"stack_speedup": 8 * by[(code, 1)] / by[(code, 8)] if by[(code, 8)] else None}
        for code in ("before", "after")
    }
    summary["after_vs_before_8_seeds"] = by[("before", 8)] / by[("after", 8)] if by[("after", 8)] else None
    device = torch.cuda.get_device_name() if a.device.startswith("cuda") else platform.processor() or "cpu"
    out = {"device": device, "torch": torch.__version__, "rows": rows, "summary": summary}
    print(json.dumps(summary))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
