"""Finite Markov chains and diffusions: stationary laws, spectral gaps, Dirichlet forms, hitting times, mixing."""

from theorylab.markov.chain import FiniteChain

__all__ = ["FiniteChain"]
