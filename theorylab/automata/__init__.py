"""theorylab.automata"""

from theorylab.automata import zoo  # noqa: E402,F401
from theorylab.automata.constructions import (  # noqa: E402,F401
    CompiledTransformer,
    compile_constant_depth,
    compile_gridworld,
    compile_log_depth,
)
from theorylab.automata.semiautomaton import Semiautomaton  # noqa: E402,F401
