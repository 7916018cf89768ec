"""Varimax and promax rotation (xsvd.rotation) against xeofs' EOFRotator, and its invariants."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.rotation import promax, varimax


@pytest.fixture(scope="module")
def noaa():
    """eofs' NOAA SST anomalies (NaN over land) and sqrt(cos(lat)) weights."""
    eofs_examples = pytest.importorskip("eofs.examples", reason="needs eofs (pip install eofs)")
    with xr.open_dataset(eofs_examples.example_data_path("sst_ndjfm_anom.nc")) as ds:
        sst = ds["sst"].load()
    return sst, xsvd.coslat_weights(sst)


@pytest.fixture
def field():
    """A small synthetic field with land, for the tests that need no reference package."""
    return xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=5)


@pytest.fixture(params=["numpy", "dask"])
def chunked(request):
    if request.param == "numpy":
        return lambda da: da
    return lambda da: da.chunk({da.dims[0]: 20, da.dims[-1]: 12})


@pytest.fixture(scope="module")
def xeofs_rotated(noaa):
    """xeofs' EOFRotator of 5 of 8 modes, by promax power (1: varimax)."""
    xe = pytest.importorskip("xeofs", reason="needs xeofs (pip install xeofs)")
    sst, w = noaa
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xeofs' own deprecation warnings
        model = xe.single.EOF(n_modes=8, solver="full")
        model.fit(sst, dim="time", weights=w)
        for power in (1, 4):
            rotator = xe.single.EOFRotator(n_modes=5, power=power, rtol=1e-12, max_iter=5000)
            out[power] = rotator.fit(model)
    return out


@pytest.mark.parametrize("power", [1, 4])
def test_rotation_matches_xeofs(noaa, xeofs_rotated, chunked, power):
    """Patterns, scores, variances of xeofs' EOFRotator (power 1 is its varimax)."""
    sst, w = noaa
    n = 5
    rotator = xeofs_rotated[power]
    res = chunked(sst).svd(k=8, dim="time", center=True, weights=w)
    method = "varimax" if power == 1 else "promax"
    rot = res.rotate(n, method=method, power=None if power == 1 else power, rtol=1e-12)
    assert rot.method == method
    theirs = rotator.components().transpose("mode", "latitude", "longitude").values
    ours = rot.V.values
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    # same order (by variance) and, with the same sign rule, the same signs
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    np.testing.assert_allclose(
        rot.explained_variance_ratio, rotator.explained_variance_ratio(), rtol=1e-6
    )
    np.testing.assert_allclose(rot.eigenvalues(), rotator.explained_variance(), rtol=1e-6)
    scores = rotator.scores().transpose("time", "mode").values
    np.testing.assert_allclose(rot.pcs(), scores, atol=1e-6 * np.abs(scores).max())


