"""Multivariate EOF: ``Dataset.svd`` against eofs' ``MultivariateEof``, on NumPy and Dask.

Two fields on different grids (one with land: NaN at every time step),
area-weighted: EOFs per variable, PCs, eigenvalues, variance fractions,
reconstruction and projection agree with eofs (exact solver, ~1e-10); Dask
gives what NumPy gives; the compressed solver what the exact one does;
per-variable weights as a dict or a Dataset; ``equal_variance`` scaling
checked on the weighted data and undone by ``reconstruct()``; the errors a
user can cause name the variable and the fix.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray, raise_if_dask_computes

import xsvd
from xsvd.climate import multivariate

da = pytest.importorskip("dask.array")

N_TIME = 40


def _fields(seed: int = 0) -> xr.Dataset:
    """Two correlated fields: "sst" (time, lat 8, lon 10) with land, "slp" (time, y 5, x 6)."""
    rng = np.random.default_rng(seed)
    time = xr.date_range("2000-01-01", periods=N_TIME, freq="MS")
    lat = np.linspace(-70, 70, 8)
    lon = np.arange(10) * 36.0
    y = np.linspace(-60, 60, 5)
    x = np.arange(6) * 60.0
    modes = rng.standard_normal((N_TIME, 3)) * [3.0, 2.0, 1.0]
    sst = np.einsum("tk,kab->tab", modes, rng.standard_normal((3, 8, 10)))
    sst += 0.3 * rng.standard_normal(sst.shape) + 15.0
    sst[:, 2:4, 3:6] = np.nan  # land
    slp = 100.0 * np.einsum("tk,kab->tab", modes, rng.standard_normal((3, 5, 6)))
    slp += 30.0 * rng.standard_normal(slp.shape) + 1.0e5
    return xr.Dataset(
        {
            "sst": (("time", "lat", "lon"), sst, {"units": "degC"}),
            "slp": (("time", "y", "x"), slp, {"units": "Pa"}),
        },
        coords={
            "time": time,
            "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": lon,
            "y": ("y", y, {"standard_name": "latitude"}),
            "x": x,
        },
    )


def _weights(ds: xr.Dataset) -> dict:
    return {"sst": xsvd.coslat_weights(ds["sst"]), "slp": xsvd.coslat_weights(ds["slp"])}


def _eofs_solver(ds: xr.Dataset, weights: dict | None = None, scale: dict | None = None):
    from eofs.multivariate.standard import MultivariateEof

    names = ("sst", "slp")
    arrays = [ds[n].values * (1.0 if scale is None else scale[n]) for n in names]
    w = None
    if weights is not None:
        w = [weights[n].broadcast_like(ds[n].isel(time=0)).values for n in names]
    return MultivariateEof(arrays, weights=w, center=True)


def _signs(res, solver, k: int) -> np.ndarray:
    """Signs turning xsvd's first k components into eofs' (their sign rules differ)."""
    theirs = solver.pcs(pcscaling=1, npcs=k)
    ours = res.pcs(scaling="unit").isel(component=slice(0, k)).values
    signs = np.sign(np.sum(theirs * ours, axis=0))
    assert np.all(np.abs(np.sum(theirs * ours, axis=0)) > 0.99 * (N_TIME - 1))
    return signs


K = 4


@pytest.fixture(scope="module")
def ds():
    return _fields()


@pytest.fixture(scope="module")
def reference(ds):
    pytest.importorskip("eofs", reason="needs eofs (pip install eofs)")
    return _eofs_solver(ds, _weights(ds))


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_matches_eofs_multivariate(ds, reference, chunked):
    data = ds.chunk({"time": 10}) if chunked else ds
    res = data.svd.exact(dim="time", center=True, weights=_weights(ds)).compute()
    signs = _signs(res, reference, K)
    first = {"component": slice(0, K)}
    np.testing.assert_allclose(
        res.eigenvalues().isel(first), reference.eigenvalues(neigs=K), rtol=1e-10
    )
    np.testing.assert_allclose(
        res.explained_variance_ratio.isel(first), reference.varianceFraction(neigs=K), rtol=1e-10
    )
    for code in (0, 1, 2):
        np.testing.assert_allclose(
            res.pcs(scaling=code).isel(first) * signs,
            reference.pcs(pcscaling=code, npcs=K),
            rtol=1e-9,
            atol=1e-10,
        )
        theirs = reference.eofs(eofscaling=code, neofs=K)  # one array per variable
        ours = res.eofs(scaling=code).isel(first)
        for name, their in zip(("sst", "slp"), theirs, strict=True):
            mine = ours[name].values * signs[:, None, None]
            np.testing.assert_array_equal(np.isnan(mine), np.isnan(their))  # land stays NaN
            np.testing.assert_allclose(mine, their, rtol=1e-9, atol=1e-12)
    rec = res.reconstruct(K)
    for name, their in zip(("sst", "slp"), reference.reconstructedField(K), strict=True):
        anomalies = (rec[name] - res.mean[name]).values  # eofs reconstructs the anomalies
        np.testing.assert_allclose(anomalies, their, rtol=1e-10, atol=1e-9)
    # eofs projects the (weighted) field as given, so anomalies: U * S from xsvd's scores
    anomalies = [(ds[n] - res.mean[n]).values for n in ("sst", "slp")]
    theirs = reference.projectField(anomalies, neofs=K)
    ours = res.project(ds).isel(first) * res.S.isel(first) * signs
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-8)


def test_numpy_and_dask_agree_exact_and_compressed(ds):
    # variables chunked differently: the lazy concatenation aligns their row chunks
    lazy = xr.Dataset({"sst": ds["sst"].chunk({"time": 10}), "slp": ds["slp"].chunk({"time": 7})})
    w = _weights(ds)
    for kwargs in ({"method": "exact"}, {"method": "compressed", "n_power_iter": 4, "seed": 1}):
        r_np = ds.svd(K, dim="time", center=True, weights=w, **kwargs)
        with raise_if_dask_computes():
            r_da = lazy.svd(K, dim="time", center=True, weights=w, compute=False, **kwargs)
        assert r_da.result.decomposition.lazy_parts()
        assert isinstance(r_da.V["sst"].data, da.Array)
        r_da = r_da.compute()
        np.testing.assert_allclose(r_da.S, r_np.S, rtol=1e-10, atol=1e-12 * float(r_np.S[0]))
        xr.testing.assert_allclose(r_da.V, r_np.V, rtol=1e-8, atol=1e-10)
        xr.testing.assert_allclose(r_da.U, r_np.U, rtol=1e-8, atol=1e-10)
        xr.testing.assert_allclose(r_da.mean, r_np.mean)


def test_compressed_agrees_with_exact(ds):
    w = _weights(ds)
    exact = ds.svd.exact(dim="time", center=True, weights=w)
    comp = ds.svd.compressed(3, dim="time", center=True, weights=w, n_power_iter=6, seed=0)
    assert comp.method == "compressed"
    np.testing.assert_allclose(comp.S, exact.S.isel(component=slice(0, 3)), rtol=1e-8)
    lead = exact.U.isel(component=slice(0, 3))
    np.testing.assert_allclose(np.abs((lead * comp.U).sum("time")), 1, rtol=1e-10)
    for name in ("sst", "slp"):
        a = exact.V[name].isel(component=slice(0, 3)).fillna(0).values.reshape(3, -1)
        b = comp.V[name].fillna(0).values.reshape(3, -1)
        np.testing.assert_allclose(np.abs(a), np.abs(b), atol=1e-8)
    assert float(comp.errors["S_relative"].max()) < 1e-8


def test_land_stays_nan_per_variable(ds):
    res = ds.svd.exact(dim="time", center=True, k=3)
    land = ds["sst"].isnull().all("time")
    assert int(land.sum()) == 6
    assert bool(res.V["sst"].isnull().all("component").equals(land))
    assert not bool(res.V["slp"].isnull().any())
    assert bool(res.mean["sst"].isnull().equals(land)) and res.mean["sst"].attrs["units"] == "degC"
    rec = res.reconstruct()
    assert bool(rec["sst"].isnull().all("time").equals(land))
    assert not bool(rec["slp"].isnull().any())


def test_reconstruct_full_rank_round_trips_and_project_gives_u(ds):
    for data in (ds, ds.chunk({"time": 13})):
        res = data.svd.exact(dim="time", center=True, weights=_weights(ds), equal_variance=True)
        rec = res.reconstruct().compute()
        for name in ("sst", "slp"):
            assert rec[name].dims == ds[name].dims and rec[name].attrs == ds[name].attrs
            np.testing.assert_allclose(rec[name], ds[name], rtol=1e-12, atol=1e-9)
        lead = {"component": slice(0, 10)}
        xr.testing.assert_allclose(res.project(data).isel(lead), res.U.isel(lead), atol=1e-10)


def test_weights_as_dict_dataset_or_premultiplied(ds):
    w = _weights(ds)
    by_dict = ds.svd.exact(dim="time", center=True, weights=w)
    by_dataset = ds.svd.exact(dim="time", center=True, weights=xr.Dataset(w))
    xr.testing.assert_identical(by_dict.V, by_dataset.V)
    # weights multiply each variable's anomalies: as if the data came weighted
    weighted = xr.Dataset({n: ds[n] * w[n] for n in w})
    plain = weighted.svd.exact(dim="time", center=True)
    np.testing.assert_allclose(by_dict.S, plain.S, rtol=1e-10, atol=1e-12 * float(plain.S[0]))
    xr.testing.assert_allclose(by_dict.weights["slp"], w["slp"].broadcast_like(ds["slp"][0]))
    # a variable left out of the dict is an error naming it (issue 31, item 8: it was
    # silently unweighted); `None` for it, as the error says, leaves it unweighted
    with pytest.raises(ValueError, match=r"no entry for the variable 'slp'.*'slp': None"):
        ds.svd.exact(dim="time", center=True, weights={"sst": w["sst"]})
    only = ds.svd.exact(dim="time", center=True, weights={"sst": w["sst"], "slp": None})
    assert ds.svd.exact(dim="time", center=True, weights={"sst": w["sst"], "slp": 1}).S.equals(
        only.S
    )
    half = xr.Dataset({"sst": ds["sst"] * w["sst"], "slp": ds["slp"]})
    ref = half.svd.exact(dim="time", center=True).S
    np.testing.assert_allclose(only.S, ref, rtol=1e-10, atol=1e-12 * float(ref[0]))


@pytest.mark.parametrize("standardize", [False, True])
def test_equal_variance_scales_each_variable_and_reconstruct_undoes_it(ds, standardize):
    w = _weights(ds)
    opts = dict(dim="time", center=True, weights=w, standardize=standardize)
    res = ds.svd.exact(equal_variance=True, **opts)
    assert res.settings["equal_variance"] is True
    # the matrix decomposed: each variable's weighted anomalies have total variance 1
    for name in ("sst", "slp"):
        b = (ds[name] - res.mean[name]) * res.weights[name]
        total = float((b**2).sum()) / N_TIME
        np.testing.assert_allclose(total, 1.0, rtol=1e-12)
    np.testing.assert_allclose(float(res.total_variance) / N_TIME, 2.0, rtol=1e-12)
    # without the option slp (values ~100x larger) dominates the first component
    plain = ds.svd.exact(**opts)
    if not standardize:
        share = float((plain.V["slp"].isel(component=0) ** 2).sum())
        assert share > 0.99
        assert 0.1 < float((res.V["slp"].isel(component=0) ** 2).sum()) < 0.9
    # the factors by hand: 1 / sqrt(sum of weighted feature variances)
    for name in ("sst", "slp"):
        x = ds[name]
        var = x.var("time") if not standardize else xr.ones_like(x[0]).where(x[0].notnull())
        total = float((var * w[name] ** 2).sum())
        np.testing.assert_allclose(float(res.scales.sel(variable=name)), total**-0.5, rtol=1e-12)
    rec = res.reconstruct()
    for name in ("sst", "slp"):
        np.testing.assert_allclose(rec[name], ds[name], rtol=1e-12, atol=1e-9)


def test_equal_variance_matches_eofs_on_scaled_fields(ds):
    pytest.importorskip("eofs", reason="needs eofs (pip install eofs)")
    w = _weights(ds)
    res = ds.svd.exact(dim="time", center=True, weights=w, equal_variance=True)
    scale = {n: float(res.scales.sel(variable=n)) for n in ("sst", "slp")}
    solver = _eofs_solver(ds, w, scale)
    np.testing.assert_allclose(
        res.eigenvalues().isel(component=slice(0, K)), solver.eigenvalues(neigs=K), rtol=1e-10
    )
    signs = _signs(res, solver, K)
    for name, their in zip(("sst", "slp"), solver.eofs(neofs=K), strict=True):
        mine = res.eofs()[name].isel(component=slice(0, K)).values * signs[:, None, None]
        np.testing.assert_allclose(mine, their, rtol=1e-9, atol=1e-12)


def _counted(data: xr.Dataset, chunks) -> tuple[xr.Dataset, CountingArray]:
    src = CountingArray(data["slp"].values)
    lazy = da.from_array(src, chunks=chunks, asarray=False)
    return data.assign(slp=(data["slp"].dims, lazy)), src


@pytest.mark.parametrize("chunks", [(5, -1, -1), (5, 5, 3)], ids=["time", "time-and-space"])
def test_dask_streams_blocks_of_samples_as_for_one_field(chunks):
    # The synchronous scheduler runs the tasks one at a time in dask's own
    # order: what is alive at once depends on the graph alone.
    import dask

    data = _fields(1)
    both, src = _counted(data, chunks)
    alone, src_alone = _counted(data, chunks)
    opts = dict(dim="time", center=True, n_power_iter=2, seed=0)
    with dask.config.set(scheduler="synchronous"):
        res = both.svd.compressed(2, **opts)  # sst in memory, slp on Dask
        one = alone["slp"].svd.compressed(2, **opts)
    assert len(src.reads) == N_TIME // 5 * (1 if chunks[1] == -1 else 2)
    assert src.reads == src_alone.reads  # each chunk read once per pass, as for slp alone
    if chunks[1] == -1:  # chunked along time only: stripes of samples, as for slp alone
        assert res.settings["stripes"] == one.settings["stripes"] == "samples"
        assert src.max_live == src_alone.max_live <= 2  # a block of samples at a time
    else:  # chunked along both: the planner's choice for this shape, never all at once
        assert src.max_live < len(src.reads), (res.settings["stripes"], src.max_live)


# ------------------------------------------------------------------ errors
def test_mismatched_sample_coords_in_a_mapping():
    ds = _fields()
    shifted = ds["slp"].assign_coords(time=ds["time"] + np.timedelta64(1, "D"))
    with pytest.raises(ValueError, match=r"'slp' has other 'time' labels.*xr\.align"):
        multivariate.svd({"sst": ds["sst"], "slp": shifted}, 2, dim="time")
    # the same labels: a mapping decomposes as the Dataset does
    res = multivariate.exact({"sst": ds["sst"], "slp": ds["slp"]}, dim="time", center=True)
    np.testing.assert_allclose(res.S, ds.svd.exact(dim="time", center=True).S, rtol=1e-12)
    same_name = ds["slp"].rename(y="lat", x="lon")
    with pytest.raises(ValueError, match=r"both have a feature dimension 'lat'.*Rename one"):
        multivariate.svd({"sst": ds["sst"], "slp": same_name}, 2, dim="time")


def test_dataset_of_fields_over_different_periods():
    ds = _fields()
    later = ds["slp"].assign_coords(time=xr.date_range("2000-04-01", periods=N_TIME, freq="MS"))
    outer = xr.Dataset({"sst": ds["sst"], "slp": later})  # xarray aligns: NaN in the gaps
    with pytest.raises(
        xsvd.MissingValueError, match=r"is NaN at every feature at 3 of 43 samples.*align"
    ):
        outer.svd(2, dim="time", center=True)


def test_variable_without_the_sample_dim():
    ds = _fields().assign(orography=(("lat", "lon"), np.zeros((8, 10))))
    with pytest.raises(ValueError, match=r"'orography' has no sample dimension 'time'.*drop_vars"):
        ds.svd(2, dim="time")
    ds = _fields().assign(nino=("time", np.zeros(N_TIME)))
    with pytest.raises(ValueError, match=r"'nino' has only the sample dimension.*drop_vars"):
        ds.svd(2, dim="time")
    with pytest.raises(ValueError, match=r"'nino' has only"):
        ds.svd(2)  # the default dim: time


def test_weights_for_an_unknown_variable_or_on_the_wrong_dims():
    ds = _fields()
    with pytest.raises(ValueError, match=r"weights are given for 'tas'.*Key the weights"):
        ds.svd(2, dim="time", weights={"tas": xsvd.coslat_weights(ds["sst"])})
    with pytest.raises(ValueError, match=r"weights of variable 'slp': .*'lat'"):
        ds.svd(2, dim="time", weights=xsvd.coslat_weights(ds["sst"]))  # slp is on (y, x)


def test_project_needs_every_variable_and_shared_samples():
    ds = _fields()
    res = ds.svd.exact(dim="time", center=True, k=2)
    with pytest.raises(ValueError, match=r"lack the variable 'slp'"):
        res.project(ds[["sst"]])
    other = {"sst": ds["sst"], "slp": ds["slp"].isel(time=slice(0, 5))}
    with pytest.raises(ValueError, match=r"'slp' has samples.*xr\.align"):
        res.project(other)


def test_non_numeric_variables_and_empty_datasets():
    ds = _fields().assign(label=(("time", "lat"), np.full((N_TIME, 8), "a")))
    with pytest.raises(TypeError, match=r"'label' holds <U1 values.*drop_vars"):
        ds.svd(2, dim="time")
    with pytest.raises(ValueError, match="no data variables"):
        xr.Dataset(coords={"time": [1, 2]}).svd(1, dim="time")


def test_accessor_signature_result_protocol_and_repr(ds):
    res = ds.svd(3, dim="time", center=True)
    U, S, V = res
    assert U.dims == ("time", "component") and S.dims == ("component",)
    assert list(V.data_vars) == ["sst", "slp"] and V["slp"].dims == ("component", "y", "x")
    np.testing.assert_array_equal(V["sst"]["component"], U["component"])
    norms = sum((V[n].fillna(0) ** 2).sum(V[n].dims[1:]) for n in V.data_vars)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)  # unit norm over all variables
    assert "MultivariateResult" in repr(res) and "'slp': {'y': 5, 'x': 6}" in repr(res)
    assert res.variables == ("sst", "slp") and res.scales is None
    assert isinstance(res, xsvd.MultivariateResult)
    with pytest.raises(TypeError, match="unexpected keyword argument 'equal_varaince'"):
        ds.svd(2, dim="time", equal_varaince=True)


@pytest.mark.parametrize("options", [{}, {"equal_variance": True}, {"standardize": True}])
def test_every_backend_gives_numpys_numbers_where_the_data_are(backend, options):
    """Dataset.svd on NumPy, Dask (both stripe orientations) and a device (array-api-strict's
    device1; it failed there: "'DType' object has no attribute 'kind'"): the same numbers,
    results (V, reconstruct, project) where the data were."""
    from xsvd.core import backend as xb

    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 6)) @ rng.standard_normal((6, 12)) + 5.0
    b = rng.standard_normal((40, 7)) + a[:, :7]
    plain = xr.Dataset({"a": (("time", "x"), a), "b": (("time", "y"), 2 * b)})
    data = xr.Dataset({"a": (("time", "x"), backend(a)), "b": (("time", "y"), backend(2 * b))})
    ref = plain.svd(k=3, dim="time", center=True, **options)
    res = data.svd(k=3, dim="time", center=True, **options)
    for name in ("a", "b"):
        got = backend.host(res.V[name].data)
        assert np.abs(got - ref.V[name].values).max() < 1e-10
    assert np.abs(backend.host(res.S.data) - ref.S.values).max() < 1e-10 * ref.S.values[0]
    rebuilt = res.reconstruct()
    scores = res.project(data)
    if backend.name == "strict":  # nothing came back to the host
        for x in (res.V["a"].data, res.U.data, rebuilt["b"].data, scores.data):
            assert xb.device(x) == res.U.data.device and not isinstance(x, np.ndarray)
    np.testing.assert_allclose(backend.host(rebuilt["a"].data), ref.reconstruct()["a"].values)
    np.testing.assert_allclose(backend.host(scores.data), backend.host(res.U.data), atol=1e-9)


@pytest.mark.parametrize("solver", ["compressed", "exact"])
def test_given_center_per_variable(backend, solver):
    """``center=`` values per variable (a Dataset, or a dict over each variable's feature
    dims, one DataArray broadcast over the dims it lacks): the joint SVD of the variables
    minus them, on every backend; the results keep the given values as ``mean``. It was
    refused, naming an internal 'stacked_feature' dimension."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 6)) @ rng.standard_normal((6, 12)) + 5.0
    b = rng.standard_normal((40, 7)) + a[:, :7]
    ca, cb = np.linspace(4.0, 6.0, 12), 1.5
    data = xr.Dataset({"a": (("time", "x"), backend(a)), "b": (("time", "y"), backend(b))})
    center = {"a": xr.DataArray(ca, dims="x"), "b": xr.DataArray(cb)}
    if solver == "exact":
        center = xr.Dataset(center)
        res = data.svd.exact(k=3, dim="time", center=center)
    else:
        res = data.svd.compressed(k=3, dim="time", center=center, seed=0)
    want = np.linalg.svd(np.hstack([a - ca, b - cb]), compute_uv=False)[:3]
    np.testing.assert_allclose(backend.host(res.S.data), want, rtol=1e-9)
    assert res.settings["center"] == "given"
    np.testing.assert_allclose(backend.host(res.mean["a"].data), ca)
    np.testing.assert_allclose(backend.host(res.mean["b"].data), np.full(7, cb))
    rebuilt = res.reconstruct(k=3)
    full = data.svd.exact(dim="time", center=center).reconstruct()
    np.testing.assert_allclose(backend.host(full["b"].data), b, atol=1e-9)
    assert rebuilt["a"].dims == ("time", "x")


def test_given_center_lacking_a_variable_advice_subtracts_nothing_from_it():
    """center values for one variable only: refused, and the advised entry of zeros for the
    other gives the joint SVD of the first minus its values beside the second as it is."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((30, 4)) + 2.0, rng.standard_normal((30, 3)) - 1.0
    ds = xr.Dataset({"a": (("time", "x"), a), "b": (("time", "y"), b)})
    center = {"a": xr.DataArray(a.mean(axis=0), dims="x")}
    with pytest.raises(ValueError, match="center have no entry for the variable 'b'") as err:
        ds.svd(k=2, dim="time", center=center)
    code = re.findall(r"`([^`]+)`", str(err.value))[-1]
    fixed = eval(code[len("center=") :], {"center": center, "ds": ds, "xr": xr})
    res = ds.svd(k=2, dim="time", center=fixed)
    want = np.linalg.svd(np.hstack([a - a.mean(axis=0), b]), compute_uv=False)[:2]
    np.testing.assert_allclose(res.S.values, want, rtol=1e-10)
