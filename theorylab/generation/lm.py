"""A trained language model as an autoregressive oracle (torch is imported lazily)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain
from theorylab.generation.oracles import Oracle

__all__ = ["ModelOracle"]


class ModelOracle(Oracle):
    """$\\mathcal O(\\cdot\\mid s)$ = softmax of a causal LM's logits (first ``vocab_size`` outputs, divided by
    ``temperature``) after ``start + s``. Laws are float64 and cached per prefix.

    ``device``: where the inputs go (the model must be there already). ``lookahead = k > 0`` batches a look-ahead:
    asked for the law after ``s``, one forward of the $|\\Sigma|^k$ sequences ``start + s + u`` ($|u| = k$, at most
    the model's ``max_len`` in all) reads the laws after every ``s + u[:j]``, $j \\le k$, from the positions of a
    causal model, so the next $k$ calls of a left-to-right decoder are cache hits (one batched forward on a device
    instead of $k + 1$ sequential ones). A causal model's law after ``s`` does not depend on later tokens, so the laws
    are those of the one-at-a-time forwards up to float rounding of the batched kernels."""

    def __init__(
        self,
        model,
        vocab_size: int,
        start: Sequence[int] = (),
        temperature: float = 1.0,
        *,
        device=None,
        lookahead: int = 0,
    ) -> None:
        super().__init__(vocab_size)
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {plain(temperature)}")
        if not isinstance(lookahead, int | np.integer) or lookahead < 0:
            raise ValueError(f"lookahead must be an int >= 0, got {plain(lookahead)}")
        self.model, self.start, self.temperature = model, tuple(int(t) for t in start), float(temperature)
        self.device, self.lookahead = device, int(lookahead)
        self.max_len = getattr(getattr(model, "cfg", None), "max_len", None)
        self._cache: dict[tuple[int, ...], tuple[float, ...]] = {}
        model.eval()

    def _law(self, prefix: tuple[int, ...]) -> Sequence[float]:
        if prefix not in self._cache:
            self._fill(prefix)
        return self._cache[prefix]

    def _fill(self, prefix: tuple[int, ...]) -> None:
        """Laws after ``prefix`` and, with a look-ahead, after its extensions, from one batched forward."""
        torch = require("torch", extra="trained")

        head = self.start + prefix
        k = self.lookahead
        if self.max_len is not None:
            k = max(0, min(k, self.max_len - len(head)))
        suffixes = list(itertools.product(range(self.vocab_size), repeat=k))
        x = torch.tensor([head + u for u in suffixes], dtype=torch.long, device=self.device)
        with torch.no_grad():
            out = self.model(x)
            out = out[0] if isinstance(out, tuple) else out
        logits = out[:, len(head) - 1 :, : self.vocab_size].double().cpu().numpy() / self.temperature
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        for r, u in enumerate(suffixes):
            for j in range(k + 1):
                self._cache.setdefault(prefix + u[:j], tuple(p[r, j].tolist()))
