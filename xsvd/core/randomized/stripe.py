"""Reading a stripe a float sub-block at a time (shared by both kernels).

A stripe comes as the list of its blocks along the thin side (one block when
the data are chunked one way only). Kernels walk it in sub-blocks of about
``sub_block`` elements: each is converted to the product dtype (unpacked, for
packed genotypes), its missing values filled, and multiplied while it is in
cache. No stripe-sized float copy is ever made.

Sweeps of each sub-block beyond the products are few: the first pass finds the
columns holding NaN (or inf) from the column sums a product gives anyway
(:func:`nonfinite`) and looks only at those (:func:`flag_columns`); magnitudes
come from the sums of squares (:func:`norm_magnitudes`); features missing at
every sample (land) are left out of later products, which multiply the runs of
clean columns as views (:func:`add_product_without`): they are never read again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backend
from ..missing import MissingRule


def quiet_overflow(kernel):
    """``kernel`` with NumPy's overflow and invalid-value warnings off: the first pass
    multiplies data of any magnitude, finds from the magnitudes it measures whether the
    products could overflow, and reads the data again rescaled if so (or, in one lazy
    graph, raises), so an overflow there is handled, not a result."""

    @functools.wraps(kernel)
    def quiet(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore"):
            return kernel(*args, **kwargs)

    return quiet


#: Fewest rows (or columns) of a sub-block, however wide the stripe.
MIN_SUB_BLOCK_LINES = 64


def sub_blocks(length: int, other: int, sub_block: int):
    """``(start, stop)`` of each sub-block along ``length`` when the other side has ``other``."""
    step = sub_block_lines(other, sub_block)
    for start in range(0, length, step):
        yield start, min(start + step, length)


def sub_block_lines(other: int, sub_block: int) -> int:
    """Rows (or columns) per sub-block when the other side has ``other`` entries."""
    return max(MIN_SUB_BLOCK_LINES, sub_block // max(other, 1))


def stripe_sub(blocks, axis: int, start: int, stop: int, dtype, scale=None):
    """Float sub-block ``[start:stop]`` along ``axis`` of a stripe given as blocks.

    ``axis=0``: rows ``start:stop`` of blocks laid side by side (a stripe of
    samples); ``axis=1``: columns ``start:stop`` of blocks stacked vertically
    (a stripe of features). A single block gives a view or a converted copy;
    several blocks are merged into one small buffer (never the whole stripe).

    ``scale``: per column of the stripe (every feature for ``axis=0``, the
    stripe's features for ``axis=1``), a power of two each value is
    multiplied by as it is converted (see :func:`converted`); None: none.
    """
    if len(blocks) == 1:  # a view, or a float copy (unpacked, for packed genotypes)
        b = blocks[0]
        if axis == 0:
            return converted(b[start:stop, :], dtype, scale)
        return converted(b[:, start:stop], dtype, None if scale is None else scale[start:stop])
    xp = backend.api(blocks[0])
    dt, dev = backend.to_dtype(xp, dtype), backend.device(blocks[0])
    if axis == 0:
        out = xp.empty((stop - start, sum(b.shape[1] for b in blocks)), dtype=dt, device=dev)
        pos = 0
        for b in blocks:
            part = None if scale is None else scale[pos : pos + b.shape[1]]
            out[:, pos : pos + b.shape[1]] = converted(b[start:stop, :], dtype, part)
            pos += b.shape[1]
    else:
        out = xp.empty((sum(b.shape[0] for b in blocks), stop - start), dtype=dt, device=dev)
        part = None if scale is None else scale[start:stop]
        pos = 0
        for b in blocks:
            out[pos : pos + b.shape[0], :] = converted(b[:, start:stop], dtype, part)
            pos += b.shape[0]
    return out


def converted(x, dtype, scale=None):
    """``x`` in ``dtype``, each column multiplied by ``scale`` (powers of two) when given.

    Float64 data going to float32 are multiplied before the conversion (so
    that values beyond float32's range come into it), float32 data on a device
    that flushes subnormal values in float64, anything else after; either way
    the product is exact. ``scale`` is float64 (it is converted
    here when the product is taken in float32). Packed data are unpacked by
    their own ``astype``.
    """
    if backend.is_packed(x):
        return x.astype(backend.numpy_dtype(dtype), copy=False)
    xp = backend.api(x)
    dt = backend.to_dtype(xp, dtype)
    if scale is None:
        return xp.astype(x, dt, copy=False)
    if narrows(x.dtype, dtype):
        return xp.astype(x * scale, dt)
    if backend.flushes_subnormals(x):  # subnormal values come up in float64, not to 0
        return xp.astype(backend.float64_exact(x) * scale, dt)
    return xp.astype(x, dt, copy=False) * xp.astype(scale, dt, copy=False)


def narrows(source, dtype) -> bool:
    """Whether converting ``source`` data to ``dtype`` loses range (float64 to float32)."""
    source, dtype = backend.numpy_dtype(source), backend.numpy_dtype(dtype)
    return source.kind == "f" and dtype.kind == "f" and source.itemsize > dtype.itemsize


#: Floating-point features whose mean exceeds this many times their spread (temperatures in
#: kelvin: about 3e4) are read with a reference near the mean subtracted before any product,
#: so that centering does not cancel in float32 (or, beyond 1e8, float64) products.
OFFSET_RATIO = 16.0
#: Rows the reference is measured on: the first rows of the data (or of a sub-block).
HEAD_ROWS = 64


def offset_reference(head, dtype):
    """Per column of ``head`` (the first rows of floating-point data, in any dtype), the
    reference to subtract before multiplying in ``dtype`` (see :func:`far_means`), from
    its finite values, or None."""
    xp = backend.api(head)
    x = xp.astype(head, xp.float64)
    ok = xp.isfinite(x)
    x = xp.where(ok, x, 0.0)
    count = xp.sum(xp.astype(ok, xp.float64), axis=0)
    return far_means(xp.sum(x, axis=0), xp.sum(x * x, axis=0), count, dtype)


def far_means(sums, sumsq, count, dtype):
    """Per column, from its sum, sum of squares and count of values (float64; the count
    may be one number for every column), the mean
    where it exceeds :data:`OFFSET_RATIO` times the spread, rounded to ``dtype`` (so that
    the reference subtracted is known exactly), 0 elsewhere; None when no column needs
    one (the usual case: nothing is subtracted, nothing changes). Sums of squares that
    cancel (float32 sums of data far from zero) still say "far". One value to the host."""
    xp = backend.api(sums)
    column = hasattr(count, "shape")  # a count per column, or one for all
    n = xp.maximum(count, 1.0) if column else max(float(count), 1.0)
    mean = sums / n
    far = mean * mean > OFFSET_RATIO**2 * (sumsq / n - mean * mean)
    if column:
        far = far & (count > 0)
    if not backend.to_scalar(xp.any(far)):
        return None
    ref = xp.astype(xp.astype(xp.where(far, mean, 0.0), backend.to_dtype(xp, dtype)), xp.float64)
    return xp.where(xp.isfinite(ref), ref, 0.0)  # beyond the product dtype: rescaled later


def is_floating(dtype) -> bool:
    """Whether data of ``dtype`` are floating point (their offset is not bounded)."""
    return backend.numpy_dtype(dtype).kind == "f"


#: ``nan_columns`` of the kernels: find the missing values of each sub-block (first
#: pass, ``missing="mean"``, one lazy graph); otherwise the first pass said which
#: features are NaN at every sample (a boolean row, zeroed by one ``where``), or
#: None: that none are.
DETECT = "detect"


def zero_columns(xp, sub, nan_columns, rule: MissingRule, fill=None, count: bool = True):
    """A sub-block with its missing values replaced, and their count per column (None when
    not counted). See :data:`DETECT` for ``nan_columns``; ``count``: see
    :func:`fill_missing`."""
    if isinstance(nan_columns, str):
        if not rule.active:
            return sub, None
        return fill_missing(xp, sub, rule, fill, count=count or fill is None)
    if nan_columns is None:
        return sub, None
    return xp.where(nan_columns, 0.0, sub), None


def fill_missing(
    xp, sub, rule: MissingRule, fill=None, count: bool = True, with_value: bool = False
):
    """Replace the missing values of a float sub-block whose columns are features.

    Under the ``"error"`` rule missing values (whole-feature NaN) become 0.
    Under ``"mean"`` they become ``fill`` (per-feature means) or, when
    ``fill`` is None (the sub-block holds every sample), the mean of the
    column's present values. Returns the sub-block (a copy only when
    something was missing) and the number of missing values per column
    (``count=False``, where ``fill`` is given or nothing is filled: None, and
    one sweep less). ``with_value``: the values filled in per column (0 where
    nothing was missing) come third.
    """
    mask = rule.mask(xp, sub)
    if not count:
        if not backend.maybe_any(mask):
            return sub, None
        return xp.where(mask, fill if rule.fills else 0.0, sub), None
    count = xp.count_nonzero(mask, axis=0)
    if not backend.maybe_any(count):  # NumPy: nothing missing, no copy (devices: no sync)
        if with_value:
            return (
                sub,
                count,
                xp.zeros((sub.shape[1],), dtype=sub.dtype, device=backend.device(sub)),
            )
        return sub, count
    if not rule.fills:
        value = 0.0
    elif fill is None:
        present = xp.sum(xp.where(mask, 0.0, sub), axis=0, dtype=xp.float64)
        value = xp.astype(
            present / xp.astype(xp.maximum(sub.shape[0] - count, 1), xp.float64), sub.dtype
        )
    else:
        value = fill
    if with_value:
        return xp.where(mask, value, sub), count, value
    return xp.where(mask, value, sub), count


@dataclass(frozen=True)
class Skip:
    """Features missing at every sample, as the first pass found them: a boolean per
    column on the host (to cut the products into runs of clean columns) and the same on
    the data's device (to zero their rows of the small products)."""

    host: np.ndarray
    device: Any

    def part(self, start: int, stop: int):
        return self.host[start:stop], self.device[start:stop]


@dataclass
class Flagged:
    """The columns of a sub-block that hold NaN (or inf, or overflowed in a sum), found
    from sums a product gave anyway (:func:`flag_columns`).

    ``skip`` (host bool per column): left out of products with the sub-block as it is;
    ``idx`` (host): the flagged columns; ``counts`` (host): missing values per column of
    the sub-block; ``patch_idx`` (host) and ``patch``: the flagged columns that still
    take part in the products (filled under ``missing="mean"``; under ``"error"`` those
    not missing at every row), as a small gathered block; ``values``: per flagged column,
    the value filled in (``missing="mean"``), else None.
    """

    skip: np.ndarray
    idx: np.ndarray
    counts: np.ndarray
    patch_idx: np.ndarray
    patch: Any
    values: Any


def nonfinite(xp, sums) -> np.ndarray | None:
    """Host booleans: which of ``sums`` (per column, a sum over the rows that a product
    took anyway) are NaN or inf, i.e. which columns hold NaN or inf (or overflowed in the
    sum); None when none do (the usual case). One column-length vector to the host."""
    bad = backend.to_numpy(~xp.isfinite(sums))
    return bad if bad.any() else None


def flag_columns(xp, sub, bad: np.ndarray, rule: MissingRule, fill=None) -> Flagged:
    """The columns of float sub-block ``sub`` that :func:`nonfinite` found (``bad``).

    Only those columns are looked at: a sub-block without missing values costs no
    sweep. Under ``missing="error"`` they are counted in views of their runs (land comes
    in long runs), else gathered. ``fill``: ``missing="mean"``, per flagged column, the
    value to fill (None: the mean of the column's present values in this sub-block).
    Rules whose negative values count as missing (integer codes) cannot be found from
    sums: not for them.
    """
    idx = np.flatnonzero(bad)
    dev = backend.device(sub)
    counts = np.zeros(sub.shape[1], dtype=np.int64)
    runs = clean_runs(~bad)
    if not rule.fills and len(runs) * MIN_MEAN_RUN <= idx.size:
        for a, b in runs:
            counts[a:b] = backend.to_numpy(xp.count_nonzero(rule.mask(xp, sub[:, a:b]), axis=0))
        keep = idx[counts[idx] == 0]  # infinite or overflowed, nothing missing: as read
        patch = xp.take(sub, xp.asarray(keep, device=dev), axis=1) if keep.size else None
        return Flagged(bad, idx, counts, keep, patch, None)
    g = xp.take(sub, xp.asarray(idx, device=dev), axis=1)
    mask = rule.mask(xp, g)
    count_g = xp.count_nonzero(mask, axis=0)
    counts[idx] = backend.to_numpy(count_g)
    if not rule.fills:
        pos = np.flatnonzero(counts[idx] == 0)
        patch = xp.take(g, xp.asarray(pos, device=dev), axis=1) if pos.size else None
        return Flagged(bad, idx, counts, idx[pos], patch, None)
    if fill is None:
        present = xp.sum(xp.where(mask, 0.0, g), axis=0, dtype=xp.float64)
        n_present = xp.astype(xp.maximum(sub.shape[0] - count_g, 1), xp.float64)
        fill = xp.astype(present / n_present, g.dtype)
    return Flagged(bad, idx, counts, idx, xp.where(mask, fill, g), fill)


#: Clean columns left between skipped ones are multiplied as views of the sub-block when
#: they come in runs of at least this many on average; otherwise they are gathered into
#: one block (one copy, fewer small products).
MIN_MEAN_RUN = 16


def clean_runs(skip: np.ndarray):
    """``(start, stop)`` of the runs of False in the host boolean vector ``skip``."""
    edges = np.diff(np.concatenate(([0], (~skip).astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()
    return list(zip(starts, stops, strict=True))


def _pieces(skip: np.ndarray):
    """The clean columns as runs (``list`` of ``(start, stop)``), or as one index array
    when they come in short runs (see :data:`MIN_MEAN_RUN`)."""
    runs = clean_runs(skip)
    if len(runs) <= 1 or len(runs) * MIN_MEAN_RUN <= sum(b - a for a, b in runs):
        return runs
    return np.flatnonzero(~skip)


def add_product_without(acc, sub, t, skip: np.ndarray | None):
    """``acc += sub @ t`` (in ``acc``'s dtype) with the columns that ``skip`` (host
    booleans, or None) names left out.

    Their values (NaN, for features missing at every sample) never enter the
    product, and no filled copy of the sub-block is made: the clean columns
    are multiplied as views, run by run, each product added into ``acc`` as it
    comes, or, when they are scattered in short runs, gathered into one block
    first. Returns ``acc`` (updated in place).
    """
    xp, dev = backend.api(sub), backend.device(sub)
    if skip is None:
        pieces = [(0, sub.shape[1])]
    else:
        pieces = _pieces(skip)
    if isinstance(pieces, np.ndarray):
        idx = xp.asarray(pieces, device=dev)
        acc += xp.astype(xp.take(sub, idx, axis=1) @ xp.take(t, idx, axis=0), acc.dtype, copy=False)
        return acc
    for a, b in pieces:
        acc += xp.astype(sub[:, a:b] @ t[a:b, :], acc.dtype, copy=False)
    return acc


def t_product_without(sub, w, skip: np.ndarray | None):
    """``sub.T @ w`` with zero rows for the columns that ``skip`` names (see
    :func:`add_product_without`): those columns are never read."""
    if skip is None:
        return sub.T @ w
    xp, dev = backend.api(sub), backend.device(sub)
    pieces = _pieces(skip)
    out = xp.zeros((sub.shape[1], w.shape[1]), dtype=w.dtype, device=dev)
    if isinstance(pieces, np.ndarray):
        part = xp.take(sub, xp.asarray(pieces, device=dev), axis=1).T @ w
        return scatter_rows(out, pieces, part)
    for a, b in pieces:
        out[a:b, :] = sub[:, a:b].T @ w
    return out


def scatter_rows(x, idx_host: np.ndarray, values):
    """``x`` with rows ``idx_host`` (host integers, sorted) replaced by ``values`` (a copy of
    ``x``'s size; works on any array-API library, which need not support integer setitem)."""
    xp = backend.api(x)
    if isinstance(x, np.ndarray) or backend.is_cupy(x):
        out = x.copy()
        out[idx_host] = values
        return out
    pos = np.zeros(x.shape[0], dtype=np.int64)
    pos[idx_host] = np.arange(1, idx_host.size + 1)
    stacked = xp.concat([x[:1, ...], values], axis=0)
    picked = xp.take(stacked, xp.asarray(pos, device=backend.device(x)), axis=0)
    keep = xp.asarray(pos == 0, device=backend.device(x))
    if x.ndim == 2:
        keep = keep[:, None]
    return xp.where(keep, x, picked)


def norm_magnitudes(sq, sub, blocks, axis: int, start: int, stop: int, source: bool, missing):
    """Per column, a bound on the largest magnitude of a float sub-block: its norm, from the
    sums of squares ``sq`` (float64) the first pass takes anyway, so that no sweep of its own
    is needed.

    ``max|x| <= ||x|| <= sqrt(rows) max|x|``: the rules of :mod:`.magnitude` take it as
    the column's magnitude (an upper bound, at most ``sqrt(rows)`` above). Where the
    squares may have overflowed or underflowed (a norm that is not finite, or below
    ``2**(minexp/2 + 26)`` of the sub-block's dtype) and the column is not missing at every
    row (``missing``: per column, True there, or None), the magnitudes are measured
    exactly (:func:`exact_magnitudes`): rare, and then one more sweep.
    ``source``: measure in the source blocks (float64 data converted to float32, unscaled).
    """
    xp = backend.api(sq)
    mag = xp.sqrt(sq)
    low = 2.0 ** (np.finfo(backend.numpy_dtype(sub.dtype)).minexp // 2 + 26)
    suspect = ~(mag < np.inf) | (mag < low)
    if missing is not None:
        suspect = suspect & ~missing
    if not backend.to_scalar(xp.any(suspect)):  # one value to the host
        return xp.where(mag < np.inf, mag, 0.0) if missing is not None else mag
    exact = exact_magnitudes(sub, blocks, axis, start, stop, source)
    return xp.where(suspect, exact, xp.where(mag < np.inf, mag, 0.0))


def exact_magnitudes(sub, blocks, axis: int, start: int, stop: int, source: bool):
    """Per column, the largest magnitude in float64, NaN (missing) left out: of the source
    blocks (``source``), else of the sub-block itself."""
    xp = backend.api(sub)
    if not source:
        return backend.column_magnitudes(sub)
    if axis == 0:  # blocks side by side: each holds some of the columns
        return xp.concat([backend.column_magnitudes(b[start:stop, :]) for b in blocks])
    parts = [backend.column_magnitudes(b[:, start:stop]) for b in blocks]  # stacked: rows of each
    out = parts[0]
    for part in parts[1:]:
        out = xp.maximum(out, part)
    return out
