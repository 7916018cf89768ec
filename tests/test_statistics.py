"""EOF statistics (xsvd.statistics) against the eofs and xeofs packages, on NumPy and Dask.

eofs (``eofs.standard.Eof``) is the reference for the scalings of PCs and
EOFs, the eigenvalues, North et al.'s typical errors and the correlation and
covariance maps; xeofs (``EOF(standardize=True)``) for standardized EOFs. The
comparisons with eofs use eofs' NOAA SST anomalies (time 50 x latitude 18 x
longitude 30, NaN over land), the other tests xsvd's synthetic SST field, both
with the usual sqrt(cos(lat)) weights.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from conftest import gpu_available, raise_if_dask_computes

import xsvd

K = 8  # components compared (the trailing ones of a full SVD are noise, their signs arbitrary)


# ------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def noaa():
    """eofs' NOAA SST anomalies, area weights, eofs' solver and xsvd's exact result."""
    eofs_examples = pytest.importorskip("eofs.examples", reason="needs eofs (pip install eofs)")
    from eofs.standard import Eof

    path = eofs_examples.example_data_path("sst_ndjfm_anom.nc")
    with xr.open_dataset(path) as ds:
        sst = ds["sst"].load()
    sst.attrs["units"] = "degC"
    w = xsvd.coslat_weights(sst)
    solver = Eof(sst.values, weights=w.values[:, None])
    res = sst.svd(dim="time", center=True, weights=w)
    return sst, w, solver, res


@pytest.fixture(scope="module")
def synth():
    """xsvd's synthetic SST field (time 50, lat 12, lon 24, NaN over land), for the tests that
    need no reference package: the same tuple as ``noaa`` (no solver)."""
    sst = xsvd.datasets.climate_field(n_time=50, n_lat=12, n_lon=24, seed=7)
    w = xsvd.coslat_weights(sst)
    return sst, w, None, sst.svd(dim="time", center=True, weights=w)


@pytest.fixture(params=["numpy", "dask"])
def chunked(request):
    """Puts a DataArray on the backend of the test (Dask: chunks along time and longitude)."""
    if request.param == "numpy":
        return lambda da: da
    return lambda da: da.chunk({da.dims[0]: 20, da.dims[-1]: 12})


def _signs(res, solver) -> np.ndarray:
    """Signs that turn xsvd's first K EOFs into eofs' (the two packages' sign rules differ)."""
    ours = np.nan_to_num(res.V.values[:K].reshape(K, -1))
    theirs = np.nan_to_num(solver.eofs(neofs=K).reshape(K, -1))
    signs = np.sign((ours * theirs).sum(axis=1))
    assert np.all(np.abs(signs) == 1)
    return signs


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))  # NaN at the same places
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


# ---------------------------------------------------- eigenvalues, scalings
@pytest.mark.parametrize("ddof", [0, 1])
def test_eigenvalues_and_north_errors_match_eofs(noaa, ddof):
    from eofs.standard import Eof

    sst, w, _, res = noaa
    solver = Eof(sst.values, weights=w.values[:, None], ddof=ddof)
    lam = res.eigenvalues(ddof=ddof)
    assert lam.dims == ("component",) and lam.sizes["component"] == 50
    _close(lam[:-1], solver.eigenvalues()[:-1], atol=1e-9)  # the last one is 0 to rounding
    _close(res.north_errors(ddof=ddof)[:K], solver.northTest(neigs=K))
    _close(res.north_errors(ratio=True)[:K], solver.northTest(neigs=K, vfscaled=True))
    _close(res.explained_variance_ratio[:K], solver.varianceFraction(neigs=K))
    assert lam.attrs["units"] == "(degC)**2"


@pytest.mark.parametrize("code", [0, 1, 2])
@pytest.mark.parametrize("ddof", [0, 1])
def test_pc_and_eof_scalings_match_eofs(noaa, code, ddof):
    from eofs.standard import Eof

    sst, w, _, res = noaa
    solver = Eof(sst.values, weights=w.values[:, None], ddof=ddof)
    signs = _signs(res, solver)
    pcs = res.pcs(scaling=code, ddof=ddof).isel(component=slice(0, K))
    assert pcs.dims == ("time", "component")
    _close(pcs * signs, solver.pcs(pcscaling=code, npcs=K), rtol=1e-9)
    eofs = res.eofs(scaling=code, ddof=ddof).isel(component=slice(0, K))
    assert eofs.dims == ("component", "latitude", "longitude")
    # eofs returns the weighted patterns (it does not divide its weights back out)
    _close(eofs * signs[:, None, None], solver.eofs(eofscaling=code, neofs=K), rtol=1e-9)


