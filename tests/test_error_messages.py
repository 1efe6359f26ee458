"""Error messages show numbers plainly: ``1.1``, not numpy 2's ``np.float64(1.1)``."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab._fmt import plain
from theorylab.languages.topic import TopicModel


def test_plain_formats_numpy_scalars_as_python_numbers():
    assert plain(np.float64(1.1)) == "1.1" and plain(np.int64(3)) == "3" and plain(np.bool_(True)) == "True"
    assert plain(np.asarray(2.5)) == "2.5" and plain(np.array([1.0, 2.0])) == "[1., 2.]"
    assert plain("3") == "'3'" and plain(3) == "3" and plain(None) == "None"


def test_a_library_error_with_a_numpy_float():
    with pytest.raises(ValueError) as info:
        TopicModel(3, 2, 1, p_m=np.float64(1.1))
    assert "got 1.1" in str(info.value) and "np.float64" not in str(info.value)
