"""Tests for xsvd.datasets (synthetic example data)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from xsvd import datasets

dask_array = pytest.importorskip("dask.array")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def hudson_fst(g: xr.DataArray) -> float:
    """Mean over population pairs of Hudson's Fst (ratio of sums over variants)."""
    pops = np.unique(g.population.values)
    freqs = []
    n_hap = []
    for pop in pops:
        sub = g.values[:, g.population.values == pop].astype(np.float64)
        freqs.append(sub.mean(axis=1) / 2.0)
        n_hap.append(2 * sub.shape[1])
    estimates = []
    for i in range(len(pops)):
        for j in range(i + 1, len(pops)):
            p1, p2, n1, n2 = freqs[i], freqs[j], n_hap[i], n_hap[j]
            num = (p1 - p2) ** 2 - p1 * (1 - p1) / (n1 - 1) - p2 * (1 - p2) / (n2 - 1)
            den = p1 * (1 - p2) + p2 * (1 - p1)
            estimates.append(num.sum() / den.sum())
    return float(np.mean(estimates))


def ocean_matrix(field: xr.DataArray):
    """(time, ocean cell) matrix, the ocean mask, and cos(lat) per ocean cell."""
    values = np.asarray(field.values).reshape(field.sizes["time"], -1)
    ocean = ~np.isnan(values[0])
    coslat = np.broadcast_to(
        np.cos(np.deg2rad(field.lat.values))[:, None], (field.sizes["lat"], field.sizes["lon"])
    ).ravel()[ocean]
    return values[:, ocean], ocean, coslat


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --------------------------------------------------------------------------
# genotypes
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def geno() -> xr.DataArray:
    return datasets.genotypes(4_000, 301, n_populations=3, fst=0.1, seed=3)


def test_genotypes_structure(geno):
    assert geno.name == "genotype"
    assert geno.dims == ("variants", "samples")
    assert geno.shape == (4_000, 301)
    assert geno.dtype == np.uint8
    assert isinstance(geno.data, np.ndarray)
    assert set(np.unique(geno.values).tolist()) == {0, 1, 2}

    assert geno.variants.dtype == np.int64
    np.testing.assert_array_equal(geno.variants.values, np.arange(4_000))
    assert geno.samples.values[0] == "S0000"
    assert geno.samples.values[-1] == "S0300"
    assert len(set(geno.samples.values.tolist())) == 301
    assert geno.population.dims == ("samples",)
    assert "population" not in geno.indexes

    # contiguous, near-equal blocks in order; the first gets the extra sample
    pops = geno.population.values
    np.testing.assert_array_equal(pops[:101], "POP0")
    np.testing.assert_array_equal(pops[101:201], "POP1")
    np.testing.assert_array_equal(pops[201:], "POP2")

    assert geno.attrs["long_name"] == "alternate allele dosage"
    desc = geno.attrs["description"]
    assert "Balding-Nichols" in desc and "fst=0.1" in desc and "n_populations=3" in desc


def test_genotypes_defaults_and_labels():
    g = datasets.genotypes()
    assert g.shape == (20_000, 600)
    assert g.samples.values[-1] == "S0599"
    assert list(np.unique(g.population.values)) == ["POP0", "POP1", "POP2"]
    # Binomial(2, f) with f ~ p on average, p ~ U(0.05, 0.95): mean dosage ~ 1
    assert abs(float(g.mean()) - 1.0) < 0.05

    wide = datasets.genotypes(5, 12_345, n_populations=12, seed=0)
    assert wide.samples.values[0] == "S00000"
    assert wide.population.values[0] == "POP00"
    assert wide.population.values[-1] == "POP11"


def test_genotypes_deterministic(geno):
    again = datasets.genotypes(4_000, 301, n_populations=3, fst=0.1, seed=3)
    xr.testing.assert_identical(geno, again)
    other = datasets.genotypes(4_000, 301, n_populations=3, fst=0.1, seed=4)
    assert (geno.values != other.values).mean() > 0.3


