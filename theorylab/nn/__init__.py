"""theorylab.nn: the Transformer definitions used by the theory and the training harness.

Names are resolved lazily so that ``import theorylab.nn`` does not import torch.
Each submodule registers its public names in ``_EXPORTS`` (name -> submodule).

``theorylab.nn.train`` is the training function (``train(task, model_config, budget, seeds, ...)``), even after
its module ``theorylab/nn/train.py`` is imported (``from theorylab.nn.train import Budget`` keeps working): the
package does not let the import system replace the function by the module of the same name.
"""

import sys
import types
from importlib import import_module

_EXPORTS: dict[str, str] = {
    "Batch": "tasks",
    "Task": "tasks",
    "FunctionTask": "tasks",
    "CopyTask": "tasks",
    "check_task": "tasks",
    "check_batch": "tasks",
    "stack_batches": "tasks",
    "sample_fixed_dataset": "tasks",
    "TransformerConfig": "models",
    "LSTMConfig": "models",
    "MLPConfig": "models",
    "Transformer": "models",
    "LSTM": "models",
    "MLP": "models",
    "count_parameters": "models",
    "sinusoidal_positions": "models",
    "attention_backend": "models",
    "lstm_backend": "models",
    "chunked_forward": "models",
    "Budget": "train",
    "TrainResult": "train",
    "train": "train",
    "evaluate": "train",
    "loss_terms": "train",
    "peak_flops": "train",
    "auto_stack_size": "train",
    "cpu_threads": "train",
    "reference_forward": "reference",
    "TheoryTransformer": "theory",
    "AttentionSharpening": "regularizers",
    "SharpenedTransformerConfig": "regularizers",
    "attention_penalty": "regularizers",
    "causal_softmax": "theory",
    "ProgressiveSchedule": "distill",
    "DistillTask": "distill",
    "train_mlps": "distill",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(_EXPORTS)


class _Package(types.ModuleType):
    """Keeps ``theorylab.nn.<name>`` pointing at the exported function when a submodule of the same name
    (``train``) is imported: the import system's ``setattr(package, "train", module)`` is ignored."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
