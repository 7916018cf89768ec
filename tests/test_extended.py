"""xsvd.extended_eof against xeofs' ExtendedEOF (full solver, no PCA) and a formed lagged copy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

T = 60


def _field(seed=0, offset=10.0):
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    wave = np.sin(2 * np.pi * (t[:, None, None] / 15 - np.arange(4)[None, None, :] / 4))
    data = wave * np.array([1.0, 0.5, 0.2])[None, :, None] + rng.standard_normal((T, 3, 4))
    lat, lon = np.array([1.0, 2.0, 3.0]), np.arange(4.0)
    da = xr.DataArray(
        data + offset, dims=("time", "lat", "lon"), coords={"time": t, "lat": lat, "lon": lon}
    )
    w = xr.DataArray(rng.uniform(0.3, 1, (3, 4)), dims=("lat", "lon"), coords={"lat": lat})
    return da, w


def _lagged(da, L, tau, w):
    """The embedded, centered, weighted matrix, formed (the definition)."""
    X = (da * w).values.reshape(T, -1)
    N = T - (L - 1) * tau
    E = np.concatenate([X[j * tau : j * tau + N] for j in range(L)], axis=1)
    return E - E.mean(axis=0)


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("method", ["compressed", "exact"])
@pytest.mark.parametrize(("L", "tau"), [(3, 2), (4, 1)])
def test_matches_xeofs(lazy, method, L, tau):
    from xeofs.single import ExtendedEOF

    da, w = _field()
    k = 3
    ref = ExtendedEOF(n_modes=k, tau=tau, embedding=L, n_pca_modes=None, solver="full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(da * w, dim="time")
    data = da.chunk({"time": 17}) if lazy else da
    seed = 0 if method == "compressed" else None  # a fixed start block
    res = xsvd.extended_eof(data, k, embedding=L, tau=tau, weights=w, method=method, seed=seed)
    np.testing.assert_allclose(res.singular_values, ref.singular_values(), rtol=1e-12)
    np.testing.assert_allclose(res.explained_variance, ref.explained_variance(), rtol=1e-12)
    np.testing.assert_allclose(
        res.explained_variance_ratio, ref.explained_variance_ratio(), rtol=1e-11
    )
    theirs = ref.components().transpose("mode", "embedding", "lat", "lon")
    np.testing.assert_array_equal(res.patterns.lag, theirs.embedding)
    sign = np.sign((res.patterns.values * theirs.values).sum(axis=(1, 2, 3)))
    assert np.all(np.abs(sign) == 1)
    np.testing.assert_allclose(res.patterns, sign[:, None, None, None] * theirs, atol=1e-12)
    scores = ref.scores().transpose("time", "mode").values * sign
    np.testing.assert_array_equal(np.isnan(res.scores.values), np.isnan(scores))
    np.testing.assert_allclose(res.scores.values, scores, atol=1e-11)
    if method == "compressed":
        assert res.errors.S_relative.max() < 1e-6


def test_estimates_bound_the_truth_and_no_centering():
    da, w = _field(1)
    L, tau = 5, 2
    s = np.linalg.svd(_lagged(da, L, tau, w), compute_uv=False)
    for q in (1, 2, 3):
        res = xsvd.extended_eof(da, 4, embedding=L, tau=tau, weights=w, n_power_iter=q, seed=0)
        err = np.abs(res.singular_values.values - s[:4])
        assert np.all(res.errors.S.values >= err)
    np.testing.assert_allclose(res.singular_values, s[:4], rtol=1e-12)
    # without centering: the SVD of the raw lagged matrix, and its total sum of squares
    X = (da * w).values.reshape(T, -1)
    N = T - (L - 1) * tau
    E = np.concatenate([X[j * tau : j * tau + N] for j in range(L)], axis=1)
    raw = np.linalg.svd(E, compute_uv=False)
    with pytest.warns(UserWarning, match="center=False"):  # the means carry the squares
        plain = xsvd.extended_eof(da, 2, embedding=L, tau=tau, weights=w, center=False, seed=0)
    np.testing.assert_allclose(plain.singular_values, raw[:2], rtol=1e-12)
    np.testing.assert_allclose(plain.explained_variance_ratio, raw[:2] ** 2 / (E**2).sum())


def test_nan_features_inputs_untouched_and_errors():
    da, w = _field(2)
    before = da.copy(deep=True)
    xsvd.extended_eof(da, 2, embedding=3, method="exact")
    xsvd.extended_eof(da, 2, embedding=3, seed=0)
    xr.testing.assert_identical(da, before)
    land = da.where(da.lon != 1.0)
    res = xsvd.extended_eof(land.chunk({"time": 20}), 2, embedding=3, tau=2, seed=0)
    ref = xsvd.extended_eof(land.fillna(0.0), 2, embedding=3, tau=2, method="exact")
    assert int(res.patterns.isnull().sum()) == 2 * 3 * 3  # components x lags x lat
    np.testing.assert_allclose(res.singular_values, ref.singular_values, rtol=1e-12)
    np.testing.assert_allclose(res.patterns.fillna(0.0), ref.patterns, atol=1e-12)
    with pytest.raises(ValueError, match="leaves 0 embedded rows"):
        xsvd.extended_eof(da, 2, embedding=31, tau=2)
    with pytest.raises(ValueError, match="tau must be an integer >= 1"):
        xsvd.extended_eof(da, 2, embedding=3, tau=0)
