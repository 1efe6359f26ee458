"""Population claims as sweep-backed checks: flip-flop R1, R4-R8 (``flipflop_glitches.toml``, Liu §3.5) and
distill R6 (Liu §4.2.7), all of ``001_6a230b9a9faf2198.txt``.

Each verdict is a statistic over replicates with a stated test, computed from the numbers a sweep stored
(``theorylab.sweeps``, local executor, run store ``populations.sqlite`` in the artifacts dir, so a rerun with the
same artifacts dir and code trains nothing):

- a **trained gate** first: at least 80% of a population's runs reach the in-distribution accuracy bar, else the
  verdict is ``open`` (untrained models never pass);
- R1: among the trained runs, at least one makes a read error and the error counts differ between seeds (passed);
  failed when the Clopper-Pearson upper bound of the share of glitching runs lies below ``RARE``;
- R4, R5, R6: one-sided Mann-Whitney rank tests of the arm's read errors against the baseline's at level ``ALPHA``
  (passed when the arm's errors are smaller, failed when significantly larger, open otherwise);
- R7: the share of runs with zero errors of every arm that is not trained on out-of-distribution data, with its
  exact interval: passed when every upper bound lies below 1/2 (no arm reaches zero errors reliably), failed when
  some lower bound lies above 1/2;
- R8: the sharpened arm (entropy penalty 0.1, model kind ``sharpened_transformer``) keeps glitching (at least
  one trained run with errors);
- distill R6: a rank test of the steps to the accuracy bar, more heads (fixed head dimension) against one head,
  runs that never reach the bar counted as slowest.

R4-R8 are statements about mitigations of R1's tail: where the baseline population has no tail (R1 not passed)
they are open, and their arms are not trained. At the CPU scale the flip-flop models learn FFL(16, 0.5) in a few
hundred steps but such short strings have no tail, so these claims stay open there; ``--scale full`` runs the
documents' populations (25 seeds per configuration, GPU). Each verdict ships controls: a population trained for
10% of the budget (open: under-trained) and constructed populations on which the same verdict passes, and fails
with the configurations' order reversed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from theorylab.sweeps.stats import PopulationVerdict, bootstrap_ci, rank_test, trained_gate, zero_share

ALPHA = 0.05  # level of every rank test
MIN_TRAINED = 0.8  # share of a population that must reach the accuracy bar
RARE = 0.2  # R1 fails when the glitching share is credibly below this (thesis: most baseline seeds glitch)
RELIABLY = 0.5  # R7: "reaches zero errors reliably" = in more than half of the runs
FF_BAR = 0.999  # R1's in-distribution read accuracy bar

STORE = "populations.sqlite"

# ------------------------------------------------------------------------------------------------ verdicts


def _gate(acc, bar: float, what: str) -> PopulationVerdict | None:
    k, n, ok = trained_gate(acc, bar, MIN_TRAINED)
    if ok:
        return None
    return PopulationVerdict("open", f"{what}: only {k}/{n} runs reach accuracy {bar}: under-trained", k, n)


def r1_verdict(acc, errors, bar: float = FF_BAR) -> PopulationVerdict:
    """R1 on one population: at least one trained run glitches and the error counts vary over seeds."""
    acc, errors = np.asarray(acc, float), np.asarray(errors, float)
    gate = _gate(acc, bar, "baseline")
    if gate:
        return gate
    e = errors[acc >= bar]
    zeros, m, _, _ = zero_share(e)
    _, _, _, hi = zero_share((e == 0).astype(float))  # zero_share of "no error" flags: the glitching share
    text = f"{m - zeros}/{m} trained runs glitch (errors {int(e.min())}..{int(e.max())})"
    if m - zeros >= 1 and np.unique(e).size > 1:
        return PopulationVerdict("passed", text, m, acc.size)
    if hi < RARE:
        return PopulationVerdict("failed", text + f": glitching share < {RARE} at 95%", m, acc.size)
    return PopulationVerdict("open", text + ": the replicates show no tail", m, acc.size)


def lower_verdict(base: Mapping, arm: Mapping, keys=("errors",), bar: float = FF_BAR) -> PopulationVerdict:
    """The arm's errors (each of ``keys``) are stochastically smaller than the baseline's: one-sided Mann-Whitney
    at ``ALPHA`` (passed if all are, failed if one is significantly larger, open otherwise). Needs R1's tail."""
    premise = r1_verdict(base["acc"], base["errors"], bar)
    if premise.status != "passed":
        return PopulationVerdict("open", f"no baseline tail to lower ({premise.reason})", 0, 0)
    gate = _gate(arm["acc"], bar, "arm")
    if gate:
        return gate
    p = {k: rank_test(arm[k], base[k], "less") for k in keys}
    p_rev = {k: rank_test(arm[k], base[k], "greater") for k in keys}
    text = ", ".join(f"{k}: p = {p[k]:.3g} (reversed {p_rev[k]:.3g})" for k in keys)
    n = len(arm["acc"])
    if all(v < ALPHA for v in p.values()):
        return PopulationVerdict("passed", text, n, n)
    if any(v < ALPHA for v in p_rev.values()):
        return PopulationVerdict("failed", text, n, n)
    return PopulationVerdict("open", text + ": the replicates cannot decide", n, n)


