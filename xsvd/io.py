"""Zarr store mechanics: stream a store into the solver, write and read Datasets.

- :func:`open_zarr` opens a variable of a Zarr store (local path or URL read
  through fsspec, e.g. ``http://``, ``s3://``, ``gs://``) as a Dask-backed
  DataArray whose chunks are whole multiples of the store's chunks
  (rechunk-on-read: small storage chunks are merged when read, no rechunk in
  the graph), and whose read errors name the store, the variable and the
  chunk. Storage chunks missing from the store (which zarr would read as the
  fill value) are found when the store is opened and reported
  (``missing_chunks=``).
- :func:`write_store` writes a Dataset atomically for local paths: the store
  is written under a temporary name next to the target and swapped into
  place, so a failure leaves nothing behind and ``path`` is never missing;
  what an interrupted save left is cleaned up by the next one. Every chunk
  carries a CRC-32C checksum. :func:`read_store` opens one, with errors that
  name it (a checksum that does not match is one); :func:`read_netcdf` reads
  a netCDF file, and :func:`read_result_dataset` either. What a result's Dataset
  holds is :class:`xsvd.SVDResult`'s business (``to_dataset`` /
  ``from_dataset``).

zarr (and fsspec with aiohttp/requests for URLs) are optional: ``pip install
"xsvd[io]"``.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import re
import shutil
import socket
import sys
import uuid
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .core import backend
from .options import OPTIONS

__all__ = [
    "open_zarr",
    "StoreReadError",
    "MissingChunksWarning",
    "plan_chunks",
    "write_store",
    "read_store",
    "read_netcdf",
    "read_result_dataset",
]

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


class MissingChunksWarning(UserWarning):
    """Storage chunks of a variable are missing from a Zarr store.

    Issued by :func:`open_zarr` (``missing_chunks="warn"``, the default):
    zarr reads a missing chunk as the fill value, without a word. Filter it
    with ``warnings.filterwarnings("ignore", category=xsvd.io.MissingChunksWarning)``
    or pass ``missing_chunks="ignore"``; make it an error with
    ``missing_chunks="error"``.
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
            x = backend.where(raw == fill, np.nan, x)
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
    missing_chunks: str = "warn",
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
    missing_chunks : {"warn", "error", "ignore"}, default "warn"
        What to do when storage chunks of the variable are missing from the
        store, which zarr would read as the fill value (0 for integers)
        without a word. The store is listed once when it is opened.
        ``"warn"``: a :class:`MissingChunksWarning` that says how many and
        which. zarr does not write chunks that hold only the fill value, so
        this is expected for some data (all-land chunks of an ocean field);
        ``"error"``: raise :class:`StoreReadError`, for data where a missing
        chunk can only mean loss (genotypes); ``"ignore"``: do not check (and
        do not list the store).

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
    _require_zarr()
    if missing_chunks not in ("warn", "error", "ignore"):
        raise ValueError(
            f"missing_chunks must be 'warn', 'error' or 'ignore', got {missing_chunks!r}."
        )
    name = os.fspath(store)
    try:
        ds = _open_dataset(store, chunks=None, storage_options=storage_options)
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

    array = None
    if missing_chunks != "ignore":
        array = _check_chunks(store, storage_options, variable, name, missing_chunks)
    gpu_array, meta = None, None
    if _zarr_gpu_enabled():
        # zarr decompresses into GPU memory: read with zarr itself, so chunks are
        # CuPy arrays from the start (xarray's reader would turn them into NumPy)
        cupy = backend.require_cupy("Reading Zarr into GPU memory")
        gpu_array = array if array is not None else _zarr_array(store, storage_options, variable)
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


def _open_dataset(store, **kwargs) -> xr.Dataset:
    """``xr.open_zarr``, with consolidated metadata where the store has it, without warning.

    xarray's default (``consolidated=None``) warns when a store has no
    consolidated metadata; ask for it, and open without it when it is not there.
    """
    try:
        return xr.open_zarr(store, consolidated=True, **kwargs)
    except Exception:
        return xr.open_zarr(store, consolidated=False, **kwargs)


def _zarr_array(store, storage_options: dict | None, variable: str):
    """The zarr array of ``variable`` in ``store``, opened read-only."""
    import zarr

    return zarr.open_group(store, mode="r", storage_options=storage_options)[variable]


