"""Counterexample generators of the Dyck family (``theorylab counterexample <id> --out f.npz``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from theorylab.attention.dyck.balance import (
    DyckSolution,
    balance_violation,
    construct_solution,
    pumping_counterexample,
    random_balanced_attention,
)
from theorylab.attention.dyck.bounds import lemma24_gap, lemma24_radius_printed, lemma41_printed
from theorylab.counterexamples import register, verifier
from theorylab.languages.dyck import Dyck

CONVENTIONS = (
    "Dyck(k, depth): k bracket types, tokens 0..2k-1 (open t = 2 t, close t = 2 t + 1 by the language's own "
    "encoding), prefixes are int rows; M is the attention matrix, E the embeddings (one row per token), q the "
    "ending probability; model outputs are next-token distributions (last axis = tokens)"
)


def _model_arrays(sol: DyckSolution) -> dict[str, np.ndarray]:
    w = sol.weights
    return {
        "k": np.array(w.k),
        "depth": np.array(w.depth),
        "q": np.array(float(sol.q)),
        "E": w.E,
        "M": w.M,
        "W_V": w.W_V,
        "value_slots": sol.slots,
        "decoder_track": sol.track,
        "value_offsets": sol.offsets,
        "balance_violation": np.array(balance_violation(w)),
    }


def unbalanced_dyck_model(seed: int = 0, delta: float = 0.01) -> DyckSolution:
    """The Thm 1 construction ($k=2$, $D=4$) on a balanced attention perturbed by ``delta`` (dyadic)."""
    rng = np.random.default_rng(seed)
    M = random_balanced_attention(2, 4, rng, scale=1.0)
    M = M + delta * np.round(rng.normal(size=M.shape) * 256) / 256
    return construct_solution(2, 4, M, allow_unbalanced=True)


@register(
    "dyck.thm1_balance_necessity",
    "k=2: an unbalanced model and two prefixes it confuses after beta inserted pairs; k=1 (keys k1_*): an "
    "unbalanced model exact at every length (necessity needs k>=2)",
)
def thm1_balance_necessity() -> dict[str, np.ndarray]:
    k1 = thm1_necessity_k1()
    return {**thm1_pumping(), **{f"k1_{key}": value for key, value in k1.items()}}


def thm1_pumping() -> dict[str, np.ndarray]:
    sol = unbalanced_dyck_model()
    ce = pumping_counterexample(sol)
    fail, other = ce.pumped(ce.beta)
    before = ce.pumped(ce.beta - 1)
    lang = sol.language
    return {
        **_model_arrays(sol),
        "prefix_fail": ce.prefix_fail,
        "prefix_other": ce.prefix_other,
        "insert_at": np.array(ce.insert_at),
        "pair": np.array(ce.pair),
        "beta": np.array(ce.beta),
        "pumped_fail": fail,
        "pumped_other": other,
        "model_output_fail": sol.predict(fail)[-1],
        "model_output_other": sol.predict(other)[-1],
        "model_output_fail_before": sol.predict(before[0])[-1],
        "target_fail": lang.next_token_distribution(fail),
        "target_other": lang.next_token_distribution(other),
    }


def thm1_necessity_k1() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    M = np.round(rng.normal(size=(7, 7)) * 64) / 64
    sol = construct_solution(1, 3, M, allow_unbalanced=True)
    lang = Dyck(1, 3)
    prefixes = lang.all_prefixes(14)
    err = np.abs(sol.predict(prefixes) - lang.next_token_distributions(prefixes)).max()
    return {**_model_arrays(sol), "checked_length": np.array(14), "max_error_all_prefixes": np.array(err)}


def _rebuilt(a, prefix: str = "") -> DyckSolution:
    """The Thm 1 construction rebuilt from the file's attention matrix (unbalanced allowed); its embeddings must
    be the stored ones."""
    g = lambda key: np.asarray(a[prefix + key])
    sol = construct_solution(
        int(g("k")), int(g("depth")), g("M").astype(float), q=float(g("q")), allow_unbalanced=True
    )
    if not np.array_equal(sol.weights.E, g("E")):
        raise ValueError(
            "the file's embeddings E are not those of the construction on its attention matrix M"
        )
    return sol


@verifier("dyck.thm1_balance_necessity")
def _necessity_check(a) -> tuple[bool, str]:
    """k = 2: the unbalanced model errs on the pumped prefix (recomputed); k = 1: an unbalanced model is exact on
    every prefix up to the stored length (the printed necessity fails for one bracket type)."""
    sol = _rebuilt(a)
    lang = sol.language
    fail = np.asarray(a["pumped_fail"])
    err2 = float(np.abs(sol.predict(fail)[-1] - lang.next_token_distribution(fail)).max())
    sol1 = _rebuilt(a, "k1_")
    n = int(a["k1_checked_length"])
    lang1 = sol1.language
    prefixes = lang1.all_prefixes(n)
    err1 = float(np.abs(sol1.predict(prefixes) - lang1.next_token_distributions(prefixes)).max())
    v2, v1 = balance_violation(sol.weights), balance_violation(sol1.weights)
    ok = v2 > 0 and err2 > 1e-6 and v1 > 0 and err1 <= 1e-12
    return ok, (
        f"k = 2: balance violation {v2:.3g}, next-token error {err2:.3g} on the pumped prefix "
        f"(beta = {int(a['beta'])}); k = 1: balance violation {v1:.3g}, max error {err1:.1e} on all "
        f"{len(prefixes)} prefixes of length <= {n}"
    )


@register(
    "dyck.thm1_balance_sufficiency",
    "prefixes where the sufficiency proof's decoder (no residual subtraction) errs",
)
def thm1_decoder(length: int = 10, keep: int = 32) -> dict[str, np.ndarray]:
    """All prefixes up to ``length`` are decoded; the first ``keep`` failing ones are stored."""
    rng = np.random.default_rng(2)
    sol = construct_solution(2, 4, random_balanced_attention(2, 4, rng, scale=1.0))
    printed = replace(sol, subtract_residual=False)
    lang = sol.language
    prefixes = lang.all_prefixes(length)
    truth = lang.next_token_distributions(prefixes)
    wrong = np.any(np.abs(printed.predict(prefixes) - truth) > 0, axis=(1, 2))
    fixed_err = np.abs(sol.predict(prefixes) - truth).max()
    return {
        **_model_arrays(sol),
        # a sample is enough to refute, and `theorylab verify` re-decodes each stored prefix (~20 ms each)
        "failing_prefixes": prefixes[wrong][:keep],
        "n_failing": np.array(int(wrong.sum())),
        "n_prefixes": np.array(len(prefixes)),
        "failure_rate": np.array(wrong.mean()),
        "fixed_decoder_max_error": np.array(fixed_err),
    }


@register("dyck.lemmas_mlp", "Lemma 41 as printed returns i + n(n+1)/2 instead of i")
def lemma41() -> dict[str, np.ndarray]:
    x = np.array([0.0, 0.0, 2.0, 0.0, 0.0])
    return {
        "x": x,
        "M": np.array(1.0),
        "printed_value": np.array(lemma41_printed(x, 1.0)),
        "expected": np.array(3),
    }


@verifier("dyck.lemmas_mlp")
def _lemma41_check(a) -> tuple[bool, str]:
    """Lemma 41 as printed (recomputed) does not return the 1-based index of the entry >= M; the corrected one
    does."""
    from theorylab.attention.dyck.bounds import lemma41_corrected

    x, M, want = np.asarray(a["x"], float), float(a["M"]), int(a["expected"])
    printed, corrected = lemma41_printed(x, M), lemma41_corrected(x, M)
    return (
        printed != want and corrected == want,
        f"x = {x.tolist()}: printed {printed:g}, corrected {corrected:g}, index {want}",
    )


@register("dyck.thm2_approx_balance", "Lemma 24 with the printed radius 4 r0/eps + 1 fails for small r0")
def lemma24_printed() -> dict[str, np.ndarray]:
    a, b = np.array([0.01, 0.0]), np.array([-0.01, 0.0])
    eps = 0.1
    R = lemma24_radius_printed(eps, 0.01)
    r = np.array([0.0, R * 0.01])
    return {
        "a": a,
        "b": b,
        "r": r,
        "eps": np.array(eps),
        "R_printed": np.array(R),
        "gap": np.array(lemma24_gap(a, b, r)),
    }


@verifier("dyck.thm2_approx_balance")
def _lemma24_check(a) -> tuple[bool, str]:
    """r lies on the printed radius 4 r0/eps + 1 (r0 = max(|a|, |b|)) and the normalised gap exceeds eps."""
    from theorylab.attention.dyck.bounds import lemma24_radius_printed

    va, vb, r, eps = (
        np.asarray(a["a"], float),
        np.asarray(a["b"], float),
        np.asarray(a["r"], float),
        float(a["eps"]),
    )
    r0 = max(np.linalg.norm(va), np.linalg.norm(vb))
    R = lemma24_radius_printed(eps, r0)
    on_radius = bool(np.isclose(np.linalg.norm(r), R * r0, rtol=1e-12))
    gap = lemma24_gap(va, vb, r)
    return (
        on_radius and gap > eps,
        f"|r| = {np.linalg.norm(r):.4g} = R_printed r0 ({R:.4g} x {r0:g}): gap {gap:.4f} > eps = {eps:g}",
    )
