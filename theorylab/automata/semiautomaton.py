"""Finite semiautomata (``delta[symbol, state] -> state``): the type lives in :mod:`theorylab.algebra.semiautomaton`
(the algebra is the floor the automata family builds on, and it must not import upward); re-exported here."""

from theorylab.algebra.semiautomaton import Semiautomaton, check_automaton, check_q0

__all__ = ["Semiautomaton", "check_automaton", "check_q0"]
