"""The errors and warnings of :mod:`xsvd.io`, and the check that zarr is installed."""

from __future__ import annotations

__all__ = ["StoreReadError", "MissingChunksWarning", "require_zarr"]


class StoreReadError(OSError):
    """A Zarr store or one of its chunks could not be read, or a saved result is not whole.

    Raised by :func:`open_zarr` when the store cannot be opened, and at
    compute time when a chunk is missing, corrupt or forbidden. The message
    names the store, the variable and the chunk index, e.g. ``chunk (2, 0) of
    variable 'genotype' in the Zarr store 'http://.../gt.zarr'``, and the
    original error is chained as ``__cause__``. Raised by
    :func:`xsvd.open_result` (and ``SVDResult.from_dataset``) when a saved
    result cannot be read or does not hold what was written: a variable or
    chunk missing (e.g. ``chunk (3, 0) of 'U' is missing``), a value changed.
    A subclass of :class:`OSError`.
    """


class MissingChunksWarning(UserWarning):
    """Storage chunks of a variable are missing from a Zarr store.

    Issued by :func:`open_zarr` (``missing_chunks="warn"``, the default):
    zarr reads a missing chunk as the fill value, without a word. Filter it
    with ``warnings.filterwarnings("ignore", category=xsvd.io.MissingChunksWarning)``
    or pass ``missing_chunks="ignore"``; make it an error with
    ``missing_chunks="error"``.
    """


def require_zarr() -> None:
    """Raise an ImportError that names the extra to install when zarr is missing."""
    try:
        import zarr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'Reading and writing Zarr needs the io extra: pip install "xsvd[io]"'
        ) from exc