def no_elimination_verdict(
    base: Mapping, arms: Mapping[str, Mapping], bar: float = FF_BAR
) -> PopulationVerdict:
    """R7: no arm trained without out-of-distribution data has zero errors in more than half of its runs."""
    premise = r1_verdict(base["acc"], base["errors"], bar)
    if premise.status != "passed":
        return PopulationVerdict("open", f"no baseline tail to eliminate ({premise.reason})", 0, 0)
    parts, his, los = [], [], []
    for name, arm in {"baseline": base, **arms}.items():
        gate = _gate(arm["acc"], bar, name)
        if gate:
            return gate
        k, n, lo, hi = zero_share(arm["errors"])
        parts.append(f"{name}: {k}/{n} error-free [{lo:.2f}, {hi:.2f}]")
        his.append(hi)
        los.append(lo)
    text = "; ".join(parts)
    if max(his) < RELIABLY:
        return PopulationVerdict("passed", text, 0, 0)
    if max(los) > RELIABLY:
        return PopulationVerdict("failed", text, 0, 0)
    return PopulationVerdict("open", text + ": the replicates cannot decide", 0, 0)


def persist_verdict(base: Mapping, arm: Mapping, bar: float = FF_BAR) -> PopulationVerdict:
    """R8: with sharpening, errors persist: at least one trained run glitches (failed if the arm's error-free
    share is credibly above one half)."""
    premise = r1_verdict(base["acc"], base["errors"], bar)
    if premise.status != "passed":
        return PopulationVerdict("open", f"no baseline tail ({premise.reason})", 0, 0)
    gate = _gate(arm["acc"], bar, "sharpened")
    if gate:
        return gate
    k, n, lo, hi = zero_share(arm["errors"])
    text = f"{n - k}/{n} sharpened runs glitch, error-free share [{lo:.2f}, {hi:.2f}]"
    if n - k >= 1:
        return PopulationVerdict("passed", text, n, n)
    if lo > RELIABLY:
        return PopulationVerdict("failed", text, n, n)
    return PopulationVerdict("open", text, n, n)


def faster_verdict(more, fewer, acc_more, bar: float, budget: int) -> PopulationVerdict:
    """distill R6: steps to the bar (-1 = never: counted as ``budget + 1``) of ``more`` heads stochastically
    smaller than of ``fewer``: one-sided Mann-Whitney at ``ALPHA``. Open unless >= 80% of ``more`` reach the bar."""
    gate = _gate(acc_more, bar, "more heads")
    if gate:
        return gate
    a, b = (np.where(np.asarray(x) < 0, budget + 1, x) for x in (more, fewer))
    p, p_rev = rank_test(a, b, "less"), rank_test(a, b, "greater")
    text = f"steps to {bar}: medians {np.median(a):g} vs {np.median(b):g}, p = {p:.3g} (reversed {p_rev:.3g})"
    if p < ALPHA:
        return PopulationVerdict("passed", text, len(a), len(a))
    if p_rev < ALPHA:
        return PopulationVerdict("failed", text, len(a), len(a))
    return PopulationVerdict("open", text + ": the replicates cannot decide", len(a), len(a))


