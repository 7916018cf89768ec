"""Before the solve: weights aligned to the data, standardization, the data on their device.

- :func:`weights_vector`: feature weights (a DataArray over some of the
  feature dims) aligned by label, checked, broadcast and flattened to the
  vector the core multiplies the columns by;
- :func:`standardized_weights` and :func:`standardized_units`: what
  ``standardize=True`` folds into the weights and the units of ``S``;
- :func:`move_dataarray`: ``device=`` ("gpu" or "cpu").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from ..core import backend
from ..core.missing import missing_rule
from . import units as _units
from .dims import latitude_rank
from .layout import FeatureLocator, label_gap

if TYPE_CHECKING:
    from .layout import Layout

__all__ = [
    "weights_vector",
    "standardized_weights",
    "standardized_units",
    "move_dataarray",
    "feature_moments",
]


def weights_vector(layout: Layout, weights) -> np.ndarray | None:
    """Flatten feature weights (broadcast over the feature dims) to a vector."""
    if weights is None:
        return None
    if not isinstance(weights, xr.DataArray):
        if np.ndim(weights) == 0:
            weights = xr.DataArray(weights)
        else:
            raise TypeError(
                "weights must be an xarray.DataArray over (some of) the feature "
                f"dimensions {layout.feature_dims}, e.g. "
                "`xsvd.coslat_weights(da)`; got "
                f"{type(weights).__name__}."
            )
    weights = _over_features(
        layout,
        weights,
        "weights have",
        ". Weights multiply features; they cannot vary along the sample dimension(s).",
        ".",
    )
    _check_weight_values(layout, weights)
    return np.asarray(_broadcast(layout, weights).values, dtype=np.float64).reshape(-1)


def _over_features(layout: Layout, values: xr.DataArray, said: str, dims_why: str, size_why: str):
    """Per-feature ``values`` (weights, center values) checked to lie along feature dims
    only, with the data's sizes, aligned by label (:func:`_aligned`), and read (Dask-backed
    values, once); ``said`` starts the messages ("weights have"), the ``_why`` end them."""
    what = said.split()[0]
    bad = [d for d in values.dims if d not in layout.feature_dims]
    if bad:
        raise ValueError(
            f"{said} dimension(s) {bad} that are not feature dimensions "
            f"{layout.feature_dims}{dims_why}"
        )
    values = _aligned(layout, values, what=what)
    for d in values.dims:
        if values.sizes[d] != layout.sizes[d]:
            raise ValueError(
                f"{said} {values.sizes[d]} values along {d!r} but the data "
                f"have {layout.sizes[d]}{size_why}"
            )
    return values.compute()


def _broadcast(layout: Layout, values: xr.DataArray) -> xr.Variable:
    """Per-feature ``values`` over every feature dim, in the layout's order."""
    sizes = dict(zip(layout.feature_dims, layout.feature_shape, strict=True))
    return values.variable.set_dims(sizes).transpose(*layout.feature_dims)


def _check_weight_values(layout: Layout, weights: xr.DataArray) -> None:
    """Weights must be finite and >= 0: an error naming where they are not.

    The places are named on the weights' own dims (``lat=100.0``), as given.
    """
    values = np.asarray(weights.values)
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"weights must be real numbers, got values of dtype {values.dtype}. Give one "
            "finite weight >= 0 per feature (0 leaves a feature out)."
        )
    values = values.astype(np.float64)
    for bad, what in ((~np.isfinite(values), "NaN or infinite"), (values < 0, "negative")):
        if not bad.any():
            continue
        dims = tuple(weights.dims)
        if dims:
            coords = {d: _labels(d, weights, layout) for d in dims}
            coords = {d: v for d, v in coords.items() if v is not None}
            where = FeatureLocator(dims, values.shape, coords)(np.flatnonzero(bad))
            along = repr(dims[0]) if len(dims) == 1 else "(" + ", ".join(map(repr, dims)) + ")"
            place = f" at {int(bad.sum())} of {values.size} {along} values: {where}"
        else:
            place = f" ({values[()]})"
        message = (
            f"weights are {what}{place}. Weights must be finite and >= 0 (0 leaves a feature out)."
        )
        latitude = [d for d in weights.dims if _is_latitude(d, weights, layout)]
        if latitude and _pole_rounding(weights, layout, bad, latitude[0]):
            message += (
                f" They are at {latitude[0]!r} = ±90 only, where cos rounds below 0 in float32 "
                "(np.cos(np.deg2rad(np.float32(90))) is -4.4e-08, its square root NaN): "
                "the weight there is 0. Clip before the square root, e.g. "
                "`np.sqrt(np.cos(np.deg2rad(lat)).clip(min=0))` (or `w.clip(min=0)` for cos "
                "itself), or use `xsvd.coslat_weights(da)`, which does."
            )
        elif latitude and (what == "negative" or weights.ndim == 1):  # or sqrt(cos(degrees))
            message += (
                f" Did you pass latitudes in degrees to np.cos (which takes radians)? Use "
                f"`xsvd.coslat_weights(da)`, sqrt(cos(latitude)) from {latitude[0]!r} in "
                "degrees."
            )
        raise ValueError(message)


