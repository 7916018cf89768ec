"""One pass over stripes of samples: ``C = B``, every stripe holds all ``n`` features.

A read of stripe ``A_i`` (``m_i`` samples x ``n`` features) gives, a
sub-block at a time,

- ``Y_i = A_i (D W)`` with ``D = diag(w)``: the stripe's rows of the sketch,
  kept (they become ``U``);
- ``A_i^T [Y_i, 1]``: its share of ``Z = C^T Y`` and, through the column of
  ones, the feature sums (so the first pass also yields the means);
- ``Y_i^T Y_i`` and the column sums of ``Y_i``: the Gram matrix ``G = Y^T Y``.

Centering enters as rank-one corrections of these small sums on the first
pass, when the means are not known yet; later passes subtract the means from
each sub-block as it is multiplied (no cancellation in the products). Floating-point
features far from zero (kelvin) are read from the first pass on with a
reference near their mean subtracted (measured on the first rows of the data,
:func:`.stripe.offset_reference`), and later passes correct for the rounding
of the means they subtract, so the rank-one corrections never cancel. Weights
enter as the diagonal ``D``. With ``missing="mean"`` the feature means over
present values are read first (one extra read, see ``Problem.prepass``).

Given centering values (``center=`` an array, ``Problem.given_center``) take the
place of the means: nothing is read for them, they fill in missing values, and
the rank-one corrections take off the part of the features' sums they leave
(``(s - m mu) c^T`` in ``Z``, zero for the data's own means).
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
    HEAD_ROWS,
    Skip,
    flag_columns,
    is_floating,
    nonfinite,
    norm_magnitudes,
    offset_reference,
    quiet_overflow,
    scatter_rows,
    stripe_sub,
    sub_block_lines,
    sub_blocks,
    zero_columns,
)


@dataclass
class StripeSums(Summable):
    """One stripe's share of a pass's sums (added over stripes)."""

    MAXED = ("amax",)

    cross: Any  # A_i^T [Y_i, 1]: (n x (l + 1)), the last column holds the feature sums
    gram: Any  # Y_i^T Y_i
    sketch_sum: Any  # column sums of Y_i, (l,)
    sumsq: Any  # first pass: per-feature sums of squares of the (filled) data
    missing_count: Any  # first pass, when values may be missing: per feature
    amax: Any = None  # first pass, when the dtype leaves it open: per-feature largest |value|


@dataclass
class SampleStats(FeatureStats):
    """The :class:`~.state.FeatureStats` of the first pass and the ``reference`` it read the
    data less (float64 per feature, in the data's units; None: none, see
    :func:`.stripe.offset_reference`), for later passes."""

    reference: Any = None


@dataclass
class PresentSums(Summable):
    """Per-feature sum and count of the present (not missing) values."""

    sums: Any
    counts: Any


#: Later passes over stripes of samples center by a rank-one correction (no sweep) when
#: the mean's part of the data is at most this many times the centered data's (norms).
MEAN_RATIO = 100.0


class SampleStripes:
    """The passes of the compressed SVD over stripes of samples."""

    def __init__(self, ex, problem: Problem):
        self.ex = ex
        self.problem = problem
        self.spec = problem.read_spec()
        self.weights = ex.share(problem.weights)  # one copy in a graph, shared by small tasks
        self.column_scale = ex.share(problem.column_scale)
        self.given = ex.share(problem.given_center)
        self._nan_columns = None  # (statistics, the mask or None), see nan_columns
        self._corrects = None  # (statistics, bool), see corrects_mean

    def prepare(self):
        """``missing="mean"``: each feature's mean over its present values (one read).

        In the product dtype; in float64 for float64 data multiplied in float32
        (``narrowing``), whose values may be beyond float32's range.
        """
        ex, pb = self.ex, self.problem
        if pb.given_center is not None and pb.missing.fills:  # the values given: no read
            return ex.call(_as_dtype, self.given, np.float64 if pb.narrowing else pb.dtype)
        if not pb.prepass:
            return None
        sums = ex.map(_read_present, ex.stripes(), self.spec)
        dtype = np.float64 if self.problem.narrowing else self.problem.dtype
        return ex.call(_present_means, ex.sum(sums), dtype)

    def reference(self):
        """``center=True`` on floating-point data in memory: the reference of the features
        far from zero (or None), from the data's first rows. Dask data (see
        :meth:`.executors.Executor.head`): None, their first stripe gives it (``leads``)."""
        ex, pb = self.ex, self.problem
        if not pb.center or backend.is_packed(ex.data) or not is_floating(ex.data.dtype):
            return None
        head = ex.head(HEAD_ROWS)
        return None if head is None else ex.call(offset_reference, head, pb.dtype)

    def leads(self, stripes):
        """Dask data that :meth:`reference` would take one from: the first stripe and the
        others (:meth:`.executors.Executor.split_first`), or None. The first is read first
        and its first rows give the reference that all are read less (no read of their
        own: a step taking rows would read those chunks once more)."""
        ex, pb = self.ex, self.problem
        if not pb.center or backend.is_packed(ex.data) or not is_floating(ex.data.dtype):
            return None
        return ex.split_first(stripes) if ex.head(HEAD_ROWS) is None else None

    def read(self, basis, stats: SampleStats | None, fill, first: bool):
        """One pass: the sketch of ``C W`` and, on the first pass, the feature statistics."""
        ex, pb = self.ex, self.problem
        reference = self.reference() if first else stats.reference
        basis_w = ex.call(_weighted_basis, basis, self.weights, pb.dtype)
        # the mean is known after the first pass: later passes center each sub-block as
        # it is multiplied, unless the rank-one correction loses nothing that matters
        subtract = pb.center and not first
        subtract = subtract and (reference is not None or not self.corrects_mean(stats))
        shift, exact = None, None  # subtracted in the product dtype, and its float64 value
        if first and reference is not None:
            shift, exact = ex.call(_shift, reference, self.column_scale, pb.dtype, nout=2)
        elif subtract:
            shift, exact = ex.call(_shift, stats.mean, None, pb.dtype, nout=2)
        # the first pass waits for the means' own read (given values are not read)
        stripes = ex.stripes(after=(fill if pb.prepass else None) if first else basis)
        if fill is not None and pb.column_scale is not None:
            fill = ex.call(_scaled_fill, fill, self.column_scale, pb.dtype)
        elif fill is not None and pb.narrowing:
            fill = ex.call(_as_dtype, fill, pb.dtype)
        nan_columns = DETECT if first else self.nan_columns(stats)
        args = (first, self.spec, fill, self.column_scale, nan_columns)
        split = self.leads(stripes) if first and reference is None else None
        if split is not None:  # the first stripe first: its rows give the reference
            Y, sums, refs = ex.map(_read_leading, split[0], basis_w, *args, pb.dtype, nout=3)
            reference = refs[0]
            shift, exact = ex.call(_shift, reference, self.column_scale, pb.dtype, nout=2)
            stripes = split[1]
        Y_rest, sums_rest = ex.map(_read_stripe, stripes, basis_w, shift, *args, nout=2)
        Y, sums = (Y_rest, sums_rest) if split is None else (Y + Y_rest, sums + sums_rest)
        total = ex.sum(sums)
        if first:
            given = None
            if pb.given_center is not None:
                given = ex.call(_scaled_center, self.given, self.column_scale)
            stats = ex.call(
                _first_pass_stats,
                total,
                pb.n_samples,
                self.spec,
                pb.locate,
                self.weights,
                exact,
                reference,
                given,
            )
        # what centering still takes off, as a rank-one correction: the mean (data read
        # uncentered), the mean less the reference, or the rounding of the mean subtracted
        mean = stats.mean if shift is None else ex.call(_less, stats.mean, exact, first, reference)
        given = pb.given_center is not None
        cross, gram, mean_row = ex.call(
            _centered, total, basis_w, mean, self.weights, pb.n_samples, given, nout=3
        )
        return Sketch(Y, mean_row, cross, gram), stats

    def corrects_mean(self, stats: FeatureStats) -> bool:
        """Whether later passes center by the rank-one correction, as the first pass does,
        instead of subtracting the mean from each sub-block (a sweep): with float64
        products and concrete statistics whose mean is small next to the spread,
        ``||1 mu^T D||_F <= MEAN_RATIO ||B||_F``. Cancellation then costs about 1e-16
        times that ratio; a larger mean (say 1e6 times the spread) would cancel badly.
        One value to the host, once."""
        pb = self.problem
        if not self.ex.concrete or np.dtype(pb.dtype) != np.float64:
            return False
        if self._corrects is None or self._corrects[0] is not stats:
            mu = stats.mean if pb.weights is None else stats.mean * self.weights
            xp = backend.api(mu)
            mean_ss = float(backend.to_scalar(xp.sum(mu * mu))) * pb.n_samples
            total = float(backend.to_scalar(stats.total_ss))
            ok = np.isfinite(mean_ss) and mean_ss <= MEAN_RATIO**2 * total
            self._corrects = (stats, bool(ok))
        return self._corrects[1]

    def nan_columns(self, stats: FeatureStats):
        """What later passes do about missing values (see :data:`.stripe.DETECT`): with
        ``missing="error"`` and concrete statistics, the first pass's all-NaN features as
        a :class:`.stripe.Skip` (left out: the other features are gathered), or None when
        no feature is NaN (the mask to the host, once)."""
        rule = self.problem.missing
        if not self.ex.concrete or not rule.active or rule.fills:
            return DETECT
        if self._nan_columns is None or self._nan_columns[0] is not stats:
            mask = stats.nan_mask
            some = backend.to_scalar(backend.api(mask).any(mask))  # one value; then the mask
            self._nan_columns = (stats, Skip(backend.to_numpy(mask), mask) if some else None)
        return self._nan_columns[1]

    def magnitudes(self, stats: FeatureStats):
        """Every feature's largest magnitude in the data, as read (float64)."""
        return stats.amax

    def finish(self, stats: FeatureStats) -> FeatureStats:
        """The statistics as arrays of the input's kind."""
        ex, pb = self.ex, self.problem
        n = pb.n_features
        return FeatureStats(
            mean=ex.array(stats.mean, (n,), np.float64) if pb.center else None,
            total_ss=ex.array(stats.total_ss, (), np.float64),
            nan_mask=ex.array(stats.nan_mask, (n,), bool) if pb.missing.active else None,
        )


