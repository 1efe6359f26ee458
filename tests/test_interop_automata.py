"""Differential tests against the HF automata dataset script's conventions (synthseq/automata), each reference
below written from the convention's description (permutation matrices acting on a state vector, a Hamilton
product ``state * action``, cumulative sums), independently of theorylab's transition tables."""

import itertools

import numpy as np
import pytest

from theorylab.automata import hf, zoo

SEED = 20240530


def _hamilton(p, q):
    a1, b1, c1, d1 = p
    a2, b2, c2, d2 = q
    return (
        a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2,
        a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
        a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2,
        a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2,
    )


_UNITS = [tuple(int(i == k) for k in range(4)) for i in range(4)]
_Q8 = _UNITS + [tuple(-x for x in u) for u in _UNITS]  # 1, i, j, k, -1, -i, -j, -k


def ref_quaternion(word):
    """The script's Q8: state <- state * action, actions 1, i, j, k."""
    s, out = _Q8[0], []
    for a in word:
        s = _hamilton(s, _UNITS[a])
        out.append(_Q8.index(s))
    return out


def ref_permutation(word, actions, states):
    """The script's permutation tasks: state vector <- P_a @ state, ``P_a = eye(n)[idx_a]``; the label is the
    index of the state vector in ``states``."""
    n = len(actions[0])
    s, out = np.arange(n), []
    for a in word:
        s = np.eye(n, dtype=int)[list(actions[a])] @ s
        out.append(states.index(tuple(s)))
    return out


def _even(p):
    return sum(p[i] > p[j] for i in range(len(p)) for j in range(i + 1, len(p))) % 2 == 0


def _inverse(p):
    inv = [0] * len(p)
    for i, x in enumerate(p):
        inv[x] = i
    return tuple(inv)


def _symmetric_actions(n):
    return [tuple(range(n)), tuple(range(1, n)) + (0,), (1, 0) + tuple(range(2, n))]


def _alternating_actions(n):
    acts = [tuple(range(n))]
    for i in range(2, n):
        p = list(range(n))
        p[0], p[1], p[i] = 1, i, 0
        acts.append(tuple(p))
    return acts


def _cases():
    for n in (4, 5):
        states = list(itertools.permutations(range(n)))
        yield f"S{n}", hf.HFTask("symmetric", {"n": n}), _symmetric_actions(n), states
        yield (
            f"A{n}",
            hf.HFTask("alternating", {"n": n}),
            _alternating_actions(n),
            [p for p in states if _even(p)],
        )


def test_group_tasks_reproduce_the_scripts_labels_and_differ_from_def9():
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    q8 = hf.HFTask("quaternion")
    words = q8.sample_words(rng, 50, 16)
    assert np.array_equal(q8.labels(words), [ref_quaternion(w) for w in words])
    default = zoo.quaternion(("1", "i", "j", "k")).run(words)  # Def 9: sigma_t ... sigma_1
    assert 0.3 < np.mean(default != q8.labels(words)) < 0.9  # the conventions really differ on these words
    for name, task, actions, states in _cases():
        words = task.sample_words(rng, 40, 12)
        ref = [ref_permutation(w, actions, states) for w in words]
        assert np.array_equal(task.labels(words), ref), name
        left = hf.HFTask(task.dataset_type, task.config, side="left")
        assert np.mean(left.labels(words) != ref) > 0.3, name
        # HF(w) = inverse(Def 9 on the inverse generators)
        inv = zoo.group_semiautomaton([_inverse(a) for a in actions], side="left")
        via_inverse = [[states.index(_inverse(inv.state_labels[q])) for q in row] for row in inv.run(words)]
        assert via_inverse == ref, name


