"""Concrete inputs on which the printed (uncorrected) shortcut constructions fail and the corrected ones succeed.

Each generator returns the instance (transition table, start state, word), the true state sequence, and the outputs
of the printed and corrected constructions (``-1`` = the network's output is not a valid state code).
"""

from __future__ import annotations

import numpy as np

from theorylab.automata import zoo
from theorylab.automata.constructions import (
    algorithm1,
    compile_constant_depth,
    compile_gridworld,
    compile_log_depth,
)
from theorylab.automata.constructions.gadgets import (
    circle_gap,
    interp_mlp,
    mod_counter,
    mod_counter_semiautomaton,
    threshold_mlp,
)
from theorylab.automata.semiautomaton import Semiautomaton
from theorylab.counterexamples import register, verifier

_SEED = 20231
CONVENTIONS = (
    "a semiautomaton's transition table delta has shape [symbols, states]: delta[a, q] is the state after reading "
    "symbol a in state q; states, symbols and positions are 0-based; q0 is the start state; a network output of -1 "
    "is not a valid state code; keys 'flag.name' group the instance of one printed variant"
)


def _word_check(a, prefix: str, printed, corrected) -> tuple[bool, str]:
    """The printed construction (``printed(aut, T, q0)``) mis-runs the stored word and the corrected one runs it:
    both networks are rebuilt and run, the true states recomputed from ``delta``."""
    g = lambda k: np.asarray(a[f"{prefix}{k}"])
    aut = Semiautomaton(g("delta"))
    word, q0 = g("word").astype(np.int64), int(g("q0"))
    want = aut.run(word[None], q0)[0]
    bad = printed(aut, len(word), q0)(word[None])[0]
    good = corrected(aut, len(word), q0)(word[None])[0]
    wrong = np.flatnonzero(bad != want)
    ok = wrong.size > 0 and np.array_equal(good, want)
    where = (
        f"first wrong position {int(wrong[0])}: {int(bad[wrong[0]])} vs {int(want[wrong[0]])}"
        if wrong.size
        else "none wrong"
    )
    return (
        ok,
        f"{prefix or 'printed'}: {wrong.size} of {len(word)} positions wrong ({where}); corrected run exact: {np.array_equal(good, want)}",
    )


def _all(*results: tuple[bool, str]) -> tuple[bool, str]:
    return all(ok for ok, _ in results), "; ".join(d for _, d in results)


def _first_failure(aut, q0, T, printed, corrected, n_try: int = 256):
    """The first of ``n_try`` seeded random words (then all-zero words) where ``printed`` fails and ``corrected``
    does not."""
    rng = np.random.default_rng(_SEED)
    words = aut.sample(rng, n_try, T)
    want = aut.run(words, q0)
    bad = (printed(words) != want).any(axis=1) & (corrected(words) == want).all(axis=1)
    if not bad.any():
        raise RuntimeError("no failing word found")  # pragma: no cover
    w = words[np.flatnonzero(bad)[0]]
    return {
        "delta": np.asarray(aut.delta),
        "q0": np.array(q0),
        "word": w,
        "expected": aut.run(w, q0)[0],
        "printed_output": printed(w)[0],
        "corrected_output": corrected(w)[0],
    }


def rotate_reset() -> Semiautomaton:
    """The catalog's 'flip-flop with a group': $Q=\\mathbb Z_3$, symbols (rotate, reset to 0, reset to 1, identity)."""
    return Semiautomaton(np.array([[1, 2, 0], [0, 0, 0], [1, 1, 1], [0, 1, 2]]), name="rotate-reset")


@register(
    "automata.thm10", "Thm 10 printed rotation sign / W_V / read-out: a word where each printed version fails"
)
def thm10_printed() -> dict[str, np.ndarray]:
    aut = Semiautomaton(np.array([[1, 2, 0], [0, 0, 1]]), name="thm10-example")
    T, q0 = 8, 1
    good = compile_log_depth(aut, T, q0)
    out = {}
    for flag in ("printed_rotation", "printed_value", "printed_readout"):
        bad = compile_log_depth(aut, T, q0, **{flag: True})
        ce = _first_failure(aut, q0, T, bad, good)
        out |= {f"{flag}.{k}": v for k, v in ce.items()}
    return out


