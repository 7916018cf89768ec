"""Compressed (randomized) SVD that reads the data q + 1 times.

Notation: ``A`` is the (m samples x n features) data and

    B = (A - 1 mu^T) diag(w)

the matrix actually decomposed (centering and weights optional). The data are
cut into *stripes* that each hold one dimension whole. Call ``C`` the matrix
whose rows are cut: ``C = B`` when stripes are blocks of samples ("rows"
layout) and ``C = B^T`` when they are blocks of features ("cols" layout). The
whole dimension of a stripe is the *thin side* (length ``nc``); small
``nc x l`` matrices live there.

One read of a stripe ``C_i`` gives both ``Y_i = C_i W`` and its share
``C_i^T Y_i`` of ``Z = C^T C W``. So a pass over the data is one step of
subspace iteration on ``C^T C``, and after ``q + 1`` passes

    Y = C W_q,  W_q = orth((C^T C)^q Omega),  Z = C^T Y,

i.e. ``Y`` spans ``(C C^T)^q C Omega``: the same subspace as the normalized
power scheme of Halko, Martinsson & Tropp (2011, Alg. 4.4) with ``q``
iterations, which needs ``2q + 2`` passes. The projection ``Q^T C`` it then
needs is recovered from the same last pass without reading the data again
(as in single-pass randomized SVD: Tropp, Yurtsever, Udell & Cevher 2017;
Yu, Gu, Li et al. 2017): with ``Y^T Y = V_y diag(s^2) V_y^T`` and
``Q = Y V_y diag(1/s)``, ``Q^T C = diag(1/s) V_y^T Z^T``. Directions of ``Y``
with ``s_j < sqrt(eps) s_1`` are numerical noise and are dropped there.

Every iterate is orthonormalized (QR of the ``nc x l`` matrix ``Z``), so the
tail of fast-decaying spectra is not lost as it is with unnormalized power
iterations. Centering and weights never touch the data: they enter as
rank-one and diagonal corrections of the small products, and the mean itself
is accumulated in the first pass (a column of ones appended to the sketch).
Integer and float32 data are multiplied in float32, a sub-block at a time
(a uint8 block becomes float32 only while it is being multiplied); partial
sums, Gram matrices and the small factorizations are float64.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .. import _backend
from ._common import (
    Decomposition,
    Describe,
    check_nan_counts,
    eps_tolerance,
    fix_signs,
    missing_mask,
    missing_mode,
    nan_rows,
    validate_k,
)
from ._exec import Eager, Lazy, Stepwise

__all__ = ["randomized_svd", "DEFAULT_N_POWER_ITER", "DEFAULT_N_OVERSAMPLES"]

DEFAULT_N_POWER_ITER = 4
DEFAULT_N_OVERSAMPLES = 10

# Elements of a float sub-block multiplied at once inside a stripe (4 MiB in float32).
_SUB_BLOCK_ELEMENTS = 1 << 20
# On a GPU, sub-blocks are 64x larger (256 MiB in float32): fewer, larger kernel launches.
_GPU_SUB_BLOCK_ELEMENTS = 1 << 26
# In-memory NumPy data at least this large run as views of about this size on
# a small local thread pool.
_THREADED_MIN_BYTES = 64 * 2**20
_THREADED_STRIPE_BYTES = 64 * 2**20


def randomized_svd(
    a,
    k: int,
    *,
    center: bool = False,
    weights=None,
    n_power_iter: int = DEFAULT_N_POWER_ITER,
    n_oversamples: int = DEFAULT_N_OVERSAMPLES,
    seed: int | None = None,
    dtype=None,
    missing: str = "error",
    krylov: bool = False,
    describe: Describe | None = None,
    compute: bool = False,
    progress=None,
) -> Decomposition:
    """Rank-``k`` randomized SVD of ``B = (A - mean) * weights``.

    Parameters
    ----------
    a : array (m, n)
        NumPy, CuPy or Dask array, samples along rows, features along columns.
        Dask arrays give lazy results unless ``compute=True``.
    k : int
        Number of components.
    center : bool
        Remove each feature's (column's) mean over the samples.
    weights : array (n,), optional
        Per-feature factors applied after centering.
    n_power_iter : int
        Subspace (power) iterations ``q``; the data are read ``q + 1`` times.
    n_oversamples : int
        Extra sketch columns ``p``; the sketch has ``l = k + p`` columns.
    seed : int, optional
        Seed of the Gaussian test matrix (drawn on the data's backend).
    dtype : {None, "float32", "float64"}
        Precision of the products with the data; by default float64 data stay
        float64 and everything else is computed in float32.
    missing : {"error", "mean"}
        ``"error"``: NaN is allowed only in features NaN at every sample.
        ``"mean"``: NaN and negative values are missing and stand for their
        feature's mean over the samples where it is present, filled in each
        float sub-block as it is multiplied (no filled copy). When stripes
        are blocks of samples, the means take one extra read of the data.
    krylov : bool
        Keep every pass's sketch and take the singular vectors from their
        joint span (a block Krylov space, Musco & Musco 2015) instead of the
        last sketch only: the same reads of the data, much more accurate
        singular values when the spectrum decays slowly (e.g. the noise
        components of genotype data), for ``q + 1`` times the memory of the
        small sketches and a little more small math.
    describe : callable, optional
        Turns flat feature indices into a readable location for error messages.
    compute : bool
        Dask input only. False: one lazy graph for all passes. True: computed
        pass by pass (each pass one ``dask.compute`` of small results), which
        guarantees each chunk is read afresh per pass and held by no later
        pass, whatever the input's own graph.
    progress : object, optional
        With ``compute=True``: an object whose ``compute(obj, step)`` computes
        each pass while showing progress (see ``xsvd._progress.Progress``).

    Returns
    -------
    Decomposition

    Notes
    -----
    Memory: besides the stripes being read (one per worker thread), a NumPy
    float sub-block of about 4 MiB per stripe, and ``O((m + n) l)`` for the
    small matrices. The input is never copied whole, centered, weighted or
    converted to float.

    References
    ----------
    N. Halko, P. G. Martinsson and J. A. Tropp, Finding structure with
    randomness: probabilistic algorithms for constructing approximate matrix
    decompositions, SIAM Review 53(2), 217-288, 2011.

    J. A. Tropp, A. Yurtsever, M. Udell and V. Cevher, Practical sketching
    algorithms for low-rank matrix approximation, SIAM J. Matrix Anal. Appl.
    38(4), 1454-1485, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from xsvd.linalg import randomized_svd
    >>> a = np.random.default_rng(0).standard_normal((200, 50))
    >>> d = randomized_svd(a, 5, seed=0)
    >>> d.U.shape, d.S.shape, d.V.shape
    ((200, 5), (5,), (50, 5))
    """
    m, n = a.shape
    k = validate_k(k, m, n, required=True)
    if not isinstance(n_power_iter, int | np.integer) or n_power_iter < 0:
        raise ValueError(f"n_power_iter must be an integer >= 0, got {n_power_iter!r}.")
    if not isinstance(n_oversamples, int | np.integer) or n_oversamples < 0:
        raise ValueError(f"n_oversamples must be an integer >= 0, got {n_oversamples!r}.")
    ctype = _backend.compute_dtype(a.dtype, dtype)
    xp = _backend.namespace(a)
    layout, ex = _plan(a, compute, progress)
    nc = n if layout == "rows" else m
    l = min(k + n_oversamples, m, n)
    w = None if weights is None else np.asarray(_backend.to_numpy(weights), dtype=np.float64)
    w_xp = None if w is None else xp.asarray(w)
    miss = missing_mode(a.dtype, missing)
    extra = 1 if (miss == "mean" and layout == "rows") else 0  # the means' own read
    if progress is not None:
        progress.total = n_power_iter + 1 + extra

    W = _backend.standard_normal(xp, seed, (nc, l), np.float64)
    run = _run_rows if layout == "rows" else _run_cols
    stripe_side, thin_side, S, mean, total_ss, nan_mask = run(
        ex, xp, W, l, k, m, n, n_power_iter, ctype, center, w_xp, miss, describe, krylov
    )
    if layout == "rows":
        U, V = stripe_side, thin_side
    else:
        U, V = thin_side, stripe_side
    U, V = fix_signs(U, V)
    if nan_mask is not None:
        V = nan_rows(V, nan_mask)
    settings = dict(
        k=k,
        n_power_iter=int(n_power_iter),
        n_oversamples=int(n_oversamples),
        seed=seed,
        dtype=str(ctype),
        layout=layout,
        passes=int(n_power_iter) + 1 + extra,
        missing=missing,
        krylov=bool(krylov),
    )
    return Decomposition(U, S, V, mean, total_ss, nan_mask, "compressed", settings)


# --------------------------------------------------------------------------- plan


def _plan(a, compute: bool, progress=None):
    """Choose the stripe layout and the executor.

    In memory: the thin side is the shorter dimension. Dask: stripes follow
    the chunks (a dimension already in one chunk is the thin side); when both
    dimensions are chunked, the shorter one is the thin side and each stripe
    is the list of its blocks, merged by the kernel a sub-block at a time (no
    rechunk: a rechunk in the graph would defeat re-reading per pass).
    """
    m, n = a.shape
    if not _backend.is_dask(a):
        layout = "rows" if n <= m else "cols"
        axis = 0 if layout == "rows" else 1
        threads = 1
        if _backend.namespace(a) is np and a.nbytes >= _THREADED_MIN_BYTES:
            # large NumPy data: views of ~64 MiB on a few threads, one BLAS thread each,
            # as on Dask (faster than one multi-threaded BLAS on skinny products)
            threads = os.cpu_count() or 1
        stripe = max(1, _THREADED_STRIPE_BYTES // (a.itemsize * a.shape[1 - axis]))
        return layout, Eager(a, axis, threads=threads, stripe=stripe if threads > 1 else None)
    if a.numblocks[1] == 1:
        layout = "rows"
    elif a.numblocks[0] == 1:
        layout = "cols"
    else:
        layout = "rows" if n <= m else "cols"
    axis = 0 if layout == "rows" else 1
    _check_chunk_sizes(a, axis)
    return layout, (Stepwise(a, axis, progress=progress) if compute else Lazy(a, axis))


#: A stripe (one chunk along the cut dimension, the other dimension whole)
#: above this size makes every worker thread hold that much: warn.
LARGE_STRIPE_BYTES = 2 * 2**30
#: Chunks below this size, when there are very many, cost more in scheduling than in reading.
SMALL_CHUNK_BYTES = 2**20


def _check_chunk_sizes(a, axis: int) -> None:
    """Warn, with what to do, about chunks too large or too small for streaming."""
    other = 1 - axis
    itemsize = _backend.bytes_per_value(a)
    stripe = max(a.chunks[axis]) * a.shape[other] * itemsize
    if stripe > LARGE_STRIPE_BYTES:
        fit = max(1, int(LARGE_STRIPE_BYTES // 4 // (a.shape[other] * itemsize)))
        warnings.warn(
            f"Each stripe of the data read at once holds {stripe / 2**30:.1f} GiB "
            f"({max(a.chunks[axis])} x {a.shape[other]} values), and every worker "
            "thread holds one. For streaming with bounded memory, use smaller chunks "
            f"along that dimension (about {fit} rows of the matrix), e.g. when opening "
            "with `xsvd.open_zarr(..., chunks=...)` or with `.chunk(...)`.",
            UserWarning,
            stacklevel=4,
        )
    mean_chunk = a.size * itemsize / max(a.npartitions, 1)
    if a.npartitions > 10_000 and mean_chunk < SMALL_CHUNK_BYTES:
        warnings.warn(
            f"The data have {a.npartitions} chunks of {mean_chunk / 2**10:.0f} KiB on "
            "average: scheduling will cost more than reading. Open Zarr stores with "
            "`xsvd.open_zarr(...)`, which merges small storage chunks on read, or "
            "rechunk the source to chunks of tens of MiB.",
            UserWarning,
            stacklevel=4,
        )


# ------------------------------------------------------------ "rows" layout (C = B)


def _run_rows(ex, xp, W, l, k, m, n, q, ctype, center, w, miss, describe, krylov=False):
    """Stripes are blocks of samples; the thin side is the features."""
    meta, meta1, meta0, metab = _metas(xp)
    w = ex.put(w)  # one copy in the graph, shared by the small tasks
    mean = None
    fill = None
    sketches = []  # per pass: stripe-side sketch blocks, their mean row, thin side
    if miss == "mean":
        # each feature's mean over its present values: one read before the passes
        sums, counts = ex.map(_kernel_present, ex.stripes(), nout=2)
        fill = ex.call(_present_means, ex.sum(sums), ex.sum(counts), ctype)
        fill = ex.checkpoint(fill)
    for p in range(q + 1):
        first = p == 0
        DW = ex.call(_scale_rows, W, w, ctype)
        after = W if not first else fill if miss == "mean" else None
        stripes = ex.stripes(after=after)
        # the mean is known after the first pass: later passes center each
        # sub-block as it is multiplied (no cancellation in the products)
        shift = None if (first or not center) else ex.call(_as_dtype, mean, ctype)
        Yraw, P, Graw, ysum, sumsq, nancnt = ex.map(
            _kernel_rows, stripes, DW, shift, first, miss, fill, nout=6
        )
        P_tot = ex.sum(P)
        if first:
            mean, total_ss, nan_mask = ex.call(
                _rows_stats,
                P_tot,
                ex.sum(sumsq),
                ex.sum(nancnt) if miss else None,
                m,
                center,
                w,
                describe,
                miss,
                nout=3,
            )
        Z, G, c = ex.call(
            _rows_correct,
            P_tot,
            ex.sum(Graw),
            ex.sum(ysum),
            DW,
            mean if shift is None else None,
            w,
            m,
            nout=3,
        )
        if p < q:
            W = ex.call(_orth, Z)
            if krylov:
                W, Z, c, Yraw, mean, total_ss, nan_mask = ex.checkpoint(
                    (W, Z, c, Yraw, mean, total_ss, nan_mask)
                )
                sketches.append((Yraw, c, Z))
            else:
                W, mean, total_ss, nan_mask = ex.checkpoint((W, mean, total_ss, nan_mask))
        else:
            Z, G, c, mean, total_ss, nan_mask, Yraw = ex.checkpoint(
                (Z, G, c, mean, total_ss, nan_mask, Yraw)
            )
            sketches.append((Yraw, c, Z))
    if krylov:
        U, S, thin = _krylov_finish(ex, sketches, k, ctype, (m, k), meta)
    else:
        M, thin, S = ex.call(_finalize, Z, G, k, ctype, nout=3)
        U_parts = ex.map(_rows_scores, Yraw, c, M, nout=1)
        U = ex.concat(U_parts, [(s, k) for s in ex.sizes], np.float64, axis=0, meta=meta)
    V = ex.array(thin, (n, k), np.float64, meta=meta)
    S = ex.array(S, (k,), np.float64, meta=meta1)
    mean = None if not center else ex.array(mean, (n,), np.float64, meta=meta1)
    total_ss = ex.array(total_ss, (), np.float64, meta=meta0)
    nan_mask = None if not miss else ex.array(nan_mask, (n,), bool, meta=metab)
    return U, V, S, mean, total_ss, nan_mask


def _metas(xp):
    """Empty arrays of the data's backend for 2-D, 1-D, 0-d float and 1-D bool results."""
    f = np.float64
    return xp.empty((0, 0), f), xp.empty((0,), f), xp.empty((), f), xp.empty((0,), bool)


def _scale_rows(W, w, ctype):
    out = W if w is None else W * w[:, None]
    return out.astype(ctype, copy=False)


def _sub_step(other: int, xp=np) -> int:
    """Rows (or columns) per float sub-block when the other side has ``other`` entries."""
    size = _SUB_BLOCK_ELEMENTS if xp is np else _GPU_SUB_BLOCK_ELEMENTS
    return max(64, size // max(other, 1))


def _sub_blocks(length: int, other: int, xp=np):
    step = _sub_step(other, xp)
    for start in range(0, length, step):
        yield start, min(start + step, length)


def _as_dtype(x, dtype):
    return x.astype(dtype)


def _stripe_sub(blocks, axis: int, start: int, stop: int, ctype):
    """Float sub-block ``[start:stop]`` along ``axis`` of a stripe given as blocks.

    ``axis=0``: rows ``start:stop`` of blocks laid side by side (a sample
    stripe); ``axis=1``: columns ``start:stop`` of blocks stacked vertically (a
    feature stripe). A single block gives a view or a converted copy; several
    blocks are merged into one small buffer (never the whole stripe).
    """
    if len(blocks) == 1:  # a view, or a float copy (unpacked, for packed genotypes)
        b = blocks[0]
        return (b[start:stop] if axis == 0 else b[:, start:stop]).astype(ctype, copy=False)
    xp = _backend.namespace(blocks[0])
    if axis == 0:
        out = xp.empty((stop - start, sum(b.shape[1] for b in blocks)), dtype=ctype)
        pos = 0
        for b in blocks:
            out[:, pos : pos + b.shape[1]] = b[start:stop].astype(ctype, copy=False)
            pos += b.shape[1]
    else:
        out = xp.empty((sum(b.shape[0] for b in blocks), stop - start), dtype=ctype)
        pos = 0
        for b in blocks:
            out[pos : pos + b.shape[0]] = b[:, start:stop].astype(ctype, copy=False)
            pos += b.shape[0]
    return out


def _kernel_rows(blocks, DW, shift, first, miss, fill):
    """One read of a sample stripe: ``Y_i = C_i DW`` and ``C_i^T [Y_i, 1]``.

    ``shift`` (the feature means, when known) is subtracted from each
    sub-block before it is multiplied; missing values are replaced by
    ``fill`` (``missing="mean"``) or zero first.
    """
    xp = _backend.namespace(blocks[0])
    ctype = DW.dtype
    mi, n = blocks[0].shape[0], DW.shape[0]
    l = DW.shape[1]
    Y = xp.empty((mi, l), dtype=ctype)
    P = xp.zeros((n, l + 1), dtype=np.float64)
    G = xp.zeros((l, l), dtype=np.float64)
    ysum = xp.zeros((l,), dtype=np.float64)
    sumsq = xp.zeros((n,), dtype=np.float64) if first else None
    nancnt = xp.zeros((n,), dtype=np.int64) if (first and miss) else None
    ext = xp.ones((min(mi, _sub_step(n, xp)), l + 1), dtype=ctype)
    for r0, r1 in _sub_blocks(mi, n, xp):
        sub = _stripe_sub(blocks, 0, r0, r1, ctype)
        if miss:
            sub, cnt = _fill_missing(xp, sub, miss, fill)
            if nancnt is not None:
                nancnt += cnt
        if shift is not None:
            sub = sub - shift
        y = sub @ DW
        Y[r0:r1] = y
        e = ext[: r1 - r0]
        e[:, :l] = y
        P += (sub.T @ e).astype(np.float64)
        y64 = y.astype(np.float64)
        G += y64.T @ y64
        ysum += y64.sum(axis=0)
        if sumsq is not None:
            sumsq += xp.einsum("ij,ij->j", sub, sub).astype(np.float64)
    return Y, P, G, ysum, sumsq, nancnt


def _fill_missing(xp, sub, miss, fill=None):
    """Replace the missing values of a float sub-block whose columns are features.

    ``miss="nan"``: NaN become 0. ``miss="mean"``: NaN and negative values
    become ``fill`` (per-feature means) or, when ``fill`` is None (the
    sub-block holds every sample), the mean of the column's present values.
    Returns the sub-block (a copy only when something was missing) and the
    number of missing values per column.
    """
    mask = missing_mask(xp, sub, miss)
    cnt = mask.sum(axis=0)
    if not bool(cnt.any()):
        return sub, cnt
    if miss != "mean":
        value = sub.dtype.type(0)
    elif fill is None:
        present = xp.where(mask, sub.dtype.type(0), sub).sum(axis=0, dtype=np.float64)
        value = (present / xp.maximum(sub.shape[0] - cnt, 1)).astype(sub.dtype)
    else:
        value = fill
    return xp.where(mask, value, sub), cnt


def _kernel_present(blocks):
    """Per-feature sum and count of the present values in a sample stripe."""
    xp = _backend.namespace(blocks[0])
    mi, n = blocks[0].shape[0], sum(b.shape[1] for b in blocks)
    sums = xp.zeros((n,), dtype=np.float64)
    counts = xp.zeros((n,), dtype=np.int64)
    for r0, r1 in _sub_blocks(mi, n, xp):
        sub = _stripe_sub(blocks, 0, r0, r1, np.float32)
        mask = missing_mask(xp, sub, "mean")
        sums += xp.where(mask, np.float32(0), sub).sum(axis=0, dtype=np.float64)
        counts += (r1 - r0) - mask.sum(axis=0)
    return sums, counts


def _present_means(sums, counts, ctype):
    xp = _backend.namespace(sums)
    return (sums / xp.maximum(counts, 1)).astype(ctype)


def _rows_stats(P, sumsq, nancnt, m, center, w, describe, miss):
    colsum = P[:, -1]
    nan_mask = None
    if nancnt is not None:
        if miss == "mean":
            nan_mask = nancnt == m
        else:
            nan_mask = check_nan_counts(_backend.to_numpy(nancnt), m, describe=describe)
            nan_mask = _backend.namespace(P).asarray(nan_mask)
    mean = colsum / m if center else None
    ss = sumsq - m * mean**2 if center else sumsq
    if w is not None:
        ss = ss * w**2
    return mean, ss.sum(), nan_mask


def _rows_correct(P, Graw, ysum, DW, mean, w, m):
    """Apply centering and weights to the pass's sums: ``Z = B^T Y``, ``G = Y^T Y``."""
    Pl = P[:, :-1]
    if mean is None:
        Z = Pl
        c = None
        G = Graw
    else:
        c = mean @ DW.astype(np.float64)  # (l,): the mean row of C DW
        Z = Pl - mean[:, None] * ysum[None, :]
        G = Graw - ysum[:, None] * c[None, :] - c[:, None] * ysum[None, :]
        G = G + m * c[:, None] * c[None, :]
    if w is not None:
        Z = Z * w[:, None]
    return Z, G, c


def _rows_scores(Y, c, M):
    Y = Y.astype(np.float64)
    if c is not None:
        Y = Y - c[None, :]
    return Y @ M


# ----------------------------------------------------------- "cols" layout (C = B^T)


def _run_cols(ex, xp, W, l, k, m, n, q, ctype, center, w, miss, describe, krylov=False):
    """Stripes are blocks of features (each holding every sample)."""
    meta, meta1, meta0, metab = _metas(xp)
    sketches = []
    w_parts = [
        None if w is None else w[o : o + s] for o, s in zip(ex.offsets, ex.sizes, strict=True)
    ]
    off = [int(o) for o in ex.offsets]
    for p in range(q + 1):
        first = p == 0
        Wext = ex.call(_append_ones, W, ctype)
        stripes = ex.stripes(after=None if first else W)
        out = ex.map(
            _kernel_cols,
            stripes,
            Wext,
            center,
            first,
            miss,
            describe,
            nout=6,
            per_stripe=(w_parts, off),
        )
        Yc, Zp, Gp, mean_p, ss_p, nan_p = out
        if first:
            means, sss, nans = mean_p, ss_p, nan_p
        Z = ex.sum(Zp)
        G = ex.sum(Gp)
        if p < q:
            W = ex.call(_orth, Z)
            if krylov:
                W, Z, Yc, means, sss, nans = ex.checkpoint((W, Z, Yc, means, sss, nans))
                sketches.append((Yc, None, Z))
            else:
                W, means, sss, nans = ex.checkpoint((W, means, sss, nans))
        else:
            Z, G, Yc, means, sss, nans = ex.checkpoint((Z, G, Yc, means, sss, nans))
            sketches.append((Yc, None, Z))
    if krylov:
        V, S, thin = _krylov_finish(ex, sketches, k, ctype, (n, k), meta)
    else:
        M, thin, S = ex.call(_finalize, Z, G, k, ctype, nout=3)
        V_parts = ex.map(_cols_loadings, Yc, M, nout=1)
        V = ex.concat(V_parts, [(s, k) for s in ex.sizes], np.float64, axis=0, meta=meta)
    U = ex.array(thin, (m, k), np.float64, meta=meta)
    S = ex.array(S, (k,), np.float64, meta=meta1)
    vec = [(s,) for s in ex.sizes]
    mean = None if not center else ex.concat(means, vec, np.float64, 0, meta=meta1)
    total_ss = ex.array(ex.call(_sum_scalars, *sss), (), np.float64, meta=meta0)
    nan_mask = None if not miss else ex.concat(nans, vec, bool, 0, meta=meta1)
    return V, U, S, mean, total_ss, nan_mask


def _append_ones(W, ctype):
    xp = _backend.namespace(W)
    ones = xp.ones((W.shape[0], 1), dtype=W.dtype)
    return xp.concatenate([W, ones], axis=1).astype(ctype, copy=False)


def _sum_scalars(*xs):
    return sum(xs)


def _kernel_cols(blocks, w, offset, Wext, center, first, miss, describe):
    """One read of a feature stripe ``A_j`` (m x n_j), i.e. rows of ``C = B^T``.

    Every feature has all its samples here, so its mean is exact and local:
    the column of ones appended to ``W`` gives the sums in the same product,
    and centering enters as rank-one corrections (measured to lose nothing
    here: the mean direction is not in the iterates).
    """
    xp = _backend.namespace(blocks[0])
    ctype = Wext.dtype
    m, nj = Wext.shape[0], blocks[0].shape[1]
    l = Wext.shape[1] - 1
    wsum = Wext[:, :l].astype(np.float64).sum(axis=0)
    Yc = xp.empty((nj, l), dtype=ctype)
    Z = xp.zeros((m, l), dtype=np.float64)
    G = xp.zeros((l, l), dtype=np.float64)
    corr = xp.zeros((l,), dtype=np.float64)
    mean = xp.empty((nj,), dtype=np.float64) if (first and center) else None
    nan_mask = xp.zeros((nj,), dtype=bool) if (first and miss) else None
    ss = 0.0
    for c0, c1 in _sub_blocks(nj, m, xp):
        sub = _stripe_sub(blocks, 1, c0, c1, ctype)
        if miss:
            # every sample of these features is here: missing="mean" fills the
            # column's own mean of present values
            sub, cnt = _fill_missing(xp, sub, miss)
            if nan_mask is not None and miss == "mean":
                nan_mask[c0:c1] = cnt == m
            elif nan_mask is not None:
                nan_mask[c0:c1] = xp.asarray(
                    check_nan_counts(
                        _backend.to_numpy(cnt), m, offset=offset + c0, describe=describe
                    )
                )
        raw = (sub.T @ Wext).astype(np.float64)  # (cs, l + 1): C_s W and row sums
        y = raw[:, :l]
        mu = raw[:, l] / m if center else None
        if mu is not None:
            y = y - mu[:, None] * wsum[None, :]
            if mean is not None:
                mean[c0:c1] = mu
        ws = None if w is None else xp.asarray(w[c0:c1])
        if ws is not None:
            y = y * ws[:, None]
        Yc[c0:c1] = y
        G += y.T @ y
        t = y if ws is None else y * ws[:, None]
        Z += (sub @ t.astype(ctype)).astype(np.float64)
        if mu is not None:
            corr += mu @ t
        if first:
            sq = xp.einsum("ij,ij->j", sub, sub).astype(np.float64)
            if mu is not None:
                sq = sq - m * mu**2
            if ws is not None:
                sq = sq * ws**2
            ss = ss + float(sq.sum())
    Z -= corr[None, :]
    return Yc, Z, G, mean, ss, nan_mask


def _cols_loadings(Yc, M):
    return Yc.astype(np.float64) @ M


# ---------------------------------------------------------------- shared small math


def _krylov_finish(ex, sketches, k, ctype, shape, meta):
    """Singular vectors from the span of every pass's sketch (block Krylov).

    ``sketches`` holds per pass ``(Y blocks, mean row or None, Z)`` with
    ``Z = C^T Y``; stacking them side by side gives ``K`` and ``C^T K``, and
    ``_finalize`` works on those exactly as on one sketch. Only small
    matrices are touched: the data are not read again.
    """
    blocks = [y for y, _, _ in sketches]
    rows = [c for _, c, _ in sketches]
    K, G = ex.call(_krylov_basis, blocks, rows, nout=2)
    Z = ex.call(_hstack, [z for _, _, z in sketches])
    M, thin, S = ex.call(_finalize, Z, G, k, ctype, nout=3)
    side = ex.array(ex.call(_matmul, K, M), shape, np.float64, meta=meta)
    return side, S, thin


def _krylov_basis(blocks_per_pass, rows, *_):
    """``K = [Y_0 - c_0, ..., Y_q - c_q]`` (float64) and its Gram matrix ``K^T K``."""
    xp = _backend.namespace(blocks_per_pass[0][0])
    parts = []
    for blocks, c in zip(blocks_per_pass, rows, strict=True):
        y = xp.concatenate([b.astype(np.float64) for b in blocks], axis=0)
        parts.append(y if c is None else y - c[None, :])
    K = xp.concatenate(parts, axis=1)
    return K, K.T @ K


def _hstack(parts):
    return _backend.namespace(parts[0]).concatenate(parts, axis=1)


def _matmul(a, b):
    return a @ b


def _orth(Z):
    """Orthonormal basis of the iterate (Householder QR, float64)."""
    xp = _backend.namespace(Z)
    q, _ = xp.linalg.qr(Z)
    return q


def _finalize(Z, G, k, ctype):
    """Rank-k SVD of ``Q^T C`` from ``G = Y^T Y`` and ``Z = C^T Y``.

    Returns ``M`` (l x k) that maps stripe-side ``Y`` blocks to singular
    vectors, the thin-side singular vectors (nc x k) and the singular values.
    """
    xp = _backend.namespace(Z)
    evals, evecs = xp.linalg.eigh(G)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    s = xp.sqrt(xp.clip(evals, 0, None))
    keep = s > eps_tolerance(ctype) * s[0] if float(s[0]) > 0 else s > 0
    r = int(keep.sum())
    T = evecs[:, :r] / s[:r]
    Ut, sig, Vt = xp.linalg.svd((Z @ T).T, full_matrices=False)
    kk = min(k, r)
    M = T @ Ut[:, :kk]
    thin = Vt[:kk].T
    sig = sig[:kk]
    if kk < k:
        warnings.warn(
            f"The data have numerical rank {kk} < k={k}: the last {k - kk} components are zero.",
            RuntimeWarning,
            stacklevel=2,
        )
        M = xp.concatenate([M, xp.zeros((M.shape[0], k - kk))], axis=1)
        thin = xp.concatenate([thin, xp.zeros((thin.shape[0], k - kk))], axis=1)
        sig = xp.concatenate([sig, xp.zeros(k - kk)])
    return M, thin, sig
