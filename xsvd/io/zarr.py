"""Streaming a variable of a Zarr store into the solver.

:func:`open_zarr` opens a variable of a Zarr store (local path or URL read
through fsspec, e.g. ``http://``, ``s3://``, ``gs://``) as a Dask-backed
DataArray whose chunks are the store's chunks, or whole multiples of them
where they are too small (:func:`plan_chunks`: storage chunks under 16 MiB
are merged when read, no rechunk in the graph), and whose read errors name
the store, the variable and the chunk. Storage chunks missing from the
store (which zarr would read as the fill value) are found when the store is
opened and reported (``missing_chunks=``). With zarr's GPU buffers, chunks are read into GPU
memory and decoded there by :func:`decode_chunk`, by the same CF rules
xarray applies on the host.
"""

from __future__ import annotations

import contextlib
import math
import os
import uuid
import warnings
from collections.abc import Mapping
from typing import Literal, get_args

import numpy as np
import xarray as xr

from ..core import backend
from ..core.config import OPTIONS
from .contents import listed
from .errors import MissingChunksWarning, StoreReadError, require_zarr

__all__ = [
    "TARGET_CHUNK_BYTES",
    "plan_chunks",
    "pick_variable",
    "open_zarr",
    "open_zarr_dataset",
    "decode_chunk",
    "ChunkReader",
    "find_missing_chunks",
    "check_chunks",
    "zarr_array",
    "zarr_gpu_enabled",
]

#: Storage chunks smaller than this are merged on read into Dask chunks of at
#: most this size; larger ones are kept as they are (see :func:`plan_chunks`).
TARGET_CHUNK_BYTES = 16 * 2**20
#: What :func:`open_zarr` does when storage chunks are missing (``missing_chunks=``).
MissingChunks = Literal["warn", "error", "ignore"]


