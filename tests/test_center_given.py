"""``center=`` given values: subtracted in place of the data's means, on every backend.

``B = (A - 1 c^T) diag(w)`` with ``c`` given (not read from the data); with
``missing="mean"`` a missing value stands for ``c``. Checked against NumPy's
SVD of that matrix, made by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import raise_if_dask_computes

import xsvd
from xsvd.linalg import exact_svd, randomized_svd


def _reference(a, c, w, fill: bool):
    """NumPy: the matrix the options describe, its singular values and vectors."""
    a = np.asarray(a, dtype=np.float64)
    missing = np.isnan(a)
    if not fill:  # missing="error": features NaN at every sample are zeros, and stay zero
        c = np.where(missing.all(axis=0), 0.0, c)
    b = (np.where(missing, c if fill else 0.0, a) - c) * w
    U, S, Vt = np.linalg.svd(b, full_matrices=False)
    return U, S, Vt.T, float((b * b).sum()), c


def _data(rng, m, n, offset=0.0, missing=0.0, land=()):
    a = rng.standard_normal((m, n)) @ np.diag(np.linspace(3, 0.5, n)) + offset
    a[rng.random(a.shape) < missing] = np.nan
    a[:, list(land)] = np.nan
    return a


def _check(backend, d, a, c, w, fill, k, rtol=1e-9):
    U0, S0, V0, ss0, mean0 = _reference(a, c, w, fill)
    U, S, V, mean, ss = backend.host(d.U, d.S, d.V, d.mean, d.total_ss)
    np.testing.assert_allclose(S, S0[:k], rtol=rtol)
    kept = ~np.isnan(V[:, 0])
    np.testing.assert_allclose(np.abs(U), np.abs(U0[:, :k]), atol=1e3 * rtol)
    np.testing.assert_allclose(np.abs(V[kept]), np.abs(V0[kept, :k]), atol=1e3 * rtol)
    np.testing.assert_allclose(mean, mean0, rtol=1e-15)
    np.testing.assert_allclose(float(ss), ss0, rtol=1e3 * rtol)
    assert d.settings["center"] == "given"


@pytest.mark.parametrize("shape", [(90, 24), (24, 90)], ids=["tall", "wide"])
@pytest.mark.parametrize("solver", [randomized_svd, exact_svd])
def test_given_center_fills_missing_values(backend, shape, solver):
    """missing="mean": a missing value stands for the value given (PLINK's meanimpute with
    founder frequencies), and the values given, not the data's means, are removed."""
    rng = np.random.default_rng(0)
    a = _data(rng, *shape, offset=2.0, missing=0.05)
    c = 2.0 + 0.3 * rng.standard_normal(shape[1])  # near, not at, the data's means
    w = np.linspace(0.5, 1.5, shape[1])
    kw = {"seed": 1, "n_power_iter": 6} if solver is randomized_svd else {}
    d = solver(backend(a), 4, center=c, weights=w, missing="mean", compute=True, **kw)
    _check(backend, d, a, c, w, True, 4)


@pytest.mark.parametrize("shape", [(90, 24), (24, 90)], ids=["tall", "wide"])
@pytest.mark.parametrize("solver", [randomized_svd, exact_svd])
def test_given_center_leaves_all_nan_features_out(backend, shape, solver):
    """missing="error": features NaN at every sample (land) stay out (V is NaN there),
    whatever value is given for them."""
    rng = np.random.default_rng(1)
    a = _data(rng, *shape, offset=-1.0, land=(2, 5))
    c = -1.0 + 0.3 * rng.standard_normal(shape[1])
    kw = {"seed": 2, "n_power_iter": 6} if solver is randomized_svd else {}
    d = solver(backend(a), 3, center=c, compute=True, **kw)
    V = backend.host(d.V)
    assert np.isnan(V[[2, 5]]).all() and not np.isnan(V[[0, 1, 3]]).any()
    _check(backend, d, a, c, np.ones(shape[1]), False, 3)


