"""Trainings shared between processes and GPU windows through checkpoints.

``theorylab trained`` runs each catalog check in its own pytest process, so a training that several checks share
(the 19M flip-flop baseline of R1, R4, R6 and R8) would be repeated by each. With ``THEORYLAB_CHECKPOINTS`` set (the
runner sets it to ``checkpoints/`` beside the run store), :func:`train_shared` saves a resumable state every quarter
of the budget under a key of (task, model config, budget, seeds, device, code version), and a later process loads
the finished state instead of training again; a training cut off by the end of a window resumes from its last
quarter. Unset, it is :func:`theorylab.nn.train`. Saving changes nothing in the training (same steps, same
batches).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

ENV = "THEORYLAB_CHECKPOINTS"
SAVES_PER_RUN = 4


def checkpoint_dir(task, config, budget, seeds, device: str) -> Path | None:
    """The folder of this training's shared checkpoint, or None when ``THEORYLAB_CHECKPOINTS`` is unset."""
    root = os.environ.get(ENV)
    if not root:
        return None
    from theorylab.runs import code_version

    text = repr(
        (repr(task), repr(config), dataclasses.asdict(budget), tuple(seeds), str(device), code_version())
    )
    return Path(root) / hashlib.sha256(text.encode()).hexdigest()[:16]


def train_shared(task, config, budget, seeds, device: str = "cpu", **kw):
    """``train(task, config, budget, seeds, device, **kw)``, resumed from (and saved to) the shared checkpoint."""
    from theorylab.nn import train

    folder = checkpoint_dir(task, config, budget, seeds, device)
    if folder is None:
        return train(task, config, budget, seeds=seeds, device=device, **kw)
    every = max(1, budget.steps // SAVES_PER_RUN)
    saving = dataclasses.replace(budget, checkpoint_every=budget.checkpoint_every or every)
    return train(task, config, saving, seeds=seeds, device=device, checkpoint_dir=folder, resume=True, **kw)
