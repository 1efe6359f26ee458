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
from theorylab.counterexamples import register
from theorylab.languages.dyck import Dyck


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


@register(
    "dyck.thm1_balance_sufficiency",
    "prefixes where the sufficiency proof's decoder (no residual subtraction) errs",
)
def thm1_decoder() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    sol = construct_solution(2, 4, random_balanced_attention(2, 4, rng, scale=1.0))
    printed = replace(sol, subtract_residual=False)
    lang = sol.language
    prefixes = lang.all_prefixes(10)
    truth = lang.next_token_distributions(prefixes)
    wrong = np.any(np.abs(printed.predict(prefixes) - truth) > 0, axis=(1, 2))
    fixed_err = np.abs(sol.predict(prefixes) - truth).max()
    return {
        **_model_arrays(sol),
        "failing_prefixes": prefixes[wrong],
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
