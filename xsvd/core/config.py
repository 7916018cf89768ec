"""Tunable sizes, as ``xsvd.set_options`` (the way ``xarray.set_options`` works).

The store lives in the core, which reads it (imports point down only);
:mod:`xsvd.options` re-exports it for the package root and the layers above.
Not to be confused with :mod:`.options`, the options of one decomposition.

These are performance knobs with defaults measured on real machines; results
do not depend on them beyond floating-point rounding. Tests use them to make
small inputs behave like large ones (e.g. tiny sub-blocks) without touching
private constants.

The solver reads them once, when a decomposition is planned, and hands the
values to its kernels as arguments, so worker processes of a
``dask.distributed`` cluster need not share the client's settings.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OPTIONS", "set_options", "get_options"]

OPTIONS: dict[str, int] = {
    # elements of one float sub-block multiplied at once inside a stripe (4 MiB in float32)
    "sub_block_elements": 1 << 20,
    # the same on a GPU: fewer, larger kernel launches (256 MiB in float32)
    "gpu_sub_block_elements": 1 << 26,
    # in-memory NumPy data at least this large run as views on a small thread pool ...
    "threaded_min_bytes": 64 * 2**20,
    # ... each view about this large (small enough that a few per thread balance the load:
    # 16 MiB ran 4-7% faster than 64 MiB on 2 cores, climate and genotype data alike)
    "threaded_stripe_bytes": 16 * 2**20,
    # a Dask stripe (one chunk along the cut dimension, the other whole) above this warns
    "large_stripe_bytes": 2 * 2**30,
    # more than 10,000 Dask chunks below this size each warn (scheduling dominates)
    "small_chunk_bytes": 2**20,
    # Zarr storage chunks larger than this warn in open_zarr (every task reads one whole)
    "large_storage_chunk_bytes": 2**30,
    # block Krylov keeps every pass's stripe-side sketch up to this size, else reads once more
    "krylov_sketch_bytes": 64 * 2**20,
}

_DOCS = {
    "sub_block_elements": "elements of a float sub-block on the CPU",
    "gpu_sub_block_elements": "elements of a float sub-block on the GPU",
    "threaded_min_bytes": "NumPy data at least this large run on a thread pool",
    "threaded_stripe_bytes": "bytes of each view of threaded NumPy data",
    "large_stripe_bytes": "warn about Dask stripes larger than this",
    "small_chunk_bytes": "warn about very many Dask chunks smaller than this",
    "large_storage_chunk_bytes": "warn about Zarr storage chunks larger than this",
    "krylov_sketch_bytes": "most bytes of stripe-side sketches kept for the final step",
}


#: Thresholds that may be 0 (always true); the other options are sizes of at least 1.
_MAY_BE_ZERO = {
    "threaded_min_bytes",
    "large_stripe_bytes",
    "small_chunk_bytes",
    "large_storage_chunk_bytes",
    "krylov_sketch_bytes",
}


def get_options() -> dict[str, int]:
    """A copy of the current options."""
    return dict(OPTIONS)


class set_options:  # noqa: N801  (a context manager named like a function, as in xarray)
    """Set xsvd's tunable sizes, globally or inside a ``with`` block.

    Parameters
    ----------
    sub_block_elements : int
        Elements of the float sub-block a stripe is converted to and multiplied
        in at a time on the CPU (default ``2**20``, 4 MiB of float32).
    gpu_sub_block_elements : int
        The same on a GPU (default ``2**26``).
    threaded_min_bytes, threaded_stripe_bytes : int
        In-memory NumPy data of at least ``threaded_min_bytes`` (64 MiB) run as
        views of about ``threaded_stripe_bytes`` (16 MiB) on a thread pool.
    large_stripe_bytes, small_chunk_bytes : int
        Thresholds of the warnings about Dask chunks too large (2 GiB per
        stripe) or too many and too small (10,000 chunks under 1 MiB).
    large_storage_chunk_bytes : int
        :func:`xsvd.open_zarr` warns about storage chunks above this (1 GiB).
    krylov_sketch_bytes : int
        The compressed SVD (block Krylov) keeps every pass's sketch of the long
        side of the data (``passes x length x (k + n_oversamples)`` values) for
        its final step when that takes at most this many bytes (64 MiB);
        beyond it, it keeps only the short side's and reads the data once
        more at the end, so its memory stays about one sketch.

    Examples
    --------
    >>> import xsvd
    >>> with xsvd.set_options(sub_block_elements=50_000):
    ...     xsvd.get_options()["sub_block_elements"]
    50000
    >>> xsvd.get_options()["sub_block_elements"]
    1048576
    """

    def __init__(self, **kwargs: Any):
        self._old = {}
        for name, value in kwargs.items():
            if name not in OPTIONS:
                raise ValueError(
                    f"{name!r} is not an xsvd option; the options are {sorted(OPTIONS)}."
                )
            least = 0 if name in _MAY_BE_ZERO else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(
                    f"{name} must be an integer >= {least} ({_DOCS[name]}), got {value!r}."
                )
            self._old[name] = OPTIONS[name]
        OPTIONS.update(kwargs)

    def __enter__(self) -> set_options:
        return self

    def __exit__(self, *exc) -> None:
        OPTIONS.update(self._old)