def plan_chunks(
    shape: tuple[int, ...],
    storage_chunks: tuple[int, ...],
    itemsize: int,
    target_bytes: int = TARGET_CHUNK_BYTES,
    *,
    threads: int = 1,
) -> tuple[int, ...]:
    """Dask chunk sizes: the storage chunks, merged only where they are too small.

    The rule: a planned chunk is never larger than it needs to be.

    - Storage chunks are never split (each is read once per pass).
    - Storage chunks of ``target_bytes`` (16 MiB) or more are kept as they
      are. Merging them would only raise the memory every worker thread
      holds (a thread reads a whole Dask chunk at once), and take away
      chunks to run in parallel, for no gain: at that size the cost of a
      task (scheduling, a zarr read, a product) is already small beside its
      work.
    - Smaller storage chunks are merged, whole, into Dask chunks of at most
      ``target_bytes``, and never into fewer Dask chunks than ``threads``
      (each chunk at most the array's size over ``threads``, or one storage
      chunk): merging saves per-task costs without leaving a thread idle.
      They grow along the last dimensions first (contiguous on disk, the
      features of data stored time-first): a dimension is taken whole when
      it fits, else in equal runs of storage chunks.

    So a planned chunk holds at most ``max(storage chunk, target_bytes)``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the array.
    storage_chunks : tuple of int
        Chunk shape in the store.
    itemsize : int
        Bytes per element.
    target_bytes : int, default 16 MiB
        Storage chunks below this size are merged, up to this size.
    threads : int, default 1
        Threads that read the chunks (:func:`open_zarr` passes the number of
        CPUs): merging never leaves fewer chunks than this.

    Returns
    -------
    tuple of int
        One chunk size per dimension, each a whole multiple of the storage
        chunk (or the full length of the dimension).

    Examples
    --------
    Storage chunks of 16 MiB or more are kept (250 time steps of a 90 x 180
    float32 grid, 15.4 MiB, are not merged into 500):

    >>> plan_chunks((3_000, 90, 180), (250, 90, 180), 4)
    (250, 90, 180)

    One time step per storage chunk (63 KiB) is merged into 250 steps:

    >>> plan_chunks((3_000, 90, 180), (1, 90, 180), 4)
    (250, 90, 180)
    """
    chunks = [max(1, min(int(c), int(n))) for c, n in zip(storage_chunks, shape, strict=True)]
    if 0 in shape:
        return tuple(chunks)
    stored = math.prod(chunks) * itemsize
    share = -(-math.prod(shape) * itemsize // max(1, threads))  # the array over the threads
    limit = min(target_bytes, max(stored, share))
    for axis in reversed(range(len(shape))):
        size = math.prod(chunks) * itemsize
        if size // chunks[axis] * shape[axis] <= limit:
            chunks[axis] = int(shape[axis])  # the whole dimension fits: grow the next one
            continue
        factor = limit // size  # storage chunks along this axis that fit in a Dask chunk
        if factor < 2:
            break
        along = math.ceil(shape[axis] / chunks[axis])
        runs = math.ceil(along / factor)  # as few Dask chunks as fit, of equal runs
        chunks[axis] *= math.ceil(along / runs)
        break
    return tuple(chunks)


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


def decode_chunk(raw, encoding: Mapping, dtype):
    """CF decoding of one chunk as stored, by xarray's rules, on NumPy or CuPy arrays.

    What ``xr.open_zarr`` does on the host (``xarray.coding.variables``:
    ``CFMaskCoder`` then ``CFScaleOffsetCoder``), written with operations that
    CuPy arrays have too (xarray's mask step converts to NumPy):

    - ``_Unsigned``: ``"true"`` reads signed integers as unsigned ones of the
      same width (and ``_FillValue`` with them), ``"false"`` the reverse;
    - ``_FillValue`` and ``missing_value`` (one value or several) become NaN;
    - ``scale_factor`` and ``add_offset``, applied in the decoded dtype.

    Parameters
    ----------
    raw : numpy.ndarray or cupy.ndarray
        The chunk as stored (zarr's read of the array).
    encoding : mapping
        The variable's ``encoding`` as xarray opened it (raw ``_FillValue``,
        ``missing_value``, ``_Unsigned``, ``scale_factor``, ``add_offset``).
    dtype : numpy.dtype
        The decoded dtype (the dtype of the variable xarray opened).
    """
    xp = backend.namespace(raw)
    dtype = np.dtype(dtype)
    values = {k: np.ravel(encoding.get(k, [])).tolist() for k in ("_FillValue", "missing_value")}
    fills = [v for v in values["missing_value"] + values["_FillValue"] if v == v]  # not NaN
    fills = list(dict.fromkeys(fills))
    x = raw
    kind = {"true": "u", "false": "i"}.get(str(encoding.get("_Unsigned", "")).lower())
    if kind is not None and x.dtype.kind in "iu" and x.dtype.kind != kind:
        to = np.dtype(f"{kind}{x.dtype.itemsize}")
        x = x.view(to)
        for fill in values["_FillValue"]:  # missing_value is compared as it is (as xarray does)
            if fill in fills:
                fills[fills.index(fill)] = np.array(fill, dtype=raw.dtype).view(to).item()
    x = x.astype(dtype)
    if fills:  # compared in the decoded dtype, as xarray does
        mask = x == fills[0]
        for fv in fills[1:]:
            mask |= x == fv
        x = xp.where(mask, dtype.type(np.nan), x)
    scale, offset = encoding.get("scale_factor"), encoding.get("add_offset")
    if scale is not None:
        x = (x * scale).astype(dtype)
    if offset is not None:
        x = (x + offset).astype(dtype)
    return x


class ChunkReader:
    """Array-like for ``da.from_array`` that names the store and chunk on failure.

    Reads through ``variable`` as xarray opened it (lazy, with its decoding:
    indexing by slices and taking ``.values`` reads just those storage
    chunks), or, given ``raw`` (a zarr array, e.g. with GPU buffers), reads
    the stored values from it and decodes them with :func:`decode_chunk`.
    """

    def __init__(
        self, variable: xr.Variable, store: str, name: str, chunks: tuple[int, ...], raw=None
    ):
        self.array = variable
        self.raw = raw
        self.store = store
        self.variable = name
        self.chunks = chunks
        self.shape = tuple(variable.shape)
        self.dtype = np.dtype(variable.dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        try:
            if self.raw is not None:
                return decode_chunk(self.raw[key], self.array.encoding, self.dtype)
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


def open_zarr(
    store: str | os.PathLike,
    variable: str | None = None,
    *,
    chunks: dict | None = None,
    storage_options: dict | None = None,
    missing_chunks: MissingChunks = "warn",
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
        the store's chunks with :func:`plan_chunks`: the storage chunks as
        they are, or, where they hold less than 16 MiB, whole multiples of
        them up to 16 MiB (and no fewer chunks than CPUs), so each storage
        chunk is read once and no chunk is larger than it needs to be.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    missing_chunks : {"warn", "error", "ignore"}, default "warn"
        What to do when storage chunks of the variable are missing from the
        Zarr store, which zarr would read as the fill value (0 for integers)
        without a word: ``"warn"`` (expected for chunks that held only the
        fill value, such as all-land chunks of an ocean field), ``"error"``
        (for data where a missing chunk can only mean loss, such as
        genotypes) or ``"ignore"`` (do not check, and do not list the
        store). The store is listed once when it is opened. ``"warn"``
        issues a :class:`MissingChunksWarning` that says how many chunks and
        which (zarr does not write chunks that hold only the fill value);
        ``"error"`` raises :class:`StoreReadError`. (The first sentence is
        the help of ``xsvd run --missing-chunks``.)

    Notes
    -----
    With zarr's GPU buffers enabled (``zarr.config.enable_gpu()``, needs
    CuPy), chunks are decompressed into GPU memory and the Dask chunks are
    CuPy arrays, with no round trip through NumPy; they are decoded
    (``_FillValue``, ``missing_value``, ``_Unsigned``, ``scale_factor``,
    ``add_offset``) as xarray decodes them on the host.

    Returns
    -------
    xarray.DataArray
        Lazy, with the store's coordinates and attributes.

    Raises
    ------
    StoreReadError
        When the store cannot be opened; with ``missing_chunks="error"``,
        when chunks are missing; when a chunk cannot be read, at compute
        time, naming the store, variable and chunk.

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
    require_zarr()
    if missing_chunks not in get_args(MissingChunks):
        raise ValueError(
            f"missing_chunks must be 'warn', 'error' or 'ignore', got {missing_chunks!r}."
        )
    name = os.fspath(store)
    try:
        with host_buffers():  # metadata and coordinates (text too) are read on the host
            ds = open_zarr_dataset(store, chunks=None, storage_options=storage_options)
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the Zarr store {name!r}: {type(exc).__name__}: {exc}. "
            "Check that the path or URL exists and is a Zarr store."
        ) from exc
    variable = pick_variable(ds, variable, name)
    var = ds[variable]
    storage = var.encoding.get("chunks") or var.shape
    if chunks is None:
        plan = plan_chunks(
            var.shape, tuple(storage), var.dtype.itemsize, threads=os.cpu_count() or 1
        )
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

    array = None
    if missing_chunks != "ignore":
        array = check_chunks(store, storage_options, variable, name, missing_chunks)
    raw, meta = None, None
    if zarr_gpu_enabled():
        # zarr decompresses into GPU memory: read with zarr itself, so chunks are
        # CuPy arrays from the start (xarray's reader would turn them into NumPy)
        cupy = backend.require_cupy("Reading Zarr into GPU memory")
        raw = array if array is not None else zarr_array(store, storage_options, variable)
        meta = cupy.empty((0,) * var.ndim, dtype=var.dtype)
    reader = ChunkReader(var.variable, name, variable, tuple(storage), raw)
    data = da.from_array(
        reader,
        chunks=plan,
        name=f"xsvd-zarr-{variable}-{uuid.uuid4().hex[:8]}",
        asarray=False,
        meta=meta,
    )
    out = xr.DataArray(data, dims=var.dims, coords=var.coords, name=variable, attrs=var.attrs)
    with host_buffers():
        return out.assign_coords({k: v.load() for k, v in out.coords.items()})


def zarr_gpu_enabled() -> bool:
    """True when zarr is configured for GPU buffers (``zarr.config.enable_gpu()``)."""
    import zarr

    return "gpu" in str(zarr.config.get("ndbuffer", ""))


@contextlib.contextmanager
def host_buffers():
    """Read with zarr's host (NumPy) buffers inside the block, whatever the configuration.

    Under ``zarr.config.enable_gpu()`` only the data variable is read into GPU
    memory; coordinates stay on the host, where xarray keeps them, and text
    coordinates (which CuPy cannot hold: "Unsupported dtype <U5") can be read.
    """
    import zarr

    if not zarr_gpu_enabled():
        yield
        return
    with zarr.config.set(
        {"buffer": "zarr.buffer.cpu.Buffer", "ndbuffer": "zarr.buffer.cpu.NDBuffer"}
    ):
        yield


def open_zarr_dataset(store, **kwargs) -> xr.Dataset:
    """``xr.open_zarr``, with consolidated metadata where the store has it, without warning.

    xarray's default (``consolidated=None``) warns when a store has no
    consolidated metadata; ask for it, and open without it when it is not there.
    """
    try:
        return xr.open_zarr(store, consolidated=True, **kwargs)
    except Exception:
        return xr.open_zarr(store, consolidated=False, **kwargs)


def zarr_array(store, storage_options: dict | None, variable: str):
    """The zarr array of ``variable`` in ``store``, opened read-only."""
    import zarr

    return zarr.open_group(store, mode="r", storage_options=storage_options)[variable]


def find_missing_chunks(array) -> tuple[list[tuple[int, ...]], int]:
    """The storage chunks of a zarr array that are not in its store, and how many it has.

    The store is listed once under the array's prefix (zarr's
    ``store.list_prefix``, as ``Array.nchunks_initialized`` does), and each
    chunk's key (zarr's own ``encode_chunk_key``, so format 2 and 3 keys
    alike) is looked up in that listing. For a sharded array, the storage
    objects are the shards, and the indices are shard indices.

    Returns
    -------
    missing : list of tuple of int
        Indices of the missing chunks in the chunk grid, in C order.
    total : int
        The number of storage chunks of the array.
    """
    from zarr.core.sync import sync

    async def listing():
        return [key async for key in array.store_path.store.list_prefix(array.store_path.path)]

    prefix = array.store_path.path.rstrip("/")
    prefix = prefix + "/" if prefix else ""
    present = {key.removeprefix(prefix) for key in sync(listing())}
    storage = array.shards or array.chunks
    grid = tuple(math.ceil(n / c) for n, c in zip(array.shape, storage, strict=True))
    encode = array.metadata.encode_chunk_key
    missing = [index for index in np.ndindex(grid) if encode(index) not in present]
    return missing, math.prod(grid)


def check_chunks(store, storage_options, variable: str, name: str, action: str):
    """Warn or raise (``action``) when storage chunks of ``variable`` are missing.

    Returns the zarr array (reused for GPU reads), or None when the check
    could not be made.
    """
    if action == "error":
        fix = (
            "Restore the missing chunks (rewrite the store), or, if they are meant to hold "
            "only the fill value, pass missing_chunks='warn' or 'ignore'."
        )
    else:
        fix = (
            "Pass missing_chunks='error' for data where a missing chunk can only mean loss "
            "(genotypes), or missing_chunks='ignore' to silence this."
        )
    try:
        array = zarr_array(store, storage_options, variable)
        missing, total = find_missing_chunks(array)
    except Exception as exc:
        message = (
            f"Could not list the chunks of variable {variable!r} in the Zarr store {name!r} "
            f"({type(exc).__name__}: {exc}), so missing chunks, which zarr reads as the fill "
            "value, cannot be ruled out. Pass missing_chunks='ignore' to read it without "
            "this check."
        )
        if action == "error":
            raise StoreReadError(message) from exc
        warnings.warn(message, MissingChunksWarning, stacklevel=3)
        return None
    if not missing:
        return array
    shown = listed(missing)
    fill = array.fill_value
    fill = fill.item() if isinstance(fill, np.generic) else fill
    kind = "shards" if array.shards else "storage chunks"
    message = (
        f"{len(missing)} of the {total} {kind} of variable {variable!r} "
        f"{'is' if len(missing) == 1 else 'are'} missing from the Zarr store {name!r} "
        f"({kind.split()[-1]} {shown}); zarr reads them as the fill value "
        f"({fill!r}), so the decomposition would see that value there. zarr does "
        "not write chunks that hold only the fill value, so this is expected for some data "
        "(e.g. all-land chunks of an ocean field)"
    )
    if len(missing) == total:
        message += ", and a store that cannot list its keys (some HTTP servers) shows none"
    message += f". {fix}"
    if action == "error":
        raise StoreReadError(message)
    warnings.warn(message, MissingChunksWarning, stacklevel=3)
    return array
