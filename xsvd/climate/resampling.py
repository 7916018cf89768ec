"""The bootstrap's engine: every replicate's products from one read, block Krylov on all.

A replicate that draws sample ``i`` ``c_i`` times is the matrix

    B_c = diag(sqrt(c)) (A - 1 mu_c^T) diag(w),    mu_c = A^T c / m,

so one read of a block of features (holding every sample) gives the block's
share of ``B_c B_c^T T_c`` for every replicate ``c`` at once
(:func:`apply_block`), and of the patterns ``B_c^T u / s``
(:func:`patterns_block`). :func:`run_batch` runs block Krylov (block
Lanczos with full reorthogonalization, the core's
:mod:`xsvd.core.randomized.small`) on every replicate's ``B_c B_c^T``
(samples x samples) in the same reads, and stops as the core's solvers do:
by default once every replicate's estimated relative errors of its ``k``
singular values and residuals are below ``tol`` (a replicate that has
converged is not multiplied again), when the Krylov space fills the
samples, or at the cap (:class:`Stopping`).

Every array works through its array-API namespace (:func:`xsvd.core.backend.api`):
the blocks are NumPy, CuPy or another library's arrays (a device's), or the
chunks of a Dask array; the per-replicate matrices (samples x block) live
where the data's blocks are. Only small arrays cross between host and device,
through :func:`xsvd.core.backend.transfer` (counted): the counts and start
blocks going in, a few numbers per replicate and pass (Ritz values, residual
norms, stop decisions) coming out. Every small step is float64.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..core import MissingValueError, backend
from ..core.randomized.small import (
    estimates_are_bounds,
    krylov_finish,
    orth,
    orth_against,
    thin_errors,
    unknown_errors,
)

__all__ = ["Reader", "Stopping", "Batch", "run_batch", "apply_block", "patterns_block"]

#: In-memory data are multiplied in blocks of features holding about this many intermediates.
BLOCK_VALUES = 2**22

#: Why a batch's passes stopped (``settings["stopped"]``).
CONVERGED, CAP, SPACE_FULL, FIXED = "converged", "cap", "space full", "n_power_iter"


@dataclass(frozen=True)
class Stopping:
    """When the passes of a batch stop.

    ``most``: passes at most (``n_power_iter + 1`` when fixed); ``tol``: stop
    earlier once every replicate's estimated relative errors (of each of its
    ``k`` singular values, and its residuals) are at most this; None: exactly
    ``most`` passes (unless the Krylov space fills the samples first).
    """

    most: int
    tol: float | None

    @property
    def limit(self) -> str:
        """The reason given when ``most`` passes were made."""
        return CAP if self.tol is not None else FIXED


@dataclass(frozen=True)
class Batch:
    """One batch of replicates (column 0: the data themselves), on the data's device.

    ``S`` (B, k), ``ss`` (B,): ``||B_c||_F^2``, ``V`` (B or 1, features, k),
    ``dots`` (B, k): each pattern's dot product with column 0's, ``U0`` (m, k)
    the data's sample-side vectors, ``errors`` (B, k, 3): the estimated errors
    (S, angle, residual) of every replicate, ``passes`` (the most of any
    replicate), ``stopped`` (why), ``bounds`` (whether the estimates are
    bounds, :func:`~xsvd.core.randomized.small.estimates_are_bounds`).
    """

    S: object
    ss: object
    V: object
    dots: object
    U0: object
    errors: object
    passes: int
    stopped: str
    bounds: bool


def _floats(x):
    """A block in float64, NaN as 0, and its NaN mask: ``(xp, x, nan)``."""
    xp = backend.api(x)
    x = xp.astype(x, xp.float64, copy=False)
    nan = xp.isnan(x)
    return xp, xp.where(nan, 0.0, x), nan


def apply_block(x, w, C, T, center: bool, first: bool):
    """One block's share of ``B_c B_c^T T_c`` for every replicate.

    ``x`` (m x f) every sample of some features, ``w`` their weights (or
    None), ``C`` (m x B) the counts, ``T`` (B x m x l). Returns ``(flat,
    nan_counts)``: ``flat`` holds the (B, m, l) products and, in the ``first``
    read, the B shares of ``||B_c||_F^2`` and the number of the block's
    features that are NaN at some samples but not all; ``nan_counts`` (first
    read) the NaN samples of each feature (else None).
    """
    xp, x, nan = _floats(x)
    m, f = x.shape
    if center:  # the full sample's mean: replicate means are then small corrections
        x = x - xp.mean(x, axis=0)
    B, _, l = T.shape
    s = xp.sqrt(C)  # m x B
    ST = s.T[:, :, None] * T  # B x m x l
    Y = xp.reshape(x.T @ xp.reshape(xp.permute_dims(ST, (1, 0, 2)), (m, B * l)), (f, B, l))
    mu = (x.T @ C) / m if center else None  # f x B
    if center:
        Y = Y - mu[:, :, None] * xp.sum(ST, axis=1)[None, :, :]
    if w is not None:
        Y = w[:, None, None] * Y
    DY = Y if w is None else w[:, None, None] * Y
    out = xp.permute_dims(xp.reshape(x @ xp.reshape(DY, (f, B * l)), (m, B, l)), (1, 0, 2))
    if center:  # sum_f mu[f, b] DY[f, b, :]
        shift = xp.permute_dims(mu, (1, 0))[:, None, :] @ xp.permute_dims(DY, (1, 0, 2))
        out = out - shift
    out = s.T[:, :, None] * out
    if not first:
        return xp.reshape(out, (-1,)), None
    w2 = 1.0 if w is None else (w**2)[:, None]
    ss = xp.sum(((x**2).T @ C) * w2, axis=0)
    if center:
        ss = ss - m * xp.sum(mu**2 * w2, axis=0)
    counts = xp.sum(xp.astype(nan, xp.int64), axis=0)
    partial = xp.sum(xp.astype((counts > 0) & (counts < m), xp.float64))[None]
    return xp.concat([xp.reshape(out, (-1,)), ss, partial]), counts


def patterns_block(x, w, C, U, S, center: bool, keep: bool):
    """One block's patterns ``B_c^T u / s`` and their dot products with column 0's.

    Returns ``(dots (B, k), V)`` with ``V`` (B or 1, f, k): every replicate's
    (``keep``) or column 0's; NaN where the data are NaN at every sample.
    """
    xp, x, nan = _floats(x)
    dead = xp.all(nan, axis=0)
    m, f = x.shape
    if center:
        x = x - xp.mean(x, axis=0)
    B, _, k = U.shape
    s = xp.sqrt(C)
    SU = s.T[:, :, None] * U
    V = xp.reshape(x.T @ xp.reshape(xp.permute_dims(SU, (1, 0, 2)), (m, B * k)), (f, B, k))
    if center:
        V = V - ((x.T @ C) / m)[:, :, None] * xp.sum(SU, axis=1)[None, :, :]
    if w is not None:
        V = w[:, None, None] * V
    positive = S > 0
    V = xp.where(positive[None, :, :], V / xp.where(positive, S, 1.0)[None, :, :], 0.0)
    V = xp.permute_dims(V, (1, 0, 2))  # B x f x k
    dots = xp.sum(V[0:1, :, :] * V, axis=1)
    V = V if keep else V[0:1, :, :]
    return dots, xp.where(dead[None, :, None], xp.nan, V)


class Reader:
    """Runs a per-block function over blocks of features that hold every sample.

    One call of :meth:`read` is one read of the data (one ``dask.compute``
    for Dask data, whose sample dimension is put in one chunk, lazily).
    ``put`` moves a small host array to where the data's blocks are.
    """

    def __init__(self, a, w, width: int):
        self.lazy = backend.is_dask(a)
        self.like = a
        self.xp = backend.api(a)
        self.n_features = int(a.shape[1])
        self.reads = 0
        if self.lazy:
            a = a.rechunk({0: -1}) if len(a.chunks[0]) > 1 else a
            edges = np.cumsum((0, *a.chunks[1]))
            self.blocks = list(a.to_delayed().ravel())
        else:
            step = max(64, BLOCK_VALUES // max(width, 1))
            edges = np.r_[np.arange(0, a.shape[1], step), a.shape[1]]
            self.blocks = [a[:, i:j] for i, j in zip(edges[:-1], edges[1:], strict=True)]
        self.edges = edges
        if w is not None:
            w = backend.transfer(np.asarray(backend.to_numpy(w), dtype=np.float64), a)
        self.weights = [
            None if w is None else w[i:j] for i, j in zip(edges[:-1], edges[1:], strict=True)
        ]

    def put(self, x):
        """A host array in float64, moved to where the data's blocks are (counted)."""
        return backend.transfer(np.asarray(x, dtype=np.float64), self.like)

    def host(self, x) -> np.ndarray:
        """A small array of the data's device on the host (counted)."""
        return backend.to_numpy(x)

    def read(self, fn, *args):
        """``fn(block, weights, *args) -> (summed, gathered)`` on every block, in one read:
        the sum of the first outputs, and the list of the second."""
        self.reads += 1
        if not self.lazy:
            parts = [fn(b, w, *args) for b, w in zip(self.blocks, self.weights, strict=True)]
            total = parts[0][0]
            for p in parts[1:]:
                total = total + p[0]
            return total, [p[1] for p in parts]
        import dask
        from dask import delayed

        shared = [delayed(x, pure=True) if hasattr(x, "shape") else x for x in args]
        call = delayed(fn, pure=True, nout=2)
        parts = [call(b, w, *shared) for b, w in zip(self.blocks, self.weights, strict=True)]
        sums = [p[0] for p in parts]
        while len(sums) > 1:  # a tree: few partial sums in memory at once
            pairs = [
                delayed(operator.add)(p, q) for p, q in zip(sums[::2], sums[1::2], strict=False)
            ]
            sums = pairs + (sums[-1:] if len(sums) % 2 else [])
        total, gathered = dask.compute(sums[0], [p[1] for p in parts])
        return total, list(gathered)

    def check_nan(self, partial, counts, m: int, locate=None) -> None:
        """Raise when a feature is NaN at some samples but not all (``partial``: their
        number, from the first read; ``counts``: each block's NaN counts per feature)."""
        if float(self.host(partial)[0]) == 0:
            return
        host = np.concatenate([np.asarray(self.host(c)) for c in counts])
        bad = np.flatnonzero((host > 0) & (host < m))
        if locate is not None:
            where = locate(bad)
        else:
            where = "feature index " + ", ".join(str(int(i)) for i in bad[:10])
            where += f" and {bad.size - 10} more" if bad.size > 10 else ""
        raise MissingValueError(
            f"{bad.size} feature(s) are NaN at some samples but not all: {where}. The "
            "bootstrap needs complete features (NaN at every sample, e.g. land, is fine). "
            "Fill them first (e.g. `da.interpolate_na(dim)`) or drop them "
            "(`da.dropna(dim, how='any')` over the samples)."
        )