# ------------------------------------------------------------------ kernels


@quiet_overflow
def _read_stripe(
    blocks, basis_w, shift, first: bool, spec: ReadSpec, fill, column_scale, nan_columns=DETECT
):
    """One read of a sample stripe: ``Y_i = A_i D W`` and ``A_i^T [Y_i, 1]`` (and more).

    ``shift`` (the feature means, when known) is subtracted from each
    sub-block before it is multiplied; missing values are replaced by
    ``fill`` (``missing="mean"``) or zero first (only in the features
    ``nan_columns`` names, when known: see :data:`.stripe.DETECT`).
    ``column_scale``: powers of two the features are multiplied by as they are
    converted (rescaled data).
    """
    xp, dev = backend.api(basis_w), backend.device(basis_w)
    dtype, f64 = basis_w.dtype, xp.float64
    mi, (n, l) = blocks[0].shape[0], basis_w.shape
    rule = spec.missing
    Y = xp.empty((mi, l), dtype=dtype, device=dev)
    sums = StripeSums(
        cross=xp.zeros((n, l + 1), dtype=f64, device=dev),
        gram=xp.zeros((l, l), dtype=f64, device=dev),
        sketch_sum=xp.zeros((l,), dtype=f64, device=dev),
        sumsq=xp.zeros((n,), dtype=f64, device=dev) if first else None,
        missing_count=xp.zeros((n,), dtype=xp.int64, device=dev)
        if (first and rule.active)
        else None,
        amax=xp.zeros((n,), dtype=f64, device=dev) if (first and spec.watch_range) else None,
    )
    ext = xp.ones((min(mi, sub_block_lines(n, spec.sub_block)), l + 1), dtype=dtype, device=dev)
    if isinstance(nan_columns, Skip):  # land known: only the other features are multiplied
        return _read_kept(blocks, basis_w, shift, spec, column_scale, nan_columns, Y, sums, ext)
    # NaN (or inf) found from the column sums of a product, not by a sweep of every value
    # (later passes of a lazy graph on a device: without the column-length transfers)
    by_sums = isinstance(nan_columns, str) and rule.active and not rule.fills
    by_sums = by_sums and (first or backend.is_numpy(basis_w))
    ones = xp.ones((1, ext.shape[0]), dtype=dtype, device=dev) if by_sums else None
    for r0, r1 in sub_blocks(mi, n, spec.sub_block):
        sub = stripe_sub(blocks, 0, r0, r1, dtype, column_scale)
        sq, count = None, None
        if by_sums:
            colsums = xp.astype(ones[:, : r1 - r0] @ sub, f64)[0, :]
            if first:
                sq = xp.astype(backend.column_sumsq(sub), f64)
                colsums = colsums + sq  # inf or NaN there too where squares overflow
            bad = nonfinite(xp, colsums)
            flagged = None if bad is None else flag_columns(xp, sub, bad, rule)
            if flagged is not None:
                skip = xp.asarray(flagged.skip, device=dev)
                count = xp.asarray(flagged.counts, device=dev)
                sub = xp.where(skip & (count > 0), 0.0, sub)
                if sq is not None:
                    sq = xp.where(skip, 0.0, sq)
                    if flagged.patch is not None:  # finite values whose squares overflow
                        patch_sq = xp.astype(backend.column_sumsq(flagged.patch), f64)
                        sq = scatter_rows(sq, flagged.patch_idx, patch_sq)
            elif first:
                count = xp.zeros((n,), dtype=xp.int64, device=dev)
        else:
            sub, count = zero_columns(xp, sub, nan_columns, rule, fill, count=first)
        if sums.missing_count is not None:
            sums.missing_count += count
        if first and sq is None:
            sq = xp.astype(backend.column_sumsq(sub), f64)
        if sums.amax is not None:
            source = spec.narrowing and column_scale is None
            everywhere = None if count is None else count == (r1 - r0)
            mag = norm_magnitudes(sq, sub, blocks, 0, r0, r1, source, everywhere)
            sums.amax = xp.maximum(sums.amax, mag)
        if shift is not None:
            sub = sub - shift
            if first:  # the sums of squares of what is multiplied (no cancellation)
                sq = xp.astype(backend.column_sumsq(sub), f64)
        sums.cross = _multiplied(sub, basis_w, Y, r0, r1, ext, sums.cross, sums)
        if sums.sumsq is not None:
            sums.sumsq += sq
    return Y, sums