def _conclude(verdict: PopulationVerdict, scale: str, measure) -> None:
    """Record the verdict; a failed verdict fails the check, an open one skips it (the claim stays open)."""
    measure("verdict", f"{verdict.status}: {verdict.reason}")
    assert verdict.status != "failed", verdict.reason
    if verdict.status == "open":
        pytest.skip(f"undecided at {scale} scale: {verdict.reason}")


# ------------------------------------------------------------------------------------------------ sweeps


def _run(spec_dict: dict, artifacts_dir: Path, device: str) -> list[dict[str, np.ndarray]]:
    """Run a sweep on the local executor (store in the artifacts dir) and return, per configuration, its metrics
    over seeds (seed order)."""
    from theorylab.runs import RunStore
    from theorylab.sweeps import SweepSpec, run_sweep, sweep_results

    spec = SweepSpec.from_dict({**spec_dict, "device": device})
    print(f"sweep {spec.name}: seeds {list(spec.seeds)}")
    with RunStore(Path(artifacts_dir) / STORE) as store:
        report = run_sweep(spec, store, executor="local", progress=False)
        assert report.failed == 0, report.errors
        res = sweep_results(spec, store)
        names = sorted(res.runs[0].metrics)
        per = [
            {k: v for k, v in zip(names, vals, strict=True)}
            for vals in zip(*(res.metric(k) for k in names), strict=True)
        ]
    for cfg in per:
        assert len(cfg[names[0]]) == len(spec.seeds), "a run is missing from the store"
    return per


FF = {
    # CPU: 6 seeds in one vmapped stack; FFL(16, 0.5) is learnt in 300 steps (test_flipflop.py's calibration)
    "small": dict(
        T=16,
        p_ignore=0.5,
        seeds=6,
        model=dict(d_model=32, n_layers=2, n_heads=2),
        budget=dict(steps=300, batch_size=64, lr=3e-3, schedule="warmup_cosine", warmup=20, eval_batches=4),
        glitches=dict(n_sparse=512, n_dense=256),
    ),
    # the thesis's baseline (examples/sweeps/flipflop_full.toml): 25 seeds per configuration on a GPU
    "full": dict(
        T=512,
        p_ignore=0.8,
        seeds=25,
        model=dict(d_model=512, n_layers=6, n_heads=8),
        budget=dict(
            steps=10_000,
            batch_size=16,
            lr=3e-4,
            weight_decay=0.1,
            schedule="warmup_linear",
            warmup=50,
            eval_every=1000,
            eval_batches=4,
        ),
        glitches=dict(n_sparse=10_000, n_dense=1_000),
    ),
}

ARMS = {  # R4-R8's configurations: (task changes, model changes, budget changes)
    "mixture": ({"name": "flipflop_mixture"}, {}, {}),  # R4 (out-of-distribution data)
    "steps2x": ({}, {}, {"steps": 2}),  # R5: twice the steps (budget factor)
    "dropout": ({}, {"emb_dropout": 0.5}, {}),  # R6
    "sharpened": ({}, {"kind": "sharpened_transformer", "sharpen_lam": 0.1}, {}),  # R8 (entropy penalty)
}


