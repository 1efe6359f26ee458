"""Benchmarks of the shortcut constructions (Thm 10, 11, 12).

* compile time and forward time (numpy float64, one batch) of each construction against T;
* the forward pass of the constant-depth construction against the sequential simulation
  (``Semiautomaton.run``, a T-step numpy loop over the batch) and against the log-depth one, as ratios;
* ``--table``: the depth / width / max-weight table of the docs (theorem bounds next to the built networks).

Usage: ``python benchmarks/bench_constructions.py [--quick] [--table] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from timing import best_of, timed

from theorylab.automata import zoo
from theorylab.automata.constructions import compile_constant_depth, compile_gridworld, compile_log_depth


def _time(fn, repeat: int = 3) -> float:
    return best_of(fn, repeat)[0]


def timings(quick: bool) -> list[dict]:
    members = {
        "parity": zoo.parity(),
        "D8": zoo.dihedral(4),
        "S4": zoo.symmetric(4),
        "Grid9": zoo.gridworld(9),
    }
    Ts = (16, 64) if quick else (16, 64, 256)
    batch = 16 if quick else 64
    rng = np.random.default_rng(0)
    rows = []
    for name, aut in members.items():
        for T in Ts:
            words = aut.sample(rng, batch, T)
            seq = _time(lambda aut=aut, words=words: aut.run(words, 0))
            builders = {"thm10": compile_log_depth, "thm11": compile_constant_depth}
            if name.startswith("Grid"):
                builders["thm12"] = lambda a, T, q0: compile_gridworld(a.n_states, T, q0)
            row = {"member": name, "T": T, "batch": batch, "sequential_s": seq}
            for key, build in builders.items():
                row[f"{key}_compile_s"], c = timed(build, aut, T, 0)
                row[f"{key}_forward_s"] = _time(lambda c=c, words=words: c(words), repeat=1 if T > 64 else 3)
                row[f"{key}_depth"] = c.depth
                assert (c(words[:4]) == aut.run(words[:4], 0)).all()
            row["thm11_over_sequential"] = row["thm11_forward_s"] / seq
            row["thm11_over_thm10"] = row["thm11_forward_s"] / row["thm10_forward_s"]
            rows.append(row)
            print(
                f"{name:7s} T={T:4d}  seq {seq * 1e3:8.2f} ms | thm10 {row['thm10_forward_s'] * 1e3:8.1f} ms"
                f" (depth {row['thm10_depth']}) | thm11 {row['thm11_forward_s'] * 1e3:8.1f} ms"
                f" (depth {row['thm11_depth']}, compile {row['thm11_compile_s'] * 1e3:6.1f} ms)"
                f" | thm11/seq {row['thm11_over_sequential']:8.1f} | thm11/thm10 {row['thm11_over_thm10']:5.2f}"
            )
    return rows


def _log_depth_formula(n: int, T: int) -> dict:
    """Theorem 10's network sizes without building it (for the 60- and 120-state groups, whose Lemma-14 MLP has
    a (4n^2+n) x n^2 matrix)."""
    Tp = max(2, 1 << (T - 1).bit_length())
    gamma = 100.0 * Tp**2 * (np.log(n) + np.log(Tp))
    return {
        "depth": Tp.bit_length() - 1,
        "d": 2 * n + 2,
        "n_heads": 2,
        "mlp_width": 4 * n * n + n,
        "max_weight": max(np.sqrt(gamma), 4.0 * n + 2),
    }


def table(Ts=(16, 64, 256, 1024)) -> str:
    """Markdown table: per zoo member and T, built depth / d / heads / MLP width / max |weight| of each construction,
    with the theorem's bound on the depth (Thm 10: ceil(log2 T); Thm 11: 3|Q|^2 log2|Q| + 7|Q|; Thm 12: 2)."""
    members = {
        "parity": zoo.parity(),
        "C5": zoo.cyclic(5),
        "C2^3": zoo.group_semiautomaton(
            [[1, 0, 2, 3, 4, 5], [0, 1, 3, 2, 4, 5], [0, 1, 2, 3, 5, 4]], name="C2^3"
        ),
        "D8": zoo.dihedral(4),
        "Q8": zoo.quaternion(),
        "A4": zoo.alternating(4),
        "S4": zoo.symmetric(4),
        "A5": zoo.alternating(5),
        "S5": zoo.symmetric(5),
        "flipflop": zoo.flipflop(),
        "Grid4": zoo.gridworld(4),
        "Grid9": zoo.gridworld(9),
        "Dyck4,2": zoo.dyck(2, 4),
    }
    lines = [
        "| member | \\|Q\\| | T | Thm 10 depth (bound) | d | MLP width | max \\|w\\| (bound) "
        "| Thm 11 depth (bound) | d | heads | MLP width | max \\|w\\| | Thm 12 depth | heads | max \\|w\\| |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, aut in members.items():
        n = aut.n_states
        for T in Ts:
            if n <= 32:
                c10 = compile_log_depth(aut, T, 0)
                s10, b10 = c10.stats(), c10.info["bounds"]
            else:
                s10 = _log_depth_formula(n, T)
                b10 = {"depth": int(np.ceil(np.log2(T))), "max_weight": s10["max_weight"]}
            cells = [
                name, str(n), str(T), f"{s10['depth']} ({b10['depth']})", str(s10["d"]), str(s10["mlp_width"]),
                f"{s10['max_weight']:.3g} ({b10['max_weight']:.3g})",
            ]  # fmt: skip
            try:
                c11 = compile_constant_depth(aut, T, 0)
                s11 = c11.stats()
                cells += [
                    f"{s11['depth']} ({c11.info['bounds']['depth']:.0f})", str(s11["d"]), str(s11["n_heads"]),
                    str(s11["mlp_width"]), f"{s11['max_weight']:.3g}",
                ]  # fmt: skip
            except ValueError:
                cells += ["not solvable", "", "", "", ""]
            if name.startswith("Grid"):
                c12 = compile_gridworld(n, T, 0)
                cells += [str(c12.depth), str(c12.n_heads), f"{c12.max_weight:.3g}"]
            else:
                cells += ["", "", ""]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def attention_figure(path: str, n: int = 5, T: int = 40, seed: int = 3) -> None:
    """Attention maps of the Thm-12 network on one Grid walk: layer 1 (uniform prefix sum) and three layer-2
    most-recent-match heads, with the rows where the walk sits at a wall marked (compare the thesis's Fig 3.6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    aut = zoo.gridworld(n)
    w = aut.sample(np.random.default_rng(seed), 1, T)
    c = compile_gridworld(n, T, 0)
    _, att = c.hidden(w, return_attention=True)
    states = aut.run(w, 0)[0]
    m = c.n_prefix
    S = n - 1
    panels = [("layer 1 (prefix sum)", att[0][0])] + [
        (f"layer 2, offset {o:+d}", att[1][S + o]) for o in (-S, -1, S)
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.3))
    walls = np.flatnonzero((states == 0) | (states == S)) + m
    for i, (ax, (title, a)) in enumerate(zip(axes, panels, strict=True)):
        vmax = (
            3.0 / (2 * (m - 1 + T)) if i == 0 else 1.0
        )  # layer 1: 1/(2u) on every real row, the rest on row 0
        ax.imshow(a[0][m:, :], cmap="viridis", aspect="auto", interpolation="nearest", vmin=0, vmax=vmax)
        ax.scatter(walls, walls - m, s=6, c="white", marker="o")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key row (incl. padding)", fontsize=8)
        ax.set_ylabel("query position t", fontsize=8)
    fig.suptitle(
        f"Thm 12 network on Grid{n}, T={T}: white dots = positions at a wall (layer 1 color-clipped)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=70)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds)")
    ap.add_argument("--table", action="store_true", help="print the docs table of sizes instead of timings")
    ap.add_argument("--json", default=None, help="write the timing rows as JSON")
    ap.add_argument("--figure", default=None, help="save the Thm-12 attention figure to this PNG path")
    args = ap.parse_args()
    if args.figure:
        attention_figure(args.figure)
        return
    if args.table:
        print(table((16, 64) if args.quick else (16, 64, 256, 1024)))
        return
    rows = timings(args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
