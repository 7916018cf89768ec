"""Zarr stores of Datasets: atomic saves with a checksum per chunk, and reading them back.

:func:`write_store` writes a Dataset so that a local ``path`` holds either
the old store or the complete new one, never a partial one (the guarantee
and its limits are in its docstring); every chunk carries a CRC-32C
checksum (zarr's own codec), which :func:`read_store` verifies by reading
every chunk.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import StoreReadError, require_zarr
from .zarr import open_zarr_dataset

__all__ = ["write_store", "read_store", "STALE_AFTER", "READ_ATTEMPTS"]

#: Temporaries and backups of interrupted saves older than this (seconds) are removed.
STALE_AFTER = 3600
#: Reads of a local store that :func:`read_store` tries while saves keep replacing it.
READ_ATTEMPTS = 10


def write_store(ds: xr.Dataset, path: str | os.PathLike, *, mode: str = "w-") -> None:
    """Write a Dataset to a Zarr store, atomically for local paths.

    ``mode="w-"`` refuses an existing path, ``mode="w"`` replaces it, but
    only where xsvd wrote what is there: a Zarr store whose root attributes
    have ``xsvd_format`` (every saved result), or an empty folder. Anything
    else (a folder of other files, a file, another Zarr store) is refused
    with a ``FileExistsError``, so a save never deletes what it did not
    write. Every chunk is compressed with Zstandard and carries a CRC-32C checksum, so a
    corrupt byte fails :func:`read_store` instead of changing a number.

    For a local ``path``:

    - the store is written completely under a temporary name next to it,
      ``.NAME.xsvd-tmp-HEX``, and then renamed to ``path``. A failure, or the
      process being killed, before that rename leaves ``path`` as it was
      (the old store, or nothing). A failure removes the temporary; a killed
      process leaves it, and the next save of ``path`` removes it once it is
      an hour old (``STALE_AFTER``: a save still running is left alone);
    - an existing store (``mode="w"``) is first renamed to
      ``.NAME.xsvd-old-HEX``, the new one renamed to ``path``, and the old one
      deleted. If the process is killed between the two renames, ``path`` is
      missing for a moment: :func:`read_store` then reads that backup, and
      the next save of ``path`` renames it back first. A reader racing the
      replacement reads the old store or the new one, never a mix (see
      :func:`read_store`).

    A URL (``s3://...``) is written in place: zarr's own writes, without
    these guarantees.
    """
    require_zarr()
    if mode not in ("w-", "w"):
        raise ValueError(f"mode must be 'w-' (fail if the path exists) or 'w', got {mode!r}.")
    text = os.fspath(path)
    if "://" in text:
        _to_zarr(ds, text, mode)
        return
    target = Path(text)
    backup = _find_backup(target)
    if backup is not None:  # a save was killed between its two renames: put it back
        with contextlib.suppress(OSError):
            os.replace(backup, target)
    _remove_stale(target)
    if os.path.lexists(target):
        if mode == "w-":
            raise FileExistsError(
                f"{text!r} already exists; pass mode='w' to overwrite it, or choose another path."
            )
        _check_replaceable(target, text)  # before writing anything
    tag = uuid.uuid4().hex[:8]
    tmp = _sibling(target, "tmp", tag)
    try:
        _to_zarr(ds, tmp, "w-")
        if mode == "w-" or not os.path.lexists(target):
            os.replace(tmp, target)  # fails if a store appeared at path meanwhile
            return
        old = _sibling(target, "old", tag)
        _check_replaceable(target, text)  # again: the path may have changed meanwhile
        os.replace(target, old)
        try:
            os.replace(tmp, target)
        except BaseException:
            os.replace(old, target)
            raise
        _remove(old)
    finally:
        _remove(tmp)  # what a failed save wrote; nothing after a success


def _check_replaceable(target: Path, text: str) -> None:
    """Raise ``FileExistsError`` unless ``mode="w"`` may delete what is at ``target``.

    That is an empty folder, or a Zarr store (format 2 or 3) whose root
    attributes have ``xsvd_format``: a result xsvd saved. Anything else may
    hold files the user needs.
    """
    if os.path.isdir(target):
        with contextlib.suppress(OSError):
            if not os.listdir(target) or "xsvd_format" in _root_attributes(target):
                return
        what = "a folder that is not a result saved by xsvd"
    else:
        what = "a file, not a result saved by xsvd"
    raise FileExistsError(
        f"{text!r} is {what} (a Zarr store with an `xsvd_format` attribute), so mode='w' "
        "does not replace it: that would delete files xsvd did not write. Save to another "
        f"path, or delete {text!r} yourself first if nothing in it is needed."
    )


def _root_attributes(target: Path) -> dict:
    """The root group's attributes of a Zarr store (format 3 ``zarr.json``, format 2 ``.zattrs``).

    Empty when ``target`` is not a readable Zarr store.
    """
    for name, key in (("zarr.json", "attributes"), (".zattrs", None)):
        try:
            with open(target / name, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError):
            continue
        attrs = meta.get(key) if key and isinstance(meta, dict) else meta
        if isinstance(attrs, dict):
            return attrs
    return {}


def _find_backup(target: Path) -> Path | None:
    """The old store a save of ``target`` moved aside, when ``target`` itself is missing.

    That is only the case when the save was killed between its two renames.
    The newest backup, if there are several.
    """
    if os.path.lexists(target):
        return None
    backups = []
    for path in _siblings(target, "old"):
        with contextlib.suppress(OSError):
            backups.append((path.lstat().st_mtime, path))
    return max(backups)[1] if backups else None


def _sibling(target: Path, kind: str, tag: str) -> Path:
    """``.NAME.xsvd-KIND-TAG`` next to ``target``: a temporary (``tmp``) or a backup (``old``)."""
    return target.with_name(f".{target.name}.xsvd-{kind}-{tag}")


def _siblings(target: Path, kind: str = "*") -> list[Path]:
    """The temporaries and backups (``kind``: ``tmp``, ``old`` or both) next to ``target``."""
    pattern = glob.escape(str(target.with_name(f".{target.name}.xsvd-"))) + f"{kind}-*"
    return [Path(p) for p in glob.glob(pattern)]


def _remove_stale(target: Path) -> None:
    """Remove what saves of ``target`` killed more than ``STALE_AFTER`` seconds ago left.

    Age is the time of the last change (``st_ctime``: a save's temporary
    changes while it is written, a backup when it is renamed), so a save
    still running is left alone.
    """
    now = time.time()
    for path in _siblings(target):
        with contextlib.suppress(OSError):
            if now - path.lstat().st_ctime > STALE_AFTER:
                _remove(path)


def _remove(path: Path) -> None:
    """Delete a store (a directory), or whatever else is at ``path``; quietly."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _checksummed(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with every variable encoded with Zstandard, then a CRC-32C checksum per chunk.

    A flipped byte in a chunk is then an error on reading, not a different
    number. The variables' other encodings (e.g. the units of a time
    coordinate) are kept; codecs they carried from where they were read
    are replaced. Fixed-width text becomes variable-length strings (the
    Zarr 3 specification has no fixed-width strings: zarr would warn).
    """
    from zarr.codecs import Crc32cCodec, ZstdCodec

    ds = ds.copy()
    for name, var in list(ds.variables.items()):
        if var.dtype.kind == "U":
            text = var.astype(object)
            text.encoding = dict(var.encoding)
            ds = _replaced(ds, name, text)
    # the variables of the Dataset as it now is: a replacement copies the others
    for var in ds.variables.values():
        encoding = {
            k: v
            for k, v in var.encoding.items()
            if k not in ("compressor", "compressors", "filters", "serializer", "shards")
        }
        var.encoding = {**encoding, "compressors": (ZstdCodec(), Crc32cCodec())}
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


def read_store(path: str | os.PathLike, *, storage_options: dict | None = None) -> xr.Dataset:
    """Read a Zarr store into memory as a Dataset, or raise :class:`StoreReadError` naming it.

    Stores with and without consolidated metadata open alike. Every chunk is
    read, so a checksum that does not match (a corrupt chunk of a store
    written by :func:`write_store`) raises here, naming the store and the
    variable. Where a local ``path`` is missing because a replacing save was
    killed between its two renames, the old store it moved aside is read
    (nothing is renamed: reading needs no write permission).

    A local store that a save (:func:`write_store` with ``mode="w"``)
    replaces while it is read is read again: the folder read is identified
    before and after the read (device, inode and change time), and a read
    whose folder changed (renamed away, replaced, deleted) is done again,
    whether it failed or not. So a reader gets the old store or the new one,
    never a mix of the two, nor a spurious "corrupt" error; only a store
    replaced during each of ``READ_ATTEMPTS`` reads in a row is an error.
    """
    require_zarr()
    text = os.fspath(path)
    if "://" in text:
        return _read(path, text, storage_options)
    target = Path(text)
    for _ in range(READ_ATTEMPTS):
        source = _find_backup(target) or path
        before = _identity(source)
        try:
            ds = _read(source, text, storage_options)
        except StoreReadError:
            if _identity(source) == before:  # the store is as it was: the error is its own
                raise
            continue  # replaced (or moved back) during the read: read what is there now
        if before is not None and _identity(source) == before:
            return ds
    raise StoreReadError(
        f"The store {text!r} was replaced by another save during each of {READ_ATTEMPTS} reads "
        "in a row; read it again once the saves to it are done."
    )


def _identity(path) -> tuple[int, int, int] | None:
    """What tells the folder at ``path`` from another put there: device, inode, change time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


