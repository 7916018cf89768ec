"""xsvd's array core: the solvers on plain NumPy, CuPy and Dask arrays.

Never imports xarray or pint (a test checks it). The labeled layer
(:mod:`xsvd.labeled`) stacks DataArrays to the (samples x features) matrices
these functions take and labels what they return.
"""

from __future__ import annotations

from .common import Decomposition, fix_signs
from .exact import exact_svd
from .missing import InfiniteValueError, MissingValueError
from .options import (
    DEFAULT_KRYLOV,
    DEFAULT_MAX_PASSES,
    DEFAULT_N_OVERSAMPLES,
    DEFAULT_N_POWER_ITER,
    CompressedOptions,
    Preprocessing,
)
from .randomized import randomized_svd

__all__ = [
    "Decomposition",
    "MissingValueError",
    "InfiniteValueError",
    "exact_svd",
    "randomized_svd",
    "fix_signs",
    "Preprocessing",
    "CompressedOptions",
    "DEFAULT_N_POWER_ITER",
    "DEFAULT_N_OVERSAMPLES",
    "DEFAULT_MAX_PASSES",
    "DEFAULT_KRYLOV",
]
