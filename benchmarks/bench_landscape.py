"""Benchmark: Hessian traces and per-sample gradients (theorylab.landscape) against peers in the same run.

* ``trace_hessian`` exact (d batched HVPs: vmap over forward-over-reverse jvp(grad)) vs Hutchinson (100 Rademacher
  probes, with its error) vs the naive loop of d double-backward calls, on MLPs of ~1e3 to ~1e5 parameters (the
  loop is timed on a prefix of coordinates and extrapolated when d is large; marked "extrapolated").
* per-sample gradients: ``torch.func.vmap(grad)`` vs a Python loop of ``torch.autograd.grad`` calls.

Prints a table and writes JSON with the ratios (peer time / ours).

    python benchmarks/bench_landscape.py [--quick] [--out bench_landscape.json]
"""

from __future__ import annotations

import argparse
import json

import torch
from timing import timed

from theorylab.landscape import per_sample_grads, trace_hessian

torch.set_num_threads(1)


def _mlp_loss(width: int, n: int = 64, d_in: int = 16, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d_in, generator=g, dtype=torch.float64)
    y = torch.randn(n, generator=g, dtype=torch.float64)
    sizes = [width * d_in, width * width, width]

    def f(theta, x):
        W1, W2, a = torch.split(theta, sizes)
        h = torch.tanh(W1.reshape(width, d_in) @ x)
        return a @ torch.tanh(W2.reshape(width, width) @ h)

    def loss(theta):
        return ((torch.vmap(lambda x: f(theta, x))(X) - y) ** 2).mean()

    theta = torch.randn(sum(sizes), generator=g, dtype=torch.float64) / width**0.5
    return loss, f, theta, X, y


def _timed(fn, *args, **kwargs):
    return timed(fn, *args, **kwargs)


def _loop_trace(loss, theta, limit):
    th = theta.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(th), th, create_graph=True)
    total = 0.0
    for i in range(limit):
        (row,) = torch.autograd.grad(g[i], th, retain_graph=True)
        total += float(row[i])
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    widths = [8, 16] if args.quick else [8, 24, 64, 300]
    loop_cap = 100 if args.quick else 1000
    trace_hessian(lambda t: (t**2).sum(), torch.ones(2, dtype=torch.float64))  # one-time torch.func import
    rows = []
    for w in widths:
        loss, f, theta, X, y = _mlp_loss(w)
        d = theta.numel()
        if d > 20_000:  # exact needs d HVPs: report Hutchinson and the (extrapolated) loop only
            gen = torch.Generator().manual_seed(1)
            t_hutch, est = _timed(trace_hessian, loss, theta, "hutchinson", n_probes=100, generator=gen)
            t_loop, _ = _timed(_loop_trace, loss, theta, 50)
            rows.append(
                {
                    "params": d,
                    "exact_s": None,
                    "hutchinson_s": t_hutch,
                    "hutchinson_rel_error": None,
                    "hutchinson_rel_stderr": est.stderr / abs(est.value),
                    "loop_s": t_loop * d / 50,
                    "loop_extrapolated": True,
                    "loop_over_exact": None,
                }
            )
            continue
        t_exact, exact = _timed(trace_hessian, loss, theta, chunk=128)
        exact = exact.value
        gen = torch.Generator().manual_seed(1)
        t_hutch, est = _timed(trace_hessian, loss, theta, "hutchinson", n_probes=100, generator=gen)
        k = min(d, loop_cap)
        t_loop, partial = _timed(_loop_trace, loss, theta, k)
        t_loop_full = t_loop * d / k
        if k == d:
            assert abs(partial - exact) <= 1e-8 * max(1.0, abs(exact))
        rows.append(
            {
                "params": d,
                "exact_s": t_exact,
                "hutchinson_s": t_hutch,
                "hutchinson_rel_error": abs(est.value - exact) / abs(exact),
                "hutchinson_rel_stderr": est.stderr / abs(exact),
                "loop_s": t_loop_full,
                "loop_extrapolated": k < d,
                "loop_over_exact": t_loop_full / t_exact,
            }
        )
    # per-sample gradients
    loss, f, theta, X, y = _mlp_loss(24, n=256 if not args.quick else 64)

    def sample_loss(th, x, yy):
        return (f(th, x) - yy) ** 2

    t_vmap, G = _timed(lambda: per_sample_grads(sample_loss, theta, X, y))

    def loop():
        out = []
        for x, yy in zip(X, y, strict=True):
            th = theta.clone().requires_grad_(True)
            out.append(torch.autograd.grad(sample_loss(th, x, yy), th)[0])
        return torch.stack(out)

    t_loop, G2 = _timed(loop)
    assert torch.allclose(G, G2, atol=1e-10)
    psg = {
        "samples": X.shape[0],
        "params": theta.numel(),
        "vmap_s": t_vmap,
        "loop_s": t_loop,
        "loop_over_vmap": t_loop / t_vmap,
    }
    print(f"{'params':>8} {'exact s':>9} {'hutch s':>9} {'hutch err':>10} {'loop s':>9} {'loop/exact':>10}")
    for r in rows:
        flag = "*" if r["loop_extrapolated"] else " "
        if r["exact_s"] is None:
            print(
                f"{r['params']:>8} {'-':>9} {r['hutchinson_s']:>9.3f} {'se ' + format(r['hutchinson_rel_stderr'], '.1e'):>10} {r['loop_s']:>8.1f}{flag} {'-':>10}"
            )
            continue
        print(
            f"{r['params']:>8} {r['exact_s']:>9.3f} {r['hutchinson_s']:>9.3f} {r['hutchinson_rel_error']:>10.2e} "
            f"{r['loop_s']:>8.3f}{flag} {r['loop_over_exact']:>10.1f}"
        )
    print("(* loop time extrapolated from a prefix of coordinates)")
    print(
        f"per-sample grads ({psg['samples']} x {psg['params']}): vmap {t_vmap:.3f}s, loop {t_loop:.3f}s, ratio {psg['loop_over_vmap']:.1f}"
    )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"trace_hessian": rows, "per_sample_grads": psg}, fh, indent=2)


if __name__ == "__main__":
    main()