def test_scaling_names_are_eofs_codes(synth):
    *_, res = synth
    for name, code in xsvd.statistics.PC_SCALINGS.items():
        xr.testing.assert_identical(res.pcs(scaling=name), res.pcs(scaling=code))
    for name, code in xsvd.statistics.EOF_SCALINGS.items():
        xr.testing.assert_identical(res.eofs(scaling=name), res.eofs(scaling=code))
    pcs = res.pcs(scaling="unit").isel(component=slice(0, K))
    np.testing.assert_allclose(pcs.std("time", ddof=1), 1.0, rtol=1e-12)
    # unit-variance PCs times sqrt_eigenvalue EOFs rebuild the weighted anomalies
    rebuilt = xr.dot(res.pcs(scaling="unit"), res.eofs(scaling="sqrt_eigenvalue"), dim="component")
    mean = res.mean
    weighted = (synth[0] - mean) * synth[1]
    _close(rebuilt.transpose(*weighted.dims), weighted, atol=1e-9)


def test_unweighted_eofs_divide_the_weights_out(synth):
    _, w, _, res = synth
    V = res.eofs(unweighted=True)
    xr.testing.assert_allclose(V * w, res.V.transpose(*V.dims))
    # in the data's units: the covariance maps of the exact SVD
    eofs2 = res.eofs(scaling="sqrt_eigenvalue", unweighted=True)
    assert eofs2.attrs["units"] == "degC"
    zero = xr.DataArray(np.r_[0.0, np.ones(11)], dims="lat", coords={"lat": w.lat})
    res0 = synth[0].svd(k=3, dim="time", center=True, weights=zero)
    assert res0.eofs(unweighted=True).isel(lat=0).isnull().all()
    assert res0.eofs(unweighted=True).isel(lat=1).notnull().any()


def test_bad_options_say_what_is_allowed(synth):
    *_, res = synth
    with pytest.raises(ValueError, match=r"'singular' \(0\), 'unit' \(1\)"):
        res.pcs(scaling="normalized")
    with pytest.raises(ValueError, match="EOF scaling"):
        res.eofs(scaling=3)
    with pytest.raises(ValueError, match="scaling"):
        res.pcs(scaling=True)
    with pytest.raises(ValueError, match="ddof=50 leaves no degrees of freedom"):
        res.eigenvalues(ddof=50)
    with pytest.raises(ValueError, match="ddof must be a non-negative integer"):
        res.north_errors(ddof=-1)


# ------------------------------------------------------------------- maps
def _fresh_solver(sst, w, ddof=1):
    """A new eofs solver: eofs 2.0's weighted eofsAsCovariance divides its own stored data
    by the weights in place, so a second call on the same solver gives other maps."""
    from eofs.standard import Eof

    return Eof(sst.values, weights=w.values[:, None], ddof=ddof)


def test_correlation_and_covariance_maps_match_eofs(noaa, chunked):
    sst, w, _, res = noaa
    solver = _fresh_solver(sst, w)
    signs = _signs(res, solver)[:, None, None]
    data = chunked(sst)
    corr = res.correlation_maps(data).isel(component=slice(0, K))
    cov = res.covariance_maps(data).isel(component=slice(0, K))
    for maps in (corr, cov):
        assert maps.dims == ("component", "latitude", "longitude")
        xr.testing.assert_identical(maps.latitude, sst.latitude)
    assert corr.attrs["units"] == "1" and cov.attrs["units"] == "degC"
    _close(corr * signs, solver.eofsAsCorrelation(neofs=K), rtol=1e-9)
    _close(cov * signs, solver.eofsAsCovariance(neofs=K), rtol=1e-9)
    # land (NaN at every time step) is NaN in every map
    land = sst.isnull().all("time")
    assert bool((corr.isnull().all("component") == land).all())
    # for the exact SVD, the covariance maps are the unweighted EOFs scaled by sqrt(eigenvalue)
    eofs2 = res.eofs(scaling="sqrt_eigenvalue", unweighted=True).isel(component=slice(0, K))
    _close(cov, eofs2, rtol=1e-9)


def test_covariance_maps_ddof_matches_eofs(noaa):
    sst, w, _, res = noaa
    solver0 = _fresh_solver(sst, w, ddof=0)
    signs = _signs(res, solver0)[:, None, None]
    cov = res.covariance_maps(sst, ddof=0).isel(component=slice(0, K))
    _close(cov * signs, solver0.eofsAsCovariance(neofs=K), rtol=1e-9)


