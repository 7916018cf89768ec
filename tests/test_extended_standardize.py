"""``standardize=True`` in xsvd.extended_eof: each feature over its standard deviation over
all the samples, before the weights and the embedding (the same at every lag), as
xsvd.svd's and xeofs' ``ExtendedEOF(standardize=True)``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

T, L, K = 80, 3, 3


def _matrix(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(T)[:, None]
    wave = np.sin(2 * np.pi * (t / 16 - np.arange(10)[None, :] / 10))
    scales = np.geomspace(0.01, 100.0, 10)[None, :]  # standardizing matters
    return 5.0 + scales * (wave + 0.3 * rng.standard_normal((T, 10)))


def _da(values) -> xr.DataArray:
    return xr.DataArray(values, dims=("time", "x"), coords={"time": np.arange(T)})


def _host(res):
    return (
        np.asarray(xsvd.core.backend.to_numpy(res.S.data)),
        np.asarray(xsvd.core.backend.to_numpy(res.patterns.data)),
    )


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weights"])
def test_equals_the_extended_eof_of_the_standardized_field(backend, weighted):
    a = _matrix()
    w = xr.DataArray(np.linspace(0.5, 1.5, 10), dims="x") if weighted else None
    got = xsvd.extended_eof(_da(backend(a)), K, embedding=L, weights=w, standardize=True, seed=0)
    scaled = _da(a / a.std(axis=0))
    want = xsvd.extended_eof(scaled, K, embedding=L, weights=w, seed=0)
    S, P = _host(got)
    np.testing.assert_allclose(S, want.S.values, rtol=1e-10)
    np.testing.assert_allclose(P, want.patterns.values, atol=1e-10)
    assert got.settings["standardize"] is True
    plain = xsvd.extended_eof(_da(a), K, embedding=L, weights=w, seed=0)
    assert not np.allclose(plain.S.values, want.S.values, rtol=1e-3)  # it changes something


@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_matches_xeofs_standardized(method):
    from xeofs.single import ExtendedEOF

    da = _da(_matrix(1))
    ref = ExtendedEOF(
        n_modes=K, tau=1, embedding=L, n_pca_modes=None, standardize=True, solver="full"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(da, dim="time")
    seed = 0 if method == "compressed" else None
    res = xsvd.extended_eof(da, K, embedding=L, standardize=True, method=method, seed=seed)
    np.testing.assert_allclose(res.singular_values, ref.singular_values(), rtol=1e-9)
    np.testing.assert_allclose(
        res.explained_variance_ratio, ref.explained_variance_ratio(), rtol=1e-9
    )
    theirs = ref.components().transpose("mode", "embedding", "x").values
    sign = np.sign((res.patterns.values * theirs).sum(axis=(1, 2)))
    np.testing.assert_allclose(res.patterns.values, sign[:, None, None] * theirs, atol=1e-9)


def test_constant_feature_gets_weight_zero():
    a = _matrix(2)
    a[:, 4] = 7.0
    res = xsvd.extended_eof(_da(a), K, embedding=L, standardize=True, seed=0)
    assert np.abs(res.patterns.values[:, :, 4]).max() < 1e-12  # weight 0: rounding only
    assert np.isfinite(res.patterns.values).all()


def test_standardize_must_be_a_flag():
    with pytest.raises(TypeError, match="standardize must be True or False"):
        xsvd.extended_eof(_da(_matrix()), K, embedding=L, standardize="yes")
