"""The labeled API: accessor, function, result object, N-D layouts."""

from __future__ import annotations

import json

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from conftest import matrix_with_spectrum, raise_if_dask_computes

import xsvd
from xsvd import datasets

# The labeled round trips below decompose data about 0 (``center=False``, the default) on
# purpose, with an offset so that the means matter: the warning that the means carry
# the sum of squares (tested in tests/test_center_warning.py) is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:center=False:UserWarning")


@pytest.fixture(scope="module")
def sst():
    return datasets.climate_field(n_time=120, n_lat=18, n_lon=36, seed=1)


@pytest.fixture
def field3d():
    """(time, lat, lon) data with a clear spectrum, coords and a non-dim coord."""
    nt, ny, nx = 80, 6, 9
    a = matrix_with_spectrum(np.r_[9.0, 7, 5, 3, 2, np.full(40, 0.05)], nt, ny * nx, seed=3)
    return xr.DataArray(
        a.reshape(nt, ny, nx) + 10.0,
        dims=("time", "lat", "lon"),
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(-50, 50, ny),
            "lon": np.arange(nx) * 40.0,
            "month": ("time", np.arange(nt) % 12 + 1),
            "region": (("lat", "lon"), np.arange(ny * nx).reshape(ny, nx)),
        },
        name="tas",
        attrs={"units": "K", "long_name": "air temperature"},
    )


def stacked(da_, dim):
    """Reference (samples x features) matrix built with xarray's own stack."""
    feats = [d for d in da_.dims if d not in dim]
    return da_.stack(s=dim, f=feats).transpose("s", "f").values


# -------------------------------------------------------------- labels


def test_accessor_function_and_methods_agree(field3d):
    r1 = field3d.svd(k=3, dim="time")
    r2 = xsvd.svd(field3d, k=3, dim="time")
    r3 = field3d.svd.exact(k=3, dim="time")
    for r in (r2, r3):
        xr.testing.assert_allclose(r1.V, r.V)
    assert r1.method == "exact"


