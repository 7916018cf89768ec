"""The one place that tells NumPy, CuPy, Dask and packed arrays apart.

Everything else in xsvd asks this module: "is this lazy?", "which array
module works on it (or on its chunks)?", "give me random numbers on that
backend", "put this vector where those data are". No other module tests the
type of an array or imports CuPy. CuPy and Dask are imported lazily, so
importing xsvd never needs either (dask is a core dependency but is still only
imported where used).

Array modules are found by ``array_api_compat.array_namespace``: NumPy and
CuPy are named by their own modules (:func:`namespace`), and every array
module gets its array-API namespace (:func:`api`, the one the core's kernels
use), so NumPy, CuPy and any conforming library (array-api-strict's second
device in the tests) run the same code. Data leave or enter a device in one
place only, :func:`transfer`, which counts every move (:data:`TRANSFERS`).

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
import functools
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
    "api",
    "is_numpy",
    "device",
    "maybe_any",
    "astype",
    "reshape",
    "column_sumsq",
    "column_magnitudes",
    "float64_exact",
    "flushes_subnormals",
    "to_dtype",
    "numpy_dtype",
    "array_module",
    "transfer",
    "TRANSFERS",
    "Transfers",
    "to_scalar",
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
    return float(numpy_dtype(x.dtype).itemsize)


def _api_of(meta):
    """The array-API namespace of an in-memory array (array_api_compat's wrappers for NumPy
    and CuPy); NumPy's for Python and NumPy scalars."""
    import array_api_compat

    try:
        return array_api_compat.array_namespace(meta)
    except TypeError:
        return array_api_compat.array_namespace(np.asarray(meta))


def _storage(x: Any) -> Any:
    meta = chunk_type(x)
    return meta.data if is_packed(meta) else meta


def namespace(x: Any):
    """The array module that operates on ``x`` or on its chunks: ``numpy`` or ``cupy``
    themselves, or the array-API namespace of any other library."""
    import array_api_compat

    xp = _api_of(_storage(x))
    if array_api_compat.is_numpy_namespace(xp):
        return np
    if array_api_compat.is_cupy_namespace(xp):
        import cupy

        return cupy
    return xp


def api(x: Any):
    """The array-API namespace of ``x`` (or of its chunks): what the core's kernels use."""
    return _api_of(_storage(x))


def device(x: Any) -> Any:
    """The device of ``x`` (of its storage, for packed data), for creation functions."""
    import array_api_compat

    return array_api_compat.device(_storage(x))


def maybe_any(x) -> bool:
    """Whether any value of the boolean array ``x`` is true, where finding out costs
    nothing (NumPy); True (assume so) where it would take a transfer from a device."""
    if isinstance(x, np.ndarray | np.generic):
        return bool(x.any())
    return True


def column_sumsq(x):
    """Per column, the sum of squares of a 2-D array, in its dtype: one sweep, no
    temporary (``einsum`` on NumPy; on CuPy a fused reduction kernel, as its ``einsum``
    runs as a batched matrix product, most of a first pass's time; the standard's
    ``vecdot`` elsewhere)."""
    if isinstance(x, np.ndarray):
        return np.einsum("ij,ij->j", x, x)
    if is_cupy(x):
        return _cupy_sumsq()(x, axis=0)
    return api(x).vecdot(x, x, axis=-2)


@functools.cache
def _cupy_sumsq():
    import cupy

    return cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "xsvd_sumsq")


#: Bits of a float32 below the smallest normal magnitude (subnormal values and zero).
_F32_NORMAL_BITS = 0x00800000


def flushes_subnormals(x) -> bool:
    """Whether arithmetic and conversions of float32 ``x`` flush subnormal values to zero
    (CuPy compiles its kernels with ``-ftz=true``; cuBLAS and cuSOLVER flush them too)."""
    return is_cupy(x) and x.dtype == np.float32


def float64_exact(x):
    """``x`` in float64, every value kept: where the device flushes float32 subnormal
    values (:func:`flushes_subnormals`), they are read from their bits (integer
    arithmetic and float64, which do not flush). Dask: block by block."""
    if is_dask(x):
        return x.map_blocks(float64_exact, dtype=np.float64)
    if flushes_subnormals(x):
        return float64_from_bits(x)
    return astype(x, np.float64)


