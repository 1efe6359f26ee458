import numpy as np
import pytest

from theorylab.nn.quality import UnderTrainedError, require_trained


def test_require_trained_passes_learned_models_and_fails_under_trained_ones():
    require_trained([0.995, 0.999], 0.99, "accuracy")
    require_trained(2, 8, "smallest depth", above=False)
    with pytest.raises(UnderTrainedError, match="under-trained: accuracy must be >= 0.99"):
        require_trained([0.995, 0.5], 0.99, "accuracy")
    with pytest.raises(AssertionError):  # a failure, not a skip: inf <= inf is refused
        require_trained([np.inf, 4], 8, "smallest depth", above=False)
    with pytest.raises(UnderTrainedError):
        require_trained(np.nan, 0.5, "accuracy")
    with pytest.raises(ValueError, match="no values"):
        require_trained([], 0.5, "accuracy")
