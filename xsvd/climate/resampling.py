"""The bootstrap's engine: every replicate's products in shared reads, block Krylov on all.

A replicate that draws sample ``i`` ``c_i`` times is the matrix

    B_c = diag(sqrt(c)) (A - 1 mu_c^T) diag(w),    mu_c = A^T c / m,

whose Krylov space lives on the sample side (``B_c B_c^T``: small, and the
replicate's weights are per sample). :func:`run_batch` runs the core's block
Krylov loop (:func:`~xsvd.core.randomized.solver.solve`, :class:`BatchSide`) on every
replicate of a batch in the same reads, each with the core's stop rule; a replicate
that has converged is not multiplied again.

The data are read through the core (:class:`Reads`): its executors (at once
in memory; one ``dask.compute`` per read for Dask data, nothing rechunked) and
its stripe reading (a float64 sub-block at a time, rescaled by powers of two
where the magnitudes call for it, :mod:`xsvd.core.randomized.magnitude`).
Stripes of features (each holds every sample) give every replicate's ``B_c
B_c^T T_c`` in one read per pass; Dask stripes of samples (each holds every
feature) in two, ``Y_c = B_c^T T_c`` (summed over the stripes) and ``B_c Y_c``.
The first read of a batch counts each feature's NaN and infinite values and
measures its magnitude (errors name the features). With ``missing="mean"`` each
missing value stands for its feature's mean over the samples where it is
present, filled in every sub-block as it is read (no filled copy of the data):
stripes of features find the means in the first read (each holds every
sample); stripes of samples sum the features in it, and read it again where a
feature has gaps. Only small arrays cross between host and device. Every step
is float64.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core import backend
from ..core.common import Decomposition, variance_ratio
from ..core.config import OPTIONS
from ..core.missing import MissingRule, check_infinite, check_nan_counts
from ..core.randomized.executors import Eager, Stepwise
from ..core.randomized.magnitude import needs_rescaling, rescaling, scaled_back
from ..core.randomized.operator import OperatorSide, problem_of
from ..core.randomized.small import (
    CONVERGED,
    FIXED,
    MAX_PASSES,
    SPACE_FULL,
    estimates_are_bounds,
    krylov_finish,
    krylov_room,
    orth,
    orth_against,
    relative_errors,
    stop_reason,
    thin_errors,
    unknown_errors,
)
from ..core.randomized.solver import solve
from ..core.randomized.state import FeatureStats, Sketch, Summable
from ..core.randomized.stripe import quiet_overflow, stripe_sub, sub_blocks

__all__ = ["Reads", "BatchSide", "Batch", "run_batch", "worst"]

#: Per-stripe partial sums added per task over Dask stripes (few feature-sized sums
#: alive at once over stripes of samples).
SPLIT_EVERY = 2

#: How to fix partly missing features with ``missing="error"``: ``missing="mean"`` (the
#: replicates then resample the filled data), a filled copy, or the features left out.
NAN_ADVICE = (
    "The bootstrap leaves out features NaN at every sample (e.g. land); for the others "
    "pass `missing='mean'`, which stands each gap for its feature's mean over all the "
    "samples (the replicates resample those filled data; no filled copy is made), or fill "
    "them first, e.g. `da.interpolate_na(dim)`, or leave the features that hold them out, "
    "as land: `da.where(da.notnull().all(dim))`."
)

#: The kernels' ``fill`` while no means are known yet over stripes of features (each holds
#: every sample): each sub-block fills its gaps with its features' own means.
LOCAL = "local"


def _local(fill) -> bool:
    """Whether ``fill`` is :data:`LOCAL` (by type: it may be a copy, sent to a worker)."""
    return isinstance(fill, str)


@dataclass(frozen=True)
class Batch:
    """One batch of replicates (column 0: the data themselves), on the data's device.

    ``S`` (B, k) and ``errors`` (B, k, 3: the estimated errors of S, angle,
    residual) in the data's units, ``ratio`` (B, k): ``S**2 / ||B_c||_F**2``
    (NaN where that is 0), ``V`` (B or 1, features, k), ``dots`` (B, k): each
    pattern's dot product with column 0's, ``data`` column 0's (the data's)
    :class:`~xsvd.core.common.Decomposition`, ``passes`` (the most of any replicate),
    ``stopped`` (why), ``bounds`` (whether the estimates are bounds,
    :func:`~xsvd.core.randomized.small.estimates_are_bounds`), ``reached`` (the largest
    relative error of any replicate, :func:`~xsvd.core.randomized.small.relative_errors`).
    """

    S: object
    ratio: object
    V: object
    dots: object
    data: Decomposition
    errors: object
    passes: int
    stopped: str
    bounds: bool
    reached: float


@dataclass
class Sums(Summable):
    """One stripe's share of a read (added over stripes; ``amax`` by the maximum).

    ``product``: the products; ``ss``: shares of every ``||B_c||_F^2``; over
    stripes of samples, ``colsum`` (``A^T C``, features x B), ``missing``,
    ``infinite`` (counts per feature) and ``amax`` (largest finite magnitude).
    """

    MAXED = ("amax",)

    product: Any
    ss: Any = None
    colsum: Any = None
    missing: Any = None
    infinite: Any = None
    amax: Any = None

    def __add__(self, other):
        """Field by field, the products in place (each stripe's sums are added once: no
        third feature-sized array per addition)."""
        product = self.product
        if product is not None:
            product += other.product
        return replace(Summable.__add__(replace(self, product=None), other), product=product)


class Reads:
    """The data's reads for the bootstrap, through the core's executors and stripes.

    ``a`` (samples x features: NumPy, a device's array or Dask), ``w`` the
    feature weights (or None), ``locate`` names features in errors, ``rule`` the
    :class:`~xsvd.core.missing.MissingRule` (default: NaN only in features NaN at
    every sample). Dask data chunked along the samples only are read as stripes
    of samples, anything else as stripes of features. ``reads`` counts the reads.
    """

    def __init__(self, a, w, locate=None, rule: MissingRule | None = None):
        self.n_samples, self.n_features = (int(s) for s in a.shape)
        lazy = backend.is_dask(a)
        self.by_samples = lazy and a.numblocks[1] == 1 and a.numblocks[0] > 1
        axis = 0 if self.by_samples else 1
        self.ex = Stepwise(a, axis, split_every=SPLIT_EVERY) if lazy else Eager(a, axis)
        self.xp = backend.api(a)
        self.like = self.ex.like
        gpu = backend.namespace(a) is not np
        self.sub_block = OPTIONS["gpu_sub_block_elements" if gpu else "sub_block_elements"]
        self.locate = locate
        self.given = None if w is None else np.asarray(backend.to_numpy(w), dtype=np.float64)
        self.weights = None if w is None else self.put(self.given)
        self.scale = None  # per feature, 2**column_exp (rescaled data), on the device
        self.result_exp = 0  # the matrices decomposed are 2**result_exp B_c
        self.measured = False  # whether the magnitudes were looked at (first batch)
        self.nan_mask = None  # features NaN at every sample (host), after a first read
        self.rule = MissingRule("error") if rule is None else rule
        # missing="mean": whether the reads fill gaps (False once the first read found none),
        # and the values they fill in, per feature, as the data are read (scaled): None
        # until the first read has found them
        self.filling = self.rule.fills
        self.fill = None
        self.shift = None  # stripes of samples: the means subtracted from every sub-block
        self.means = None  # stripes of samples: the batch's mu_c - shift (features x B)
        self.reads = 0

    def replicate_bytes(self, width: int, passes: int) -> int:
        """Bytes a replicate's Krylov spaces (and sums) take: ``passes`` blocks of
        ``width`` columns and their images; over stripes of samples, a few feature-sized."""
        return 8 * width * (2 * passes * self.n_samples + 4 * self.by_samples * self.n_features)

    def put(self, x):
        """A host array in float64, moved to where the data's blocks are (counted)."""
        return backend.transfer(np.asarray(x, dtype=np.float64), self.like)

    def _fill(self):
        """What the kernels fill gaps with: None (nothing to fill: NaN reads as 0), the
        values found, or before those are known :data:`LOCAL` over stripes of features
        (their own means) and None over stripes of samples (read again, :meth:`checked`)."""
        if not self.filling or self.fill is not None:
            return self.fill
        return None if self.by_samples else LOCAL

    def _read(self, fn, *args, nout: int = 1):
        """``fn(blocks, offset, *args)`` on every stripe in one read: the sum of the first
        outputs and (``nout=2``) the list of the second, computed."""
        ex = self.ex
        self.reads += 1
        out = ex.map(fn, ex.stripes(), *args, nout=nout, per_stripe=(ex.offsets,))
        if nout == 1:
            (total,) = ex.end_pass((ex.sum(out),))
            return total
        total, gathered = ex.end_pass((ex.sum(out[0]), out[1]))
        return total, list(gathered)

    def product(self, counts, active: list, T, center: bool, first: bool):
        """``B_c B_c^T T_c`` (B x m x l) for the ``active`` columns of the counts and, on
        the batch's first read (all active), their ``||B_c||_F^2`` (else None); that read
        made again where :meth:`checked` says so (rescaled, or filled)."""
        xp, m = self.xp, self.n_samples
        if len(active) < counts.shape[1]:
            counts = xp.stack([counts[:, b] for b in active], axis=1)
        flat, sT = _spread(counts, T)
        if not self.by_samples:
            args = (self.weights, self.scale, counts, flat, sT, center, first, self.sub_block)
            fill = self._fill()
            sums, stats = self._read(_feature_pass, *args, self.rule, fill, nout=2)
            if first:
                stats = xp.concat(stats, axis=1)
                means = stats[3, :] if _local(fill) else None
                if self.checked(stats[0, :], stats[1, :], stats[2, :], means):
                    return self.product(counts, active, T, center, first)  # read again
            # every stripe's sum times sqrt(c), once (B x m x l)
            P = xp.permute_dims(xp.reshape(sums.product, (m, *sT.shape)), (1, 0, 2))
            return xp.sqrt(counts).T[:, :, None] * P, sums.ss
        # stripes of samples: Y_c = B_c^T T_c, then B_c Y_c
        args = (self.scale, self.shift, counts, flat, first, self.sub_block)
        sums = self._read(_sample_co, *args, self.rule, self._fill())
        if first:
            means = None  # the data's means (column 0: all ones), gaps read as 0
            if self.filling and self.fill is None:
                means = sums.colsum[:, 0] / xp.maximum(m - sums.missing, 1.0)
            if self.checked(sums.missing, sums.infinite, sums.amax, means):
                return self.product(counts, active, T, center, first)  # read again
            self.means = sums.colsum / m if center else None  # mu_c - shift, as read
        means = self._means(active)
        G = self._weighted(sums.product, sT, means, square=True)
        sums = None  # the products go before the next read
        if first and center and self.shift is None:  # the data's means: subtracted from now on
            self.shift = self.means[:, 0]
            self.means = means = self.means - self.means[:, :1]
        corr = None if means is None else xp.sum(means[:, :, None] * G, axis=0)
        args = (self.scale, self.shift, counts, G, corr, self.weights, first, self.sub_block)
        sums, rows = self._read(_sample_apply, *args, self.rule, self._fill(), nout=2)
        ss = sums.ss
        if first and means is not None:
            w2 = 1.0 if self.weights is None else (self.weights**2)[:, None]
            ss = ss - m * xp.sum(means**2 * w2, axis=0)
        return xp.concat(rows, axis=1), ss

    def _means(self, active: list):
        """``mu_c - shift`` of the ``active`` replicates of the batch (or None)."""
        if self.means is None or len(active) == self.means.shape[1]:
            return self.means
        return self.xp.stack([self.means[:, b] for b in active], axis=1)

    def _weighted(self, P, sT, means, square: bool):
        """``w (P - mu~_c (s_c^T T_c))`` (``w**2`` when ``square``; ``sT``: ``s_c^T T_c``, B x
        l): ``B_c^T T_c`` from the summed products ``P`` of the centered data (features x B x
        l)."""
        P = self.xp.reshape(P, (self.n_features, *sT.shape))
        if means is not None:
            P = P - means[:, :, None] * sT[None, :, :]
        if self.weights is None:
            return P
        w = self.weights**2 if square else self.weights
        return w[:, None, None] * P

    def patterns(self, counts, U, S, center: bool, keep: bool):
        """The patterns ``B_c^T u / s`` of every replicate (``keep``) or of column 0 (B or 1
        x features x k, NaN for features NaN at every sample) and their dot products with
        column 0's (B x k)."""
        xp = self.xp
        inverse = xp.where(S > 0, 1 / xp.where(S > 0, S, 1.0), 0.0)
        flat, sU = _spread(counts, U)
        if self.by_samples:
            args = (self.scale, self.shift, counts, flat, False, self.sub_block)
            P = self._read(_sample_co, *args, self.rule, self._fill())
            P = self._weighted(P.product, sU, self.means, False)
            V = xp.permute_dims(P, (1, 0, 2))
            V = V * inverse[:, None, :]
            dots = xp.sum(V[0:1, :, :] * V, axis=1)
            V = V if keep else V[0:1, :, :]
        else:
            args = (self.weights, self.scale, counts, flat, sU, center, False, self.sub_block)
            args = (*args, self.rule, self._fill(), inverse, keep)
            dots, parts = self._read(_feature_pass, *args, nout=2)
            V = xp.concat(parts, axis=1)
        dead = backend.transfer(self.nan_mask, self.like)
        return dots, xp.where(dead[None, :, None], xp.nan, V)

    def checked(self, missing, infinite, amax, means=None) -> bool:
        """Check a batch's first read (per feature: missing and infinite counts, largest
        finite magnitude; ``means``: the features' means over the samples present, where
        the read found them); True when the data must be read again: rescaled, or over
        stripes of samples filled (their first read took the gaps for 0)."""
        m = self.n_samples
        host = backend.to_numpy(self.xp.stack([missing, infinite, amax]))  # one move
        check_infinite(host[1] > 0, locate=self.locate)
        again = False
        if not self.rule.fills:  # missing="error": only features missing at every sample
            self.nan_mask = check_nan_counts(host[0], m, locate=self.locate, advice=NAN_ADVICE)
        else:
            self.nan_mask = host[0] >= m  # left out, NaN in V, as land
            if means is not None:  # the first read: gaps to fill, or none (read as before)
                self.filling = bool(((host[0] > 0) & (host[0] < m)).any())
                self.fill = means if self.filling else None
                again = self.filling and self.by_samples
        if self.measured:
            return again
        self.measured = True
        if not needs_rescaling(host[2], self.given, np.float64):
            return again
        if means is not None:  # found unscaled: found again in the rescaled read
            self.fill = None
        found = rescaling(host[2], self.given, np.float64, np.float64)
        self.scale = self.put(np.ldexp(1.0, found.column_exp))
        self.weights = self.put(found.weights)
        self.result_exp = found.result_exp
        return True


# ------------------------------------------------------------------ kernels


def _sub(blocks, axis: int, start: int, stop: int, scale, rule: MissingRule, fill):
    """A float64 sub-block (times ``scale``), its missing values (``rule``) filled, and
    their mask: ``(xp, x, missing, value)``.

    ``fill``: None, missing values read as 0; per feature of the stripe (of every feature
    for ``axis=0``), the values they stand for; :data:`LOCAL` (``axis=1``: every sample is
    here), each feature's mean over the samples present (0 where none is), also returned
    as ``value``.
    """
    x = stripe_sub(blocks, axis, start, stop, np.float64, scale)
    xp = backend.api(x)
    missing = rule.mask(xp, x)
    value = 0.0
    if _local(fill):  # summed over 2**e (exact): no overflow, where data so large are rescaled
        e = int(np.ceil(np.log2(max(x.shape[0], 1))))
        present = xp.sum(xp.where(missing, 0.0, x) * 2.0**-e, axis=0)
        count = xp.sum(xp.astype(missing, xp.float64), axis=0)
        value = present / xp.maximum(x.shape[0] - count, 1.0) * 2.0**e
    elif fill is not None:
        value = fill[start:stop] if axis == 1 else fill
    return xp, xp.where(missing, value, x), missing, value


def _measure(xp, x, nan):
    """Per column of ``x`` (NaN already 0): NaN and infinite counts, largest finite magnitude."""
    inf = xp.isinf(x)
    amax = xp.max(xp.abs(xp.where(inf, 0.0, x)), axis=0)
    counts = [xp.sum(xp.astype(b, xp.float64), axis=0) for b in (nan, inf)]
    return xp.stack([*counts, amax])


def _spread(C, T):
    """``s_c T_c`` (``s = sqrt(c)``) of every replicate side by side (m x B l), and their
    column sums (B x l): what every stripe of features multiplies."""
    xp = backend.api(T)
    (B, m, l), ST = T.shape, xp.sqrt(C).T[:, :, None] * T
    return xp.reshape(xp.permute_dims(ST, (1, 0, 2)), (m, B * l)), xp.sum(ST, axis=1)


@quiet_overflow
def _feature_pass(
    blocks,
    offset,
    w,
    scale,
    C,
    flat,
    sT,
    center,
    first,
    sub_block,
    rule,
    fill,
    inverse=None,
    keep=True,
):
    """A stripe of features' share of every ``B_c B_c^T T_c`` before the factor ``sqrt(c)``
    (m x B l, ``flat``, ``sT``: :func:`_spread` of ``T``) and, ``first``, of the
    ``||B_c||_F^2``, with its per-feature counts and magnitudes (``first``, else None)
    and, ``fill`` :data:`LOCAL`, the means it filled in (:func:`_sub`).

    With ``inverse`` (B x k; ``T``: the vectors ``u``): instead its share of the dot
    products with column 0's patterns (B x k), and its patterns ``B_c^T u / s`` (B or 1 x
    f x k, ``keep`` or not).
    """
    xp = backend.api(flat)
    m, f_all = C.shape[0], blocks[0].shape[1]
    B, l = sT.shape
    out, corr, ss, stats = None, 0.0, 0.0, []
    part = None if scale is None else scale[offset : offset + f_all]
    local = _local(fill)
    if not local and fill is not None:
        fill = fill[offset : offset + f_all]
    # sub-blocks whose copy of the data (m x f) and products (three f x B l) hold about two
    # of the core's: narrower with many replicates (100 of a 0.3 GB field in Dask stripes of
    # features: 0.08 GB less than the core's width), as wide with few (B times narrower
    # made 3,000 x 11,628 with 10 replicates 4.4x slower: 53 s, not 12)
    for start, stop in sub_blocks(f_all, m, 2 * sub_block * m // (m + 3 * B * l)):
        xp, x, nan, value = _sub(blocks, 1, start, stop, part, rule, fill)
        if first:
            measured = _measure(xp, x, nan)
            if local:
                measured = xp.concat([measured, xp.reshape(value, (1, -1))], axis=0)
            stats.append(measured)
        if center:  # every sample is here: the exact means; the replicates' are corrections
            x -= xp.mean(x, axis=0)  # x is a fresh copy (`_sub`)
        f = stop - start
        Y = xp.reshape(x.T @ flat, (f, B, l))
        mu = (x.T @ C) / m if center else None  # f x B
        if center:
            Y = Y - mu[:, :, None] * sT[None, :, :]
        wv = None if w is None else w[offset + start : offset + stop]
        if inverse is not None:  # the patterns
            V = Y if wv is None else wv[:, None, None] * Y
            V = xp.permute_dims(V * inverse[None, :, :], (1, 0, 2))  # B x f x k
            out = (0.0 if out is None else out) + xp.sum(V[0:1, :, :] * V, axis=1)
            stats.append(V if keep else V[0:1, :, :])
            continue
        DY = Y if wv is None else (wv**2)[:, None, None] * Y
        if out is None:
            out = x @ xp.reshape(DY, (f, B * l))
        else:  # in place: no third m x B l array
            out += x @ xp.reshape(DY, (f, B * l))
        if center:  # sum_f mu[f, b] DY[f, b, :], taken from every row once at the end
            corr = corr + xp.reshape(xp.sum(mu[:, :, None] * DY, axis=0), (1, B * l))
        if first:
            w2 = 1.0 if wv is None else (wv**2)[:, None]
            ss = ss + xp.sum(((x**2).T @ C) * w2, axis=0)
            if center:
                ss = ss - m * xp.sum(mu**2 * w2, axis=0)
    if inverse is not None:
        return out, xp.concat(stats, axis=1)
    if center:
        out -= corr
    return Sums(out, ss if first else None), (xp.concat(stats, axis=1) if first else None)


@quiet_overflow
def _sample_co(blocks, offset, scale, shift, C, flat, first, sub_block, rule, fill):
    """A stripe of samples' share of ``(A - 1 shift^T)^T (s_c T_c)`` (features x B l;
    ``flat``: :func:`_spread` of ``T``) and, ``first``, of ``(A - 1 shift^T)^T C`` and the
    per-feature counts and magnitudes."""
    mi, n = blocks[0].shape[0], sum(b.shape[1] for b in blocks)
    Ci, flat = C[offset : offset + mi, :], flat[offset : offset + mi, :]
    out = None  # sub-blocks at least as large as the products: those are few
    for start, stop in sub_blocks(mi, n, max(sub_block, n * flat.shape[1])):
        xp, x, nan, _ = _sub(blocks, 0, start, stop, scale, rule, fill)
        if first:
            missing, infinite, amax = _measure(xp, x, nan)
        if shift is not None:
            x -= shift
        part = Sums(x.T @ flat[start:stop, :])
        if first:
            part = Sums(part.product, None, x.T @ Ci[start:stop, :], missing, infinite, amax)
        out = part if out is None else out + part
    return out


@quiet_overflow
def _sample_apply(blocks, offset, scale, shift, C, G, corr, w, first, sub_block, rule, fill):
    """A stripe of samples' rows of every ``B_c Y_c`` (B x m_i x l, from ``G = w Y_c``)
    and, ``first``, its share of the ``||B_c||_F^2`` (less their mean's part)."""
    xp = backend.api(G)
    mi, n = blocks[0].shape[0], sum(b.shape[1] for b in blocks)
    _, B, l = G.shape
    Ci = C[offset : offset + mi, :]
    flat = xp.reshape(G, (n, B * l))
    rows, ss = [], 0.0
    for start, stop in sub_blocks(mi, n, sub_block):
        xp, x, _, _ = _sub(blocks, 0, start, stop, scale, rule, fill)
        if shift is not None:
            x -= shift
        Z = xp.reshape(x @ flat, (stop - start, B, l))
        if corr is not None:
            Z = Z - corr[None, :, :]
        rows.append(xp.permute_dims(xp.sqrt(Ci[start:stop, :])[:, :, None] * Z, (1, 0, 2)))
        if first:
            sq = x**2 if w is None else (x**2) * (w**2)[None, :]
            ss = ss + xp.sum(sq, axis=1) @ Ci[start:stop, :]
    return Sums(None, ss if first else None), xp.concat(rows, axis=1)


# ------------------------------------------------------------------ the passes


class BatchSide(OperatorSide):
    """A batch's replicates as one side of the core's pass loop (:func:`solve`): a basis is
    the stack (B x m x l) of the active replicates' Krylov blocks, read in one
    :meth:`Reads.product`. Each replicate keeps its own blocks and images: its next block
    (``following``), the core's stop test (``stopping``: a replicate that may stop leaves
    the later reads; the batch stops when none is left) and Ritz triplets (``ritz``)."""

    def __init__(self, reads: Reads, counts, center: bool):
        self.reads, self.counts, self.center, self.said = reads, counts, center, set()
        self.active = list(range(counts.shape[1]))
        self.bases, self.crosses = ([[] for _ in self.active] for _ in range(2))

    def start(self, omega):
        return self.reads.xp.stack([orth(self.reads.put(x)) for x in omega])

    def read(self, basis, stats, fill, first: bool):
        """``B_c B_c^T T_c`` of the active replicates; ``stats``: the first read's ``||B_c||^2``."""
        Z, ss = self.reads.product(self.counts, self.active, basis, self.center, first)
        for i, b in enumerate(self.active):
            self.bases[b].append(basis[i, ...])
            self.crosses[b].append(Z[i, ...])
        return Sketch([], None, Z, None), ss if first else stats

    def following(self, cross, bases):
        (_, m, l), used = bases[0].shape, sum(b.shape[2] for b in bases)
        room = krylov_room(m, min(m, self.reads.n_features), l, used)
        row = [orth_against(self.crosses[b][-1], self.bases[b], room) for b in self.active]
        return self.reads.xp.stack(row)

    def stopping(self, problem) -> str | None:
        opts, k = problem.options, problem.k
        found = [thin_errors(self.bases[b], self.crosses[b], k, np.float64) for b in self.active]
        why = [stop_reason(*e, opts.tol, opts.default_stop, np.float64) for e in found]
        self.said.update(r for r in why if r is not None)
        self.active = [b for b, r in zip(self.active, why, strict=True) if r is None]
        return None if self.active else worst(self.said)

    def ritz(self, bases, crosses, k: int, dtype):
        """``(U, None, S, errors)`` of every replicate (B x ...), from its own blocks."""
        pairs = zip(self.bases, self.crosses, strict=True)
        each = [krylov_finish(None, *pair, k, np.float64)[1:] for pair in pairs]
        U, S, errors = (self.reads.xp.stack(x) for x in zip(*each, strict=True))
        return U, None, S, errors


def run_batch(reads: Reads, C, start, k: int, opts, center: bool, keep: bool) -> Batch:
    """One batch of replicates: block Krylov on every ``B_c B_c^T`` in shared reads.

    ``C`` (m x B, host) the counts, column 0 the data's own (all ones); ``start`` (B x m x
    l, host) the random start blocks; ``opts`` the resolved ``CompressedOptions``. The
    core's pass loop (:func:`solve`) runs on :class:`BatchSide`: the passes end when no
    replicate is left, when the Krylov space fills the samples, or after
    ``opts.most_passes``. One more read gives the patterns.
    """
    xp, m, l = reads.xp, C.shape[0], start.shape[2]
    counts = reads.put(C)
    side = BatchSide(reads, counts, center)
    # the operator B_c^T (features x samples): its Krylov blocks on the samples
    problem = problem_of(reads.n_features, m, k, l, opts, np.float64)
    ex = Eager(np.empty((m, 0)), 0)  # the reads are the side's
    U, _, S, errors, ss, problem = solve(ex, problem, start, make_side=lambda *_: side)
    side = None  # the Krylov spaces go before the patterns' read
    passes, full = problem.n_power_iter + 1, problem.stopped == SPACE_FULL
    if passes == 1 and not full:  # a random block: nothing bounds it
        errors = xp.stack([unknown_errors(xp, k, like=S)] * C.shape[1])
    dots, V = reads.patterns(counts, U, S, center, keep)
    total = FeatureStats(None, ss, None)
    S, errors, total, norm = scaled_back(S, errors, total, reads.result_exp, None)
    ratio = variance_ratio(S, total.total_ss[:, None], norm[:, None])
    reached = relative_errors(xp.reshape(errors, (-1, 3)), xp.reshape(S, (-1,)))
    reached = float(backend.to_numpy(xp.max(reached)))
    # as the core decides; a space that fills the samples is exact (l - k < 10 only then)
    bounds = full or estimates_are_bounds(True, l - k, passes - 1)
    ss = total.total_ss
    data = [x[0, ...] for x in (U, S, V, ss, errors, norm)]
    data = Decomposition(*data[:3], None, data[3], None, "bootstrap", {}, *data[4:])
    return Batch(S, ratio, V, dots, data, errors, passes, problem.stopped, bounds, reached)


#: Why the passes of several replicates stopped: the first of these that any gave; the
#: core's other reason (the precision of the products) counts as just before "converged".
REASONS = (MAX_PASSES, FIXED, CONVERGED, SPACE_FULL)


def worst(reasons) -> str:
    """Of the replicates' or batches' reasons to stop, the one ``settings["stopped"]`` gives."""
    return min(reasons, key=lambda r: REASONS.index(r) if r in REASONS else 1.5)
