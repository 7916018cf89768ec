"""What the genomics functions read of a PCA result, as plain numbers.

Only through the result's public interface (``S``, ``V``,
``explained_variance_ratio``, ``n_samples``, ``feature_dims``), never its
private attributes.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..core import backend

__all__ = ["spectrum", "variant_dim", "host_values"]


def spectrum(res):
    """``(k, n_samples, n_features, S**2 / ||B||**2)`` of a result, plain numbers."""
    from ..labeled.result import SVDResult

    if not isinstance(res, SVDResult):
        raise TypeError(f"Expected an xsvd.SVDResult, got {type(res).__name__}.")
    # k numbers and one count come to the host, wherever the result lives
    ratios = np.asarray(backend.to_numpy(res.explained_variance_ratio.data), dtype=np.float64)
    k = ratios.size
    n = int(res.n_samples)
    first = res.V.isel(component=0).data
    xp = backend.api(first)
    p = int(backend.to_scalar(xp.sum(backend.astype(xp.isfinite(first), first.dtype))))
    return k, n, p, ratios


def variant_dim(res) -> Hashable:
    """The one feature (variant) dimension of a result; an error for several."""
    dims = list(res.feature_dims)
    if len(dims) != 1:
        raise ValueError(
            f"Expected a PCA with one variant dimension; the result's features are {dims}."
        )
    return dims[0]


def host_values(obj) -> np.ndarray:
    """The values of a DataArray in host memory, for files and small host arithmetic:
    computed when lazy, and moved from a device in one counted transfer
    (:func:`xsvd.core.backend.to_numpy`), never element by element."""
    (data,) = backend.compute(obj.data)
    return backend.to_numpy(data)
