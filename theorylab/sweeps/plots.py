"""Pictures of a sweep: violins of the out-of-distribution error per configuration (log axis) and the dense-vs-sparse
error of every model (log-log, as the flip-flop thesis's Fig 3.25). Zero errors cannot sit on a log axis: they are
drawn at ``floor`` (half a read error: 1 / (2 reads)) and counted in the labels. matplotlib is imported lazily."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from theorylab._extras import require
from theorylab.sweeps.run import SweepResults


def config_label(results: SweepResults, cfg: dict) -> str:
    """``n_layers=2 lr=0.01``: the grid's values of ``cfg`` (or ``base`` for a sweep without a grid)."""
    parts = []
    for key in results.spec.grid:
        section, _, name = key.partition(".")
        parts.append(f"{name}={cfg[section][name]}")
    return " ".join(parts) or "base"


def _floor(results: SweepResults) -> float:
    reads = [r.metrics.get("sparse_reads", 0) + r.metrics.get("dense_reads", 0) for r in results.runs]
    return 0.5 / max(max(reads, default=1), 1)


def plot_violins(results: SweepResults, metric: str = "ood_error", ax=None):
    """One violin of log10(``metric``) per configuration, the runs as dots; zeros at the floor."""
    plt = require("matplotlib.pyplot")

    if ax is None:
        _, ax = plt.subplots(figsize=(max(4, 1.2 * len(results.spec.configs())), 3.5))
    floor = _floor(results)
    data, labels = [], []
    for (cfg, _), values in zip(results.by_config(), results.metric(metric), strict=True):
        if values.size == 0:
            continue
        data.append(np.log10(np.maximum(values, floor)))
        labels.append(f"{config_label(results, cfg)}\n{int((values == 0).sum())}/{values.size} zero")
    if not data:
        raise ValueError(f"no done runs with metric {metric!r} to plot")
    pos = np.arange(1, len(data) + 1)
    spread = [d for d in data if np.ptp(d) > 0]
    if spread:
        ax.violinplot(
            [d if np.ptp(d) > 0 else d + 1e-9 * np.arange(d.size) for d in data], pos, showmedians=True
        )
    for p, d in zip(pos, data, strict=True):
        ax.scatter(np.full(d.size, p) + np.linspace(-0.08, 0.08, d.size), d, s=8, color="k", zorder=3)
    ax.set_xticks(pos, labels, fontsize=7)
    ax.set_ylabel(f"log10 {metric} (zeros at {floor:.1g})")
    ax.axhline(np.log10(floor), color="0.7", lw=0.8, ls=":")
    ax.set_title(f"{results.spec.name}: {metric} per configuration", fontsize=9)
    return ax


def plot_dense_sparse(results: SweepResults, ax=None):
    """Every model's sparse FFL(0.98) error (x) against its dense FFL(0.1) error (y), log-log, by configuration."""
    plt = require("matplotlib.pyplot")

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4))
    floor = _floor(results)
    drawn = 0
    for cfg, runs in results.by_config():
        pts = [
            (r.metrics["sparse_error"], r.metrics["dense_error"]) for r in runs if "sparse_error" in r.metrics
        ]
        if not pts:
            continue
        x, y = np.maximum(np.array(pts).T, floor)
        ax.scatter(x, y, s=12, alpha=0.75, label=config_label(results, cfg))
        drawn += len(pts)
    if not drawn:
        raise ValueError("no done runs with the 'glitches' metric (sparse_error, dense_error) to plot")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"sparse FFL(0.98) read error (zeros at {floor:.1g})")
    ax.set_ylabel(f"dense FFL(0.1) read error (zeros at {floor:.1g})")
    ax.legend(fontsize=7)
    ax.set_title(f"{results.spec.name}: {drawn} models", fontsize=9)
    return ax


def plot_sweep(results: SweepResults, out_dir: str | Path, metric: str = "ood_error") -> list[Path]:
    """Write ``<name>_violins.png`` and (when the runs have glitch metrics) ``<name>_dense_sparse.png``."""
    matplotlib = require("matplotlib")

    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    ax = plot_violins(results, metric)
    paths.append(out / f"{results.spec.name}_violins.png")
    ax.figure.tight_layout()
    ax.figure.savefig(paths[-1], dpi=110)
    plt.close(ax.figure)
    if any("sparse_error" in r.metrics for r in results.runs):
        ax = plot_dense_sparse(results)
        paths.append(out / f"{results.spec.name}_dense_sparse.png")
        ax.figure.tight_layout()
        ax.figure.savefig(paths[-1], dpi=110)
        plt.close(ax.figure)
    return paths
