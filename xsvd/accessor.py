"""``DataArray.svd``: thin methods that forward to :mod:`xsvd.labeled.api`."""

from __future__ import annotations

import xarray as xr

from .labeled import api
from .labeled.result import SVDResult


class SVDAccessor:
    """SVD of a DataArray: ``da.svd(k=...)``, ``da.svd.exact()``, ``da.svd.compressed(k)``.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> U, S, V = sst.svd(k=3, dim="time", center=True)
    >>> V.dims
    ('component', 'lat', 'lon')
    """

    def __init__(self, obj: xr.DataArray):
        self._obj = obj

    def __call__(self, k: int | None = None, **kwargs) -> SVDResult:
        """Solver chosen by shape; see :func:`xsvd.svd`."""
        return api.svd(self._obj, k, **kwargs)

    def exact(self, **kwargs) -> SVDResult:
        """Exact SVD; see :func:`xsvd.exact`."""
        return api.exact(self._obj, **kwargs)

    def compressed(self, k: int, **kwargs) -> SVDResult:
        """Randomized rank-``k`` SVD; see :func:`xsvd.compressed`."""
        return api.compressed(self._obj, k, **kwargs)


def register() -> None:
    """Register ``DataArray.svd`` (done once when xsvd is imported)."""
    if getattr(xr.DataArray, "svd", None) is not None and isinstance(
        xr.DataArray.__dict__.get("svd"), xr.core.extensions._CachedAccessor
    ):
        return
    xr.register_dataarray_accessor("svd")(SVDAccessor)