def _read_leading(blocks, basis_w, first, spec, fill, column_scale, nan_columns, dtype):
    """:func:`_read_stripe` of the first stripe of Dask data, less the reference its first
    rows give (returned third: the other stripes are read less it)."""
    rows = min(HEAD_ROWS, blocks[0].shape[0])
    head = backend.api(blocks[0]).concat([b[:rows, :] for b in blocks], axis=1)
    reference = offset_reference(head, dtype)
    shift, _ = _shift(reference, column_scale, dtype)
    Y, sums = _read_stripe(blocks, basis_w, shift, first, spec, fill, column_scale, nan_columns)
    return Y, sums, reference


def _multiplied(sub, basis_w, Y, r0: int, r1: int, ext, cross, sums):
    """One sub-block's products: its rows ``Y[r0:r1] = sub basis_w`` and, added in,
    ``cross += sub^T [y, 1]``, the Gram matrix and the column sums of ``y`` (in
    ``sums``). Returns ``cross``."""
    xp, f64 = backend.api(sub), backend.api(sub).float64
    l = basis_w.shape[1]
    y = sub @ basis_w
    Y[r0:r1, :] = y
    e = ext[: r1 - r0, :]
    e[:, :l] = y
    cross += xp.astype(sub.T @ e, f64)
    y64 = xp.astype(y, f64)
    sums.gram += y64.T @ y64
    sums.sketch_sum += xp.sum(y64, axis=0)
    return cross


