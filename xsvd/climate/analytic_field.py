"""The analytic signal of a field as a linear operator, read as the data are stored.

:func:`prepare` reads a (samples x features) matrix once for its feature
statistics (with ``||Z||_F^2``), refuses infinite values and features NaN at
some samples only (naming them), leaves out those NaN at every sample, and
returns an :class:`AnalyticField`: ``Z = P + iQ``, ``Q = H P``, as the real
form ``R = [[P, -Q], [Q, P]]`` for :func:`xsvd.core.randomized.operator.
operator_svd`. Its products are the data's with blocks transformed on the
sample side (:mod:`.analytic`): no ``R``, ``Q``, complex or centered copy;
in memory blocks of features, on Dask the core's stripes of its chunks (the
statistics gather stripes of features where the samples are in several chunks:
they need whole series, which a stripe of chunks is not always). Where each
block holds every sample and the samples are the fewer, a pass ``R (R^T T)``
is one read (:meth:`AnalyticField.rmatmat` keeps ``R R^T T`` for
:meth:`AnalyticField.matmat`). A block that is the real form of a complex one
(the solver's, with ``complex_form``: :func:`complex_span`) is multiplied as
that complex block, half the real columns. The products are those of ``2**exponent R``,
one power of two that brings the largest weighted feature near 1: data of
any magnitude are multiplied without overflow or underflow.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import backend
from ..core.missing import MissingRule, check_infinite, check_nan_counts
from ..core.randomized.executors import Stepwise
from ..core.randomized.stripe import fill_missing
from ..labeled.preprocess import constant_tolerance
from . import analytic

__all__ = ["AnalyticField", "prepare", "BLOCK_VALUES", "STRIPE_VALUES"]

#: How to fix features NaN at some samples only, without ``missing="mean"``.
GAPS_ADVICE = (
    "The Hilbert transform needs every feature complete along the sample dimension (the "
    "FFT would spread each gap over the whole series). Pass `missing='mean'`, which stands "
    "each gap for its feature's mean over the samples before the transform (no filled copy "
    "is made), or fill them first, e.g. `da.interpolate_na('time')` or `da.fillna(0)` on "
    "anomalies; features NaN at every sample (land) are fine."
)
#: Values of the data per block of features in a product (in memory; ~32 MiB of float64).
BLOCK_VALUES = 1 << 22
#: Blocks are split at left-out features where the runs between them average this many.
MIN_RUN = 64
#: Values per block of the statistics (a few temporaries of its size each, per thread).
STATS_VALUES = 1 << 19
#: Dask data with the samples in several chunks: values per stripe of features gathered
#: whole for the statistics (once; the products read the chunks as they are).
STRIPE_VALUES = 1 << 23
#: Threads that transform blocks of in-memory NumPy data at once (NumPy's FFT runs on one).
FFT_THREADS = min(4, os.cpu_count() or 1)
#: Threads that multiply blocks of in-memory NumPy data at once, on one BLAS thread each
#: (the solver's small steps beside them on one too: on a busy machine, measured on 2
#: cores, 1,000 x 16,200, tol=1e-10: 10 to 24 s instead of 19 to 135 s with every BLAS
#: thread for the products and the steps the core deems large).
PRODUCT_THREADS = os.cpu_count() or 1
#: Weighted features whose largest magnitude is within ``2**-100`` to ``2**100`` are
#: multiplied as they are; beyond, every product is rescaled by one power of two.
SAFE_EXPONENTS = (-100, 100)


@dataclass
class AnalyticField:
    """``2**exponent Z``, ``Z = P + iQ`` of a field's kept features, as the operator ``R``.

    ``data`` the (samples x features) matrix; ``kept`` the indices of the
    features not NaN at every sample; ``mean``, ``std`` (host, every feature;
    NaN where NaN at every sample), ``scale`` (host, every feature: weights
    over standard deviations); ``exponent``: the products are those of
    ``2**exponent R``; ``total``: ``||2**exponent Z||_F^2``. ``fill`` (host, kept
    features, or None where nothing is to be filled): with ``missing="mean"``, the
    values (the features' means) that stand for those ``rule`` calls missing, put in
    as each block is read; ``gaps``: which kept features hold such values (blocks
    without one are read as they are).
    """

    data: Any
    kept: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    scale: np.ndarray
    center: bool
    transform: dict
    exponent: int
    total: float
    rule: Any = None
    fill: np.ndarray | None = None
    gaps: np.ndarray | None = None
    mu_kept: Any = None
    d_kept: Any = None
    fill_kept: Any = None
    _cached: tuple | None = field(default=None, repr=False)

    def __post_init__(self):
        mu = self.mean[self.kept] if self.center else np.zeros(self.kept.size)
        d = np.ldexp(self.scale[self.kept], self.exponent)
        self.mu_kept, self.d_kept, self.fill_kept = mu, d, self.fill
        if not backend.is_dask(self.data):
            self.mu_kept = backend.on_backend_of(mu, self.data)
            self.d_kept = backend.on_backend_of(d, self.data)
            if self.fill is not None:
                self.fill_kept = backend.on_backend_of(self.fill, self.data)

    # ------------------------------------------------------------ shape
    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)`` of ``Z``: samples x kept features (``R`` is twice both)."""
        return int(self.data.shape[0]), int(self.kept.size)

    @property
    def fused(self) -> bool:
        """Whether the solver's basis is on the sample side (``m < n``) and each block holds
        every sample, so that :meth:`rmatmat` gives both products of a pass from one read."""
        m, n = self.shape
        return m < n and (not backend.is_dask(self.data) or len(self.data.chunks[0]) == 1)

    def blocks(self) -> list[tuple[int, int]]:
        """Kept-feature ranges ``[s, e)`` of about :data:`BLOCK_VALUES` values (in memory),
        split where features are left out (land) unless those gaps are many, so that
        :meth:`columns` is a view of the data, not a copy."""
        m, n = self.shape
        threads = PRODUCT_THREADS if backend.is_numpy(self.data) else 1
        step = max(1, min(BLOCK_VALUES // max(m, 1), -(-n // threads)))
        edges = set(range(0, n, step)) | {n}
        gaps = np.flatnonzero(np.diff(self.kept) > 1) + 1
        if gaps.size * MIN_RUN <= n:
            edges |= set(gaps.tolist())
        edges = sorted(edges)
        return list(zip(edges[:-1], edges[1:], strict=True))

    def columns(self, s: int, e: int):
        """The data's kept features ``s`` to ``e`` (a view where they are contiguous)."""
        return _take(self.data, self.kept[s:e])

    # --------------------------------------------------------- products
    def rmatmat(self, T) -> np.ndarray:
        """``R^T T`` (2n x l) for a host ``T`` (2m x l); with :attr:`fused` also ``R R^T T``,
        kept for the :meth:`matmat` that follows.

        ``R^T`` is the real form of ``Z^H``: with ``T = [Re; Im](B Y)``
        (:func:`complex_span`: ``B`` complex, ``r <= l`` columns), ``R^T T =
        [Re; Im](Z^H B Y)``, and ``Z^H B = P^T (B - i H^T B)`` is one product of
        the data with ``2r`` real columns (``l`` where the solver's block is the
        real form of a complex one, ``r = l / 2``; ``2l`` at most).
        """
        B, structured = complex_span(T)
        r = B.shape[1]
        A = analytic.hilbert_adjoint(np.concatenate([B.real, B.imag], axis=1), **self.transform)
        U = np.concatenate([B.real + A[:, r:], B.imag - A[:, :r]], axis=1)
        # fused where T is a block of the passes (a complex one); not for the final read
        rows, C = self._products(U, None, self.fused and structured)
        out = _real_form_of(rows[:, :r], rows[:, r:], structured)  # Z^H B: rows' halves
        if C is not None:  # Z Z^H B, from the same read
            G = self._finish(C)
            m = self.shape[0]
            self._cached = (out, _real_form_of(G[:m], G[m:], structured))
        else:
            self._cached = None
        return out

    def matmat(self, W) -> np.ndarray:
        """``R W`` (2m x l) for a host ``W`` (2n x l): no read when ``W`` is what
        :meth:`rmatmat` just returned (fused). The real form of ``Z B Y`` (``W =
        [Re; Im](B Y)``), ``Z B = P B + i H P B``: one product with ``2r`` columns."""
        if self._cached is not None and W is self._cached[0]:
            G = self._cached[1]
            self._cached = None
            return G
        B, structured = complex_span(W)
        _, C = self._products(None, np.concatenate([B.real, B.imag], axis=1), False)
        G = self._finish(C)
        m = self.shape[0]
        return _real_form_of(G[:m], G[m:], structured)

    def _finish(self, C) -> np.ndarray:
        """``R W`` from ``C = P [W1, W2]`` (m x 2l, host)."""
        l = C.shape[1] // 2
        HC = analytic.hilbert_transform(C, **self.transform)
        return np.concatenate([C[:, :l] - HC[:, l:], HC[:, :l] + C[:, l:]], axis=0)

    def _products(self, U, W, fuse: bool):
        """``(P^T U (n x c) or None, P W (m x c) or None)`` on the host."""
        if backend.is_dask(self.data):
            return _dask_products(self, U, W, fuse)
        xp = backend.api(self.data)
        U = None if U is None else backend.on_backend_of(U, self.data)
        W = None if W is None else backend.on_backend_of(W, self.data)

        def one(block):
            s, e = block
            wb = "fused" if fuse else (None if W is None else W[s:e, :])
            return analytic.block_products(
                self.columns(s, e), self.mu_kept[s:e], self.d_kept[s:e], U, wb,
                **self.filling(s, e),
            )  # fmt: skip

        blocks = self.blocks()
        threads = min(len(blocks), PRODUCT_THREADS) if backend.is_numpy(self.data) else 1
        if threads > 1:  # one BLAS thread each (hilbert_eof runs the solver under one)
            with ThreadPoolExecutor(threads) as pool:
                done = list(pool.map(one, blocks))
        else:
            done = [one(b) for b in blocks]
        parts = [r for r, _ in done if r is not None]
        shares = [g for _, g in done if g is not None]
        rows = backend.to_numpy(xp.concat(parts, axis=0)) if parts else None
        return rows, (backend.to_numpy(sum(shares[1:], shares[0])) if shares else None)

    def filling(self, s: int, e: int) -> dict:
        """:func:`.analytic.block_products`' ``rule`` and ``fill`` for kept features ``s``
        to ``e`` (nothing where none of them has a gap)."""
        if self.fill_kept is None or not self.gaps[s:e].any():
            return {}
        return {"rule": self.rule, "fill": self.fill_kept[s:e]}

    # ------------------------------------------------------------ exact
    def formed(self):
        """``2**exponent Z`` (m x n complex128) in the data's memory (NumPy for Dask
        data), for the exact SVD, a few columns at a time."""
        m, n = self.shape
        dask = backend.is_dask(self.data)
        xp = backend.api(np.empty(0) if dask else self.data)  # the array API's, not np.*
        where = {} if dask else {"device": backend.device(self.data)}  # NumPy 1.26: no device
        Z = xp.empty((m, n), dtype=xp.complex128, **where)
        for s, e, x in _series(self):
            mu = backend.on_backend_of(backend.to_numpy(self.mu_kept[s:e]), x)
            d = backend.on_backend_of(backend.to_numpy(self.d_kept[s:e]), x)
            fill = backend.on_backend_of(self.fill[s:e], x) if self.filling(s, e) else None
            for j in range(0, e - s, analytic.FFT_COLUMNS if backend.is_numpy(x) else e - s):
                k = min(e - s, j + analytic.FFT_COLUMNS) if backend.is_numpy(x) else e - s
                p = backend.astype(x[:, j:k], np.float64, copy=False)
                if fill is not None:
                    p, _ = fill_missing(xp, p, self.rule, fill[j:k], count=False)
                p = (p - mu[j:k]) * d[j:k]
                z = xp.astype(analytic.hilbert_transform(p, **self.transform), xp.complex128)
                Z[:, s + j : s + k] = backend.to_numpy(z * 1j + p) if dask else z * 1j + p
        return Z

    def full_rows(self, V, fill=complex(np.nan, np.nan)):
        """Kept-feature rows (n_kept x k) on every feature, ``fill`` elsewhere, in ``V``'s
        memory and namespace."""
        xp = backend.api(V)
        n_all = self.mean.shape[0]
        if self.kept.size == n_all:
            return V
        index = np.full(n_all, self.kept.size)
        index[self.kept] = np.arange(self.kept.size)
        pad = xp.full((1, V.shape[1]), fill, dtype=V.dtype, device=backend.device(V))
        return xp.take(xp.concat([V, pad], axis=0), backend.on_backend_of(index, V), axis=0)


def complex_span(X) -> tuple[np.ndarray, bool]:
    """``(B, structured)``: complex ``B`` with ``X = [Re; Im](B Y)`` for a real ``X`` (2L x l),
    ``Y = [I, iI]`` where ``structured``, else ``I``.

    Where ``X`` is the real form of a complex block, ``[[Re B, -Im B], [Im
    B, Re B]]`` (exactly: the solver's blocks with ``complex_form``, and the
    products of such blocks), ``B`` has ``l / 2`` columns and ``Y = [I, iI]``:
    the products need half the columns. Otherwise ``B = X_top + i X_bottom``,
    ``Y = I``.
    """
    half, l = X.shape[0] // 2, X.shape[1]
    h = l // 2
    top, bottom = X[:half], X[half:]
    if (
        l % 2 == 0
        and h
        and (
            np.array_equal(top[:, h:], -bottom[:, :h]) and np.array_equal(bottom[:, h:], top[:, :h])
        )
    ):
        return top[:, :h] + 1j * bottom[:, :h], True
    return top + 1j * bottom, False


def _real_form_of(re, im, structured: bool) -> np.ndarray:
    """``[Re; Im](B Y)`` for ``B = re + i im`` and the ``Y`` of :func:`complex_span`:
    ``[I, iI]`` (structured: ``[[re, -im], [im, re]]``) or ``I`` (``[re; im]``), formed
    exactly, without complex temporaries."""
    if not structured:
        return np.concatenate([re, im], axis=0)
    L, r = re.shape
    out = np.empty((2 * L, 2 * r))
    out[:L, :r], out[L:, r:] = re, re
    np.negative(im, out=out[:L, r:])
    out[L:, :r] = im
    return out


def _take(x, cols: np.ndarray):
    """Columns ``cols`` (sorted) of ``x``: a view where they are contiguous."""
    if cols.size and cols[-1] - cols[0] == cols.size - 1:
        return x[:, int(cols[0]) : int(cols[-1]) + 1]
    return backend.api(x).take(x, backend.on_backend_of(cols, x), axis=1)


# ------------------------------------------------------------------ prepare


def prepare(
    a,
    w,
    *,
    center: bool,
    standardize: bool,
    padding: str,
    decay_factor: float,
    locate: Callable,
    rule: MissingRule | None = None,
) -> AnalyticField:
    """The :class:`AnalyticField` of the matrix ``a`` (samples x features) with feature
    weights ``w`` (host vector or None), from one read of the data.

    ``rule`` (:func:`xsvd.core.missing.missing_rule`): where it fills
    (``missing="mean"``), a value it calls missing in a feature present at some
    samples stands for that feature's mean over them, as in :func:`xsvd.svd`: the
    statistics read fills each block before its transform (every block holds whole
    series, so the nan-aware mean is known there: no further read), the products put
    the means in as they read each block; no filled copy of the data is made. The
    standard deviation (``standardize=True``) is that of the present values, the
    main svd's (:func:`xsvd.labeled.preprocess.standardized_weights`).
    """
    m, n = a.shape
    transform = {"padding": padding, "decay_factor": decay_factor}
    fills = rule is not None and rule.fills
    stats = _stats(a, center, transform, rule if fills else None)
    stats = dict(zip(analytic.STATS, stats, strict=True))
    check_infinite(stats["infs"] > 0, locate=locate)
    nans = stats["nans"]
    partial = (nans > 0) & (nans < m)
    if not fills:  # the core's check, naming the features, with the transform's advice
        check_nan_counts(nans, m, locate=locate, advice=GAPS_ADVICE)
    land = nans >= m
    kept = np.flatnonzero(~land)
    if kept.size == 0:
        raise ValueError("The data are NaN everywhere: no feature to decompose.")
    amax = stats["amax"]
    eps = constant_tolerance(a.dtype, m - nans)  # over the present values
    std = np.where(land, np.nan, np.where(stats["std"] <= eps * amax, 0.0, stats["std"]))
    scale = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    if standardize:  # constant features (docs/input-rules.md) and land get 0
        scale = np.where(std > 0, scale / np.where(std > 0, std, 1.0), 0.0)
    exponent = _exponent(amax[kept], scale[kept])
    with np.errstate(over="ignore", under="ignore"):
        d = np.ldexp(scale[kept], exponent) / stats["unit"][kept]  # the energies' units
        total = float(np.sum(stats["energy"][kept] * d * d))
    mean = np.where(land, np.nan, stats["mean"])
    fill, gaps = (mean[kept], partial[kept]) if fills and partial.any() else (None, None)
    return AnalyticField(
        a, kept, mean, std, scale, center, transform, exponent, total, rule, fill, gaps
    )


def _exponent(amax: np.ndarray, scale: np.ndarray) -> int:
    """The power of two that brings the largest weighted feature near 1, where it is
    outside ``2**SAFE_EXPONENTS`` (else 0)."""
    with np.errstate(divide="ignore"):
        lb = np.log2(amax) + np.log2(np.abs(scale))
    lb = lb[np.isfinite(lb)]
    top = float(lb.max()) if lb.size else 0.0
    low, high = SAFE_EXPONENTS
    return 0 if low <= top <= high else -(int(np.floor(top)) + 1)


def _stats(a, center: bool, transform: dict, rule=None) -> np.ndarray:
    """:func:`.analytic.column_stats` of every feature (host, 7 x n), one read (each block
    whole series: ``rule`` fills them there)."""
    kw = dict(center=center, rule=rule, **transform)
    if not backend.is_dask(a):
        out = _block_stats(a, kw, FFT_THREADS)
    elif len(a.chunks[0]) == 1:  # every sample in each chunk
        chunks = ((len(analytic.STATS),), a.chunks[1])
        stats = a.map_blocks(_block_stats, kw, 1, dtype=np.float64, chunks=chunks)
        (out,) = backend.compute(stats)
    else:  # stripes of features gathered whole, one at a time
        parts = [_block_stats(backend.compute(a[:, s:e])[0], kw, FFT_THREADS)
                 for s, e in _stripe_ranges(a)]  # fmt: skip
        out = np.concatenate([backend.to_numpy(p) for p in parts], axis=1)
    return np.asarray(backend.to_numpy(out), dtype=np.float64)


def _block_stats(x, kw: dict, threads: int):
    """:func:`.analytic.column_stats` of a block (every sample), a few columns at a time,
    on ``threads`` threads (NumPy)."""
    xp = backend.api(x)
    m, n = x.shape
    step = max(1, STATS_VALUES // max(m, 1))
    ranges = [(s, min(n, s + step)) for s in range(0, n, step)]

    def one(r):
        return analytic.column_stats(x[:, r[0] : r[1]], **kw)

    if backend.is_numpy(x) and threads > 1 and len(ranges) > 1:
        with ThreadPoolExecutor(min(threads, len(ranges))) as pool:
            parts = list(pool.map(one, ranges))
    else:
        parts = [one(r) for r in ranges]
    return xp.concat(parts, axis=1)


def _stripe_ranges(a) -> list[tuple[int, int]]:
    """Feature ranges of Dask data of about :data:`STRIPE_VALUES` values."""
    m, n = a.shape
    width = max(1, STRIPE_VALUES // max(m, 1))
    return [(s, min(n, s + width)) for s in range(0, n, width)]


def _series(f: AnalyticField):
    """``(s, e, x)``: the kept features ``s`` to ``e`` with every sample, a block at a time
    (Dask: a stripe computed)."""
    if not backend.is_dask(f.data):
        for s, e in f.blocks():
            yield s, e, f.columns(s, e)
        return
    for c0, c1 in _stripe_ranges(f.data):
        s, e = (int(np.searchsorted(f.kept, c)) for c in (c0, c1))
        if e > s:
            (x,) = backend.compute(f.data[:, c0:c1])
            yield s, e, _take(x, f.kept[s:e] - c0)


# --------------------------------------------------------------------- Dask


def _dask_products(f: AnalyticField, U, W, fuse: bool):
    """``(P^T U, P W)`` of Dask data, one read through the core's executor and stripes
    (:class:`~xsvd.core.randomized.executors.Stepwise`, one ``dask.compute``): stripes of
    features where the samples are in one chunk and the features in several, else of
    samples; each stripe's chunks as they are (:func:`_stripe_products`), the partial
    sums tree-added."""
    a = f.data
    axis = 1 if a.numblocks[0] == 1 < a.numblocks[1] else 0
    ex = Stepwise(a, axis, split_every=2)  # pairwise sums: partial sums freed soonest
    filling = f.filling(0, f.kept.size)
    filling = filling and {**filling, "gaps": f.gaps}
    args = (f.kept, f.mu_kept, f.d_kept, U, "fused" if fuse else W, axis, filling)
    rows, shares = ex.map(_stripe_products, ex.stripes(), *args, nout=2, per_stripe=(ex.offsets,))
    want = [U is not None, W is not None or fuse]
    summed = [axis == 0, axis == 1]  # rows add over stripes of samples, shares of features
    state = tuple(
        (ex.sum(p) if add else list(p)) if wanted else None
        for p, add, wanted in zip((rows, shares), summed, want, strict=True)
    )
    out = ex.end_pass(state)
    return tuple(
        None if x is None else x if add else np.concatenate(x, axis=0)
        for x, add in zip(out, summed, strict=True)
    )


def _stripe_products(blocks, offset, kept, mu, d, U, W, axis, filling):
    """One stripe's :func:`.analytic.block_products` (host), a chunk at a time, the kept
    columns of each: ``(rows, share)``. A stripe of samples (``axis=0``, chunks along the
    features) gives the rows of every kept feature (added over stripes) and the share of
    its samples; one of features (chunks along the samples) the rows of its kept features
    and the share of every sample (added over stripes)."""
    first = int(np.searchsorted(kept, offset)) if axis else 0
    last = int(np.searchsorted(kept, offset + blocks[0].shape[1])) if axis else kept.size
    height = sum(b.shape[0] for b in blocks) if axis else blocks[0].shape[0]
    rows = None if U is None else np.zeros((last - first, U.shape[1]))
    share = None if W is None else np.zeros((height, (U if isinstance(W, str) else W).shape[1]))
    r0, c0 = (0, offset) if axis else (offset, 0)
    for b in blocks:
        s, e = (int(np.searchsorted(kept, c)) for c in (c0, c0 + b.shape[1]))
        if e > s:
            x = _take(b, kept[s:e] - c0)
            on = functools.partial(backend.on_backend_of, like=x)
            fill = {}
            if filling and filling["gaps"][s:e].any():
                fill = {"rule": filling["rule"], "fill": on(filling["fill"][s:e])}
            u = None if U is None else on(U[r0 : r0 + b.shape[0]])
            w = W if W is None or isinstance(W, str) else on(W[s:e])
            r, g = analytic.block_products(x, on(mu[s:e]), on(d[s:e]), u, w, **fill)
            if r is not None:
                rows[s - first : e - first] += backend.to_numpy(r)
            if g is not None:
                i = r0 - (0 if axis else offset)
                share[i : i + b.shape[0]] += backend.to_numpy(g)
        r0, c0 = (r0 + b.shape[0], c0) if axis else (r0, c0 + b.shape[1])
    return rows, share
