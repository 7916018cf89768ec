"""Saved results read back whole or raise; units survive saving and are checked by ``project``.

Issue 20, items 5 and 7:

- a chunk of ``U``, the folder of ``V``, or ``S`` deleted from a saved
  result (which Zarr reads as the fill value, NaN) raises
  :class:`xsvd.StoreReadError` naming the store, the variable and the chunk,
  from ``open_result`` and from a lazily opened Dataset alike; so does a
  changed byte in a netCDF file (no checksums of its own) and a truncated one;
  stores of the previous version (3) open, without a warning, and raise too
  where a chunk is gone;
- pint units come back (quantified again with pint and pint-xarray, else as
  ``units`` attributes), ``delta_degC`` on ``S`` and ``degC`` on the mean,
  and ``project`` converts new data to the decomposed data's units (kelvin
  to degC: an absolute conversion) or raises naming both units.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd import datasets


def _zarr():
    return pytest.importorskip("zarr", reason='Zarr stores need zarr: pip install "xsvd[io]"')


#: results from both solvers, on NumPy and on Dask-backed data
CASES = [(m, b) for m in ("exact", "compressed") for b in ("numpy", "dask")]


def _field(backend: str = "numpy") -> xr.DataArray:
    """A small SST-like field in degC, land NaN; Dask-backed for ``backend="dask"``."""
    sst = datasets.climate_field(n_time=36, n_lat=8, n_lon=16, seed=3)
    for c in ("lat", "lon"):  # units pint does not know (degrees_north): not needed here
        sst[c].attrs.pop("units", None)
    return sst.chunk({"time": 12}) if backend == "dask" else sst


def _svd(data: xr.DataArray, method: str, **kw) -> xsvd.SVDResult:
    kw = dict(k=3, dim="time", center=True, method=method, **kw)
    if method == "compressed":
        kw.update(seed=1, n_power_iter=2)
    return xsvd.svd(data, **kw)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def result(request):
    method, backend = request.param
    field = _field(backend)
    return field, _svd(field, method, weights=xsvd.coslat_weights(field))


def _remove(path):
    shutil.rmtree(path) if path.is_dir() else path.unlink()


# ------------------------------------------------------------ whole or raise


def test_an_intact_result_opens_unchanged_and_without_warning(result, tmp_path):
    zarr = _zarr()
    field, res = result
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    record = json.loads(zarr.open_group(path, mode="r").attrs["xsvd_contents"])
    assert set(record) >= {"U", "S", "V", "mean", "weights", "nan_features", "time", "lat"}
    assert record["U"]["shape"] == [36, 3] and isinstance(record["U"]["crc32"], int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = xsvd.open_result(path)
    for a, b in zip(res.compute(), back, strict=True):
        xr.testing.assert_identical(a, b)
    np.testing.assert_allclose(back.project(field).values, back.U.values, atol=1e-8)


def test_a_deleted_chunk_of_U_raises(result, tmp_path):
    _zarr()
    _, res = result
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    _remove(path / "U" / "c" / "0" / "0")
    with pytest.raises(xsvd.StoreReadError, match=r"r\.zarr.*chunk \(0, 0\) of 'U'.*missing"):
        xsvd.open_result(path)
    # a store of several chunks of U (written by xarray): the chunk is named
    many = tmp_path / "chunked.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notice about consolidated metadata
        res.to_dataset().chunk({"time": 6}).to_zarr(many)
    _remove(many / "U" / "c" / "3" / "0")
    with pytest.raises(xsvd.StoreReadError, match=r"chunk \(3, 0\) of 'U' is missing"):
        xsvd.open_result(many)


@pytest.mark.parametrize("consolidated", [True, False])
def test_a_deleted_folder_of_V_raises(result, tmp_path, consolidated):
    _zarr()
    _, res = result
    path = tmp_path / "r.zarr"
    if consolidated:
        res.to_zarr(path)
    else:  # V then vanishes from the Dataset: the record says it was written
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res.to_dataset().to_zarr(path, consolidated=False)
    _remove(path / "V")
    with pytest.raises(xsvd.StoreReadError, match=r"r\.zarr.*variable 'V' is missing"):
        xsvd.open_result(path)


@pytest.mark.parametrize("what", ["S", "S/c/0"])
def test_a_deleted_S_raises(result, tmp_path, what):
    _zarr()
    _, res = result
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    _remove(path / what)
    with pytest.raises(xsvd.StoreReadError, match=r"r\.zarr.*'S'.*missing.*write the result"):
        xsvd.open_result(path)


def test_a_lazily_opened_result_raises(result, tmp_path):
    _zarr()
    field, res = result
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    lazy = xr.open_zarr(path)  # Dask-backed: from_dataset reads and checks it
    assert lazy["U"].chunks is not None
    back = xsvd.SVDResult.from_dataset(lazy)
    xr.testing.assert_identical(back.V, res.compute().V)
    _remove(path / "U" / "c" / "0" / "0")
    with pytest.raises(xsvd.StoreReadError, match=r"r\.zarr.*chunk \(0, 0\) of 'U'"):
        xsvd.SVDResult.from_dataset(xr.open_zarr(path))


def test_a_lazy_result_is_saved_whole_and_checked(tmp_path):
    _zarr()
    field = _field("dask")
    lazy = _svd(field, "compressed", compute=False)
    path = tmp_path / "r.zarr"
    lazy.to_zarr(path)
    ds = lazy.to_dataset()  # computed for the checksums: in memory
    assert isinstance(ds["U"].data, np.ndarray) and "xsvd_contents" in ds.attrs
    np.testing.assert_allclose(xsvd.open_result(path).S.values, lazy.compute().S.values)
    _remove(path / "V" / "c" / "0" / "0" / "0")
    with pytest.raises(xsvd.StoreReadError, match="'V'"):
        xsvd.open_result(path)


def test_a_changed_value_in_a_dataset_raises(result):
    _, res = result
    ds = res.to_dataset().copy(deep=True)  # not the result's own arrays
    ds["U"][2, 1] = 0.5
    with pytest.raises(xsvd.StoreReadError, match="'U' does not hold the values it was written"):
        xsvd.SVDResult.from_dataset(ds)
    ds = res.to_dataset().drop_vars("mean")
    with pytest.raises(xsvd.StoreReadError, match="variable 'mean' is missing"):
        xsvd.SVDResult.from_dataset(ds)


def test_a_changed_or_truncated_netcdf_file_raises(result, tmp_path):
    pytest.importorskip("scipy", reason="netCDF-3 files are read through scipy: pip install scipy")
    field, res = result
    path = tmp_path / "r.nc"
    res.to_dataset().to_netcdf(path, engine="scipy")
    back = xsvd.open_result(path)
    np.testing.assert_allclose(back.project(field).values, res.compute().U.values, atol=1e-8)
    data = bytearray(path.read_bytes())
    at = bytes(data).index(res.compute().U.values[5].astype(">f8").tobytes())
    data[at + 3] ^= 0x01  # a value of U changes a little: no error of its own in netCDF
    changed = tmp_path / "changed.nc"
    changed.write_bytes(bytes(data))
    with pytest.raises(xsvd.StoreReadError, match=r"changed\.nc.*'U' does not hold the values"):
        xsvd.open_result(changed)
    short = tmp_path / "short.nc"
    short.write_bytes(path.read_bytes()[: len(data) * 3 // 4])
    with pytest.raises(xsvd.StoreReadError, match=r"short\.nc.*truncated or corrupt"):
        xsvd.open_result(short)


def _as_version_3(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as version 3 of the saved form wrote it: no record, units as before."""
    ds = ds.copy()
    units = json.loads(ds.attrs.pop("xsvd_units", "null"))
    del ds.attrs["xsvd_contents"]
    ds.attrs["xsvd_format"] = 3
    if units and units["data"]:
        ds.attrs["xsvd_data_units"] = units["data"]
    ds["total_variance"].attrs.pop("units", None)
    return ds


