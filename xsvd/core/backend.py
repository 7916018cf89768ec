"""The one place that tells NumPy, CuPy, Dask and packed arrays apart.

Everything else in xsvd asks this module: "is this lazy?", "which array
module works on it (or on its chunks)?", "give me random numbers on that
backend", "put this vector where those data are". No other module tests the
type of an array or imports CuPy. CuPy and Dask are imported lazily, so
importing xsvd never needs either (dask is a core dependency but is still only
imported where used).

*Packed* arrays hold values in fewer bits than their dtype (xsvd's 2-bit
genotypes, :class:`xsvd.PackedGenotypes`). This module knows them only by a
small protocol, not by their class:

- ``bits_per_value``: bits of storage per value;
- ``data``: the storage, a NumPy or CuPy array;
- ``with_data(storage)``: the same array over other storage (e.g. on the GPU);
- slicing and ``astype(float)`` give plain values, one sub-block at a time.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "is_dask",
    "is_lazy",
    "holds_lazy",
    "is_cupy",
    "is_packed",
    "chunk_type",
    "namespace",
    "array_module",
    "where",
    "on_backend_of",
    "map_blocks",
    "compute",
    "persist",
    "to_numpy",
    "standard_normal",
    "compute_dtype",
    "bytes_per_value",
    "require_cupy",
    "move",
    "to_cupy",
    "to_host",
]


def is_dask(x: Any) -> bool:
    """True for a dask array (without importing dask if it is not loaded)."""
    if "dask.array" not in sys.modules:
        return False
    import dask.array as da

    return isinstance(x, da.Array)


def is_lazy(x: Any) -> bool:
    """True for any Dask collection (array, delayed, ...), without importing dask."""
    if "dask" not in sys.modules:
        return False
    import dask

    return dask.is_dask_collection(x)


def holds_lazy(obj: Any) -> bool:
    """True when ``obj`` is or holds a Dask collection (in lists, tuples, dicts, dataclasses)."""
    if is_lazy(obj):
        return True
    if isinstance(obj, list | tuple):
        return any(holds_lazy(o) for o in obj)
    if isinstance(obj, dict):
        return any(holds_lazy(o) for o in obj.values())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return any(holds_lazy(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return False


def is_cupy(x: Any) -> bool:
    """True for a CuPy array (never imports CuPy)."""
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def chunk_type(x: Any) -> Any:
    """An empty array of the type the data's chunks have (its meta for dask)."""
    if is_dask(x):
        from dask.array.utils import meta_from_array

        return meta_from_array(x)
    return x


def is_packed(x: Any) -> bool:
    """True for packed values (the protocol above), in memory or as the chunks of a dask array."""
    return hasattr(chunk_type(x), "bits_per_value")


def bytes_per_value(x: Any) -> float:
    """Bytes of memory per value of ``x`` (a quarter for 2-bit genotypes)."""
    meta = chunk_type(x)
    if is_packed(meta):
        return meta.bits_per_value / 8
    return float(np.dtype(x.dtype).itemsize)


def namespace(x: Any):
    """The array module (numpy or cupy) that operates on ``x`` or on its chunks."""
    meta = chunk_type(x)
    if is_packed(meta):
        meta = meta.data
    if is_cupy(meta):
        import cupy

        return cupy
    return np


def array_module(x: Any):
    """The module whose functions take ``x`` whole: ``dask.array``, ``cupy`` or ``numpy``."""
    if is_dask(x):
        import dask.array as da

        return da
    return namespace(x)


def where(condition, x, y):
    """``where`` on whatever backend the arguments live (lazy if any of them is Dask)."""
    for arg in (condition, x, y):
        if is_dask(arg):
            import dask.array as da

            return da.where(condition, x, y)
    for arg in (condition, x, y):
        if is_cupy(arg):
            return namespace(arg).where(condition, x, y)
    return np.where(condition, x, y)


def on_backend_of(vector, like):
    """A small NumPy array moved to the memory of ``like`` (GPU when it or its chunks are CuPy)."""
    return namespace(like).asarray(vector)


