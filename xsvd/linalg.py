"""The documented import path of the array core's solvers: see :mod:`xsvd.core`.

``xsvd.linalg.randomized_svd``, ``exact_svd`` and ``Decomposition`` work on
plain NumPy, CuPy and Dask arrays; this module only names them.
"""

from __future__ import annotations

from .core import *  # noqa: F403
from .core import __all__  # noqa: F401