#: Chunk indices named in the missing-chunks message.
_SHOW_MISSING = 5


def _missing_chunks(array) -> tuple[list[tuple[int, ...]], int]:
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


def _check_chunks(store, storage_options, variable: str, name: str, action: str):
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
        array = _zarr_array(store, storage_options, variable)
        missing, total = _missing_chunks(array)
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
    shown = ", ".join(str(index) for index in missing[:_SHOW_MISSING])
    if len(missing) > _SHOW_MISSING:
        shown += ", ..."
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


# -------------------------------------------------------------------- write

#: ``.NAME.xsvd-tmp-PID-HOST-HEX`` / ``.NAME.xsvd-old-PID-HOST-HEX`` (after
#: ``.NAME.xsvd-``): the writer's process id, a hash of its host name, and a
#: tag per save; names without PID and HOST were written by xsvd 0.1.
_SIBLING = re.compile(
    r"(?P<kind>tmp|old)-(?:(?P<pid>\d+)-(?P<host>[0-9a-f]{8})-)?(?P<hex>[0-9a-f]{8})"
)
#: renameat2 flag: swap the two paths atomically (Linux >= 3.15, glibc >= 2.28).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _host_tag() -> str:
    """A short tag of this host's name, so that a shared file system tells writers apart."""
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running on this host (a zombie counts as ended)."""
    if pid == os.getpid():
        return True
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def _siblings(target: Path) -> list[tuple[Path, str, str]]:
    """``(path, kind, tag)`` of the temporary siblings of ``target`` whose writer has ended.

    ``kind`` is ``"tmp"`` or ``"old"``; ``tag`` identifies one save (``""``
    for names written by xsvd 0.1, which carry no process id). Siblings of a
    running writer, and of writers on other hosts, are left out.
    """
    prefix = f".{target.name}.xsvd-"
    host = _host_tag()
    found = []
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        match = _SIBLING.fullmatch(entry.name[len(prefix) :])
        if match is None:
            continue
        if match["pid"] is not None:
            if match["host"] != host or _pid_alive(int(match["pid"])):
                continue
            tag = f"{match['pid']}-{match['host']}-{match['hex']}"
        else:
            tag = ""
        found.append((entry, match["kind"], tag))
    return found


def _recover(target: Path) -> bool:
    """Put back the store that a writer, killed between its two renames, moved aside.

    Where the atomic exchange is unavailable, replacing renames ``target`` to
    ``.NAME.xsvd-old-TAG`` and then ``.NAME.xsvd-tmp-TAG`` to ``target``. When
    ``target`` is missing and both of a dead writer's siblings exist, it
    died between the two: the old store is renamed back. Returns whether
    ``target`` exists.
    """
    if os.path.lexists(target):
        return True
    debris = _siblings(target)
    tmp_tags = {tag for _, kind, tag in debris if kind == "tmp"}
    olds = [(path, tag) for path, kind, tag in debris if kind == "old" and tag in tmp_tags]
    for old, _ in sorted(olds, key=lambda pair: _mtime(pair[0]), reverse=True):
        try:
            old.rename(target)
            return True
        except OSError:  # another process put it back first, or no permission
            if os.path.lexists(target):
                return True
    return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _clean(target: Path) -> None:
    """Remove what interrupted saves of ``target`` left (their writers have ended).

    A store moved aside by a writer killed between its two renames is put
    back first; if it cannot be, everything is left for a person to see.
    """
    recovered = _recover(target)
    debris = _siblings(target)
    tmp_tags = {tag for _, kind, tag in debris if kind == "tmp"}
    if not recovered and any(kind == "old" and tag in tmp_tags for _, kind, tag in debris):
        return
    for path, _, _ in debris:
        _remove(path)


def _remove(path: Path) -> None:
    """Delete a store (a directory), or whatever else is at ``path``; quietly."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


