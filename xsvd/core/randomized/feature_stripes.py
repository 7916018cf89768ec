"""One pass over stripes of features: ``C = B^T``, every stripe holds all ``m`` samples.

A read of stripe ``A_j`` (``m`` samples x ``n_j`` features) gives, a
sub-block of features at a time,

- ``A_j^T [W, 1]``: the stripe's rows of the sketch ``Y = C W`` and, through
  the column of ones, its features' sums. Every sample is here, so each
  feature's mean is exact and local, and centering is a rank-one correction
  of ``Y_j`` before anything else uses it;
- ``A_j (D Y_j)``: its share of ``Z = C^T Y`` (with ``D = diag(w)``), with the
  centering correction ``1 (mu_j^T D Y_j)`` taken off at the end (measured to
  lose nothing here: the mean direction is not in the iterates);
- ``Y_j^T Y_j``: its share of ``G = Y^T Y``.

The first pass also gives the features' means, sums of squares and
all-missing mask, stripe by stripe. Floating-point features far from zero
(kelvin) are read, in every pass, less a reference near their mean taken from
the first rows of the sub-block on the first pass (:func:`.stripe.offset_reference`),
so that neither the products nor the centering correction cancel.

Given centering values (``center=`` an array, ``Problem.given_center``) take the
place of each feature's mean in the same corrections, and fill in its missing
values with ``missing="mean"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backend
from ..missing import check_infinite, check_nan_counts
from .plan import Problem, ReadSpec
from .state import FeatureStats, Sketch, Summable
from .stripe import (
    DETECT,
    Skip,
    add_product_without,
    far_means,
    fill_missing,
    flag_columns,
    is_floating,
    nonfinite,
    norm_magnitudes,
    quiet_overflow,
    scatter_rows,
    stripe_sub,
    sub_blocks,
    t_product_without,
    zero_columns,
)

#: Sub-blocks of data multiplied as views (no conversion) are this many times larger:
#: 4-5% faster on the 3,000 x 90 x 180 climate field, 2 cores.
VIEW_SUB_BLOCKS = 4


@dataclass
class StripeSums(Summable):
    """One stripe's share of a pass's sums (added over stripes)."""

    cross: Any  # A_j D Y_j (m x l), centered
    gram: Any  # Y_j^T Y_j


@dataclass
class StripeStats(FeatureStats):
    """A stripe's :class:`~.state.FeatureStats` and ``shift``: per feature, the reference
    subtracted from the data as read (float64, 0 where none), or None where none is."""

    shift: Any = None


class FeatureStripes:
    """The passes of the compressed SVD over stripes of features."""

    def __init__(self, ex, problem: Problem):
        self.ex = ex
        self.problem = problem
        self.spec = problem.read_spec()
        self.offsets = [int(o) for o in ex.offsets]
        self.weight_parts = self._parts(problem.weights)
        self.scale_parts = self._parts(problem.column_scale)
        self.center_parts = self._parts(problem.given_center)
        self._nan_columns = None  # (statistics, per-stripe masks or None), see nan_columns

    def _parts(self, vector):
        """A per-feature vector cut into every stripe's part (None: None for each)."""
        return [
            None if vector is None else vector[o : o + s]
            for o, s in zip(self.offsets, self.ex.sizes, strict=True)
        ]

    def prepare(self):
        """Nothing to read before the passes: every stripe holds its features' samples."""
        return None

    def read(self, basis, stats: list | None, fill, first: bool):
        """One pass: the sketch of ``C W`` and, on the first pass, per-stripe feature statistics."""
        ex, pb = self.ex, self.problem
        basis_ext = ex.call(_with_ones, basis, pb.dtype)
        stripes = ex.stripes(after=None if first else basis)
        nan_parts = [DETECT] * len(self.offsets) if first else self.nan_columns(stats)
        fills = [None] * len(self.offsets)
        if not first and pb.missing.fills and ex.concrete:
            fills = [s.fill for s in stats]
        shifts = [None] * len(self.offsets) if first else ex.map(_shift_of, stats)
        Y, sums, stripe_stats = ex.map(
            _read_stripe,
            stripes,
            basis_ext,
            first,
            self.spec,
            pb.locate if first else None,
            nout=3,
            per_stripe=(
                self.weight_parts,
                self.scale_parts,
                self.offsets,
                nan_parts,
                fills,
                shifts,
                self.center_parts,
            ),
        )
        total = ex.sum(sums)
        return Sketch(Y, None, total.cross, total.gram), (stripe_stats if first else stats)

    def nan_columns(self, stats: list) -> list:
        """Per stripe, what later passes do about missing values (see
        :data:`.stripe.DETECT`): with ``missing="error"`` and concrete statistics, the
        stripe's all-NaN features as a :class:`.stripe.Skip` (left out of the products,
        in runs of clean features: no sweep), or None when none of its features is NaN
        (the stripe's mask to the host, once)."""
        rule = self.problem.missing
        if not self.ex.concrete or not rule.active or rule.fills:
            return [DETECT] * len(self.offsets)
        if self._nan_columns is None or self._nan_columns[0] is not stats:
            parts = []
            for s in stats:
                some = backend.to_scalar(backend.api(s.nan_mask).any(s.nan_mask))
                parts.append(Skip(backend.to_numpy(s.nan_mask), s.nan_mask) if some else None)
            self._nan_columns = (stats, parts)
        return self._nan_columns[1]

    def magnitudes(self, stats: list):
        """Every feature's largest magnitude in the data, as read (float64)."""
        ex = self.ex
        amax = ex.map(_unpack, stats, nout=4)[3]
        return ex.call(_joined, *amax)

    def finish(self, stats: list) -> FeatureStats:
        """The per-stripe statistics joined into arrays of the input's kind."""
        ex, pb = self.ex, self.problem
        vec = [(s,) for s in ex.sizes]
        mean, total_ss, nan_mask, _ = ex.map(_unpack, stats, nout=4)
        return FeatureStats(
            mean=ex.concat(mean, vec, np.float64) if pb.center else None,
            total_ss=ex.array(ex.call(_sum_scalars, *total_ss), (), np.float64),
            nan_mask=ex.concat(nan_mask, vec, bool) if pb.missing.active else None,
        )