def _read(source, text: str, storage_options: dict | None) -> xr.Dataset:
    """The store at ``source`` (named ``text`` in errors), every variable read into memory."""
    try:
        ds = open_zarr_dataset(source, chunks=None, storage_options=storage_options)
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
    """Variable-length strings read from a store as ``<U`` arrays.

    :func:`write_store` writes text as variable-length strings; this gives
    them back as the fixed-width NumPy strings xarray makes of text, whether
    they come back as NumPy 2's ``StringDType`` or (older NumPy or xarray) as
    ``object`` arrays of ``str``.
    """
    texts = [name for name, var in ds.variables.items() if _is_text(var)]
    for name in texts:
        var = ds.variables[name]
        text = np.asarray(var.values).astype(object).astype(str)
        ds = _replaced(ds, name, xr.Variable(var.dims, text, var.attrs, var.encoding))
    return ds


def _replaced(ds: xr.Dataset, name, var: xr.Variable) -> xr.Dataset:
    """``ds`` with its variable ``name`` (an index, another coordinate or data) now ``var``."""
    if name in ds.indexes:
        return ds.assign_coords({name: var.to_index_variable()})
    if name in ds.coords:
        return ds.assign_coords({name: var})
    return ds.assign({name: var})


def _is_text(var: xr.Variable) -> bool:
    """Whether ``var`` holds variable-length text (``StringDType``, or ``object`` of ``str``)."""
    if var.dtype.kind == "T":
        return True
    if var.dtype != object or var.size == 0:
        return False
    return all(isinstance(v, str) for v in np.asarray(var.values).ravel())