_renameat2 = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns False where that is unavailable (another OS, an older C library
    or kernel, a file system that does not support it), and the caller
    falls back to two renames.
    """
    global _renameat2
    if not sys.platform.startswith("linux"):
        return False
    if _renameat2 is None:
        try:
            function = ctypes.CDLL(None, use_errno=True).renameat2
        except (OSError, AttributeError):
            _renameat2 = False
            return False
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
        function.argtypes += [ctypes.c_uint]
        function.restype = ctypes.c_int
        _renameat2 = function
    if _renameat2 is False:
        return False
    done = _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0  # EINVAL, ENOSYS, ...: not here; the two renames say what is wrong


def _replace(tmp: Path, target: Path, old: Path) -> None:
    """Move the new store ``tmp`` to ``target``; ``target`` is never missing on Linux.

    With the atomic exchange, the old store ends up at ``tmp`` (deleted
    after). Without, ``target`` is renamed to ``old`` first, and a crash
    between the two renames is undone by :func:`_recover`.
    """
    if os.path.lexists(target) and _exchange(tmp, target):
        return
    if not os.path.lexists(target):
        tmp.rename(target)
        return
    target.rename(old)
    try:
        tmp.rename(target)
    except BaseException:
        old.rename(target)
        raise
    _remove(old)


def _checksummed(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with every variable encoded with Zstandard, then a CRC-32C checksum per chunk.

    A flipped byte in a chunk is then an error on reading, not a different
    number. The variables' other encodings (e.g. the units of a time
    coordinate) are kept; codecs they carried from where they were read
    are replaced.
    """
    from zarr.codecs import Crc32cCodec, ZstdCodec

    ds = ds.copy()
    for name, var in list(ds.variables.items()):
        if var.dtype.kind == "U":  # no fixed-width strings in the Zarr 3 specification: zarr warns
            fixed = var
            var = fixed.astype(object)
            var.encoding = dict(fixed.encoding)
            if name in ds.indexes:
                ds = ds.assign_coords({name: var.to_index_variable()})
            else:
                ds[name] = var
            var = ds.variables[name]
        encoding = {
            k: v
            for k, v in var.encoding.items()
            if k not in ("compressor", "compressors", "filters", "serializer", "shards")
        }
        encoding["compressors"] = (ZstdCodec(), Crc32cCodec())
        var.encoding = encoding
    return ds


def _to_zarr(ds: xr.Dataset, store, mode: str) -> None:
    """Write ``ds`` (format 3, checksums, consolidated metadata) without zarr's notice about it."""
    import zarr

    category = getattr(zarr.errors, "ZarrUserWarning", UserWarning)
    with warnings.catch_warnings():
        # consolidated metadata (one read to open a result, no listing of URLs) is
        # not in the Zarr 3 specification yet; zarr says so on every write
        warnings.filterwarnings("ignore", "Consolidated metadata", category)
        _checksummed(ds).to_zarr(store, mode=mode, zarr_format=3, consolidated=True)


def write_store(ds: xr.Dataset, path: str | os.PathLike, *, mode: str = "w-") -> None:
    """Write a Dataset to a Zarr store, atomically for local paths.

    ``mode="w-"`` refuses an existing path, ``mode="w"`` replaces it. Every
    chunk carries a CRC-32C checksum (after Zstandard compression), so a
    corrupt byte fails :func:`read_store` instead of changing a number.

    A local store is written under a temporary name next to ``path``
    (``.NAME.xsvd-tmp-PID-HOST-HEX``) and moved into place, so a failure
    leaves nothing behind. An existing store is replaced by an atomic
    exchange of the two directories on Linux, so ``path`` always holds the
    old or the new store, even if the process is killed; elsewhere by two
    renames, and a crash between them is undone by the next
    :func:`write_store` or :func:`read_store`. What interrupted saves left
    next to ``path`` is removed by the next save, if their process has ended
    (processes on other hosts are left alone).
    """
    _require_zarr()
    if mode not in ("w-", "w"):
        raise ValueError(f"mode must be 'w-' (fail if the path exists) or 'w', got {mode!r}.")
    text = os.fspath(path)
    if "://" in text:
        _to_zarr(ds, text, mode)
        return
    target = Path(text)
    _clean(target)
    if target.exists() and mode == "w-":
        raise FileExistsError(
            f"{text!r} already exists; pass mode='w' to overwrite it, or choose another path."
        )
    tag = f"{os.getpid()}-{_host_tag()}-{uuid.uuid4().hex[:8]}"
    tmp = target.with_name(f".{target.name}.xsvd-tmp-{tag}")
    old = target.with_name(f".{target.name}.xsvd-old-{tag}")
    try:
        _to_zarr(ds, tmp, "w-")
        _replace(tmp, target, old)
    finally:
        # the new store, after a failure; the old one, after an exchange
        _remove(tmp)