def _with_ones(W, dtype):
    """``[W, 1]`` in the product dtype: the column of ones gives the feature sums."""
    xp = backend.api(W)
    ones = xp.ones((W.shape[0], 1), dtype=W.dtype, device=backend.device(W))
    return xp.astype(xp.concat([W, ones], axis=1), backend.to_dtype(xp, dtype), copy=False)


def _shift_of(stats: StripeStats):
    return stats.shift


def _unpack(stats: FeatureStats):
    return stats.mean, stats.total_ss, stats.nan_mask, stats.amax


def _joined(*parts):
    return backend.api(parts[0]).concat(parts)


def _sum_scalars(*xs):
    return sum(xs[1:], xs[0])


def _patched(xp, raw, sq, flagged, basis_ext):
    """``raw`` (and ``sq``) with the flagged columns' rows zeroed, and those that take
    part in the products (``flagged.patch``) taken from their filled values."""
    bad = xp.asarray(flagged.skip, device=backend.device(raw))
    raw = xp.where(bad[:, None], 0.0, raw)
    sq = None if sq is None else xp.where(bad, 0.0, sq)
    if flagged.patch is None:
        return raw, sq
    f64 = xp.float64
    raw = scatter_rows(raw, flagged.patch_idx, xp.astype(flagged.patch.T @ basis_ext, f64))
    if sq is not None:
        patch_sq = xp.astype(backend.column_sumsq(flagged.patch), f64)
        sq = scatter_rows(sq, flagged.patch_idx, patch_sq)
    return raw, sq