def test_registering_again_or_after_a_reload_keeps_the_accessor_without_a_warning(field3d):
    import importlib
    import warnings

    from xsvd import accessor

    registered = xr.DataArray.__dict__["svd"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # xarray's AccessorRegistrationWarning fails here
            accessor.register()
            importlib.reload(accessor)  # a new SVDAccessor class, as a reload in a session makes
            accessor.register()
        assert xr.DataArray.__dict__["svd"] is registered  # kept, not replaced
        del xr.DataArray.svd
        assert not hasattr(field3d, "svd")
        accessor.register()  # gone: registered again
        assert field3d.svd(k=2, dim="time").S.sizes["component"] == 2
    finally:
        xr.DataArray.svd = registered


def test_3d_round_trip_dims_coords_attrs(field3d):
    res = field3d.svd.compressed(k=4, dim="time", seed=0)
    U, S, V = res
    assert U.dims == ("time", "component") and S.dims == ("component",)
    assert V.dims == ("component", "lat", "lon")
    np.testing.assert_array_equal(U.component, [1, 2, 3, 4])  # EOF1, PC1: from 1
    np.testing.assert_array_equal(U.month, field3d.month)  # non-dim coord on samples
    np.testing.assert_array_equal(V.region, field3d.region)  # 2-D non-dim coord on features
    np.testing.assert_array_equal(V.lon, field3d.lon)
    assert S.attrs["units"] == "K"
    assert res.reconstruct().attrs == field3d.attrs
    # values: the stacked matrix's SVD
    s = np.linalg.svd(stacked(field3d, ["time"]), compute_uv=False)
    np.testing.assert_allclose(S, s[:4], rtol=1e-8)


def test_dims_follow_the_users_order_and_several_sample_dims(field3d):
    x = field3d.transpose("lat", "time", "lon")
    res = x.svd(dim="time", k=2)
    assert res.V.dims == ("component", "lat", "lon")
    r2 = field3d.svd(dim=["lon", "time"], k=2)  # two sample dims, in the order given
    assert r2.U.dims == ("lon", "time", "component") and r2.V.dims == ("component", "lat")
    s = np.linalg.svd(stacked(field3d, ["lon", "time"]), compute_uv=False)
    np.testing.assert_allclose(r2.S, s[:2], rtol=1e-10)


def test_default_dim_is_the_first(field3d):
    assert field3d.svd(k=2).U.dims == ("time", "component")


def test_2d_genotypes_round_trip():
    gt = datasets.genotypes(2000, 90, seed=2)
    res = gt.svd.compressed(k=3, dim="samples", center=True, seed=0)
    assert res.U.dims == ("samples", "component")
    assert res.V.dims == ("component", "variants")
    assert (res.U.population.values == gt.population.values).all()
    # PCs separate the simulated populations: between-group variance dominates
    pc = res.U.isel(component=0)
    between = pc.groupby("population").mean().var().item()
    assert between > 0.5 * pc.var().item()


# ------------------------------------------------------------ NaN, weights


def test_land_is_nan_in_v_and_in_reconstruction(sst):
    land = sst.isel(time=0).isnull()
    w = xsvd.coslat_weights(sst)
    for obj in (sst, sst.chunk({"time": 30})):
        res = obj.svd.compressed(k=3, dim="time", center=True, weights=w, seed=0)
        assert (res.V.isnull() == land).all()
        assert (res.mean.isnull() == land).all()
        rec = res.reconstruct()
        assert (rec.isnull() == sst.isnull()).all()
    assert sst.isnull().sum() == land.sum() * sst.sizes["time"]  # input untouched


def test_nan_outside_the_mask_names_the_location(sst):
    bad = sst.copy()
    lat0, lon0 = 10, 20
    assert not np.isnan(bad.values[5, lat0, lon0])
    bad.values[5, lat0, lon0] = np.nan
    with pytest.raises(ValueError, match=r"lat=.*lon=.*missing=.mean."):
        bad.svd(k=2, dim="time")
    with pytest.raises(ValueError, match=r"lat=.*lon="):
        bad.chunk({"time": 40}).svd.compressed(k=2, dim="time", seed=0)


def test_weights_multiply_the_features(field3d):
    w = xr.DataArray(np.linspace(0.5, 1.5, field3d.sizes["lat"]), dims="lat")
    res = field3d.svd.exact(dim="time", center=True, weights=w)
    weighted = (field3d - field3d.mean("time")) * w
    s = np.linalg.svd(stacked(weighted, ["time"]), compute_uv=False)
    np.testing.assert_allclose(res.S, s, rtol=1e-10, atol=1e-12 * s[0])
    # reconstruct undoes both weights and centering
    xr.testing.assert_allclose(res.reconstruct(), field3d.drop_vars([]), rtol=1e-9)


def test_weights_errors(field3d):
    with pytest.raises(ValueError, match="not feature dimensions"):
        field3d.svd(dim="time", weights=xr.DataArray(np.ones(80), dims="time"))
    with pytest.raises(TypeError, match="DataArray"):
        field3d.svd(dim="time", weights=np.ones(6))
    with pytest.raises(ValueError, match="finite"):
        field3d.svd(dim="time", weights=xr.DataArray(np.full(6, np.nan), dims="lat"))


# ----------------------------------------------------- result object


def test_explained_variance_ratio(field3d):
    full = field3d.svd.exact(dim="time", center=True)
    np.testing.assert_allclose(full.explained_variance_ratio.sum(), 1.0, rtol=1e-12)
    comp = field3d.svd.compressed(k=3, dim="time", center=True, seed=0)
    np.testing.assert_allclose(
        comp.explained_variance_ratio, full.explained_variance_ratio[:3], rtol=1e-8
    )
    assert comp.explained_variance_ratio.dims == ("component",)


def test_reconstruct_full_rank_gives_the_input_back(field3d):
    res = field3d.svd.exact(dim="time", center=True)
    rec = res.reconstruct()
    assert rec.dims == field3d.dims and rec.name == field3d.name
    xr.testing.assert_allclose(rec, field3d, rtol=1e-10)


def test_reconstruct_rank_k_error_is_optimal(field3d):
    res = field3d.svd.compressed(k=5, dim="time", center=True, seed=0)
    err = float(np.sqrt(((res.reconstruct() - field3d) ** 2).sum()))
    s = np.linalg.svd(stacked(field3d - field3d.mean("time"), ["time"]), compute_uv=False)
    np.testing.assert_allclose(err, np.sqrt((s[5:] ** 2).sum()), rtol=1e-6)


def test_project_gives_u_back_and_handles_new_samples(field3d, sst):
    res = field3d.svd.compressed(k=3, dim="time", center=True, seed=0)
    xr.testing.assert_allclose(res.project(field3d), res.U.rename("scores"), atol=1e-10)
    sub = field3d.isel(time=slice(10, 20))
    np.testing.assert_allclose(res.project(sub).values, res.U.isel(time=slice(10, 20)).values)
    w = xsvd.coslat_weights(sst)
    r2 = sst.svd(k=3, dim="time", center=True, weights=w)  # with land
    np.testing.assert_allclose(r2.project(sst).values, r2.U.values, atol=1e-10)
    with pytest.raises(ValueError, match="coordinate 'lon'"):
        res.project(field3d.assign_coords(lon=field3d.lon + 1))


def test_to_dataset(field3d):
    res = field3d.svd.compressed(k=3, dim="time", center=True, seed=4)
    ds = res.to_dataset()
    assert {"U", "S", "V", "mean", "explained_variance_ratio"} <= set(ds.data_vars)
    assert ds.attrs["xsvd_method"] == "compressed"
    assert json.loads(ds.attrs["xsvd_settings"])["seed"] == 4
    xr.testing.assert_identical(ds.V, res.V)
    assert ds.month.dims == ("time",)


def test_unpacking_and_repr(field3d):
    res = field3d.svd(k=2, dim="time")
    U, S, V = res
    assert U is res.U and "method='exact'" in repr(res)


# ------------------------------------------------------ backends, laziness


def test_numpy_and_dask_accessor_identical(sst):
    w = xsvd.coslat_weights(sst)
    kw = dict(k=4, dim="time", center=True, weights=w, seed=3)
    r_np = sst.svd.compressed(**kw)
    # fewer samples than features: NumPy cuts feature stripes, so chunk the features
    # (every chunk holding all samples) for the same sketch and bit-for-bit-close results
    r_da = sst.chunk({"time": -1, "lat": 6}).svd.compressed(**kw)
    assert r_da.settings["stripes"] == r_np.settings["stripes"]
    # the stripes add in another order: over 41 start blocks (seeds 0-39 and one more) U and
    # V differed by up to 3.7e-12 (2.9e-13 with seed=3); atol=1e-12 failed for 2 of them
    for a, b in zip(r_np, r_da, strict=True):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10, atol=1e-11)


