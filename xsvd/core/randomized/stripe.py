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


def stripe_sub(blocks, axis: int, start: int, stop: int, dtype):
    """Float sub-block ``[start:stop]`` along ``axis`` of a stripe given as blocks.

    ``axis=0``: rows ``start:stop`` of blocks laid side by side (a stripe of
    samples); ``axis=1``: columns ``start:stop`` of blocks stacked vertically
    (a stripe of features). A single block gives a view or a converted copy;
    several blocks are merged into one small buffer (never the whole stripe).
    """
    if len(blocks) == 1:  # a view, or a float copy (unpacked, for packed genotypes)
        b = blocks[0]
        return (b[start:stop] if axis == 0 else b[:, start:stop]).astype(dtype, copy=False)
    xp = backend.namespace(blocks[0])
    if axis == 0:
        out = xp.empty((stop - start, sum(b.shape[1] for b in blocks)), dtype=dtype)
        pos = 0
        for b in blocks:
            out[:, pos : pos + b.shape[1]] = b[start:stop].astype(dtype, copy=False)
            pos += b.shape[1]
    else:
        out = xp.empty((sum(b.shape[0] for b in blocks), stop - start), dtype=dtype)
        pos = 0
        for b in blocks:
            out[pos : pos + b.shape[0]] = b[:, start:stop].astype(dtype, copy=False)
            pos += b.shape[0]
    return out


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


def scaled(sub, scale: float):
    """The sub-block times ``scale`` (a power of two, so exact); itself when it is 1."""
    if scale == 1:
        return sub
    return sub * sub.dtype.type(scale)


def column_magnitudes(sub):
    """Per column, the largest magnitude in a float sub-block (``inf`` where one is infinite)."""
    xp = backend.namespace(sub)
    return xp.maximum(sub.max(axis=0), -sub.min(axis=0))