@quiet_overflow
def _read_stripe(
    blocks,
    w,
    column_scale,
    offset: int,
    nan_columns,
    fill,
    shift,
    given,
    basis_ext,
    first: bool,
    spec: ReadSpec,
    locate,
):
    """One read of a feature stripe ``A_j`` (m x n_j), i.e. rows ``j`` of ``C = B^T``.

    ``w`` and ``column_scale`` (powers of two the features are multiplied by as
    they are converted: rescaled data) are the stripe's parts, or None;
    ``nan_columns``: see :data:`.stripe.DETECT`; ``fill``: ``missing="mean"``,
    the stripe's fill values from the first pass (None on the first pass);
    ``shift``: the reference the first pass subtracted, per feature (or None);
    ``given``: the stripe's centering values given (float64, in the data's units as
    given), which replace its features' means and fill in their missing values (or None).
    """
    xp, dev = backend.api(basis_ext), backend.device(basis_ext)
    dtype, f64 = basis_ext.dtype, xp.float64
    m, nj = basis_ext.shape[0], blocks[0].shape[1]
    l = basis_ext.shape[1] - 1
    rule = spec.missing
    wsum = xp.sum(xp.astype(basis_ext[:, :l], f64), axis=0)  # 1^T W: centering's correction
    Y = xp.empty((nj, l), dtype=dtype, device=dev)
    sums = StripeSums(
        xp.zeros((m, l), dtype=f64, device=dev), xp.zeros((l, l), dtype=f64, device=dev)
    )
    correction = xp.zeros((l,), dtype=f64, device=dev)
    mean = xp.empty((nj,), dtype=f64, device=dev) if (first and spec.center) else None
    nan_mask = xp.zeros((nj,), dtype=xp.bool, device=dev) if (first and rule.active) else None
    amax = xp.zeros((nj,), dtype=f64, device=dev) if (first and spec.watch_range) else None
    ss = xp.zeros((), dtype=f64, device=dev)
    detect = isinstance(nan_columns, str) and rule.active
    # NaN (or inf) found from the feature sums of the product, not by a sweep of every
    # value (later passes of a lazy graph on a device: without the column-length transfers)
    known = rule.fills and (given is not None or (fill is not None and not first))
    by_sums = detect and not rule.negative and not known
    by_sums = by_sums and (first or backend.is_numpy(basis_ext))
    if given is not None and column_scale is not None:
        given = given * column_scale  # in the units of the rescaled data
    if given is not None and rule.fills:  # missing values stand for the values given
        fill = xp.astype(given, dtype)
    elif first and rule.fills:
        fill = xp.zeros((nj,), dtype=dtype, device=dev)
    # features far from zero: read less a reference (found on the first pass)
    find = first and spec.center and not backend.is_packed(blocks[0])
    find = find and is_floating(blocks[0].dtype)
    shifted = xp.zeros((nj,), dtype=f64, device=dev) if find else None
    # data already in the product dtype are multiplied as views: larger sub-blocks (fewer,
    # larger products) cost no memory
    view = len(blocks) == 1 and column_scale is None and blocks[0].dtype == dtype
    for c0, c1 in sub_blocks(nj, m, spec.sub_block * (VIEW_SUB_BLOCKS if view else 1)):
        sub = stripe_sub(blocks, 1, c0, c1, dtype, column_scale)
        missing_all = None  # per feature of the sub-block: missing at every sample
        if detect and not by_sums:  # negative codes, or missing="mean" with known fills
            count = None
            if not first:  # the first pass's fill values
                sub, _ = zero_columns(xp, sub, nan_columns, rule, fill[c0:c1], count=False)
            elif rule.fills and given is not None:  # the values given, counted
                sub, count = fill_missing(xp, sub, rule, fill[c0:c1])
            elif rule.fills:  # first pass, missing="mean": keep them
                sub, count, fill[c0:c1] = fill_missing(xp, sub, rule, with_value=True)
            else:
                sub, count = zero_columns(xp, sub, nan_columns, rule)
            missing_all = None if count is None else count == m
            if count is not None and nan_mask is not None and rule.fills:
                nan_mask[c0:c1] = missing_all
            elif count is not None and nan_mask is not None:
                nan_mask[c0:c1] = check_nan_counts(count, m, offset=offset + c0, locate=locate)
        skip, flagged = None, None
        if isinstance(nan_columns, Skip):  # known from the first pass: never read
            skip, missing_all = nan_columns.part(c0, c1)
        ref = None if shift is None else shift[c0:c1]  # the first pass's, filled data less it
        if ref is not None:
            sub = sub - xp.astype(ref, dtype)
        # (cs, l + 1): C_s W and the feature sums
        raw = xp.astype(t_product_without(sub, basis_ext, skip), f64, copy=False)
        bad = nonfinite(xp, raw[:, l]) if by_sums else None  # NaN (or inf) columns
        if bad is not None and rule.fills and 2 * int(bad.sum()) > c1 - c0:
            # most features miss some values: fill the whole sub-block, multiply again
            sub, count, values = fill_missing(xp, sub, rule, with_value=True)
            if first:
                fill[c0:c1] = values
            missing_all = count == m
            if nan_mask is not None:
                nan_mask[c0:c1] = missing_all
            raw, bad = xp.astype(sub.T @ basis_ext, f64), None
        elif bad is not None:  # only they are looked at
            flagged = flag_columns(xp, sub, bad, rule)
        sq = xp.astype(backend.column_sumsq(sub), f64) if first else None
        if flagged is not None:
            skip = flagged.skip
            missing_all = xp.asarray(flagged.counts == m, device=dev)
            raw, sq = _patched(xp, raw, sq, flagged, basis_ext)
            if not rule.fills:  # NaN only where missing at every sample, or raise
                check_nan_counts(flagged.counts, m, offset=offset + c0, locate=locate)
            if nan_mask is not None:
                nan_mask[c0:c1] = missing_all
            if first and rule.fills:
                zero = xp.zeros((c1 - c0,), dtype=dtype, device=dev)
                fill[c0:c1] = scatter_rows(zero, flagged.idx, flagged.values)
        if find:  # features far from zero: multiplied again less a reference
            ref = far_means(raw[:, l], sq, float(m), dtype)
            if ref is not None and flagged is not None:  # patched: as they are
                ref = xp.where(xp.asarray(flagged.skip, device=dev), 0.0, ref)
            if ref is not None:
                sub = sub - xp.astype(ref, dtype)
                raw = xp.astype(t_product_without(sub, basis_ext, skip), f64, copy=False)
                sq = xp.astype(backend.column_sumsq(sub), f64)
                if flagged is not None:
                    raw, sq = _patched(xp, raw, sq, flagged, basis_ext)
                shifted[c0:c1] = ref
        if amax is not None:
            source = spec.narrowing and column_scale is None
            amax[c0:c1] = norm_magnitudes(sq, sub, blocks, 1, c0, c1, source, missing_all)
            if ref is not None:  # a bound on the data as they are: |x| <= |x - ref| + |ref|
                amax[c0:c1] = amax[c0:c1] + xp.abs(ref)
        y = raw[:, :l]
        mu = raw[:, l] / m if spec.center else None
        spread = None  # given values: the distance of the data's means to them
        if given is not None:
            c = given[c0:c1]
            if missing_all is not None and not rule.fills:  # read as zeros: stay zero
                c = xp.where(missing_all, 0.0, c)
            spread, mu = mu, (c if ref is None else c - ref)
        if mu is not None:
            y = y - mu[:, None] * wsum[None, :]
            if mean is not None:
                mean[c0:c1] = mu if ref is None else mu + ref
        ws = None if w is None else w[c0:c1]
        if ws is not None:
            y = y * ws[:, None]
        Y[c0:c1, :] = xp.astype(y, dtype)
        sums.gram += y.T @ y
        t = y if ws is None else y * ws[:, None]
        td = xp.astype(t, dtype)
        add_product_without(sums.cross, sub, td, skip)
        if flagged is not None and flagged.patch is not None:
            at = xp.asarray(flagged.patch_idx, device=dev)
            sums.cross += xp.astype(flagged.patch @ xp.take(td, at, axis=0), f64, copy=False)
        if mu is not None:
            correction += mu @ t
        if first:
            if spread is not None:
                sq = sq - m * spread**2 + m * (spread - mu) ** 2
            elif mu is not None:
                sq = sq - m * mu**2
            if ws is not None:
                sq = sq * ws**2
            ss = ss + xp.sum(sq)
    sums.cross -= correction[None, :]
    if amax is not None:  # every sample of these features was here: name them now
        check_infinite(~(amax < np.inf), offset=offset, locate=locate)
    stats = StripeStats(mean, ss, nan_mask, amax, fill if first else None)
    if shifted is not None and backend.to_scalar(xp.any(shifted != 0.0)):
        stats.shift = shifted
    return Y, sums, stats