def run_batch(
    reader: Reader, C, start, k: int, stop: Stopping, center: bool, keep: bool, locate=None
) -> Batch:
    """One batch of replicates: block Krylov on every ``B_c B_c^T`` in shared reads.

    ``C`` (m x B, host) the counts, column 0 the data's own (all ones);
    ``start`` (B x m x l, host) the random start blocks. A replicate whose
    estimates are below ``stop.tol`` after a pass is left out of the later
    ones; the passes end when none is left, when the Krylov space fills the
    samples (exact), or after ``stop.most`` passes. One more read gives the
    patterns.
    """
    xp = reader.xp
    m, B = C.shape
    l = start.shape[2]
    counts = reader.put(C)
    T = xp.stack([orth(reader.put(start[b])) for b in range(B)])
    # the blocks after the first lie in the range of B_c, of dimension <= min(m, features)
    space = min(m, l + min(m, reader.n_features))
    bases: list[list] = [[] for _ in range(B)]
    crosses: list[list] = [[] for _ in range(B)]
    active, ss, passes = list(range(B)), None, 0
    while True:
        cols = counts if len(active) == B else xp.stack([counts[:, b] for b in active], axis=1)
        flat, nan_counts = reader.read(apply_block, cols, T, center, ss is None)
        size = len(active) * m * T.shape[2]
        if ss is None:
            reader.check_nan(flat[size + B :], nan_counts, m, locate)
            ss = flat[size : size + B]
        Z = xp.reshape(flat[:size], T.shape)
        for i, b in enumerate(active):
            bases[b].append(T[i, ...])
            crosses[b].append(Z[i, ...])
        passes += 1
        room = max(0, min(l, space - sum(x.shape[1] for x in bases[active[0]])))
        if room == 0:
            stopped = SPACE_FULL
            break
        if stop.tol is not None and passes >= 2:  # the first (random) block says nothing yet
            done = _converged([bases[b] for b in active], [crosses[b] for b in active], k, stop)
            active = [b for b, d in zip(active, done, strict=True) if not d]
            if not active:
                stopped = CONVERGED
                break
        if passes >= stop.most:
            stopped = stop.limit
            break
        T = xp.stack([orth_against(crosses[b][-1], bases[b], room) for b in active])
    U, S, errors = [], [], []
    for b in range(B):
        _, u, s, e = krylov_finish(None, bases[b], crosses[b], k, np.float64)
        if len(bases[b]) == 1 and stopped != SPACE_FULL:  # a random block: nothing bounds it
            e = unknown_errors(xp, k, like=u)
        U.append(u)
        S.append(s)
        errors.append(e)
    U, S = xp.stack(U), xp.stack(S)
    dots, parts = reader.read(patterns_block, counts, U, S, center, keep)
    V = xp.concat(parts, axis=1)
    # as the core decides; a space that fills the samples is exact (l - k < 10 only then)
    bounds = stopped == SPACE_FULL or estimates_are_bounds(True, l - k, passes - 1)
    return Batch(S, ss, V, dots, U[0, ...], xp.stack(errors), passes, stopped, bounds)


def _converged(bases: list, crosses: list, k: int, stop: Stopping) -> list[bool]:
    """Per replicate: every one of its ``k`` relative S errors and residuals below ``tol``."""
    worst = []
    for b, c in zip(bases, crosses, strict=True):
        errors, S = thin_errors(b, c, k, np.float64)
        worst.append(relative_error(S, errors))
    xp = backend.api(worst[0])
    host = backend.to_numpy(xp.stack(worst))  # one number per replicate
    return list(host <= stop.tol)


def relative_error(S, errors):
    """The largest of the relative S errors and residuals: ``S`` (..., k), ``errors`` (..., k,
    3) of one replicate or of many, on their device; inf where ``S`` is 0."""
    xp = backend.api(errors)
    positive = S > 0
    rel = xp.where(positive, errors[..., 0] / xp.where(positive, S, 1.0), xp.inf)
    return xp.max(xp.maximum(rel, errors[..., 2]))
