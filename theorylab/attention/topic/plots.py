"""Figures of the topic family: block patterns of value matrices (predicted vs trained)."""

from __future__ import annotations

import numpy as np

from theorylab._extras import require


def block_pattern_figure(panels: dict[str, np.ndarray], drop_mask: bool = True):
    """One heat map per matrix (word rows/columns only with ``drop_mask``), on a shared symmetric colour scale
    clipped at the 99th percentile of the absolute values so that the topic blocks stay visible."""
    matplotlib = require("matplotlib", extra="plots")

    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", extra="plots")

    mats = {
        name: np.asarray(W, dtype=float)[1:, 1:] if drop_mask else np.asarray(W, dtype=float)
        for name, W in panels.items()
    }
    vmax = max(float(np.percentile(np.abs(M), 99)) for M in mats.values())
    fig, axes = plt.subplots(1, len(mats), figsize=(3.2 * len(mats), 3.2), squeeze=False)
    for ax, (name, M) in zip(axes[0], mats.items(), strict=True):
        im = ax.imshow(M, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
    return fig
