"""Which dimensions hold the samples: the default ``dim``, and advice when they look swapped.

- ``dim`` omitted: the first dimension is the sample dimension only when that
  is unambiguous (:func:`default_sample_dim`): 2-D data without a time-like
  dimension elsewhere, or a first dimension that is the only time-like one.
  Otherwise a ``ValueError`` lists the dims and says which ``dim=`` to pass.
- A NaN error gets :func:`nan_hint`'s advice when the sample and feature
  dimensions look swapped.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    from .layout import Layout

__all__ = [
    "SAMPLE_DIM_ATTR",
    "SAMPLE_NAMES",
    "VARIANT_NAMES",
    "default_sample_dim",
    "as_dims",
    "timelike",
    "cftime_calendar",
    "nan_hint",
    "latitude_rank",
    "LATITUDE_NAMES",
    "LATITUDE_UNITS",
]

#: Attribute naming the dimension that holds the samples, e.g. ``"samples"``.
#: Readers of genotype files (:func:`xsvd.open_plink`) set it, and
#: :func:`default_sample_dim` takes it when ``dim`` is omitted.
SAMPLE_DIM_ATTR = "xsvd_sample_dim"

#: Dimension names that hold variants, and names that hold samples (sgkit's, PLINK's, ours):
#: 2-D data with one of each are decomposed over the samples when ``dim`` is omitted.
VARIANT_NAMES = frozenset({"variants", "variant", "snps", "snp", "markers", "marker", "loci"})
SAMPLE_NAMES = frozenset({"samples", "sample", "individuals", "individual"})


def default_sample_dim(obj: xr.DataArray) -> Hashable:
    """The sample dimension when ``dim`` is omitted, or a ``ValueError`` saying what to pass.

    Size-1 dimensions are left out of the choice. The first remaining
    dimension is taken when that is unambiguous: it is the only time-like
    one (a datetime64 or cftime coordinate, the CF attribute ``axis: T`` or
    ``standard_name: time``, or named ``time``), or the data
    are 2-D and neither dimension is time-like (rows are samples, as in
    NumPy and scikit-learn). Anything else, such as ``(lat, lon, time)``
    data (whose first dimension earlier versions took without a word), is
    an error that lists the dims and names the ``dim=`` to pass.

    Genotype-shaped 2-D data, one dimension named like samples
    (``SAMPLE_NAMES``) and the other like variants (``VARIANT_NAMES``), have
    the samples dimension in either order: a ``(variants, samples)`` Zarr
    store is a PCA of the samples, as the genomics guide lays it out.

    Before these rules: data whose attribute ``SAMPLE_DIM_ATTR``
    (``"xsvd_sample_dim"``) names one of their dimensions have it as the
    sample dimension. Genotype readers set it (:func:`xsvd.open_plink`
    sets ``"samples"``, so PLINK data are decomposed over samples, with
    ``U`` over samples, without ``dim=``); xarray keeps it through
    ``isel``/``sel`` and the genomics functions keep it. An attribute
    naming no dimension of the data (after a transpose to other names, or
    a selection that dropped it) is ignored. ``dim=`` given always wins.
    """
    named = obj.attrs.get(SAMPLE_DIM_ATTR)
    if isinstance(named, str) and named in obj.dims:
        return named
    dims = [d for d in obj.dims if obj.sizes[d] != 1] or list(obj.dims)
    if len(obj.dims) == 2:
        names = [str(d).lower() for d in obj.dims]
        for d, name, other in zip(obj.dims, names, names[::-1], strict=True):
            if name in SAMPLE_NAMES and other in VARIANT_NAMES:
                return d
    times = [d for d in dims if timelike(d, index_variable(obj, d))]
    first = dims[0]
    if times == [first] or (not times and len(dims) <= 2):
        return first
    shown = "(" + ", ".join(f"{d}: {obj.sizes[d]}" for d in obj.dims) + ")"
    message = (
        f"dim was not given, and which dimension of these {shown} data holds the samples "
        "(the rows of the matrix; all other dimensions are features) is ambiguous: xsvd "
        "takes the first dimension only for 2-D data or when it is the time dimension. "
    )
    if len(times) == 1:
        message += (
            f"Pass dim={times[0]!r} for one sample per time step (EOFs of a field), or name the "
            f"sample dimension(s) you mean, e.g. dim={first!r}."
        )
    elif times:
        both = "(" + ", ".join(repr(d) for d in times) + ")"
        message += (
            f"Several dimensions are time-like: pass one, e.g. dim={times[0]!r}, or all of "
            f"them as samples, dim={both}."
        )
    else:
        message += f"Pass the sample dimension(s), e.g. dim={first!r}."
    raise ValueError(message)


def index_variable(obj: xr.DataArray, dim: Hashable) -> xr.Variable | None:
    return obj[dim].variable if dim in obj.coords else None


def timelike(dim: Hashable, coord: xr.Variable | None) -> bool:
    """Whether ``dim`` is a time axis (as eofs tells one, and cftime dates too).

    Named ``time``, or its coordinate holds datetime64 or cftime dates, or
    carries the CF attribute ``axis: T`` or ``standard_name: time``.
    """
    if isinstance(dim, str) and dim.lower() == "time":
        return True
    if coord is None or coord.ndim != 1:
        return False
    if coord.attrs.get("axis") == "T" or coord.attrs.get("standard_name") == "time":
        return True
    return coord.dtype.kind == "M" or cftime_calendar(coord) is not None


def cftime_calendar(var: xr.Variable) -> str | None:
    """The calendar of a variable of cftime dates, or None for anything else."""
    if var.dtype != object or var.size == 0:
        return None
    first = np.asarray(var[(0,) * var.ndim].values).item()  # one value, even of Dask data
    if not type(first).__module__.startswith("cftime"):
        return None
    return getattr(first, "calendar", None) or None


def nan_hint(layout: Layout, matrix=None) -> str | None:
    """Advice for a NaN error when the sample and feature dims look swapped, or None.

    The signs: a time-like dimension (dates, or named ``time``) among the
    features while no sample dimension is time-like; or, for an
    in-memory NumPy ``matrix``, samples that are NaN at every feature
    (land cells as samples), which are never left out the way all-NaN
    features are.
    """
    from .layout import FeatureLocator

    samples = ", ".join(repr(d) for d in layout.sample_dims)
    if not any(timelike(d, layout.coords.get(d)) for d in layout.sample_dims):
        times = [d for d in layout.feature_dims if timelike(d, layout.coords.get(d))]
        if times:
            return (
                f"Were the dimensions swapped? The time-like dimension {times[0]!r} is a "
                f"feature dimension here and the samples are along {samples}, so a grid "
                "cell that is missing at some times makes features missing at some "
                f"samples. For one sample per time step (EOFs of a field), pass "
                f"dim={times[0]!r}: cells that are NaN at every time step (land) are then "
                f"left out by themselves. To keep {samples} as the samples, drop the ones "
                f"that are NaN at every time step first."
            )
    if not isinstance(matrix, np.ndarray) or matrix.dtype.kind not in "fc":
        return None
    empty = np.flatnonzero(np.isnan(matrix).all(axis=1))
    if not empty.size:
        return None
    where = FeatureLocator(
        layout.sample_dims, layout.sample_shape, layout.index_values(layout.sample_dims)
    )(empty)
    features = layout.feature_dims[0] if len(layout.feature_dims) == 1 else layout.feature_dims
    return (
        f"Were the dimensions swapped? {empty.size} of the {layout.n_samples} samples are NaN "
        f"at every feature: {where}. Features that are NaN at every sample are left out, "
        f"samples are not. If the samples are along {features!r}, pass dim={features!r}; "
        f"otherwise drop those samples, e.g. `da.dropna({layout.sample_dims[0]!r}, "
        "how='all')`."
    )


def as_dims(dim) -> tuple[Hashable, ...]:
    if isinstance(dim, str) or not isinstance(dim, Sequence):
        return (dim,)
    return tuple(dim)


#: Names of latitude coordinates (lower case), after CF's standard_name and units.
LATITUDE_NAMES = ("lat", "latitude", "lats", "nav_lat", "xlat")
#: CF's units of latitude (lower case).
LATITUDE_UNITS = ("degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn")


def latitude_rank(coord: xr.DataArray) -> int:
    """How surely ``coord`` is a latitude: 2 by standard_name or units, 1 by name, 0 not."""
    units = str(coord.attrs.get("units", "")).strip().lower()
    if coord.attrs.get("standard_name") == "latitude" or units in LATITUDE_UNITS:
        return 2
    return int(str(coord.name).lower() in LATITUDE_NAMES)
