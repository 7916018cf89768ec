"""The statistics of a result, on array-api-strict's second device (a GPU's stand-in).

A result decomposed from data on ``Device("device1")`` keeps its arrays there;
each method here must give its output on that device, equal to the same method
on the result moved to the host (``as_numpy()``) and NumPy data, with no
implicit conversion to NumPy (the device refuses it) and no move of the data
to the host. ``project`` of data in the other memory (host data on a device
result, or the reverse) moves the data once, counted, to where the result
lives.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend

xs = pytest.importorskip("array_api_strict")  # with NumPy 1 too: conftest mends to_device
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


def test_project_host_data_on_a_device_result(field):
    """New data on the host, the result on the device: the data move to the device once
    (counted), and the scores live where the result lives."""
    sst, _, res, host = field
    backend.TRANSFERS.reset()
    got = res.project(sst)
    assert backend.TRANSFERS.count("to_device", larger_than=sst.size - 1) == 1
    assert backend.TRANSFERS.largest("to_host") < sst.size
    _same(got, host.project(sst))
    gappy = sst.astype(np.float32)  # float32, with a gap the result's mean stands for
    gappy[3, 2, 5] = np.nan
    want = host.project(gappy, missing="mean")
    _same(res.project(gappy, missing="mean"), want, rtol=1e-6)


def test_project_device_data_on_a_host_result(field):
    """The reverse: data on the device, the result on the host: NumPy scores, the data
    brought to the host once (counted)."""
    sst, on_dev, _, host = field
    backend.TRANSFERS.reset()
    got = host.project(on_dev)
    assert backend.TRANSFERS.count("to_host", larger_than=sst.size - 1) == 1
    assert isinstance(got.data, np.ndarray)
    np.testing.assert_allclose(got.values, host.project(sst).values, rtol=1e-12, atol=1e-12)


def test_project_dask_data_on_a_device_result_says_what_to_do(field):
    sst, _, res, _ = field  # Dask cannot take array-api-strict arrays as chunks
    with pytest.raises(TypeError, match=r"Compute the new data first \(`other.compute\(\)`\)"):
        res.project(sst.chunk(time=20))


@pytest.mark.parametrize("method", ["varimax", "promax"])
def test_rotated_project_across_devices(field, method):
    sst, on_dev, res, host = field
    want = host.rotate(3, method=method).project(sst)
    _same(res.rotate(3, method=method).project(sst), want, rtol=1e-10)
    got = host.rotate(3, method=method).project(on_dev)
    np.testing.assert_allclose(got.values, want.values, rtol=1e-10, atol=1e-12)


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


def _shuffled_samples(sst: xr.DataArray) -> xr.DataArray:
    """``sst`` with its time steps in another order and three more of them (labels that the
    decomposition lacks), so that the maps must reindex the samples by label."""
    extra = sst.isel(time=slice(0, 3)).assign_coords(
        time=sst.time.values[-1] + np.arange(1, 4) * np.timedelta64(30, "D")
    )
    return xr.concat([sst, extra + 1.0], "time").isel(
        time=np.random.default_rng(0).permutation(sst.sizes["time"] + 3)
    )


def test_correlation_maps_reindex_samples_on_the_device(field):
    sst, _, res, host = field
    shuffled = _shuffled_samples(sst)
    assert not shuffled.indexes["time"].equals(res.U.indexes["time"])
    backend.TRANSFERS.reset()
    got = res.correlation_maps(_on_device(shuffled))
    assert backend.TRANSFERS.largest("to_host") < sst.size  # the data stay on the device
    want = host.correlation_maps(sst)  # the same samples, in the decomposition's order
    _same(got, want)
    _same(res.covariance_maps(_on_device(shuffled)), host.covariance_maps(sst))
    # the data on the device, the result on the host: the maps on the data's device
    _same(host.correlation_maps(_on_device(shuffled)), want)


def test_correlation_maps_other_features_on_the_device(field):
    sst, _, res, host = field
    # another field on the same samples: fewer grid points, in another order
    other = sst.isel(lat=slice(1, 6), lon=slice(None, None, -2)).transpose("lon", "time", "lat")
    got = res.correlation_maps(_on_device(other))
    want = host.correlation_maps(other)
    assert want.dims == ("component", "lon", "lat")
    _same(got, want)
    np.testing.assert_allclose(  # the same numbers as the full maps at those points
        want.values,
        host.correlation_maps(sst).sel(lat=other.lat, lon=other.lon).transpose(*want.dims).values,
    )


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
    # S lives on the device with U and V (it was NumPy: the line read got.S.values)
    assert backend.device(got.S.data) == backend.device(got.V.data)
    np.testing.assert_allclose(backend.to_numpy(got.S.data), want.S.values, rtol=1e-10)


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
