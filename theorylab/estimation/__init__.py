"""Statistical estimators and their landscapes: pseudolikelihood, noise-contrastive and contrastive estimation.

Import the submodules directly (``theorylab.estimation.pseudolikelihood``, ``theorylab.estimation.nce``,
``theorylab.estimation.contrastive``).
"""