def test_genotypes_hardy_weinberg(geno):
    # Within a population, heterozygote frequency ~ 2 f (1 - f).
    sub = geno.values[:, geno.population.values == "POP1"]
    f = sub.mean(axis=1) / 2.0
    het_obs = (sub == 1).mean()
    het_exp = (2 * f * (1 - f)).mean()
    assert abs(het_obs - het_exp) / het_exp < 0.03


@pytest.mark.parametrize("fst", [0.05, 0.1, 0.3])
def test_genotypes_fst(fst):
    g = datasets.genotypes(4_000, 300, n_populations=3, fst=fst, seed=11)
    assert abs(hudson_fst(g) - fst) < 0.05 * fst + 0.003


def test_genotypes_population_means_differ(geno):
    freq = geno.groupby("population").mean() / 2.0  # (variants, population)
    spread = freq.std("population").mean()
    assert float(spread) > 0.07  # about 0.1 expected; sampling noise alone gives ~0.03
    # one population only: no structure
    single = datasets.genotypes(3_000, 200, n_populations=1, seed=1)
    halves = single.values[:, :100].mean(axis=1) - single.values[:, 100:].mean(axis=1)
    assert float(np.abs(halves).mean()) < 0.15


def test_genotypes_chunks(geno):
    c = datasets.genotypes(4_000, 301, n_populations=3, fst=0.1, seed=3, chunks=1_000)
    assert isinstance(c.data, dask_array.Array)
    assert c.chunks == ((1_000,) * 4, (301,))
    xr.testing.assert_identical(c.compute(), geno)

    d = datasets.genotypes(
        4_000, 301, n_populations=3, fst=0.1, seed=3, chunks={"variants": 1_500, "samples": 100}
    )
    assert d.chunks == ((1_500, 1_500, 1_000), (100, 100, 100, 1))
    xr.testing.assert_identical(d.compute(), geno)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_variants": 0},
        {"n_samples": 0},
        {"n_populations": 0},
        {"n_samples": 2, "n_populations": 3},
        {"fst": 0.0},
        {"fst": 1.0},
        {"fst": -0.1},
        {"fst": float("nan")},
        {"chunks": 0},
        {"chunks": {"time": 10}},
    ],
)
def test_genotypes_invalid(kwargs):
    args = {"n_variants": 10, "n_samples": 6} | kwargs
    with pytest.raises(ValueError):
        datasets.genotypes(**args)


def test_genotypes_bad_types():
    with pytest.raises(TypeError):
        datasets.genotypes(10.5, 6)
    with pytest.raises(TypeError):
        datasets.genotypes(10, 6, chunks="auto")


# --------------------------------------------------------------------------
# climate_field
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def climate():
    return datasets.climate_field(return_modes=True)


def test_climate_structure(climate):
    sst, modes = climate
    assert sst.name == "sst"
    assert sst.dims == ("time", "lat", "lon")
    assert sst.shape == (240, 36, 72)
    assert sst.dtype == np.float64
    assert isinstance(sst.data, np.ndarray)
    assert sst.attrs["units"] == "degC"
    assert sst.attrs["long_name"] == "sea surface temperature anomaly"

    assert sst.time.dtype == np.dtype("datetime64[ns]")
    assert sst.time.values[0] == np.datetime64("2000-01-01")
    assert sst.time.values[13] == np.datetime64("2001-02-01")
    assert sst.time.values[-1] == np.datetime64("2019-12-01")
    assert sst.month.dims == ("time",)
    assert "month" not in sst.indexes
    np.testing.assert_array_equal(sst.month.values, np.tile(np.arange(1, 13), 20))
    np.testing.assert_array_equal(sst.month.values, sst.time.dt.month.values)

    np.testing.assert_allclose(sst.lat.values, np.arange(-87.5, 90, 5.0))
    np.testing.assert_allclose(sst.lon.values, np.arange(2.5, 360, 5.0))
    assert sst.lat.attrs["units"] == "degrees_north"
    assert sst.lat.attrs["standard_name"] == "latitude"
    assert sst.lon.attrs["units"] == "degrees_east"
    assert sst.lon.attrs["standard_name"] == "longitude"

    assert modes.patterns.dims == ("mode", "lat", "lon")
    assert modes.series.dims == ("time", "mode")
    assert modes.amplitude.dims == ("mode",)
    np.testing.assert_array_equal(modes.amplitude.values, [3.0, 2.0, 1.2])