def test_compute_false_is_lazy_and_computes_to_the_same(field3d):
    x = field3d.chunk({"time": 20})
    with raise_if_dask_computes():
        res = x.svd.compressed(k=3, dim="time", center=True, seed=0, compute=False)
        ex = x.svd.exact(k=3, dim="time", center=True, compute=False)
        rec = res.reconstruct()
        evr = res.explained_variance_ratio
    assert all(isinstance(v.data, da.Array) for v in (*res, *ex, rec, evr))
    eager = field3d.svd.compressed(k=3, dim="time", center=True, seed=0)
    np.testing.assert_allclose(res.S.values, eager.S.values, rtol=1e-10)
    np.testing.assert_allclose(ex.S.values, eager.S.values, rtol=1e-8)


def test_compute_true_returns_numpy(field3d):
    res = field3d.chunk({"time": 20}).svd.compressed(k=3, dim="time", seed=0)
    assert all(isinstance(v.data, np.ndarray) for v in res)


def test_tall_skinny_dask_exact_rechunks_itself():
    a = np.random.default_rng(0).standard_normal((3000, 40))
    x = xr.DataArray(da.from_array(a, chunks=(500, 10)), dims=("sample", "feature"))
    res = x.svd.exact(dim="sample")  # chunked in both dims: dask's tsqr alone would refuse
    np.testing.assert_allclose(res.S.values, np.linalg.svd(a, compute_uv=False), rtol=1e-10)


# ------------------------------------------------------- method choice


def test_auto_method_choice():
    assert xsvd.choose_method(100_000, 500, None) == "exact"
    assert xsvd.choose_method(5_000, 5_000, 10) == "compressed"
    assert xsvd.choose_method(5_000, 5_000, 2_000) == "exact"
    with pytest.raises(ValueError, match="pass `k=`"):
        xsvd.choose_method(5_000, 5_000, None)
    big = xr.DataArray(da.zeros((2000, 1500), chunks=(500, 1500)), dims=("s", "f"))
    with pytest.raises(ValueError, match="k="):
        big.svd()
    with raise_if_dask_computes():
        assert big.svd(k=3, seed=0, compute=False).method == "compressed"


# ------------------------------------------------------------- errors


def test_clear_errors(field3d):
    with pytest.raises(ValueError, match="not a dimension.*dim="):
        field3d.svd(dim="depth")
    with pytest.raises(ValueError, match="leaves no features"):
        field3d.svd(dim=["time", "lat", "lon"])
    with pytest.raises(ValueError, match="between 1 and"):
        field3d.svd.compressed(k=500, dim="time")
    with pytest.raises(ValueError, match="seed only applies to the compressed"):
        xsvd.svd(field3d, dim="time", method="exact", seed=1)
    with pytest.raises(TypeError, match="numeric"):
        xr.DataArray(np.array([["a", "b"], ["c", "d"]]), dims=("x", "y")).svd()
    with pytest.raises(TypeError, match="Dataset"):
        xsvd.svd(field3d.to_dataset(), k=2)
    with pytest.raises(ValueError, match="2 dimensions"):
        xr.DataArray(np.ones(5), dims="x").svd()
    with pytest.raises(ValueError, match="method"):
        field3d.svd(method="fast")


