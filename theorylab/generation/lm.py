"""A trained language model as an autoregressive oracle (torch is imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain
from theorylab.generation.oracles import Oracle

__all__ = ["ModelOracle"]


class ModelOracle(Oracle):
    """$\\mathcal O(\\cdot\\mid s)$ = softmax of a causal LM's logits (first ``vocab_size`` outputs, divided by
    ``temperature``) after ``start + s``. Laws are float64 and cached per prefix."""

    def __init__(self, model, vocab_size: int, start: Sequence[int] = (), temperature: float = 1.0) -> None:
        super().__init__(vocab_size)
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {plain(temperature)}")
        self.model, self.start, self.temperature = model, tuple(int(t) for t in start), float(temperature)
        self._cache: dict[tuple[int, ...], tuple[float, ...]] = {}
        model.eval()

    def _law(self, prefix: tuple[int, ...]) -> Sequence[float]:
        if prefix not in self._cache:
            torch = require("torch", extra="trained")

            x = torch.tensor([self.start + prefix], dtype=torch.long)
            with torch.no_grad():
                out = self.model(x)
                out = out[0] if isinstance(out, tuple) else out
            logits = out[0, -1, : self.vocab_size].double().numpy() / self.temperature
            p = np.exp(logits - logits.max())
            self._cache[prefix] = tuple((p / p.sum()).tolist())
        return self._cache[prefix]
