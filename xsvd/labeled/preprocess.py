"""Before the solve: weights aligned to the data, standardization, the data on their device.

- :func:`weights_vector`: feature weights (a DataArray over some of the
  feature dims) aligned by label, checked, broadcast and flattened to the
  vector the core multiplies the columns by;
- :func:`standardized_weights` and :func:`standardized_units`: what
  ``standardize=True`` folds into the weights and the units of ``S``;
- :func:`move_dataarray`: ``device=`` ("gpu" or "cpu").
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from ..core import backend
from ..core.missing import missing_rule
from . import units as _units
from .layout import label_gap

if TYPE_CHECKING:
    from .layout import Layout

__all__ = ["weights_vector", "standardized_weights", "standardized_units", "move_dataarray"]


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
    weights = layout.without_squeezed(weights, "weights")
    bad = [d for d in weights.dims if d not in layout.feature_dims]
    if bad:
        raise ValueError(
            f"weights have dimension(s) {bad} that are not feature dimensions "
            f"{layout.feature_dims}. Weights multiply features; they cannot vary "
            "along the sample dimension(s)."
        )
    weights = _aligned(layout, weights)
    for d in weights.dims:
        if weights.sizes[d] != layout.sizes[d]:
            raise ValueError(
                f"weights have {weights.sizes[d]} values along {d!r} but the data "
                f"have {layout.sizes[d]}."
            )
    sizes = dict(zip(layout.feature_dims, layout.feature_shape, strict=True))
    w = weights.variable.set_dims(sizes).transpose(*layout.feature_dims)
    vec = np.asarray(w.values, dtype=np.float64).reshape(-1)
    if not np.isfinite(vec).all():
        raise ValueError(
            "weights contain NaN or infinite values. Give every feature a finite "
            "weight (use 0 to ignore a feature)."
        )
    return vec


def _aligned(layout: Layout, weights: xr.DataArray) -> xr.DataArray:
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
            raise ValueError(
                f"The weights' coordinate {d!r} does not match the data's: the weights "
                f"have no value for {len(lacking)} of the data's {len(wanted)} {d!r} labels "
                f"(e.g. {shown}). Weights are matched to the data by label, as in any "
                f"xarray operation. Give weights on the data's coordinate, e.g. "
                f"`w.reindex({d}=da[{d!r}])`, or `w.assign_coords({d}=da[{d!r}])` if the "
                "labels differ only by rounding."
            )
        weights = weights.reindex({d: wanted})
    return weights


def standardized_weights(a, weights, *, missing: str = "error", negative_missing=None):
    """Weights that also divide each feature by its standard deviation (``ddof=0``).

    For ``standardize=True``: the standard deviation of each column of the
    (samples x features) matrix ``a`` over the samples where it is present
    (missing values as ``missing=`` defines them), as xeofs' ``standardize``.
    Features of standard deviation 0 or NaN (constant, or missing at every
    sample) get weight 0. Dask data are read once here, before the
    decomposition. Returns a NumPy vector.
    """
    if backend.is_packed(a):
        raise ValueError(
            "standardize=True needs the values of every feature, and these data are packed "
            "genotypes. Scale genotypes with `xsvd.patterson_scaling` (PLINK 2's variance "
            "standardization) instead."
        )
    rule = missing_rule(a.dtype, missing, negative_missing)
    std = _column_std(a, rule)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(np.isfinite(std) & (std > 0), 1.0 / std, 0.0)
    return inv if weights is None else np.asarray(weights, dtype=np.float64) * inv


def _column_std(a, rule) -> np.ndarray:
    """Per-column standard deviation over the present values, as a NumPy float64 vector."""
    if backend.is_dask(a):
        import dask.array as da

        x = a.map_blocks(_masked_block, rule, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, handled
            (std,) = backend.compute(da.nanstd(x, axis=0))
        return backend.to_numpy(std)
    xp = backend.namespace(a)
    m, n = a.shape
    step = max(1, (1 << 22) // max(m, 1))  # columns per block: ~32 MiB of float64
    out = np.empty(n)
    for j in range(0, n, step):
        block = _masked_block(a[:, j : j + step], rule)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, handled
            out[j : j + step] = backend.to_numpy(xp.nanstd(block, axis=0))
    return out


def _masked_block(x, rule):
    """Float64 values with the missing ones (NaN, or negative codes) as NaN."""
    xp = backend.namespace(x)
    x = xp.asarray(x, dtype=np.float64)
    if rule.active:
        x = xp.where(rule.mask(xp, x), np.nan, x)
    return x


def standardized_units(units, obj: xr.DataArray):
    """The units of a standardized decomposition: ``S`` loses the data's units."""
    if units is None or units.singular is None:
        return units
    return replace(units, singular=units.singular / _units.data_delta(units, dict(obj.attrs)))


def move_dataarray(obj, device: str | None):
    """A DataArray with its data moved to ``device`` (None: unchanged).

    Plain data go through cupy-xarray's accessor (``.cupy.as_cupy()`` /
    ``.cupy.as_numpy()``, lazy for Dask); packed genotypes, which it does not
    know, are moved chunk by chunk as packed bytes.
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
    try:
        import cupy_xarray  # noqa: F401  (registers DataArray.cupy)
    except ImportError as exc:
        raise ImportError(
            f"Moving data between CPU and GPU needs cupy-xarray: {backend.GPU_EXTRA_HINT}."
        ) from exc
    return obj.cupy.as_cupy() if device == "gpu" else obj.cupy.as_numpy()
