"""The vectorised multi-seed samplers (``sample_batches``) of :class:`AutomatonTask` and :class:`SparseParity`:
every seed's batch and stream is exactly the one ``sample_batch`` draws from that seed's generator alone, and the
training feed uses them."""

from __future__ import annotations

import time

import numpy as np
import pytest

from theorylab.automata import zoo
from theorylab.automata.tasks import AutomatonTask
from theorylab.boolean.tasks import SparseParity

TASKS = {
    "S5": AutomatonTask(zoo.symmetric(5)),
    "flipflop-probs": AutomatonTask(zoo.flipflop(), probs=(0.9, 0.05, 0.05), score_from=3),
    "dyck-dead": AutomatonTask(zoo.dyck(2, 4), dead=(zoo.dyck(2, 4).n_states - 1,)),
    "sparse-parity": SparseParity(40, 6, S=(3, 7, 11, 20, 31, 39)),
    "sparse-parity-k0": SparseParity(40, 0),
}
T_OF = {"sparse-parity": 40, "sparse-parity-k0": 40}


def _rngs(seeds=(0, 1, 2)):
    return [np.random.default_rng([s, 1]) for s in seeds]


@pytest.mark.parametrize("name", list(TASKS))
def test_every_seed_gets_the_stream_it_draws_alone(name):
    task = TASKS[name]
    many, alone = _rngs(), _rngs()
    T = T_OF.get(name, 40)
    for _ in range(3):  # consecutive steps: the generators advance exactly as in the per-seed loop
        vec = task.sample_batches(many, 5, T)
        ref = [task.sample_batch(r, 5, T) for r in alone]
        for a, b in zip(vec, ref, strict=True):
            assert np.array_equal(a.inputs, b.inputs) and np.array_equal(a.targets, b.targets)
            assert np.array_equal(a.mask, b.mask)
    assert [r.bit_generator.state for r in many] == [r.bit_generator.state for r in alone]


def test_a_sampler_sharing_one_generator_is_caught():
    """Negative control: drawing every seed from one generator (a tempting vectorisation) changes the streams."""
    task = TASKS["S5"]
    shared = np.random.default_rng([0, 1])
    wrong = task.sample_batches([shared] * 3, 5, 40)
    ref = [task.sample_batch(r, 5, 40) for r in _rngs()]
    assert not all(np.array_equal(a.inputs, b.inputs) for a, b in zip(wrong, ref, strict=True))


@pytest.mark.parametrize("prefetch", [False, True], ids=["serial", "threads"])  # threads: seeds in chunks
def test_the_feed_uses_it_and_yields_the_per_seed_batches(prefetch):
    torch = pytest.importorskip("torch")
    from theorylab.nn import Budget
    from theorylab.nn.train import _Batches, _chunks

    assert _chunks([0, 1, 2], 2) == [[0, 1], [2]] and _chunks([0, 1], 5) == [[0], [1]]
    task = TASKS["flipflop-probs"]
    budget = Budget(steps=3, batch_size=4, seq_len=12, lr=0.0)
    feed = _Batches(task, budget, _rngs(), None, torch.device("cpu"), prefetch, False)
    alone = _rngs()
    for _ in range(budget.steps):
        (x, y, m), _ = feed.next()
        ref = [task.sample_batch(r, 4, 12) for r in alone]
        assert np.array_equal(x.numpy(), np.stack([b.inputs for b in ref]))
        assert np.array_equal(y.numpy(), np.stack([b.targets for b in ref]))
    feed.close()


def test_it_is_faster_than_the_per_seed_loop_at_the_depth_tables_size():
    """3 seeds x 16 x 100 (the E1 depth table's step): one automaton run instead of three (printed, not pinned:
    timings on a shared machine are noise)."""
    task = TASKS["S5"]
    best = {}
    for how in ("loop", "vectorised"):
        rngs, t = _rngs(), []
        for _ in range(5):
            t0 = time.perf_counter()
            if how == "loop":
                [task.sample_batch(r, 16, 100) for r in rngs]
            else:
                task.sample_batches(rngs, 16, 100)
            t.append(time.perf_counter() - t0)
        best[how] = min(t)
    print("sampling ms per step (3 seeds x 16 x 100):", {k: round(1e3 * v, 3) for k, v in best.items()})
