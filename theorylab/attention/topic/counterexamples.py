"""Counterexamples to printed statements of Li's thesis §2.1 (topic structure), one generator per erratum."""

from __future__ import annotations

import numpy as np

from theorylab.attention.topic import stage1 as tp
from theorylab.counterexamples import register, verifier
from theorylab.languages.topic import TopicModel

CONVENTIONS = (
    "TopicModel(T topics, v words per topic, tau topics per document, masking rates p_m, p_c, p_r); vocabulary "
    "index = topic * v + word; W^V, E and Hessians are (T v) x (T v) matrices acting on one-hot column vectors; "
    "Table 2.1 columns: same word, same topic different word, different topic"
)

#: Table 2.1 of the thesis (mean attention by pair type; CE loss, one-hot embeddings, K, Q, V trained).
TABLE_2_1 = {
    "Adam 0.003": (0.00759, 0.0108, 0.00689),
    "Adam 0.01": (0.00811, 0.010, 0.00707),
    "Adam 0.03": (0.00453, 0.0116, 0.00665),
    "SGD 0.01": (0.0105, 0.0106, 0.00673),
    "SGD 0.03": (0.0140, 0.0103, 0.00641),
}


#: Table 2.1's printed standard deviations over 3 runs (the row "SGD 0.01" is a single run: no deviation printed).
TABLE_2_1_SD = {
    "Adam 0.003": (0.00171, 0.000657, 0.000160),
    "Adam 0.01": (0.000705, 0.000392, 0.000178),
    "Adam 0.03": (0.000346, 0.000460, 0.000200),
    "SGD 0.01": (None, None, None),
    "SGD 0.03": (0.00158, 0.000357, 0.0000239),
}

#: Table 2.2 (diagonal W^V, Adam, 7 of 10 runs): (mean, std) of same-word, same-topic-different-word and
#: different-topic attention per learning rate.
TABLE_2_2 = {
    "0.003": ((0.0916, 0.000901), (0.00185, 0.000170), (0.00256, 0.0000332)),
    "0.01": ((0.0918, 0.00244), (0.00182, 0.000474), (0.00256, 0.000109)),
}


def separation(mean_a: float, sd_a, mean_b: float, sd_b) -> float:
    """(a - b) in combined printed standard deviations, sqrt(sd_a^2 + sd_b^2); nan where a row has no deviation."""
    if sd_a is None or sd_b is None:
        return float("nan")
    return (mean_a - mean_b) / float(np.hypot(sd_a, sd_b))


def _params(p: TopicModel) -> dict[str, np.ndarray]:
    return {name: np.asarray(float(getattr(p, name))) for name in ("T", "v", "tau", "p_m", "p_c", "p_r")}


def _model(a, exact: bool = False) -> TopicModel:
    """The topic model of a file (rates as stored floats, or as the nearest fractions with ``exact``)."""
    from fractions import Fraction

    rate = (lambda x: Fraction(float(x)).limit_denominator(1000)) if exact else float
    return TopicModel(int(a["T"]), int(a["v"]), int(a["tau"]), rate(a["p_m"]), rate(a["p_c"]), rate(a["p_r"]))


@register("topic.thm2.1.1", "E = c3 I (the proof's 'simplest example') is not an optimal embedding")
def printed_embedding_example() -> dict[str, np.ndarray]:
    p = TopicModel(3, 2, 1)
    printed, optimal = tp.thesis_example_embedding(p), tp.optimal_embedding(p)
    return {
        "E_printed": printed,
        "E_min_trace": optimal,
        "loss_printed": np.asarray(tp.embedding_loss(printed, p)),
        "loss_optimal": np.asarray(tp.embedding_loss(optimal, p)),
        **_params(p),
    }


