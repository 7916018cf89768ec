"""Argument checks and chunking shared by the data-set generators."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["as_int", "as_float", "maybe_chunk"]


def _number(name: str, value: Any, convert, what: str, errors) -> Any:
    """``convert(value)``, or a TypeError that says ``name`` must be ``what`` (a bool is not)."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be {what}, got the bool {value!r}")
    try:
        return convert(value)
    except errors:
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}") from None


def as_int(name: str, value: Any, minimum: int, hint: str) -> int:
    """Return ``value`` as a Python int, or raise a helpful error."""
    ivalue = _number(name, value, operator.index, "an integer", TypeError)
    if ivalue < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {ivalue}; {hint}")
    return ivalue


def as_float(name: str, value: Any) -> float:
    fvalue = _number(name, value, float, "a real number", (TypeError, ValueError))
    if not math.isfinite(fvalue):
        raise ValueError(f"{name} must be a finite number, got {fvalue!r}")
    return fvalue


def maybe_chunk(arr: xr.DataArray, chunks: int | dict | None, along: str) -> xr.DataArray:
    """Wrap ``arr`` (NumPy-backed) in a Dask array if ``chunks`` is given.

    An int is the chunk length along ``along``; a dict maps dimension names to
    anything ``dask.array.from_array`` accepts.  Dimensions not named are kept
    in one chunk.
    """
    if chunks is None:
        return arr
    if isinstance(chunks, dict):
        unknown = set(chunks) - set(arr.dims)
        if unknown:
            raise ValueError(
                f"chunks names dimension(s) {sorted(map(str, unknown))} that {arr.name!r} "
                f"does not have; use only {list(arr.dims)}"
            )
        spec = dict(chunks)
    else:
        n = as_int(
            "chunks",
            chunks,
            1,
            f"give the number of {along} per chunk, a dict such as "
            f"{{{along!r}: 100}}, or None for a NumPy-backed result",
        )
        spec = {along: n}
    try:
        import dask.array as dsa
    except ImportError as err:  # pragma: no cover - dask is a dependency
        raise ImportError("chunks= needs dask; install 'dask[array]' or pass chunks=None") from err
    dask_chunks = tuple(spec.get(dim, -1) for dim in arr.dims)
    return arr.copy(data=dsa.from_array(arr.data, chunks=dask_chunks))
