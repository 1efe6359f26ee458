"""Claim family `flipflop`: the FFL distribution, the Prop 3 construction, and trained Transformers / LSTMs."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from theorylab.languages import flipflop as ff

# ------------------------------------------------------------------------------------------------ def_ffl

P_EXACT = (Fraction(1, 5), Fraction(3, 10), Fraction(1, 2))


@pytest.mark.claim("flipflop.def_ffl", tier="exact")
@pytest.mark.parametrize("T", [4, 6, 8, 10, 12, 14])
def test_ffl_support_normalisation_and_expected_reads(T, measure):
    strings, probs = ff.enumerate_ffl(T, P_EXACT)
    assert len(strings) == ff.support_size(T) == 2 * 5 ** (T // 2 - 2)
    assert len({s.tobytes() for s in strings}) == len(strings)
    assert ff.is_valid(strings).all()
    assert sum(probs) == 1
    reads = ff.read_positions(strings).sum(1)
    assert sum(p * int(k) for p, k in zip(probs, reads, strict=True)) == 1 + (T // 2 - 2) * P_EXACT[1]
    measure(f"support size T={T}", len(strings))


@pytest.mark.claim("flipflop.def_ffl", tier="exact", control=True)
def test_ffl_validity_rejects_a_wrong_read():
    strings, _ = ff.enumerate_ffl(10, P_EXACT)
    last_data = strings[:, -1].copy()
    strings[:, -1] = ff.ZERO + ff.ONE - last_data  # flip the bit after the final read
    assert not ff.is_valid(strings).any()
    assert not ff.is_valid(ff.from_text("w0i1w1r0"))[0] and ff.is_valid(ff.from_text("w0i1i0r0"))[0]


def _chi_square_against_exact(samples: np.ndarray, T: int) -> float:
    strings, probs = ff.enumerate_ffl(T, P_EXACT)
    index = {s.tobytes(): k for k, s in enumerate(strings)}
    counts = np.bincount([index.get(s.tobytes(), len(strings)) for s in samples], minlength=len(strings) + 1)
    if counts[-1]:
        return 0.0  # a sample outside the support
    return chisquare(counts[:-1], np.array([float(p) for p in probs]) * len(samples)).pvalue


@pytest.mark.claim("flipflop.def_ffl", tier="property")
def test_sampler_matches_the_exact_distribution(rng, measure):
    samples = ff.sample_ffl(rng, 20_000, 8, *map(float, P_EXACT))
    pvalue = _chi_square_against_exact(samples, 8)
    measure("chi-square p-value (T=8, 20k samples, 50 cells)", pvalue)
    assert pvalue > 1e-4  # fixed seed; the threshold rejects the control below by many orders of magnitude


@pytest.mark.claim("flipflop.def_ffl", tier="property", control=True)
def test_chi_square_rejects_a_sampler_with_the_wrong_read_probability(rng):
    samples = ff.sample_ffl(rng, 20_000, 8, 0.2, 0.4, 0.4)
    assert _chi_square_against_exact(samples, 8) < 1e-4


@pytest.mark.claim("flipflop.def_ffl", tier="property")
@settings(max_examples=25)
@given(
    T=st.integers(2, 40).map(lambda k: 2 * k),
    p=st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0.01, 1)).map(lambda v: np.array(v) / sum(v)),
    seed=st.integers(0, 2**32 - 1),
)
def test_samples_are_valid_and_mutating_a_read_invalidates(T, p, seed):
    rng = np.random.default_rng(seed)
    x = ff.sample_ffl(rng, 16, T, *p)
    assert ff.is_valid(x).all()
    assert (x[:, 0] == ff.W).all() and (x[:, T - 2] == ff.R).all()
    reads = ff.read_positions(x)
    row, col = np.argwhere(reads)[rng.integers(reads.sum())]
    x[row, col + 1] = ff.ZERO + ff.ONE - x[row, col + 1]
    assert not ff.is_valid(x[row])[0]


@pytest.mark.claim("flipflop.def_ffl", tier="property", control=True)
def test_validity_rejects_a_sampler_that_reads_the_last_bit_instead_of_the_last_write():
    x = ff.sample_ffl(np.random.default_rng(0), 256, 32, 0.2, 0.3, 0.5)
    broken = x.copy()
    for s in broken:  # reads return the previous data bit, whatever instruction it followed
        for t in range(2, 32, 2):
            if s[t] == ff.R:
                s[t + 1] = s[t - 1]
    assert not ff.is_valid(broken).all()


# ------------------------------------------------------------------------------------------------ prop3 (exact)


@pytest.mark.claim("flipflop.prop3_realizable", tier="exact")
@pytest.mark.parametrize("T", [4, 8, 12, 16])
def test_prop3_hard_attention_is_exact_on_every_string(T, measure):
    strings, _ = ff.enumerate_ffl(T, (Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)))
    report = ff.verify_prop3(strings)
    assert report.strings == ff.support_size(T)
    assert report.ok, report
    measure(f"reads checked T={T}", report.reads)


@pytest.mark.claim("flipflop.prop3_realizable", tier="exact", control=True)
@pytest.mark.parametrize("change", [{"bonus": Fraction(1, 2)}, {"bonus": Fraction(5, 2)}, {"C": 8}])
def test_prop3_breaks_when_the_write_bonus_leaves_one_to_two_steps(change):
    """bonus * C / T must lie in (1, 2) position steps; C = T/2 also lets late unmarked tokens win in layer 2."""
    strings, _ = ff.enumerate_ffl(16, (Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)))
    report = ff.verify_prop3(strings, **change)
    assert not report.ok


@pytest.mark.claim("flipflop.prop3_realizable", tier="property")
@settings(max_examples=20)
@given(
    T=st.sampled_from([8, 32, 128, 256]),
    p_ignore=st.sampled_from([0.1, 0.5, 0.8, 0.98]),
    seed=st.integers(0, 2**32 - 1),
)
def test_prop3_softmax_with_c_2T_log_T_makes_no_read_error(T, p_ignore, seed):
    q = (1 - p_ignore) / 2
    x = ff.sample_ffl(np.random.default_rng(seed), 8, T, q, q, p_ignore)
    assert ff.verify_prop3(x, c=2 * T * np.log(T)).ok


@pytest.mark.claim("flipflop.prop3_realizable", tier="property", control=True)
@settings(max_examples=10)
@given(T=st.sampled_from([16, 64, 256, 1024]), ratio=st.floats(0.05, 0.45))
def test_prop3_softmax_below_the_critical_temperature_glitches_on_sparse_strings(T, ratio):
    """The sparse family w1 (i0)* r1 needs c > ~0.56 T: smaller c leaks attention to the ignores' zeros."""
    sparse = ff.from_text("w1" + "i0" * (T // 2 - 2) + "r1")
    assert not ff.verify_prop3(sparse, c=ratio * T).ok


# ------------------------------------------------------------------------------------------------ trained

TRANSFORMER = {
    # CPU budget: ~15 s on 2 loaded cores (4 seeds trained in one vmapped stack)
    "small": dict(
        model=dict(d_model=32, n_layers=2, n_heads=2),
        T=16,
        p_ignore=0.5,
        budget=dict(steps=400, batch_size=64, lr=3e-3, schedule="warmup_cosine", warmup=20),
        seeds=(0, 1, 2, 3),
        eval_sequences=2048,
    ),
    # the thesis baseline (§3.5.6): 6 layers, d=512, 8 heads, T=512, AdamW 3e-4, wd 0.1, 50 warm-up, linear decay
    "full": dict(
        model=dict(d_model=512, n_layers=6, n_heads=8),
        T=512,
        p_ignore=0.8,
        budget=dict(
            steps=10_000, batch_size=16, lr=3e-4, weight_decay=0.1, schedule="warmup_linear", warmup=50
        ),
        seeds=(0, 1, 2, 3),
        eval_sequences=10_000,
    ),
}


def _train_transformer(scale: str, device: str, **changes):
    from theorylab.nn import Budget, TransformerConfig, train

    spec = TRANSFORMER[scale]
    T = spec["T"]
    task = ff.FlipFlopTask.ffl(spec["p_ignore"])
    cfg = TransformerConfig(vocab_size=5, n_outputs=5, max_len=T, **spec["model"])
    budget = Budget(seq_len=T, eval_every=0, eval_batches=0, **{**spec["budget"], **changes})
    result = train(task, cfg, budget, seeds=spec["seeds"], device=device)
    report = ff.verify_read_accuracy(
        result.models, task, T, spec["eval_sequences"], threshold=0.99, device=device
    )
    return result, report, task


@pytest.mark.claim("flipflop.prop3_realizable", tier="trained")
def test_two_layer_transformers_learn_ffl(scale, device, measure):
    result, report, task = _train_transformer(scale, device)
    T = TRANSFORMER[scale]["T"]
    measure("read accuracy per seed (in distribution)", report.accuracy.tolist())
    measure("reads scored per seed", report.reads)
    measure("train seconds", result.throughput["train_seconds"])
    measure("tokens/s", result.throughput["tokens_per_s"])
    probe = task.sample_batch(np.random.default_rng(0), 256, T).inputs
    for or_reads, what in ((False, "the written bit"), (True, "the written bit or a later read's bit")):
        heads = [ff.attention_on_written_bit(m.cpu(), probe, -1, or_reads) for m in result.models]
        measure(f"last layer, best head: share of reads whose argmax is {what}", [float(h.max()) for h in heads])
    for name in ("sparse", "dense"):  # the glitch tail of R1: measured, not asserted at this scale
        dist = ff.FlipFlopTask.ffl(0.98 if name == "sparse" else 0.1)
        ood = ff.verify_read_accuracy(result.models, dist, T, 1024, threshold=1.0, device=device)
        measure(f"{name} read error per seed", (1 - ood.accuracy).tolist())
    assert report.ok, f"read accuracy {report.accuracy} below {report.threshold}"


@pytest.mark.claim("flipflop.prop3_realizable", tier="trained", control=True)
def test_the_learning_check_fails_when_training_is_broken(scale, device, measure):
    # with lr = 0 the weights never leave their initialisation whatever the step count: 50 steps save CI time
    _, report, _ = _train_transformer(scale, device, lr=0.0, steps=50)
    measure("read accuracy per seed with lr=0", report.accuracy.tolist())
    assert not report.ok


LSTM = {
    "small": dict(
        model=dict(d_embed=32, hidden=32),
        T=32,
        budget=dict(steps=100, batch_size=32, lr=1e-2),
        seeds=(0, 1, 2, 3),
        sparse=4096,
        dense=1024,
    ),
    # the thesis: hidden 128, embedding 128, 500 steps of 16 at T=512 with the baseline optimiser
    "full": dict(
        model=dict(d_embed=128, hidden=128),
        T=512,
        budget=dict(steps=500, batch_size=16, lr=3e-4, weight_decay=0.1, schedule="warmup_linear", warmup=50),
        seeds=tuple(range(16)),
        sparse=10_000,
        dense=1_000,
    ),
}


@pytest.fixture(scope="module")
def trained_lstms(scale, device):
    from theorylab.nn import Budget, LSTMConfig, train

    spec = LSTM[scale]
    cfg = LSTMConfig(vocab_size=5, n_outputs=5, **spec["model"])
    budget = Budget(seq_len=spec["T"], eval_batches=0, **spec["budget"])
    return train(ff.FlipFlopTask.ffl(0.8), cfg, budget, seeds=spec["seeds"], device=device), spec


def _lstm_reports(models, spec, device):
    T = spec["T"]
    return [
        ff.verify_read_accuracy(
            models, ff.FlipFlopTask.ffl(0.98), T, spec["sparse"], threshold=1.0, device=device
        ),
        ff.verify_read_accuracy(
            models, ff.FlipFlopTask.ffl(0.1), T, spec["dense"], threshold=1.0, device=device
        ),
    ]


@pytest.mark.xdist_group("flipflop-lstm")  # shares the trained stack with its control (--dist loadgroup)
@pytest.mark.claim("flipflop.emp_R2_lstm", tier="trained")
def test_lstm_has_no_read_error_on_sparse_and_dense_strings(trained_lstms, device, measure):
    result, spec = trained_lstms
    sparse, dense = _lstm_reports(result.models, spec, device)
    measure("sparse read errors per seed", (1 - sparse.accuracy).tolist())
    measure("dense read errors per seed", (1 - dense.accuracy).tolist())
    measure("reads scored (sparse, dense)", [sparse.reads, dense.reads])
    measure("train seconds", result.throughput["train_seconds"])
    assert sparse.ok and dense.ok


@pytest.mark.xdist_group("flipflop-lstm")
@pytest.mark.claim("flipflop.emp_R2_lstm", tier="trained", control=True)
def test_lstm_check_rejects_models_whose_memory_is_erased(trained_lstms, device):
    import copy

    import torch

    result, spec = trained_lstms
    h = spec["model"]["hidden"]
    broken = []
    for model in result.models:
        m = copy.deepcopy(model)
        with torch.no_grad():  # forget gate (rows h..2h) shut: c_t = i_t * g_t, no memory beyond one step
            m.lstm.bias_ih_l0[h : 2 * h] = -1e4
        broken.append(m)
    sparse, _ = _lstm_reports(broken, spec, device)
    assert not sparse.ok