def test_default_side_is_the_documents_left_product():
    rng = np.random.default_rng(SEED + 1)
    aut = zoo.symmetric(4)
    gens = aut.symbol_labels
    words = aut.sample(rng, 20, 9)
    for w, row in zip(words, aut.run(words), strict=True):
        g = tuple(range(4))
        for a in w:  # sigma_t ... sigma_1: the new symbol composes on the left
            g = tuple(gens[a][x] for x in g)
        assert aut.state_labels[row[-1]] == g
    assert zoo.symmetric(4, side="left") == aut and zoo.symmetric(4, side="right") != aut
    with pytest.raises(ValueError, match="side"):
        zoo.symmetric(4, side="middle")
    with pytest.raises(ValueError, match="regular=True"):
        zoo.alternating(5, regular=False, side="right")


def test_the_switch_holds_through_a_compiled_transformer():
    from theorylab.automata.constructions import compile_log_depth

    rng = np.random.default_rng(SEED + 2)
    q8 = hf.HFTask("quaternion")
    words = q8.sample_words(rng, 16, 8)
    c = compile_log_depth(q8.automaton, 8)
    assert np.array_equal(c.forward(words), [ref_quaternion(w) for w in words])
    left = compile_log_depth(zoo.quaternion(("1", "i", "j", "k")), 8)
    assert not np.array_equal(left.forward(words), c.forward(words))
    s4 = hf.HFTask("symmetric", {"n": 4})
    words = s4.sample_words(rng, 8, 8)
    states = list(itertools.permutations(range(4)))
    ref = [ref_permutation(w, _symmetric_actions(4), states) for w in words]
    assert np.array_equal(compile_log_depth(s4.automaton, 8).forward(words), ref)


def test_q8_right_product_is_the_inverse_of_def9_on_inverse_generators():
    rng = np.random.default_rng(SEED + 6)
    words = hf.HFTask("quaternion").sample_words(rng, 30, 12)
    inv = zoo.quaternion(("1", "-i", "-j", "-k"))  # Def 9 (left) on the inverses of 1, i, j, k
    conj = np.array([0, 4 + 1, 4 + 2, 4 + 3, 4, 1, 2, 3])  # g -> g^{-1} on 1, i, j, k, -1, -i, -j, -k
    assert np.array_equal(conj[inv.run(words)], [ref_quaternion(w) for w in words])


def test_small_tasks_match_their_descriptions():
    rng = np.random.default_rng(SEED + 3)
    cyc = hf.HFTask("cyclic", {"n": 5})
    w = cyc.sample_words(rng, 20, 15)
    assert cyc.vocab_size == 2 and np.array_equal(cyc.labels(w), np.cumsum(w, axis=1) % 5)
    dih = hf.HFTask("dihedral", {"n": 4})
    w = dih.sample_words(rng, 20, 15)
    toggle = np.cumsum(w == 0, axis=1) % 2
    pos = np.cumsum((w != 0) * (-1) ** toggle, axis=1) % 4
    assert np.array_equal(dih.labels(w), 4 * toggle + pos)
    assert np.array_equal(hf.HFTask("dihedral", {"n": 4, "label_type": "positions"}).labels(w), pos)
    ff = hf.HFTask("flipflop", {"n": 3})
    w = ff.sample_words(rng, 30, 20)
    last_write = np.maximum.accumulate(np.where(w > 0, np.arange(20), -1), axis=1)
    ref = np.where(last_write >= 0, np.take_along_axis(w, np.maximum(last_write, 0), axis=1), 0)
    assert np.array_equal(ff.labels(w), ref) and (ff.labels(w) == 0).any()  # the extra start state 0
    assert 0.4 < np.mean(w > 0) < 0.6
    grid = hf.HFTask("gridworld", {"n": 4, "label_type": "boundary"})
    w = grid.sample_words(rng, 10, 12)
    s = np.zeros(10, dtype=int)
    for t in range(12):
        s = np.clip(s + 2 * w[:, t] - 1, 0, 3)
        assert np.array_equal(grid.labels(w)[:, t], (s == 0) | (s == 3))


