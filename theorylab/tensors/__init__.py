"""theorylab.tensors: Kruskal rank, Kruskal's uniqueness condition, CP decomposition and factor matching."""

from theorylab.tensors.cp import CPDecomposition, cp_decompose, cp_to_tensor, nonunique_decomposition
from theorylab.tensors.kruskal import KruskalCondition, KruskalRank, kruskal_condition, kruskal_rank
from theorylab.tensors.matching import FactorMatch, match_factors
from theorylab.tensors.uniqueness import UniquenessReport, uniqueness_report

__all__ = [
    "CPDecomposition",
    "FactorMatch",
    "KruskalCondition",
    "KruskalRank",
    "UniquenessReport",
    "cp_decompose",
    "cp_to_tensor",
    "kruskal_condition",
    "kruskal_rank",
    "match_factors",
    "nonunique_decomposition",
    "uniqueness_report",
]
