"""Finite Markov chains and diffusions: stationary laws, spectral gaps, Dirichlet forms, hitting times, mixing."""
