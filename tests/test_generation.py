"""Bad input to theorylab.generation raises clear errors."""

from fractions import Fraction

import numpy as np
import pytest

import theorylab.generation as g
from theorylab.languages.dyck import DyckCompletion


def test_empty_vocabulary_and_bad_types():
    with pytest.raises(ValueError, match="vocabulary is empty"):
        g.UniformOracle(0)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        g.UniformOracle(2.0)
    with pytest.raises(TypeError, match="law must be callable"):
        g.TabularOracle(2, {(): (1, 0)})
    with pytest.raises(TypeError, match="accept must be callable"):
        g.ProcessVerifier({(0,)})


def test_oracle_laws_are_validated():
    with pytest.raises(ValueError, match="sums to"):
        g.TabularOracle(2, lambda u: (Fraction(1, 2), Fraction(1, 3))).probs(())
    with pytest.raises(ValueError, match="negative"):
        g.TabularOracle(2, lambda u: (Fraction(3, 2), Fraction(-1, 2))).probs(())
    with pytest.raises(ValueError, match="3 entries, expected 2"):
        g.TabularOracle(2, lambda u: (0.5, 0.25, 0.25)).probs(())
    with pytest.raises(ValueError, match="tokens outside"):
        g.UniformOracle(2).probs((0, 2))
    with pytest.raises(TypeError, match="sequence of token ids"):
        g.UniformOracle(2).probs("01")


def test_budgets_below_one_are_rejected():
    O, A = g.UniformOracle(2), {(0, 0)}
    V = g.perfect_verifier(A, 2, 2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="stride B must be >= 1"):
        g.backtracking_generation(O, 2, V, 1, 0, rng)
    with pytest.raises(ValueError, match="quota Q must be >= 0"):
        g.backtracking_law(O, 2, V, -1, 1)
    with pytest.raises(ValueError, match="exceeds the length"):
        g.backtracking_law(O, 2, V, 1, 3)
    with pytest.raises(ValueError, match="max_queries must be >= 1"):
        g.rejection_sampling(O, 2, A.__contains__, rng, max_queries=0)
    with pytest.raises(ValueError, match="length D must be >= 1"):
        g.tokenwise_rejection_sampling(O, 0, V, rng)
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        g.tokenwise_rejection_sampling(O, 2, V, 0)
    with pytest.raises(TypeError, match="quota Q must be an int"):
        g.backtracking_law(O, 2, V, 1.5, 1)


def test_non_prefix_closed_verifier_and_bad_languages():
    bad = g.ProcessVerifier(lambda s: s != (0,))
    with pytest.raises(ValueError, match="not prefix-closed"):
        g.check_prefix_closed(bad, 2, 2)
    with pytest.raises(ValueError, match="has length 3, expected D=2"):
        g.perfect_verifier({(0, 0, 0)}, 2, 2)
    with pytest.raises(ValueError, match="zero probability"):
        g.restricted_law(g.TabularOracle(2, lambda u: (1, 0)), 2, {(1, 1)})


def test_vgb_and_hardness_inputs():
    with pytest.raises(ValueError, match="horizon H must be >= 1"):
        g.VGB(g.UniformOracle(2), 0, lambda u: 1)
    with pytest.raises(ValueError, match="non-negative"):
        g.VGB(g.UniformOracle(2), 2, lambda u: -1)
    with pytest.raises(ValueError, match="no leaf"):
        g.VGB(g.UniformOracle(2), 2, lambda u: 1, reward=lambda y: 0)
    walk = g.VGB(g.UniformOracle(2), 2, lambda u: Fraction(1))
    with pytest.raises(ValueError, match="output must be"):
        walk.sample(np.random.default_rng(0), 10, output="last")
    with pytest.raises(ValueError, match="steps T must be"):
        walk.sample(np.random.default_rng(0), 0)
    with pytest.raises(ValueError, match="non-negative integers"):
        g.SubsetSumVerifier([1, -2], 3)
    with pytest.raises(ValueError, match="limited to D <= 5"):
        g.parity_optimal_cost(6)
    with pytest.raises(ValueError, match="each of the 2 candidate"):
        g.parity_order_cost([(0,), (0,)], (1,))
    with pytest.raises(ValueError, match="secret must have length"):
        g.ParitySecretOracle(())


