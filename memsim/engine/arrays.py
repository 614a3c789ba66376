"""Array conversions the vectorized kernels share."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def as_float64(x: ArrayLike) -> NDArray[np.float64]:
    """``x`` as a float64 array (no copy when it already is one)."""
    return np.asarray(x, dtype=np.float64)
