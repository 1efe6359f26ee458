"""theorylab.automata"""

from theorylab.automata.semiautomaton import Semiautomaton  # noqa: E402,F401
from theorylab.automata import zoo  # noqa: E402,F401
