"""The trained tier at the documents' sizes: a catalog of the full-size trainings of each trained check, a cost
model that turns them into seconds on a device, a budgeted runner that records results in the run store
(:mod:`theorylab.runs`), and a CPU rehearsal of every full-size configuration (``theorylab trained``)."""

from theorylab.trained.catalog import CATALOG, FullCheck, Training, trainings_of
from theorylab.trained.cost import DEVICES, DeviceProfile, estimate_check, estimate_training, memory_estimate

__all__ = [
    "CATALOG",
    "DEVICES",
    "DeviceProfile",
    "FullCheck",
    "Training",
    "estimate_check",
    "estimate_training",
    "memory_estimate",
    "trainings_of",
]
