"""The one place that tells NumPy, CuPy and Dask arrays apart.

Everything else in xsvd asks this module: "is this lazy?", "which array
namespace do its chunks use?", "give me random numbers on that backend".
CuPy and Dask are imported lazily, so importing xsvd never needs either
(dask is a core dependency but is still only imported where used).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "is_dask",
    "is_cupy",
    "chunk_type",
    "namespace",
    "to_numpy",
    "standard_normal",
    "compute_dtype",
]


def is_dask(x: Any) -> bool:
    """True for a dask array (without importing dask if it is not loaded)."""
    if "dask.array" not in sys.modules:
        return False
    import dask.array as da

    return isinstance(x, da.Array)


def is_cupy(x: Any) -> bool:
    """True for a CuPy array (never imports CuPy)."""
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def chunk_type(x: Any) -> Any:
    """An empty array of the type the data's chunks have (its ``_meta`` for dask)."""
    if is_dask(x):
        return x._meta
    return x


def namespace(x: Any):
    """The array module (numpy or cupy) that operates on ``x`` or on its chunks."""
    meta = chunk_type(x)
    if is_cupy(meta):
        import cupy

        return cupy
    return np


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of an in-memory NumPy or CuPy array."""
    if is_cupy(x):
        return x.get()
    return np.asarray(x)


def standard_normal(xp, seed: int | None, shape: tuple[int, ...], dtype) -> Any:
    """Gaussian test matrix drawn on backend ``xp`` (numpy or cupy).

    The draw is always made in float64 from ``default_rng(seed)`` of that
    backend and then cast, so a given seed gives the same matrix whatever the
    compute precision.
    """
    rng = xp.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=xp.float64).astype(dtype, copy=False)


def compute_dtype(dtype, requested=None) -> np.dtype:
    """Precision for the products with the data.

    Integer, boolean, float16 and float32 inputs are computed in float32, float64
    in float64, unless ``requested`` says otherwise.
    """
    if requested is not None:
        out = np.dtype(requested)
        if out not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {out}.")
        return out
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return np.dtype(np.float64)
    if dtype.kind in "biuf":
        return np.dtype(np.float32)
    raise TypeError(
        f"xsvd needs numeric (integer or real floating-point) data, got dtype {dtype}. "
        "Convert it first, e.g. `da.astype('float64')`."
    )