def test_abab_adder_and_permutation_reset():
    rng = np.random.default_rng(SEED + 4)
    ab = hf.HFTask("abab", {"prob_abab_pos_sample": 0.5, "prob1": 0.5})
    w = ab.sample_words(rng, 40, 9)
    y = ab.labels(w)
    pattern = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0])
    for x, row in zip(w, y, strict=True):
        ok = np.cumprod(x == pattern).astype(bool)  # still on 0101...: state (t mod 4), else absorbed in 4
        assert np.array_equal(row, np.where(ok, np.arange(9) % 4, 4))
    assert (y[:, -1] == 0).any() and (y[:, -1] == 4).any()
    add = hf.HFTask("adder", {"n_addends": 2})
    w = add.sample_words(rng, 30, 10)
    assert w.shape == (30, 11) and (w[:, -1] == 0).all()
    a, b = w & 1, w >> 1
    A, B = (a * 2 ** np.arange(11)).sum(1), (b * 2 ** np.arange(11)).sum(1)
    digits = ((A + B)[:, None] >> np.arange(11)) & 1  # the bits of the true sum
    carries = np.array(
        [
            [(int((x & ((2 << t) - 1)) + int(z & ((2 << t) - 1))) >> (t + 1)) for t in range(11)]
            for x, z in zip(A, B, strict=True)
        ]
    )
    assert np.array_equal(add.labels(w), digits + 2 * carries)
    gens = [[1, 0, 2], [2, 0, 1]]
    pr = hf.HFTask("permutation_reset", {"n": 3, "generators": gens})
    w = pr.sample_words(rng, 20, 16)
    perms = list(itertools.permutations(range(3)))
    assert (w[:, 0] < 6).all() and (w >= 6).any()
    for x, row in zip(w, pr.labels(w), strict=True):
        s = np.arange(3)
        for t, a in enumerate(x):
            s = np.array(perms[a]) if a < 6 else np.array(gens[a - 6])[s]
            assert perms[row[t]] == tuple(s)


def test_hf_records_round_trip_and_convention_check():
    rng = np.random.default_rng(SEED + 5)
    for kind, cfg in (("symmetric", {"n": 4}), ("flipflop", {"n": 2}), ("adder", {})):
        task = hf.HFTask(kind, cfg, random_length=True)
        batch = task.sample_batch(rng, 12, 10)
        assert not batch.mask.all() and batch.mask[:, 0].all()
        if kind == "adder":  # each sequence ends in its 0 pad column
            assert (batch.inputs[np.arange(12), batch.mask.sum(1) - 1] == 0).all() and batch.mask.sum(
                1
            ).min() >= 2
        records = hf.to_hf_records(task, batch)
        assert records[0]["input_ids"].dtype == np.int32
        assert records[0]["label_ids"].dtype == (np.float32 if kind == "flipflop" else np.int32)
        back = hf.from_hf_records(task, records, T=batch.shape[1])
        assert np.array_equal(back.mask, batch.mask)
        assert np.array_equal(back.inputs[back.mask], batch.inputs[batch.mask])
        assert np.array_equal(back.targets[back.mask], batch.targets[batch.mask])
    right = hf.HFTask("symmetric", {"n": 4})
    records = hf.to_hf_records(right, right.sample_batch(rng, 8, 10))
    with pytest.raises(ValueError, match="disagree"):
        hf.from_hf_records(hf.HFTask("symmetric", {"n": 4}, side="left"), records)


def test_bad_hf_input_is_named():
    with pytest.raises(ValueError, match="dataset_type"):
        hf.HFTask("dyck")
    with pytest.raises(ValueError, match="label_type"):
        hf.HFTask("parity", {"label_type": "boundary"})
    with pytest.raises(ValueError, match="permutations"):
        hf.permutation_reset(3, [[0, 0, 1]])
    with pytest.raises(TypeError):
        hf.to_hf_records("symmetric", None)
    with pytest.raises(ValueError, match="n_addends"):
        hf.adder(1)