def test_maps_are_lazy_for_dask(synth):
    sst, w, _, _ = synth
    lazy_data = sst.chunk({"time": 10})
    lazy = lazy_data.svd.compressed(k=4, dim="time", center=True, weights=w, seed=0, compute=False)
    with raise_if_dask_computes():
        maps = [
            lazy.correlation_maps(lazy_data),
            lazy.covariance_maps(lazy_data),
            lazy.pcs(scaling="unit"),
            lazy.eofs(scaling="sqrt_eigenvalue", unweighted=True),
            lazy.eigenvalues(),
            lazy.north_errors(),
        ]
    assert all(xsvd.core.backend.is_dask(m.data) for m in maps)
    done = lazy.compute()
    xr.testing.assert_allclose(maps[0].compute(), done.correlation_maps(sst))
    xr.testing.assert_allclose(maps[1].compute(), done.covariance_maps(sst))


def test_maps_align_by_label(synth):
    sst, _, _, res = synth
    ref = res.correlation_maps(sst)
    # the same time steps in another order, and more time steps than the decomposition's
    shuffled = sst.isel(time=np.random.default_rng(0).permutation(sst.sizes["time"]))
    xr.testing.assert_allclose(res.correlation_maps(shuffled), ref)
    sub = sst.isel(time=slice(0, 40)).svd(k=3, dim="time", center=True)
    xr.testing.assert_allclose(
        sub.covariance_maps(sst), sub.covariance_maps(sst.isel(time=slice(0, 40)))
    )
    with pytest.raises(ValueError, match="10 of its 50 labels are missing"):
        res.correlation_maps(sst.isel(time=slice(0, 40)))
    with pytest.raises(ValueError, match="no dimension 'time'"):
        res.correlation_maps(sst.isel(time=0))


def test_maps_of_another_field_with_gaps_are_pairwise(synth):
    """Any field on the same samples; a cell with some missing samples uses those present."""
    sst, _, _, res = synth
    rng = np.random.default_rng(1)
    other = (2.0 * sst + rng.standard_normal(sst.shape)).rename("other")
    other[3:9, 4, 5] = np.nan  # a gap in an ocean cell
    other = other.isel(lon=slice(0, 20))
    pcs = res.pcs(scaling="unit").isel(component=slice(0, 4))
    sub = res.correlation_maps(other).isel(component=slice(0, 4))
    ref = xr.corr(other, pcs, dim="time").transpose(*sub.dims)
    xr.testing.assert_allclose(sub, ref)
    assert bool(sub.isel(lat=4, lon=5).notnull().all())
    cov = res.covariance_maps(other).isel(component=slice(0, 4))
    xr.testing.assert_allclose(cov, xr.cov(other, pcs, dim="time").transpose(*cov.dims))


def test_maps_with_several_sample_dims():
    sst = xsvd.datasets.climate_field(n_time=48, n_lat=6, n_lon=12, seed=2)
    field = sst.coarsen(time=12).construct(time=("year", "month")).drop_vars("time")
    res = field.svd(k=3, dim=("year", "month"), center=True)
    flat = sst.svd(k=3, dim="time", center=True)
    xr.testing.assert_allclose(res.correlation_maps(field), flat.correlation_maps(sst))
    assert res.pcs().dims == ("year", "month", "component")


def test_units_of_statistics():
    pint = pytest.importorskip("pint", reason='needs pint: pip install "xsvd[units]"')
    ureg = pint.UnitRegistry(force_ndarray_like=True)
    sst = xsvd.datasets.climate_field(n_time=36, n_lat=6, n_lon=12, seed=3)
    q = sst.copy(data=ureg.Quantity(sst.values, "degC"))
    w = xsvd.coslat_weights(sst)
    res = q.svd(k=3, dim="time", center=True, weights=w)
    delta = ureg.delta_degC
    assert res.eigenvalues().data.units == delta**2
    assert res.north_errors().data.units == delta**2
    assert res.pcs().data.units == delta
    assert isinstance(res.pcs(scaling="unit").data, np.ndarray)  # dimensionless: plain
    assert res.eofs(scaling="inverse_sqrt_eigenvalue").data.units == 1 / delta
    assert res.covariance_maps(q).data.units == delta
    assert isinstance(res.correlation_maps(q).data, np.ndarray)
    plain = sst.svd(k=3, dim="time", center=True, weights=w)
    np.testing.assert_allclose(res.covariance_maps(q).data.magnitude, plain.covariance_maps(sst))
    # quantified weights: the unweighted EOFs lose their units
    wq = w.copy(data=ureg.Quantity(w.values, "m"))
    resq = q.svd(k=3, dim="time", center=True, weights=wq)
    assert resq.eofs(unweighted=True).data.units == 1 / ureg.m
    assert resq.eofs(scaling="sqrt_eigenvalue", unweighted=True).data.units == delta
    # standardized: S is dimensionless, reconstruct() keeps the data's units
    std = q.svd(k=3, dim="time", center=True, standardize=True)
    assert std.S.data.units == ureg.dimensionless
    assert std.reconstruct().data.units == ureg.degC


