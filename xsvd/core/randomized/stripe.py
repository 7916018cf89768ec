"""Reading a stripe a float sub-block at a time (shared by both kernels).

A stripe comes as the list of its blocks along the thin side (one block when
the data are chunked one way only). Kernels walk it in sub-blocks of about
``sub_block`` elements: each is converted to the product dtype (unpacked, for
packed genotypes), its missing values filled, and multiplied while it is in
cache. No stripe-sized float copy is ever made.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..missing import MissingRule

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
            return converted(b[start:stop], dtype, scale)
        return converted(b[:, start:stop], dtype, None if scale is None else scale[start:stop])
    xp = backend.namespace(blocks[0])
    if axis == 0:
        out = xp.empty((stop - start, sum(b.shape[1] for b in blocks)), dtype=dtype)
        pos = 0
        for b in blocks:
            part = None if scale is None else scale[pos : pos + b.shape[1]]
            out[:, pos : pos + b.shape[1]] = converted(b[start:stop], dtype, part)
            pos += b.shape[1]
    else:
        out = xp.empty((sum(b.shape[0] for b in blocks), stop - start), dtype=dtype)
        part = None if scale is None else scale[start:stop]
        pos = 0
        for b in blocks:
            out[pos : pos + b.shape[0]] = converted(b[:, start:stop], dtype, part)
            pos += b.shape[0]
    return out


def converted(x, dtype, scale=None):
    """``x`` in ``dtype``, each column multiplied by ``scale`` (powers of two) when given.

    Float64 data going to float32 are multiplied before the conversion (so
    that values beyond float32's range come into it), anything else after;
    either way the product is exact. ``scale`` is float64 (it is converted
    here when the product is taken in float32).
    """
    if scale is None:
        return x.astype(dtype, copy=False)
    if narrows(x.dtype, dtype):
        return (x * scale).astype(dtype)
    return x.astype(dtype, copy=False) * scale.astype(dtype, copy=False)


def narrows(source, dtype) -> bool:
    """Whether converting ``source`` data to ``dtype`` loses range (float64 to float32)."""
    source, dtype = np.dtype(source), np.dtype(dtype)
    return source.kind == "f" and dtype.kind == "f" and source.itemsize > dtype.itemsize


def fill_missing(xp, sub, rule: MissingRule, fill=None):
    """Replace the missing values of a float sub-block whose columns are features.

    Under the ``"error"`` rule missing values (whole-feature NaN) become 0.
    Under ``"mean"`` they become ``fill`` (per-feature means) or, when
    ``fill`` is None (the sub-block holds every sample), the mean of the
    column's present values. Returns the sub-block (a copy only when
    something was missing) and the number of missing values per column.
    """
    mask = rule.mask(xp, sub)
    count = mask.sum(axis=0)
    if not bool(count.any()):
        return sub, count
    if not rule.fills:
        value = sub.dtype.type(0)
    elif fill is None:
        present = xp.where(mask, sub.dtype.type(0), sub).sum(axis=0, dtype=np.float64)
        value = (present / xp.maximum(sub.shape[0] - count, 1)).astype(sub.dtype)
    else:
        value = fill
    return xp.where(mask, value, sub), count


def column_magnitudes(sub):
    """Per column, the largest magnitude in a float sub-block (``inf`` where one is infinite)."""
    xp = backend.namespace(sub)
    return xp.maximum(sub.max(axis=0), -sub.min(axis=0))


def measured_magnitudes(sub, blocks, axis: int, start: int, stop: int, narrowing: bool, missing):
    """:func:`column_magnitudes` of a sub-block, in float64, true to the source data.

    ``narrowing`` (float64 data converted to float32, unscaled): a value
    beyond float32's range became ``inf`` or ``0`` in the conversion; such
    columns (but not those ``missing`` says are missing at every row of the
    sub-block) are measured again in the source blocks, so that only values
    infinite in the data read as infinite, and data below float32's range
    as what they are.
    """
    mag = column_magnitudes(sub).astype(np.float64)
    if not narrowing:
        return mag
    xp = backend.namespace(sub)
    suspect = ~(mag < np.inf) | (mag < float(np.finfo(sub.dtype).tiny))
    if missing is not None:
        suspect &= missing < sub.shape[0]
    idx = np.flatnonzero(backend.to_numpy(suspect))
    if not idx.size:
        return mag
    if axis == 0:  # blocks side by side: each holds some of the columns
        parts, pos = [], 0
        for b in blocks:
            mine = idx[(idx >= pos) & (idx < pos + b.shape[1])] - pos
            if mine.size:
                parts.append(_finite_magnitudes(b[start:stop][:, mine]))
            pos += b.shape[1]
        source = xp.concatenate(parts)
    else:  # blocks stacked: each holds some rows of every column
        parts = [_finite_magnitudes(b[:, start:stop][:, idx]) for b in blocks]
        source = parts[0]
        for part in parts[1:]:
            source = xp.maximum(source, part)
    mag[xp.asarray(idx)] = source
    return mag


def _finite_magnitudes(x):
    """Per column, the largest magnitude of ``x`` in float64, NaN (missing) left out."""
    xp = backend.namespace(x)
    x = x.astype(np.float64, copy=False)
    x = xp.where(xp.isnan(x), 0.0, x)
    return xp.maximum(x.max(axis=0), -x.min(axis=0))
