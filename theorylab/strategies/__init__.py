"""Hypothesis strategies for random instances (stochastic matrices, automata, parameters).

Each family contributes a submodule; its public strategies are re-exported here.
"""
