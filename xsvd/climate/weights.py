"""Area weights for EOFs of gridded fields: ``sqrt(cos(latitude))``.

On a regular latitude-longitude grid a cell's area is proportional to
``cos(latitude)``. EOF analysis multiplies the anomalies by the square root of
that, so that variances and covariances (sums of squares) are weighted by
area. :func:`coslat_weights` finds the latitude coordinate of a field (by CF's
``standard_name`` or ``units``, else by its name) and returns these weights,
ready for ``weights=`` of :func:`xsvd.svd`; ``xsvd run --weights coslat``
uses the same function.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from ..labeled.dims import latitude_rank


def coslat_weights(
    data: xr.DataArray | xr.Dataset,
    *,
    lat: Hashable | None = None,
    dim: str | Sequence[Hashable] | None = None,
) -> xr.DataArray:
    """Area weights ``sqrt(cos(latitude))`` from the latitude coordinate of ``data``.

    The weights multiply the data (``weights=`` of :func:`xsvd.svd`), so the
    covariance of the weighted data is weighted by ``cos(latitude)``: the
    area of a grid cell on a regular grid, the usual weighting for EOFs of
    gridded fields.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        The field (or a dataset holding it) with a latitude coordinate in
        degrees. Unless ``lat`` names it, the latitude is the coordinate
        with ``standard_name`` "latitude" or units "degrees_north" (CF), else
        one named lat, latitude, lats, nav_lat or xlat (any case).
    lat : hashable, optional
        The name of the latitude coordinate, when it is not found by the
        rules above.
    dim : str or sequence of str, optional
        The sample dimension(s) of the decomposition (``dim`` of
        :func:`xsvd.svd`, e.g. "time"). The weights are per feature (grid
        cell), so the latitude must not lie along these; a latitude-like
        coordinate that does is skipped.

    Returns
    -------
    xarray.DataArray
        ``sqrt(cos(deg2rad(lat)))`` over the latitude coordinate's
        dimension(s) (e.g. ``lat``, or ``(y, x)`` on a curvilinear grid),
        named "weights", with the attribute ``long_name`` "sqrt(cos(lat))";
        same dtype as the coordinate.

    Raises
    ------
    ValueError
        If there is no latitude coordinate (or ``lat`` is not a coordinate),
        it lies along a sample dimension, or its values are not latitudes
        in degrees (outside -90 to 90, or NaN).

    See Also
    --------
    xsvd.svd : ``weights=`` takes these weights.
    xsvd.SVDResult.eofs : ``unweighted=True`` divides them out of the EOFs.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=6, n_lon=12)
    >>> w = xsvd.coslat_weights(sst)
    >>> print(w.dims, w.attrs["long_name"])
    ('lat',) sqrt(cos(lat))
    >>> print(w.values.round(3))
    [0.509 0.841 0.983 0.983 0.841 0.509]
    >>> res = sst.svd(k=3, dim="time", center=True, weights=w)
    >>> eofs = res.eofs(unweighted=True)  # the EOFs on the grid: weights divided out

    A coordinate that the rules do not recognize is named with ``lat=``:

    >>> grid = sst.rename(lat="phi").assign_coords(phi=sst.lat.values)  # no attributes
    >>> print(xsvd.coslat_weights(grid, lat="phi").dims)
    ('phi',)
    """
    name = getattr(data, "name", None)
    name = "the data" if name is None else repr(name)
    if lat is not None:
        if lat not in data.coords:
            raise ValueError(
                f"lat={lat!r} is not a coordinate of {name}, whose coordinates are "
                f"{list(data.coords)}; name the latitude coordinate with lat=."
            )
        found = [data.coords[lat]]
    else:
        found = sorted(
            (c for c in data.coords.values() if c.dims and latitude_rank(c)),
            key=latitude_rank,
            reverse=True,
        )
    if not found:
        raise ValueError(
            f"coslat weights need a latitude coordinate (named lat or latitude, or with "
            f"standard_name 'latitude' or units 'degrees_north'), but {name} has the "
            f"coordinates {list(data.coords)}. Add one, or name it with lat=."
        )
    sample_dims = [dim] if isinstance(dim, str) else list(dim or [])
    feature = [c for c in found if not set(c.dims) & set(sample_dims)]
    if not feature:
        coord = found[0]
        raise ValueError(
            f"the latitude coordinate {coord.name!r} lies along the sample dimension(s) "
            f"{[d for d in coord.dims if d in sample_dims]}, but coslat weights weight the "
            "features (grid cells); decompose along the other dimension(s), e.g. time."
        )
    coord = feature[0]
    values = np.asarray(coord.values, dtype=float)
    if not np.isfinite(values).all() or np.abs(values).max() > 90.0:
        raise ValueError(
            f"the latitude coordinate {coord.name!r} has values outside -90 to 90 (or NaN); "
            "coslat weights need latitudes in degrees."
        )
    weights = np.sqrt(np.cos(np.deg2rad(coord)).clip(min=0.0))  # cos(±90°) may round below 0
    weights.name = "weights"
    weights.attrs = {"long_name": f"sqrt(cos({coord.name}))"}
    return weights
