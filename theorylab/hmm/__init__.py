"""theorylab.hmm: identifiability of (Gaussian) HMMs from masked prediction (Liu thesis §2.2).

Models ``HMM(O, T)`` and ``GHMM(M, T)`` validated against Assumptions 5-9; exact optimal predictors
``optimal_predictor(model, target, given)``; ``recover_from_predictor`` (Theorems 5, 7, 8); the
non-identifiable pairs of Theorems 4, 6, 8, Claim 1 and Lemma 7 (``theorylab.hmm.constructions``); ``sample``;
G-HMM posterior geometry and the conditional law (``theorylab.hmm.gaussian``); exact sympy checks of Claim 1
(``theorylab.hmm.symbolic``); harness tasks for trained predictors (``theorylab.hmm.training``, imports
torch).
"""

from theorylab.hmm.compare import Relabeling, predictor_gap, relabeling_distance, same_up_to_relabeling
from theorylab.hmm.constructions import (
    claim1_pair,
    example_247,
    householder,
    householder_pair,
    lemma7_pair,
    random_doubly_stochastic,
    random_emission,
    random_ghmm,
    random_hmm,
    random_unit_means,
    rotation_fixing_ones,
    rotation_pair,
    sinkhorn,
    theorem4_pair,
    theorem6_pair,
    theorem8_case2_pair,
)
from theorylab.hmm.interop import from_hmmlearn, to_hmmlearn
from theorylab.hmm.mlm import excess_kl, mlm_conditionals, mlm_entropy
from theorylab.hmm.models import GHMM, HMM, AssumptionError
from theorylab.hmm.predictors import optimal_predictor, parse_task, predictor_by_enumeration, triple_factors
from theorylab.hmm.recovery import NotIdentifiableError, recover_from_predictor
from theorylab.hmm.sampling import sample
from theorylab.hmm.verify import verify_nonidentifiable_pair, verify_recovery

__all__ = [
    "GHMM",
    "HMM",
    "AssumptionError",
    "NotIdentifiableError",
    "Relabeling",
    "claim1_pair",
    "example_247",
    "from_hmmlearn",
    "excess_kl",
    "householder",
    "householder_pair",
    "lemma7_pair",
    "mlm_conditionals",
    "mlm_entropy",
    "optimal_predictor",
    "parse_task",
    "predictor_by_enumeration",
    "predictor_gap",
    "random_doubly_stochastic",
    "random_emission",
    "random_ghmm",
    "random_hmm",
    "random_unit_means",
    "recover_from_predictor",
    "relabeling_distance",
    "rotation_fixing_ones",
    "rotation_pair",
    "same_up_to_relabeling",
    "sample",
    "sinkhorn",
    "theorem4_pair",
    "theorem6_pair",
    "theorem8_case2_pair",
    "to_hmmlearn",
    "triple_factors",
    "verify_nonidentifiable_pair",
    "verify_recovery",
]