@verifier("automata.thm10")
def _thm10_check(a) -> tuple[bool, str]:
    return _all(
        *(
            _word_check(
                a,
                f"{flag}.",
                lambda aut, T, q0, f=flag: compile_log_depth(aut, T, q0, **{f: True}),
                compile_log_depth,
            )
            for flag in ("printed_rotation", "printed_value", "printed_readout")
        )
    )


@register("automata.lemma15_mod_counter", "Lemma 15 printed MLP target T s mod n fails on parity")
def lemma15_printed() -> dict[str, np.ndarray]:
    aut, T = mod_counter_semiautomaton(2), 8
    ce = _first_failure(aut, 0, T, mod_counter(2, T, 0, printed_target=True), mod_counter(2, T, 0))
    return {f"printed_target.{k}": v for k, v in ce.items()}


@verifier("automata.lemma15_mod_counter")
def _lemma15_check(a) -> tuple[bool, str]:
    return _word_check(
        a,
        "printed_target.",
        lambda aut, T, q0: mod_counter(aut.n_states, T, q0, printed_target=True),
        lambda aut, T, q0: mod_counter(aut.n_states, T, q0),
    )


@register(
    "automata.lemma12_threshold", "Lemma 12 printed threshold at x = Delta with noise -Delta/4 gives 0.875"
)
def lemma12_printed() -> dict[str, np.ndarray]:
    delta = 1.0
    x = np.array([[0.75 * delta], [-0.75 * delta]])
    return {
        "delta": np.array(delta),
        "inputs": x[:, 0],
        "expected": np.array([1.0, 0.0]),
        "printed_output": threshold_mlp(delta, printed=True)(x)[:, 0],
        "corrected_output": threshold_mlp(delta)(x)[:, 0],
    }


@verifier("automata.lemma12_threshold")
def _lemma12_check(a) -> tuple[bool, str]:
    """The printed threshold MLP misses the 0/1 target on a noisy input; the corrected one hits it (to 1e-12)."""
    delta, x, want = (
        float(a["delta"]),
        np.asarray(a["inputs"], float)[:, None],
        np.asarray(a["expected"], float),
    )
    bad, good = threshold_mlp(delta, printed=True)(x)[:, 0], threshold_mlp(delta)(x)[:, 0]
    ok = np.max(np.abs(bad - want)) > 1e-6 and np.max(np.abs(good - want)) <= 1e-12
    return (
        ok,
        f"inputs {x[:, 0].tolist()}: printed {bad.tolist()}, corrected {good.tolist()}, target {want.tolist()}",
    )


@register("automata.lemma11_mlp_interp_nd", "Lemma 11 printed bias -d_in: the all-match unit is ReLU(0) = 0")
def lemma11_printed() -> dict[str, np.ndarray]:
    pts = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    vals = np.array([[1.0], [2.0], [3.0], [4.0]])
    return {
        "points": pts,
        "expected": vals[:, 0],
        "printed_output": interp_mlp(pts, vals, printed_bias=True)(pts)[:, 0],
        "corrected_output": interp_mlp(pts, vals)(pts)[:, 0],
    }


@verifier("automata.lemma11_mlp_interp_nd")
def _lemma11_check(a) -> tuple[bool, str]:
    """The printed-bias interpolation MLP misses a stored value; the corrected one reproduces all (to 1e-12)."""
    pts, want = np.asarray(a["points"], float), np.asarray(a["expected"], float)
    bad = interp_mlp(pts, want[:, None], printed_bias=True)(pts)[:, 0]
    good = interp_mlp(pts, want[:, None])(pts)[:, 0]
    ok = np.max(np.abs(bad - want)) > 1e-6 and np.max(np.abs(good - want)) <= 1e-12
    return ok, f"printed {bad.tolist()}, corrected {good.tolist()}, target {want.tolist()}"


@register(
    "automata.prop2_circular_embeddings",
    "Prop 2: |<p_t, p_t'>| = 1 at T=4; cos(2pi/T) > 1-2pi^2/T^2 at T=100",
)
def prop2_printed() -> dict[str, np.ndarray]:
    g4, g100 = circle_gap(4), circle_gap(100)
    return {
        "T": np.array([4, 100]),
        "max_abs_inner": np.array([g4["max_abs_inner"], g100["max_abs_inner"]]),
        "max_inner": np.array([g4["max_inner"], g100["max_inner"]]),
        "printed_bound": np.array([g4["printed_bound"], g100["printed_bound"]]),
        "corrected_bound": np.array([g4["corrected_bound"], g100["corrected_bound"]]),
    }


