"""Zarr store mechanics: stream a store into the solver, write and read Datasets.

- :func:`open_zarr` opens a variable of a Zarr store (local path or URL read
  through fsspec, e.g. ``http://``, ``s3://``, ``gs://``) as a Dask-backed
  DataArray whose chunks are whole multiples of the store's chunks
  (rechunk-on-read: small storage chunks are merged when read, no rechunk in
  the graph), and whose read errors name the store, the variable and the
  chunk.
- :func:`write_store` writes a Dataset atomically for local paths: the store
  is written under a temporary name next to the target and renamed into
  place, so a failure leaves nothing behind. :func:`read_store` opens one,
  with errors that name it. What a result's Dataset holds is
  :class:`xsvd.SVDResult`'s business (``to_dataset`` / ``from_dataset``).

zarr (and fsspec with aiohttp/requests for URLs) are optional: ``pip install
"xsvd[io]"``.
"""

from __future__ import annotations

import math
import os
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from . import _backend
from ._options import OPTIONS

__all__ = ["open_zarr", "StoreReadError", "plan_chunks", "write_store", "read_store"]

#: Dask chunks are made about this large by merging storage chunks.
TARGET_CHUNK_BYTES = 128 * 2**20


class StoreReadError(OSError):
    """A Zarr store or one of its chunks could not be read.

    Raised by :func:`open_zarr` when the store cannot be opened, and at
    compute time when a chunk is missing, corrupt or forbidden. The message
    names the store, the variable and the chunk index, e.g. ``chunk (2, 0) of
    variable 'genotype' in the Zarr store 'http://.../gt.zarr'``, and the
    original error is chained as ``__cause__``. A subclass of :class:`OSError`.
    """


def _require_zarr():
    try:
        import zarr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'Reading and writing Zarr needs the io extra: pip install "xsvd[io]"'
        ) from exc


# --------------------------------------------------------------------- read