def test_climate_odd_grid_coords():
    sst = datasets.climate_field(13, 7, 9, n_modes=2)
    np.testing.assert_allclose(np.diff(sst.lat.values), 180 / 7)
    np.testing.assert_allclose(sst.lat.values[[0, -1]], [-90 + 90 / 7, 90 - 90 / 7])
    np.testing.assert_allclose(sst.lon.values[[0, -1]], [20.0, 340.0])
    assert str(sst.time.values[12])[:10] == "2001-01-01"


def test_climate_land_mask(climate):
    sst, modes = climate
    isnan = sst.isnull().values
    land = isnan[0]
    assert (isnan == land).all(), "land must be NaN at every time step, ocean never"
    assert 0.20 < land.mean() < 0.45
    assert np.isfinite(sst.values[:, ~land]).all()
    np.testing.assert_array_equal(
        np.isnan(modes.patterns.values), np.broadcast_to(land, (3,) + land.shape)
    )
    # the mask is a fixed geography: same for any seed and for noise-free fields
    other = datasets.climate_field(seed=99, noise=0.0)
    np.testing.assert_array_equal(other.isnull().values[5], land)
    # roughly the same land fraction on other grids
    for n_lat, n_lon in [(18, 36), (90, 180)]:
        frac = float(datasets.climate_field(2, n_lat, n_lon, n_modes=1).isnull()[0].mean())
        assert 0.20 < frac < 0.45