def test_given_center_moves_to_the_data_and_takes_a_device_vector(backend):
    """The values may live on another backend than the data (a host vector for device
    data, or the data's own kind): they are moved to where the data are."""
    rng = np.random.default_rng(2)
    a = _data(rng, 60, 20, offset=1.0)
    c = np.full(20, 1.0)
    given = c if backend.lazy else backend(c[None, :])[0, :]
    d = randomized_svd(backend(a), 3, center=given, seed=0, compute=True)
    _check(backend, d, a, c, np.ones(20), False, 3)


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("stripes", ["samples", "features"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_given_center_far_from_zero_keeps_its_accuracy(stripes, dtype, lazy):
    """Data far from zero (kelvin), multiplied in float32: the reference read less them
    (``stripe.offset_reference``, ``far_means``; on Dask from the first stripe's rows)
    keeps working with values given."""
    import dask.array as da

    rng = np.random.default_rng(3)
    a = _data(rng, 200, 40, offset=290.0) * 0.01 + 290.0
    a = a if stripes == "samples" else np.ascontiguousarray(a.T)
    c = a.mean(axis=0) + 0.002 * rng.standard_normal(a.shape[1])
    x = a.astype(dtype)
    if lazy:
        x = da.from_array(x, chunks=(50, -1) if stripes == "samples" else (-1, 10))
    d = randomized_svd(x, 3, center=c, seed=4, n_power_iter=6, compute=True)
    assert d.settings["stripes"] == stripes
    _, S0, V0, ss0, _ = _reference(a.astype(dtype), c, 1.0, False)
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(d.S, S0[:3], rtol=rtol)
    np.testing.assert_allclose(np.abs(d.V), np.abs(V0[:, :3]), atol=10 * rtol)
    np.testing.assert_allclose(float(d.total_ss), ss0, rtol=rtol)


@pytest.mark.parametrize("chunks", [(50, 30), (200, 10)], ids=["samples", "features"])
@pytest.mark.parametrize("solver", [randomized_svd, exact_svd])
def test_given_center_in_one_lazy_graph(chunks, solver):
    """compute=False: one graph, nothing computed while it is built (the values given
    need no read, and the first pass waits for none)."""
    import dask
    import dask.array as da

    rng = np.random.default_rng(8)
    a = _data(rng, 200, 30, offset=1.0, missing=0.05)
    c = np.full(30, 1.0)
    kw = {"seed": 0, "n_power_iter": 6} if solver is randomized_svd else {}
    with raise_if_dask_computes():
        d = solver(da.from_array(a, chunks=chunks), 3, center=c, missing="mean", **kw)
    S, mean = dask.compute(d.S, d.mean)
    _, S0, _, _, _ = _reference(a, c, 1.0, True)
    np.testing.assert_allclose(S, S0[:3], rtol=1e-9)
    np.testing.assert_array_equal(mean, c)


def test_given_center_takes_no_read_for_the_means():
    """Stripes of samples with missing="mean" read the data's means first (one more
    read); given values take their place, so that read is not made."""
    import dask.array as da

    rng = np.random.default_rng(4)
    a = da.from_array(_data(rng, 300, 80, missing=0.05), chunks=(100, 80))
    kw = dict(seed=0, n_power_iter=3, missing="mean", compute=True)
    means = randomized_svd(a, 3, center=True, **kw)
    given = randomized_svd(a, 3, center=np.zeros(80), **kw)
    assert means.settings["stripes"] == given.settings["stripes"] == "samples"
    assert given.settings["stopped"] == "n_power_iter"
    assert given.settings["passes"] == means.settings["passes"] - 1 == 4


def test_given_center_of_rescaled_data():
    """Data too small for float32 products are read again rescaled (powers of two per
    feature): the values given are rescaled with them."""
    rng = np.random.default_rng(5)
    x, tiny = _data(rng, 200, 60, offset=1.0), 2.0**-70  # float32: read again, rescaled
    c = np.full(60, 1.0)
    kw = dict(seed=0, n_power_iter=3, dtype="float32")
    d = randomized_svd(x * tiny, 3, center=c * tiny, **kw)
    plain = randomized_svd(x, 3, center=c, **kw)
    assert d.settings["passes"] == plain.settings["passes"] + 1  # the first, rescaled
    np.testing.assert_allclose(d.S / tiny, plain.S, rtol=1e-6)
    np.testing.assert_allclose(np.abs(d.V), np.abs(plain.V), atol=1e-5)
    _, S0, _, ss0, _ = _reference(x, c, 1.0, False)
    np.testing.assert_allclose(np.asarray(d.mean), c * tiny, rtol=1e-15)
    np.testing.assert_allclose(float(d.total_ss) / tiny**2, ss0, rtol=1e-5)


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (np.zeros(7), ValueError, "one value per feature"),
        (np.zeros((2, 8)), ValueError, "one value per feature"),
        (np.array([np.nan] + [0.0] * 7), ValueError, "NaN or infinite .*finite value"),
        (np.array(list("abcdefgh")), TypeError, "not numbers"),
        ("yes", TypeError, "values to subtract.*A string is not read as a yes or no"),
        (0.5, TypeError, "values to subtract"),
    ],
)
def test_core_refuses_centers_that_are_not_one_number_per_feature(values, error, match):
    a = np.random.default_rng(6).standard_normal((20, 8))
    for solver in (randomized_svd, exact_svd):
        with pytest.raises(error, match=match):
            solver(a, 2, center=values)


# ------------------------------------------------------------------- labeled


