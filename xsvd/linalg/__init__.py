"""xsvd's linear-algebra core: works on plain NumPy, CuPy and Dask arrays.

Never imports xarray or pint (a test checks it).
"""

from __future__ import annotations

from .._missing import InfiniteValueError
from ._common import Decomposition, MissingValueError, fix_signs
from .exact import exact_svd
from .randomized import (
    DEFAULT_KRYLOV,
    DEFAULT_MAX_PASSES,
    DEFAULT_N_OVERSAMPLES,
    DEFAULT_N_POWER_ITER,
    randomized_svd,
)

__all__ = [
    "Decomposition",
    "MissingValueError",
    "InfiniteValueError",
    "exact_svd",
    "randomized_svd",
    "fix_signs",
    "DEFAULT_N_POWER_ITER",
    "DEFAULT_N_OVERSAMPLES",
    "DEFAULT_MAX_PASSES",
    "DEFAULT_KRYLOV",
]
