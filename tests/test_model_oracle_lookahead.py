"""ModelOracle's batched look-ahead (one forward for the laws after a prefix and all its extensions up to k tokens)
equals the one-forward-per-call oracle in float64 on the CPU; a non-causal model, where later tokens change earlier
laws, is caught by the same comparison."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.generation.lm import ModelOracle  # noqa: E402
from theorylab.nn import TransformerConfig  # noqa: E402
from theorylab.nn.threads import num_threads  # noqa: E402

# float64 forwards of a 2-layer width-32 model over <= 6 tokens: rounding ~1e-16 per law entry (batched vs single
# rows sum in other orders); a law changed by later tokens (non-causal) moves by >= 1e-3
TOL = 1e-12


def _laws(model, lookahead: int, depth: int = 3):
    oracle = ModelOracle(model, 4, start=(4, 1, 3), lookahead=lookahead)
    laws = {}
    # tiny forwards: a second thread only waits (0.5 s instead of 4 ms per call when loaded)
    with num_threads(1):
        for n in range(depth + 1):
            for s in itertools.product(range(4), repeat=n):
                laws[s] = np.array(oracle.probs(s))
    return laws, oracle


@pytest.mark.parametrize("k", [1, 4])  # 4: clamped to 3 by max_len = 6 (3 start tokens)
def test_lookahead_laws_equal_one_forward_per_call(k):
    model = TransformerConfig(vocab_size=5, n_outputs=4, d_model=32, n_layers=2, n_heads=4, max_len=6).build(
        1
    )
    model = model.double()
    ref, o_ref = _laws(model, 0)
    got, o_got = _laws(model, k)
    assert max(np.abs(ref[s] - got[s]).max() for s in ref) < TOL
    assert len(o_got._cache) >= len(ref)
    rng = [np.random.default_rng(5) for _ in range(2)]  # a decoder's queries: same tokens, same counted calls
    assert [o_ref.sample((), rng[0]) for _ in range(20)] == [o_got.sample((), rng[1]) for _ in range(20)]
    assert o_ref.calls == o_got.calls == 20


def test_lookahead_on_a_non_causal_model_is_caught():
    cfg = TransformerConfig(
        vocab_size=5, n_outputs=4, d_model=32, n_layers=2, n_heads=4, max_len=6, causal=False
    )
    model = cfg.build(1).double()
    ref, _ = _laws(model, 0, depth=2)
    got, _ = _laws(model, 2, depth=2)
    assert max(np.abs(ref[s] - got[s]).max() for s in ref) > 1e-3


def test_lookahead_rejects_negative_values():
    model = TransformerConfig(vocab_size=5, n_outputs=4, d_model=8, n_layers=1, n_heads=2, max_len=8).build(0)
    with pytest.raises(ValueError, match="lookahead"):
        ModelOracle(model, 4, start=(4,), lookahead=-1)