@pytest.mark.parametrize("method", ["varimax", "promax"])
def test_rotation_invariants(field, chunked, method):
    res = chunked(field).svd(k=6, dim="time", center=True, weights=np.cos(np.deg2rad(field.lat)))
    n = 4
    rot = res.rotate(n, method=method)
    lead = {"component": slice(0, n)}
    # the rotated components rebuild the same rank-n (weighted) field
    before = xr.dot(res.U.isel(lead) * res.S.isel(lead), res.V.isel(lead), dim="component")
    after = xr.dot(rot.U * rot.S, rot.V, dim="component")
    xr.testing.assert_allclose(after, before)
    # loadings: L_rot = (V * S) @ T
    L = (res.V.isel(lead) * res.S.isel(lead)).rename(component="unrotated")
    L_rot = xr.dot(L, rot.rotation_matrix, dim="unrotated")
    xr.testing.assert_allclose(L_rot, (rot.V * rot.S).transpose(*L_rot.dims))
    # sorted by variance; unit-norm patterns with their largest entry positive; land NaN
    evr = rot.explained_variance_ratio.values
    assert np.all(np.diff(evr) <= 0)
    flat = rot.V.values.reshape(n, -1)
    np.testing.assert_allclose(np.nansum(flat**2, axis=1), 1.0)
    big = np.take_along_axis(flat, np.nanargmax(np.abs(flat), axis=1)[:, None], axis=1)
    assert np.all(big > 0)
    assert bool((rot.V.isnull().all("component") == field.isnull().all("time")).all())
    # PCs: unit norm; their correlations are pc_correlation (the identity for varimax)
    U = rot.U.values
    np.testing.assert_allclose((U**2).sum(axis=0), 1.0)
    np.testing.assert_allclose(U.T @ U, rot.pc_correlation.values, atol=1e-10)
    if method == "varimax":
        np.testing.assert_allclose(U.T @ U, np.eye(n), atol=1e-10)
        np.testing.assert_allclose(evr.sum(), res.explained_variance_ratio[:n].sum())
    else:
        assert np.abs(rot.pc_correlation.values - np.eye(n)).max() > 1e-3  # oblique
    # projecting the data gives the rotated PCs back; the statistics work on them
    xr.testing.assert_allclose(rot.project(field), rot.U)
    corr = rot.correlation_maps(field)
    assert corr.dims == ("component", "lat", "lon") and float(abs(corr).max()) <= 1
    np.testing.assert_allclose(rot.pcs(scaling="unit").std("time", ddof=1), 1.0)


def test_rotation_of_a_lazy_result_keeps_the_scores_lazy(field):
    lazy = field.chunk({"time": 20}).svd(k=5, dim="time", center=True, compute=False)
    rot = lazy.rotate(3)
    assert xsvd.core.backend.is_dask(rot.U.data)
    eager = field.svd(k=5, dim="time", center=True).rotate(3)
    xr.testing.assert_allclose(rot.U.compute(), eager.U)
    xr.testing.assert_allclose(rot.V, eager.V)


def test_rotation_options_are_checked(field):
    res = field.svd(k=4, dim="time", center=True)
    with pytest.raises(ValueError, match="between 2 and 4"):
        res.rotate(1)
    with pytest.raises(ValueError, match="between 2 and 4"):
        res.rotate(5)
    with pytest.raises(ValueError, match="varimax takes none"):
        res.rotate(3, power=4)
    with pytest.raises(ValueError, match="'varimax' or 'promax'"):
        res.rotate(3, method="quartimax")
    with pytest.raises(ValueError, match="power must be a number >= 1"):
        res.rotate(3, method="promax", power=0.5)
    with pytest.warns(RuntimeWarning, match="did not converge in max_iter=1"):
        rot = res.rotate(3, max_iter=1)
    assert rot.settings["iterations"] == 1


def test_array_functions():
    rng = np.random.default_rng(0)
    # loadings with a planted simple structure, hidden by a random rotation
    simple = np.zeros((30, 3))
    for j in range(3):
        simple[10 * j : 10 * (j + 1), j] = rng.uniform(0.5, 1.0, 10)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    T, iterations = varimax(simple @ q)
    assert 0 < iterations < 1000
    np.testing.assert_allclose(T.T @ T, np.eye(3), atol=1e-12)
    found = simple @ q @ T
    # varimax finds the simple structure back, up to order and sign of the columns
    match = np.abs(found.T @ simple) / np.outer(
        np.linalg.norm(found, axis=0), np.linalg.norm(simple, axis=0)
    )
    np.testing.assert_allclose(np.sort(match.max(axis=1)), 1.0, atol=1e-8)
    Tp, _ = promax(simple @ q, power=4)
    phi = np.linalg.inv(Tp) @ np.linalg.inv(Tp).T
    np.testing.assert_allclose(np.diag(phi), 1.0)


def test_rotated_plots(field):
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install "xsvd[plot]"')
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rot = field.svd(k=4, dim="time", center=True).rotate(3)
    fig = rot.plot.components(n=3)
    assert len(fig.axes) >= 3
    plt.close("all")
