"""``DataArray.svd`` and ``Dataset.svd``: thin methods that forward to
:mod:`xsvd.labeled.api` and :mod:`xsvd.climate.multivariate`.

Each method is made by :func:`forward` from the function it calls, so it has
that function's docstring and signature (every option with its default, from
the options classes the function declares), less the data argument:
``help(da.svd.compressed)`` shows what ``help(xsvd.compressed)`` shows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import xarray as xr

from .climate import multivariate
from .labeled import api


def forward(fn: Callable, owner: str, name: str) -> Callable:
    """A method ``name(self, ...)`` of the class ``owner`` that calls ``fn(self._obj, ...)``.

    It takes ``fn``'s docstring and signature, the first parameter (the data)
    replaced by ``self``, so that ``inspect.signature``, ``help()`` and IDEs
    list the options ``fn`` declares.

    Examples
    --------
    >>> import inspect, xsvd
    >>> list(inspect.signature(forward(xsvd.exact, "SVDAccessor", "exact")).parameters)[:3]
    ['self', 'k', 'dim']
    """

    def method(self, /, *args, **kwargs):
        return fn(self._obj, *args, **kwargs)

    signature = inspect.signature(fn)
    data, *rest = signature.parameters.values()
    method.__signature__ = signature.replace(
        parameters=[inspect.Parameter("self", data.POSITIONAL_OR_KEYWORD), *rest]
    )
    method.__name__, method.__qualname__ = name, f"{owner}.{name}"
    method.__doc__ = fn.__doc__
    return method


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

    __call__ = forward(api.svd, "SVDAccessor", "__call__")
    exact = forward(api.exact, "SVDAccessor", "exact")
    compressed = forward(api.compressed, "SVDAccessor", "compressed")


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

    __call__ = forward(multivariate.svd, "DatasetSVDAccessor", "__call__")
    exact = forward(multivariate.exact, "DatasetSVDAccessor", "exact")
    compressed = forward(multivariate.compressed, "DatasetSVDAccessor", "compressed")


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