def _pole_rounding(weights: xr.DataArray, layout: Layout, bad, lat) -> bool:
    """Whether the ``bad`` weights are all at latitude ±90 and NaN or within 1e-6 of 0
    (relative to the largest weight): float32's cos(90°), -4.4e-8, or its square root."""
    labels = _labels(lat, weights, layout)
    if labels is None or labels.dtype.kind not in "iuf":
        return False
    shape = [-1 if d == lat else 1 for d in weights.dims]
    poles = np.broadcast_to((np.abs(labels) == 90).reshape(shape), bad.shape)
    values = np.asarray(weights.values, dtype=np.float64)
    top = np.abs(values[np.isfinite(values)]).max(initial=0.0)
    return bool(
        (poles | ~bad).all() and (np.isnan(values) | (abs(values) <= 1e-6 * top))[bad].all()
    )


def _labels(d, weights: xr.DataArray, layout: Layout) -> np.ndarray | None:
    """The labels along the weights' dim ``d``: theirs, else the data's (same size), or None."""
    for coords in (weights.coords, layout.coords):
        if d in coords and coords[d].dims == (d,):
            return np.asarray(coords[d].values)
    return None


def _is_latitude(d, weights: xr.DataArray, layout: Layout) -> bool:
    """Whether the dim ``d`` of the weights holds latitudes (by CF attributes or name)."""
    if d in weights.coords:
        coord = weights[d]
    elif d in layout.coords:
        coord = xr.DataArray(layout.coords[d], name=d)
    else:
        coord = xr.DataArray(np.empty(0), dims=(d,), name=d)
    return bool(latitude_rank(coord))


