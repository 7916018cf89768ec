"""The compressed (randomized) SVD: the pass loop and its parts.

:mod:`.solver` is the entry point and glossary; :mod:`.plan` the problem and
the choice of stripes and executor; :mod:`.sample_stripes` and
:mod:`.feature_stripes` one pass per orientation; :mod:`.stripe` reading a
stripe a sub-block at a time; :mod:`.small` the small factorizations and error
estimates; :mod:`.state` what passes hand to each other; :mod:`.executors`
running the steps eagerly or with Dask.
"""

from __future__ import annotations

from .solver import randomized_svd

__all__ = ["randomized_svd"]