def _read_kept(blocks, basis_w, shift, spec: ReadSpec, column_scale, skip, Y, sums, ext):
    """A later pass of a sample stripe whose features ``skip`` (a :class:`.stripe.Skip`)
    names are missing at every sample: each sub-block's other features are gathered
    (one copy of them, the mean subtracted in place where the library allows), so land
    is neither read into the products nor multiplied."""
    xp, dev = backend.api(basis_w), backend.device(basis_w)
    f64 = xp.float64
    mi, (n, l) = blocks[0].shape[0], basis_w.shape
    kept = np.flatnonzero(~skip.host)
    keep = xp.asarray(kept, device=dev)
    bw = xp.take(basis_w, keep, axis=0)
    centre = None if shift is None else xp.take(shift, keep, axis=0)
    cross = xp.zeros((keep.shape[0], l + 1), dtype=f64, device=dev)
    for r0, r1 in sub_blocks(mi, n, spec.sub_block):
        sub = xp.take(stripe_sub(blocks, 0, r0, r1, basis_w.dtype, column_scale), keep, axis=1)
        if centre is not None and isinstance(sub, np.ndarray):
            np.subtract(sub, centre, out=sub)
        elif centre is not None:
            sub = sub - centre
        cross = _multiplied(sub, bw, Y, r0, r1, ext, cross, sums)
    sums.cross = scatter_rows(sums.cross, kept, cross)
    return Y, sums


