"""Saved results come back as they were: netCDF as well as Zarr, cftime dates, size-1 dims.

``res.to_dataset().to_netcdf(path)`` reopens with ``xsvd.open_result(path)``
(netCDF-3 through scipy; netCDF-4 through h5netcdf or netCDF4 where
installed); every attribute of the saved form is a number or text. Dates of
any cftime calendar, the standard one included, come back as cftime dates of
that calendar. Saving and reopening warn about nothing.
"""

from __future__ import annotations

import importlib
import json
import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd import datasets

pytest.importorskip("scipy", reason="netCDF-3 files are read through scipy: pip install scipy")


def _installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


#: netCDF engines to write with: scipy (netCDF-3) always, the netCDF-4 ones where installed.
ENGINES = [
    pytest.param(
        engine,
        marks=pytest.mark.skipif(
            not _installed(module), reason=f"netCDF-4 files need {module}: pip install {module}"
        ),
    )
    for engine, module in (("scipy", "scipy"), ("h5netcdf", "h5netcdf"), ("netcdf4", "netCDF4"))
]


@pytest.fixture(scope="module")
def sst():
    return datasets.climate_field(n_time=36, n_lat=10, n_lon=20, seed=6)


@pytest.fixture(scope="module")
def res(sst):
    w = xsvd.coslat_weights(sst)
    return sst.svd.compressed(3, dim="time", center=True, weights=w, seed=2**40, n_power_iter=2)


def saved(result: xsvd.SVDResult, path, engine: str):
    """Save ``result`` with ``engine`` ("zarr" or a netCDF engine) and reopen it."""
    if engine == "zarr":
        pytest.importorskip("zarr", reason='Zarr stores need zarr: pip install "xsvd[io]"')
        result.to_zarr(path)
    else:
        result.to_dataset().to_netcdf(path, engine=engine)
    return xsvd.open_result(path)


def assert_same(a: xsvd.SVDResult, b: xsvd.SVDResult, new: xr.DataArray) -> None:
    for x, y in zip(a, b, strict=True):
        xr.testing.assert_identical(x, y)
    assert b.method == a.method and b.settings == a.settings
    xr.testing.assert_allclose(b.reconstruct(), a.reconstruct(), rtol=1e-12)
    xr.testing.assert_allclose(b.project(new), a.project(new), rtol=1e-12)
    xr.testing.assert_allclose(b.explained_variance_ratio, a.explained_variance_ratio)
    xr.testing.assert_allclose(b.errors, a.errors)
    if a.mean is not None:
        xr.testing.assert_identical(b.mean, a.mean)


# ------------------------------------------------------------------ netCDF


@pytest.mark.parametrize("engine", ENGINES)
def test_netcdf_round_trip(sst, res, tmp_path, engine):
    back = saved(res, tmp_path / "eofs.nc", engine)
    assert_same(res, back, sst)
    assert back.settings["seed"] == 2**40  # beyond netCDF-3's 32-bit integers: JSON text
    assert back.settings["krylov"] is res.settings["krylov"] and back.center is True
    xr.testing.assert_identical(back.U.month, sst.month)
    assert back.reconstruct().attrs == sst.attrs


def test_attributes_are_numbers_or_text(res):
    attrs = res.to_dataset().attrs
    odd = {
        k: v
        for k, v in attrs.items()
        if isinstance(v, bool) or not isinstance(v, int | float | str)
    }
    assert not odd, f"not netCDF attributes: {odd}"
    settings = json.loads(attrs["xsvd_settings"])  # every setting, as one JSON text
    assert settings["center"] is True and settings["seed"] == 2**40


def test_other_settings_survive_netcdf3(sst, tmp_path):
    res = sst.svd(k=2, dim="time")
    res.settings.update(
        flag=False, label="run 7", sizes=(3, 4), big=-(2**33), ratio=0.25, nothing=None
    )
    back = saved(res, tmp_path / "r.nc", "scipy")
    assert back.settings["flag"] is False and back.settings["label"] == "run 7"
    assert back.settings["sizes"] == [3, 4] and back.settings["big"] == -(2**33)
    assert back.settings["ratio"] == 0.25 and back.settings["nothing"] is None
    assert back.settings["center"] is False and back.center is False


def test_genotype_result_round_trip_netcdf3(tmp_path):
    gt = datasets.genotypes(n_variants=400, n_samples=50, seed=1)
    res = gt.svd.compressed(2, dim="samples", center=True, seed=0)
    back = saved(res, tmp_path / "pca.nc", "scipy")
    assert_same(res, back, gt)
    assert list(back.U.population.values) == list(gt.population.values)


def test_size_one_dims_survive_saving(sst, tmp_path):
    field = sst.expand_dims(level=[500.0], axis=1)
    res = field.svd(k=2, dim="time", center=True)
    for engine in ("scipy", "zarr"):
        back = saved(res, tmp_path / f"level.{engine}", engine)
        assert_same(res, back, field)
        assert back.reconstruct().dims == field.dims
        assert back.V.dims == ("component", "level", "lat", "lon")
        assert back.V.level.values.tolist() == [500.0]


