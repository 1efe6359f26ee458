"""The topic-structure attention family (Li's thesis §2.1).

:mod:`.stage1` holds stage 1 (value matrix and embeddings under frozen uniform attention, Lemma 2.1.1, Thms
2.1.1-2.1.4), :mod:`.stage2` stage 2 (optimal attention, Thms 2.1.3 / 2.1.5; it builds on stage 1, never the
other way round). Both APIs are re-exported here. :mod:`.symbolic` (sympy), :mod:`.model` (torch; imported on
demand), :mod:`.plots` and :mod:`.counterexamples` are not imported by this package.
"""

from theorylab.attention.topic import stage1, stage2
from theorylab.attention.topic.stage1 import *  # noqa: F403
from theorylab.attention.topic.stage2 import *  # noqa: F403

__all__ = list(stage1.__all__) + list(stage2.__all__)
