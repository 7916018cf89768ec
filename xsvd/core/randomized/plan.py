"""Planning a compressed SVD: the problem, which way to cut the data, how to run.

:class:`Problem` describes one decomposition and stays fixed while it runs;
:func:`plan` decides whether the data are read as stripes of samples or of
features and which executor (:mod:`._exec`) runs the passes, and warns about
Dask chunks too large or too small to stream well. Sizes come from
:func:`xsvd.set_options`, read here once and handed on as plain values.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backend
from ..common import EXACT_K_SHARE
from ..config import OPTIONS
from ..missing import Locate, MissingRule
from ..options import CompressedOptions
from .executors import Eager, Executor, Lazy, Stepwise

__all__ = ["Problem", "ReadSpec", "SAMPLES", "FEATURES", "plan", "warn_if_exact_is_cheaper"]

#: Stripes are blocks of samples (``C = B``); each holds every feature.
SAMPLES = "samples"
#: Stripes are blocks of features (``C = B^T``); each holds every sample.
FEATURES = "features"


@dataclass(frozen=True, eq=False)
class Problem:
    """One compressed SVD, as the pass loop sees it (symbols: see ``randomized``).

    Attributes
    ----------
    n_samples, n_features : int
        ``m`` and ``n``, the shape of the data ``A``.
    k, width, n_power_iter : int
        Components ``k``, sketch columns ``l = k + p`` and subspace iterations ``q``.
    dtype : numpy.dtype
        Precision of the products with the data (float32 or float64).
    center : bool
        Remove the feature means ``mu`` (computed, or ``given_center``).
    given_center : array (n,) or None
        ``mu`` as given (``center=`` values), float64 on the data's backend, in
        the units of the data as given: it replaces the means the first pass
        would compute (no read for it) and, with ``missing="mean"``, fills in
        the missing values.
    weights : array (n,) or None
        Feature weights ``w`` on the data's backend, float64, as multiplied
        (the weights given times ``2**result_exp``, or rescaled).
    given_weights : numpy array (n,) or None
        The weights as given (float64, on the host), for rescaling.
    missing : MissingRule
        What counts as missing and what is done with it.
    options : CompressedOptions
        The solver's options as given, defaults filled in (``krylov``,
        ``tol``, ``max_passes``, ...); ``n_power_iter`` above is what runs.
    locate : callable or None
        Names features in error messages (flat indices -> text).
    stripes : {"samples", "features"}
        Which way the data are cut (see :func:`plan`).
    sub_block : int
        Elements of the float sub-block a stripe is multiplied in at a time.
    watch_range : bool
        The data's dtype does not bound their magnitude (floating point, or
        integers of 32 bits and more): the first pass measures every
        feature's, and data or weighted features too large or too small for
        the product dtype are rescaled (see :func:`rescaling`).
    narrowing : bool
        Float64 data multiplied in float32: rescaling multiplies them before
        they are converted.
    result_exp : int
        The matrix decomposed is ``2**result_exp`` times ``B`` (the weights
        were multiplied by powers of two); results are scaled back at the end.
    column_scale : array (n,) or None
        Per feature, the power of two ``2**column_exp`` the data are
        multiplied by as they are converted (float64, on the data's backend).
    column_exp : numpy array (n,) of int, or None
        Its exponents (for the means, scaled back at the end).
    rescaled : bool
        The first pass was read again with ``column_scale`` (one more read).
    reread : bool
        Block Krylov keeps only the thin side of every pass and reads the data
        once more at the end for the stripe-side vectors (one more read, when
        more than one pass is made), instead of keeping every pass's
        stripe-side sketch (see ``xsvd.set_options(krylov_sketch_bytes=...)``).
    stopped : str or None
        Once the passes are made: why they stopped (``settings["stopped"]``, see
        :func:`.small.stop_reason`).
    watched : int or None
        The leading components whose estimates decide when the passes stop
        (``tol`` and the default stop); None: all ``k``. Fewer where a solver asks
        for more than it returns (Hilbert EOF's pair below the last, whose only
        use is the gap it gives).
    """

    n_samples: int
    n_features: int
    k: int
    width: int
    n_power_iter: int
    dtype: np.dtype
    options: CompressedOptions
    center: bool
    weights: Any
    missing: MissingRule
    locate: Locate | None
    stripes: str
    sub_block: int
    watch_range: bool = False
    narrowing: bool = False
    result_exp: int = 0
    column_scale: Any = None
    column_exp: Any = None
    rescaled: bool = False
    given_weights: Any = None
    reread: bool = False
    stopped: str | None = None
    given_center: Any = None
    watched: int | None = None

    @property
    def thin_length(self) -> int:
        """Length of the dimension every stripe holds whole (the basis ``W`` has this many rows)."""
        return self.n_features if self.stripes == SAMPLES else self.n_samples

    @property
    def stripe_length(self) -> int:
        """Length of the dimension the data are cut along."""
        return self.n_samples if self.stripes == SAMPLES else self.n_features

    @property
    def prepass(self) -> bool:
        """Stripes of samples with ``missing="mean"`` need the feature means before the passes
        (a read of their own), unless they are given (``given_center``)."""
        return self.missing.fills and self.stripes == SAMPLES and self.given_center is None

    @property
    def passes(self) -> int:
        """Reads of the data: ``q + 1``, plus the means' own read, a rescaled first pass and
        the final read of ``reread``."""
        final = int(self.reread and self.n_power_iter > 0)
        return self.n_power_iter + 1 + self.extra_passes + final

    @property
    def extra_passes(self) -> int:
        """Reads besides the ``q + 1`` of the iterations."""
        return int(self.prepass) + int(self.rescaled)

    @property
    def most_iterations(self) -> int:
        """The most passes that multiply a Krylov block: ``q + 1``, or what ``tol`` allows
        (the other reads count against ``max_passes``)."""
        opts = self.options
        if not opts.converges:
            return self.n_power_iter + 1
        if opts.default_stop:
            return opts.most_passes
        return max(1, opts.most_passes - self.extra_passes - int(self.reread))

    @property
    def most_passes(self) -> int:
        """The most reads of the data (for a progress bar)."""
        return self.most_iterations + self.extra_passes + int(self.reread)

    def rereads(self, budget: int) -> bool:
        """Whether block Krylov should keep only the thin side of every pass and read the
        data once more at the end (``reread``): when keeping every pass's stripe-side
        sketch (``passes x stripe length x l`` values of the product dtype) would take
        more than ``budget`` bytes (``xsvd.set_options(krylov_sketch_bytes=...)``)."""
        passes = self.most_iterations
        if not self.options.krylov or passes <= 1:
            return False
        kept = passes * self.stripe_length * self.width * np.dtype(self.dtype).itemsize
        return kept > budget

    def read_spec(self) -> ReadSpec:
        return ReadSpec(
            self.dtype, self.missing, self.sub_block, self.center, self.watch_range, self.narrowing
        )


@dataclass(frozen=True)
class ReadSpec:
    """What a kernel needs to read a stripe: small, it goes into every task."""

    dtype: np.dtype
    missing: MissingRule
    sub_block: int
    center: bool
    watch_range: bool = False
    narrowing: bool = False


def watches_range(a) -> bool:
    """Whether the dtype of ``a`` leaves the magnitude of its values open."""
    if backend.is_packed(a):
        return False  # genotypes: 0, 1, 2
    dtype = backend.numpy_dtype(a.dtype)
    return dtype.kind in "fc" or (dtype.kind in "iu" and dtype.itemsize >= 4)


def plan(a, compute: bool, progress=None) -> tuple[str, int, Executor]:
    """Choose the stripes, the sub-block size and the executor for data ``a``.

    In memory: the thin side is the shorter dimension. Dask: stripes follow
    the chunks (a dimension already in one chunk is the thin side); when both
    dimensions are chunked, the shorter one is the thin side and each stripe
    is the list of its blocks, merged by the kernel a sub-block at a time (no
    rechunk: a rechunk in the graph would defeat re-reading per pass).

    Returns ``(stripes, sub_block, executor)``.
    """
    m, n = a.shape
    xp = backend.namespace(a)
    sub_block = OPTIONS["sub_block_elements" if xp is np else "gpu_sub_block_elements"]
    if not backend.is_dask(a):
        stripes = SAMPLES if n <= m else FEATURES
        axis = 0 if stripes == SAMPLES else 1
        threads, view = 1, None
        if xp is np and a.nbytes >= OPTIONS["threaded_min_bytes"]:
            # large NumPy data: views of ~64 MiB on a few threads, one BLAS thread each,
            # as on Dask (faster than one multi-threaded BLAS on skinny products)
            threads = os.cpu_count() or 1
            view = max(1, OPTIONS["threaded_stripe_bytes"] // (a.itemsize * a.shape[1 - axis]))
        return (
            stripes,
            sub_block,
            Eager(a, axis, threads=threads, stripe=view if threads > 1 else None),
        )
    if a.numblocks[1] == 1:
        stripes = SAMPLES
    elif a.numblocks[0] == 1:
        stripes = FEATURES
    else:
        stripes = SAMPLES if n <= m else FEATURES
    axis = 0 if stripes == SAMPLES else 1
    _check_chunk_sizes(a, axis)
    executor = Stepwise(a, axis, progress=progress) if compute else Lazy(a, axis)
    return stripes, sub_block, executor


def _check_chunk_sizes(a, axis: int) -> None:
    """Warn, with what to do, about chunks too large or too small for streaming."""
    other = 1 - axis
    itemsize = backend.bytes_per_value(a)
    large = OPTIONS["large_stripe_bytes"]
    stripe = max(a.chunks[axis]) * a.shape[other] * itemsize
    if stripe > large:
        fit = max(1, int(large // 4 // (a.shape[other] * itemsize)))
        warnings.warn(
            f"Each stripe of the data read at once holds {stripe / 2**30:.1f} GiB "
            f"({max(a.chunks[axis])} x {a.shape[other]} values), and every worker "
            "thread holds one. For streaming with bounded memory, use smaller chunks "
            f"along that dimension (about {fit} rows of the matrix), e.g. when opening "
            "with `xsvd.open_zarr(..., chunks=...)` or with `.chunk(...)`.",
            UserWarning,
            stacklevel=5,
        )
    mean_chunk = a.size * itemsize / max(a.npartitions, 1)
    if a.npartitions > 10_000 and mean_chunk < OPTIONS["small_chunk_bytes"]:
        warnings.warn(
            f"The data have {a.npartitions} chunks of {mean_chunk / 2**10:.0f} KiB on "
            "average: scheduling will cost more than reading. Open Zarr stores with "
            "`xsvd.open_zarr(...)`, which merges small storage chunks on read, or "
            "rechunk the source to chunks of tens of MiB.",
            UserWarning,
            stacklevel=5,
        )


#: Matrices smaller than this (values) take about a second with either solver: no advice.
EXACT_ADVICE_VALUES = 2**20


def warn_if_exact_is_cheaper(m: int, n: int, k: int, opts: CompressedOptions, a) -> None:
    """Warn, before any read, when ``k`` asks for so much of the matrix that the exact SVD
    is cheaper: ``k >= min(m, n) / EXACT_K_SHARE`` (the rule of ``method="auto"``)."""
    short = min(m, n)
    if EXACT_K_SHARE * k < short or m * n < EXACT_ADVICE_VALUES:
        return
    itemsize = 4 if backend.numpy_dtype(a.dtype) == np.float32 else 8
    gib = m * n * itemsize / 2**30
    passes = "until converged" if opts.converges else f"{opts.n_power_iter + 1} times"
    warnings.warn(
        f"k={k} asks for at least 1/{EXACT_K_SHARE} of the {short} components of this {m} x {n} "
        f"matrix: the compressed SVD would read the data {passes} and factor matrices "
        f"of about {min(k + opts.n_oversamples, short)} columns, which costs more than the "
        f"exact SVD. If the data fit in memory ({gib:.2g} GiB as a float matrix), use the "
        "exact SVD (method='exact', `.svd.exact()`, or method='auto', which picks it); "
        "else ask for fewer components.",
        UserWarning,
        stacklevel=3,
    )
