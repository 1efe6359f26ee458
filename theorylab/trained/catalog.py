"""What each trained check trains at ``--scale full``, in order of value.

A :class:`FullCheck` names pytest node ids (a check and its controls share trainings through the checks' caches)
and a function returning its :class:`Training` list. Where a check builds its configuration in a helper, the
catalog calls that helper (the check module is loaded from the checks folder), so the plan cannot drift from the
check; the few configurations that only exist inline in a check are restated here with the check they mirror.
Checks whose training is not a :func:`theorylab.nn.train` call (own loops) carry a host-time estimate instead.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class Training:
    """One ``train(task, config, budget, seeds)`` call of a check at full scale, done ``repeats`` times."""

    label: str
    task: object
    config: object
    budget: object
    n_seeds: int
    repeats: int = 1


@dataclass(frozen=True)
class FullCheck:
    """A trained check at full scale: pytest node ids (check first, then its controls), the claims it decides,
    its trainings and the host work outside training (seconds on one CPU thread, from the CPU audit)."""

    name: str
    claims: tuple[str, ...]
    nodes: tuple[str, ...]
    build: Callable[[], list[Training]] | None = None
    host_seconds: float = 0.0
    note: str = ""
    value: int = 0  # rank: lower runs first
    extra: dict = field(default_factory=dict)


@cache
def check_module(name: str):
    """The check module ``checks/<name>.py`` of the current project (loaded once, not as a test)."""
    from theorylab.cli import search_dirs

    for folder in search_dirs():
        path = Path(folder) / f"{name}.py"
        if path.is_file():
            mod_name = f"_theorylab_catalog_{name}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            with (
                warnings.catch_warnings()
            ):  # outside theorylab's pytest plugin the claim marks are unregistered
                warnings.filterwarnings("ignore", message="Unknown pytest.mark")
                spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"check module {name}.py not found in the checks folders")


def trainings_of(check: FullCheck, code: str = "after") -> list[Training]:
    """The check's trainings (empty when it trains with its own loop). ``code`` "before" / "fused": what the checks
    trained before the CUDA-graph harness (``extra["trainings_before"]``, where they differed)."""
    if code != "after" and "trainings_before" in check.extra:
        return check.extra["trainings_before"]()
    return [] if check.build is None else check.build()


def host_seconds_of(check: FullCheck, code: str = "after") -> float:
    """The check's host work outside training; ``code`` "before" / "fused": before the device-side model oracle."""
    return (
        check.extra.get("host_seconds_before", check.host_seconds) if code != "after" else check.host_seconds
    )


# ------------------------------------------------------------------------------------------------ builders


def _flipflop_baseline(**changes):
    from theorylab.nn.recipes import flipflop_baseline

    return flipflop_baseline(T=512, **changes)


def _r1() -> list[Training]:
    from theorylab.languages import flipflop as ff

    r = _flipflop_baseline()
    return [Training("19M baseline FFL(0.8)", ff.FlipFlopTask.ffl(0.8), r.config, r.budget, len(r.seeds))]


def _r4() -> list[Training]:
    from theorylab.languages import flipflop as ff

    r = _flipflop_baseline()
    return [Training("19M on the FFL mixture", ff.FlipFlopMixture(), r.config, r.budget, len(r.seeds))]


def _r6() -> list[Training]:
    from theorylab.languages import flipflop as ff

    r = _flipflop_baseline(emb_dropout=0.5)
    return [
        Training("19M, embedding dropout 0.5", ff.FlipFlopTask.ffl(0.8), r.config, r.budget, len(r.seeds))
    ]


def _r8() -> list[Training]:
    from theorylab.languages import flipflop as ff
    from theorylab.nn import AttentionSharpening, TransformerConfig

    spec = check_module("test_flipflop_glitches").SHARP["full"]
    r = _flipflop_baseline()
    cfg = TransformerConfig(vocab_size=5, n_outputs=5, max_len=spec["T"], **spec["model"])
    task = ff.FlipFlopTask.ffl(spec["p_ignore"])
    # lam = 0 is R1's baseline training (the plain model), loaded from its checkpoint: only lam = 0.1 trains here
    return [Training("19M, entropy sharpening lam=0.1", task, AttentionSharpening(cfg, 0.1), r.budget, 8)]


def _r8_before() -> list[Training]:
    """R8 before the shared baseline: lam = 0 and lam = 0.1, both with explicit attention."""
    (sharp,) = _r8()
    plain = dataclasses.replace(
        sharp, label="19M, entropy sharpening lam=0.0", config=dataclasses.replace(sharp.config, lam=0.0)
    )
    return [plain, sharp]


