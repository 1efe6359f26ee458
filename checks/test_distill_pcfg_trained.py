"""Liu §4.2.3.1.2's trained PCFG experiments: (R4) the inflection checkpoint is the best intermediate teacher for
(2,T)-progressive distillation, (R5) 8-shot progressive distillation beats one-shot distillation and training on
labels (Figs. 4.4 right, 4.7, 4.8). BERT-style masked LMs (Def 24, mask rate 0.3) on a fixed-length cfg3-style
layered grammar (binary rules, so every sentence has 2^levels tokens: a reconstruction, the cfg3b table is not in
the text).

One teacher run (checkpoints every ``every`` steps) supervises every student arm; students of an arm share their
seeds with the other arms, and all arms are scored on the same held-out masked tokens, so arms are compared by the
paired verdict of :func:`theorylab.nn.distill_pcfg.paired_verdict` (one-sided z = 2.576 on the held-out sampling
error, every seed's difference positive). An open verdict skips the check with its numbers recorded (the claim
stays open at that scale); a failed one fails it at the document's scale and is recorded and skipped at the toy
scale (see :func:`_conclude`).

- ``--scale small`` (CPU CI, about 50 s of CPU): 8-token sentences (levels (1, 3, 3)), teacher 4 heads x 8, 2 layers,
  240 steps; students 1 head x 8, 2 layers, 200 steps; two seeds; batch 64, Adam at 3e-3 (warm-up, cosine).
- ``--scale full``: the document's sizes: depth-7 trees (levels (1, 3, 3, 3, 3, 3), 64 tokens), teacher 32 heads x 8,
  4 layers, 8000 steps of batch 512; students 8 heads x 8, 4 layers, 4000 steps; (2,T) with T in {500, 1000, 2000}
  and intermediate checkpoints {500, 1000, 2000, 4000}; three student seeds. Needs a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from theorylab.languages.pcfg_grammars import layered_grammar  # noqa: E402
from theorylab.nn import distill_pcfg as dp  # noqa: E402
from theorylab.nn.distill import ProgressiveSchedule  # noqa: E402
from theorylab.nn.quality import require_trained  # noqa: E402

SPECS = {
    "small": {
        "levels": (1, 3, 3),
        "teacher": {"n_heads": 4, "n_layers": 2},
        "student": {"n_heads": 1, "n_layers": 2},
        "T0": 240,
        "every": 15,
        "S": 200,
        "two_T": (30,),
        "intermediates": (15,),  # besides C1: a checkpoint before the inflection
        "batch": 64,
        "lr": 3e-3,
        "student_lr": 3e-3,
        "held_out": 512,
        "seeds": (1, 2),
    },
    "full": {
        "levels": (1, 3, 3, 3, 3, 3),
        "teacher": {"n_heads": 32, "n_layers": 4},
        "student": {"n_heads": 8, "n_layers": 4},
        "T0": 8000,
        "every": 250,
        "S": 4000,
        "two_T": (500, 1000, 2000),
        "intermediates": (500, 1000, 2000, 4000),
        "batch": 512,
        "lr": 1e-3,
        "student_lr": 1e-3,
        "held_out": 2048,
        "seeds": (1, 2, 3),
    },
}
GRAMMAR_SEED, TEACHER_SEED, HELD_OUT_SEED, MEASURE_SEED = 0, 0, 99, 5
NGRAM = 3  # the n of L_robust that locates the inflection (Fig. 4.7 middle)
TRAINED_MARGIN = 0.05  # the teacher must beat the position-wise majority guess by this much


def positional_majority_accuracy(held_out) -> float:
    """Top-1 accuracy of predicting, at each masked position, the most frequent token of that position."""
    tokens, _, masked = held_out
    best = np.array([np.bincount(col, minlength=3).argmax() for col in tokens.T])
    return float((tokens == best[None, :])[masked].mean())


@pytest.fixture(scope="module")
def pcfg_teacher(scale, device):
    s = SPECS[scale]
    grammar = layered_grammar(
        np.random.default_rng(GRAMMAR_SEED),
        level_sizes=s["levels"],
        degrees=(2,),
        rhs_lengths=(2,),
        distinct=True,
    )
    h = 2 ** (len(s["levels"]))
    tcfg = dp.MLMConfig(n_vocab=3, seq_len=h, head_dim=8, **s["teacher"])
    held = dp.held_out_set(grammar, tcfg, s["held_out"], HELD_OUT_SEED)
    print(
        f"grammar seed {GRAMMAR_SEED}, teacher seed {TEACHER_SEED}, held-out seed {HELD_OUT_SEED}, scale {scale}"
    )
    run = dp.train_mlm(grammar, tcfg, s["T0"], TEACHER_SEED, lr=s["lr"], batch=s["batch"],
                       checkpoint_every=s["every"], held_out=held, device=device)  # fmt: skip
    models = {step: run.model_at(step, device) for step in run.checkpoints}
    sentences = dp.fixed_length_batch(grammar, np.random.default_rng(MEASURE_SEED), 512, h)
    robust = [dp.median_l_robust(models[st], sentences, NGRAM, tcfg.mask_token) for st in run.steps]
    interior = [i for i, st in enumerate(run.steps) if 0 < st < s["T0"]]
    c1 = run.steps[max(interior, key=lambda i: robust[i])]
    return {"grammar": grammar, "held": held, "run": run, "models": models, "robust": robust, "c1": c1,
            "sentences": sentences, "h": h}  # fmt: skip


def _arms(s: dict, c1: int) -> dict[str, ProgressiveSchedule | None]:
    T0 = s["T0"]
    per = (
        T0 // 2 // 8
    )  # 8-shot (T0/2)-Equal-split: each checkpoint supervises kappa T0 / N steps, kappa = 1/2
    arms: dict[str, ProgressiveSchedule | None] = {
        "labels": None,
        "one_shot": ProgressiveSchedule.one_shot(T0),
        "progressive_8": ProgressiveSchedule(tuple(i * T0 // 8 for i in range(1, 9)), (per,) * 8),
        "untrained_teacher": ProgressiveSchedule.one_shot(0),  # control: the teacher's initialisation
    }
    for mid in sorted({c1, *s["intermediates"]}):
        for T in s["two_T"]:
            arms[f"two_stage_{mid}_T{T}"] = ProgressiveSchedule.two_stage(mid, T0, T)
    return arms


@pytest.fixture(scope="module")
def pcfg_students(pcfg_teacher, scale, device):
    s, t = SPECS[scale], pcfg_teacher
    scfg = dp.MLMConfig(n_vocab=3, seq_len=t["h"], head_dim=8, **s["student"])
    out = {}
    for name, sched in _arms(s, t["c1"]).items():
        runs = [
            dp.train_mlm(
                t["grammar"],
                scfg,
                s["S"],
                100 + seed,
                lr=s["student_lr"],
                batch=s["batch"],
                checkpoint_every=s["S"],
                held_out=t["held"],
                device=device,
                teacher=None if sched is None else t["models"],
                schedule=sched,
            )  # fmt: skip
            for seed in s["seeds"]
        ]
        models = [r.model_at(s["S"], device) for r in runs]
        out[name] = {
            "hits": np.stack([dp.masked_hits(m, t["held"]) for m in models]),
            "models": models,
        }
        print(
            f"student arm {name}: seeds {[100 + x for x in s['seeds']]}, acc {out[name]['hits'].mean():.4f}"
        )
    return out


def _require_trained(t: dict, students: dict, measure) -> None:
    """The teacher and the students trained on labels must beat the position-wise majority guess."""
    base = positional_majority_accuracy(t["held"])
    measure("positional majority accuracy (held-out masked tokens)", base)
    measure("teacher final held-out masked accuracy", t["run"].acc[-1])
    require_trained(t["run"].acc[-1], base + TRAINED_MARGIN, "the teacher's held-out masked accuracy")
    labels = students["labels"]["hits"].mean(1)
    require_trained(
        labels, base + TRAINED_MARGIN, "the held-out masked accuracy of the students trained on labels"
    )


def _combine(verdicts: list[dp.PairedVerdict]) -> str:
    if any(v.status == "failed" for v in verdicts):
        return "failed"
    return "passed" if all(v.status == "passed" for v in verdicts) else "open"


def _conclude(status: str, reason: str, scale: str, measure) -> None:
    """Record the verdict. At the document's scale a failed verdict fails the check and an open one skips it. The
    claims are about the document's scale, so at the CPU toy scale neither outcome decides them: a failed verdict
    is recorded and skipped (the record states it), never silently passed."""
    measure("verdict", f"{status}: {reason}")
    if status == "failed" and scale == "small":
        pytest.skip(f"contradicted at the small (toy) scale, not the claim's scale: {reason}")
    assert status != "failed", reason
    if status == "open":
        pytest.skip(f"undecided at {scale} scale: {reason}")


def _best_two_stage(students: dict, mid: int) -> np.ndarray:
    """The (2,T) arm from checkpoint ``mid`` with the best mean accuracy over the T grid (the thesis grid-searches T)."""
    arms = [v["hits"] for k, v in students.items() if k.startswith(f"two_stage_{mid}_T")]
    return max(arms, key=lambda h: h.mean())


@pytest.mark.xdist_group("distill-pcfg")  # one teacher and one set of students per worker
@pytest.mark.claim("distill.R4", tier="trained")
def test_r4_inflection_checkpoint_is_best_for_two_stage_distillation(
    pcfg_teacher, pcfg_students, scale, measure
):
    t, st = pcfg_teacher, pcfg_students
    _require_trained(t, st, measure)
    measure("teacher checkpoint steps", t["run"].steps)
    measure("teacher held-out masked accuracy per checkpoint", [round(a, 4) for a in t["run"].acc])
    measure(f"teacher median L_robust (n={NGRAM}) per checkpoint", [round(r, 4) for r in t["robust"]])
    measure("C1 (interior L_robust peak)", t["c1"])
    peak = t["robust"][t["run"].steps.index(t["c1"])]
    measure("L_robust drop after C1 to the final checkpoint", peak - t["robust"][-1])
    at_c1 = t["run"].steps.index(t["c1"])
    measure("teacher median L_robust (n=3) at C1 / final", [peak, t["robust"][-1]])
    measure("teacher held-out masked accuracy at C1 / final", [t["run"].acc[at_c1], t["run"].acc[-1]])
    c1 = _best_two_stage(st, t["c1"])
    verdicts = []
    for mid in SPECS[scale]["intermediates"]:
        if mid == t["c1"]:
            continue
        other = _best_two_stage(st, mid)
        v = dp.paired_verdict(c1, other)
        measure(f"(2,T) from C1 vs from {mid}: accuracy, diff, SE", [c1.mean(), other.mean(), v.diff, v.se])
        verdicts.append(v)
    v = dp.paired_verdict(c1, st["one_shot"]["hits"])
    measure(
        "(2,T) from C1 vs one-shot: accuracy, diff, SE",
        [c1.mean(), st["one_shot"]["hits"].mean(), v.diff, v.se],
    )
    verdicts.append(v)
    _conclude(_combine(verdicts), "; ".join(x.reason for x in verdicts), scale, measure)


@pytest.mark.xdist_group("distill-pcfg")  # one teacher and one set of students per worker
@pytest.mark.claim("distill.R5", tier="trained")
def test_r5_progressive_beats_one_shot_and_labels(pcfg_teacher, pcfg_students, scale, measure):
    t, st = pcfg_teacher, pcfg_students
    _require_trained(t, st, measure)
    mask = 3
    for name in ("labels", "one_shot", "progressive_8"):
        models = st[name]["models"]
        measure(f"{name}: held-out masked accuracy", float(st[name]["hits"].mean()))
        for n in (3, 5):
            rob = np.mean([dp.median_l_robust(m, t["sentences"], n, mask) for m in models])
            close = np.mean([dp.median_l_close(m, t["sentences"], n, mask) for m in models])
            measure(f"{name}: median L_robust / L_close (n={n})", [float(rob), float(close)])
        probes = [
            np.mean([dp.probe_accuracy(m, t["grammar"], lvl, 256, 256, seed=7, steps=200) for m in models])
            for lvl in range(1, len(SPECS[scale]["levels"]))
        ]
        measure(f"{name}: nonterminal probe accuracy per level 1..", [float(p) for p in probes])
    prog = st["progressive_8"]["hits"]
    verdicts = [dp.paired_verdict(prog, st[base]["hits"]) for base in ("one_shot", "labels")]
    for base, v in zip(("one_shot", "labels"), verdicts, strict=True):
        measure(f"progressive vs {base}: diff, SE", [v.diff, v.se])
    _conclude(_combine(verdicts), "; ".join(x.reason for x in verdicts), scale, measure)


@pytest.mark.xdist_group("distill-pcfg")  # one teacher and one set of students per worker
@pytest.mark.claim("distill.R5", tier="trained", control=True)
def test_r5_control_distilling_an_untrained_teacher_is_rejected(pcfg_teacher, pcfg_students, measure):
    """One ingredient changed: the supervising checkpoint is the teacher's initialisation. The same verdict must
    find the student significantly worse than training on labels (and not better than the real one-shot arm)."""
    st = pcfg_students
    bad = dp.paired_verdict(st["untrained_teacher"]["hits"], st["labels"]["hits"])
    measure("untrained-teacher student accuracy / labels accuracy", [st["untrained_teacher"]["hits"].mean(),
                                                                      st["labels"]["hits"].mean()])  # fmt: skip
    assert bad.status == "failed", bad.reason
    assert dp.paired_verdict(st["untrained_teacher"]["hits"], st["one_shot"]["hits"]).status == "failed"


@pytest.mark.xdist_group("distill-pcfg")  # one teacher and one set of students per worker
@pytest.mark.claim("distill.R4", tier="trained", control=True)
def test_r4_control_reversed_pair_and_verdict_on_constructed_hits(
    pcfg_teacher, pcfg_students, scale, measure
):
    """The reversed comparison (an earlier checkpoint claimed better than C1) is never passed on the trained arms,
    and the paired verdict decides both ways on constructed hits."""
    t, st = pcfg_teacher, pcfg_students
    c1 = _best_two_stage(st, t["c1"])
    for mid in SPECS[scale]["intermediates"]:
        if mid != t["c1"]:
            reversed_pair = dp.paired_verdict(_best_two_stage(st, mid), c1)
            measure(f"reversed pair ({mid} better than C1) verdict", reversed_pair.status)
            assert reversed_pair.status != "passed", reversed_pair.reason
    rng = np.random.default_rng(0)
    base = rng.random((2, 2000)) < 0.6
    better = base | (rng.random((2, 2000)) < 0.15)  # about +6 points on the same tokens
    assert dp.paired_verdict(better, base).status == "passed"
    assert dp.paired_verdict(base, better).status == "failed"
    assert dp.paired_verdict(base, base).status == "open"
    noisy = base.copy()
    noisy[0] = better[0]  # one seed better, the other identical: the sign condition keeps it open
    assert dp.paired_verdict(noisy, base).status == "open"
    with pytest.raises(ValueError, match="need hits of equal shape"):
        dp.paired_verdict(base, base[:, :10])
