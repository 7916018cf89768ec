"""Pint units: S in data units (x weights units), U/V plain, reconstruct quantified."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
from conftest import matrix_with_spectrum, raise_if_dask_computes

import xsvd

pint = pytest.importorskip("pint", reason='needs pint and pint-xarray: pip install "xsvd[units]"')
pytest.importorskip("pint_xarray", reason='needs pint and pint-xarray: pip install "xsvd[units]"')

# Any place that silently drops units is a bug.
pytestmark = pytest.mark.filterwarnings("error::pint.UnitStrippedWarning")

ureg = pint.UnitRegistry(force_ndarray_like=True)  # as pint-xarray requires


@pytest.fixture
def plain():
    """(time, lat, lon) field in kelvin, with a clear spectrum, as plain numbers."""
    nt, ny, nx = 60, 5, 8
    a = matrix_with_spectrum(np.r_[9.0, 6, 4, 2, np.full(20, 0.1)], nt, ny * nx, seed=7)
    return xr.DataArray(
        a.reshape(nt, ny, nx) + 280.0,
        dims=("time", "lat", "lon"),
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(-40, 40, ny),
            "lon": np.arange(nx) * 45.0,
        },
        name="tas",
        attrs={"units": "K", "long_name": "air temperature"},
    )


@pytest.fixture
def quantified(plain):
    return plain.pint.quantify(unit_registry=ureg)


@pytest.fixture
def weights():
    return xr.DataArray(np.linspace(0.5, 1.5, 5), dims="lat")


def units_of(obj: xr.DataArray):
    assert isinstance(obj.data, ureg.Quantity), f"{obj.name} is not quantified"
    return obj.data.units


def assert_plain(obj: xr.DataArray):
    assert isinstance(obj.data, np.ndarray), type(obj.data)
    assert obj.dtype.kind == "f"


# ------------------------------------------------------------------ import


def test_import_xsvd_does_not_import_pint():
    code = (
        "import sys, xsvd\n"
        "bad = [m for m in ('pint', 'pint_xarray') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------- results


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_S_in_data_units_U_V_plain_and_same_values(plain, quantified, method):
    kw = dict(k=4, dim="time", center=True, method=method, seed=0 if method != "exact" else None)
    ref = xsvd.svd(plain, **kw)
    res = xsvd.svd(quantified, **kw)
    assert units_of(res.S) == ureg.kelvin
    assert "units" not in res.S.attrs  # the units live in the data, not twice
    np.testing.assert_allclose(res.S.data.magnitude, ref.S.values, rtol=1e-12)
    for got, want in ((res.U, ref.U), (res.V, ref.V)):
        assert_plain(got)
        np.testing.assert_allclose(got.values, want.values, rtol=1e-10, atol=1e-12)
    assert res.V.dims == ("component", "lat", "lon")


def test_quantified_weights_multiply_their_units_into_S(plain, quantified, weights):
    ref = plain.svd(k=3, dim="time", center=True, weights=weights)
    res = quantified.svd(
        k=3, dim="time", center=True, weights=weights.pint.quantify("m", unit_registry=ureg)
    )
    assert units_of(res.S) == ureg.kelvin * ureg.meter
    np.testing.assert_allclose(res.S.data.magnitude, ref.S.values, rtol=1e-12)
    assert_plain(res.U)
    np.testing.assert_allclose(res.U.values, ref.U.values, atol=1e-12)
    assert units_of(res.total_variance) == (ureg.kelvin * ureg.meter) ** 2
    # the weights' units cancel in the scores: the data project back onto U
    scores = res.project(quantified)
    assert_plain(scores)
    np.testing.assert_allclose(scores.values, res.U.values, atol=1e-10)
    # and reconstruct undoes the weights: data units only
    assert units_of(res.reconstruct()) == ureg.kelvin


def test_plain_weights_leave_S_in_data_units(quantified, weights):
    res = quantified.svd(k=3, dim="time", weights=weights)
    assert units_of(res.S) == ureg.kelvin


def test_reconstruct_and_mean_in_data_units(plain, quantified):
    ref = plain.svd(k=4, dim="time", center=True)
    res = quantified.svd(k=4, dim="time", center=True)
    rec = res.reconstruct()
    assert units_of(rec) == ureg.kelvin
    assert rec.dims == plain.dims and "units" not in rec.attrs
    np.testing.assert_allclose(rec.data.magnitude, ref.reconstruct().values, rtol=1e-12)
    np.testing.assert_allclose(rec.data.magnitude, plain.values, atol=0.1)  # rank 4 of ~4
    assert units_of(res.mean) == ureg.kelvin
    np.testing.assert_allclose(res.mean.data.magnitude, plain.mean("time").values)
    assert units_of(res.reconstruct(k=2)) == ureg.kelvin


def test_explained_variance_ratio_is_dimensionless(plain, quantified):
    ref = plain.svd(k=4, dim="time", center=True)
    res = quantified.svd(k=4, dim="time", center=True)
    evr = res.explained_variance_ratio
    assert_plain(evr)
    np.testing.assert_allclose(evr.values, ref.explained_variance_ratio.values, rtol=1e-12)
    assert 0.9 < float(evr.sum()) <= 1.0
    assert units_of(res.total_variance) == ureg.kelvin**2


def test_offset_units_give_delta_S_and_absolute_mean(plain):
    """degC cannot be multiplied: S (and S**2) are in delta_degC, mean and reconstruct in degC."""
    celsius = (plain - 273.15).pint.quantify("degC", unit_registry=ureg)
    ref = (plain - 273.15).svd(k=3, dim="time", center=True)
    res = celsius.svd(k=3, dim="time", center=True)
    assert units_of(res.S) == ureg.delta_degC
    assert units_of(res.total_variance) == ureg.delta_degC**2
    np.testing.assert_allclose(res.S.data.magnitude, ref.S.values, rtol=1e-12)
    assert units_of(res.mean) == ureg.degC
    assert units_of(res.reconstruct()) == ureg.degC
    np.testing.assert_allclose(res.reconstruct().data.magnitude, ref.reconstruct().values)
    # quantified weights multiply fine with the delta unit
    w = xr.DataArray(np.ones(5), dims="lat").pint.quantify("m", unit_registry=ureg)
    assert units_of(celsius.svd(k=3, dim="time", weights=w).S) == ureg.delta_degC * ureg.m
    # kelvin data project onto a degC decomposition after an absolute conversion
    kelvin = celsius.pint.to("K")
    np.testing.assert_allclose(res.project(kelvin).values, res.U.values, atol=1e-8)


# ---------------------------------------------------------------- project


def test_project_converts_to_the_data_units(quantified):
    res = quantified.svd(k=3, dim="time", center=True)
    scores = res.project(quantified.pint.to("mK"))
    assert_plain(scores)
    np.testing.assert_allclose(scores.values, res.U.values, atol=1e-9)


def test_project_rejects_incompatible_or_missing_units(plain, quantified):
    res = quantified.svd(k=3, dim="time", center=True)
    with pytest.raises(ValueError, match="not compatible"):
        res.project(plain.pint.quantify("m", unit_registry=ureg))
    with pytest.raises(ValueError, match="no units"):
        res.project(plain)
    with pytest.raises(ValueError, match="had no"):
        plain.svd(k=3, dim="time").project(quantified)


# ------------------------------------------------------------------- dask


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_dask_quantity_stays_lazy(plain, quantified, method):
    lazy_in = plain.chunk({"time": 20}).pint.quantify(unit_registry=ureg)
    kw = dict(k=3, dim="time", center=True, method=method)
    if method == "compressed":
        kw["seed"] = 1
    with raise_if_dask_computes():
        res = lazy_in.svd(compute=False, **kw)
        assert isinstance(res.S.data, ureg.Quantity)
        assert type(res.S.data.magnitude).__module__.startswith("dask")
        assert type(res.U.data).__module__.startswith("dask")
        rec = res.reconstruct()
        assert type(rec.data.magnitude).__module__.startswith("dask")
    done = res.compute()
    ref = plain.chunk({"time": 20}).svd(**kw)
    assert units_of(done.S) == ureg.kelvin
    np.testing.assert_allclose(done.S.data.magnitude, ref.S.values, rtol=1e-10)
    assert_plain(done.U)
    np.testing.assert_allclose(done.U.values, ref.U.values, atol=1e-10)
    np.testing.assert_allclose(rec.data.magnitude.compute(), ref.reconstruct().values, rtol=1e-10)


# ---------------------------------------------------------- plain inputs


def test_units_attribute_of_plain_data_goes_to_S(plain):
    res = plain.svd(k=3, dim="time")
    assert res.S.attrs["units"] == "K"
    assert_plain(res.S)
    assert res.reconstruct().attrs["units"] == "K"


def test_plain_data_with_quantified_weights(plain, weights):
    res = plain.svd(k=3, dim="time", weights=weights.pint.quantify("m", unit_registry=ureg))
    assert units_of(res.S) == ureg.kelvin * ureg.meter
    assert_plain(res.reconstruct())


# ------------------------------------------------------- coords, saving


def test_quantified_coordinates_come_back_as_units_attributes(plain):
    plain = plain.assign_coords(lat=plain.lat.assign_attrs(units="degree"))
    q = plain.pint.quantify(unit_registry=ureg)  # lat gets a PintIndex
    assert isinstance(q.lat.data, ureg.Quantity)
    res = q.svd(k=3, dim="time", center=True)
    assert units_of(res.S) == ureg.kelvin
    np.testing.assert_array_equal(res.V.lat.values, plain.lat.values)
    assert res.V.lat.attrs["units"] == "degree"
    np.testing.assert_allclose(res.project(q).values, res.U.values, atol=1e-9)


@pytest.mark.parametrize("analysis", ["mca", "extended_eof"])
def test_analyses_take_quantified_coordinates(plain, analysis):
    """As the main svd: a PintIndex on a feature coordinate neither breaks the sample
    check of MCA (``.indexes`` has no pandas form of it) nor the layout (units off first)."""
    plain = plain.assign_coords(lat=plain.lat.assign_attrs(units="degree"))
    q = plain.pint.quantify(unit_registry=ureg)
    if analysis == "mca":
        res = xsvd.mca(q, q.isel(lat=slice(0, 3)), 2, seed=0)
        want = xsvd.mca(plain, plain.isel(lat=slice(0, 3)), 2, seed=0)
        got, ref = res.left_patterns, want.left_patterns
    else:
        res = xsvd.extended_eof(q, 2, embedding=3, seed=0)
        want = xsvd.extended_eof(plain, 2, embedding=3, seed=0)
        got, ref = res.patterns, want.patterns
    np.testing.assert_array_equal(got.lat.values, plain.lat.values)
    assert got.lat.attrs["units"] == "degree"
    np.testing.assert_allclose(got.values, ref.values, atol=1e-12)


def test_to_dataset_writes_units_as_attributes(quantified):
    ds = quantified.svd(k=3, dim="time", center=True).to_dataset()
    for name in ("S", "mean"):
        assert_plain(ds[name])
        assert ureg.Unit(ds[name].attrs["units"]) == ureg.kelvin


def test_units_survive_to_zarr(quantified, tmp_path):
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    res = quantified.svd(k=2, dim="time", center=True)
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    back = xsvd.open_result(path)  # quantified again (pint's application registry)
    assert str(back.S.data.units) == "kelvin"
    assert str(back.reconstruct().data.units) == "kelvin"
    np.testing.assert_allclose(back.S.data.magnitude, res.S.data.magnitude)
