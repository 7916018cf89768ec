"""One field as the (samples x features) matrix of a matrix-free method, never copied.

:func:`prepare_field` reads a field once for its feature statistics (NaN
count, infinite values, mean, standard deviation) and returns a
:class:`Field` whose products with small matrices (:meth:`Field.times`,
:meth:`Field.t_times`) apply centering and weights as rank-one and diagonal
corrections: the data are never centered, weighted or filled in memory.
:func:`cross_products` gives both products of two fields' cross matrix
``Bl^T Br`` with one read of each field (a block of samples of both at a
time). Each field's ``B`` is its data's times a power of two (exact) that
brings it near 1, so that data of any magnitude neither overflow nor
underflow in the products: :meth:`Field.unscaled` takes results back to the
data's units. A constant feature (a standard deviation at rounding level, the
rule of ``docs/input-rules.md``) has a standard deviation of 0: weight 0 with
``standardize``, NaN correlations. Features that are NaN at every sample
(land in an ocean field) are left out and come back as NaN; a NaN at some
samples only is the core's
:class:`~xsvd.MissingValueError`, an infinite value its
:class:`~xsvd.InfiniteValueError`, both naming the features
(:mod:`xsvd.core.missing`). With ``missing="mean"`` a missing value stands for
its feature's mean over its present values, replaced in the read kernels a
sub-block at a time (:func:`_filled`), never in a filled copy of the data.

Every backend runs the same code through the array-API namespace of the data
(:func:`xsvd.core.backend.api`): NumPy, Dask (each product reads the data
once and returns a computed array of the chunks' type) and device arrays
(CuPy; array-api-strict's second device in the tests). The products and
their small results (samples x l, features x l) live where the data live;
the small matrices the solver sends and receives cross between host and
device through :func:`xsvd.core.backend.transfer` (counted), the data never.
Used by :func:`xsvd.mca` and :func:`xsvd.extended_eof`, which also take
their compressed options here (:func:`operator_options`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core import backend
from ..core.common import Decomposition
from ..core.missing import (
    MissingRule,
    check_infinite,
    check_nan_counts,
    missing_rule,
)
from ..core.options import CompressedOptions, check_flag, split_options
from ..core.randomized.executors import Eager, Stepwise
from ..core.randomized.magnitude import power_of_two_exponent, times_power_of_two
from ..core.randomized.state import Summable
from ..core.randomized.stripe import fill_missing, stripe_sub, sub_blocks
from ..labeled import units as _units
from ..labeled.api import Reading, labeled_matrix
from ..labeled.layout import Layout
from ..labeled.preprocess import (
    constant_tolerance,
    feature_moments,
)

__all__ = [
    "covariance_units",
    "Field",
    "prepare_field",
    "cross_products",
    "operator_options",
]

#: Columns per block when a field in memory is worked on a block at a time (~32 MiB of float64).
BLOCK_VALUES = 1 << 22
#: Values per block of features of a Dask field read into memory whole (~64 MiB of float64):
#: the sums over blocks of features (the Gram matrix over the samples) hold one such block.
LAZY_BLOCK_VALUES = 1 << 21
#: Largest magnitudes of the data (exponents of 2) multiplied as they are; beyond, a copy
#: times a power of two is (float32: about 1e-30 to 1e30).
DATA_RANGE = {np.dtype(np.float32): (-100, 100), np.dtype(np.float64): (-1000, 1000)}
#: Values of a field per sub-block that the kernels multiply (~32 MiB of float64; measured
#: on 2 cores, 2 x 3,000 x 16,200: 4 MiB sub-blocks took 1.3x as long, 0.5 MiB 2.4x).
ROW_BLOCK_VALUES = 1 << 22
#: Per-stripe partial sums added per task over Dask stripes (few alive at once).
SPLIT_EVERY = 2


@dataclass(frozen=True)
class OnData:
    """A field's feature vectors in the memory of its data (the device, for device data);
    ``fill``: the means that missing values stand for (``missing="mean"``; also without
    centering), None where no feature is partly missing (nothing is replaced)."""

    mean: Any
    scale: Any
    std: Any
    kept: Any
    fill: Any = None


@dataclass(frozen=True)
class Field:
    """A field's matrix ``X`` (samples x kept features) and ``B = (X - 1 mu^T) diag(d)``.

    ``kept``: which features of the layout are in ``data`` (host). ``on_data``
    holds, in the memory of the data, ``mean`` (``mu``, zeros without
    centering), ``scale`` (the diagonal ``d``: weights, over the standard
    deviations with ``standardize``, times ``2**exponent``), ``std`` (the
    features' standard deviations, ``ddof=0``, for correlations; 0 for a
    constant feature, by the rule of
    :func:`xsvd.labeled.preprocess.standardized_weights`) and ``kept``.
    ``exponent``: the power of two that brings the largest weighted column to
    ``[0.5, 1)`` (data of any magnitude: the products, and the squares of two
    fields' products, neither overflow nor underflow), so that ``B`` here is
    ``2**exponent`` times the data's; :meth:`unscaled` takes results back.
    ``rule``: the :class:`~xsvd.core.missing.MissingRule` that says which values
    ``on_data.fill`` replaces (``missing="mean"``), else None; ``partial`` (host): which
    kept features are missing at some samples (the only ones looked at). ``X`` is then
    the data with each missing value replaced by its feature's mean, in the read kernels.
    """

    layout: Layout
    data: Any
    kept: np.ndarray
    dtype: Any
    on_data: OnData
    units: Any = None
    exponent: int = 0
    squares: tuple = (0.0, 0.0)
    rule: MissingRule | None = None
    partial: np.ndarray | None = None

    @property
    def filling(self):
        """``(rule, fill, partial)`` for the kernels where values are replaced, else None."""
        return None if self.rule is None else (self.rule, self.on_data.fill, self.partial)

    def mean_component(self) -> Decomposition:
        """``1 mu^T D`` as a component of the uncentered ``X D`` (``squares``: per sample, its
        and ``X D``'s sums of squares): its ``mean_share()`` is the means' share, exactly."""
        m = self.shape[0]
        means, total = self.squares
        U, S = np.full((m, 1), m**-0.5), np.array([(m * means) ** 0.5])
        return Decomposition(U, S, None, None, m * total, None, "exact", {})

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.data.shape)

    @property
    def xp(self):
        """The array-API namespace of the data (of its chunks, for Dask)."""
        return backend.api(self.on_data.mean)

    def here(self, x):
        """``x`` (a small array, host or already here) in the memory of the data."""
        like = self.on_data.mean
        if isinstance(like, np.ndarray):
            return backend.to_numpy(x)  # counted where x leaves a device
        if backend.is_cupy(x) and backend.is_cupy(like):
            return x
        return backend.transfer(x, like)

    def unscaled(self, x, power: int = 1):
        """``x`` (of ``power`` factors of ``B``) in the data's units: times
        ``2**(-power * exponent)``, exact."""
        return times_power_of_two(x, -power * self.exponent)

    def zeros(self, shape):
        """float64 zeros in the memory of the data."""
        xp = self.xp
        return xp.zeros(shape, dtype=xp.float64, device=backend.device(self.on_data.mean))

    def times(self, W):
        """``B W`` (samples x l), one read: ``X (d W) - 1 (mu^T d W)``."""
        v = self.on_data
        dW = _float64(self.here(W)) * v.scale[:, None]
        return self.read(dW) - v.mean @ dW

    def t_times(self, T, *, weighted: bool = True):
        """``B^T T`` (kept features x l), one read: ``d (X^T T - mu 1^T T)``.

        ``weighted=False``: ``(X - 1 mu^T)^T T``, without ``d``.
        """
        v = self.on_data
        T = _float64(self.here(T))
        out = self.read(T, transpose=True)
        out -= v.mean[:, None] * self.xp.sum(T, axis=0)[None, :]
        return out * v.scale[:, None] if weighted else out

    def formed(self, cols=slice(None)):
        """``B[:, cols]`` in memory (float64, where the data are), one read."""
        v, filling = self.on_data, self.filling
        filling = None if filling is None else (filling[0], *(v[cols] for v in filling[1:]))
        args = (None, 0, False, np.dtype(np.float64), v.mean[cols], v.scale[cols], 1, filling)
        return _read(_executor(self.data[:, cols], 0), _product, *args, summed=False)

    def read(self, M, *, transpose: bool = False, power: int = 0):
        """``X M`` (``transpose``: ``X^T M``) in float64, one read through the core's executor
        and stripes (:func:`_product`; ``M`` in the data's precision first); ``power`` 1 or 2:
        of ``B`` or ``B**2`` (float64) instead of ``X``."""
        ex, v = _executor(self.data), self.on_data
        dtype = np.dtype(np.float64 if power else self.dtype)
        M = None if M is None else backend.astype(M, dtype, copy=False)
        args = (M, ex.axis, transpose, dtype, v.mean, v.scale, power, self.filling)
        return _read(ex, _product, *args, summed=M is not None and (ex.axis == 0) == transpose)

    def blocks(self):
        """``B`` a block of columns (every sample, ``BLOCK_VALUES`` values, ``LAZY_BLOCK_VALUES``
        for Dask) at a time, float64, a read each (:meth:`formed`; a Dask block's stripes are
        joined after the read: two blocks for a moment): let go of each before the next."""
        m, n = self.shape
        step = max(1, (LAZY_BLOCK_VALUES if backend.is_dask(self.data) else BLOCK_VALUES) // m)
        for start in range(0, n, step):
            block = self.formed(slice(start, min(n, start + step)))
            yield block
            del block  # before the next is read

    def full(self, values, fill=np.nan):
        """Kept-feature rows (kept x k) back on every feature of the layout, ``fill`` elsewhere
        (in the memory of the data)."""
        xp = self.xp
        values = _float64(self.here(values))
        out = xp.full(
            (self.kept.size, *values.shape[1:]),
            fill,
            dtype=xp.float64,
            device=backend.device(self.on_data.mean),
        )
        out[self.on_data.kept] = values
        return out

    def correlations(self, scores):
        """Correlation of every kept feature with every column of ``scores`` (one read)."""
        xp = self.xp
        s = _float64(self.here(scores))
        s = s - xp.mean(s, axis=0)
        top = xp.max(xp.abs(s), axis=0)
        s = s / xp.where(top > 0, top, 1.0)[None, :]  # near 1: no overflow at any magnitude
        cov = self.t_times(s, weighted=False)
        spread = self.on_data.std * float(np.sqrt(self.shape[0]))
        norm = xp.sqrt(xp.sum(s**2, axis=0))[None, :] * spread[:, None]
        return xp.where(norm > 0, cov / xp.where(norm > 0, norm, 1.0), np.nan)


def _float64(x):
    return backend.astype(x, np.float64, copy=False)


def _by_features(a) -> bool:
    """Dask data in one chunk along the samples and several along the features: read by
    stripes of features (a stripe of samples would be all of it)."""
    return backend.is_dask(a) and a.numblocks[0] == 1 < a.numblocks[1]


def _executor(a, axis=None):
    """The core's executor over ``a``: at once in memory; for Dask, one ``dask.compute`` per
    read, by stripes of samples, or (by default, where ``a`` is in one chunk along the
    samples and in several along the features) of features."""
    if not backend.is_dask(a):
        return Eager(a, 0)
    if axis is None:
        axis = 1 if _by_features(a) else 0
    return Stepwise(a, axis, SPLIT_EVERY)


def _read(ex, kernel, *args, summed: bool, items=None):
    """``kernel(stripe, offset, *args)`` on every stripe of the executor ``ex`` (or on
    ``items``), one read: the sum of the results (``summed``), else the results joined
    along their first dimension, computed."""
    stripes = ex.stripes() if items is None else items
    parts = ex.map(kernel, stripes, *args, per_stripe=(ex.offsets,))
    if summed:
        (total,) = ex.end_pass((ex.sum(parts),))
        return total
    (parts,) = ex.end_pass((list(parts),))
    return parts[0] if len(parts) == 1 else backend.api(parts[0]).concat(parts, axis=0)


def _filled(x, filling, cols, spare: dict):
    """A float sub-block (features: columns ``cols`` of the field), its missing values
    replaced by their features' means (``filling``: ``(rule, fill, partial)``; None: ``x``),
    never in the data's memory: on NumPy a copy into ``spare``'s buffer (one per kernel
    call: a fresh 32 MiB copy per sub-block costs more in page faults than its product),
    elsewhere one ``where`` (:func:`~xsvd.core.randomized.stripe.fill_missing`)."""
    if filling is None or not filling[2][cols].any():
        return x
    rule, fill, _ = filling
    fill = backend.astype(fill[cols], backend.numpy_dtype(x.dtype), copy=False)
    if not isinstance(x, np.ndarray):
        return fill_missing(backend.api(x), x, rule, fill, count=False)[0]
    missing = rule.mask(np, x)
    if not missing.any():
        return x
    flat = spare.get("buffer")
    if flat is None or flat.size < x.size or flat.dtype != x.dtype:
        flat = spare["buffer"] = np.empty(x.size, dtype=x.dtype)
    order = "F" if abs(x.strides[0]) < abs(x.strides[1]) else "C"  # as x's: a fast copy
    out = flat[: x.size].reshape(x.shape, order=order)
    np.copyto(out, x)
    np.copyto(out, fill, where=missing)
    return out


def _product(
    blocks,
    offset,
    M,
    axis=0,
    transpose=False,
    dtype=None,
    mean=None,
    scale=None,
    power=0,
    filling=None,
):
    """A stripe's share of :meth:`Field.read`, a sub-block at a time (the core's
    :func:`~xsvd.core.randomized.stripe.stripe_sub`: converted to ``dtype`` only there,
    then its missing values replaced where ``filling`` says, :func:`_filled`): part of the
    sum where the product runs over the stripe's side, else its rows."""
    summed = M is not None and (axis == 0) == transpose
    other = sum(b.shape[1 - axis] for b in blocks)
    total, pieces = None, []
    spare = {}
    for start, stop in sub_blocks(blocks[0].shape[axis], other, ROW_BLOCK_VALUES):
        x = stripe_sub(blocks, axis, start, stop, dtype)
        cols = slice(None) if axis == 0 else slice(offset + start, offset + stop)
        x = _filled(x, filling, cols, spare if M is not None or power else {})  # not kept
        if power:
            x = x - mean[cols]  # a new array: never the data's memory
            x *= scale[cols]
            x = x * x if power == 2 else x
        x = x.T if transpose else x
        if M is not None:
            x = _float64(x @ (M[offset + start : offset + stop, :] if summed else M))
        if summed:
            total = x if total is None else total + x
        else:
            pieces.append(x)
    return total if summed else backend.api(pieces[0]).concat(pieces, axis=0)


@dataclass
class _Cross(Summable):
    """A stripe of samples' share of :func:`cross_products` (before the weights)."""

    left: Any
    right: Any


def _cross(blocks, offset, split, dW, cW, dT, cT, dtypes, means, fillings=(None, None)):
    """A stripe of samples of both fields (the left's ``split`` blocks, then the right's):
    ``((Xl - 1 mul^T)^T Yr, (Xr - 1 mur^T)^T Yl)``, ``Yr = Xr dW - 1 cW^T``, ``Yl = Xl dT -
    1 cT^T``, a sub-block of both at a time (each read once for both products; missing
    values replaced by each field's ``fillings``, :func:`_filled`)."""
    sides = blocks[:split], blocks[split:]
    width = max(sum(b.shape[1] for b in side) for side in sides)
    total, spares = None, ({}, {})  # a buffer for each side's filled sub-blocks
    for start, stop in sub_blocks(blocks[0].shape[0], width, ROW_BLOCK_VALUES):
        x = [
            _filled(stripe_sub(side, 0, start, stop, t), filling, slice(None), spare)
            for side, t, filling, spare in zip(sides, dtypes, fillings, spares, strict=True)
        ]
        y = _float64(x[1] @ dW) - cW, _float64(x[0] @ dT) - cT  # Yr, Yl
        part = _Cross(
            *(
                _float64(x[i].T @ backend.astype(y[i], dtypes[i], copy=False))
                - means[i][:, None] * backend.api(y[i]).sum(y[i], axis=0)[None, :]
                for i in (0, 1)
            )
        )
        total = part if total is None else total + part
    return total


def cross_products(fl: Field, fr: Field, W, T):
    """``(Bl^T (Br W), Br^T (Bl T))`` in float64, reading each field once.

    The fields share the samples: per block of samples ``i``, ``Br_i W`` and
    ``Bl_i T`` are formed and at once multiplied back, ``Bl_i^T (Br_i W)`` and
    ``Br_i^T (Bl_i T)``, so each block of each field is read once for both
    products: the core's executor (:mod:`xsvd.core.randomized.executors`) maps
    :func:`_cross` over stripes of samples of both fields side by side (Dask:
    ``dask.array.concatenate``, one ``dask.compute``; chunks along the samples
    keep it streaming, fields in one chunk along the samples are held during
    the read), a sub-block of ``ROW_BLOCK_VALUES`` values per field at a time.
    Centering and weights are the rank-one and diagonal corrections of
    :meth:`Field.times` and :meth:`Field.t_times`. ``W`` (right features x a)
    and ``T`` (left features x b) may have no columns. The products are in the
    memory of the data (``W`` and ``T`` are moved there). Where both fields are Dask
    arrays in one chunk along the samples and several along the features (a stripe of
    samples would be all of both), the products are read by stripes of features instead:
    ``Br W`` and ``Bl T`` in one read of each field, then ``Bl^T (Br W)`` and ``Br^T (Bl
    T)`` in a second (:meth:`Field.times`, :meth:`Field.t_times`), a stripe held at a time.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> left = xr.DataArray(rng.standard_normal((30, 4)), dims=("time", "x"))
    >>> right = xr.DataArray(rng.standard_normal((30, 3)), dims=("time", "y"))
    >>> fl, fr = prepare_field(left, "time"), prepare_field(right, "time")
    >>> CW, CtT = cross_products(fl, fr, np.eye(3), np.eye(4))
    >>> CW, CtT = (fl.unscaled(fr.unscaled(C)) for C in (CW, CtT))  # the data's units
    >>> Bl, Br = left.values - left.values.mean(0), right.values - right.values.mean(0)
    >>> bool(np.allclose(CW, Bl.T @ Br) and np.allclose(CtT, Br.T @ Bl))
    True
    """
    if all(_by_features(f.data) for f in (fl, fr)):  # a stripe of samples is the whole field
        return fl.t_times(fr.times(W)), fr.t_times(fl.times(T))
    vl, vr = fl.on_data, fr.on_data
    dW = _float64(fr.here(W)) * vr.scale[:, None]
    dT = _float64(fl.here(T)) * vl.scale[:, None]
    cW, cT = vr.mean @ dW, vl.mean @ dT  # the rank-one parts of Br W and Bl T
    dtypes = np.dtype(fl.dtype), np.dtype(fr.dtype)
    dW, dT = (backend.astype(d, t, copy=False) for d, t in ((dW, dtypes[1]), (dT, dtypes[0])))
    if backend.is_dask(fl.data) or backend.is_dask(fr.data):
        import dask.array as da

        rows = next(f.data.chunks[0] for f in (fl, fr) if backend.is_dask(f.data))
        xl, xr_ = (
            f.data if backend.is_dask(f.data) else da.from_array(f.data, chunks=(rows, -1))
            for f in (fl, fr)
        )
        joined = da.concatenate([xl, xr_], axis=1)
        ex, items, split = Stepwise(joined, 0, SPLIT_EVERY), None, xl.numblocks[1]
    else:
        ex, items, split = Eager(fl.data, 0), [[fl.data, fr.data]], 1
    args = (split, dW, cW, dT, cT, dtypes, (vl.mean, vr.mean), (fl.filling, fr.filling))
    s = _read(ex, _cross, *args, summed=True, items=items)
    return s.left * vl.scale[:, None], s.right * vr.scale[:, None]


def check_same_memory(fields: dict[str, Field]) -> None:
    """Refuse fields whose data live in different memories (host and a device, or two
    devices): their products cannot be combined."""
    where = {
        name: (backend.api(f.on_data.mean), backend.device(f.on_data.mean))
        for name, f in fields.items()
    }
    if len(set(map(str, where.values()))) > 1:
        said = ", ".join(f"{name} on {dev!s}" for name, (_, dev) in where.items())
        raise ValueError(
            f"The fields live in different memories ({said}). Put both in one, e.g. "
            "`left.as_numpy()` and `right.as_numpy()` for the host."
        )


def prepare_field(
    obj: xr.DataArray,
    dim,
    weights=None,
    *,
    center: bool = True,
    standardize: bool = False,
    what: str = "data",
    reading: Reading | None = None,
) -> Field:
    """The :class:`Field` of ``obj``: one read for NaN counts, infinite values, means and
    standard deviations; ``what`` names the field in errors (e.g. ``"left field"``).
    Pint-quantified data (and weights) are taken as their magnitudes, their units kept
    in ``Field.units`` (:func:`xsvd.labeled.units.strip`), as every analysis does.

    ``reading`` (:class:`xsvd.labeled.api.Reading`): ``device=`` moves the data first;
    with ``missing="mean"`` ``standardize`` divides by the present values' standard
    deviation (as :func:`xsvd.svd`), correlations and sums of squares are the filled data's."""
    check_flag("center", center)
    check_flag("standardize", standardize)
    reading = Reading() if reading is None else reading
    kind = backend.numpy_dtype(obj.dtype)
    if not np.issubdtype(kind, np.number) or np.issubdtype(kind, np.complexfloating):
        raise TypeError(f"The {what} must be real numbers, got dtype {obj.dtype}.")
    # units off, device, matrix and weights as every entry point reads a DataArray
    layout, obj, a, w, units = labeled_matrix(obj, dim, weights, reading.device)
    if units is not None and standardize:  # standardized data have no units
        units = _units.Units(units.data, None, units.coords)
    rule = missing_rule(kind, reading.missing, reading.negative_missing)  # checks them
    if kind.kind != "f" and not backend.is_dask(a) and not backend.is_numpy(a):
        a = backend.astype(a, np.float64)  # a device's products take no integers
    nans, infinite, mean, amax, spread, m = _moments(a, rule if rule.fills else None)
    located = layout.feature_locator()

    def locate(idx) -> str:
        return f"{located(idx)} of the {what}"

    # the core's checks and advice, naming the features of this field
    check_infinite(infinite, locate=locate)
    if rule.fills:  # missing at every sample: left out (land); at some: the feature's mean
        kept = nans < a.shape[0]
        partial = bool((nans[kept] > 0).any())
    else:
        kept, partial = ~check_nan_counts(nans, a.shape[0], locate=locate), False
    if not kept.any():
        raise ValueError(f"The {what} are NaN everywhere: no feature to decompose.")
    amax, spread, m = amax[kept], spread[kept], m[kept]
    # the one rule of constant features (docs/input-rules.md): a standard deviation at
    # rounding level of the largest value is 0 (over the values present, as the main svd's)
    std = np.where(spread > constant_tolerance(kind, m), spread * amax, 0.0)
    scale = np.ones(int(kept.sum())) if w is None else w[kept]
    if standardize:
        with np.errstate(divide="ignore", over="ignore"):
            scale = np.where(std > 0, scale / np.where(std > 0, std, 1), 0.0)
    if partial:  # the filled data's deviations: the present values' over every sample
        std = std * np.sqrt(m / a.shape[0])
    dtype = np.float32 if kind == np.float32 else np.float64
    idx = np.flatnonzero(kept)
    if kept.all():
        data = a
    elif backend.is_dask(a) or backend.is_numpy(a):
        data = a[:, idx]
    else:
        data = backend.api(a).take(a, backend.transfer(idx, a), axis=1)
    mean = mean[kept]
    # data at the ends of their dtype's range (float32 beyond about 1e+-30): one copy times
    # a power of two (exact), so that no product of the data overflows or underflows
    shift = rest = power_of_two_exponent(amax.max(), *DATA_RANGE[np.dtype(dtype)])
    while rest:  # in steps that a float32 holds exactly
        step = max(-100, min(100, rest))
        data, rest = data * 2.0**step, rest - step
    mean, amax, std = (np.ldexp(v, shift) for v in (mean, amax, std))
    with np.errstate(over="ignore"):  # the largest weighted column, brought to [0.5, 1)
        top = float(np.max(amax * np.abs(scale)))
    exponent = -int(np.frexp(top)[1]) if 0 < top < np.inf else 0  # exact: a power of two
    scale = times_power_of_two(scale, exponent)
    squares = tuple(float(np.sum(scale**2 * v)) for v in (mean**2, mean**2 + std**2))
    fill = mean if partial else None  # nothing partly missing: nothing to replace
    mean = mean if center else np.zeros_like(mean)
    on_data = OnData(
        *(None if v is None else backend.transfer(v, a) for v in (mean, scale, std, kept, fill))
    )
    args = (rule, (nans[kept] > 0)) if partial else (None, None)
    return Field(layout, data, kept, dtype, on_data, units, exponent + shift, squares, *args)


def covariance_units(fl: Field, fr: Field) -> dict | None:
    """The units of the cross-covariance of two fields (of MCA's ``S``): the product of
    the fields' ``S`` units (a plain field counts as dimensionless), as saved in a record."""
    singular = [f.units.singular for f in (fl, fr) if f.units is not None]
    singular = [u for u in singular if u is not None]
    if not singular:
        return None
    product = singular[0] if len(singular) == 1 else singular[0] * singular[1]
    return _units.describe(_units.Units(None, product))


def _moments(a, rule: MissingRule | None = None):
    """Per feature, on the host: missing count (NaN, or as ``rule`` says), whether any
    value is infinite, the mean, the largest magnitude ``max|x|`` and the standard
    deviation (``ddof=0``) over it, of the present values, and their number:
    :func:`~xsvd.labeled.preprocess.feature_moments`, the one read of moments that
    ``standardize`` takes for a single field."""
    if rule is None:
        rule = missing_rule(a.dtype, "mean", negative_missing=False)  # NaN only
    stats = feature_moments(a, rule)
    n, amax = stats["n"], stats["amax"]
    e = np.frexp(amax)[1]  # the moments are in units of 2**e
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spread = np.sqrt(stats["m2"] / np.maximum(n, 1)) / np.ldexp(amax, -e)
        mean = np.where(n > 0, np.ldexp(stats["mean"], e), np.nan)
    spread = np.where(amax > 0, spread, 0.0)
    return a.shape[0] - n, np.isinf(amax), mean, amax, spread, n


def operator_options(options: dict, where: str, method: str) -> tuple[CompressedOptions, Any]:
    """The compressed options of an analysis that runs on the operator solvers
    (:mod:`xsvd.core.randomized.operator`), declared once as :func:`xsvd.compressed`'s
    (:class:`~xsvd.core.options.CompressedOptions`, the same defaults), checked, and how
    it reads its data (:class:`xsvd.labeled.api.Reading`: ``missing``,
    ``negative_missing``, ``device``, as :func:`xsvd.svd`'s): ``(given, reading)``.

    Those solvers always run block Krylov in the data's precision: ``krylov=False`` and
    ``dtype`` are refused, as is any of them with ``method="exact"``.
    """
    given, reading = split_options(options, (CompressedOptions, Reading), where)
    if method == "exact" and given.given():
        names = given.given()
        verb, pron = ("applies", "it") if len(names) == 1 else ("apply", "them")
        raise ValueError(
            f"{', '.join(names)} only {verb} to the compressed solver, but {where}() was "
            f"asked for method='exact'. Drop {pron} or pass `method='compressed'`."
        )
    if given.krylov is False:
        raise ValueError(
            f"{where}() always takes its components from every pass (block Krylov): "
            "krylov=False (subspace iteration) is not available there. Drop krylov=False."
        )
    if given.dtype is not None:
        raise ValueError(
            f"{where}() computes its products in the data's precision (float32 data in "
            f"float32, others in float64), so dtype={given.dtype!r} is not available there. "
            "Convert the data instead, e.g. `da.astype('float32')`."
        )
    return given, reading
