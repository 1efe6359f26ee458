"""Explicit Transformers that simulate semiautomata (Liu et al., shortcuts to automata, Thm 10-12)."""