def _ff_spec(scale: str, arm: str = "baseline", steps_factor: float = 1.0) -> dict:
    s = FF[scale]
    task = {"name": "flipflop", "p_ignore": s["p_ignore"]}
    model, budget = dict(s["model"]), {**s["budget"], "seq_len": s["T"]}
    if arm != "baseline":
        t, m, b = ARMS[arm]
        if t:
            task = dict(t)
        model.update(m)
        budget["steps"] *= b.get("steps", 1)
    budget["steps"] = max(1, int(budget["steps"] * steps_factor))
    budget["warmup"] = min(budget["warmup"], budget["steps"] // 2)
    return {
        "name": f"populations-flipflop-{scale}-{arm}" + ("" if steps_factor == 1 else f"-x{steps_factor:g}"),
        "seeds": s["seeds"],
        "metrics": ["final", "glitches"],
        "max_stack": s["seeds"],
        "task": task,
        "model": {"kind": "transformer", **model},
        "budget": budget,
        "metric_args": {"glitches": dict(s["glitches"])},
    }


def _ff_population(m: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {
        "acc": np.asarray(m["acc"], float),
        "errors": np.asarray(m["sparse_errors"] + m["dense_errors"], float),
        "sparse": np.asarray(m["sparse_errors"], float),
        "dense": np.asarray(m["dense_errors"], float),
    }


@pytest.fixture(scope="module")
def sweep_env(scale, artifacts_dir, device):
    """(artifacts dir holding the run store, device of the sweeps); the documents' populations are skipped on CPU."""
    if scale == "full" and device == "cpu":
        pytest.skip("the full-scale populations (25 seeds per configuration, 19M models) need --device cuda")
    return artifacts_dir, device


@pytest.fixture(scope="module")
def ff_baseline(scale, sweep_env):
    return _ff_population(_run(_ff_spec(scale), *sweep_env)[0])


def _ff_arm(scale, sweep_env, arm: str) -> dict[str, np.ndarray]:
    return _ff_population(_run(_ff_spec(scale, arm), *sweep_env)[0])


def _record(measure, name: str, pop: Mapping[str, np.ndarray]) -> None:
    measure(f"{name}: in-distribution accuracy per seed", np.round(pop["acc"], 4).tolist())
    measure(f"{name}: sparse / dense read errors per seed", [pop["sparse"].tolist(), pop["dense"].tolist()])
    measure(f"{name}: median read errors, 95% bootstrap interval over seeds", bootstrap_ci(pop["errors"]))


# ------------------------------------------------------------------------------------------------ flip-flop


@pytest.mark.xdist_group("populations-flipflop")  # shares the baseline population (--dist loadgroup)
@pytest.mark.claim("flipflop.emp_R1_long_tail", tier="trained")
def test_r1_population_has_a_tail_that_varies_over_seeds(ff_baseline, scale, measure):
    _record(measure, "baseline", ff_baseline)
    _conclude(r1_verdict(ff_baseline["acc"], ff_baseline["errors"]), scale, measure)


def _comparison(claim_arm: str, keys, ff_baseline, scale, sweep_env, measure) -> None:
    _record(measure, "baseline", ff_baseline)
    premise = r1_verdict(ff_baseline["acc"], ff_baseline["errors"])
    if premise.status != "passed":  # nothing to lower: the arm is not trained
        _conclude(lower_verdict(ff_baseline, ff_baseline, keys), scale, measure)
    arm = _ff_arm(scale, sweep_env, claim_arm)
    _record(measure, claim_arm, arm)
    _conclude(lower_verdict(ff_baseline, arm, keys), scale, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R4_data", tier="trained")
def test_r4_mixture_training_lowers_sparse_and_dense_errors(ff_baseline, scale, sweep_env, measure):
    _comparison("mixture", ("sparse", "dense"), ff_baseline, scale, sweep_env, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R5_scale", tier="trained")
def test_r5_more_steps_lower_sparse_errors(ff_baseline, scale, sweep_env, measure):
    _comparison("steps2x", ("sparse",), ff_baseline, scale, sweep_env, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R6_regularizers", tier="trained")
def test_r6_embedding_dropout_lowers_sparse_errors(ff_baseline, scale, sweep_env, measure):
    _comparison("dropout", ("sparse",), ff_baseline, scale, sweep_env, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R7_no_elimination", tier="trained")
def test_r7_no_in_distribution_configuration_is_reliably_error_free(ff_baseline, scale, sweep_env, measure):
    _record(measure, "baseline", ff_baseline)
    premise = r1_verdict(ff_baseline["acc"], ff_baseline["errors"])
    if premise.status != "passed":
        _conclude(no_elimination_verdict(ff_baseline, {}), scale, measure)
    arms = {a: _ff_arm(scale, sweep_env, a) for a in ("steps2x", "dropout")}
    _conclude(no_elimination_verdict(ff_baseline, arms), scale, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R8_sharpening", tier="trained")
def test_r8_errors_persist_under_sharpening(ff_baseline, scale, sweep_env, measure):
    _record(measure, "baseline", ff_baseline)
    premise = r1_verdict(ff_baseline["acc"], ff_baseline["errors"])
    if premise.status != "passed":
        _conclude(persist_verdict(ff_baseline, ff_baseline), scale, measure)
    arm = _ff_arm(scale, sweep_env, "sharpened")
    _record(measure, "sharpened", arm)
    _conclude(persist_verdict(ff_baseline, arm), scale, measure)


@pytest.mark.xdist_group("populations-flipflop")
@pytest.mark.claim("flipflop.emp_R1_long_tail", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R4_data", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R5_scale", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R6_regularizers", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R7_no_elimination", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R8_sharpening", tier="trained", control=True)
def test_population_verdicts_refuse_a_tenth_of_the_budget(ff_baseline, scale, sweep_env, measure):
    """The same seeds trained for 10% of the steps: every verdict built on them is open (under-trained), even
    though such models make plenty of read errors (a tail that untrained models would fake)."""
    short = _ff_population(_run(_ff_spec(scale, steps_factor=0.1), *sweep_env)[0])
    _record(measure, "10% of the steps", short)
    assert (short["errors"] > 0).any()  # the errors are there; only the gate stops them counting
    for v in (
        r1_verdict(short["acc"], short["errors"]),
        lower_verdict(short, ff_baseline, ("sparse",)),
        no_elimination_verdict(short, {}),
        persist_verdict(short, short),
    ):
        assert v.status == "open", v
    assert "under-trained" in r1_verdict(short["acc"], short["errors"]).reason


# constructed populations: 8 runs, all at accuracy 1, a baseline with a tail and an arm with fewer errors
_BASE = {"acc": np.ones(8), "errors": np.array([3, 8, 1, 20, 5, 2, 40, 7.0])}
_ARM = {"acc": np.ones(8), "errors": np.array([0, 0, 1, 0, 2, 0, 0, 1.0])}
for _p in (_BASE, _ARM):
    _p["sparse"] = _p["dense"] = _p["errors"]


@pytest.mark.claim("flipflop.emp_R1_long_tail", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R4_data", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R5_scale", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R6_regularizers", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R7_no_elimination", tier="trained", control=True)
@pytest.mark.claim("flipflop.emp_R8_sharpening", tier="trained", control=True)
def test_flipflop_verdicts_decide_both_ways_on_constructed_populations():
    """The verdicts are not vacuous: on populations built to satisfy a claim they pass, with the configurations
    reversed they fail, and an under-trained arm leaves them open."""
    assert r1_verdict(_BASE["acc"], _BASE["errors"]).status == "passed"
    assert r1_verdict(np.ones(25), np.zeros(25)).status == "failed"  # 0/25 glitch: share < 0.2 at 95%
    assert r1_verdict(np.ones(8), np.zeros(8)).status == "open"  # 0/8: the interval reaches 0.37
    assert r1_verdict(np.ones(8), np.full(8, 4.0)).status == "open"  # a tail must vary over seeds
    keys = ("sparse", "dense")
    assert lower_verdict(_BASE, _ARM, keys).status == "passed"
    assert lower_verdict(_ARM, _BASE, keys).status == "failed"  # the pair reversed
    worse = {k: v * 10 + 5 if k != "acc" else v for k, v in _BASE.items()}
    assert lower_verdict(_BASE, worse, keys).status == "failed"
    untrained = {**_ARM, "acc": np.full(8, 0.6)}
    assert lower_verdict(_BASE, untrained, keys).status == "open"
    assert no_elimination_verdict(_BASE, {"dropout": _BASE}).status == "passed"
    clean = {"acc": np.ones(8), "errors": np.zeros(8)}
    assert no_elimination_verdict(_BASE, {"dropout": clean}).status == "failed"
    assert persist_verdict(_BASE, _ARM).status == "passed"
    assert persist_verdict(_BASE, clean).status == "failed"
    from theorylab.sweeps import SweepSpec

    for scale in FF:  # every population of both scales is a valid sweep (built, not trained)
        for arm in ("baseline", *ARMS):
            spec = SweepSpec.from_dict({**_ff_spec(scale, arm), "device": "cpu"})
            spec.validate_values()
            assert spec.n_runs == FF[scale]["seeds"]


# ------------------------------------------------------------------------------------------------ distill R6

R6 = {
    # CPU: (6, 2)-parity, 2 layers, head dimension 8, 1 vs 4 heads, 6 seeds each (at (8, 2) only 4/6 four-head
    # runs learn in 300 or 450 steps: under-trained)
    "small": dict(d=6, k=2, heads=(1, 4), head_dim=8, seeds=6, steps=300, lr=3e-3, batch_size=64),
    # the document's heads sweep: (100, 6)-parity; budget a GPU's
    "full": dict(d=100, k=6, heads=(1, 8), head_dim=32, seeds=25, steps=20_000, lr=1e-3, batch_size=256),
}
R6_BAR = 0.95  # held-out accuracy that counts as learnt (and the training-curve level of steps_to_acc)


def _r6_spec(scale: str, heads: int, steps_factor: float = 1.0) -> dict:
    s = R6[scale]
    steps = max(1, int(s["steps"] * steps_factor))
    return {
        "name": f"populations-distill-r6-{scale}-h{heads}"
        + ("" if steps_factor == 1 else f"-x{steps_factor:g}"),
        "seeds": s["seeds"],
        "metrics": ["final", "curve"],
        "max_stack": s["seeds"],
        "task": {"name": "sparse_parity", "d": s["d"], "k": s["k"]},
        "model": {"kind": "transformer", "d_model": heads * s["head_dim"], "n_layers": 2, "n_heads": heads},
        "budget": {
            "steps": steps,
            "batch_size": s["batch_size"],
            "seq_len": s["d"],
            "lr": s["lr"],
            "eval_batches": 4,
            "log_every": max(1, steps // 30),
        },
        "metric_args": {"curve": {"acc": R6_BAR}},
    }


def _r6_population(scale, sweep_env, steps_factor: float = 1.0):
    out = {}
    for h in R6[scale]["heads"]:
        m = _run(_r6_spec(scale, h, steps_factor), *sweep_env)[0]
        out[h] = (np.asarray(m["acc"], float), np.asarray(m["steps_to_acc"], float))
    return out


@pytest.mark.xdist_group("populations-distill")
@pytest.mark.claim("distill.R6", tier="trained")
def test_distill_r6_more_heads_learn_sparse_parity_faster(scale, sweep_env, measure):
    pop = _r6_population(scale, sweep_env)
    few, many = R6[scale]["heads"]
    for h, (acc, steps) in pop.items():
        measure(f"{h} heads: held-out accuracy / steps to {R6_BAR} per seed", [acc.tolist(), steps.tolist()])
    v = faster_verdict(pop[many][1], pop[few][1], pop[many][0], R6_BAR, R6[scale]["steps"])
    _conclude(v, scale, measure)


@pytest.mark.xdist_group("populations-distill")
@pytest.mark.claim("distill.R6", tier="trained", control=True)
def test_distill_r6_verdict_refuses_a_tenth_of_the_budget_and_the_reversed_pair(scale, sweep_env, measure):
    s = R6[scale]
    few, many = s["heads"]
    short = _r6_population(scale, sweep_env, 0.1)
    measure(
        "10% of the steps: held-out accuracy per seed (fewer, more heads)",
        [short[h][0].tolist() for h in s["heads"]],
    )
    budget = max(1, s["steps"] // 10)
    assert faster_verdict(short[many][1], short[few][1], short[many][0], R6_BAR, budget).status == "open"
    # the trained populations with the pair reversed (one head claimed faster than more): never passed
    pop = _r6_population(scale, sweep_env)
    reversed_pair = faster_verdict(pop[few][1], pop[many][1], pop[few][0], R6_BAR, s["steps"])
    measure("reversed pair verdict", f"{reversed_pair.status}: {reversed_pair.reason}")
    assert reversed_pair.status != "passed"
    # constructed: 6 runs each, all learnt; more heads clearly faster passes, the reversed pair fails
    fast, slow = np.array([40, 60, 50, 80, 70, 55.0]), np.array([200, 250, -1, 180, 300, 220.0])
    assert faster_verdict(fast, slow, np.ones(6), R6_BAR, 300).status == "passed"
    assert faster_verdict(slow, fast, np.ones(6), R6_BAR, 300).status == "failed"
    assert faster_verdict(fast, slow, np.full(6, 0.5), R6_BAR, 300).status == "open"
    from theorylab.sweeps import SweepSpec

    for sc in R6:  # the populations of both scales are valid sweeps (built, not trained)
        for h in R6[sc]["heads"]:
            SweepSpec.from_dict({**_r6_spec(sc, h), "device": "cpu"}).validate_values()
