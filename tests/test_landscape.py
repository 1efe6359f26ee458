"""Bad input and API behaviour of theorylab.landscape and theorylab.hmm.mlm."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.counterexamples import generate
from theorylab.hmm import HMM
from theorylab.hmm.mlm import excess_kl, mlm_conditionals, mlm_entropy
from theorylab.landscape import (
    DyckTask,
    MinimizerManifold,
    ProductLogitToy,
    TwoLayerSoftmax,
    balance_rescalings,
    deepen_transformer,
    random_transformer,
    riemannian_flow,
    sgd_chains,
    sol1,
    trace_ggn,
    trace_hessian,
    trace_hessian_loop,
    widen_mlp,
)
from theorylab.landscape.hessian import flatten_params


def _quad(theta):
    return (theta**2 * torch.arange(1, theta.numel() + 1, dtype=theta.dtype)).sum()


def test_trace_hessian_methods_agree():
    theta = torch.ones(6, dtype=torch.float64)
    exact = 2 * sum(range(1, 7))
    assert trace_hessian(_quad, theta).value == pytest.approx(exact)
    assert trace_hessian(_quad, theta, dense_limit=10).value == pytest.approx(exact)
    assert trace_hessian_loop(_quad, theta) == pytest.approx(exact)
    est = trace_hessian(_quad, theta, "hutchinson", n_probes=50, generator=torch.Generator().manual_seed(0))
    assert est.value == pytest.approx(exact)  # Rademacher probes are exact on diagonal Hessians


@pytest.mark.parametrize(
    "theta, error",
    [
        (torch.ones(2, 2, dtype=torch.float64), ValueError),
        (torch.tensor([1.0, float("nan")], dtype=torch.float64), ValueError),
        (torch.ones(3, dtype=torch.int64), TypeError),
        ([1.0, 2.0], TypeError),
        (torch.ones(0, dtype=torch.float64), ValueError),
    ],
)
def test_trace_hessian_rejects_bad_parameters(theta, error):
    with pytest.raises(error):
        trace_hessian(_quad, theta)


def test_trace_hessian_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        trace_hessian(_quad, torch.ones(3, dtype=torch.float64), "lanczos")
    with pytest.raises(ValueError, match="n_probes"):
        trace_hessian(_quad, torch.ones(3, dtype=torch.float64), "hutchinson", n_probes=1)


def test_flatten_params_roundtrip():
    params = {"a": torch.ones(2, 3), "b": torch.zeros(4)}
    theta, unflatten = flatten_params(params)
    assert theta.shape == (10,) and unflatten(theta)["a"].shape == (2, 3)
    with pytest.raises(TypeError):
        flatten_params({})


def test_ggn_weights_validated(rng):
    model = TwoLayerSoftmax(3, 2, 3)
    with pytest.raises(ValueError, match="probability vector"):
        trace_ggn(model.logits, model.init(rng), model.inputs(), weights=[0.5, 0.6, -0.1])


def test_two_layer_softmax_bad_input(rng):
    with pytest.raises(ValueError, match="activation"):
        TwoLayerSoftmax(3, 2, 3, "gelu")
    with pytest.raises(ValueError, match="n_out"):
        TwoLayerSoftmax(3, 2, 1)
    model = TwoLayerSoftmax(3, 2, 3, "tanh")
    with pytest.raises(ValueError, match="positively homogeneous"):
        model.rescale(model.init(rng), [1.0, 2.0])
    relu = TwoLayerSoftmax(3, 2, 3, "relu")
    with pytest.raises(ValueError, match="positive"):
        relu.rescale(relu.init(rng), [1.0, -2.0])


def test_widen_mlp_bad_input(rng):
    W, a = [rng.normal(size=(4, 3)), rng.normal(size=(2, 4))], rng.normal(size=2)
    with pytest.raises(ValueError, match="positively homogeneous"):
        widen_mlp(W, a, "gelu")
    with pytest.raises(ValueError, match="columns"):
        widen_mlp([rng.normal(size=(4, 3)), rng.normal(size=(2, 5))], a)
    with pytest.raises(ValueError, match="NaN"):
        widen_mlp([np.full((4, 3), np.nan)], rng.normal(size=4))
    with pytest.raises(ValueError, match="a must"):
        widen_mlp(W, rng.normal(size=3))
    with pytest.raises(TypeError):
        widen_mlp(np.ones((2, 2)), a)


def test_deepen_transformer_bad_recipe(rng):
    p = random_transformer(5, 4, 1, 4, 8, 1, rng)
    with pytest.raises(ValueError, match="recipe"):
        deepen_transformer(p, 1, "zero")
    with pytest.raises(ValueError, match="n_new"):
        deepen_transformer(p, 0)


def test_flow_rejects_start_off_manifold():
    toy = ProductLogitToy(1.0, 2)
    with pytest.raises(ValueError, match="not on Gamma"):
        riemannian_flow(toy.trace_grad, toy.manifold(), np.array([2.0, 2.0]), [0.0, 1.0])
    with pytest.raises(ValueError, match="times"):
        riemannian_flow(toy.trace_grad, toy.manifold(), toy.point(0.3), [1.0, 0.5])
    degenerate = MinimizerManifold(
        lambda th: np.array([th[0] * th[1]]), lambda th: np.array([[th[1], th[0]]])
    )
    with pytest.raises(ValueError, match="rank deficient"):
        degenerate.tangent_projector(np.zeros(2))
    with pytest.raises(ValueError):
        ProductLogitToy(0.0, 2)


def test_sgd_chains_bad_input(rng):
    toy = ProductLogitToy(1.0, 2)
    with pytest.raises(ValueError, match="eta"):
        sgd_chains(toy.sample_grad, toy.point(0.0), 0.0, 10, 5, rng)
    with pytest.raises(ValueError):
        sgd_chains(toy.sample_grad, toy.point(0.0), 0.1, 10, 0, rng)


def test_balance_rescalings():
    c, value = balance_rescalings([4.0, 1.0, 0.0], [1.0, 1.0, 3.0])
    assert np.allclose(c[:2], [np.sqrt(2), 1.0]) and value == pytest.approx(2 * (2 + 1))
    with pytest.raises(ValueError):
        balance_rescalings([1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        balance_rescalings([1.0], [1.0, 2.0])


def test_dyck_task_bad_input():
    with pytest.raises(ValueError, match="even"):
        DyckTask(5)
    with pytest.raises(ValueError, match="even"):
        sol1(DyckTask(6), 3)


def test_mlm_bad_input(rng):
    hmm = HMM(rng.dirichlet(np.ones(3), size=2).T, np.array([[0.5, 0.5], [0.5, 0.5]]), validate=False)
    with pytest.raises(ValueError, match="masked position"):
        mlm_conditionals(hmm, np.array([0, 1, 2]), 3)
    with pytest.raises(ValueError, match="tokens"):
        mlm_conditionals(hmm, np.array([0, 5]), 0)
    with pytest.raises(TypeError, match="integer"):
        mlm_conditionals(hmm, np.array([0.0, 1.0]), 0)
    with pytest.raises(TypeError, match="HMM"):
        mlm_conditionals(np.eye(2), np.array([0, 1]), 0)
    with pytest.raises(ValueError, match="initial"):
        mlm_conditionals(hmm, np.array([0, 1]), 0, initial=[0.2, 0.2])
    with pytest.raises(ValueError, match="length"):
        mlm_entropy(hmm, 0)
    with pytest.raises(ValueError, match="shape"):
        excess_kl(lambda X, t: np.ones((len(X), 2)) / 2, hmm, np.array([[0, 1, 2]]))


def test_flat_generators_registered():
    for cid in (
        "flat.data.hmm",
        "flat.cons.mlp_embed",
        "flat.cons.tfm_deepen",
        "flat.lemF.1",
        "flat.thmE.1",
        "flat.lemF.4",
    ):
        assert generate(cid)


def test_trace_hessian_takes_module_parameters_as_list_tuple_or_dict():
    """L = sum_i c_i w_i^2 + (b . 1)^2 over a Linear(3, 2): Tr = 2 sum c_i + 2 * 2 (the bias block is 2 J)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2).double()
    c = torch.arange(1, 7, dtype=torch.float64).reshape(2, 3)
    expected = 2 * float(c.sum()) + 2 * 2

    def loss_named(p):
        return (c * p["weight"] ** 2).sum() + p["bias"].sum() ** 2

    def loss_seq(p):
        return (c * p[0] ** 2).sum() + p[1].sum() ** 2

    assert trace_hessian(loss_named, dict(model.named_parameters())).value == pytest.approx(
        expected, abs=1e-12
    )
    assert trace_hessian(loss_seq, model.parameters()).value == pytest.approx(expected, abs=1e-12)
    assert trace_hessian(loss_seq, tuple(model.parameters())).value == pytest.approx(expected, abs=1e-12)
    with pytest.raises(TypeError, match="bias is a float"):
        trace_hessian(loss_named, {"weight": model.weight, "bias": 1.0})
    with pytest.raises(TypeError, match="mix dtypes"):
        trace_hessian(loss_seq, [model.weight, model.bias.float()])
    with pytest.raises(ValueError, match="empty"):
        trace_hessian(loss_seq, [])


