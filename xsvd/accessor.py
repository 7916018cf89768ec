"""``DataArray.svd`` and ``Dataset.svd``: thin methods that forward to
:mod:`xsvd.labeled.api` and :mod:`xsvd.climate.multivariate`."""

from __future__ import annotations

import xarray as xr

from .climate import multivariate
from .climate.multivariate_result import MultivariateResult
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


class DatasetSVDAccessor:
    """Multivariate (combined) SVD of a Dataset's data variables: ``ds.svd(k=...)``,
    ``ds.svd.exact()``, ``ds.svd.compressed(k)``.

    Each variable's dims other than ``dim`` are its features (grids may
    differ); see :func:`xsvd.climate.multivariate.svd`.

    Examples
    --------
    >>> import xarray as xr, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> ds = xr.Dataset({"sst": sst, "sst2": (sst**2).rename(lat="y", lon="x")})
    >>> U, S, V = ds.svd(k=3, dim="time", center=True, equal_variance=True)
    >>> V["sst2"].dims
    ('component', 'y', 'x')
    """

    def __init__(self, obj: xr.Dataset):
        self._obj = obj

    def __call__(self, k: int | None = None, **kwargs) -> MultivariateResult:
        """Solver chosen by shape; see :func:`xsvd.climate.multivariate.svd`."""
        return multivariate.svd(self._obj, k, **kwargs)

    def exact(self, **kwargs) -> MultivariateResult:
        """Exact SVD; see :func:`xsvd.climate.multivariate.exact`."""
        return multivariate.exact(self._obj, **kwargs)

    def compressed(self, k: int, **kwargs) -> MultivariateResult:
        """Randomized rank-``k`` SVD; see :func:`xsvd.climate.multivariate.compressed`."""
        return multivariate.compressed(self._obj, k, **kwargs)


def register() -> None:
    """Register ``DataArray.svd`` and ``Dataset.svd`` (done once when xsvd is imported).

    Does nothing for a class whose ``svd`` is this module's accessor already,
    from an earlier call or an earlier copy of this module
    (``importlib.reload``), so xarray warns only when ``svd`` was something else.
    """
    for cls, accessor, registrar in (
        (xr.DataArray, SVDAccessor, xr.register_dataarray_accessor),
        (xr.Dataset, DatasetSVDAccessor, xr.register_dataset_accessor),
    ):
        current = getattr(cls, "svd", None)  # on the class: the accessor class
        if (getattr(current, "__module__", None), getattr(current, "__qualname__", None)) == (
            __name__,
            accessor.__qualname__,
        ):
            continue
        registrar("svd")(accessor)
