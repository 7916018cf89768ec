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
    that values beyond float32's range come into it), anything else after;
    either way the product is exact. ``scale`` is float64 (it is converted
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
    return xp.astype(x, dt, copy=False) * xp.astype(scale, dt, copy=False)


def narrows(source, dtype) -> bool:
    """Whether converting ``source`` data to ``dtype`` loses range (float64 to float32)."""
    source, dtype = backend.numpy_dtype(source), backend.numpy_dtype(dtype)
    return source.kind == "f" and dtype.kind == "f" and source.itemsize > dtype.itemsize


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


def column_magnitudes(sub):
    """Per column, the largest magnitude in a float sub-block (``inf`` where one is infinite)."""
    xp = backend.api(sub)
    return xp.maximum(xp.max(sub, axis=0), -xp.min(sub, axis=0))


def measured_magnitudes(sub, blocks, axis: int, start: int, stop: int, narrowing: bool, missing):
    """:func:`column_magnitudes` of a sub-block, in float64, true to the source data.

    ``narrowing`` (float64 data converted to float32, unscaled): a value
    beyond float32's range became ``inf`` or ``0`` in the conversion; such
    columns (but not those ``missing`` says are missing at every row of the
    sub-block) are measured again in the source blocks, so that only values
    infinite in the data read as infinite, and data below float32's range
    as what they are.
    """
    xp = backend.api(sub)
    mag = xp.astype(column_magnitudes(sub), xp.float64)
    if not narrowing:
        return mag
    tiny = float(np.finfo(backend.numpy_dtype(sub.dtype)).tiny)
    suspect = ~(mag < np.inf) | (mag < tiny)
    if missing is not None:
        suspect &= missing < sub.shape[0]
    if not backend.to_scalar(xp.any(suspect)):  # one value to the host
        return mag
    # rare (values beyond float32's range): every column measured again in the source
    if axis == 0:  # blocks side by side: each holds some of the columns
        source = xp.concat([_finite_magnitudes(b[start:stop, :]) for b in blocks])
    else:  # blocks stacked: each holds some rows of every column
        parts = [_finite_magnitudes(b[:, start:stop]) for b in blocks]
        source = parts[0]
        for part in parts[1:]:
            source = xp.maximum(source, part)
    return xp.where(suspect, source, mag)


def _finite_magnitudes(x):
    """Per column, the largest magnitude of ``x`` in float64, NaN (missing) left out."""
    xp = backend.api(x)
    x = xp.astype(x, xp.float64, copy=False)
    x = xp.where(xp.isnan(x), 0.0, x)
    return xp.maximum(xp.max(x, axis=0), -xp.min(x, axis=0))