def test_rescaling_sgd_excess_loss_is_the_population_cross_entropy_gap():
    import torch

    from theorylab.landscape import TwoLayerSoftmax, cross_entropy_loss
    from theorylab.landscape.rescaling_sgd import excess_loss

    rng = np.random.default_rng(3)
    model = TwoLayerSoftmax(4, 5, 3, "relu")
    teacher = model.init(rng)
    P = model.probs(teacher)
    W1, W2 = (a.numpy() for a in model.split(teacher))
    assert abs(excess_loss(W1, W2, P)) < 1e-15
    other = model.init(rng)
    loss = cross_entropy_loss(model.logits, model.inputs(), P)
    A, B = (a.numpy() for a in model.split(other))
    assert np.isclose(
        excess_loss(A, B, P), float(loss(other)) - float(loss(torch.as_tensor(teacher))), rtol=1e-12
    )


def test_sgd_stationary_excess_matches_simulated_linear_sgd():
    """Linear SGD per eigen-direction, delta' = (1 - eta lambda) delta + eta xi, Var xi = lambda / B, simulated on
    20,000 chains from the stationary law: the mean excess and the sd of an average of 5 iterates 3 steps apart
    agree with the closed forms to their Monte Carlo error (4 standard errors)."""
    from theorylab.landscape.rescaling_sgd import sgd_stationary_excess

    eta, B, lam = 0.3, 4, np.array([0.5, 2.0, 0.0, -1e-9])
    mean, sd = sgd_stationary_excess(eta, B, lam, samples=5, spacing=3)
    assert np.isclose(sgd_stationary_excess(eta, B, lam)[0], mean)
    rng = np.random.default_rng(0)
    lp = lam[:2]
    delta = rng.standard_normal((20_000, 2)) * np.sqrt(eta / (B * (2 - eta * lp)))
    avg = np.zeros(20_000)
    for t in range(13):
        if t % 3 == 0:
            avg += (0.5 * lp * delta**2).sum(axis=1) / 5
        delta = (1 - eta * lp) * delta + eta * rng.standard_normal(delta.shape) * np.sqrt(lp / B)
    assert abs(avg.mean() - mean) < 4 * sd / np.sqrt(len(avg))
    # the sample sd's standard error is sqrt((kappa - 1) / (4 n)), kappa <= 15 (chi^2_1's kurtosis): 4 of them
    assert abs(avg.std() / sd - 1) < 4 * np.sqrt(14 / (4 * len(avg)))
    assert np.isclose(
        sgd_stationary_excess(1e-4, B, lam)[0], 1e-4 * 2.5 / (4 * B), rtol=1e-4
    )  # eta Tr H / (4B)


def test_sgd_stationary_excess_rejects_bad_input():
    from theorylab.landscape.rescaling_sgd import sgd_stationary_excess
    from theorylab.testing import rejects

    rejects(lambda: sgd_stationary_excess(0.0, 4, [1.0]), "need eta > 0 and a positive integer batch")
    rejects(lambda: sgd_stationary_excess(0.1, 2.5, [1.0]), "need eta > 0 and a positive integer batch")
    rejects(lambda: sgd_stationary_excess(0.1, 4, [1.0], samples=0), "samples and spacing must be positive")
    rejects(lambda: sgd_stationary_excess(1.0, 4, [2.0]), r"eta \* lambda_max = 2 >= 2: SGD is unstable")