@register("automata.lemma20_permutation_reset", "Lemma 20 without a reset row: a word with no reset yet")
def lemma20_printed() -> dict[str, np.ndarray]:
    aut, T = rotate_reset(), 8
    bad = compile_constant_depth(aut, T, 0, printed_lemma20=True)
    good = compile_constant_depth(aut, T, 0)
    return _first_failure(aut, 0, T, bad, good)


@verifier("automata.lemma20_permutation_reset")
def _lemma20_check(a) -> tuple[bool, str]:
    return _word_check(
        a,
        "",
        lambda aut, T, q0: compile_constant_depth(aut, T, q0, printed_lemma20=True),
        compile_constant_depth,
    )


@register(
    "automata.lemma21_cascade", "Lemma 21 wiring with current (not previous) lower states: Grid4 via holonomy"
)
def lemma21_printed() -> dict[str, np.ndarray]:
    aut, T = zoo.gridworld(4), 8
    bad = compile_constant_depth(aut, T, 0, printed_lemma21=True)
    good = compile_constant_depth(aut, T, 0)
    return _first_failure(aut, 0, T, bad, good)


@verifier("automata.lemma21_cascade")
def _lemma21_check(a) -> tuple[bool, str]:
    return _word_check(
        a,
        "",
        lambda aut, T, q0: compile_constant_depth(aut, T, q0, printed_lemma21=True),
        compile_constant_depth,
    )


@register(
    "automata.thm12_gridworld", "Thm 12 printed unmatched-head rule and bottom-row recency on Grid5 (L, ⊥, R)"
)
def thm12_printed() -> dict[str, np.ndarray]:
    aut, T = zoo.gridworld(5, stay=True), 12
    good = compile_gridworld(5, T, 0, stay=True)
    out = {}
    for flag in ("printed_unmatched", "printed_bos"):
        ce = _first_failure(aut, 0, T, compile_gridworld(5, T, 0, stay=True, **{flag: True}), good)
        out |= {f"{flag}.{k}": v for k, v in ce.items()}
    return out


@verifier("automata.thm12_gridworld")
def _thm12_check(a) -> tuple[bool, str]:
    """Grid-world with a stay symbol (symbols L, stay, R); the number of states is read from ``delta``."""
    return _all(
        *(
            _word_check(
                a,
                f"{flag}.",
                lambda aut, T, q0, f=flag: compile_gridworld(aut.n_states, T, q0, stay=True, **{f: True}),
                lambda aut, T, q0: compile_gridworld(aut.n_states, T, q0, stay=True),
            )
            for flag in ("printed_unmatched", "printed_bos")
        )
    )


@register("automata.alg1_grid_boundary", "Algorithm 1 with S (not S+1) pads: t_uniq undefined")
def alg1_printed() -> dict[str, np.ndarray]:
    S = 2
    candidates = (
        np.array([1 if (code >> i) & 1 else -1 for i in range(length)])
        for length in range(1, 8)
        for code in range(2**length)
    )
    moves = next(m for m in candidates if (algorithm1(S, m, n_pads=S) == -1).any())
    aut = zoo.gridworld(S + 1)
    word = (moves + 1) // 2
    return {
        "S": np.array(S),
        "moves": moves,
        "expected": aut.run(word, 0)[0],
        "printed_output": algorithm1(S, moves, n_pads=S),
        "corrected_output": algorithm1(S, moves),
    }


@verifier("automata.alg1_grid_boundary")
def _alg1_check(a) -> tuple[bool, str]:
    """With S pads Algorithm 1 leaves a position undefined (-1); with S + 1 pads it returns the true states of the
    grid world on S + 1 cells (moves -1/+1 are symbols 0/1)."""
    S, moves = int(a["S"]), np.asarray(a["moves"], np.int64)
    want = zoo.gridworld(S + 1).run(((moves + 1) // 2)[None], 0)[0]
    bad, good = algorithm1(S, moves, n_pads=S), algorithm1(S, moves)
    ok = bool((bad == -1).any()) and np.array_equal(good, want)
    return (
        ok,
        f"moves {moves.tolist()}: S pads give {bad.tolist()}, S + 1 pads {good.tolist()}, true {want.tolist()}",
    )
