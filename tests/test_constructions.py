"""Library tests of the theory Transformer and the shortcut constructions: API, validation errors, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.algebra import permutation_group
from theorylab.algebra.polycyclic import NotSolvableGroup, polycyclic_series
from theorylab.automata import Semiautomaton, zoo
from theorylab.automata.constructions import (
    Cascade,
    CompiledTransformer,
    NotSolvableError,
    compile_cascade,
    compile_constant_depth,
    compile_gridworld,
    compile_log_depth,
    memory_unit,
    mod_counter,
)
from theorylab.automata.constructions.gadgets import interp_mlp, interp_mlp_1d, threshold_mlp
from theorylab.automata.constructions.verify import adversarial_words, all_words, verify_simulation
from theorylab.nn.theory import MLP, Block, Head, TheoryTransformer

BUILDERS = {
    "log": lambda aut, T, q0=0: compile_log_depth(aut, T, q0),
    "const": lambda aut, T, q0=0: compile_constant_depth(aut, T, q0),
}


# ------------------------------------------------------------------------------------------ theory Transformer
def test_head_and_block_validation():
    with pytest.raises(ValueError, match="same shape"):
        Head(np.zeros((3, 2)), np.zeros((3, 1)), np.zeros((3, 1)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="NaN"):
        Head(np.full((2, 1), np.nan), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="W_C"):
        Head(np.zeros((3, 1)), np.zeros((3, 1)), np.zeros((3, 1)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="0/1"):
        Block((), MLP((np.eye(2), np.eye(2)), (np.zeros(2), np.zeros(2))), attn_residual=[0.5, 1])
    with pytest.raises(ValueError, match="model dimension"):
        Block(())
    with pytest.raises(ValueError, match="at least one"):
        TheoryTransformer(())
    with pytest.raises(ValueError, match="biases"):
        MLP((np.eye(2),), ())


def test_forward_shapes_and_errors():
    net = TheoryTransformer((Block((Head(np.eye(3), np.eye(3), np.eye(3), np.eye(3)),)),))
    X = np.random.default_rng(0).normal(size=(4, 3))
    assert net.forward(X).shape == (4, 3) and net.forward(X[None]).shape == (1, 4, 3)
    with pytest.raises(ValueError, match="shape"):
        net.forward(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="NaN"):
        net.forward(np.full((4, 3), np.nan))
    out, att = net.forward(X, return_attention=True)
    assert len(att) == 1 and att[0][0].shape == (1, 4, 4)
    assert net.depth == 1 and net.n_heads == 1 and net.width == 3 and net.max_weight == 1.0


def test_chunked_forward_matches_unchunked():
    c = compile_log_depth(zoo.random(3, 2, 0), 16, 0)
    X = c.embed(zoo.random(3, 2, 0).sample(np.random.default_rng(1), 9, 16))
    assert np.array_equal(c.net.forward(X, max_chunk_elems=1), c.net.forward(X))


# ------------------------------------------------------------------------------------------ input validation
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_bad_inputs(kind):
    build = BUILDERS[kind]
    aut = zoo.parity()
    with pytest.raises(TypeError, match="Semiautomaton"):
        build(np.array([[0, 1], [1, 0]]), 4)
    with pytest.raises(ValueError, match="T must be >= 1"):
        build(aut, 0)
    with pytest.raises(TypeError, match="T must be an int"):
        build(aut, 4.0)
    with pytest.raises(ValueError, match="out of range"):
        build(aut, 4, 2)
    with pytest.raises(TypeError, match="q0 must be an int"):
        build(aut, 4, 0.5)
    c = build(aut, 4)
    with pytest.raises(ValueError, match="outside range"):
        c(np.array([[0, 2]]))
    with pytest.raises(ValueError, match="compiled for T = 4"):
        c(np.zeros((1, 5), dtype=int))
    with pytest.raises(TypeError, match="integer"):
        c(np.zeros((1, 3)))


def test_gridworld_bad_inputs():
    with pytest.raises(ValueError, match="n"):
        compile_gridworld(0, 4)
    with pytest.raises(ValueError, match="out of range"):
        compile_gridworld(3, 4, q0=3)
    with pytest.raises(ValueError, match="T must be >= 1"):
        compile_gridworld(3, 0)


def test_gadget_bad_inputs():
    with pytest.raises(ValueError, match="distinct"):
        interp_mlp_1d([0.0, 0.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="distinct"):
        interp_mlp(np.zeros((2, 2)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="delta"):
        threshold_mlp(0.0)
    with pytest.raises(ValueError):
        mod_counter(3, 4, q0=3)
    with pytest.raises(ValueError):
        memory_unit(2, 4, q0=5)


def test_not_solvable_error_is_algebra_error():
    from theorylab.algebra import NotSolvableError as AlgebraError

    with pytest.raises(AlgebraError):
        compile_constant_depth(zoo.alternating(5, regular=False), 4)
    assert issubclass(NotSolvableError, ValueError)


# ------------------------------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_one_dimensional_words_and_prefixes(kind):
    aut = zoo.dihedral(3)
    c = BUILDERS[kind](aut, 12, 1)
    w = aut.sample(np.random.default_rng(0), 1, 12)[0]
    full = c(w)
    assert full.shape == (1, 12)
    assert np.array_equal(full, aut.run(w, 1))
    assert np.array_equal(c(w[:5]), full[:, :5])  # causality: a prefix gives the same outputs


@pytest.mark.parametrize("kind", ["log", "const", "grid"])
def test_to_torch_matches_numpy(kind):
    aut = zoo.gridworld(4)
    c = compile_gridworld(4, 10) if kind == "grid" else BUILDERS[kind](aut, 10)
    w = aut.sample(np.random.default_rng(0), 5, 10)
    m = c.to_torch()
    assert torch.equal(m(torch.as_tensor(w)), torch.as_tensor(c(w)))
    assert np.allclose(m.hidden(torch.as_tensor(w)).detach().numpy(), c.hidden(w), atol=1e-9)


def test_single_state_and_single_symbol():
    one = Semiautomaton(np.zeros((2, 1), dtype=int))
    for build in BUILDERS.values():
        assert (build(one, 5)(np.array([[0, 1, 1, 0, 1]])) == 0).all()
    assert (compile_constant_depth(zoo.cyclic(1), 3)(np.zeros((1, 3), dtype=int)) == 0).all()
    assert (compile_gridworld(1, 4)(np.array([[0, 1, 1, 0]])) == 0).all()
    assert (mod_counter(1, 3)(np.zeros((1, 3), dtype=int)) == 0).all()
    assert (memory_unit(1, 3)(np.array([[1, 0, 1]])) == 0).all()


def test_decode_rejects_off_grid_values():
    c = mod_counter(3, 4)
    Y = c.hidden(np.array([[1, 1, 1, 1]]))
    Y[0, 2, 0] += 0.4
    assert c.decode(Y)[0, 1] == -1


def test_stats_and_info():
    c = compile_constant_depth(zoo.symmetric(4), 16)
    s = c.stats()
    assert s["depth"] == c.depth == 5 and s["d"] == c.d  # S4 > A4 > V4: two sequential levels, V4 in parallel
    assert [comp["n_counters"] for comp in c.info["components"]] == [4]
    assert isinstance(c, CompiledTransformer)


def test_polycyclic_series():
    S4 = permutation_group([[1, 0, 2, 3], [1, 2, 3, 0]])
    pcs = polycyclic_series(S4)
    assert S4.order == 24 and sorted(p.p for p in pcs) == [2, 2, 2, 3]
    assert int(np.prod([p.p for p in pcs])) == 24
    A5 = permutation_group([[1, 2, 0, 3, 4], [1, 3, 2, 0, 4], [1, 4, 2, 3, 0]])
    with pytest.raises(NotSolvableGroup, match="order 60"):
        polycyclic_series(A5)
    with pytest.raises(ValueError, match="not a permutation"):
        permutation_group([[0, 0, 1]])


def test_hand_cascade_previous_state_convention():
    """Level 1: a flip-flop (symbols: 0 keep, 1 set 0, 2 set 1). Level 2: parity of the number of steps at which the
    level-1 state BEFORE the step was 1. Separates the t-1 (Def 6) and t conventions."""
    ff = np.array([[0, 1], [0, 0], [1, 1]])
    par = np.array([[0, 1], [1, 0]])

    def dep(i, s, a):
        return a if i == 0 else int(s[0] == 1)

    cas = Cascade.from_functions((ff, par), (1, 2), dep, (0, 0), lambda s: 2 * s[0] + s[1], 3)
    delta = np.zeros((3, 4), dtype=int)
    for q in range(4):
        for a in range(3):
            delta[a, q] = cas.decode(cas.step((q // 2, q % 2), a))
    aut = Semiautomaton(delta)
    words = all_words(3, 6)
    c = compile_cascade(cas, 6)
    assert verify_simulation(c, aut, words, 0).ok
    assert np.array_equal(np.array([cas.simulate(w)[0] for w in words[:50]]), aut.run(words[:50], 0))
    bad = compile_cascade(cas, 6, printed_lemma21=True)
    assert not verify_simulation(bad, aut, words, 0).ok


def test_adversarial_words_shape():
    w = adversarial_words(3, 5)
    assert w.shape == (3 + 2 + 4, 5) and w.max() == 2
    assert all_words(2, 3).shape == (8, 3) and all_words(4, 0).shape == (1, 0)


def test_structured_forward_equals_the_dense_one_and_its_memo_is_clearable():
    """The sliced / batch-shared / per-distinct-input forward of TheoryTransformer equals the dense definition
    (every head on the full width, every MLP on every row), and the shared attention weights it keeps are
    emptied by clear_caches (a benchmark never times a hit)."""
    from theorylab.caching import clear_caches
    from theorylab.nn import theory
    from theorylab.nn.theory import causal_softmax

    def dense(net, X):
        for b in net.blocks:
            out = X * b.attn_residual
            for h in b.heads:
                A = causal_softmax((X @ h.W_Q) @ np.swapaxes(X @ h.W_K, -1, -2))
                out = out + (A @ (X @ h.W_V)) @ h.W_C
            if b.mlp is not None:
                y = X_m = out
                for i, (w, c) in enumerate(zip(b.mlp.weights, b.mlp.biases, strict=True)):
                    y = y @ w + c
                    if i < len(b.mlp.weights) - 1:
                        y = np.maximum(y, 0.0)
                out = X_m * b.mlp_residual + y
            X = out
        return X

    rng = np.random.default_rng(31)
    clear_caches()
    for aut, build, T in (
        (zoo.dihedral(4), compile_log_depth, 32),
        (zoo.gridworld(4), compile_constant_depth, 24),
    ):
        c = build(aut, T, 0)
        X = c.embed(aut.sample(rng, 8, T))
        got, want = c.net.forward(X), dense(c.net, X)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-9 * np.abs(want).max())
        assert np.array_equal(c.net.forward(X), got)  # a second forward reads the memo: the same numbers
    assert len(theory._SHARED_WEIGHTS) > 0  # positional heads were shared across the batch
    clear_caches()
    assert len(theory._SHARED_WEIGHTS) == 0


def test_mlp_on_distinct_rows_equals_every_row():
    """An MLP reading one or several coordinates with wide hidden layers is evaluated once per distinct row
    (rows compared by their bytes, -0.0 apart from 0.0) and gathered back: the same values as evaluating every
    row, for few distinct rows (the shortcut taken) and for all-distinct rows (not taken)."""
    from theorylab.nn.theory import MLP

    rng = np.random.default_rng(7)
    d, hidden = 6, 800
    for read in ([2], [1, 4], [0, 3, 5]):
        W1 = np.zeros((d, hidden))
        W1[read] = rng.standard_normal((len(read), hidden))
        W2 = rng.standard_normal((hidden, d)) * (rng.random(d) < 0.5)
        mlp = MLP((W1, W2), (rng.standard_normal(hidden), np.zeros(d)))
        values = np.array([0.0, -0.0, 1.5, -2.25, 3.0])
        few = values[rng.integers(0, len(values), (12, 30, d))]
        for X in (few, rng.standard_normal((12, 30, d))):
            want = np.maximum(X @ W1 + mlp.biases[0], 0.0) @ W2
            got = mlp(X)
            assert got.shape == want.shape
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    # no hidden layer (an affine map): no hidden width to weigh the inputs by, every row evaluated
    W = np.zeros((d, d))
    W[1] = rng.standard_normal(d)
    affine = MLP((W,), (np.zeros(d),))
    X = np.array([0.0, 1.5])[rng.integers(0, 2, (200, 400, d))]  # 480,000 inputs, two distinct rows
    assert np.array_equal(affine(X)[..., affine._written], (X @ W)[..., affine._written])