def float64_from_bits(x):
    """Float32 ``x`` (NumPy or CuPy) in float64 by its bits: subnormal magnitudes are
    ``mantissa * 2**-149`` (exact), normal ones converted as usual."""
    xp = namespace(x)
    bits = x.view(xp.int32)
    mag = bits & 0x7FFFFFFF
    tiny = mag.astype(xp.float64) * 2.0**-149
    tiny = xp.where(bits < 0, -tiny, tiny)
    return xp.where(mag < _F32_NORMAL_BITS, tiny, x.astype(xp.float64))


def column_magnitudes(x):
    """Per column, the largest magnitude of 2-D ``x`` in float64, NaN (missing) left out,
    subnormal float32 values included where the device flushes them (the largest of the
    magnitudes' bits, an integer maximum: for float32 their order is the values')."""
    if flushes_subnormals(x):
        xp = namespace(x)
        bits = x.view(xp.int32) & 0x7FFFFFFF
        bits = xp.where(bits > 0x7F800000, 0, bits)  # NaN left out (inf is 0x7F800000)
        return float64_from_bits(xp.max(bits, axis=0).view(xp.float32))
    xp = api(x)
    x = xp.astype(x, xp.float64, copy=False)
    x = xp.where(xp.isnan(x), 0.0, x)
    return xp.maximum(xp.max(x, axis=0), -xp.min(x, axis=0))


def astype(x, dtype, copy: bool = True):
    """``x`` in ``dtype`` (a NumPy dtype or its name), for any array: NumPy, CuPy, Dask or
    another array-API library."""
    if isinstance(x, np.ndarray | np.generic) or is_cupy(x) or is_dask(x):
        return x.astype(numpy_dtype(dtype), copy=copy)
    xp = api(x)
    return xp.astype(x, to_dtype(xp, dtype), copy=copy)


def reshape(x, shape):
    """``x`` reshaped, for any array (a method of NumPy, CuPy and Dask arrays; the
    standard's function for others); ``x`` itself when the shape is its own (packed
    genotypes, which cannot be reshaped, come through as they are)."""
    if tuple(x.shape) == tuple(int(n) for n in shape):
        return x
    if isinstance(x, np.ndarray | np.generic) or is_cupy(x) or is_dask(x) or is_packed(x):
        return x.reshape(shape)
    return api(x).reshape(x, tuple(shape))


def is_numpy(x: Any) -> bool:
    """True for NumPy data (or Dask/packed data over NumPy)."""
    return namespace(x) is np


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a dtype of any array library (array-API dtypes by name)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        name = str(dtype).rsplit(".", 1)[-1]
        return np.dtype(name)


def to_dtype(xp, dtype):
    """The dtype of namespace ``xp`` named like ``dtype`` (a NumPy dtype or its name)."""
    name = numpy_dtype(dtype).name
    return getattr(xp, name, None) or np.dtype(name)  # dask.array names none


def array_module(x: Any):
    """The module whose functions take ``x`` whole: ``dask.array``, ``cupy`` or ``numpy``."""
    if is_dask(x):
        import dask.array as da

        return da
    return namespace(x)  # numpy, cupy, or another library's array-API namespace


def where(condition, x, y):
    """``where`` on whatever backend the arguments live (lazy if any of them is Dask)."""
    for arg in (condition, x, y):
        if is_dask(arg):
            import dask.array as da

            return da.where(condition, x, y)
    for arg in (condition, x, y):
        if hasattr(arg, "shape") and not isinstance(arg, np.ndarray | np.generic):
            return api(arg).where(condition, x, y)
    return np.where(condition, x, y)


def on_backend_of(vector, like):
    """A small host array moved to the memory of ``like`` (the device it or its chunks are on)."""
    return transfer(vector, like)


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


class Transfers:
    """Counts of the moves between host and device memory made by :func:`transfer`.

    ``log`` holds ``(direction, values)`` for every move (``"to_host"`` or
    ``"to_device"``); tests reset it and look at it (``backend.TRANSFERS``).
    """

    def __init__(self):
        self.log: list[tuple[str, int]] = []

    def reset(self) -> None:
        self.log.clear()

    def count(self, direction: str, larger_than: int = -1) -> int:
        """Moves in ``direction`` of more than ``larger_than`` values."""
        return sum(1 for d, size in self.log if d == direction and size > larger_than)

    def largest(self, direction: str) -> int:
        """The most values of one move in ``direction`` (0 when none)."""
        return max((size for d, size in self.log if d == direction), default=0)


#: Every move between host and device since the last ``reset()``.
TRANSFERS = Transfers()