def _prop3() -> list[Training]:
    from theorylab.languages import flipflop as ff
    from theorylab.nn import Budget, TransformerConfig

    spec = check_module("test_flipflop").TRANSFORMER["full"]
    T = spec["T"]
    task = ff.FlipFlopTask.ffl(spec["p_ignore"])
    cfg = TransformerConfig(vocab_size=5, n_outputs=5, max_len=T, **spec["model"])
    every = max(1, spec["budget"]["steps"] // 20)
    budget = Budget(seq_len=T, eval_every=every, eval_batches=4, **spec["budget"])
    n = len(spec["seeds"])
    tenth = dataclasses.replace(budget, steps=budget.steps // 10, warmup=min(20, budget.steps // 20))
    return [
        Training("prop3 Transformer", task, cfg, budget, n),
        Training("control: lr = 0, 50 steps", task, cfg, dataclasses.replace(budget, lr=0.0, steps=50), n),
        Training("control: 10% of the steps", task, cfg, tenth, n),
    ]


def _ff_lstm() -> list[Training]:
    from theorylab.languages import flipflop as ff
    from theorylab.nn import Budget, LSTMConfig

    spec = check_module("test_flipflop").LSTM["full"]
    budget = Budget(seq_len=spec["T"], **spec["budget"])
    return [Training("LSTM skyline", ff.FlipFlopTask.ffl(0.8), LSTMConfig(5, 5, **spec["model"]), budget, 16)]


def _automata(kinds: tuple[str, ...]) -> Callable[[], list[Training]]:
    def build() -> list[Training]:
        mod = check_module("test_automata_experiments")
        out = []
        for kind in kinds:
            task, cfg, budget = mod._setup(kind, "full")
            out.append(Training(f"automata {kind}", task, cfg, budget, len(mod.SEEDS)))
        return out

    return build


def _depth_table() -> list[Training]:
    from theorylab.automata import zoo
    from theorylab.automata.experiments import AutomatonTask

    mod = check_module("test_automata_trained")
    out = []
    rows = {"C2": zoo.parity(), "C2xC3": mod.c2xc3(), "D6": zoo.dihedral(3), "D8": zoo.dihedral(4),
            "Q8": zoo.quaternion(), "A4": zoo.alternating(4), "A5": zoo.alternating(5), "S5": zoo.symmetric(5)}  # fmt: skip
    for name, aut in rows.items():
        task = AutomatonTask(aut)
        for L in mod.DEPTHS:  # upper bound: a row stops at its first depth reaching 99%, a training at 99%
            cfg, budget = mod._transformer(task, L, "full", 0), mod.depth_budget("full")
            out.append(Training(f"{name} depth {L}", task, cfg, budget, len(mod.SEEDS)))
    return out


def _depth_table_before() -> list[Training]:
    """The depth table before the stopping rule: no evaluations during training."""
    return [
        dataclasses.replace(t, budget=dataclasses.replace(t.budget, eval_every=0, eval_batches=4))
        for t in _depth_table()
    ]


def _distill_r6() -> list[Training]:
    """distill R6: the heads sweep at full scale (1 vs 8 heads, 25 seeds each, 20,000 steps), built from the check's
    own sweep spec, plus its control's 10%-budget populations (the full populations are shared through the sweep
    store of the same process)."""
    from theorylab.sweeps.spec import SweepSpec, build

    mod = check_module("test_populations")
    out = []
    for factor, what in ((1.0, ""), (0.1, ", control: 10% of the steps")):
        for heads in mod.R6["full"]["heads"]:
            spec = SweepSpec.from_dict({**mod._r6_spec("full", heads, factor), "device": "cuda"})
            (cfg,) = spec.configs()
            task, model, budget = build(cfg)
            out.append(
                Training(f"{heads} heads on (100, 6)-parity{what}", task, model, budget, len(spec.seeds))
            )
    return out


def _verifier() -> list[Training]:
    from theorylab.languages.dyck import DyckCompletion, DyckCompletionLM
    from theorylab.nn import Budget, TransformerConfig

    spec = check_module("test_verifier").DYCK_LM["full"]
    task = DyckCompletionLM(DyckCompletion(spec["D"]))
    cfg = TransformerConfig(vocab_size=5, n_outputs=4, max_len=spec["D"], **spec["model"])
    budget = Budget(steps=spec["steps"], batch_size=spec["batch"], seq_len=spec["D"], lr=spec["lr"],
                    schedule="warmup_cosine", warmup=spec["warmup"], weight_decay=spec["weight_decay"])  # fmt: skip
    return [Training("Dyck completion LM", task, cfg, budget, 1)]


def _thm7() -> list[Training]:
    from theorylab.hmm.training import MaskedPredictionTask
    from theorylab.nn import Budget, MLPConfig

    mod = check_module("test_hmm")
    model, kw = mod._trained_model("full"), mod._train_kwargs("full")
    task = MaskedPredictionTask(model, "x2x3|x1")
    cfg = MLPConfig(
        vocab_size=model.d, n_outputs=task.n_outputs, context=1, d_embed=None, d_hidden=kw["hidden"]
    )
    out = []
    for n in (10**4, 10**5, 10**6, 10**7):
        budget = Budget(steps=kw["steps"], batch_size=min(kw["batch_size"], n), seq_len=1, lr=kw["lr"],
                        schedule="cosine", fixed_dataset=n, eval_batches=0)  # fmt: skip
        out.append(Training(f"HMM read-out n={n:g}", task, cfg, budget, len(kw["seeds"])))
    return out


# ------------------------------------------------------------------------------------------------ the catalog

_GL = "checks/test_flipflop_glitches.py::"
_AE = "checks/test_automata_experiments.py::"
_AT = "checks/test_automata_trained.py::"

CATALOG: tuple[FullCheck, ...] = (
    FullCheck("flipflop.R1", ("flipflop.emp_R1_long_tail",),
              (_GL + "test_r1_baseline_seeds_glitch_out_of_distribution",), _r1, host_seconds=60,
              note="the 19M baseline's glitch tail; its training is shared with R4, R6 and R8 (checkpoint)", value=1),
    FullCheck("flipflop.R6", ("flipflop.emp_R6_regularizers",),
              (_GL + "test_r6_embedding_dropout_lowers_the_median_glitch_rate",), _r6, host_seconds=60,
              note="the baseline is R1's, loaded from its checkpoint", value=2),
    FullCheck("flipflop.R4", ("flipflop.emp_R4_data",),
              (_GL + "test_r4_mixture_training_lowers_the_median_glitch_rate",), _r4, host_seconds=60,
              note="the baseline is R1's, loaded from its checkpoint", value=3),
    FullCheck("automata.E3", ("automata.E3_attention_mechanism_grid",),
              (_AE + "test_attention_detects_boundaries", _AE + "test_attention_detects_boundaries_control"),
              _automata(("grid",)), host_seconds=30, value=4),
    FullCheck("flipflop.prop3", ("flipflop.prop3_realizable",),
              ("checks/test_flipflop.py::test_two_layer_transformers_learn_ffl",
               "checks/test_flipflop.py::test_the_learning_check_fails_when_training_is_broken",
               "checks/test_flipflop.py::test_the_learning_verdict_rejects_a_tenth_of_the_budget_and_a_different_language"),
              _prop3, host_seconds=120, value=5),
    FullCheck("flipflop.R8", ("flipflop.emp_R8_sharpening",),
              (_GL + "test_entropy_sharpening_lowers_attention_entropy_and_keeps_accuracy",), _r8, host_seconds=30,
              note="lam = 0.1 with explicit attention (the penalty needs the weights); lam = 0 is R1's baseline, "
                   "loaded from its checkpoint", value=6, extra={"trainings_before": _r8_before}),
    FullCheck("verifier.dyck", ("verifier.alg1",),
              ("checks/test_verifier.py::test_backtracking_with_the_exact_verifier_fixes_errors_of_a_trained_dyck_lm",),
              _verifier, host_seconds=120,
              note="model-oracle decoding of 2,000 prompts x 2 models: one batched look-ahead forward per prompt "
                   "on the device, the decoding and the exact verifier on the host (~27 ms per prompt and model, "
                   "measured on a loaded 2-core CPU); was ~23 min of CPU forwards", value=7,
              extra={"host_seconds_before": 1380}),
    FullCheck("hmm.thm7", ("hmm.thm7",),
              ("checks/test_hmm.py::test_thm7_trained_predictor_readout_error_vs_sample_size",
               "checks/test_hmm.py::test_thm7_trained_control_verdict_rejects_the_baselines"),
              _thm7, host_seconds=60, value=8),
    FullCheck("flipflop.lstm", ("flipflop.emp_R2_lstm",),
              ("checks/test_flipflop.py::test_lstm_has_no_read_error_on_sparse_and_dense_strings",), _ff_lstm,
              host_seconds=60, note="cuDNN LSTMs in float32 (bf16 made one seed err in the first run)", value=9),
    FullCheck("automata.E8", ("automata.E8_scratchpad_recency",),
              (_AE + "test_scratchpad_recency", _AE + "test_scratchpad_without_recency_control"),
              _automata(("scratch-alibi", "scratch-sin")), host_seconds=120,
              note="iterative decoding of 128 words x 3 sets per model, batched on the device (was ~100 min on "
                   "one CPU thread)", value=10),
    FullCheck("distill.R6", ("distill.R6",),
              ("checks/test_populations.py::test_distill_r6_more_heads_learn_sparse_parity_faster",
               "checks/test_populations.py::test_distill_r6_verdict_refuses_a_tenth_of_the_budget_and_the_reversed_pair"),
              _distill_r6, host_seconds=60, note="populations of 25 seeds stacked in one vmapped run", value=11),
    FullCheck("automata.E1_depth_table", ("automata.E1_depth_table",), (_AT + "test_group_depth_table_full",),
              _depth_table, host_seconds=60,
              note="upper bound: 8 rows x 4 depths x 40k steps (a training stops when its best seed reaches 99%, "
                   "a row at its first such depth)", value=12, extra={"trainings_before": _depth_table_before}),
)  # fmt: skip


def claim_nodes() -> list[str]:
    """Every pytest node id of the catalog, in order of value."""
    return [n for c in sorted(CATALOG, key=lambda c: c.value) for n in c.nodes]