def test_results_of_version_3_open_and_raise_when_incomplete(result, tmp_path):
    _zarr()
    field, res = result
    path = tmp_path / "v3.zarr"
    xsvd.io.write_store(_as_version_3(res.to_dataset()), path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = xsvd.open_result(path)
    xr.testing.assert_identical(back.U, res.compute().U)
    np.testing.assert_allclose(back.reconstruct().values, res.reconstruct().values, atol=1e-9)
    _remove(path / "U" / "c" / "0" / "0")
    with pytest.raises(xsvd.StoreReadError, match=r"v3\.zarr.*chunk \(0, 0\) of 'U'"):
        xsvd.open_result(path)
    # V is NaN at all-NaN (land) features only: a lost chunk is NaN everywhere
    path = tmp_path / "v3v.zarr"
    xsvd.io.write_store(_as_version_3(res.to_dataset()), path)
    _remove(path / "V")
    with pytest.raises(xsvd.StoreReadError, match="'V' is missing"):
        xsvd.open_result(path)


# --------------------------------------------------------------------- units


def _pint():
    """pint, after checking that pint-xarray is there too (else the test skips)."""
    pint = pytest.importorskip(
        "pint", reason='units need pint and pint-xarray: pip install "xsvd[units]"'
    )
    pytest.importorskip(
        "pint_xarray", reason='units need pint and pint-xarray: pip install "xsvd[units]"'
    )
    return pint


@pytest.mark.parametrize(("method", "backend"), CASES)
@pytest.mark.parametrize("engine", ["zarr", "scipy"])
def test_pint_units_of_degC_data_come_back(tmp_path, method, backend, engine):
    pint = _pint()
    warnings.simplefilter("error", pint.UnitStrippedWarning)  # silent unit loss fails
    q = _field(backend).pint.quantify("degC")
    res = _svd(q, method)
    assert str(res.S.data.units) == "delta_degree_Celsius"
    path = tmp_path / f"r.{engine}"
    if engine == "zarr":
        _zarr()
        res.to_zarr(path)
    else:
        pytest.importorskip("scipy", reason="netCDF-3 needs scipy: pip install scipy")
        res.to_dataset().to_netcdf(path, engine=engine)
    back = xsvd.open_result(path)
    assert str(back.S.data.units) == "delta_degree_Celsius"
    assert str(back.mean.data.units) == "degree_Celsius"
    assert str(back.total_variance.data.units) == "delta_degree_Celsius ** 2"
    assert str(back.reconstruct().data.units) == "degree_Celsius"
    assert back.input_attrs == res.input_attrs
    done = res.compute()
    np.testing.assert_array_equal(back.S.data.magnitude, np.asarray(done.S.data.magnitude))
    expected = done.project(q).values
    np.testing.assert_allclose(back.project(q).values, expected, rtol=0, atol=1e-12)
    kelvin = q.pint.to("K")  # absolute: the mean is subtracted in degC
    np.testing.assert_allclose(back.project(kelvin).values, expected, atol=1e-8)


def test_units_come_back_as_attributes_without_pint_xarray(tmp_path, monkeypatch):
    _zarr()
    _pint()
    q = _field().pint.quantify("degC")
    res = _svd(q, "exact")
    res.to_zarr(tmp_path / "r.zarr")
    monkeypatch.setitem(sys.modules, "pint_xarray", None)  # as if not installed
    back = xsvd.open_result(tmp_path / "r.zarr")
    assert isinstance(back.S.data, np.ndarray) and isinstance(back.mean.data, np.ndarray)
    assert back.S.attrs["units"] == "delta_degree_Celsius"
    assert back.errors["S"].attrs["units"] == "delta_degree_Celsius"
    assert back.mean.attrs["units"] == "degree_Celsius"
    assert back.reconstruct().attrs["units"] == "degree_Celsius"
    plain = _field()  # units attribute "degC"
    expected = res.project(q).values
    np.testing.assert_allclose(back.project(plain).values, expected, atol=1e-12)
    kelvin = (plain + 273.15).assign_attrs(units="K")
    np.testing.assert_allclose(back.project(kelvin).values, expected, atol=1e-8)
    # saved again, the units are still those of the quantified data
    back.to_zarr(tmp_path / "again.zarr")
    monkeypatch.delitem(sys.modules, "pint_xarray")
    again = xsvd.open_result(tmp_path / "again.zarr")
    assert str(again.S.data.units) == "delta_degree_Celsius"


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_kelvin_onto_degC_is_converted_with_pint(backend):
    pytest.importorskip("pint", reason='units need pint: pip install "xsvd[units]"')
    plain = _field(backend)
    assert plain.attrs["units"] == "degC"
    res = _svd(plain, "exact")
    kelvin = (plain + 273.15).assign_attrs(units="K")
    expected = res.project(plain).values
    np.testing.assert_allclose(expected, res.compute().U.values, atol=1e-8)
    np.testing.assert_allclose(res.project(kelvin).values, expected, atol=1e-8)
    with pytest.raises(ValueError, match=r"'m'.*'degC'.*cannot convert"):
        res.project(plain.assign_attrs(units="m"))
    # no units attribute on the new data: nothing to compare (arithmetic drops attrs)
    np.testing.assert_allclose(res.project(plain.drop_attrs()).values, expected, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_kelvin_onto_degC_raises_without_pint(backend, monkeypatch):
    monkeypatch.setitem(sys.modules, "pint", None)  # as if not installed
    plain = _field(backend)
    res = _svd(plain, "compressed")
    kelvin = (plain + 273.15).assign_attrs(units="K")
    for r in (res, xsvd.SVDResult.from_dataset(res.to_dataset())):
        with pytest.raises(ValueError, match=r"'K'.*'degC'.*Convert.*install pint"):
            r.project(kelvin)
        same = r.project(plain.copy(data=plain.data + 0.0))  # same units: no conversion needed
        np.testing.assert_allclose(same.values, res.compute().U.values, atol=1e-8)
