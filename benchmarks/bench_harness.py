"""Benchmark of the training harness: S seeds trained as one vmapped stack vs S sequential runs, in the same run.

CPU (default): a 2-layer, d=64, 4-head Transformer on flip-flop strings of length T=64, S = 1, 8, 32 seeds (and a
tiny 1-layer d=16 model at T=16); prints the seconds per step of S sequential runs, of one stack of S seeds, and of
the default grouping (cache-sized stacks on CPU), with the ratios sequential / batched. With ``--device cuda`` the same sweep
runs on the GPU, followed by an 8-layer, d=512 Transformer (T=512) in bf16 autocast, with and without
``torch.compile``: tokens/s and model FLOP utilisation (MFU, against the dense bf16 peak of the GPU).

Against a plain loop (``vs_plain_loop``): one seed of the checks' configs (the automata config of
``checks/test_automata_trained.py``, d=32, 2 layers, T=64, batch 32; and the d=64 sweep model) through ``train`` and
through a hand-written PyTorch loop (same model, AdamW, batches, thread count), with both rates also as a fraction
of the machine's float32 matmul peak measured in the same run; then the checks' seed stacks (3 seeds) with the
default grouping against sequential runs.

Timings are marginal: each configuration is trained for ``n1`` and ``n2`` steps and the difference is used, which
removes start-up costs (model building, the first call, compilation). ``--quick`` uses fewer steps and seeds.
Usage: ``python benchmarks/bench_harness.py [--quick] [--device cuda] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

import numpy as np
import torch
from timing import best_of

from theorylab.languages.flipflop import FlipFlopTask
from theorylab.nn import Budget, TransformerConfig, train
from theorylab.nn.train import peak_flops

REPEATS = 2  # each timing is the best of this many runs (the machine may be shared)


def marginal(task, cfg, T: int, batch: int, seeds, steps: tuple[int, int], device: str, **kw) -> dict:
    """Seconds per step (all seeds) from the difference of two runs of ``steps[0]`` and ``steps[1]`` steps."""
    times = []
    for n in steps:
        budget = Budget(steps=n, batch_size=batch, seq_len=T, lr=1e-3, eval_batches=0)
        best = float("inf")
        for _ in range(REPEATS):
            res = train(task, cfg, budget, seeds=seeds, device=device, progress=False, **kw)
            best = min(best, res.throughput["train_seconds"])
        times.append(best)
    # The difference removes start-up costs; when timing noise makes it non-positive (short runs on a shared
    # machine), fall back to the plain average of the longer run rather than report a meaningless ratio.
    diff = times[1] - times[0]
    per_step = diff / (steps[1] - steps[0]) if diff > 0 else times[1] / steps[1]
    tokens = len(seeds) * batch * T
    fpt = cfg.flops_per_token(T)
    return {
        "seconds_per_step": per_step,
        "tokens_per_s": tokens / per_step,
        "flops_per_token": fpt,
        "achieved_tflops": tokens * fpt / per_step / 1e12,
        "mfu": (tokens * fpt / per_step / peak) if (peak := peak_flops(torch.device(device))) else None,
        "threads": res.throughput["threads"],
        "stack_size": res.throughput["stack_size"],
    }


def seed_sweep(device: str, quick: bool, tiny: bool = False) -> list[dict]:
    """The issue's sweep (2 layers, d=64, T=64) or, with ``tiny``, a 1-layer d=16 model at T=16, batch 8."""
    T, batch = (16, 8) if tiny else (64, 16)
    label = "tiny d=16 L=1 T=16" if tiny else "d=64 L=2 T=64"
    task = FlipFlopTask.ffl(0.8)
    d, L, H = (16, 1, 2) if tiny else (64, 2, 4)
    cfg = TransformerConfig(vocab_size=5, n_outputs=5, d_model=d, n_layers=L, n_heads=H, max_len=T)
    steps = (2, 5) if quick else ((5, 25) if tiny else (3, 13))
    rows = []
    for S in (1, 8) if quick else (1, 8, 32):
        seeds = tuple(range(S))
        one_stack = marginal(task, cfg, T, batch, seeds, steps, device, max_stack=S)
        auto = marginal(task, cfg, T, batch, seeds, steps, device)
        sequential = marginal(task, cfg, T, batch, seeds, steps, device, vectorize=False)
        row = {
            "model": label,
            "S": S,
            "one_stack_s_per_step": one_stack["seconds_per_step"],
            "auto_s_per_step": auto["seconds_per_step"],
            "auto_stack_size": auto["stack_size"],
            "sequential_s_per_step": sequential["seconds_per_step"],
            "speedup_one_stack": sequential["seconds_per_step"] / one_stack["seconds_per_step"],
            "speedup_auto": sequential["seconds_per_step"] / auto["seconds_per_step"],
            "threads": auto["threads"],
        }
        rows.append(row)
        print(
            f"{label} S={S:3d}  sequential {row['sequential_s_per_step'] * 1e3:8.1f} ms/step  one stack "
            f"{row['one_stack_s_per_step'] * 1e3:8.1f} ms/step (x{row['speedup_one_stack']:.2f})  auto "
            f"(stacks of {row['auto_stack_size']}) {row['auto_s_per_step'] * 1e3:8.1f} ms/step "
            f"(x{row['speedup_auto']:.2f})",
            flush=True,
        )
    return rows


