"""xsvd.mca against xeofs' MCA (full solver, no PCA) and the formed cross-covariance."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

T = 48


def _fields(seed=0):
    rng = np.random.default_rng(seed)
    lat, lon = np.linspace(-40, 40, 5), np.arange(0.0, 60, 10)
    left = xr.DataArray(
        rng.standard_normal((T, 5, 6)) * rng.uniform(0.5, 3, (5, 6)) + 5,
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(T), "lat": lat, "lon": lon},
    )
    right = xr.DataArray(
        rng.standard_normal((T, 9)),
        dims=("time", "x"),
        coords={"time": np.arange(T), "x": np.arange(9)},
    )
    right = right + 0.5 * left.isel(lat=0).values[:, :1] * np.linspace(1, -1, 9)
    wl = xr.DataArray(rng.uniform(0.2, 1, (5, 6)), dims=("lat", "lon"), coords={"lat": lat})
    wr = xr.DataArray(rng.uniform(0.2, 1, 9), dims=("x",), coords={"x": right.x})
    return left, right, wl, wr


def _xeofs(left, right, wl, wr, k, standardize=False):
    pytest.importorskip("statsmodels")  # xeofs' MCA imports it
    from xeofs.cross import MCA

    model = MCA(n_modes=k, use_pca=False, solver="full", standardize=standardize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(left, right, dim="time", weights_X=wl, weights_Y=wr)
    return model


def _chunked(*das):
    return [da.chunk({"time": 13}) for da in das]


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("method", ["compressed", "exact"])
@pytest.mark.parametrize("standardize", [False, True])
def test_matches_xeofs(lazy, method, standardize):
    left, right, wl, wr = _fields()
    k = 3
    ref = _xeofs(left, right, wl, wr, k, standardize)
    data = _chunked(left, right) if lazy else (left, right)
    res = xsvd.mca(
        *data, k, dim="time", weights_left=wl, weights_right=wr, standardize=standardize,
        method=method,
    )  # fmt: skip
    np.testing.assert_allclose(res.singular_values, ref.data["singular_values"], rtol=1e-11)
    np.testing.assert_allclose(
        res.squared_covariance_fraction, ref.squared_covariance_fraction(), rtol=1e-10
    )
    cl, cr = (c.rename(mode="component") for c in ref.components())
    cl = cl.transpose("component", "lat", "lon").values
    sign = np.sign((res.left_patterns.values * cl).sum(axis=(1, 2)))
    assert np.all(np.abs(sign) == 1)
    np.testing.assert_allclose(res.left_patterns, sign[:, None, None] * cl, atol=1e-11)
    cr = cr.transpose("component", "x").values
    np.testing.assert_allclose(res.right_patterns, sign[:, None] * cr, atol=1e-11)
    sl, sr = (s.transpose("time", "mode").values * sign for s in ref.scores())
    np.testing.assert_allclose(res.left_scores, sl, atol=1e-10)
    np.testing.assert_allclose(res.right_scores, sr, atol=1e-10)
    (hl, hr), _ = ref.homogeneous_patterns()
    (el, er), _ = ref.heterogeneous_patterns()
    ours = (*res.homogeneous_maps(), *res.heterogeneous_maps())
    for mine, theirs in zip(ours, (hl, hr, el, er), strict=True):
        theirs = theirs.transpose("mode", ...).values
        flip = sign.reshape(-1, *[1] * (theirs.ndim - 1))
        np.testing.assert_allclose(mine.values, flip * theirs, atol=1e-11)
    if method == "compressed":
        assert res.errors.S_relative.max() < 1e-6


def test_compressed_estimates_bound_the_truth_and_fractions_by_both_routes():
    rng = np.random.default_rng(3)
    n, a, b = 60, 120, 100
    common = rng.standard_normal((n, 8)) * 0.8 ** np.arange(8)
    left = xr.DataArray(common @ rng.standard_normal((8, a)) + rng.standard_normal((n, a)) * 0.3,
                        dims=("time", "p"))  # fmt: skip
    right = xr.DataArray(common @ rng.standard_normal((8, b)) + rng.standard_normal((n, b)) * 0.3,
                         dims=("time", "q"))  # fmt: skip
    exact = xsvd.mca(left, right, 5, method="exact")
    for q in (1, 2, 4):
        res = xsvd.mca(left, right, 5, n_power_iter=q, n_oversamples=10)
        assert res.settings["passes"] == q + 1
        err = np.abs(res.singular_values.values - exact.singular_values.values)
        assert np.all(res.errors.S.values >= err)
    np.testing.assert_allclose(res.singular_values, exact.singular_values, rtol=1e-12)
    # ||C||_F^2: from the Gram matrices (more features than samples) and from blocks of C
    Bl = left.values - left.values.mean(0)
    Br = right.values - right.values.mean(0)
    total = ((Bl.T @ Br / (n - 1)) ** 2).sum()
    np.testing.assert_allclose(res.total_squared_covariance, total, rtol=1e-12)
    few = xsvd.mca(left.isel(p=slice(0, 6)), right.isel(q=slice(0, 5)), 2)
    Cs = Bl[:, :6].T @ Br[:, :5] / (n - 1)
    np.testing.assert_allclose(few.total_squared_covariance, (Cs**2).sum(), rtol=1e-12)
    lazy = xsvd.mca(left.chunk({"time": 20}), right.chunk({"q": 20}), 5)
    np.testing.assert_allclose(lazy.total_squared_covariance, total, rtol=1e-12)


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_all_nan_features_stay_nan_and_partial_nan_is_an_error(lazy):
    left, right, _, _ = _fields(1)
    land = left.where(~((left.lat == 0) & (left.lon < 30)))  # 3 features NaN at every time
    data = _chunked(land, right) if lazy else (land, right)
    res = xsvd.mca(*data, 2, dim="time")
    # the same as constant (zero) features, which add nothing to the cross-covariance
    ref = xsvd.mca(land.fillna(0.0), right, 2, dim="time", method="exact")
    assert int(res.left_patterns.isnull().sum()) == 2 * 3
    np.testing.assert_allclose(res.singular_values, ref.singular_values, rtol=1e-12)
    np.testing.assert_allclose(res.left_patterns.fillna(0.0), ref.left_patterns, atol=1e-12)
    hom_left, _ = res.homogeneous_maps()
    assert int(hom_left.isnull().sum()) == 2 * 3
    bad = left.copy()
    bad[3, 1, 1] = np.nan
    with pytest.raises(xsvd.MissingValueError, match=r"some but not all samples of 1 feature"):
        xsvd.mca(bad, right, 2, dim="time")


def test_inputs_untouched_and_bad_inputs_explained():
    left, right, _, _ = _fields(2)
    before = left.copy(deep=True)
    xsvd.mca(left, right, 2, dim="time", method="exact")
    xsvd.mca(left, right, 2, dim="time")
    xr.testing.assert_identical(left, before)
    with pytest.raises(ValueError, match="share the sample dimension"):
        xsvd.mca(left, right.isel(time=slice(0, 40)), 2, dim="time")
    with pytest.raises(ValueError, match="different 'time' coordinates"):
        xsvd.mca(left, right.assign_coords(time=right.time + 1), 2, dim="time")
    with pytest.raises(ValueError, match="between 1 and 9"):
        xsvd.mca(left, right, 10, dim="time")
    with pytest.raises(ValueError, match="method must be one of"):
        xsvd.mca(left, right, 2, dim="time", method="full")


def test_component_coordinate_follows_the_layout():
    left, right, _, _ = _fields(4)
    res = xsvd.mca(left, right, 2, dim="time")
    pattern = xsvd.svd(left, k=2, dim="time").V
    np.testing.assert_array_equal(res.left_patterns.component, pattern.component)
    np.testing.assert_array_equal(res.singular_values.component, pattern.component)
