"""theorylab.attention.scb: sparse contextual bigrams learned by a one-layer linear Transformer
(seed ``004_4bd75c3751e9130c.txt``). Every formula here is a reconstruction: the document lost its mathematics in
extraction, so exact agreement proves the reconstruction consistent, not that it is the paper's."""

from theorylab.attention.scb.algorithm import Algorithm1Result, prox_project, round_attention, run_algorithm1
from theorylab.attention.scb.dynamics import (
    bayes_loss,
    context_moments,
    expected_grads_enumerated,
    expected_preconditioned_grads,
    line_coordinates,
    line_loss,
    line_point,
    per_sample_grads,
    population_loss_enumerated,
    population_step,
    precondition,
    predict,
    softmax_jacobian,
    stage3_value_fixed_point,
    transfer_one_step_gradient,
    two_d_step,
    two_d_trajectory,
)
from theorylab.attention.scb.task import SCBTask, check_assumptions, mu_inner, random_scb_task

__all__ = [
    "Algorithm1Result",
    "SCBTask",
    "bayes_loss",
    "check_assumptions",
    "context_moments",
    "expected_grads_enumerated",
    "expected_preconditioned_grads",
    "line_coordinates",
    "line_loss",
    "line_point",
    "mu_inner",
    "per_sample_grads",
    "population_loss_enumerated",
    "population_step",
    "precondition",
    "predict",
    "prox_project",
    "random_scb_task",
    "round_attention",
    "run_algorithm1",
    "softmax_jacobian",
    "stage3_value_fixed_point",
    "transfer_one_step_gradient",
    "two_d_step",
    "two_d_trajectory",
]