def _read_present(blocks, spec: ReadSpec):
    """Per-feature sum and count of the present values in a sample stripe."""
    xp, dev = backend.api(blocks[0]), backend.device(blocks[0])
    mi, n = blocks[0].shape[0], sum(b.shape[1] for b in blocks)
    out = PresentSums(
        xp.zeros((n,), dtype=xp.float64, device=dev), xp.zeros((n,), dtype=xp.int64, device=dev)
    )
    for r0, r1 in sub_blocks(mi, n, spec.sub_block):
        sub = stripe_sub(blocks, 0, r0, r1, np.float64 if spec.narrowing else spec.dtype)
        mask = spec.missing.mask(xp, sub)
        out.sums += xp.sum(xp.where(mask, 0.0, sub), axis=0, dtype=xp.float64)
        out.counts += (r1 - r0) - xp.astype(xp.count_nonzero(mask, axis=0), xp.int64)
    return out


# --------------------------------------------------------------- small math


def _present_means(total: PresentSums, dtype):
    xp = backend.api(total.sums)
    counts = xp.astype(xp.maximum(total.counts, 1), xp.float64)
    return xp.astype(total.sums / counts, backend.to_dtype(xp, dtype))


def _weighted_basis(W, w, dtype):
    """``D W`` in the product dtype."""
    xp = backend.api(W)
    out = W if w is None else W * w[:, None]
    return xp.astype(out, backend.to_dtype(xp, dtype), copy=False)


def _as_dtype(x, dtype):
    xp = backend.api(x)
    return xp.astype(x, backend.to_dtype(xp, dtype))


def _shift(values, column_scale, dtype):
    """Per-feature ``values`` (float64, None: none) times ``column_scale`` (or None) in the
    product dtype, 0 where they do not fit, and their exact float64 value."""
    if values is None:
        return None, None
    xp = backend.api(values)
    x = values if column_scale is None else values * column_scale
    shift = xp.astype(x, backend.to_dtype(xp, dtype))
    shift = xp.where(xp.isfinite(shift), shift, xp.zeros_like(shift))
    return shift, xp.astype(shift, xp.float64)


