"""Sums over the samples for the correlation and covariance maps, and elementwise steps
on DataArrays of any array library.

NumPy, CuPy and Dask arrays take NumPy's ufuncs, NumPy scalars and every
xarray method (``where``, ``fillna``, ``clip``, ``xr.dot``); the arrays of
another array-API library (array-api-strict's second device in the tests, a
GPU's stand-in) take only the standard's functions of their own namespace and
Python scalars. The helpers here use the first where they work (so NumPy and
Dask results stay what they were) and the standard's functions elsewhere.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core import backend
from .layout import COMPONENT

__all__ = ["ufuncs_work", "scalar_like", "elementwise", "where_nan", "clip", "moments"]


def ufuncs_work(data) -> bool:
    """Whether NumPy's ufuncs and scalars work on ``data`` (NumPy, CuPy and Dask arrays do;
    another array-API library's arrays take its own functions and Python scalars only)."""
    return backend.is_dask(data) or backend.is_cupy(data) or backend.namespace(data) is np


def scalar_like(value, like: xr.DataArray):
    """A NumPy scalar as it is for data NumPy's ufuncs work on, a Python float otherwise."""
    return value if ufuncs_work(like.data) else float(value)


def elementwise(name: str, x: xr.DataArray) -> xr.DataArray:
    """NumPy's ufunc ``name`` on ``x`` (NumPy, CuPy, Dask), or the standard's function of
    that name from the data's own namespace (another array-API library)."""
    if ufuncs_work(x.data):
        return getattr(np, name)(x)
    return x.copy(data=getattr(backend.api(x.data), name)(x.data))


def where_nan(cond: xr.DataArray, x: xr.DataArray) -> xr.DataArray:
    """``x.where(cond)`` (NaN where ``cond`` is false), on any backend."""
    if ufuncs_work(x.data):
        return x.where(cond)
    return x.copy(data=backend.api(x.data).where(cond.data, x.data, float("nan")))


def moments(U: xr.DataArray, x: xr.DataArray, sample_dims, *, second: bool) -> dict:
    """Sums over the samples where ``x`` is present, for covariances with the PCs.

    One pass over ``x``: with ``y = x - x[first sample]`` (a shift that keeps
    the sums of squares accurate), ``xp`` is the centered cross product
    ``sum (x - mean_x)(p - mean_p)`` over the present samples of each feature,
    ``count`` their number, and with ``second`` ``xx`` and ``pp`` the centered
    sums of squares of ``x`` and of the PCs over the same samples.
    """
    dims = tuple(sample_dims)
    drop = [c for c in U.coords if c != COMPONENT and set(U[c].dims) & set(dims)]
    p = U.drop_vars([c for c in drop if c not in U.indexes])
    x = x.drop_vars([c for c in x.coords if set(x[c].dims) & set(dims) and c not in x.indexes])
    if ufuncs_work(x.data) and not ufuncs_work(p.data):  # host data, a device's result
        p = p.copy(data=backend.to_numpy(p.data))  # the PCs (small) to the host
    if not ufuncs_work(x.data):  # another array-API library
        return array_moments(p, x, dims, second=second)
    p = p.astype(np.float64)
    gpu_x, gpu_p = (backend.namespace(a.data) is not np for a in (x, p))
    if gpu_p != gpu_x:  # move the PCs (small) to the data's device
        p = p.copy(data=backend.move(p.data, "gpu" if gpu_x else "cpu"))
    valid = x.notnull()
    shift = x.isel({d: 0 for d in dims}, drop=True).fillna(0.0)
    y = (x - shift).where(valid, 0.0)
    vf = valid.astype(np.float64)
    count = valid.sum(dims)
    sy = y.sum(dims)
    sp = xr.dot(vf, p, dim=dims)
    safe = count.where(count > 0)
    out = {"count": count, "xp": xr.dot(y, p, dim=dims) - sy * sp / safe}
    if second:
        out["xx"] = (y * y).sum(dims) - sy * sy / safe
        out["pp"] = xr.dot(vf, p * p, dim=dims) - sp * sp / safe
    return out


def array_moments(p: xr.DataArray, x: xr.DataArray, dims: tuple, *, second: bool) -> dict:
    """:func:`moments` with the standard's functions, for arrays of a library other than
    NumPy, CuPy and Dask (whose arrays xarray's ``where`` and ``fillna`` do not all take):
    the same sums, as products of ``x`` flattened to (features x samples)."""
    other = tuple(d for d in x.dims if d not in dims)
    n_f = int(np.prod([x.sizes[d] for d in other]))
    n_s = int(np.prod([x.sizes[d] for d in dims]))
    k = p.sizes[COMPONENT]
    X = backend.reshape(x.transpose(*other, *dims).data, (n_f, n_s))
    P = backend.transfer(p.transpose(*dims, COMPONENT).data, X)  # the PCs (small) to the data
    P = backend.astype(backend.reshape(P, (n_s, k)), np.float64, copy=False)
    xp = backend.api(X)
    nan = float("nan")
    valid = ~xp.isnan(X)
    shift = X[:, :1]
    y = xp.where(valid, X - xp.where(xp.isnan(shift), 0.0, shift), 0.0)
    vf = xp.astype(valid, X.dtype)
    count, sy, sp = xp.sum(vf, axis=1), xp.sum(y, axis=1), vf @ P
    safe = xp.where(count > 0, count, nan)[:, None]
    sums = {"count": count, "xp": y @ P - sy[:, None] * sp / safe}
    if second:
        sums["xx"] = xp.sum(y * y, axis=1) - sy * sy / safe[:, 0]
        sums["pp"] = vf @ (P * P) - sp * sp / safe
    shape = tuple(x.sizes[d] for d in other)
    coords = {c: v.variable for c, v in x.coords.items() if not set(v.dims) & set(dims)}
    component = {c: v.variable for c, v in p.coords.items() if v.dims == (COMPONENT,)}
    out = {}
    for name, a in sums.items():
        if a.ndim == 1:
            out[name] = xr.DataArray(backend.reshape(a, shape), dims=other, coords=coords)
        else:
            data = backend.reshape(a, (*shape, k))
            out[name] = xr.DataArray(data, dims=(*other, COMPONENT), coords={**coords, **component})
    return out


def clip(x: xr.DataArray) -> xr.DataArray:
    """``x`` clipped to [-1, 1] (correlations off by rounding), on any backend."""
    if ufuncs_work(x.data):
        return x.clip(-1.0, 1.0)
    return x.copy(data=backend.api(x.data).clip(x.data, -1.0, 1.0))
