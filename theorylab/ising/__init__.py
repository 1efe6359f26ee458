"""Ising models by exact enumeration, the clique model of Li Ch. 4, its samplers as finite Markov chains, and
product-form (parallel-decoding) transitions."""

from theorylab.ising.clique import (
    CliqueCountChain,
    assumption_4_1_5,
    assumption_4_1_6,
    assumption_4_1_7,
    prop_4_1_4_bound,
    prop_4_1_5_bound,
)
from theorylab.ising.expfam import FiniteExpFamily
from theorylab.ising.model import IsingModel, clique_model, spin_states, state_index
from theorylab.ising.product_form import best_product_approximation, product_floor, total_correlation
from theorylab.ising.samplers import (
    adaptive_block_dynamics,
    block_dynamics,
    independent_parallel,
    independent_parallel_stationary,
    k_gibbs,
    random_scan_gibbs,
)

__all__ = [
    "CliqueCountChain",
    "FiniteExpFamily",
    "IsingModel",
    "adaptive_block_dynamics",
    "assumption_4_1_5",
    "assumption_4_1_6",
    "assumption_4_1_7",
    "best_product_approximation",
    "block_dynamics",
    "clique_model",
    "independent_parallel",
    "independent_parallel_stationary",
    "k_gibbs",
    "product_floor",
    "prop_4_1_4_bound",
    "prop_4_1_5_bound",
    "random_scan_gibbs",
    "spin_states",
    "state_index",
    "total_correlation",
]
