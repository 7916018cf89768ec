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
    """Register ``DataArray.svd`` (done once when xsvd is imported).

    Does nothing when ``DataArray.svd`` is this module's accessor already, from
    an earlier call or an earlier copy of this module (``importlib.reload``),
    so xarray warns only when ``svd`` was something else.
    """
    current = getattr(xr.DataArray, "svd", None)  # on the class: the accessor class
    if (getattr(current, "__module__", None), getattr(current, "__qualname__", None)) == (
        __name__,
        SVDAccessor.__qualname__,
    ):
        return
    xr.register_dataarray_accessor("svd")(SVDAccessor)