def test_open_result_names_what_is_wrong(sst, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a result")
    with pytest.raises(xsvd.StoreReadError, match="not a netCDF file"):
        xsvd.open_result(text)
    other = tmp_path / "field.nc"
    sst.to_dataset().to_netcdf(other, engine="scipy")
    with pytest.raises(ValueError, match=r"not a result written by xsvd.*to_netcdf"):
        xsvd.open_result(other)


# ----------------------------------------------------------------- cftime


@pytest.mark.parametrize("calendar", ["standard", "proleptic_gregorian", "noleap", "360_day"])
@pytest.mark.parametrize("engine", ["zarr", "scipy"])
def test_cftime_dates_come_back_in_their_calendar(sst, tmp_path, calendar, engine):
    cftime = pytest.importorskip("cftime", reason="cftime dates need cftime: pip install cftime")
    times = xr.date_range("1990-01-01", periods=36, freq="MS", calendar=calendar, use_cftime=True)
    field = sst.assign_coords(time=times)
    res = field.svd(k=2, dim="time", center=True)
    back = saved(res, tmp_path / f"r.{engine}", engine)
    values = back.U.time.values
    assert all(isinstance(t, cftime.datetime) and t.calendar == calendar for t in values)
    assert list(values) == list(times)
    assert_same(res, back, field)
    assert isinstance(back.reconstruct().indexes["time"], xr.CFTimeIndex)


def test_datetime64_dates_stay_datetime64(sst, res, tmp_path):
    back = saved(res, tmp_path / "r.zarr", "zarr")
    assert back.U.time.dtype.kind == "M"
    np.testing.assert_array_equal(back.U.time.values, sst.time.values)


# --------------------------------------------------------------- warnings


def test_saving_and_reopening_warn_about_nothing(sst, tmp_path):
    pytest.importorskip("zarr", reason='Zarr stores need zarr: pip install "xsvd[io]"')
    gt = datasets.genotypes(n_variants=300, n_samples=40, seed=2)
    results = {
        "climate": sst.svd(k=2, dim="time", center=True),
        "genotypes": gt.svd(k=2, dim="samples", center=True),  # text coordinates
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # consolidated metadata, fixed-width text, ...
        for name, res in results.items():
            res.to_zarr(tmp_path / f"{name}.zarr")
            back = xsvd.open_result(tmp_path / f"{name}.zarr")
            res.to_dataset().to_netcdf(tmp_path / f"{name}.nc", engine="scipy")
            again = xsvd.open_result(tmp_path / f"{name}.nc")
            for a, b, c in zip(res, back, again, strict=True):
                xr.testing.assert_identical(a, b)
                xr.testing.assert_identical(a, c)
    assert back.U.samples.dtype.kind == "U"  # text comes back as NumPy text, as it went in


# ------------------------------------------------------- components from 1


def _as_version_4(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as version 4 of the saved form wrote it: the same, with components from 0."""
    from xsvd.io import contents

    ds = ds.assign_coords(component=ds["component"].values - 1)
    ds.attrs["xsvd_format"] = 4
    ds.attrs["xsvd_contents"] = json.dumps(contents.record(ds))
    return ds


@pytest.mark.parametrize("engine", ["zarr", "scipy"])
def test_results_saved_with_components_from_0_open_with_components_from_1(
    sst, res, tmp_path, engine
):
    assert list(res.S["component"].values) == [1, 2, 3]  # EOF1, PC1: as papers count
    old = _as_version_4(res.to_dataset())
    assert list(old["component"].values) == [0, 1, 2]
    if engine == "zarr":
        pytest.importorskip("zarr", reason='Zarr stores need zarr: pip install "xsvd[io]"')
        path = tmp_path / "v4.zarr"
        xsvd.io.write_store(old, path)
    else:
        path = tmp_path / "v4.nc"
        old.to_netcdf(path, engine=engine)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = xsvd.open_result(path)
    assert_same(res, back, sst)  # components 1, 2, 3 again, U, S, V the same
    for part in (back.U, back.S, back.V, back.errors):
        assert list(part["component"].values) == [1, 2, 3]
    np.testing.assert_array_equal(back.V.sel(component=1), res.V.isel(component=0))
    assert res.to_dataset().attrs["xsvd_format"] == 5


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_variance_shares_of_data_beyond_float64_squares_survive_saving(method, tmp_path):
    # ||B||_F**2 overflows float64 at 1e200: the shares come from ||B||_F, which is saved
    field = datasets.climate_field(n_time=40, n_lat=6, n_lon=8, seed=2) * 1e200
    res = field.svd(k=3, dim="time", method=method, **({"seed": 0} if method != "exact" else {}))
    assert np.isinf(float(res.total_variance))
    want = res.explained_variance_ratio.values
    assert np.isfinite(want).all() and 0 < want.sum() <= 1
    path = tmp_path / "big.nc"
    res.to_dataset().to_netcdf(path, engine="scipy")
    again = xsvd.open_result(path)
    np.testing.assert_allclose(again.explained_variance_ratio.values, want, rtol=1e-12)
