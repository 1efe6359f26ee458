"""theorylab.automata"""

from theorylab.automata.semiautomaton import Semiautomaton  # noqa: E402,F401