def matmul_peak(threads: int, n: int = 256, repeat: int = 20) -> float:
    """FLOP/s of a float32 n x n matmul on this machine with ``threads`` threads (best of ``repeat``)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        seconds, _ = best_of(lambda: a @ b, repeat)
    finally:
        torch.set_num_threads(prev)
    return 2 * n**3 / seconds


def plain_loop(task, cfg, T: int, batch: int, steps: tuple[int, int], threads: int) -> float:
    """Seconds per step of a hand-written PyTorch loop (marginal over ``steps``): the model, AdamW, a masked
    cross-entropy, fresh batches from the task; what a user would write without the harness."""
    times = []
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for n in steps:

            def run(n=n):
                torch.manual_seed(0)
                model = cfg.build(0).train()
                opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
                rng = np.random.default_rng([0, 1])
                for _ in range(n):
                    b = task.sample_batch(rng, batch, T)
                    x, y = torch.from_numpy(b.inputs).long(), torch.from_numpy(b.targets).long()
                    m = torch.from_numpy(b.mask)
                    loss = torch.nn.functional.cross_entropy(model(x)[m], y[m])
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

            times.append(best_of(run, REPEATS)[0])
    finally:
        torch.set_num_threads(prev)
    diff = times[1] - times[0]
    return diff / (steps[1] - steps[0]) if diff > 0 else times[1] / steps[1]


def checks_configs() -> dict:
    """The automata config of the trained checks (d=32, L=2, T=64, batch 32) and the d=64 sweep model."""
    auto = TransformerConfig(5, 5, d_model=32, n_layers=2, n_heads=4, d_ff=64, pos="sinusoidal", max_len=256)
    sweep = TransformerConfig(5, 5, d_model=64, n_layers=2, n_heads=4, max_len=64)
    return {"automata d=32 L=2 T=64 B=32": (auto, 64, 32), "sweep d=64 L=2 T=64 B=16": (sweep, 64, 16)}


def vs_plain_loop(quick: bool) -> list[dict]:
    task = FlipFlopTask.ffl(0.8)
    steps = (2, 5) if quick else (5, 25)
    rows = []
    for label, (cfg, T, batch) in checks_configs().items():
        ours = marginal(task, cfg, T, batch, (0,), steps, "cpu")
        threads = ours["threads"]
        peak = matmul_peak(threads)
        loop = plain_loop(task, cfg, T, batch, steps, threads)
        flops = batch * T * cfg.flops_per_token(T)
        seeds = (0, 1, 2)
        auto = marginal(task, cfg, T, batch, seeds, steps, "cpu")
        seq = marginal(task, cfg, T, batch, seeds, steps, "cpu", vectorize=False)
        row = {
            "config": label,
            "threads": threads,
            "matmul_peak_gflops": peak / 1e9,
            "harness_s_per_step": ours["seconds_per_step"],
            "plain_loop_s_per_step": loop,
            "harness_vs_plain_loop": loop / ours["seconds_per_step"],
            "harness_fraction_of_peak": flops / ours["seconds_per_step"] / peak,
            "plain_loop_fraction_of_peak": flops / loop / peak,
            "stack3_auto_size": auto["stack_size"],
            "stack3_auto_vs_sequential": seq["seconds_per_step"] / auto["seconds_per_step"],
        }
        rows.append(row)
        print(
            f"{label}: harness {row['harness_s_per_step'] * 1e3:.1f} ms/step, plain loop {loop * 1e3:.1f} ms/step "
            f"(harness speed x{row['harness_vs_plain_loop']:.2f} of the loop; {row['harness_fraction_of_peak']:.1%} "
            f"vs {row['plain_loop_fraction_of_peak']:.1%} of the {peak / 1e9:.1f} GFLOP/s matmul peak, "
            f"{threads} thread(s)); 3 seeds, default grouping (stacks of {auto['stack_size']}) "
            f"x{row['stack3_auto_vs_sequential']:.2f} of sequential",
            flush=True,
        )
    return rows


def gpu_throughput(quick: bool) -> list[dict]:
    T, batch = 512, 16
    task = FlipFlopTask.ffl(0.8)
    cfg = TransformerConfig(vocab_size=5, n_outputs=5, d_model=512, n_layers=8, n_heads=8, max_len=T)
    steps = (3, 8) if quick else (5, 30)
    rows = []
    for S, compile in ((1, False), (4, False), (1, True), (4, True)):
        r = marginal(task, cfg, T, batch, tuple(range(S)), steps, "cuda", compile=compile)
        row = {"S": S, "compile": compile, **r}
        rows.append(row)
        print(
            f"d=512 L=8 T=512 S={S} compile={compile}: {r['tokens_per_s']:,.0f} tokens/s, "
            f"{r['achieved_tflops']:.1f} TFLOP/s, MFU {r['mfu'] or float('nan'):.1%}",
            flush=True,
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and seeds (a smoke run)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument(
        "--plain-loop-only", action="store_true", help="only the comparison with a plain loop"
    )
    parser.add_argument("--repeats", type=int, default=REPEATS, help="best of this many runs per timing")
    args = parser.parse_args(argv)
    globals()["REPEATS"] = 1 if args.quick else args.repeats
    if args.plain_loop_only:
        rows = vs_plain_loop(args.quick)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "vs_plain_loop": rows}, f, indent=1)
        return 0
    out = {
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "vs_plain_loop": vs_plain_loop(args.quick) if args.device == "cpu" else None,
        "seed_sweep": seed_sweep(args.device, args.quick),
        "seed_sweep_tiny": seed_sweep(args.device, args.quick, tiny=True),
    }
    if args.device == "cuda":
        out["large_model"] = gpu_throughput(args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