def _field(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, 3, 5)) + 10.0
    coords = {"time": np.arange(40), "lat": [-10.0, 0.0, 10.0], "lon": np.arange(5) * 60.0}
    return xr.DataArray(x, dims=("time", "lat", "lon"), coords=coords, name="sst")


def test_labeled_center_matched_by_label_and_broadcast(tmp_path):
    """A DataArray over some of the feature dims, its labels in another order: matched by
    label, broadcast over the others; res.mean is it, and the result saves and reopens."""
    da = _field()
    per_lat = xr.DataArray([10.2, 9.9, 10.1], dims="lat", coords={"lat": [10.0, 0.0, -10.0]})
    res = da.svd.compressed(k=3, dim="time", center=per_lat, seed=0)
    by_hand = da - per_lat
    ref = by_hand.svd.exact(k=3, dim="time")
    np.testing.assert_allclose(res.S.values, ref.S.values, rtol=1e-9)
    xr.testing.assert_allclose(res.mean, per_lat.broadcast_like(da.isel(time=0)).drop_vars([]))
    assert res.settings["center"] == "given" and res.center
    assert "center='given'" in repr(res)
    exact = da.svd.exact(k=3, dim="time", center=per_lat)
    np.testing.assert_allclose(exact.S.values, ref.S.values, rtol=1e-12)
    res.to_zarr(tmp_path / "r.zarr")
    back = xsvd.open_result(tmp_path / "r.zarr")
    assert back.settings == res.settings
    xr.testing.assert_identical(back.mean, res.mean)
    xr.testing.assert_allclose(back.reconstruct(), res.reconstruct())


def test_labeled_center_fills_missing_and_projects():
    da = _field(1)
    da[3, 1, 2] = np.nan
    c = da.mean("time") + 0.1
    res = da.svd(k=2, dim="time", center=c, missing="mean", method="compressed", seed=0)
    filled = da.fillna(c) - c
    ref = filled.svd.exact(k=2, dim="time")
    np.testing.assert_allclose(res.S.values, ref.S.values, rtol=1e-9)
    scores = res.project(da.fillna(c))
    np.testing.assert_allclose(np.abs(scores.values), np.abs(res.U.values), atol=1e-9)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda da: da.isel(time=0).values, TypeError, "must be an xarray.DataArray"),
        (lambda da: da.mean("lat"), ValueError, "not feature dimensions"),
        (lambda da: da.isel(time=0, lon=slice(0, 4)), ValueError, "no value for 1 of"),
        (
            lambda da: da.isel(time=0).drop_vars("lon").isel(lon=slice(0, 4)),
            ValueError,
            "4 values along 'lon'",
        ),
        (lambda da: da.isel(time=0).where(da.lat > 0), ValueError, "NaN or infinite at 10 of"),
        (lambda da: da.isel(time=0).astype(str), TypeError, "real numbers"),
        (lambda da: {"t": da.mean("time")}, TypeError, r"center=center\['t'\]"),
    ],
    ids=["numpy", "sample-dim", "missing-label", "wrong-size", "nan", "strings", "per-variable"],
)
def test_labeled_center_refusals_say_how_to_fix(make, error, match):
    da = _field()
    with pytest.raises(error, match=match):
        da.svd.compressed(k=2, dim="time", center=make(da), seed=0)


@pytest.mark.parametrize("solver", ["compressed", "exact"])
def test_given_center_of_packed_genotypes(backend, solver):
    """Packed genotypes (2 bits a call) on every backend, the founders' frequencies as the
    center, missing calls filled with them: the PCA of the matrix made by hand."""
    rng = np.random.default_rng(7)
    g = rng.integers(0, 3, (50, 36)).astype(np.float64)  # variants x samples
    g[rng.random(g.shape) < 0.04] = np.nan
    founders = np.arange(36) < 24
    p = np.nanmean(g[:, founders], axis=1) / 2
    gt = xr.DataArray(g, dims=("variants", "samples"))
    packed = xsvd.pack_genotypes(gt.copy(data=backend(g)))
    center = xr.DataArray(2 * p, dims="variants")
    kw = dict(dim="samples", center=center, missing="mean")
    if solver == "compressed":
        res = packed.svd.compressed(k=3, seed=0, n_power_iter=8, **kw)
    else:
        res = packed.svd.exact(k=3, **kw)
    _, S0, V0, ss0, _ = _reference(g.T, 2 * p, 1.0, True)
    S, V = backend.host(res.S.data, res.V.transpose("variants", "component").data)
    np.testing.assert_allclose(S, S0[:3], rtol=1e-6)
    np.testing.assert_allclose(np.abs(V), np.abs(V0[:, :3]), atol=1e-5)
    np.testing.assert_allclose(backend.host(res.mean.data), 2 * p, rtol=1e-15)
    assert res.settings["center"] == "given"