def row_like(row, x):
    """A ``(1, n)`` row to pass to :func:`map_blocks` with ``x``: chunked like ``x``'s columns
    when ``x`` is Dask, so that each block gets its own part of the row."""
    if is_dask(x):
        import dask.array as da

        return da.from_array(row, chunks=(1, x.chunks[1]))
    return row


def map_blocks(fn: Callable, x, *args, dtype, meta=None):
    """``fn(x, *args)``, block by block for a Dask ``x`` (lazily), at once otherwise."""
    if is_dask(x):
        extra = {} if meta is None else {"meta": meta}
        return x.map_blocks(fn, *args, dtype=dtype, **extra)
    return fn(x, *args)


def compute(*xs, **kwargs):
    """The values of ``xs`` (tuple): Dask collections, wherever they are in ``xs``, computed
    together; everything else as it is."""
    if holds_lazy(xs):
        import dask

        return dask.compute(*xs, **kwargs)
    return xs


def persist(*xs, **kwargs):
    """``xs`` (tuple) with their Dask collections computed and kept in (cluster) memory."""
    if holds_lazy(xs):
        import dask

        return dask.persist(*xs, **kwargs)
    return xs


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of an in-memory NumPy or CuPy array."""
    if is_cupy(x):
        return x.get()
    return np.asarray(x)


def standard_normal(xp, seed: int | None, shape: tuple[int, ...], dtype) -> Any:
    """Gaussian test matrix for backend ``xp`` (numpy or cupy): the same numbers on every device.

    Drawn on the host by NumPy's Generator (``np.random.default_rng(seed)``,
    in float64, then cast) and moved to the device that holds the data: it
    has only ``thin side x l`` entries, so a seed gives the same matrix on
    NumPy and CuPy, whatever the compute precision.
    """
    z = np.random.default_rng(seed).standard_normal(shape).astype(dtype, copy=False)
    return z if xp is np else xp.asarray(z)


# ------------------------------------------------------------------ devices

GPU_EXTRA_HINT = 'install CuPy and cupy-xarray with `pip install "xsvd[gpu]"`'


def require_cupy(what: str = "Using the GPU"):
    """Import CuPy (and cupy-xarray's accessor), or raise an error naming the extra."""
    try:
        import cupy
    except ImportError as exc:
        raise ImportError(f"{what} needs CuPy: {GPU_EXTRA_HINT}.") from exc
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        raise RuntimeError(f"{what} needs a CUDA GPU, and CuPy found none ({exc}).") from exc
    if n < 1:
        raise RuntimeError(f"{what} needs a CUDA GPU, and CuPy found none.")
    return cupy


def _block_to_cupy(b):
    import cupy

    if is_packed(b):
        return b.with_data(cupy.asarray(b.data))
    return cupy.asarray(b)


def _block_to_numpy(b):
    if is_packed(b):
        return b.with_data(to_numpy(b.data))
    return to_numpy(b)


def to_cupy(x: Any) -> Any:
    """``x`` on the GPU: CuPy data, or a lazy Dask array of CuPy chunks."""
    cupy = require_cupy()
    if is_dask(x):
        meta = _block_to_cupy(chunk_type(x)[(slice(0, 0),) * x.ndim])
        return x.map_blocks(_block_to_cupy, dtype=x.dtype, meta=meta)
    if is_packed(x) or is_cupy(x):
        return _block_to_cupy(x)
    return cupy.asarray(x)


def to_host(x: Any) -> Any:
    """``x`` in host memory: NumPy data, or a lazy Dask array of NumPy chunks."""
    if is_dask(x):
        if namespace(x) is np:
            return x
        meta = _block_to_numpy(chunk_type(x)[(slice(0, 0),) * x.ndim])
        return x.map_blocks(_block_to_numpy, dtype=x.dtype, meta=meta)
    return _block_to_numpy(x)


def move(x: Any, device: str | None) -> Any:
    """Move array ``x`` to ``device`` ("gpu", "cpu", or None to leave it where it is)."""
    if device is None:
        return x
    if device == "gpu":
        return to_cupy(x)
    if device == "cpu":
        return to_host(x)
    raise ValueError(f"device must be 'gpu', 'cpu' or None, got {device!r}.")


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
