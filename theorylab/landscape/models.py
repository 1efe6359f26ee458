"""Small models whose curvature is computed exactly: a two-layer softmax network on one-hot contexts.

$f_\\theta(x)=\\mathrm{softmax}(W_2\\,\\sigma(W_1x))$, $\\theta=(\\mathrm{vec}W_1,\\mathrm{vec}W_2)$, $W_1\\in
\\mathbb R^{h\\times n}$, $W_2\\in\\mathbb R^{c\\times h}$. With a ReLU, the neuron-wise rescaling
$W_1[i]\\to c_iW_1[i]$, $W_2[:,i]\\to W_2[:,i]/c_i$ ($c_i>0$) leaves $f$ unchanged: an orbit inside the minimiser set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab._extras import needs

with needs("trained"):
    import torch

__all__ = ["ACTIVATIONS", "TwoLayerSoftmax"]

ACTIVATIONS = {
    "tanh": torch.tanh,
    "softplus": torch.nn.functional.softplus,
    "relu": torch.relu,
}


@dataclass(frozen=True)
class TwoLayerSoftmax:
    """Shapes ``n_in`` (contexts, one-hot), ``hidden``, ``n_out`` (classes) and the activation name."""

    n_in: int
    hidden: int
    n_out: int
    activation: str = "tanh"

    def __post_init__(self) -> None:
        for name in ("n_in", "hidden", "n_out"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_out < 2:
            raise ValueError(f"n_out must be >= 2 classes, got {self.n_out}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")

    @property
    def n_params(self) -> int:
        return self.hidden * (self.n_in + self.n_out)

    def split(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k = self.hidden * self.n_in
        return theta[:k].reshape(self.hidden, self.n_in), theta[k:].reshape(self.n_out, self.hidden)

    def join(self, W1, W2) -> torch.Tensor:
        return torch.cat([torch.as_tensor(W1).reshape(-1), torch.as_tensor(W2).reshape(-1)])

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        W1, W2 = self.split(theta)
        return W2 @ ACTIVATIONS[self.activation](W1 @ x)

    def inputs(self) -> torch.Tensor:
        """The one-hot contexts (n_in, n_in)."""
        return torch.eye(self.n_in, dtype=torch.float64)

    def init(self, rng: np.random.Generator, scale: float = 1.0) -> torch.Tensor:
        return torch.as_tensor(rng.normal(0.0, scale, self.n_params))

    def probs(self, theta: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            return torch.softmax(torch.stack([self.logits(theta, x) for x in self.inputs()]), dim=1).numpy()

    def rescale(self, theta: torch.Tensor, c) -> torch.Tensor:
        """Neuron-wise rescaling $W_1[i]\\to c_iW_1[i]$, $W_2[:,i]\\to W_2[:,i]/c_i$ (needs ``relu``, $c_i>0$)."""
        c = torch.as_tensor(np.asarray(c, dtype=np.float64))
        if c.shape != (self.hidden,) or (c <= 0).any():
            raise ValueError(f"c must be {self.hidden} positive factors")
        if self.activation != "relu":
            raise ValueError(
                "rescaling preserves the function only for a positively homogeneous activation (relu)"
            )
        W1, W2 = self.split(theta)
        return self.join(W1 * c[:, None], W2 / c[None, :])