def plan_chunks(
    shape: tuple[int, ...],
    storage_chunks: tuple[int, ...],
    itemsize: int,
    target_bytes: int = TARGET_CHUNK_BYTES,
) -> tuple[int, ...]:
    """Dask chunk sizes that are whole multiples of the storage chunks.

    Storage chunks are merged along the last dimensions first (the ones that
    are contiguous on disk) until a chunk reaches about ``target_bytes``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the array.
    storage_chunks : tuple of int
        Chunk shape in the store.
    itemsize : int
        Bytes per element.
    target_bytes : int, default 128 MiB
        Aim for Dask chunks of about this size.

    Returns
    -------
    tuple of int
        One chunk size per dimension, each a whole multiple of the storage
        chunk (or the full length of the dimension).

    Examples
    --------
    >>> plan_chunks((400_000, 10_000), (1_000, 10_000), 1)
    (13000, 10000)
    """
    chunks = list(storage_chunks)
    for axis in reversed(range(len(shape))):
        size = math.prod(chunks) * itemsize
        if size >= target_bytes:
            break
        grow = max(1, int(target_bytes // size))
        chunks[axis] = min(shape[axis], chunks[axis] * grow)
    return tuple(int(c) for c in chunks)


def pick_variable(ds: xr.Dataset, variable: str | None, name: str) -> str:
    """The variable to decompose: ``variable``, or the only one ``ds`` holds."""
    if variable is None:
        if len(ds.data_vars) != 1:
            raise ValueError(
                f"{name!r} holds the variables {list(ds.data_vars)}; choose one "
                "(`variable=`, or --var on the command line)."
            )
        return next(iter(ds.data_vars))
    if variable not in ds.data_vars:
        raise ValueError(f"{name!r} has no variable {variable!r}; it holds {list(ds.data_vars)}.")
    return variable


class _ChunkReader:
    """Array-like for ``da.from_array`` that names the store and chunk on failure.

    Wraps the variable as xarray opened it (lazy, with its decoding): indexing
    by slices and taking ``.values`` reads just those storage chunks.
    """

    def __init__(
        self,
        variable: xr.Variable,
        store: str,
        name: str,
        chunks: tuple[int, ...],
        gpu_array=None,
    ):
        self.array = variable
        # with zarr's GPU buffers: the zarr array itself, whose reads are CuPy arrays
        self.gpu_array = gpu_array
        self.store = store
        self.variable = name
        self.chunks = chunks
        self.shape = tuple(variable.shape)
        self.dtype = np.dtype(variable.dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        try:
            if self.gpu_array is not None:
                return _decode_on_gpu(self.gpu_array[key], self.array.encoding, self.dtype)
            return self.array[key].values
        except Exception as exc:
            where = ", ".join(
                f"{s.start or 0}:{s.stop if s.stop is not None else n}"
                for s, n in zip(key, self.shape, strict=False)
            )
            index = tuple((s.start or 0) // c for s, c in zip(key, self.chunks, strict=False))
            raise StoreReadError(
                f"Could not read chunk {index} (elements [{where}]) of variable "
                f"{self.variable!r} in the Zarr store {self.store!r}: "
                f"{type(exc).__name__}: {exc}. The chunk may be missing or corrupt, or "
                "the store not readable; check the store (e.g. rewrite that chunk)."
            ) from exc


def _zarr_gpu_enabled() -> bool:
    """True when zarr is configured for GPU buffers (``zarr.config.enable_gpu()``)."""
    import zarr

    return "gpu" in str(zarr.config.get("ndbuffer", ""))


def _decode_on_gpu(raw, encoding: dict, dtype):
    """CF decoding xarray would do on the host (fill values, scale, offset), with CuPy."""
    x = raw
    fill = encoding.get("_FillValue")
    scale, offset = encoding.get("scale_factor"), encoding.get("add_offset")
    if np.dtype(dtype).kind == "f":
        x = x.astype(dtype, copy=False)
        if fill is not None and not (isinstance(fill, float) and np.isnan(fill)):
            x = _backend.where(raw == fill, np.nan, x)
    if scale is not None:
        x = x * scale
    if offset is not None:
        x = x + offset
    return x.astype(dtype, copy=False)


def open_zarr(
    store: str | os.PathLike,
    variable: str | None = None,
    *,
    chunks: dict | None = None,
    storage_options: dict | None = None,
) -> xr.DataArray:
    """Open a variable of a Zarr store as a Dask-backed DataArray for streaming.

    Parameters
    ----------
    store : str or path
        A local path or a URL that fsspec can read (``http://...``, ``s3://...``).
    variable : str, optional
        The variable to open; may be omitted when the store has exactly one.
    chunks : dict, optional
        Dask chunk sizes by dimension name. By default they are planned from
        the store's chunks with :func:`plan_chunks` (about 128 MiB each, whole
        multiples of the storage chunks, so each storage chunk is read once).
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Notes
    -----
    With zarr's GPU buffers enabled (``zarr.config.enable_gpu()``, needs
    CuPy), chunks are decompressed into GPU memory and the Dask chunks are
    CuPy arrays, with no round trip through NumPy.

    Returns
    -------
    xarray.DataArray
        Lazy, with the store's coordinates and attributes.

    Raises
    ------
    StoreReadError
        When the store cannot be opened; when a chunk cannot be read, at
        compute time, naming the store, variable and chunk.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> path = tempfile.mkdtemp() + "/gt.zarr"
    >>> xsvd.datasets.genotypes(2_000, 100).to_dataset().to_zarr(path)  # doctest: +ELLIPSIS
    <xarray.backends.zarr.ZarrStore object at ...>
    >>> gt = xsvd.open_zarr(path, "genotype")
    >>> gt.dims, gt.chunks is not None
    (('variants', 'samples'), True)
    """
    _require_zarr()
    name = os.fspath(store)
    try:
        ds = xr.open_zarr(store, chunks=None, storage_options=storage_options)
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the Zarr store {name!r}: {type(exc).__name__}: {exc}. "
            "Check that the path or URL exists and is a Zarr store."
        ) from exc
    variable = pick_variable(ds, variable, name)
    var = ds[variable]
    storage = var.encoding.get("chunks") or var.shape
    if chunks is None:
        plan = plan_chunks(var.shape, tuple(storage), var.dtype.itemsize)
    else:
        plan = tuple(int(chunks.get(d, s)) for d, s in zip(var.dims, storage, strict=True))
    size = math.prod(storage) * var.dtype.itemsize
    if size > OPTIONS["large_storage_chunk_bytes"]:
        warnings.warn(
            f"The store's chunks of {variable!r} hold {size / 2**20:.0f} MiB each, and every "
            "task reads at least one whole chunk: memory per worker thread is at least "
            "that. Rewrite the store with smaller chunks (e.g. `ds.chunk(...).to_zarr(...)`) "
            "for streaming with little memory.",
            UserWarning,
            stacklevel=2,
        )
    import dask.array as da

    gpu_array, meta = None, None
    if _zarr_gpu_enabled():
        # zarr decompresses into GPU memory: read with zarr itself, so chunks are
        # CuPy arrays from the start (xarray's reader would turn them into NumPy)
        import zarr

        cupy = _backend.require_cupy("Reading Zarr into GPU memory")
        group = zarr.open_group(store, mode="r", storage_options=storage_options)
        gpu_array = group[variable]
        meta = cupy.empty((0,) * var.ndim, dtype=var.dtype)
    reader = _ChunkReader(var.variable, name, variable, tuple(storage), gpu_array)
    data = da.from_array(
        reader,
        chunks=plan,
        name=f"xsvd-zarr-{variable}-{uuid.uuid4().hex[:8]}",
        asarray=False,
        meta=meta,
    )
    out = xr.DataArray(data, dims=var.dims, coords=var.coords, name=variable, attrs=var.attrs)
    return out.assign_coords({k: v.load() for k, v in out.coords.items()})


# -------------------------------------------------------------------- write


def write_store(ds: xr.Dataset, path: str | os.PathLike, *, mode: str = "w-") -> None:
    """Write a Dataset to a Zarr store, atomically for local paths.

    ``mode="w-"`` refuses an existing path, ``mode="w"`` replaces it. A local
    store is written under a temporary name next to ``path`` and renamed into
    place, so a failure leaves nothing behind.
    """
    _require_zarr()
    if mode not in ("w-", "w"):
        raise ValueError(f"mode must be 'w-' (fail if the path exists) or 'w', got {mode!r}.")
    text = os.fspath(path)
    if "://" in text:
        ds.to_zarr(text, mode=mode)
        return
    target = Path(text)
    if target.exists() and mode == "w-":
        raise FileExistsError(
            f"{text!r} already exists; pass mode='w' to overwrite it, or choose another path."
        )
    tmp = target.with_name(f".{target.name}.xsvd-tmp-{uuid.uuid4().hex[:8]}")
    try:
        ds.to_zarr(tmp, mode="w-")
        if target.exists():
            old = target.with_name(f".{target.name}.xsvd-old-{uuid.uuid4().hex[:8]}")
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_store(path: str | os.PathLike, *, storage_options: dict | None = None) -> xr.Dataset:
    """Open a Zarr store as a Dataset (lazily), or raise :class:`StoreReadError` naming it."""
    _require_zarr()
    try:
        return xr.open_zarr(path, storage_options=storage_options)
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the store {os.fspath(path)!r}: {type(exc).__name__}: {exc}."
        ) from exc
