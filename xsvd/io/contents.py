"""What a saved result holds, recorded when it is written and checked when it is read.

A Zarr store reads a chunk that is missing (deleted, never copied, lost in a
partial transfer) as the fill value, without a word, and a netCDF file has no
checksums. So :func:`record` notes, in the saved form's ``xsvd_contents``
attribute, every variable of the Dataset with its shape and a CRC-32 checksum
of its values, and :func:`verify` raises :class:`StoreReadError` when a
variable is absent, has another shape, or holds other values: a saved result
reads back whole, or not at all.

The checksum is over a canonical form of the values, the same however the
file stored them: numbers as little-endian 64-bit (booleans as bytes, every
NaN the same NaN), dates and durations as 64-bit counts of microseconds, text
as UTF-8. Arrays of other Python objects (cftime dates) have their shape
recorded but no checksum. :func:`missing_chunks` lists a Zarr store (no data
read) to say which chunks of a variable are gone.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping

import numpy as np
import xarray as xr

from .errors import StoreReadError

__all__ = ["record", "checksum", "verify", "missing_chunks", "check_values", "SHOW", "BLOCK"]

#: Problems (and chunk indices) named in one message.
SHOW = 5
#: Elements checksummed at a time (8 MiB of float64).
BLOCK = 2**20


def record(ds: xr.Dataset) -> dict:
    """``{name: {"shape": [...], "crc32": int}}`` for every variable of ``ds`` (in memory).

    ``crc32`` is left out for arrays of Python objects other than text.
    """
    out = {}
    for name, var in ds.variables.items():
        entry: dict = {"shape": [int(n) for n in var.shape]}
        crc = checksum(var.values)
        if crc is not None:
            entry["crc32"] = crc
        out[str(name)] = entry
    return out


def checksum(values) -> int | None:
    """CRC-32 of the canonical form of ``values`` (module docstring); None where there is none.

    Computed over blocks of ``BLOCK`` elements, so that the canonical copy of
    a large array (a genotype result's ``V``) is never made whole.
    """
    flat = np.asarray(values).reshape(-1)
    if _canonical(flat[:1]) is None:
        return None
    crc = 0
    for start in range(0, flat.size, BLOCK):
        crc = zlib.crc32(_canonical(flat[start : start + BLOCK]), crc)
    return crc


def _canonical(a: np.ndarray) -> bytes | None:
    kind = a.dtype.kind
    if kind == "b":
        return a.astype("u1").tobytes()
    if kind in "iu":
        return a.astype("<i8" if kind == "i" else "<u8").tobytes()
    if kind == "f":
        a = a.astype("<f8")
        return np.where(np.isnan(a), np.nan, a).astype("<f8").tobytes()
    if kind == "c":
        a = a.astype("<c16")
        parts = np.stack([a.real, a.imag])
        return np.where(np.isnan(parts), np.nan, parts).astype("<f8").tobytes()
    if kind in "Mm":
        return a.astype(f"{a.dtype.str[:3]}[us]").view("<i8").astype("<i8").tobytes()
    if kind in "UST" or (kind == "O" and all(isinstance(v, str | bytes) for v in a.ravel())):
        items = [v.decode() if isinstance(v, bytes) else str(v) for v in a.ravel()]
        return "\x00".join(items).encode("utf-8", "surrogatepass") + str(len(items)).encode()
    return None


def verify(ds: xr.Dataset, expected: Mapping, source: str | None, explain=None) -> None:
    """Raise :class:`StoreReadError` unless ``ds`` holds what ``expected`` (:func:`record`) says.

    ``ds`` is read into memory. ``source`` names where it was read from (in
    the message; None when unknown); ``explain(name)``, where given, lists the missing chunks
    of a variable that does not match (:func:`missing_chunks`).
    """
    problems = []
    for name, entry in expected.items():
        if name not in ds.variables:
            problems.append(f"variable {name!r} is missing")
            continue
        var = ds.variables[name]
        shape = tuple(entry.get("shape", ()))
        if tuple(var.shape) != shape:
            problems.append(f"variable {name!r} has shape {tuple(var.shape)}, not {shape}")
            continue
        crc, now = entry.get("crc32"), checksum(var.values)
        if crc is None or now is None:  # dates read back as cftime objects: shape only
            continue
        if now != crc:
            gone = explain(name) if explain is not None else None
            problems.append(
                gone
                or f"variable {name!r} does not hold the values it was written with "
                "(its checksum does not match)"
            )
    if problems:
        raise StoreReadError(_message(problems, source))


def check_values(ds: xr.Dataset, source: str | None, explain=None) -> None:
    """The check of a result saved without a record (version 3 of the saved form).

    The store is listed for missing chunks (``explain``, where given: a
    missing chunk reads as the fill value, NaN or 0 depending on the zarr
    release that wrote it), and ``U`` and ``S`` of a result hold no NaN, nor
    ``V`` or ``mean`` outside the all-NaN features; raise
    :class:`StoreReadError` where either check fails.
    """
    nan_features = ds["nan_features"].values if "nan_features" in ds else None
    problems = []
    for name in ("U", "S", "V", "mean"):
        if name not in ds:
            if name in ("U", "S", "V"):
                problems.append(f"variable {name!r} is missing")
            continue
        isnan = np.isnan(ds[name].values)
        if nan_features is not None and name in ("V", "mean"):
            feature_dims = ds["nan_features"].dims
            mask = xr.DataArray(nan_features, dims=feature_dims)
            isnan = (xr.DataArray(isnan, dims=ds[name].dims) & ~mask).values
        # the store's listing first: a lost chunk reads as the fill value, which is
        # NaN or, in stores some zarr releases wrote, 0
        gone = explain(name) if explain is not None else None
        if gone or isnan.any():
            problems.append(
                gone or f"variable {name!r} holds NaN where a result has none (chunks were lost)"
            )
    if problems:
        raise StoreReadError(_message(problems, source))


def listed(items: list, sep: str = ", ") -> str:
    """The first ``SHOW`` of ``items`` joined by ``sep``, then ``...`` where there are more."""
    return sep.join(map(str, items[:SHOW])) + (f"{sep}..." if len(items) > SHOW else "")


def _message(problems: list[str], source: str | None) -> str:
    shown = listed(problems, "; ")
    where = "" if source is None else f" {source!r}"
    return (
        f"The saved result{where} is incomplete or corrupt: {shown}. Its values cannot "
        "be trusted; write the result again (e.g. `res.to_zarr(path, mode='w')`) or restore "
        "the store or file from a copy."
    )


def missing_chunks(path: str | os.PathLike, storage_options: dict | None, name: str) -> str | None:
    """What is missing of variable ``name`` in the Zarr store ``path``, or None if nothing is.

    Lists the store (no data read), e.g. ``"chunk (3, 0) of 'U' is missing"``,
    or ``"variable 'V' is missing (its folder is not in the store)"``.
    """
    from .zarr import find_missing_chunks, zarr_array

    text = os.fspath(path)
    if "://" not in text and os.path.isdir(text):
        folder = os.path.join(text, name)
        if not any(os.path.exists(os.path.join(folder, m)) for m in ("zarr.json", ".zarray")):
            return f"variable {name!r} is missing (its folder is not in the store)"
    try:
        array = zarr_array(path, storage_options, name)
        gone, total = find_missing_chunks(array)
    except KeyError:
        return f"variable {name!r} is missing"
    except Exception:  # the listing could not be made: say nothing more
        return None
    if not gone:
        return None
    if total == 1:
        return f"chunk {gone[0]} of {name!r} (its only chunk) is missing"
    if len(gone) == total:
        return f"all {total} chunks of {name!r} are missing"
    shown = listed(gone)
    if len(gone) == 1:
        return f"chunk {shown} of {name!r} is missing"
    return f"{len(gone)} of the {total} chunks of {name!r} are missing ({shown})"