@verifier("topic.thm2.1.1")
def _thm211_check(a) -> tuple[bool, str]:
    """The printed example E = c3 I (rebuilt) has a larger embedding loss than the stored min-trace embedding
    (both losses recomputed)."""
    p = _model(a)
    printed = tp.thesis_example_embedding(p)
    same = np.allclose(printed, np.asarray(a["E_printed"], float), rtol=0, atol=1e-12)
    lp, lo = (
        float(tp.embedding_loss(printed, p)),
        float(tp.embedding_loss(np.asarray(a["E_min_trace"], float), p)),
    )
    return same and lp > lo + 1e-12, f"loss of E = c3 I {lp:.6g} > loss of the min-trace embedding {lo:.6g}"


@register("topic.thm2.1.2", "admissible masking rates with c1 > 1 (the printed range c1 in (0, 1) is false)")
def c1_out_of_range() -> dict[str, np.ndarray]:
    p = TopicModel(2, 2, 1, 0.15, 0.1, 0.85)
    W = tp.optimal_value_matrix(p)
    return {
        "c1": np.asarray(float(tp.constants(p).c1)),
        "W_closed_form": W,
        "loss_closed_form": np.asarray(tp.population_loss(W, p)),
        "loss_minimum": np.asarray(tp.minimum_loss(p)),
        **_params(p),
    }


@register(
    "topic.lemma2.1.1",
    "tau = T: a minimiser outside the block-sum family, and the printed W^V* is not min-norm",
)
def tau_equals_T() -> dict[str, np.ndarray]:
    p = TopicModel(3, 2, 3)
    W_pinv = tp.pinv_value_matrix(p)
    W_printed = tp.optimal_value_matrix(p, require_sparse=False)
    report = tp._block_conditions(W_pinv, p, tp.constants(p).c1, 1e-9, require_sparse=False)
    return {
        "W_min_norm": W_pinv,
        "W_printed": W_printed,
        "loss_min_norm": np.asarray(tp.population_loss(W_pinv, p)),
        "loss_printed": np.asarray(tp.population_loss(W_printed, p)),
        "block_condition_violation": np.asarray(report.max_violation),
        **_params(p),
    }


@verifier("topic.lemma2.1.1")
def _lemma211_check(a) -> tuple[bool, str]:
    """tau = T: the min-norm W^V (stored) reaches the same population loss as the printed W^V* but lies outside the
    block-sum family, and the printed W^V* has the larger Frobenius norm."""
    p = _model(a)
    Wm, Wp = np.asarray(a["W_min_norm"], float), np.asarray(a["W_printed"], float)
    lm, lp = float(tp.population_loss(Wm, p)), float(tp.population_loss(Wp, p))
    viol = tp._block_conditions(Wm, p, tp.constants(p).c1, 1e-9, require_sparse=False).max_violation
    nm, npr = np.linalg.norm(Wm), np.linalg.norm(Wp)
    ok = p.tau == p.T and abs(lm - lp) <= 1e-9 * max(1.0, abs(lp)) and viol > 1e-9 and npr > nm + 1e-9
    return ok, (
        f"losses {lm:.10g} (min-norm) and {lp:.10g} (printed); block-condition violation {viol:.3g}; "
        f"|W|_F {nm:.4g} (min-norm) < {npr:.4g} (printed)"
    )


@register(
    "topic.remark2.1.8", "the per-row Hessian 2 Sigma_yy of the uniform-attention loss has rank T, not 1"
)
def hessian_rank() -> dict[str, np.ndarray]:
    p = TopicModel(4, 3, 2)
    Syy, _ = tp.second_moments(p)
    eig = np.linalg.eigvalsh(2 * Syy)
    return {
        "hessian_per_row": 2 * Syy,
        "eigenvalues": eig,
        "rank": np.asarray(int((eig > 1e-12).sum())),
        **_params(p),
    }


