"""The analytic signal of a field as a linear operator, read a block of features at a time.

:func:`prepare` reads a (samples x features) matrix once for its feature
statistics (NaN counts, means, standard deviations), refuses features that
are NaN at some samples only (naming them), leaves out those NaN at every
sample, and returns an :class:`AnalyticField`: ``Z = P + iQ`` with ``P = (X -
1 mu^T) diag(d)`` the centered, weighted data and ``Q = H[P]`` its Hilbert
transform along the samples. Its products are those of the real form ``R =
[[P, -Q], [Q, P]]`` (``2m x 2n``), for :func:`xsvd.core.randomized.operator.
operator_svd`; neither ``R`` nor a complex copy of the data is formed:

- in memory (NumPy, or a device: CuPy, array-api-strict), ``Q`` is computed
  once, a block of features at a time, and kept (one float64 copy of the
  kept features, in the data's memory); ``P``'s products are those of the
  data with rank-one and diagonal corrections, so the data are neither
  centered nor weighted in memory;
- Dask data (the sample dimension in one chunk) are read once per product,
  each chunk transformed on the fly (nothing of the field's size is kept).

When the samples are fewer than the features, the solver's basis is on the
sample side and a pass is ``R (R^T T)``: :meth:`AnalyticField.rmatmat` gives
both products from one read of each block (each block holds every sample of
its features, so its share of ``R^T T`` is complete in itself), and the
following :meth:`AnalyticField.matmat` of that result costs nothing.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import backend
from ..core.missing import MissingValueError
from . import analytic

__all__ = ["AnalyticField", "prepare", "transform_into", "BLOCK_VALUES", "BLOCK_WARN_BYTES"]

#: Values of the data per block of features (~32 MiB of float64).
BLOCK_VALUES = 1 << 22
#: Threads that transform blocks of in-memory NumPy data at once (NumPy's FFT runs on one).
FFT_THREADS = min(4, os.cpu_count() or 1)
#: Dask: warn when putting the sample dimension in one chunk makes a block larger than this.
BLOCK_WARN_BYTES = 256 * 2**20


@dataclass
class AnalyticField:
    """``Z = P + iQ`` of a field's kept features, as the operator ``R`` (see the module).

    ``data`` the (samples x features) matrix (Dask: one chunk along the
    samples); ``kept`` the indices of the features not NaN at every sample;
    ``mean``, ``std`` (host, every feature; NaN where NaN at every sample),
    ``scale`` (host, every feature: weights over standard deviations);
    ``total``: ``||Z||_F^2`` once known (in memory: at once; Dask: after the
    first read).
    """

    data: Any
    kept: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    scale: np.ndarray
    center: bool
    transform: dict
    q: Any = None
    total: float | None = None
    mu_kept: Any = None
    d_kept: Any = None
    _cached: tuple | None = field(default=None, repr=False)

    def __post_init__(self):
        mu = self.mean[self.kept] if self.center else np.zeros(self.kept.size)
        d = self.scale[self.kept]
        if backend.is_dask(self.data):
            self.mu_kept, self.d_kept = mu, d
        else:
            self.mu_kept = backend.on_backend_of(mu, self.data)
            self.d_kept = backend.on_backend_of(d, self.data)

    # ------------------------------------------------------------ shape
    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)`` of ``Z``: samples x kept features (``R`` is twice both)."""
        return int(self.data.shape[0]), int(self.kept.size)

    @property
    def fused(self) -> bool:
        """Whether the solver's basis is on the sample side (``m < n``), where
        :meth:`rmatmat` gives both products of a pass from one read."""
        m, n = self.shape
        return m < n

    def blocks(self) -> list[tuple[int, int]]:
        """Kept-feature ranges ``[s, e)`` of about :data:`BLOCK_VALUES` values (in memory)."""
        m, n = self.shape
        step = max(1, BLOCK_VALUES // max(m, 1))
        return [(s, min(n, s + step)) for s in range(0, n, step)]

    def columns(self, s: int, e: int):
        """The data's kept features ``s`` to ``e`` (a view where they are contiguous)."""
        cols = self.kept[s:e]
        if cols[-1] - cols[0] == e - s - 1:
            return self.data[:, int(cols[0]) : int(cols[-1]) + 1]
        xp = backend.api(self.data)
        return xp.take(self.data, backend.on_backend_of(cols, self.data), axis=1)

    # --------------------------------------------------------- products
    def rmatmat(self, T) -> np.ndarray:
        """``R^T T`` (2n x l) for a host ``T`` (2m x l); with :attr:`fused` also ``R R^T T``,
        kept for the :meth:`matmat` that follows."""
        m = self.shape[0]
        T2 = np.concatenate([T[:m], T[m:]], axis=1)
        rows, G = self._products(T2=T2, W2=None, fuse=self.fused)
        Y = np.concatenate([rows[:, : T.shape[1]], rows[:, T.shape[1] :]], axis=0)
        self._cached = (Y, G) if G is not None else None
        return Y

    def matmat(self, W) -> np.ndarray:
        """``R W`` (2m x l) for a host ``W`` (2n x l): no read when ``W`` is what
        :meth:`rmatmat` just returned (fused)."""
        if self._cached is not None and W is self._cached[0]:
            G = self._cached[1]
            self._cached = None
            return G
        n = self.shape[1]
        W2 = np.concatenate([W[:n], W[n:]], axis=1)
        _, G = self._products(T2=None, W2=W2, fuse=False)
        return G

    def _products(self, T2, W2, fuse: bool):
        """``(rows of R^T T as [Re, Im] (n x 2l) or None, R W (2m x l) or None)``."""
        if backend.is_dask(self.data):
            rows, G2, total = _dask_products(self, T2, W2, fuse)
            if self.total is None:
                self.total = total
        else:
            rows, G2 = self._memory_products(T2, W2, fuse)
        G = None
        if G2 is not None:
            half = G2.shape[1] // 2
            G = np.concatenate([G2[:, :half], G2[:, half:]], axis=0)
        return rows, G

    def _memory_products(self, T2, W2, fuse: bool):
        xp = backend.api(self.data)
        T = None if T2 is None else backend.on_backend_of(T2, self.data)
        W = None if W2 is None else backend.on_backend_of(W2, self.data)
        parts, G = [], None
        for s, e in self.blocks():
            x, q = self.columns(s, e), self.q[:, s:e]
            wb = "fused" if fuse else (None if W is None else W[s:e, :])
            rows, share = analytic.block_products(x, q, self.mu_kept[s:e], self.d_kept[s:e], T, wb)
            if rows is not None:
                parts.append(rows)
            if share is not None:
                G = share if G is None else G + share
        rows = backend.to_numpy(xp.concat(parts, axis=0)) if parts else None
        return rows, (None if G is None else backend.to_numpy(G))

    # ------------------------------------------------------------ exact
    def formed(self):
        """``Z`` (m x n complex128) in the data's memory (NumPy for Dask data), for the
        exact SVD; also sets :attr:`total`."""
        m, n = self.shape
        if backend.is_dask(self.data):
            return _dask_formed(self)
        xp = backend.api(self.data)
        Z = xp.empty((m, n), dtype=xp.complex128, device=backend.device(self.data))
        total = 0.0
        for block in self.blocks():
            for j, k in _pieces(self.data, *block):
                p = analytic.centered(self.columns(j, k), self.mu_kept[j:k], self.d_kept[j:k])
                q = analytic.hilbert_transform(p, **self.transform)
                total += backend.to_scalar(xp.sum(p * p) + xp.sum(q * q))
                Z[:, j:k] = xp.astype(q, xp.complex128) * 1j + p
        self.total = total
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


# ------------------------------------------------------------------ prepare


def prepare(
    a,
    w,
    *,
    center: bool,
    standardize: bool,
    padding: str,
    decay_factor: float,
    keep_transform: bool,
    locate: Callable,
) -> AnalyticField:
    """The :class:`AnalyticField` of the matrix ``a`` (samples x features) with feature
    weights ``w`` (host vector or None): one read for the statistics; in memory with
    ``keep_transform``, a second that computes and keeps ``Q`` (and ``||Z||^2``)."""
    if backend.is_dask(a):
        a = _whole_series(a)
    m, n = a.shape
    nans, mean, std = _stats(a)
    partial = (nans > 0) & (nans < m)
    if partial.any():
        raise MissingValueError(
            "The Hilbert transform needs every feature complete along the sample dimension: "
            f"{int(partial.sum())} feature(s) are NaN at some samples but not all: "
            f"{locate(np.flatnonzero(partial))} (the FFT would spread each gap over the "
            "whole series). Fill them first, e.g. `da.interpolate_na('time')` or "
            "`da.fillna(0)` on anomalies; features NaN at every sample (land) are fine."
        )
    kept = np.flatnonzero(nans == 0)
    if kept.size == 0:
        raise ValueError("The data are NaN everywhere: no feature to decompose.")
    scale = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    if standardize:  # constant features (and land) get 0
        with np.errstate(invalid="ignore"):
            scale = np.where(std > 0, scale / np.where(std > 0, std, 1.0), 0.0)
    transform = {"padding": padding, "decay_factor": decay_factor}
    f = AnalyticField(a, kept, mean, std, scale, center, transform)
    if keep_transform and not backend.is_dask(a):
        f.q, f.total = _transform_all(f)
    return f


def _whole_series(a):
    """Dask data with the sample dimension in one chunk (lazily), features in blocks of
    about :data:`BLOCK_VALUES` values where it had to be rechunked."""
    if len(a.chunks[0]) > 1:
        m = a.shape[0]
        width = max(1, min(max(a.chunks[1]), BLOCK_VALUES // max(m, 1)))
        a = a.rechunk({0: -1, 1: width})
    block = a.shape[0] * max(a.chunks[1]) * 8
    if block > BLOCK_WARN_BYTES:
        warnings.warn(
            f"The Hilbert transform needs each series whole: a block of the sample dimension "
            f"in one chunk holds {block / 2**20:.0f} MiB, and is transformed with a few "
            "copies of its size. Chunk the feature dimensions smaller (e.g. "
            "`da.chunk({'time': -1, 'lat': 10})`) to use less memory.",
            UserWarning,
            stacklevel=4,
        )
    return a


def _stats(a) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per feature (host): NaN count, mean, standard deviation; one read."""
    m, n = a.shape
    if backend.is_dask(a):
        stats = a.map_blocks(analytic.column_stats, dtype=np.float64, chunks=((3,), a.chunks[1]))
        (out,) = backend.compute(stats)
    else:
        xp = backend.api(a)
        step = max(1, BLOCK_VALUES // max(m, 1))
        out = xp.concat(
            [analytic.column_stats(a[:, j : min(n, j + step)]) for j in range(0, n, step)], axis=1
        )
    out = np.asarray(backend.to_numpy(out), dtype=np.float64)
    return out[0], out[1], out[2]


def _transform_all(f: AnalyticField):
    """``Q`` of every kept feature (samples x kept, float64, in the data's memory), a
    block at a time (NumPy: on a few threads, the FFT being single-threaded), and
    ``||Z||_F^2``."""
    xp = backend.api(f.data)
    m, n = f.shape
    q = xp.empty((m, n), dtype=xp.float64, device=backend.device(f.data))

    def one(block):
        return transform_into(q, f.columns, f.mu_kept, f.d_kept, f.transform, *block)

    blocks = f.blocks()
    threads = min(len(blocks), FFT_THREADS)
    if backend.is_numpy(f.data) and threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            sums = list(pool.map(one, blocks))
    else:
        sums = [one(b) for b in blocks]
    return q, float(sum(sums))


def transform_into(out, columns: Callable, mu, d, transform: dict, s: int, e: int) -> float:
    """Write ``Q = H[(X - mu) d]`` of the kept features ``s`` to ``e`` into ``out[:, s:e]``
    (``columns(j, k)``: the data's kept features ``j`` to ``k``), a few columns at a time
    (small temporaries); returns their ``||P||^2 + ||Q||^2``."""
    xp = backend.api(out)
    total = 0.0
    for j, k in _pieces(out, s, e):
        p = analytic.centered(columns(j, k), mu[j:k], d[j:k])
        q = analytic.hilbert_transform(p, **transform)
        out[:, j:k] = q
        total += backend.to_scalar(xp.sum(p * p) + xp.sum(q * q))
    return total


def _pieces(data, s: int, e: int) -> list[tuple[int, int]]:
    """``[s, e)`` in pieces of :data:`.analytic.FFT_COLUMNS` columns (NumPy), or whole."""
    step = analytic.FFT_COLUMNS if backend.is_numpy(data) else max(1, e - s)
    return [(j, min(e, j + step)) for j in range(s, e, step)]


# --------------------------------------------------------------------- Dask


def _chunk_plan(f: AnalyticField) -> list[tuple[int, np.ndarray, int, int]]:
    """Per chunk of features: ``(chunk index, its kept columns (local), s, e)`` with
    ``[s, e)`` their kept-feature range; chunks without kept features left out."""
    plan, start = [], 0
    for j, width in enumerate(f.data.chunks[1]):
        lo = np.searchsorted(f.kept, start)
        hi = np.searchsorted(f.kept, start + width)
        if hi > lo:
            plan.append((j, f.kept[lo:hi] - start, int(lo), int(hi)))
        start += width
    return plan


def _chunk_products(x, local, mu, d, transform, T2, W2):
    """One chunk's share: ``(rows, share of R W, ||Z||^2 of the chunk)``, on the host.

    A few columns at a time (:func:`_pieces`): each piece's ``P`` and ``Q``
    are made, multiplied and dropped, so the temporaries are small whatever
    the chunk (the chunk itself is Dask's)."""
    xp = backend.api(x)
    mu, d = backend.on_backend_of(mu, x), backend.on_backend_of(d, x)
    T = None if T2 is None else backend.on_backend_of(T2, x)
    W = W2 if W2 is None or isinstance(W2, str) else backend.on_backend_of(W2, x)
    rows, share, total = [], None, 0.0
    for j, k in _pieces(x, 0, local.size):
        cols = local[j:k]
        if cols[-1] - cols[0] == k - j - 1:
            piece = x[:, int(cols[0]) : int(cols[-1]) + 1]
        else:
            piece = xp.take(x, backend.on_backend_of(cols, x), axis=1)
        p = analytic.centered(piece, mu[j:k], d[j:k])
        q = analytic.hilbert_transform(p, **transform)
        total += backend.to_scalar(xp.sum(p * p) + xp.sum(q * q))
        w = W if W is None or isinstance(W, str) else W[j:k, :]
        r, g = analytic.block_products(p, q, None, None, T, w)
        if r is not None:
            rows.append(r)
        if g is not None:
            share = g if share is None else share + g
    rows = backend.to_numpy(xp.concat(rows, axis=0)) if rows else None
    share = None if share is None else backend.to_numpy(share)
    return rows, share, total


def _dask_products(f: AnalyticField, T2, W2, fuse: bool):
    """The products of Dask data: one read, chunks transformed on the fly."""
    import dask

    blocks = f.data.to_delayed().ravel()
    T2d = None if T2 is None else dask.delayed(T2)
    call = dask.delayed(_chunk_products, nout=3, pure=True)
    rows, shares, totals = [], [], []
    for j, local, s, e in _chunk_plan(f):
        w = "fused" if fuse else (None if W2 is None else W2[s:e])
        r, g, t = call(blocks[j], local, f.mu_kept[s:e], f.d_kept[s:e], f.transform, T2d, w)
        rows.append(r)
        shares.append(g)
        totals.append(t)
    want_rows, want_share = T2 is not None, W2 is not None or fuse
    rows, share, totals = dask.compute(
        rows if want_rows else [], _tree_sum(shares) if want_share else None, totals
    )
    out_rows = np.concatenate(rows, axis=0) if want_rows else None
    return out_rows, share, float(sum(totals))


def _tree_sum(parts: list):
    """The sum of delayed arrays, pairwise (a partial sum is freed once added)."""
    import dask

    add = dask.delayed(np.add, pure=True)
    while len(parts) > 1:
        pairs = [parts[i : i + 2] for i in range(0, len(parts), 2)]
        parts = [add(*pair) if len(pair) == 2 else pair[0] for pair in pairs]
    return parts[0]


def _dask_formed(f: AnalyticField) -> np.ndarray:
    """``Z`` of Dask data in host memory, each chunk written in place once computed
    (``da.store``: one computation, so a rechunked input is read once)."""
    import dask.array as da

    m, n = f.shape
    plan = {j: (local, s, e) for j, local, s, e in _chunk_plan(f)}
    widths = tuple(plan[j][0].size if j in plan else 0 for j in range(len(f.data.chunks[1])))

    def chunk(x, block_id=None):
        if block_id[1] not in plan:
            return np.empty((m, 0), dtype=np.complex128)
        local, s, e = plan[block_id[1]]
        x = x[:, local] if local.size != x.shape[1] else x
        mu, d = backend.on_backend_of(f.mu_kept[s:e], x), backend.on_backend_of(f.d_kept[s:e], x)
        p = analytic.centered(x, mu, d)
        q = analytic.transformed(p, **f.transform, columns=analytic.FFT_COLUMNS)
        return np.asarray(backend.to_numpy(q), dtype=np.complex128) * 1j + backend.to_numpy(p)

    lazy = f.data.map_blocks(
        chunk,
        dtype=np.complex128,
        chunks=((m,), widths),
        meta=np.empty((0, 0), dtype=np.complex128),
    )
    Z = np.empty((m, n), dtype=np.complex128)
    da.store(lazy, Z, lock=False)
    flat = Z.reshape(-1)
    f.total = float(np.vdot(flat, flat).real)
    return Z