def center_vector(layout: Layout, center):
    """``center=``: True or False as they are; values to subtract (a DataArray over the
    feature dims, broadcast over those it lacks, matched by label as weights are) as a
    float64 vector over the features, checked (finite numbers)."""
    if isinstance(center, bool | np.bool_):
        return center
    if isinstance(center, Mapping):  # a Dataset or a dict: per variable, for Dataset.svd
        first = next(iter(center), "name")
        raise TypeError(
            "center values of one DataArray are one DataArray over its feature dimensions "
            f"{layout.feature_dims}; per-variable values (a Dataset or a dict) are for "
            f"Dataset.svd. Pass the entry of this variable, e.g. `center=center[{first!r}]`."
        )
    if not hasattr(center, "shape"):
        return center  # refused by the options
    if not isinstance(center, xr.DataArray):
        raise TypeError(
            "center values must be an xarray.DataArray over (some of) the feature dimensions "
            f"{layout.feature_dims}, so that they are matched to the features by name and "
            f"label; got {type(center).__name__}. Wrap them, e.g. "
            f"`xr.DataArray(values, dims={tuple(layout.feature_dims)!r}, coords=...)`, or "
            "pass center=True to subtract the data's own means."
        )
    center = _over_features(
        layout,
        center,
        "center has",
        ": it holds one value per feature, subtracted from every sample. Select or reduce "
        "those dimensions first (e.g. `.mean(...)`).",
        ": give one value per feature.",
    )
    if np.asarray(center.values).dtype.kind not in "biuf":
        raise TypeError(
            f"center must hold real numbers, got values of dtype {center.dtype}. Give one "
            "finite number per feature, e.g. `center=2 * w.allele_frequency`."
        )
    values = _broadcast(layout, center)
    vector = np.asarray(backend.to_numpy(values.data), dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(vector)
    if bad.any():
        where = layout.feature_locator()(np.flatnonzero(bad))
        raise ValueError(
            f"center is NaN or infinite at {int(bad.sum())} of {vector.size} features: "
            f"{where}. Give a finite value for every feature (e.g. `center.fillna(0)` to "
            "leave those as they are), or pass center=True to subtract the data's own means."
        )
    return vector


def _aligned(layout: Layout, weights: xr.DataArray, what: str = "weights") -> xr.DataArray:
    """Weights aligned with the data by label along every dimension both index.

    As in any xarray operation: labels in another order are reordered, and
    weights with more labels than the data are subset. Labels of the data
    that the weights lack are an error naming the coordinate, never a
    silent match by position.
    """
    for d in weights.dims:
        if d not in weights.indexes or d not in layout.coords or layout.coords[d].dims != (d,):
            continue  # no labels on one side: by position, as xarray does
        wanted = pd.Index(np.asarray(layout.coords[d].values))
        have = weights.indexes[d]
        if have.equals(wanted):
            continue
        gap = label_gap(wanted, have)
        if gap is not None:
            lacking, shown = gap
            if what == "weights":
                raise ValueError(
                    f"The weights' coordinate {d!r} does not match the data's: the weights "
                    f"have no value for {len(lacking)} of the data's {len(wanted)} {d!r} "
                    f"labels (e.g. {shown}). Weights are matched to the data by label, as in "
                    f"any xarray operation. Give weights on the data's coordinate, e.g. "
                    f"`w.reindex({d}=da[{d!r}])`, or `w.assign_coords({d}=da[{d!r}])` if the "
                    "labels differ only by rounding."
                )
            raise ValueError(
                f"The {what} values' coordinate {d!r} does not match the data's: they have "
                f"no value for {len(lacking)} of the data's {len(wanted)} {d!r} labels "
                f"(e.g. {shown}). They are matched to the data by label, as in any xarray "
                f"operation. Give them on the data's coordinate, e.g. "
                f"`{what}.reindex({d}=da[{d!r}])`, or `{what}.assign_coords({d}=da[{d!r}])` "
                "if the labels differ only by rounding."
            )
        weights = weights.reindex({d: wanted})
    return weights


def standardized_weights(a, weights, *, missing: str = "error", negative_missing=None):
    """Weights that also divide each feature by its standard deviation (``ddof=0``).

    For ``standardize=True``: the standard deviation of each column of the
    (samples x features) matrix ``a`` over the samples where it is present
    (missing values as ``missing=`` defines them), as xeofs' ``standardize``.
    Dask data are read once here, before the decomposition. Returns a NumPy
    vector.

    A feature is constant, and gets weight 0 (as one missing at every
    sample does), when its standard deviation ``std`` is at rounding level::

        std <= max(4 * eps, n * eps64) * max|x|

    where ``max|x|`` is its largest absolute value, ``n`` the number of
    samples where it is present, ``eps`` the machine epsilon of the data's
    floating-point type (float64's for integer data: ``eps64``, 2.2e-16;
    float32's is 1.2e-7). ``4 * eps`` covers values that differ only by the
    rounding of their type (-1.8 stored as ``-1.7999999999999998`` in some
    cells), ``n * eps64`` the rounding of a mean over ``n`` values (in the
    solvers' centering). The deviations are summed in units of a power of two
    near ``max|x|``, from one of the feature's own values, so an exactly
    constant feature has a standard deviation of exactly 0, on NumPy and Dask
    alike, and features of any magnitude (1e-300 to 1e300) neither overflow
    nor underflow.
    """
    if backend.is_packed(a):
        raise ValueError(
            "standardize=True needs the values of every feature, and these data are packed "
            "genotypes. Scale genotypes with `xsvd.patterson_scaling` (PLINK 2's variance "
            "standardization) instead."
        )
    rule = missing_rule(a.dtype, missing, negative_missing)
    stats = feature_moments(a, rule)
    n, amax = stats["n"], stats["amax"]
    e = np.frexp(amax)[1]  # amax = f * 2**e with 0.5 <= f < 1; the stats are in units of 2**e
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = np.sqrt(stats["m2"] / np.maximum(n, 1))  # std / 2**e
        relative = root / np.ldexp(amax, -e)  # std / max|x|
        varies = np.isfinite(relative) & (relative > constant_tolerance(a.dtype, n))
        inv = np.where(varies, np.ldexp(1.0 / np.where(varies, root, 1.0), -e), 0.0)
    tiny = varies & ~np.isfinite(inv)
    if tiny.any():
        raise ValueError(
            f"standardize=True: {int(tiny.sum())} feature(s) have a standard deviation "
            f"(e.g. {float(np.ldexp(root[tiny][0], e[tiny][0])):.3g}) whose reciprocal, their "
            "weight, exceeds the largest float64. Scale the data up first (e.g. "
            "`da * 1e300`); the decomposition of standardized data does not change."
        )
    return inv if weights is None else np.asarray(weights, dtype=np.float64) * inv


def constant_tolerance(dtype, n) -> np.ndarray:
    """``max(4 * eps, n * eps64)``: a standard deviation at most this times ``max|x|`` is 0.

    ``eps`` is the machine epsilon of ``dtype`` (float64's for integers), ``n``
    the number of values present; see :func:`standardized_weights`.
    """
    dtype = backend.numpy_dtype(dtype)
    eps64 = np.finfo(np.float64).eps
    eps = np.finfo(dtype).eps if dtype.kind in "fc" else eps64
    return np.maximum(4 * eps, np.asarray(n, dtype=np.float64) * eps64)


#: Per-column moments: count, largest |x|, mean and sum of squared deviations
#: (those two in units of 2**e, e the exponent of the largest |x|).
_STATS = np.dtype([("n", "f8"), ("amax", "f8"), ("mean", "f8"), ("m2", "f8")])


def feature_moments(a, rule) -> np.ndarray:
    """The moments of every column of ``a`` over its present values (by ``rule``), in one
    read: a NumPy structured vector with fields ``n`` (count), ``amax`` (largest ``|x|``),
    ``mean`` and ``m2`` (sum of squared deviations), those two in units of ``2**e``, ``e``
    the exponent of ``amax`` (``np.frexp``), so data of any magnitude neither overflow nor
    underflow. NumPy, CuPy, Dask and other array-API arrays."""
    if backend.is_dask(a):
        import dask.array as da

        stats = da.reduction(
            a,
            partial(_stats_chunk, rule=rule),
            _stats_merge,
            combine=_stats_merge,
            axis=0,
            dtype=_STATS,
            concatenate=True,
            meta=np.empty((0,), _STATS),
        )
        (out,) = backend.compute(stats)
        return np.asarray(out)
    n = a.shape[1]
    step = max(1, (1 << 22) // max(a.shape[0], 1))  # columns per block: ~32 MiB of float64
    out = np.empty(n, _STATS)
    for j in range(0, n, step):
        out[j : j + step] = _stats_chunk(a[:, j : min(j + step, n)], rule)[0]
    return out


def _stats_chunk(x, rule, axis=None, keepdims=True):
    """Moments of each column of a block, shape (1, columns), deviations from one of its values.

    Summing deviations from a value of the column itself makes those of a
    constant column exactly 0; scaling by a power of two (exact) keeps the
    squares clear of overflow and underflow.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # infinite values: the solver says so
        return _moments(x, rule)


def _moments(x, rule):
    xp = backend.namespace(x)
    if xp is not np and not backend.is_cupy(x):
        return _array_moments(x, rule)
    x = xp.asarray(x, dtype=np.float64)
    absent = rule.mask(xp, x) if rule.active else xp.zeros(x.shape, dtype=bool)
    present = ~absent
    n = present.sum(axis=0)
    y = xp.abs(x)
    y[absent] = 0.0
    amax = y.max(axis=0)
    e = xp.frexp(amax)[1]
    if bool((e < -1000).any()):  # 2**-e would overflow: ldexp (slower) instead
        xp.ldexp(x, -e, out=y)
    else:
        xp.multiply(x, xp.ldexp(xp.ones(e.shape), -e), out=y)  # exact: a power of two
    first = xp.argmax(present, axis=0)  # the first present value of each column
    shift = xp.take_along_axis(y, first[None, :], axis=0)[0]
    y -= shift
    y[absent] = 0.0
    dm = y.sum(axis=0) / xp.maximum(n, 1)
    y -= dm
    y[absent] = 0.0
    y *= y
    m2 = y.sum(axis=0)
    shift = xp.where(n > 0, shift, 0.0)
    out = np.empty((1, x.shape[1]), _STATS)
    for field, value in (("n", n), ("amax", amax), ("mean", shift + dm), ("m2", m2)):
        out[field][0] = backend.to_numpy(value)
    return out


def _array_moments(x, rule):
    """:func:`_moments` with the standard's functions (another array-API library than NumPy
    and CuPy: no ``frexp``, ``ldexp`` or writes into place). The exponents of the largest
    magnitudes are found on the host (one vector per block, counted by ``backend.transfer``),
    and the scaling is the same product by powers of two."""
    xp = backend.api(x)
    x = backend.astype(x, np.float64, copy=False)
    absent = rule.mask(xp, x) if rule.active else xp.zeros(x.shape, dtype=xp.bool, device=x.device)
    present = ~absent
    n = xp.sum(xp.astype(present, xp.float64), axis=0)
    amax = xp.max(xp.where(absent, 0.0, xp.abs(x)), axis=0)
    e = np.frexp(backend.to_numpy(amax))[1]
    half = -e // 2  # 2**-e in two exact factors: neither overflows (e < -1000 too)
    y = x * backend.transfer(np.ldexp(1.0, half), x) * backend.transfer(np.ldexp(1.0, -e - half), x)
    first = xp.argmax(xp.astype(present, xp.int8), axis=0)  # the first present value
    shift = xp.take_along_axis(y, first[None, :], axis=0)[0, :]
    y = xp.where(absent, 0.0, y - shift)
    dm = xp.sum(y, axis=0) / xp.maximum(n, 1.0)
    y = xp.where(absent, 0.0, y - dm)
    m2 = xp.sum(y * y, axis=0)
    shift = xp.where(n > 0, shift, 0.0)
    moved = backend.to_numpy(xp.stack([n, amax, shift + dm, m2]))  # one move
    out = np.empty((1, x.shape[1]), _STATS)
    for field, value in zip(("n", "amax", "mean", "m2"), moved, strict=True):
        out[field][0] = value
    return out


def _stats_merge(stats, axis=None, keepdims=False):
    """Moments of the union of the rows of ``stats`` (Chan et al.'s pairwise update).

    Each row is first brought to the units of the largest ``amax``; the
    difference of two means from constant columns is exactly 0.
    """
    acc = stats[0].copy()
    for row in stats[1:]:
        amax = np.maximum(acc["amax"], row["amax"])
        e = np.frexp(amax)[1]
        ma, m2a = _in_units(acc, e)
        mb, m2b = _in_units(row, e)
        n = acc["n"] + row["n"]
        frac = np.where(n > 0, row["n"] / np.maximum(n, 1), 0.0)
        with np.errstate(invalid="ignore", over="ignore"):  # infinite values: NaN moments
            delta = mb - ma
            acc["m2"] = m2a + m2b + delta * delta * acc["n"] * frac
            acc["mean"] = ma + delta * frac
        acc["n"], acc["amax"] = n, amax
    return acc[None, :] if keepdims else acc


def _in_units(stats, e):
    """``stats``' mean and m2 in units of ``2**e`` (from those of their own ``amax``)."""
    shift = np.frexp(stats["amax"])[1] - e
    return np.ldexp(stats["mean"], shift), np.ldexp(stats["m2"], 2 * shift)


def standardized_units(units, obj: xr.DataArray):
    """The units of a standardized decomposition: ``S`` loses the data's units."""
    if units is None or units.singular is None:
        return units
    return replace(units, singular=units.singular / _units.data_delta(units, dict(obj.attrs)))


def move_dataarray(obj, device: str | None):
    """A DataArray with its data moved to ``device`` (None: unchanged).

    Plain data go through cupy-xarray's accessor (``.cupy.as_cupy()`` /
    ``.cupy.as_numpy()``, lazy for Dask); packed genotypes, which it does not
    know, are moved chunk by chunk as packed bytes; data of another array-API
    library's device (array-api-strict's in the tests) go to the host through
    :func:`xsvd.core.backend.move` with ``device="cpu"`` ("gpu" means CuPy).
    """
    if device is None:
        return obj
    if device not in ("gpu", "cpu"):
        raise ValueError(f"device must be 'gpu', 'cpu' or None, got {device!r}.")
    on_gpu = backend.namespace(obj.data) is not np
    if (device == "gpu") == on_gpu:
        return obj
    if device == "gpu":
        backend.require_cupy()
    if backend.is_packed(obj.data):
        return obj.copy(data=backend.move(obj.data, device))
    if device == "cpu" and not backend.is_cupy(backend.chunk_type(obj.data)):
        # another array-API library's device: its data to the host, through backend.transfer
        return obj.copy(data=backend.move(obj.data, device))
    try:
        import cupy_xarray  # noqa: F401  (registers DataArray.cupy)
    except ImportError as exc:
        raise ImportError(
            f"Moving data between CPU and GPU needs cupy-xarray: {backend.GPU_EXTRA_HINT}."
        ) from exc
    return obj.cupy.as_cupy() if device == "gpu" else obj.cupy.as_numpy()
