"""Claim check of flipflop.mech_1l1h (Liu §3.5.4.3 / §3.5.6.5, Fig 3.34): 1-layer 1-head Transformers trained to
simulate the flip-flop automaton (Def 11) attend to the most recent write from the read (⊥) positions; attention
sharpening concentrates that attention. Trained tier: CPU scale in CI, the same protocol at a larger size with
``--scale full``."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.automata import zoo

SPEC = {
    "small": dict(T=16, steps=200, seeds=(0, 1), d_model=32, n_eval=512),
    "full": dict(T=64, steps=2000, seeds=(0, 1, 2, 3), d_model=128, n_eval=2048),
}
PROBS = (0.6, 0.2, 0.2)  # ⊥, write 0, write 1
LAMS = (0.0, 0.1)  # entropy-sharpening weight: plain, sharpened
_RUNS: dict = {}


def most_recent_write(words: np.ndarray) -> np.ndarray:
    """0-based position of the most recent write (symbol 1 or 2) at or before each position, -1 if none."""
    T = words.shape[1]
    return np.maximum.accumulate(np.where(words > 0, np.arange(T), -1), axis=1)


def attention_stats(models, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: state accuracy on ``words``, the share of ⊥ rows (after a write) whose attention argmax is the
    most recent write, and the mean attention weight on it."""
    import torch

    states = zoo.flipflop().run(words, 0)
    last = most_recent_write(words)
    rows = (words == 0) & (last >= 0)
    acc, share, weight = [], [], []
    for m in models:
        m.eval().cpu()
        with torch.no_grad():
            out, attn = m(torch.from_numpy(words), return_attention=True)
        A = attn[0][:, 0].numpy()  # the one layer's one head: [batch, query, key]
        acc.append(float((out.argmax(-1).numpy() == states).mean()))
        share.append(float((A.argmax(-1) == last)[rows].mean()))
        weight.append(float(np.take_along_axis(A, np.maximum(last, 0)[..., None], -1)[..., 0][rows].mean()))
    return np.array(acc), np.array(share), np.array(weight)


def _runs(scale: str, device: str, steps: int | None = None) -> dict:
    from theorylab.automata.tasks import AutomatonTask
    from theorylab.nn import AttentionSharpening, Budget, TransformerConfig, train

    spec = SPEC[scale]
    steps = spec["steps"] if steps is None else steps
    key = (scale, device, steps)
    if key not in _RUNS:
        T = spec["T"]
        task = AutomatonTask(zoo.flipflop(), probs=PROBS)
        cfg = TransformerConfig(
            vocab_size=3, n_outputs=2, max_len=T, d_model=spec["d_model"], n_layers=1, n_heads=1
        )
        budget = Budget(steps=steps, batch_size=64, seq_len=T, lr=3e-3, schedule="warmup_cosine", warmup=20)
        words = task.sample_words(np.random.default_rng(5), spec["n_eval"], T)
        _RUNS[key] = {
            lam: attention_stats(
                train(
                    task,
                    AttentionSharpening(cfg, lam),
                    budget,
                    seeds=spec["seeds"],
                    device=device,
                    progress=False,
                ).models,
                words,
            )
            for lam in LAMS
        }
    return _RUNS[key]


@pytest.mark.claim("flipflop.mech_1l1h", tier="trained")
def test_one_head_attends_to_the_most_recent_write(scale, device, measure) -> None:
    from theorylab.nn.quality import require_trained

    runs = _runs(scale, device)
    for lam in LAMS:
        require_trained(runs[lam][0], 0.99, f"state accuracy of the 1-layer 1-head models (lam = {lam})")
    (_, share0, w0), (_, share1, w1) = runs[0.0], runs[0.1]
    measure("argmax-on-last-write share, lam=0 / lam=0.1", [share0.tolist(), share1.tolist()])
    measure("mean weight on the last write, lam=0 / lam=0.1", [w0.tolist(), w1.tolist()])
    assert (share0 >= 0.95).all() and (share1 >= 0.95).all()  # the "ideal" solution's attention target
    assert w1.mean() > w0.mean() and (w1 >= 0.95).all()  # sharpening puts (nearly) all weight there


@pytest.mark.claim("flipflop.mech_1l1h", tier="trained", control=True)
def test_under_trained_models_are_refused(device) -> None:
    from theorylab.nn.quality import UnderTrainedError, require_trained

    acc = _runs("small", device, steps=3)[0.0][0]
    with pytest.raises(UnderTrainedError):
        require_trained(acc, 0.99, "state accuracy after 3 steps")