def test_input_is_never_modified(sst):
    before = sst.copy(deep=True)
    sst.svd(k=3, dim="time", center=True, weights=xsvd.coslat_weights(sst))
    sst.svd.compressed(k=3, dim="time", center=True, seed=0)
    xr.testing.assert_identical(sst, before)


def test_dask_input_is_not_computed_while_building(field3d):
    x = field3d.chunk({"time": 20})
    with raise_if_dask_computes():
        x.svd(k=2, dim="time", compute=False)
    assert dask.is_dask_collection(x)


def test_lazy_result_compute_and_persist(field3d):
    x = field3d.chunk({"time": 20})
    lazy = x.svd.compressed(k=3, dim="time", center=True, seed=0, compute=False)
    done = lazy.compute()
    assert all(isinstance(v.data, np.ndarray) for v in done)
    assert isinstance(done.mean.data, np.ndarray)
    kept = lazy.persist()
    assert all(isinstance(v.data, da.Array) for v in kept)
    np.testing.assert_allclose(kept.S.values, done.S.values)
    xr.testing.assert_allclose(done.reconstruct(), lazy.reconstruct().compute())


def test_reconstruct_with_fewer_components(field3d):
    res = field3d.svd.exact(dim="time", center=True, k=5)
    small = field3d.svd.exact(dim="time", center=True, k=2)
    xr.testing.assert_allclose(res.reconstruct(k=2), small.reconstruct())
    with pytest.raises(ValueError, match="between 1 and 5"):
        res.reconstruct(k=6)


def test_project_nan_outside_the_mask_raises_for_numpy_and_dask(sst):
    res = sst.svd(k=2, dim="time", center=True)
    bad = sst.isel(time=slice(0, 10)).copy()
    ocean = np.argwhere(~np.isnan(bad.values[0]))[0]
    bad.values[3, ocean[0], ocean[1]] = np.nan
    for obj in (bad, bad.chunk({"time": 5})):
        with pytest.raises(ValueError, match="not all-NaN"):
            res.project(obj).compute()


def test_datetime_coordinates_are_readable_in_nan_errors(sst):
    bad = sst.copy()
    bad.values[5, 10, 20] = np.nan  # an ocean cell, now NaN at one time only
    with pytest.raises(ValueError, match=r"time=2000-"):
        bad.svd(dim=("lat", "lon"), k=2)


def test_results_are_float64_for_both_solvers(field3d):
    x = field3d.astype("float32")
    for res in (x.svd.exact(dim="time", k=2), x.svd.compressed(dim="time", k=2, seed=0)):
        assert {v.dtype for v in res} == {np.dtype("float64")}


# ------------------------------------------------ documented edge cases


def test_zero_singular_values_give_zero_scores_not_nan():
    a = matrix_with_spectrum([3.0, 2.0], 60, 40, seed=7)  # rank 2, asked for 4
    x = xr.DataArray(a, dims=("s", "f"))
    with pytest.warns(RuntimeWarning, match="numerical rank 2"):
        res = x.svd.compressed(k=4, dim="s", seed=0)
    np.testing.assert_array_equal(res.S.values[2:], 0)
    scores = res.project(x)
    assert np.isfinite(scores.values).all()
    np.testing.assert_array_equal(scores.values[:, 2:], 0)
    np.testing.assert_allclose(scores.values[:, :2], res.U.values[:, :2], atol=1e-10)


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_zero_weight_features_reconstruct_as_nan(field3d, method):
    w = xr.DataArray(np.r_[0.0, np.linspace(0.5, 1.5, field3d.sizes["lat"] - 1)], dims="lat")
    kw = dict(dim="time", center=True, weights=w)
    res = (
        field3d.svd.exact(**kw) if method == "exact" else field3d.svd.compressed(k=5, seed=0, **kw)
    )
    rec = res.reconstruct()
    assert rec.isel(lat=0).isnull().all()  # weight 0: the values cannot be recovered
    assert not rec.isel(lat=slice(1, None)).isnull().any()
    if method == "exact":  # all components: the input back where the weights are not 0
        xr.testing.assert_allclose(
            rec.isel(lat=slice(1, None)), field3d.isel(lat=slice(1, None)), rtol=1e-9
        )


def test_project_dask_data_chunked_along_features_with_land():
    sst = datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=1)
    res = sst.svd.exact(dim="time", k=3)
    scores = res.project(sst.chunk({"time": 20, "lon": 8}))
    np.testing.assert_allclose(scores.values, res.U.values, atol=1e-12)
