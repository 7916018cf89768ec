"""Genotypes packed four to a byte, as a read-only duck array.

The code is PLINK 1's ``.bed`` code, so a ``.bed`` file's bytes are used as
they are: each row (a variant) holds its samples two bits each, the first
sample in the lowest two bits of the first byte, and

====  ===========================  ==========================
bits  PLINK meaning                value (count of allele 1)
====  ===========================  ==========================
00    homozygous for allele 1      2
01    missing                      NaN
10    heterozygous                 1
11    homozygous for allele 2      0
====  ===========================  ==========================

:class:`PackedGenotypes` looks like a float32 (rows x samples) array with NaN
for missing calls, but holds only the bytes (NumPy, CuPy or any array-API
library: the lookups use the standard's ``take`` there). xsvd's solvers
turn one small sub-block at a time into floats, inside the products
(:meth:`PackedGenotypes.block`). Anything else that NumPy or CuPy is asked to
do with it (``np.asarray``, ufuncs, reductions) sees the unpacked values, so
it is always correct, only not packed any more.

Pure arrays: no xarray here.
"""

from __future__ import annotations

import numpy as np

from . import backend
from .missing import GENOTYPES

__all__ = ["PackedGenotypes", "pack"]

#: value of each 2-bit code (index = code)
_CODE_VALUE = np.array([2.0, np.nan, 1.0, 0.0], dtype=np.float32)
#: per byte: the values of its four genotypes, first genotype first
_BYTE_VALUES = _CODE_VALUE[(np.arange(256)[:, None] >> (2 * np.arange(4))) & 3]
_BYTE_SUM = np.nansum(_BYTE_VALUES, axis=1).astype(np.float64)  # sum of called values
_BYTE_SUMSQ = np.nansum(_BYTE_VALUES**2, axis=1).astype(np.float64)
_BYTE_CALLED = (~np.isnan(_BYTE_VALUES)).sum(axis=1).astype(np.int64)

_tables: dict = {}


def _table(xp, name: str, dtype=None, like=None):
    """Lookup tables on the data's backend (copied to the GPU once); ``like``: an array on the
    device they go to (for array-API libraries with several devices)."""
    where = None if like is None or xp is np else str(backend.device(like))
    key = (xp.__name__, where, name, None if dtype is None else np.dtype(dtype).str)
    if key not in _tables:
        host = {
            "values": _BYTE_VALUES,
            "sum": _BYTE_SUM,
            "sumsq": _BYTE_SUMSQ,
            "called": _BYTE_CALLED,
        }[name]
        if dtype is not None:
            host = host.astype(dtype)
        _tables[key] = xp.asarray(host) if like is None else backend.on_backend_of(host, like)
    return _tables[key]


def _lookup(name: str, raw, dtype=None):
    """``table[raw]``: per byte of ``raw`` its row of the lookup table ``name``, on the bytes'
    backend (NumPy and CuPy take 2-D indices, an order of magnitude faster than fancy
    indexing; other array-API libraries the standard's 1-D ``take``)."""
    if isinstance(raw, np.ndarray) or backend.is_cupy(raw):
        xp = backend.namespace(raw)
        return xp.take(_table(xp, name, dtype), raw, axis=0)
    xp = backend.api(raw)
    table = _table(xp, name, dtype, like=raw)
    flat = xp.take(table, xp.reshape(raw, (-1,)), axis=0)
    return xp.reshape(flat, (*raw.shape, *table.shape[1:]))


def pack(values):
    """Pack 0/1/2 genotype values (NaN or negative = missing) along the last axis.

    Parameters
    ----------
    values : array (rows, n)
        Integer or float, of any array-API library (the bytes stay on its
        device). Values other than 0, 1, 2 and missing are an error.

    Returns
    -------
    PackedGenotypes
    """
    xp = backend.api(values)
    v = xp.asarray(values)
    if v.ndim != 2:
        raise ValueError(f"Packing needs a 2-D (variants x samples) array, got {v.ndim}-D.")
    rows, n = v.shape
    vf = backend.astype(v, np.float32, copy=False)
    missing = GENOTYPES.mask(xp, vf)
    ok = missing | (vf == 0) | (vf == 1) | (vf == 2)
    if not bool(xp.all(ok)):
        bad = backend.to_numpy(vf[~ok][:5])
        raise ValueError(
            "Only genotype values 0, 1 and 2 (allele counts of a diploid call), NaN or "
            f"negative values (missing) can be packed to 2 bits; found {bad.tolist()}. "
            "Round dosages first (e.g. `da.round()`), or leave the data unpacked."
        )
    code = sum(
        c * backend.astype(m, np.uint8) for c, m in ((1, missing), (2, vf == 1), (3, vf == 0))
    )
    if n % 4:  # padding: 00, as PLINK writes it
        pad = xp.zeros((rows, 4 - n % 4), dtype=code.dtype, device=backend.device(code))
        code = xp.concat([code, pad], axis=1)
    packed = code[:, 0::4] | (code[:, 1::4] << 2) | (code[:, 2::4] << 4) | (code[:, 3::4] << 6)
    return PackedGenotypes(packed, n)


