"""Experiment records decided by small models on a CPU (trained tier).

``topic.fig2.10`` (Li §2.1.7.8, Fig 2.10, ``003_69b23422e33c905a.txt``): trained without $L_2$ regularisation, the
one-layer model's value matrix sometimes converges to a diagonal pattern. The one-layer model of (2.7) (one-hot
embeddings, W^K, W^Q, W^V trained jointly with Adam at the thesis's learning rate 0.01) is trained on topic
documents (T = v = 10, tau = 3) with several seeds; each converged W^V is classified by its diagonal share
(``theorylab.attention.topic.patterns``) and the population by a Clopper-Pearson verdict on the share of diagonal
runs. The control differs in one ingredient: attention frozen to uniform (W^K = W^Q = 0, Fig 2.5's setting), where
the same verdict must not pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.languages.topic import TopicModel
from theorylab.nn.quality import UnderTrainedError, require_trained

FIG210_PARAMS = TopicModel(10, 10, 3)  # the thesis's synthetic setting (T = v = 10), BERT masking rates
FIG210_EVAL_SEED = 2110  # held-out documents (and, +1, the documents of the least-squares reference)


# ------------------------------------------------------------------------------------------------ exact tier
# The statistic read on the optimal family: W* (uniform blocks) and D^V are both optima without L2 (Thm 2.1.4), and so
# is every mix (1-t) W* + t D^V (the optimal set of a convex quadratic is convex). Both put the same excess c3 on a
# block, W* spread evenly (q = 1/v), D^V on the diagonal (q = 1), so q is exactly 1/v + t (1 - 1/v) along the mix and
# the threshold 1/2 sits at t = (v - 2) / (2 (v - 1)). Instances with T != v so that swapping them changes the value.
PATTERN_INSTANCES = (TopicModel(10, 10, 3), TopicModel(4, 3, 2), TopicModel(3, 5, 1))


@pytest.mark.claim("topic.fig2.10", tier="exact")
def test_fig210_diagonal_share_on_the_optimal_family(measure):
    from fractions import Fraction as F

    from theorylab.attention.topic import stage1 as tp
    from theorylab.attention.topic.patterns import diagonal_share, is_diagonal

    for p in PATTERN_INSTANCES:
        W_star = tp.optimal_value_matrix(p).astype(float)
        D = tp.diagonal_value_matrix(p).astype(float)
        for t in (F(0), F(1, 5), F(4, 9), F(1, 2), F(1)):
            q = diagonal_share((1 - float(t)) * W_star + float(t) * D, p)
            assert (
                abs(q - float(F(1, p.v) + t * (1 - F(1, p.v)))) < 1e-12
            )  # float64 rounding of c3-sized entries
        t_half = F(p.v - 2, 2 * (p.v - 1))
        below, above = t_half - F(1, 1000), t_half + F(1, 1000)
        assert not is_diagonal((1 - float(below)) * W_star + float(below) * D, p)
        assert is_diagonal((1 - float(above)) * W_star + float(above) * D, p)
        measure(f"threshold_mix_T{p.T}_v{p.v}", float(t_half))
    # invariant to row offsets (a constant added to each row of words, the free u_i of finite data) and to scale
    p = PATTERN_INSTANCES[1]
    W = tp.optimal_value_matrix(p).astype(float)
    shifted = W.copy()
    shifted[1:, 1:] += np.random.default_rng(0).normal(size=(p.T * p.v, 1))
    assert diagonal_share(shifted, p) == pytest.approx(1 / p.v, abs=1e-12)
    assert diagonal_share(7.5 * W, p) == pytest.approx(1 / p.v, abs=1e-12)


@pytest.mark.claim("topic.fig2.10", tier="exact")
def test_fig210_joint_optimum_prefers_the_diagonal(measure):
    # why training without L2 can leave the block optimum: on the exact stage-2 landscapes (infinite documents, the
    # thesis's convention) D^V with its optimal attention (Thm 2.1.5) reaches a lower loss than W^V* with its optimal
    # gamma (Thm 2.1.3); both minima are found numerically, pinned to the 3 decimals they are quoted with
    from theorylab.attention.topic import stage2 as s2

    gamma, block = s2.optimal_gamma(FIG210_PARAMS, "thesis")
    alpha, beta, diagonal = s2.optimal_diagonal_attention(FIG210_PARAMS, "thesis")
    assert diagonal < block
    assert (round(block, 3), round(diagonal, 3), round(beta)) == (0.188, 0.119, 61)
    measure("block_min_loss", block)
    measure("diagonal_min_loss", diagonal)
    measure("diagonal_beta_star", beta)


@pytest.mark.claim("topic.fig2.10", tier="exact", control=True)
def test_fig210_diagonal_share_controls():
    from theorylab.attention.topic import stage1 as tp
    from theorylab.attention.topic.patterns import diagonal_share, is_diagonal, sometimes_verdict
    from theorylab.testing import rejects

    p = PATTERN_INSTANCES[1]
    W_star = tp.optimal_value_matrix(p).astype(float)
    # wrong readings differ: blocks of size T instead of v, or the [MASK] row and column kept
    swapped = TopicModel(p.v, p.T, 1)
    assert abs(diagonal_share(W_star, swapped) - 1 / p.v) > 0.01
    with_mask = np.asarray(W_star)[:-1, :-1]  # shifting the word block by one index mixes topics
    assert abs(diagonal_share(np.pad(with_mask, ((1, 0), (1, 0))), p) - 1 / p.v) > 0.01
    # no topic structure: undefined (NaN), never diagonal
    assert np.isnan(diagonal_share(np.zeros((p.V, p.V)), p)) and not is_diagonal(np.eye(p.V) * 0, p)
    assert not is_diagonal(-tp.diagonal_value_matrix(p).astype(float), p)
    rejects(lambda: diagonal_share(np.zeros((3, 3)), p), "W must be")
    rejects(lambda: diagonal_share(np.full((p.V, p.V), np.nan), p), "W must be finite")
    rejects(lambda: diagonal_share(np.zeros((4, 4)), TopicModel(3, 1, 1)), "the diagonal share needs v >= 2")
    # the population verdict: Clopper-Pearson at 95%, claim_low 0.05
    assert sometimes_verdict([True] * 3).status == "passed"  # lower bound 0.025^(1/3) = 0.292
    assert sometimes_verdict([True, True, False]).status == "passed"  # lower bound 0.094
    assert sometimes_verdict([True, False, False]).status == "open"  # lower bound 0.0084
    assert sometimes_verdict([False] * 3).status == "open"
    assert sometimes_verdict([False] * 71).status == "open"  # upper bound 1 - 0.025^(1/71) = 0.0506
    assert sometimes_verdict([False] * 72).status == "failed"  # 0.0499
    rejects(lambda: sometimes_verdict([]), "no runs to judge")
    rejects(lambda: sometimes_verdict([True], claim_low=1.0), "claim_low and level must lie in")


@pytest.mark.claim("topic.fig2.10", tier="exact")
def test_fig210_masked_square_loss_is_the_training_objective():
    import torch

    from theorylab.attention.topic import stage1 as tp
    from theorylab.attention.topic.patterns import masked_square_loss
    from theorylab.nn.train import loss_terms
    from theorylab.testing import rejects

    p = FIG210_PARAMS
    rng = np.random.default_rng(3)
    docs = p.sample_documents(rng, 20, 16)
    masked, in_m = p.mask_documents(rng, docs)
    model = _uniform_model(tp.optimal_value_matrix(p).astype(float))
    got = masked_square_loss(model, masked, docs, in_m)
    out = model(torch.as_tensor(masked))
    target = torch.nn.functional.one_hot(torch.as_tensor(docs), p.V).double()
    ref, _, _ = loss_terms(out, target, torch.as_tensor(in_m), "mse")
    assert got == pytest.approx(float(ref), rel=1e-6)  # the harness's loss runs in float32
    # and against a direct sum over the masked positions, one at a time
    o = out.detach().numpy()
    direct = np.mean([np.sum((o[i, j] - np.eye(p.V)[docs[i, j]]) ** 2) for i, j in np.argwhere(in_m)])
    assert got == pytest.approx(direct, rel=1e-12)
    rejects(lambda: masked_square_loss(model, masked, docs, in_m * False), "no masked position")
    rejects(lambda: masked_square_loss(model, masked[:, :3], docs, in_m), "masked, docs, in_m must be")


# ------------------------------------------------------------------------------------------------ trained tier
def _fig210_sizes(scale: str) -> dict:
    # small (CPU CI): documents of 32 tokens, 3 seeds, 600 Adam steps of 32 documents. full: the thesis's document
    # length (100-150 -> 128), Table 2.2's population of 10 runs, 5000 steps of 40 documents (sized for a GPU)
    if scale == "small":
        return dict(N=32, steps=600, batch=32, seeds=(0, 1, 2))
    return dict(N=128, steps=5000, batch=40, seeds=tuple(range(10)))


@pytest.fixture(scope="module")
def fig210_runs(request):
    """Three arms on fresh masked documents: attention trained (the claim's setting), attention frozen uniform
    (the control), and the first arm stopped at 10% of its budget (must be refused as under-trained); plus a
    held-out set and the least-squares optimum of the uniform-attention model (the best model without attention)."""
    from theorylab.attention.topic.model import TopicAttentionConfig, least_squares_value_matrix
    from theorylab.languages.topic import TopicMLMTask
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    z = _fig210_sizes(scale)
    p = FIG210_PARAMS
    print(f"topic.fig2.10: seeds {z['seeds']}, held-out seed {FIG210_EVAL_SEED}, sizes {z}")
    joint = TopicAttentionConfig(V=p.V, train_attention=True, init_value=0.02, init_attention=0.02)
    uniform = TopicAttentionConfig(V=p.V, init_value=0.02)
    budget = dict(batch_size=z["batch"], seq_len=z["N"], lr=1e-2, eval_batches=0)
    runs = {
        "joint": train(
            TopicMLMTask(p),
            joint,
            Budget(steps=z["steps"], **budget),
            seeds=z["seeds"],
            device=device,
            threads=1,
        ),
        "uniform": train(
            TopicMLMTask(p),
            uniform,
            Budget(steps=z["steps"], **budget),
            seeds=z["seeds"],
            device=device,
            threads=1,
        ),
        "joint_tenth": train(
            TopicMLMTask(p),
            joint,
            Budget(steps=z["steps"] // 10, **budget),
            seeds=z["seeds"][:1],
            device=device,
            threads=1,
        ),
    }
    rng = np.random.default_rng(FIG210_EVAL_SEED)
    docs = p.sample_documents(rng, 1000, z["N"])
    masked, in_m = p.mask_documents(rng, docs)
    held = (masked, docs, in_m)
    fit_rng = np.random.default_rng(FIG210_EVAL_SEED + 1)
    fit_docs = p.sample_documents(fit_rng, 4000, z["N"])
    fit_masked, fit_in_m = p.mask_documents(fit_rng, fit_docs)
    W_ls = least_squares_value_matrix(fit_masked, fit_docs, fit_in_m, p.V)
    return runs, held, W_ls


def _uniform_model(W: np.ndarray):
    """The uniform-attention model (2.7) with a given W^V (float64)."""
    import torch

    from theorylab.attention.topic.model import TopicAttentionConfig

    model = TopicAttentionConfig(V=W.shape[0], train_value=False).build().double()
    with torch.no_grad():
        model.W_V.copy_(torch.as_tensor(W))
    return model


def _read(result, held) -> dict:
    """Per seed: held-out masked square loss, diagonal share of W^V, and attention by pair type."""
    from theorylab.attention.topic.model import attention_by_pair_type
    from theorylab.attention.topic.patterns import diagonal_share, masked_square_loss

    p = FIG210_PARAMS
    models = [m.cpu().double() for m in result.models]
    return {
        "loss": [masked_square_loss(m, *held) for m in models],
        "share": [diagonal_share(m.W_V.detach().numpy(), p) for m in models],
        "attention": [attention_by_pair_type(m, held[0][:200], p) for m in models],
    }


# the training gates, measured against the best model without attention (the least-squares W^V under uniform
# attention, fitted on 4000 other documents) on 1000 held-out documents. A jointly trained run must beat it by at least
# 2%: no model without learned attention can, beyond held-out sampling noise (trained uniform-attention runs sit
# 0.4-0.5% above it, the 10%-budget joint run 0.3% above), so 2% certifies that attention was learned (the trained
# seeds gain 3.5%). A uniform-attention run must be within 1% of it (its own class's minimum).
JOINT_GAIN = 0.02
UNIFORM_SLACK = 0.01


def _gate_joint(losses, ls_loss: float, what: str) -> None:
    require_trained(
        [1 - x / ls_loss for x in losses], JOINT_GAIN, f"held-out loss gain over uniform attention, {what}"
    )


@pytest.mark.claim("topic.fig2.10", tier="trained")
def test_fig210_value_matrix_sometimes_diagonal(fig210_runs, measure):
    from theorylab.attention.topic.patterns import is_diagonal, masked_square_loss, sometimes_verdict

    runs, held, W_ls = fig210_runs
    p = FIG210_PARAMS
    ls_loss = masked_square_loss(_uniform_model(W_ls), *held)
    got = _read(runs["joint"], held)
    _gate_joint(got["loss"], ls_loss, "jointly trained seeds")
    flags = [is_diagonal(m.W_V.detach().cpu().numpy(), p) for m in runs["joint"].models]
    verdict = sometimes_verdict(flags)
    print(verdict)
    assert verdict.status == "passed", (verdict, got["share"])
    # the diagonal pattern comes with Thm 2.1.5's kind of attention: same-word attention the largest of the three
    assert all(
        a["same_word"] > max(a["same_topic_other_word"], a["different_topic"]) for a in got["attention"]
    )
    measure("diagonal_share_per_seed", [round(q, 3) for q in got["share"]])
    measure("diagonal_runs", [sum(flags), len(flags)])
    measure("heldout_loss_per_seed", [round(x, 4) for x in got["loss"]])
    measure("heldout_loss_uniform_optimum", ls_loss)
    measure("beta_hat_per_seed", [round(a["beta_hat"], 2) for a in got["attention"]])
    measure("alpha_hat_per_seed", [round(a["alpha_hat"], 3) for a in got["attention"]])
    measure("train_seconds", runs["joint"].seconds)


@pytest.mark.claim("topic.fig2.10", tier="trained", control=True)
def test_fig210_control_uniform_attention_stays_block(fig210_runs, measure):
    from theorylab.attention.topic.patterns import is_diagonal, masked_square_loss, sometimes_verdict

    runs, held, W_ls = fig210_runs
    p = FIG210_PARAMS
    ls_loss = masked_square_loss(_uniform_model(W_ls), *held)
    got = _read(runs["uniform"], held)
    require_trained(
        [x / ls_loss - 1 for x in got["loss"]],
        UNIFORM_SLACK,
        "held-out loss excess over the uniform optimum",
        above=False,
    )
    verdict = sometimes_verdict(
        [is_diagonal(m.W_V.detach().cpu().numpy(), p) for m in runs["uniform"].models]
    )
    assert verdict.status != "passed", (verdict, got["share"])
    # the 10%-budget joint run is refused by the gate (and is not diagonal yet)
    tenth = _read(runs["joint_tenth"], held)
    with pytest.raises(UnderTrainedError):
        _gate_joint(tenth["loss"], ls_loss, "10%-budget seed")
    assert not is_diagonal(runs["joint_tenth"].models[0].W_V.detach().cpu().numpy(), p)
    measure("uniform_diagonal_share_per_seed", [round(q, 3) for q in got["share"]])
    measure("uniform_heldout_loss_per_seed", [round(x, 4) for x in got["loss"]])
    measure("tenth_budget_share_and_loss", [round(tenth["share"][0], 3), round(tenth["loss"][0], 4)])
