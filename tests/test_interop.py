"""Interop with the libraries researchers use: hmmlearn's conventions, tensorly's CP tensors, one sampler
argument order, light imports, ``theorylab.nn.train`` as a function."""

import inspect
import subprocess
import sys

import numpy as np
import pytest

from theorylab.hmm import (
    GHMM,
    HMM,
    AssumptionError,
    from_hmmlearn,
    random_ghmm,
    random_hmm,
    sample,
    to_hmmlearn,
)


class FakeCategoricalHMM:
    """Stands in for ``hmmlearn.hmm.CategoricalHMM`` (same attribute names and conventions)."""


def test_hmmlearn_round_trip_and_conventions(rng) -> None:
    model = random_hmm(5, 3, rng)
    target = FakeCategoricalHMM()
    params = to_hmmlearn(model, target)
    assert np.allclose(target.transmat_.sum(axis=1), 1) and np.allclose(target.emissionprob_.sum(axis=1), 1)
    assert target.emissionprob_.shape == (3, 5) and np.allclose(target.startprob_, 1 / 3)
    # hmmlearn: transmat_[i, j] = P(h_t+1 = j | h_t = i); theorylab: T[j, i]
    assert np.array_equal(params["transmat_"], model.T.T) and np.array_equal(
        params["emissionprob_"], model.O.T
    )
    back = from_hmmlearn(target)
    assert back == model
    g = random_ghmm(4, 3, rng)
    gp = to_hmmlearn(g)
    assert (
        gp["means_"].shape == (3, 4)
        and from_hmmlearn(**{"transmat": gp["transmat_"], "means": gp["means_"]}) == g
    )
    assert isinstance(from_hmmlearn(transmat=gp["transmat_"], means=gp["means_"]), GHMM)


def test_hmmlearn_model_if_installed(rng) -> None:
    hmm = pytest.importorskip("hmmlearn.hmm")
    model = random_hmm(4, 2, rng)
    h = hmm.CategoricalHMM(n_components=2)
    to_hmmlearn(model, h)
    h.n_features = 4
    x = sample(model, rng, 1, 50)[0]
    assert np.isfinite(h.score(x.reshape(-1, 1)))
    assert from_hmmlearn(h) == model


def test_reversed_conventions_are_detected(rng) -> None:
    model = random_hmm(5, 3, rng)
    with pytest.raises(ValueError, match="emissionprob_"):
        HMM(model.O.T, model.T)  # hmmlearn's k x d emission
    row_stochastic_T = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    with pytest.raises(AssumptionError, match="looks row-stochastic"):
        HMM(np.full((3, 3), 1 / 3) + np.eye(3) * 0, row_stochastic_T)
    O_rows = np.array([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])  # rows sum to 1, columns do not
    with pytest.raises(AssumptionError, match="O looks row-stochastic"):
        HMM(O_rows, model.T)
    with pytest.raises(AssumptionError, match="looks column-stochastic"):
        from_hmmlearn(transmat=row_stochastic_T.T, emissionprob=model.O.T)
    with pytest.raises(AssumptionError, match="startprob_ must be uniform"):
        from_hmmlearn(startprob=[0.5, 0.3, 0.2], transmat=model.T.T, emissionprob=model.O.T)
    with pytest.raises(ValueError, match="exactly one of"):
        from_hmmlearn(transmat=model.T.T)
    with pytest.raises(TypeError):
        to_hmmlearn("not a model")


def test_cp_decompose_is_a_tensorly_cp_tensor(rng) -> None:
    tl = pytest.importorskip("tensorly")
    from theorylab.tensors import cp_decompose

    A, B, C = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    W = np.einsum("ai,bi,ci->abc", A, B, C)
    res = cp_decompose(W, 3)
    assert np.allclose(tl.cp_to_tensor(res), W, atol=1e-8 * np.abs(W).max())
    assert np.allclose(tl.cp_to_tensor(res.to_tensorly()), res.tensor())


def test_every_sampler_takes_rng_count_length() -> None:
    from theorylab.automata.semiautomaton import Semiautomaton
    from theorylab.hmm.sampling import sample as hmm_sample
    from theorylab.languages.dyck import Dyck
    from theorylab.languages.flipflop import sample_ffl

    for fn, skip in ((Semiautomaton.sample, 1), (Dyck.sample, 1), (hmm_sample, 1), (sample_ffl, 0)):
        params = list(inspect.signature(fn).parameters)[skip:]
        assert params[0] == "rng", (fn, params)
        assert len(params) >= 3, (fn, params)


def test_importing_hmm_is_light() -> None:
    code = (
        "import sys, theorylab.hmm, theorylab.tensors, theorylab.nn, theorylab.claims\n"
        "heavy = [m for m in ('scipy.optimize', 'torch', 'tensorly', 'cvxpy') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_nn_train_is_a_function() -> None:
    import theorylab.nn as nn
    from theorylab.nn.train import Budget  # importing the module of the same name keeps the function

    assert inspect.isfunction(nn.train) and Budget is nn.Budget
    assert list(inspect.signature(nn.train).parameters)[:4] == ["task", "model_config", "budget", "seeds"]
