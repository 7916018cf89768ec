"""The compressed (randomized) SVD: the pass loop and its parts.

:mod:`.solver` is the entry point and glossary; :mod:`.plan` the problem and
the choice of stripes and executor; :mod:`.sample_stripes` and
:mod:`.feature_stripes` one pass per orientation; :mod:`.stripe` reading a
stripe a sub-block at a time; :mod:`.small` the small factorizations and error
estimates; :mod:`.state` what passes hand to each other; :mod:`.executors`
running the steps eagerly or with Dask.
"""

from __future__ import annotations

from .solver import (
    DEFAULT_KRYLOV,
    DEFAULT_MAX_PASSES,
    DEFAULT_N_OVERSAMPLES,
    DEFAULT_N_POWER_ITER,
    randomized_svd,
)

__all__ = [
    "randomized_svd",
    "DEFAULT_N_POWER_ITER",
    "DEFAULT_N_OVERSAMPLES",
    "DEFAULT_MAX_PASSES",
    "DEFAULT_KRYLOV",
]
