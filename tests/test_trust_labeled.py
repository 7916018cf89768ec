"""No silent wrong answer from the labeled layer (issue 20, items 1, 8 and 9).

- ``standardize=True``: a feature whose standard deviation is at rounding
  level (a constant column of 0.1, sea-ice cells fixed at -1.8) is constant:
  weight 0, on NumPy and Dask alike, and no fake component; features of any
  magnitude (1e-200 to 1e200) are standardized, not dropped.
- Weights are finite and >= 0, or an error that names where they are not.
- Every dimension, size 1 included, keeps its name in ``U``, ``V``, ``mean``,
  the weights and ``reconstruct()``.

Each result is compared with ``numpy.linalg.svd`` of the same matrix
prepared by hand in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd import datasets
from xsvd.labeled.preprocess import constant_tolerance, standardized_weights

BACKENDS = ("numpy", "dask")


def on(backend: str, da: xr.DataArray, dim: str) -> xr.DataArray:
    """``da`` in memory, or Dask-backed in several chunks along ``dim``."""
    if backend == "numpy":
        return da
    return da.chunk({dim: max(1, da.sizes[dim] // 3)})


def solve(data: xr.DataArray, method: str, k: int, **options):
    if method == "exact":
        return data.svd.exact(k=k, **options)
    return data.svd.compressed(k, seed=0, n_power_iter=4, **options)


def standardized(x: np.ndarray, constant) -> np.ndarray:
    """Columns centered and divided by their standard deviation; ``constant`` ones zero."""
    x = np.asarray(x, dtype=np.float64)
    scale = np.abs(x).max(axis=0)
    scale[scale == 0] = 1.0
    y = x / scale  # any magnitude: no overflow in the squares
    y = y - y.mean(axis=0)
    std = y.std(axis=0)
    out = np.zeros_like(y)
    keep = np.ones(x.shape[1], bool)
    keep[list(constant)] = False
    out[:, keep] = y[:, keep] / std[keep]
    return out


def singular_values(b: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.svd(b, compute_uv=False)[:k]


# ------------------------------------------------- 1. standardize, constants


@pytest.fixture(scope="module")
def six():
    """The issue's 1000 x 6 case: column 3 is 0.1 everywhere (not exact in binary)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 6))
    x[:, 3] = 0.1
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_constant_column_of_0_1_has_no_fake_component(six, backend, method):
    data = on(backend, xr.DataArray(six, dims=("time", "x")), "time")
    res = solve(data, method, 3, dim="time", center=True, standardize=True)
    ref = singular_values(standardized(six, [3]), 3)
    # old code: exact S had an extra sqrt(1000) = 31.62; compressed S[0] ~ 1e8
    np.testing.assert_allclose(res.S.values, ref, rtol=1e-9)
    assert res.weights.values[3] == 0.0
    assert np.all(res.weights.values[[0, 1, 2, 4, 5]] > 0.5)
    # the constant feature comes back as NaN (weight 0: its values are not kept)
    assert bool(res.reconstruct().isel(x=3).isnull().all())


def test_constant_columns_get_weight_zero_on_numpy_and_dask(six):
    import dask.array as da

    x = six.copy()
    x[:, 0] = -1.8
    x[:, 1] = 271.35 - 273.15  # -1.8 as a sum computes it: another double
    x[:, 2] = 1e300 / 3
    x[:, 4] = 1e-300 / 3
    for a in (x, da.from_array(x, chunks=(137, 4)), da.from_array(x, chunks=(7, 2))):
        w = standardized_weights(a, None)
        np.testing.assert_array_equal(w[[0, 1, 2, 3, 4]], 0.0)
        np.testing.assert_allclose(w[5], 1 / x[:, 5].std(), rtol=1e-13)


@pytest.fixture(scope="module")
def icy():
    """SST-like absolute temperatures, cells poleward of 60 degrees fixed at -1.8 (sea ice)."""
    sst = datasets.climate_field(n_time=96, n_lat=12, n_lon=24, seed=1) + 15.0
    ice = np.abs(sst.lat) > 60
    return sst.where(~ice, -1.8).where(sst.notnull())


def icy_reference(field: xr.DataArray, k: int) -> np.ndarray:
    x = field.stack(f=("lat", "lon")).transpose("time", "f").values.astype(np.float64)
    x = x[:, ~np.isnan(x).any(axis=0)]
    constant = np.flatnonzero((x == x[0]).all(axis=0))
    assert constant.size > 20  # the ice cells
    return singular_values(standardized(x, constant), k)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sea_ice_cells_fixed_at_minus_1_8(icy, backend, method, dtype):
    field = icy.astype(dtype)
    data = on(backend, field, "time")
    res = solve(data, method, 4, dim="time", center=True, standardize=True)
    ref = icy_reference(field, 4)
    # old code: a fake component of about sqrt(96) * ... among these
    rtol = 1e-9 if (dtype, method) == ("float64", "exact") else 2e-4
    np.testing.assert_allclose(res.S.values, ref, rtol=rtol)
    ice = (np.abs(field.lat) > 60) & field.isel(time=0).notnull()
    assert float(np.abs(res.weights.where(ice)).max()) == 0.0
    if method == "compressed":  # the estimates cover the true error
        true = np.abs(res.S.values - ref)
        assert np.all(res.errors.S.values >= true - 1e-6 * ref)