# -------------------------------------------------------------- standardize
@pytest.fixture(scope="module")
def xeofs_standardized(synth):
    xe = pytest.importorskip("xeofs", reason="needs xeofs (pip install xeofs)")
    sst, w, _, _ = synth
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xeofs' own deprecation warnings
        model = xe.single.EOF(n_modes=5, standardize=True, solver="full")
        model.fit(sst, dim="time", weights=w)
    return model


def test_standardize_matches_xeofs(synth, xeofs_standardized, chunked):
    sst, w, _, _ = synth
    model = xeofs_standardized
    res = chunked(sst).svd(k=5, dim="time", center=True, standardize=True, weights=w)
    assert res.settings["standardize"] is True
    comps = model.components().transpose("mode", "lat", "lon").values
    V = res.V.values
    signs = np.sign(np.nansum(V * comps, axis=(1, 2)))[:, None, None]
    _close(V * signs, comps, rtol=1e-8, atol=1e-12)
    _close(res.explained_variance_ratio, model.explained_variance_ratio(), rtol=1e-10)
    _close(res.eigenvalues(), model.explained_variance(), rtol=1e-10)
    assert "units" not in res.S.attrs  # standardized data have no units


def test_standardize_is_undone_by_reconstruct_and_applied_by_project(synth):
    sst, _, _, _ = synth
    res = sst.svd(dim="time", center=True, standardize=True)
    xr.testing.assert_allclose(res.reconstruct(), sst.transpose(*res.reconstruct().dims))
    lead = {"component": slice(0, K)}  # the last component of the full SVD is null (S = 0)
    xr.testing.assert_allclose(res.project(sst).isel(lead), res.U.isel(lead))
    # every ocean cell has unit variance in the decomposed matrix: total = n_ocean * n
    ocean = int(sst.notnull().all("time").sum())
    np.testing.assert_allclose(float(res.total_variance), ocean * sst.sizes["time"])
    back = xsvd.SVDResult.from_dataset(res.to_dataset())
    assert back.settings["standardize"] is True


def test_standardize_constant_features_and_missing_codes():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((30, 6))
    a[:, 2] = 5.0  # constant: weight 0
    da = xr.DataArray(a, dims=("s", "f"))
    res = da.svd(k=4, dim="s", center=True, standardize=True)
    np.testing.assert_allclose(res.V.isel(f=2), 0.0, atol=1e-12)
    assert res.reconstruct().isel(f=2).isnull().all()  # weight 0: not recoverable
    # integer genotype-like codes, -1 missing (missing="mean"): the std skips them
    g = rng.integers(0, 3, size=(40, 5))
    g[::7, 1] = -1
    gd = xr.DataArray(g, dims=("s", "f"))
    w = xsvd.labeled.preprocess.standardized_weights(gd.values, None, missing="mean")
    present = np.where(g >= 0, g, np.nan).astype(float)
    np.testing.assert_allclose(w, 1.0 / np.nanstd(present, axis=0))
    with pytest.raises(TypeError, match="standardize must be True or False"):
        da.svd(dim="s", standardize="yes")


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a GPU")
def test_statistics_and_rotation_of_a_gpu_result(synth):
    sst, w, _, _ = synth
    res = sst.svd(k=6, dim="time", center=True, weights=w, device="gpu")
    host = res.as_numpy()
    pairs = [
        (res.pcs(scaling="unit"), host.pcs(scaling="unit")),
        (
            res.eofs(scaling="sqrt_eigenvalue", unweighted=True),
            host.eofs(scaling=2, unweighted=True),
        ),
        (res.eigenvalues(), host.eigenvalues()),
        (res.correlation_maps(sst), host.correlation_maps(sst)),  # NumPy data, GPU result
        (res.rotate(3).V, host.rotate(3).V),
        (res.rotate(3).project(sst), host.rotate(3).U),
    ]
    for gpu, cpu in pairs:
        xr.testing.assert_allclose(gpu.as_numpy(), cpu)
    std = sst.svd(k=4, dim="time", center=True, standardize=True, device="gpu")
    ref = sst.svd(k=4, dim="time", center=True, standardize=True)
    xr.testing.assert_allclose(std.S.as_numpy(), ref.S)