def read_store(path: str | os.PathLike, *, storage_options: dict | None = None) -> xr.Dataset:
    """Read a Zarr store into memory as a Dataset, or raise :class:`StoreReadError` naming it.

    Stores with and without consolidated metadata open alike. Every chunk is
    read, so a checksum that does not match (a corrupt chunk of a store
    written by :func:`write_store`) raises here, naming the store and the
    variable. A local ``path`` that a replacing save moved aside and did
    not put back (the process was killed between two renames) is put back
    first.
    """
    _require_zarr()
    text = os.fspath(path)
    if "://" not in text:
        _recover(Path(text))
    try:
        ds = _open_dataset(path, chunks=None, storage_options=storage_options)
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the store {text!r}: {type(exc).__name__}: {exc}."
        ) from exc
    for name, var in ds.variables.items():
        try:
            var.load()
        except Exception as exc:
            raise StoreReadError(
                f"Could not read variable {name!r} of the store {text!r}: "
                f"{type(exc).__name__}: {exc}. The store is corrupt (a checksum does not match "
                "or a chunk cannot be decoded) or not readable; save the result again."
            ) from exc
    return _fixed_width_strings(ds)


def _fixed_width_strings(ds: xr.Dataset) -> xr.Dataset:
    """Variable-length strings read from a store (NumPy's ``StringDType``) as ``<U`` arrays.

    :func:`write_store` writes text as variable-length strings; this gives
    them back as the fixed-width NumPy strings xarray makes of text.
    """
    texts = [name for name, var in ds.variables.items() if var.dtype.kind == "T"]
    for name in texts:
        var = ds.variables[name]
        text = np.asarray(var.values).astype(object).astype(str)
        fixed = xr.Variable(var.dims, text, var.attrs, var.encoding)
        if name in ds.indexes:
            ds = ds.assign_coords({name: fixed.to_index_variable()})
        elif name in ds.coords:
            ds = ds.assign_coords({name: fixed})
        else:
            ds[name] = fixed
    return ds


#: The first bytes of netCDF files: classic, 64-bit offset and CDF-5; netCDF-4 (HDF5).
_NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def is_netcdf(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local netCDF file (netCDF-3 or netCDF-4), by its first bytes."""
    text = os.fspath(path)
    if "://" in text or not os.path.isfile(text):
        return False
    try:
        with open(text, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head.startswith(_NETCDF_MAGIC)


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """Read a local netCDF file into memory as a Dataset, or raise :class:`StoreReadError`.

    xarray picks the engine: scipy reads netCDF-3, netCDF4 or h5netcdf
    (whichever is installed) netCDF-4. The file is closed when this returns.
    """
    text = os.fspath(path)
    try:
        with xr.open_dataset(text) as ds:
            return ds.load()
    except Exception as exc:
        hint = ""
        with open(text, "rb") as f:
            if f.read(4) == b"\x89HDF":
                hint = " Reading netCDF-4 files needs h5netcdf or netCDF4: pip install h5netcdf."
        raise StoreReadError(
            f"Could not read the netCDF file {text!r}: {type(exc).__name__}: {exc}.{hint}"
        ) from exc


def read_result_dataset(
    path: str | os.PathLike, *, storage_options: dict | None = None
) -> xr.Dataset:
    """The Dataset at ``path``, in memory: a netCDF file, or else a Zarr store (local or URL)."""
    if is_netcdf(path):
        return read_netcdf(path)
    text = os.fspath(path)
    if "://" not in text and os.path.isfile(text):
        raise StoreReadError(
            f"{text!r} is a file but not a netCDF file (netCDF-3 or netCDF-4) and a Zarr store "
            "is a folder; give a result saved with `res.to_zarr(path)` or "
            "`res.to_dataset().to_netcdf(path)`."
        )
    return read_store(path, storage_options=storage_options)