def test_one_ulp_of_jitter_is_constant_in_float32_and_float64():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 4)).astype(np.float32)
    x[:, 0] = np.float32(-1.8)
    x[rng.random(400) < 0.3, 0] = np.nextafter(np.float32(-1.8), np.float32(0))
    w = standardized_weights(x, None)
    assert w[0] == 0.0 and np.all(w[1:] > 0.5)
    x64 = rng.standard_normal((400, 4))
    x64[:, 0] = np.where(rng.random(400) < 0.3, -1.8, np.nextafter(-1.8, 0))
    w = standardized_weights(x64, None)
    assert w[0] == 0.0 and np.all(w[1:] > 0.5)
    # the threshold: max(4 eps, n eps64); a real variation of 1e-6 is kept in float64
    x64[:, 0] = -1.8 + 1e-6 * rng.standard_normal(400)
    assert standardized_weights(x64, None)[0] > 1e5
    assert constant_tolerance(np.float32, 400) == 4 * np.finfo(np.float32).eps
    assert constant_tolerance(np.int8, 10**6) == 10**6 * np.finfo(np.float64).eps


@pytest.mark.parametrize("backend", BACKENDS)
def test_standardize_takes_features_of_any_magnitude(backend):
    """Old code: the squares of 1e200 overflowed (std inf) and those of 1e-200 underflowed
    (std 0), so both features got weight 0 and were silently left out."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 5))
    x[:, 0] = 1e200 * (x[:, 0] + 3)
    x[:, 1] = 1e-200 * x[:, 1]
    data = on(backend, xr.DataArray(x, dims=("time", "x")), "time")
    res = data.svd.exact(dim="time", center=True, standardize=True)
    np.testing.assert_allclose(res.S.values, singular_values(standardized(x, []), 5), rtol=1e-10)
    scaled = x[:, :2] / [1e200, 1e-200]
    np.testing.assert_allclose(
        res.weights.values[:2] / [1e-200, 1e200], 1 / scaled.std(axis=0), rtol=1e-12
    )


def test_standardize_refuses_weights_beyond_float64():
    x = np.random.default_rng(6).standard_normal((50, 3))
    x[:, 1] *= 1e-310  # subnormal: 1 / std exceeds the largest float64
    with pytest.raises(ValueError, match=r"1 feature\(s\) have a standard deviation.*Scale"):
        xr.DataArray(x, dims=("time", "x")).svd.exact(dim="time", standardize=True)


# --------------------------------------------------------------- 8. weights


@pytest.fixture(scope="module")
def sst():
    return datasets.climate_field(n_time=40, n_lat=18, n_lon=24, seed=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_cos_of_degrees_is_refused_naming_the_latitudes(sst, backend, method):
    data = on(backend, sst, "time")
    w = np.cos(sst.lat)  # radians expected: negative at many latitudes in degrees
    negative = sst.lat.values[np.cos(sst.lat.values) < 0]
    with pytest.raises(ValueError) as err:
        solve(data, method, 3, dim="time", weights=w)
    text = str(err.value)
    assert f"weights are negative at {negative.size} of 18 'lat' values" in text
    assert f"(lat={negative[0]})" in text
    assert "np.cos" in text and "xsvd.coslat_weights" in text


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_nan_and_infinite_weights_name_their_place(sst, bad, method):
    w = xr.ones_like(sst.isel(time=0), dtype=float).fillna(1.0)
    w[3, 5] = bad
    place = f"(lat={float(sst.lat[3])}, lon={float(sst.lon[5])})"
    with pytest.raises(ValueError) as err:
        solve(sst.chunk(time=20), method, 3, dim="time", weights=w)
    text = str(err.value)
    assert "weights are NaN or infinite at 1 of 432 ('lat', 'lon') values" in text
    assert place in text and "finite and >= 0" in text


def test_negative_weights_without_coordinates_and_scalars():
    x = xr.DataArray(np.random.default_rng(0).standard_normal((20, 4)), dims=("time", "x"))
    w = xr.DataArray([1.0, -2.0, 1.0, 0.5], dims="x")
    with pytest.raises(ValueError, match=r"negative at 1 of 4 'x' values: \(x\[1\]\)"):
        x.svd.exact(dim="time", weights=w)
    with pytest.raises(ValueError, match=r"weights are negative \(-1.0\)"):
        x.svd.exact(dim="time", weights=-1.0)
    assert "np.cos" not in str(pytest.raises(ValueError, x.svd.exact, dim="time", weights=w).value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_weights_of_zero_and_above_are_used_as_given(sst, backend, method):
    field = sst.fillna(0.0)
    w = xsvd.coslat_weights(field)
    w = w.where(np.abs(w.lat) < 70, 0.0)  # zero at the poles: those cells left out
    res = solve(on(backend, field, "time"), method, 3, dim="time", center=True, weights=w)
    x = field.stack(f=("lat", "lon")).transpose("time", "f").values
    ww = w.broadcast_like(field.isel(time=0)).stack(f=("lat", "lon")).values
    ref = singular_values((x - x.mean(0)) * ww, 3)
    np.testing.assert_allclose(res.S.values, ref, rtol=1e-9 if method == "exact" else 1e-4)


# ---------------------------------------------------------- 9. size-1 dims


def level_field(backend: str, sst: xr.DataArray) -> xr.DataArray:
    """(time, lat, level: 1, lon): a size-1 feature dim in the middle, with coordinates."""
    field = sst.fillna(0.0).expand_dims(level=[850.0], axis=2)
    field = field.assign_coords(level_name=("level", ["low"]))
    return on(backend, field, "time")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_size_one_feature_dims_keep_their_names(sst, backend, method):
    field = level_field(backend, sst)
    w = xsvd.coslat_weights(sst)
    res = solve(field, method, 3, dim="time", center=True, weights=w)
    # old code: V (component, lat, lon) and mean (lat, lon), level a scalar coordinate
    assert res.V.dims == ("component", "lat", "level", "lon")
    assert res.mean.dims == res.weights.dims == ("lat", "level", "lon")
    assert res.feature_dims == ("lat", "level", "lon")
    assert res.V.level_name.values.tolist() == ["low"]
    rec = res.reconstruct()
    assert rec.dims == field.dims and rec.level.values.tolist() == [850.0]
    # the numbers: those of the matrix without the size-1 dim
    x = sst.fillna(0.0).stack(f=("lat", "lon")).transpose("time", "f").values
    ww = w.broadcast_like(sst.isel(time=0)).stack(f=("lat", "lon")).values
    u, s, vt = np.linalg.svd((x - x.mean(0)) * ww, full_matrices=False)
    rtol = 1e-9 if method == "exact" else 1e-4
    np.testing.assert_allclose(res.S.values, s[:3], rtol=rtol)
    v = res.V.sel(level=850.0).stack(f=("lat", "lon")).values
    np.testing.assert_allclose(np.abs(np.sum(v * vt[:3], axis=1)), 1.0, rtol=rtol)
    # selecting on the size-1 dim works on every result, as on the data
    assert res.eofs().sel(level=850.0).dims == ("component", "lat", "lon")
    np.testing.assert_allclose(
        res.mean.sel(level=850.0).values, x.mean(0).reshape(18, 24), atol=1e-12
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_takes_new_data_with_or_without_the_size_one_dim(sst, backend):
    field = level_field(backend, sst)
    res = field.svd(k=3, dim="time", center=True)
    U = res.U.values
    np.testing.assert_allclose(res.project(field).values, U, atol=1e-10)
    np.testing.assert_allclose(res.project(field.isel(level=0)).values, U, atol=1e-10)
    np.testing.assert_allclose(res.project(field.squeeze("level", drop=True)).values, U, atol=1e-10)
    wide = xr.concat([field, field.assign_coords(level=[500.0])], "level")
    np.testing.assert_allclose(res.project(wide).values, U, atol=1e-10)
    with pytest.raises(ValueError, match=r"single 'level' 850.0.*at level=500.0"):
        res.project(field.assign_coords(level=[500.0]).isel(level=0))
    with pytest.raises(ValueError, match=r"single 'level' 850.0.*lack along 'level'"):
        res.project(field.assign_coords(level=[500.0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_size_one_sample_dims_stay_in_u_and_reconstruct(sst, backend, method):
    field = on(backend, sst.fillna(0.0).expand_dims(member=[7]), "time")  # (member: 1, time, ...)
    res = solve(field, method, 3, dim=("member", "time"), center=True)
    assert res.U.dims == ("member", "time", "component")
    assert res.U.member.values.tolist() == [7]
    assert res.reconstruct().dims == field.dims
    assert res.project(field).dims == ("member", "time", "component")
    x = sst.fillna(0.0).stack(f=("lat", "lon")).transpose("time", "f").values
    np.testing.assert_allclose(
        res.S.values, singular_values(x - x.mean(0), 3), rtol=1e-9 if method == "exact" else 1e-4
    )


def test_size_one_dims_are_left_out_of_the_choice_of_sample_dim(sst):
    field = sst.fillna(0.0).expand_dims(member=[0])  # (member: 1, time, lat, lon)
    res = field.svd(k=2)  # the sample dim is time, not member
    assert res.U.dims == ("time", "component")
    assert res.V.dims == ("component", "member", "lat", "lon")
    assert res.reconstruct().dims == field.dims
