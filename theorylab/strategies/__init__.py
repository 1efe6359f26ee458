"""Hypothesis strategies for random instances (stochastic matrices, automata, parameters).

Each family contributes a submodule; its public strategies are re-exported here.
"""

from theorylab.strategies.automata import *  # noqa: F401,F403,E402  (automata family)
from theorylab.strategies.dyck import *  # noqa: F401,F403,E402  (dyck family)
from theorylab.strategies.flipflop import *  # noqa: F401,F403,E402  (flipflop family)
from theorylab.strategies.stochastic import *  # noqa: F401,F403,E402  (hmm family)
from theorylab.strategies.topic import *  # noqa: F401,F403,E402  (topic family)