def test_climate_patterns_orthonormal(climate):
    sst, modes = climate
    _, ocean, coslat = ocean_matrix(sst)
    p = modes.patterns.values.reshape(3, -1)[:, ocean]
    w = coslat / coslat.sum()
    np.testing.assert_allclose((p * w) @ p.T, np.eye(3), atol=1e-10)

    s = modes.series.values
    np.testing.assert_allclose(s.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(s.std(axis=0), 1.0, atol=1e-10)
    np.testing.assert_allclose(s.T @ s / s.shape[0], np.eye(3), atol=1e-10)


def test_climate_series_shapes(climate):
    _, modes = climate
    s = modes.series.values
    month = modes.month.values
    # mode 0: seasonal -- the same value every 12 months
    np.testing.assert_allclose(s[12:, 0], s[:-12, 0], atol=1e-10)
    assert abs(np.corrcoef(s[:, 0], np.cos(2 * np.pi * (month - 8) / 12))[0, 1]) > 0.99
    # mode 1: ~5-year oscillation, i.e. correlated with its 60-month lag, not the seasonal
    assert np.corrcoef(s[60:, 1], s[:-60, 1])[0, 1] > 0.9
    assert np.corrcoef(s[30:, 1], s[:-30, 1])[0, 1] < -0.8
    # mode 2: trend
    assert np.corrcoef(s[:, 2], np.arange(s.shape[0]))[0, 1] > 0.9


def test_climate_noise_free_is_planted():
    sst, modes = datasets.climate_field(120, 18, 36, n_modes=4, noise=0.0, return_modes=True)
    recon = (modes.amplitude * modes.series * modes.patterns).sum("mode")
    recon = recon.where(modes.patterns.notnull().all("mode"))
    xr.testing.assert_allclose(recon.transpose(*sst.dims), sst.drop_attrs(), atol=1e-10)

    x, _, coslat = ocean_matrix(sst)
    sv = np.linalg.svd(x * np.sqrt(coslat), compute_uv=False)
    expected = modes.amplitude.values * np.sqrt(120 * coslat.sum())
    np.testing.assert_allclose(sv[:4], expected, rtol=1e-8)
    assert sv[4] < 1e-8 * sv[0]


def test_climate_svd_recovers_modes(climate):
    sst, modes = climate
    x, ocean, coslat = ocean_matrix(sst)
    sqrt_c = np.sqrt(coslat)
    u, s, vt = np.linalg.svd(x * sqrt_c, full_matrices=False)
    p = modes.patterns.values.reshape(3, -1)[:, ocean]
    for k in range(3):
        assert cosine(vt[k], p[k] * sqrt_c) > 0.95
        assert cosine(u[:, k], modes.series.values[:, k]) > 0.95
    # planted modes dominate: clear gap after the third singular value
    assert s[2] > 3 * s[3]
    np.testing.assert_allclose(s[:3] / s[0], [1.0, 2 / 3, 0.4], rtol=0.05)


def test_climate_noise_level():
    sst, modes = datasets.climate_field(120, 18, 36, noise=0.5, return_modes=True, seed=2)
    signal = (modes.amplitude * modes.series * modes.patterns).sum("mode")
    resid = (sst - signal).values
    resid = resid[np.isfinite(resid)]
    assert abs(resid.std() - 0.5) < 0.02
    assert abs(resid.mean()) < 0.02


def test_climate_deterministic(climate):
    sst, modes = climate
    sst2, modes2 = datasets.climate_field(return_modes=True)
    xr.testing.assert_identical(sst, sst2)
    xr.testing.assert_identical(modes, modes2)
    other = datasets.climate_field(seed=1)
    assert not np.allclose(sst.values, other.values, equal_nan=True)
    # seed changes only the noise (and random modes), not the planted modes 0-2
    _, modes3 = datasets.climate_field(seed=1, return_modes=True)
    xr.testing.assert_identical(modes, modes3)


def test_climate_many_modes():
    sst, modes = datasets.climate_field(60, 18, 36, n_modes=12, noise=0.0, return_modes=True)
    _, ocean, coslat = ocean_matrix(sst)
    p = modes.patterns.values.reshape(12, -1)[:, ocean]
    w = coslat / coslat.sum()
    np.testing.assert_allclose((p * w) @ p.T, np.eye(12), atol=1e-8)
    s = modes.series.values
    np.testing.assert_allclose(s.T @ s / s.shape[0], np.eye(12), atol=1e-8)
    amp = modes.amplitude.values
    assert (np.diff(amp) < 0).all()
    _, other = datasets.climate_field(60, 18, 36, n_modes=12, seed=5, return_modes=True)
    assert not np.allclose(other.patterns.values[5], modes.patterns.values[5], equal_nan=True)


def test_climate_zero_modes():
    sst, modes = datasets.climate_field(24, 9, 18, n_modes=0, noise=1.0, return_modes=True)
    assert modes.sizes["mode"] == 0
    assert modes.patterns.shape == (0, 9, 18)
    vals = sst.values[np.isfinite(sst.values)]
    assert abs(vals.std() - 1.0) < 0.1


def test_climate_chunks(climate):
    sst, _ = climate
    c = datasets.climate_field(chunks=60)
    assert isinstance(c.data, dask_array.Array)
    assert c.chunks == ((60,) * 4, (36,), (72,))
    xr.testing.assert_identical(c.compute(), sst)

    d, modes = datasets.climate_field(chunks={"lat": 12}, return_modes=True)
    assert d.chunks == ((240,), (12, 12, 12), (72,))
    assert isinstance(modes.patterns.data, np.ndarray)
    xr.testing.assert_identical(d.compute(), sst)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_time": 0},
        {"n_lat": 0},
        {"n_lon": -3},
        {"n_modes": -1},
        {"noise": -0.1},
        {"noise": float("inf")},
        {"n_time": 3, "n_modes": 3},
        {"n_time": 50, "n_lat": 1, "n_lon": 2, "n_modes": 5},
        {"chunks": -5},
        {"chunks": {"variants": 10}},
    ],
)
def test_climate_invalid(kwargs):
    args = {"n_time": 24, "n_lat": 9, "n_lon": 18} | kwargs
    with pytest.raises(ValueError):
        datasets.climate_field(**args)


def test_climate_bad_types():
    with pytest.raises(TypeError):
        datasets.climate_field(n_modes=True)
    with pytest.raises(TypeError):
        datasets.climate_field(noise="loud")


def test_public_names():
    assert datasets.__all__ == ["genotypes", "climate_field"]