def test_dyck_completion_inputs():
    with pytest.raises(ValueError, match="even length"):
        DyckCompletion(5)
    with pytest.raises(ValueError, match="open interval"):
        DyckCompletion(4, p=1.5)
    task = DyckCompletion(4)
    with pytest.raises(ValueError, match="not a completable prefix"):
        task.next_token_distribution((1,))
    with pytest.raises(ValueError, match="not a bracket id"):
        task.is_completable((0, 7))
    with pytest.raises(ValueError, match="not a balanced string"):
        task.closed_form((0, 0, 1, 1, 0, 1))
    with pytest.raises(ValueError, match="noise must lie"):
        task.oracle(2)
    assert task.is_completable((0, 2)) and not task.is_completable((0, 2, 3, 0))  # depth 1 > 0 left


def test_as_chain_needs_the_markov_module():
    walk = g.VGB(g.UniformOracle(2), 2, lambda u: Fraction(1))
    try:
        chain = walk.as_chain()
    except ImportError as err:  # until theorylab.markov.FiniteChain lands
        assert "FiniteChain" in str(err)
    else:
        assert chain is not None


def _state_by_scan(proc: DyckCompletion, prefix) -> tuple[bool, int, int]:
    """The token-by-token scan the cached states must agree with (stack at the first invalid token)."""
    stack: list[int] = []
    for t in prefix:
        if t % 2 == 0:
            if len(stack) == proc.D // 2:
                return False, len(stack), stack[-1]
            stack.append(t // 2)
        elif not stack or stack[-1] != t // 2:
            return False, len(stack), stack[-1] if stack else -1
        else:
            stack.pop()
    return True, len(stack), stack[-1] if stack else -1


@pytest.mark.parametrize("D", [2, 4, 6])
def test_dyck_completion_cached_states_equal_the_scan(D: int) -> None:
    import itertools

    proc = DyckCompletion(D)
    for n in range(D + 1):
        for w in itertools.product(range(4), repeat=n):
            want = _state_by_scan(proc, w)
            assert proc._state(w) == want == proc._state(list(w)), w
            state = proc._state(np.array(w, dtype=np.int64))  # numpy tokens take the uncached scan
            assert state == want and [type(x) for x in state] == [bool, int, int], (w, state)
    # a bad token is rejected wherever it stands before the first invalid one, and read past it
    for bad in ((4,), (0, -1), (True,), (0, np.int64(9))):
        with pytest.raises(ValueError, match="is not a bracket id in 0..3"):
            proc._state(bad)
    assert proc._state((1, 7)) == (False, 0, -1)  # the close fails first; the 7 after it is never read
    with pytest.raises(ValueError, match="longer than D"):
        proc._state((0, 1) * (D // 2 + 1))


def _law_by_formula(proc: DyckCompletion, prefix, exact: bool) -> tuple:
    """Remark 3.2.1 evaluated afresh for one prefix (what the cached laws must equal, value and type)."""
    _, d, top = _state_by_scan(proc, prefix)
    p, q = (Fraction(proc.p), Fraction(proc.q)) if exact else (float(proc.p), float(proc.q))
    one, zero = p * 0 + 1, p * 0
    law = [zero] * 4
    if d == 0:
        law[0], law[2] = p, one - p
    elif d == proc.D - len(prefix):
        law[2 * top + 1] = one
    else:
        law[0], law[2], law[2 * top + 1] = q * p, q * (one - p), one - q
    return tuple(law)


@pytest.mark.parametrize("p, q", [(Fraction(1, 5), Fraction(1, 2)), (0.3, 0.7), (0.5, Fraction(1, 3))])
def test_dyck_completion_cached_laws_equal_the_formula(p, q) -> None:
    import itertools

    proc = DyckCompletion(6, p, q)
    for noise in (0, Fraction(1, 10), 0.25):
        oracle = proc.oracle(noise)
        for n in range(proc.D):
            for w in itertools.product(range(4), repeat=n):
                if not proc.is_completable(w):
                    continue
                for exact in (True, False):
                    got, want = proc.next_token_distribution(w, exact), _law_by_formula(proc, w, exact)
                    assert got == want and [type(x) for x in got] == [type(x) for x in want], (w, exact)
                exact = isinstance(noise, int | Fraction)
                eta = Fraction(noise) if exact else noise
                want = tuple((1 - eta) * b + eta / 4 for b in _law_by_formula(proc, w, exact))
                got = oracle.probs(w)
                assert got == want and [type(x) for x in got] == [type(x) for x in want], (w, noise)


def test_a_law_validated_once_is_returned_as_it_is_and_bad_laws_fail_every_time() -> None:
    good = (Fraction(1, 2), Fraction(1, 2))
    oracle = g.TabularOracle(2, lambda prefix: good)
    assert oracle.probs(()) is good and oracle.probs((1,)) is good
    bad = (Fraction(1, 2), Fraction(1, 3))
    oracle = g.TabularOracle(2, lambda prefix: bad)
    for _ in range(2):  # an invalid law is never remembered as valid
        with pytest.raises(ValueError, match="sums to 5/6, not 1"):
            oracle.probs(())
    off = (Fraction(1, 2), Fraction(1, 2) + Fraction(1, 10**12))  # exact laws sum to 1 exactly, no tolerance
    with pytest.raises(ValueError, match="not 1"):
        g.TabularOracle(2, lambda prefix: off).probs(())
    short = g.TabularOracle(2, lambda prefix: (Fraction(1),))
    for _ in range(2):
        with pytest.raises(ValueError, match=r"^oracle law at \(\) has 1 entries, expected 2$"):
            short.probs(())
    cell = np.array(0.5)  # a mutable entry: the same tuple object can change, so it is checked on every call
    shared = (cell, 0.5)
    oracle = g.TabularOracle(2, lambda prefix: shared)
    assert oracle.probs(()) is shared
    cell[()] = -0.5
    with pytest.raises(ValueError, match="has a negative entry"):
        oracle.probs(())


def test_a_copied_oracle_does_not_trust_the_ids_it_carries() -> None:
    import pickle

    good = (Fraction(1, 2), Fraction(1, 2))
    oracle = g.TabularOracle(2, _HalfLaw(good))
    assert oracle.probs(()) is good
    copy = pickle.loads(pickle.dumps(oracle))
    stale_id = next(iter(copy._validated_laws))
    # a new law object that happens to sit at a remembered id is validated all the same
    copy._validated_laws[stale_id] = (Fraction(1, 2), Fraction(1, 2))
    bad = (Fraction(1, 2), Fraction(1, 3))
    copy._validated_laws[id(bad)] = (Fraction(1, 2), Fraction(1, 2))  # the id of bad, another object stored
    copy._fn = _HalfLaw(bad)
    with pytest.raises(ValueError, match="sums to 5/6, not 1"):
        copy.probs(())


class _HalfLaw:
    """A picklable law returning one fixed tuple."""

    def __init__(self, law: tuple) -> None:
        self.law = law

    def __call__(self, prefix: tuple) -> tuple:
        return self.law


def test_the_noisy_dyck_oracle_does_not_trust_an_id_without_its_law() -> None:
    proc = DyckCompletion(4)
    oracle = proc.oracle(Fraction(1, 10))
    law = proc.next_token_distribution((), True)
    want = tuple(Fraction(9, 10) * b + Fraction(1, 40) for b in law)
    assert oracle.probs(()) == want
    # what a closure pickled by value would carry: the same id bound to another object and another mixture
    mixed = next(c.cell_contents for c in oracle._fn.__closure__ if isinstance(c.cell_contents, dict))
    mixed[id(law)] = ((Fraction(1), 0, 0, 0), (Fraction(1), 0, 0, 0))
    assert oracle.probs(()) == want