@verifier("topic.remark2.1.8")
def _remark218_check(a) -> tuple[bool, str]:
    """The per-row Hessian 2 Sigma_yy (recomputed) has rank T > 1 (eigenvalues above 1e-12)."""
    p = _model(a)
    Syy, _ = tp.second_moments(p)
    eig = np.linalg.eigvalsh(2 * np.asarray(Syy, float))
    rank = int((eig > 1e-12).sum())
    same = np.allclose(
        2 * np.asarray(Syy, float), np.asarray(a["hessian_per_row"], float), rtol=0, atol=1e-12
    )
    return (
        same and rank > 1,
        f"rank {rank} (T = {p.T}), smallest nonzero eigenvalue {eig[eig > 1e-12].min():.4g}",
    )


@register(
    "topic.table2.1",
    "Table 2.1 rows whose same-word attention is below same-topic-different-word attention by > 2 printed SDs",
)
def table_2_1_rows() -> dict[str, np.ndarray]:
    names = list(TABLE_2_1)
    values = np.array([TABLE_2_1[n] for n in names])
    sds = np.array([[np.nan if x is None else x for x in TABLE_2_1_SD[n]] for n in names])
    z = np.array(
        [separation(TABLE_2_1[n][0], TABLE_2_1_SD[n][0], TABLE_2_1[n][1], TABLE_2_1_SD[n][1]) for n in names]
    )
    return {
        "rows": np.array(names),
        "attention_same_word_same_topic_diff_topic": values,
        "std_same_word_same_topic_diff_topic": sds,
        "same_word_minus_same_topic_in_sds": z,
    }


@verifier("topic.table2.1")
def _table21_check(a) -> tuple[bool, str]:
    """In some row of the printed table, same-word attention lies more than 2 combined printed SDs below
    same-topic-different-word attention (recomputed from the stored means and SDs)."""
    m, sd = (
        np.asarray(a["attention_same_word_same_topic_diff_topic"], float),
        np.asarray(a["std_same_word_same_topic_diff_topic"], float),
    )
    z = (m[:, 0] - m[:, 1]) / np.hypot(sd[:, 0], sd[:, 1])
    rows = [str(r) for r, zz in zip(a["rows"], z, strict=True) if zz < -2]
    return bool(rows), f"rows below by > 2 SDs: {', '.join(rows) or 'none'} (z = {np.round(z, 2).tolist()})"


@register(
    "topic.def.softmax",
    "the softmax printed under (2.5) normalises each key's weights over the queries: columns do not sum to 1",
)
def row_normalised_softmax() -> dict[str, np.ndarray]:
    from fractions import Fraction

    from theorylab.attention.topic.stage2 import attended_frequencies

    p = TopicModel(4, 3, 2, Fraction(3, 20), Fraction(1, 10), Fraction(1, 10))
    alpha, beta = Fraction(2), Fraction(5)
    printed = attended_frequencies(p, alpha, beta, normalise="queries")
    corrected = attended_frequencies(p, alpha, beta, normalise="keys")
    return {
        "attended_printed": printed.astype(float),
        "attended_corrected": corrected.astype(float),
        "column_sums_printed": printed.sum(axis=0).astype(float),
        "column_sums_corrected": corrected.sum(axis=0).astype(float),
        "alpha": np.asarray(float(alpha)),
        "beta": np.asarray(float(beta)),
        **_params(p),
    }


@verifier("topic.def.softmax")
def _softmax_check(a) -> tuple[bool, str]:
    """The softmax as printed (normalised over the queries, recomputed exactly) gives attention columns that do not
    sum to 1; normalised over the keys they do."""
    from fractions import Fraction

    from theorylab.attention.topic.stage2 import attended_frequencies

    p = _model(a, exact=True)
    alpha, beta = (Fraction(float(a[k])).limit_denominator(1000) for k in ("alpha", "beta"))
    printed = attended_frequencies(p, alpha, beta, normalise="queries").sum(axis=0)
    corrected = attended_frequencies(p, alpha, beta, normalise="keys").sum(axis=0)
    off = max(abs(float(x) - 1) for x in printed)
    ok = off > 0 and all(x == 1 for x in corrected)
    return (
        ok,
        f"column sums printed: max |sum - 1| = {off:.4g}; corrected: all exactly 1: {all(x == 1 for x in corrected)}",
    )