class PackedGenotypes(np.lib.mixins.NDArrayOperatorsMixin):
    """A float32 ``(rows, n)`` array of genotypes stored in 2 bits each.

    Parameters
    ----------
    data : uint8 array (rows, bytes)
        NumPy, CuPy or any array-API library's; each row packs its ``n`` genotypes starting at
        genotype ``offset`` of its first byte.
    n : int
        Genotypes per row.
    offset : int
        Genotypes to skip in the first byte (0-3); slicing sets it.
    transposed : bool
        Present the array as ``(n, rows)`` (a view, nothing is copied).
    """

    __array_priority__ = 20
    dtype = np.dtype(np.float32)
    ndim = 2
    #: bits of storage per value (the packed-array protocol of ``xsvd.core.backend``)
    bits_per_value = 2

    def __init__(self, data, n: int, offset: int = 0, transposed: bool = False):
        if backend.numpy_dtype(data.dtype) != np.uint8 or data.ndim != 2:
            raise TypeError("PackedGenotypes needs a 2-D uint8 array of packed bytes.")
        if not 0 <= offset < 4:
            raise ValueError("offset must be 0, 1, 2 or 3.")
        if data.shape[1] * 4 < offset + n:
            raise ValueError(f"{data.shape[1]} bytes per row cannot hold {n} genotypes.")
        self.data = data
        self.n = int(n)
        self.offset = int(offset)
        self.transposed = bool(transposed)

    # ------------------------------------------------------------- array-like
    @property
    def base_shape(self) -> tuple[int, int]:
        return (self.data.shape[0], self.n)

    @property
    def shape(self) -> tuple[int, int]:
        return self.base_shape[::-1] if self.transposed else self.base_shape

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes actually held (the packed bytes)."""
        return int(self.data.nbytes)

    @property
    def xp(self):
        return backend.namespace(self.data)

    def with_data(self, data) -> PackedGenotypes:
        """The same genotypes over other storage (e.g. the bytes moved to the GPU)."""
        return PackedGenotypes(data, self.n, self.offset, self.transposed)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        where = "device" if self.xp is not np else "host"
        return (
            f"PackedGenotypes(shape={self.shape}, 2 bits per genotype, "
            f"{self.nbytes} bytes in {where} memory)"
        )

    @property
    def T(self) -> PackedGenotypes:
        return PackedGenotypes(self.data, self.n, self.offset, not self.transposed)

    def transpose(self, *axes) -> PackedGenotypes:
        if len(axes) == 1 and axes[0] is not None and not isinstance(axes[0], int):
            axes = tuple(axes[0])
        if axes in ((), (None,), (1, 0), (-1, -2), (1, -2), (-1, 0)):
            return self.T
        if axes in ((0, 1), (-2, -1), (0, -1), (-2, 1)):
            return self
        raise ValueError(f"invalid axes {axes} for a 2-D array")

    # ------------------------------------------------------------- unpacking
    def block(self, rows: tuple[int, int], cols: tuple[int, int], dtype=np.float32):
        """Float values of ``[rows[0]:rows[1], cols[0]:cols[1]]`` (in this array's orientation)."""
        if self.transposed:
            return self._base_block(cols, rows, dtype).T
        return self._base_block(rows, cols, dtype)

    def _base_block(self, rows, cols, dtype):
        r0, r1 = rows
        s, e = self.offset + cols[0], self.offset + cols[1]
        b0, b1 = s // 4, (e + 3) // 4
        values = _lookup("values", self.data[r0:r1, b0:b1], dtype)  # (r, bytes, 4)
        values = backend.reshape(values, (r1 - r0, (b1 - b0) * 4))
        return values[:, s - 4 * b0 : e - 4 * b0]

    def unpack(self, dtype=np.float32):
        """All values as a float array on the data's backend (NaN = missing).

        A transposed view unpacks to a transposed (Fortran-ordered) array,
        which BLAS multiplies without a copy.
        """
        return self.block((0, self.shape[0]), (0, self.shape[1]), dtype)

    def astype(self, dtype, copy: bool = True):
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return self.unpack(dtype)
        return backend.astype(self.unpack(), dtype)

    def called_stats(self):
        """Per row of the packed data (variant): sum, sum of squares and count of called values.

        Computed on the bytes through lookup tables (nothing is unpacked but
        the at most two partial bytes at the ends of each row).
        """
        xp = backend.api(self.data)
        s, e = self.offset, self.offset + self.n
        full0, full1 = (s + 3) // 4, e // 4
        parts = []  # (sums, sums of squares, counts) of the whole bytes, then of the edges
        if full1 > full0:
            raw = self.data[:, full0:full1]
            parts.append([xp.sum(_lookup(t, raw), axis=1) for t in ("sum", "sumsq", "called")])
        edges = [(s, min(e, 4 * full0))] if full1 > full0 else [(s, e)]
        if full1 > full0 and e > 4 * full1:
            edges.append((4 * full1, e))
        for a, b in edges:
            if b > a:
                v = self._base_block((0, self.data.shape[0]), (a - s, b - s), np.float64)
                ok = ~xp.isnan(v)
                v = xp.where(ok, v, 0.0)
                count = xp.sum(backend.astype(ok, np.int64), axis=1)
                parts.append([xp.sum(v, axis=1), xp.sum(v * v, axis=1), count])
        if not parts:
            zero = xp.zeros(self.data.shape[0], dtype=xp.float64, device=backend.device(self.data))
            return zero, zero, backend.astype(zero, np.int64)
        return tuple(sum(column[1:], column[0]) for column in zip(*parts, strict=True))

    # ------------------------------------------------------------- indexing
    def __getitem__(self, key):
        norm = _normalize_key(key)
        if norm is None:
            return self.unpack()[key]
        key = norm
        kr, kc = key if not self.transposed else key[::-1]
        # integers drop a dimension: the result is plain values
        if _is_int(kr) or _is_int(kc):
            out = self._base_plain()[kr, kc]
            return out
        if not (isinstance(kc, slice) and kc.step in (None, 1)):
            out = self._base_plain()[:, kc][kr]
            return out.T if self.transposed else out
        start, stop, _ = kc.indices(self.n)
        stop = max(stop, start)
        s, e = self.offset + start, self.offset + stop
        b0, b1 = s // 4, max((e + 3) // 4, s // 4)
        data = self.data[kr, b0:b1] if isinstance(kr, slice) else _rows(self.data, kr)[:, b0:b1]
        return PackedGenotypes(data, stop - start, s - 4 * b0, self.transposed)

    def _base_plain(self):
        return self._base_block((0, self.data.shape[0]), (0, self.n), np.float32)

    # -------------------------------------------------- NumPy / CuPy protocol
    def __array__(self, dtype=None, copy=None):
        out = backend.to_numpy(self.unpack())
        return out if dtype is None else out.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.transpose:
            axes = kwargs.get("axes", args[1] if len(args) > 1 else None)
            return args[0].transpose(axes)
        if func is np.concatenate:
            joined = _concatenate_packed(*args, **kwargs)
            if joined is not None:
                return joined
        if func is np.shape:
            return args[0].shape
        if func is np.ndim:
            return 2
        return func(*_plain(args), **_plain(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __cupy_get_ndarray__(self):  # CuPy's hook for foreign arrays
        return self.unpack()


def _concatenate_packed(arrays, axis=0, **kwargs):
    """Packed blocks stacked along their rows (variants) stay packed; None otherwise."""
    arrays = list(arrays)
    if kwargs.get("out") is not None or not arrays:
        return None
    first = arrays[0]
    if not all(isinstance(a, PackedGenotypes) for a in arrays):
        return None
    if any(
        (a.n, a.offset, a.transposed) != (first.n, first.offset, first.transposed) for a in arrays
    ):
        return None
    base_axis = (axis % 2) if not first.transposed else 1 - (axis % 2)
    if base_axis != 0:
        return None
    data = backend.api(first.data).concat([a.data for a in arrays], axis=0)
    return PackedGenotypes(data, first.n, first.offset, first.transposed)


def _rows(data, key):
    """Rows ``key`` (positions or a mask) of the bytes: host keys go to the bytes' device
    (counted) for array-API libraries, whose arrays take no NumPy index arrays."""
    if isinstance(data, np.ndarray) or backend.is_cupy(data) or not backend.is_numpy(key):
        return data[key]
    key = np.asarray(key)
    key = np.flatnonzero(key) if key.dtype == bool else key.astype(np.int64)
    return backend.api(data).take(data, backend.transfer(key, like=data), axis=0)


def _plain(obj):
    """Replace PackedGenotypes anywhere in args/kwargs by their unpacked values."""
    if isinstance(obj, PackedGenotypes):
        return obj.unpack()
    if isinstance(obj, tuple | list):
        return type(obj)(_plain(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def _is_int(k) -> bool:
    return isinstance(k, int | np.integer)


def _normalize_key(key):
    """A 2-tuple of per-axis indices, or None when the key needs plain values."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key) or sum(k is Ellipsis for k in key) > 1:
        return None
    if Ellipsis in [k for k in key if not hasattr(k, "shape")]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = (slice(None),) * (2 - (len(key) - 1))
        key = key[:i] + fill + key[i + 1 :]
    if len(key) == 1:
        key = (key[0], slice(None))
    if len(key) != 2:
        raise IndexError(f"too many indices for a 2-D array: {key}")
    return key
