"""Figures of the nce family: GD vs NGD step counts against R, and the fitted Lemma 47 exponent."""

from __future__ import annotations

import numpy as np

from theorylab._extras import require


def steps_figure(gd: dict[int, int], ngd: dict[int, int], gd_cap: dict[int, int] | None = None):
    """Steps to ``||tau - tau_*|| <= 1`` against R on a log scale; ``gd_cap`` marks GD runs that did not arrive
    within the given budget (drawn as lower bounds)."""
    matplotlib = require("matplotlib", extra="plots")

    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", extra="plots")

    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    ax.semilogy(sorted(gd), [gd[r] for r in sorted(gd)], "o-", label="GD, $\\eta = 8/(R^2+2)$")
    ax.semilogy(sorted(ngd), [ngd[r] for r in sorted(ngd)], "s-", label="NGD, $\\eta = 0.05$")
    for i, (r, cap) in enumerate((gd_cap or {}).items()):
        ax.plot(
            [r], [cap], "^", color="C0", mfc="none", label="GD not arrived (lower bound)" if i == 0 else None
        )
    ax.set_xlabel("R")
    ax.set_ylabel("steps to $\\|\\tau-\\tau_*\\| \\leq 1$")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def exponent_figure(Rs, sigma_min_scaled, b: float, ci: tuple[float, float]):
    """``sigma_min(H_*) e^{R^2/8}`` against R (log-log) with the printed ``1/R`` and corrected ``24.7/R^5`` rates."""
    matplotlib = require("matplotlib", extra="plots")

    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", extra="plots")

    Rs, s = np.asarray(Rs, float), np.asarray(sigma_min_scaled, float)
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    ax.loglog(Rs, s, "o", ms=3, label="quadrature")
    ax.loglog(
        Rs, 2 * np.pi**2 * np.sqrt(np.pi / 2) / Rs**5, "-", label="$2\\pi^2\\sqrt{\\pi/2}/R^5$ (corrected)"
    )
    ax.loglog(Rs, s[0] * Rs[0] / Rs, "--", label="$\\propto 1/R$ (printed)")
    ax.set_title(f"fitted exponent {b:.4f}, 95% CI [{ci[0]:.4f}, {ci[1]:.4f}]", fontsize=8)
    ax.set_xlabel("R")
    ax.set_ylabel("$\\sigma_{\\min}(H_*)\\, e^{R^2/8}$")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