def _size(x) -> int:
    size = 1
    for s in getattr(x, "shape", ()):
        size *= int(s)
    return size


def transfer(x: Any, like: Any = None) -> Any:
    """``x`` moved to the memory of ``like`` (None: to the host, as NumPy): the only place
    where data leave or enter a device, so that every move is counted (:data:`TRANSFERS`).

    NumPy to NumPy is no move (``np.asarray``, nothing counted).
    """
    import array_api_compat

    if like is None:  # to the host
        if is_cupy(x):
            TRANSFERS.log.append(("to_host", _size(x)))
            return x.get()
        if isinstance(x, np.ndarray | np.generic | float | int | bool | list | tuple):
            return np.asarray(x)
        xp = _api_of(x)
        if array_api_compat.is_numpy_namespace(xp):
            return np.asarray(x)
        TRANSFERS.log.append(("to_host", _size(x)))
        host = xp.__array_namespace_info__().default_device()
        return np.asarray(array_api_compat.to_device(x, host))
    target = api(like)
    if array_api_compat.is_numpy_namespace(target):
        return np.asarray(x) if not is_packed(x) else x
    if array_api_compat.is_cupy_namespace(target):
        TRANSFERS.log.append(("to_device", _size(x)))
        import cupy

        return cupy.asarray(x)
    device = array_api_compat.device(_storage(like))
    if not isinstance(x, np.ndarray | np.generic) and hasattr(x, "shape") and api(x) is target:
        if array_api_compat.device(x) == device:
            return x  # already there
        TRANSFERS.log.append(("to_device", _size(x)))
        return array_api_compat.to_device(x, device)
    TRANSFERS.log.append(("to_device", _size(x)))
    return target.asarray(np.asarray(x), device=device)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of an in-memory array of any library (counted when it leaves a device)."""
    return transfer(x)


def to_scalar(x: Any) -> float:
    """A 0-d (or one-value) array of any library as a Python float, on the host."""
    return float(transfer(x).reshape(()))


def standard_normal(xp, seed: int | None, shape: tuple[int, ...], dtype, like=None) -> Any:
    """Gaussian test matrix for backend ``xp``: the same numbers on every device.

    Drawn on the host by NumPy's Generator (``np.random.default_rng(seed)``,
    in float64, then cast) and moved to the device that holds the data
    (``like``, or CuPy's current device when ``xp`` is CuPy): it has only
    ``thin side x l`` entries, so a seed gives the same matrix on NumPy and
    CuPy, whatever the compute precision.
    """
    z = np.random.default_rng(seed).standard_normal(shape).astype(dtype, copy=False)
    if xp is np:
        return z
    return transfer(z, like if like is not None else xp.empty((0,)))


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
        return b.with_data(transfer(b.data, cupy.empty((0,))))
    return transfer(b, cupy.empty((0,)))


def _block_to_numpy(b):
    if is_packed(b):
        return b.with_data(transfer(b.data))
    return transfer(b)


def to_cupy(x: Any) -> Any:
    """``x`` on the GPU: CuPy data, or a lazy Dask array of CuPy chunks."""
    cupy = require_cupy()
    if is_dask(x):
        meta = _block_to_cupy(chunk_type(x)[(slice(0, 0),) * x.ndim])
        return x.map_blocks(_block_to_cupy, dtype=x.dtype, meta=meta)
    if is_packed(x) or is_cupy(x):
        return _block_to_cupy(x)
    return transfer(x, cupy.empty((0,)))


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
    dtype = numpy_dtype(dtype)
    if dtype == np.float64:
        return np.dtype(np.float64)
    if dtype.kind in "biuf":
        return np.dtype(np.float32)
    if dtype.kind == "c":
        raise TypeError(
            f"xsvd decomposes real data, got dtype {dtype}. For a complex field Z = P + iQ, "
            "decompose its real form R = [[P, -Q], [Q, P]], e.g. "
            "`np.block([[z.real, -z.imag], [z.imag, z.real]])` with 2k components: every "
            "singular value of Z appears twice in R's, with vectors [Re u; Im u] and "
            "[-Im u; Re u] (xsvd.hilbert_eof does this for complex fields made from real "
            "data). `da.real` or `abs(da)` are real, but drop the phase: another matrix."
        )
    raise TypeError(
        f"xsvd needs numeric (integer or real floating-point) data, got dtype {dtype}. "
        "Convert it first, e.g. `da.astype('float64')`."
    )
