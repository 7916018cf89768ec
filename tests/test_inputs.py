"""Every input either gives the right decomposition or a clear error (no silent wrong answers).

Each test compares with ``numpy.linalg.svd`` of the matrix the input stands
for, on every backend (``backend`` fixture: NumPy, Dask in both stripe
orientations, CuPy where a GPU is present).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import matrix_with_spectrum

import xsvd
from xsvd.linalg import exact_svd, randomized_svd

SOLVERS = {
    "exact": lambda x, **kw: exact_svd(x, 4, **kw),
    "compressed": lambda x, **kw: randomized_svd(x, 4, seed=0, compute=True, **kw),
}


def _singular_values(b, k=4):
    return np.linalg.svd(b, compute_uv=False)[:k]


# ------------------------------------------------- 1. negative values are values


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_missing_mean_keeps_negative_floats_and_fills_only_nan(backend, solver):
    a = matrix_with_spectrum(np.r_[9.0, 5, 3, 2, np.full(26, 0.1)], 120, 30, seed=1)
    assert (a < 0).mean() > 0.4  # anomalies: negative about half the time
    a[[3, 50, 77], [4, 11, 29]] = np.nan
    filled = np.where(np.isnan(a), np.nanmean(a, axis=0), a)
    want = _singular_values(filled - filled.mean(axis=0))
    d = SOLVERS[solver](backend(a), center=True, missing="mean")
    np.testing.assert_allclose(backend.host(d.S), want, rtol=1e-8)


def test_negative_codes_are_missing_in_integers_and_in_floats_when_asked(backend):
    g = np.random.default_rng(2).integers(0, 3, (150, 40)).astype(np.int8)
    g[np.random.default_rng(3).random(g.shape) < 0.05] = -1
    as_nan = np.where(g < 0, np.nan, g.astype(np.float64))
    filled = np.where(np.isnan(as_nan), np.nanmean(as_nan, axis=0), as_nan)
    want = _singular_values(filled - filled.mean(axis=0))
    kw = dict(k=4, center=True, missing="mean", seed=0, dtype="float64", compute=True)
    for x, extra in [(g, {}), (g.astype(np.float64), {"negative_missing": True})]:
        d = randomized_svd(backend(x), n_oversamples=36, **kw, **extra)
        np.testing.assert_allclose(backend.host(d.S), want, rtol=1e-6)
    with pytest.raises(ValueError, match="negative_missing=True.*missing='mean'"):
        randomized_svd(backend(g), 3, negative_missing=True)


def test_labeled_anomalies_with_a_few_nan_keep_their_leading_mode():
    sst = xsvd.datasets.climate_field(n_time=120, n_lat=18, n_lon=36, seed=1)
    anomalies = sst - sst.mean("time")
    gappy = anomalies.copy()
    ocean = np.argwhere(~np.isnan(gappy.values[0]))
    for t, (i, j) in zip([5, 40, 90], ocean[[10, 200, 400]], strict=True):
        gappy.values[t, i, j] = np.nan
    full = anomalies.svd.exact(dim="time", k=1)
    for obj in (gappy, gappy.chunk(time=40)):
        res = obj.svd.exact(dim="time", k=1, missing="mean")
        np.testing.assert_allclose(res.S.values, full.S.values, rtol=0.02)


# ----------------------------------------------------- 2. weights align by label


def _field():
    nt, ny, nx = 50, 6, 8
    a = matrix_with_spectrum(np.r_[9.0, 7, 5, 3, np.full(40, 0.1)], nt, ny * nx, seed=4)
    return xr.DataArray(
        a.reshape(nt, ny, nx),
        dims=("time", "lat", "lon"),
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(-50, 50, ny),
            "lon": np.arange(nx) * 45.0,
        },
    )


@pytest.mark.parametrize("chunks", [None, {"time": 10}])
def test_weights_are_aligned_by_label_or_refused(chunks):
    field = _field()
    obj = field if chunks is None else field.chunk(chunks)
    w = xr.DataArray(np.linspace(0.5, 2.0, 6), dims="lat", coords={"lat": field.lat})
    want = obj.svd.exact(dim="time", weights=w).S.values
    # the same weights in another order: aligned by label, the same answer
    shuffled = w.isel(lat=[3, 0, 5, 1, 4, 2])
    np.testing.assert_allclose(obj.svd.exact(dim="time", weights=shuffled).S.values, want)
    # weights on a larger grid: the data's labels are picked out
    wide = xr.concat([w, w.isel(lat=[0]).assign_coords(lat=[99.0])], dim="lat")
    np.testing.assert_allclose(obj.svd.exact(dim="time", weights=wide).S.values, want)
    # shifted labels: an error naming the coordinate, never a match by position
    shifted = w.assign_coords(lat=w.lat + 1.0)
    for method in ("exact", "compressed"):
        with pytest.raises(ValueError, match=r"coordinate 'lat' does not match.*reindex"):
            obj.svd(dim="time", k=3, weights=shifted, method=method)


# ---------------------------------------------------------- 3. any magnitude


@pytest.mark.parametrize(
    "dtype, magnitude",
    [
        ("float32", 1e-30),
        ("float32", 1e30),
        ("float64", 1e-200),
        ("float64", 1e200),
        ("int64", 1e17),
    ],
)
def test_compressed_gets_extreme_magnitudes_right(backend, dtype, magnitude):
    base = matrix_with_spectrum(np.r_[9.0, 6, 4, 2, np.full(36, 0.5)], 300, 40, seed=5)
    a = (base * magnitude).astype(dtype)
    want = _singular_values(a.astype(np.float64), 4)
    d = randomized_svd(backend(a), 4, seed=0, compute=True, n_oversamples=36)
    rtol = 1e-5 if dtype != "float64" else 1e-10
    np.testing.assert_allclose(backend.host(d.S), want, rtol=rtol)
    U, V = backend.host(d.U, d.V)
    assert np.isfinite(U).all() and np.isfinite(V).all()
    plain = randomized_svd(backend(base.astype(dtype)), 4, seed=0, n_oversamples=36)
    assert d.settings["passes"] == plain.settings["passes"] + 1  # the first pass again, rescaled
    e = exact_svd(backend(a), 4)
    np.testing.assert_allclose(backend.host(e.S), want, rtol=rtol)


def test_weights_of_extreme_magnitude(backend):
    base = matrix_with_spectrum(np.r_[9.0, 6, 4, 2, np.full(36, 0.5)], 300, 40, seed=6)
    w = np.random.default_rng(7).uniform(0.5, 2.0, 40) * 1e30
    want = _singular_values(base * w)
    d = randomized_svd(backend(base.astype(np.float32)), 4, weights=w, seed=0, n_oversamples=36)
    np.testing.assert_allclose(backend.host(d.S), want, rtol=1e-5)


def test_normal_magnitudes_are_not_read_again():
    a = matrix_with_spectrum(np.r_[9.0, 6, 4, 2, np.full(36, 0.5)], 300, 40, seed=5) * 1e5
    d = randomized_svd(a.astype(np.float32), 4, seed=0, n_power_iter=2, krylov=False)
    assert d.settings["passes"] == 3  # q + 1: no extra read


def test_one_lazy_graph_refuses_what_it_cannot_rescale():
    import dask.array as da

    a = matrix_with_spectrum(np.r_[9.0, 6, 4], 100, 30, seed=5).astype(np.float32) * 1e30
    d = randomized_svd(da.from_array(a, chunks=(25, 30)), 2, seed=0, compute=False)
    with pytest.raises(ValueError, match=r"too large to multiply in float32.*compute=True"):
        d.S.compute()


# ------------------------------------------------------------ 4. infinite values


@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinite_values_are_an_error_naming_where(backend, solver, value):
    a = np.random.default_rng(8).standard_normal((60, 12))
    a[17, 9] = value
    with pytest.raises(xsvd.InfiniteValueError, match=r"infinite values .* feature index 9\b"):
        d = SOLVERS[solver](backend(a))
        backend.host(d.S, d.U, d.V)


def test_infinite_values_named_by_coordinates():
    field = _field()
    field.values[3, 2, 5] = np.inf
    for obj in (field, field.chunk(time=10), field.chunk(lon=4)):
        for method in ("exact", "compressed"):
            with pytest.raises(xsvd.InfiniteValueError, match=r"\(lat=-10\.0, lon=225\.0\)"):
                obj.svd(dim="time", k=2, method=method, seed=0 if method == "compressed" else None)


# --------------------------------------------------------------- 7. smaller ones


def test_empty_data_is_a_clear_error():
    field = _field()
    for obj in (
        field.isel(time=slice(0, 0)),
        field.isel(lon=[]),
        field.chunk(time=10).isel(lat=[]),
    ):
        with pytest.raises(ValueError, match=r"empty: dimension '\w+' has size 0"):
            obj.svd(dim="time", k=2)
    for a in (np.ones((0, 5)), np.ones((5, 0))):
        for solver in (exact_svd, lambda x: randomized_svd(x, 1)):
            with pytest.raises(ValueError, match="The data are empty"):
                solver(a)


def test_a_dimension_named_component_is_a_clear_error():
    field = _field().rename(lon="component")
    with pytest.raises(ValueError, match=r"dimension named 'component'.*rename"):
        field.svd(dim="time", k=2)


def test_center_with_one_sample_is_a_clear_error():
    field = _field().isel(time=[0])
    for method in ("exact", "compressed"):
        with pytest.raises(ValueError, match=r"single sample.*center=False"):
            field.svd(dim="time", k=1, center=True, method=method)
    assert field.svd(dim="time", k=1).S.size == 1  # without centering it is fine


def test_fam_sex_as_letters(tmp_path):
    gt = xsvd.datasets.genotypes(n_variants=200, n_samples=6, seed=1)
    xsvd.write_plink(gt, tmp_path / "t")
    lines = (tmp_path / "t.fam").read_text().splitlines()
    sexes = ["M", "F", "m", "2", "0", "U"]
    rows = [line.split("\t") for line in lines]
    for row, sex in zip(rows, sexes, strict=True):
        row[4] = sex
    (tmp_path / "t.fam").write_text("\n".join("\t".join(r) for r in rows) + "\n")
    bed = xsvd.open_plink(tmp_path / "t.bed")
    assert bed.sex.values.tolist() == [1, 2, 1, 2, 0, 0]
    np.testing.assert_array_equal(bed.values, gt.values)
