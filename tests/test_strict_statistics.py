"""The statistics of a result, on array-api-strict's second device (a GPU's stand-in).

A result decomposed from data on ``Device("device1")`` keeps its arrays there;
each method here must give its output on that device, equal to the same method
on the result moved to the host (``as_numpy()``) and NumPy data, with no
implicit conversion to NumPy (the device refuses it) and no move of the data
to the host.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import strict_available

import xsvd
from xsvd.core import backend

xs = pytest.importorskip("array_api_strict")
if not strict_available():  # pragma: no cover - the minimum-versions run (NumPy 1.26)
    pytest.skip(
        "array-api-strict moves data between devices with NumPy 2 only", allow_module_level=True
    )
DEVICE = xs.Device("device1")


def _on_device(obj: xr.DataArray) -> xr.DataArray:
    return obj.copy(data=xs.asarray(np.asarray(obj.values), device=DEVICE))


def _is_on_device(obj: xr.DataArray) -> bool:
    return backend.namespace(obj.data) is xs and obj.data.device == DEVICE


@pytest.fixture(scope="module")
def field():
    """A small field with land (NaN at every time step) and its decomposition, on the
    host and on the device."""
    sst = xsvd.datasets.climate_field(n_time=60, n_lat=8, n_lon=16)
    w = xsvd.coslat_weights(sst)
    on_dev = _on_device(sst)
    res = on_dev.svd.exact(k=4, dim="time", center=True, weights=w)
    assert _is_on_device(res.V) and _is_on_device(res.U)
    return sst, on_dev, res, res.as_numpy()


def _same(got: xr.DataArray, want: xr.DataArray, rtol: float = 1e-12):
    assert _is_on_device(got), type(got.data)
    assert got.dims == want.dims
    back = backend.to_numpy(got.data)
    scale = float(np.nanmax(np.abs(want.values))) or 1.0
    np.testing.assert_allclose(back, want.values, rtol=rtol, atol=1e-12 * scale)
    for c in want.coords:
        np.testing.assert_array_equal(got[c].values, want[c].values)


def test_project_on_the_device(field):
    sst, on_dev, res, host = field
    backend.TRANSFERS.reset()
    got = res.project(on_dev)
    assert backend.TRANSFERS.largest("to_host") < sst.size  # the data stay on the device
    _same(got, host.project(sst))
    np.testing.assert_allclose(backend.to_numpy(got.data), host.U.values, atol=1e-10)


def test_project_missing_mean_on_the_device(field):
    sst, _, res, host = field
    gappy = sst.copy()
    gappy[3, 2, 5] = np.nan
    _same(res.project(_on_device(gappy), missing="mean"), host.project(gappy, missing="mean"))


def test_eigenvalues_on_the_device(field):
    _, _, res, host = field
    for ddof in (0, 1):
        _same(res.eigenvalues(ddof=ddof), host.eigenvalues(ddof=ddof))


def test_north_errors_on_the_device(field):
    _, _, res, host = field
    _same(res.north_errors(), host.north_errors())
    _same(res.north_errors(ratio=True), host.north_errors(ratio=True))


@pytest.mark.parametrize("scaling", [0, 1, 2])
def test_pcs_and_eofs_scalings_on_the_device(field, scaling):
    _, _, res, host = field
    _same(res.pcs(scaling=scaling), host.pcs(scaling=scaling))
    _same(res.eofs(scaling=scaling), host.eofs(scaling=scaling))


def test_correlation_maps_on_the_device(field):
    sst, on_dev, res, host = field
    backend.TRANSFERS.reset()
    got = res.correlation_maps(on_dev)
    assert backend.TRANSFERS.largest("to_host") < sst.size
    want = host.correlation_maps(sst)
    _same(got, want)
    assert np.isnan(want.values).any()  # land: NaN alike
    # the data on the host, the result on the device: the PCs (small) come to the host
    host_data = res.correlation_maps(sst)
    np.testing.assert_allclose(host_data.values, want.values, rtol=1e-12)


def test_covariance_maps_on_the_device(field):
    sst, on_dev, res, host = field
    gappy = sst.copy()
    gappy[:5, 1, 3] = np.nan  # some samples missing at one point
    for ddof in (0, 1):
        _same(
            res.covariance_maps(_on_device(gappy), ddof=ddof),
            host.covariance_maps(gappy, ddof=ddof),
        )


@pytest.mark.parametrize("method", ["varimax", "promax"])
def test_rotate_on_the_device(field, method):
    _, _, res, host = field
    got, want = res.rotate(3, method=method), host.rotate(3, method=method)
    _same(got.eofs(), want.eofs(), rtol=1e-10)
    _same(got.pcs(), want.pcs(), rtol=1e-10)
    np.testing.assert_allclose(got.S.values, want.S.values, rtol=1e-10)


def test_standardize_on_the_device():
    sst = xsvd.datasets.climate_field(n_time=60, n_lat=8, n_lon=16)
    sst = sst.where(sst.lat < 30, 0.0)  # constant features: weight 0
    kw = dict(k=3, dim="time", center=True, standardize=True)
    got, want = _on_device(sst).svd.exact(**kw), sst.svd.exact(**kw)
    np.testing.assert_allclose(got.weights.values, want.weights.values, rtol=1e-12)
    assert (want.weights.values == 0).sum() > 0  # constant and land features
    np.testing.assert_allclose(backend.to_numpy(got.S.data), want.S.values, rtol=1e-10)
    vs = (backend.to_numpy(got.V.data), want.V.values)
    np.testing.assert_allclose(*vs, atol=1e-10)