def _less(mean, exact, first: bool, reference):
    """What the rank-one correction takes off data read less ``exact``: on the first pass
    ``mean - exact`` (``mean`` when nothing was subtracted); on later passes, which subtract
    the mean, the rounding of it, where a reference is in use (else none, as always)."""
    if first:
        return mean if exact is None else mean - exact
    return None if reference is None else mean - exact


def _scaled_center(given, column_scale):
    """The given centering values in the units of the data as read (rescaled or not)."""
    return given if column_scale is None else given * column_scale


def _scaled_fill(fill, column_scale, dtype):
    """The fill values in the units of rescaled data (multiplied in float64: exact)."""
    xp = backend.api(fill)
    return xp.astype(xp.astype(fill, xp.float64) * column_scale, backend.to_dtype(xp, dtype))


def _first_pass_stats(
    total: StripeSums, m: int, spec: ReadSpec, locate, w, exact=None, reference=None, given=None
) -> SampleStats:
    """Means, total sum of squares and all-missing features from the first pass's sums
    (of the data less ``exact``, when given: the reference subtracted).

    ``given``: the centering values given (in the units of the data as read), which
    are then the means; 0 at features NaN at every sample under ``missing="error"``
    (read as zeros there), so that those features stay zero.

    Raises :class:`~xsvd.core.missing.InfiniteValueError` naming the features that
    hold infinite values, :class:`~xsvd.core.missing.MissingValueError` for NaN
    the missing rule does not allow.
    """
    amax = total.amax
    if amax is not None:
        check_infinite(~(amax < np.inf), locate=locate)
    nan_mask = None
    if total.missing_count is not None:
        if spec.missing.fills:
            nan_mask = total.missing_count == m
        else:
            nan_mask = check_nan_counts(total.missing_count, m, locate=locate)
    mean = total.cross[:, -1] / m if spec.center else None
    ss = total.sumsq - m * mean**2 if spec.center else total.sumsq
    if given is not None:  # about the values given: the spread plus the distance to them
        xp = backend.api(given)
        if nan_mask is not None and not spec.missing.fills:
            given = xp.where(nan_mask, 0.0, given)
        less = given if exact is None else given - exact
        ss = ss + m * (mean - less) ** 2
        mean, exact = given, None
    if w is not None:
        ss = ss * w**2
    if exact is not None:
        mean = mean + exact
    return SampleStats(mean, backend.api(ss).sum(ss), nan_mask, amax, reference=reference)


def _centered(total: StripeSums, basis_w, mean, w, m: int, given: bool = False):
    """Centering and weights applied to a pass's sums: ``Z = C^T Y``, ``G = Y^T Y``.

    ``mean`` is given when the data were read uncentered (the first pass);
    the sketch's rows then lose ``c = mu^T D W`` (returned as ``mean_row``).
    ``given``: ``mean`` is not the data's (centering values given), so ``Z`` also
    loses ``(s - m mu) c^T``, with ``s`` the features' sums as read (zero, and left
    out, for the data's own means).
    """
    cross = total.cross[:, :-1]
    if mean is None:
        Z, G, c = cross, total.gram, None
    else:
        ysum = total.sketch_sum
        xp = backend.api(mean)
        c = mean @ xp.astype(basis_w, xp.float64)  # (l,): the mean row of A D W
        Z = cross - mean[:, None] * ysum[None, :]
        G = total.gram - ysum[:, None] * c[None, :] - c[:, None] * ysum[None, :]
        G = G + m * c[:, None] * c[None, :]
        if given:
            Z = Z - (total.cross[:, -1] - m * mean)[:, None] * c[None, :]
    if w is not None:
        Z = Z * w[:, None]
    return Z, G, c
