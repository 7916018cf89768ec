"""``xsvd.coslat_weights``: sqrt(cos(latitude)) area weights from a field's latitude."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd

LAT = np.array([-90.0, -60.0, 0.0, 30.0, 60.0, 90.0])


def formula(lat):
    """The reference: the one explicit sqrt(cos(lat)) in the tests."""
    return np.sqrt(np.cos(np.deg2rad(lat)))


def field(name="lat", attrs=None, values=LAT, var="z"):
    rng = np.random.default_rng(0)
    return xr.DataArray(
        rng.standard_normal((5, values.size)),
        dims=("t", name),
        coords={name: (name, values, attrs or {})},
        name=var,
    )


def test_values_are_the_formula_exactly():
    sst = xsvd.datasets.climate_field(n_time=12, n_lat=18, n_lon=36, seed=3)
    w = xsvd.coslat_weights(sst)
    np.testing.assert_array_equal(w.values, formula(sst.lat).values)  # bit for bit
    assert w.dtype == np.float64 and w.dims == ("lat",) and w.name == "weights"
    assert w.attrs == {"long_name": "sqrt(cos(lat))"}
    xr.testing.assert_identical(w.lat, sst.lat)  # labelled like the field
    # at the poles the weight is 0 (cos rounds to +6e-17 there; never NaN)
    w = xsvd.coslat_weights(field())
    np.testing.assert_allclose(w.values, np.sqrt([0, 0.5, 1, np.sqrt(0.75), 0.5, 0]), atol=1e-8)
    assert (w.values >= 0).all() and np.isfinite(w.values).all()


def test_float32_latitude_keeps_its_dtype():
    lat32 = LAT.astype(np.float32)
    w = xsvd.coslat_weights(field(values=lat32))
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w.values[1:-1], formula(lat32[1:-1]))
    # in float32 cos(±90°) rounds below 0: the bare formula gives NaN, the weights 0
    assert np.isnan(formula(lat32[[0, -1]])).all() and (w.values[[0, -1]] == 0).all()


@pytest.mark.parametrize(
    "name, attrs",
    [
        ("y", {"standard_name": "latitude"}),
        ("phi", {"units": "degrees_N"}),
        ("phi", {"units": " degree_north "}),
        ("LAT", {}),
        ("latitude", {}),
        ("nav_lat", {}),
    ],
)
def test_finds_latitude_by_standard_name_units_or_name(name, attrs):
    w = xsvd.coslat_weights(field(name, attrs))
    assert w.dims == (name,) and w.attrs["long_name"] == f"sqrt(cos({name}))"
    assert w.values[2] == 1.0  # latitude 0


def test_standard_name_or_units_win_over_a_name():
    da = field("lat", values=np.zeros(6)).assign_coords(
        phi=("lat", LAT, {"standard_name": "latitude"})
    )
    assert xsvd.coslat_weights(da).attrs["long_name"] == "sqrt(cos(phi))"
    assert xsvd.coslat_weights(da, lat="lat").attrs["long_name"] == "sqrt(cos(lat))"


def test_curvilinear_latitude_and_a_dataset():
    lat2d = np.linspace(-60, 60, 12).reshape(3, 4)
    ds = xr.Dataset(
        {"sst": (("time", "y", "x"), np.ones((2, 3, 4)))},
        coords={"nav_lat": (("y", "x"), lat2d)},
    )
    w = xsvd.coslat_weights(ds)
    assert w.dims == ("y", "x")
    np.testing.assert_array_equal(w.values, formula(lat2d))
    xr.testing.assert_identical(w, xsvd.coslat_weights(ds["sst"]))


def test_lat_names_the_coordinate():
    da = field("phi")  # not recognized by name, standard_name or units
    with pytest.raises(ValueError, match=r"need a latitude coordinate .*'z' has the coord"):
        xsvd.coslat_weights(da)
    w = xsvd.coslat_weights(da, lat="phi")
    assert w.dims == ("phi",)
    np.testing.assert_array_equal(w.values, xsvd.coslat_weights(field()).values)
    with pytest.raises(ValueError, match=r"lat='theta' is not a coordinate of 'z'.*\['phi'\]"):
        xsvd.coslat_weights(da, lat="theta")


def test_latitude_along_the_sample_dims():
    # the weights are per feature: a latitude along dim= is skipped, or an error
    da = field().assign_coords(ylat=("t", np.zeros(5), {"units": "degrees_north"}))
    assert xsvd.coslat_weights(da, dim="t").dims == ("lat",)
    assert xsvd.coslat_weights(da).dims == ("t",)  # ranked first without dim=
    with pytest.raises(ValueError, match=r"'lat' lies along the sample dimension\(s\) \['lat'\]"):
        xsvd.coslat_weights(field(), dim=["lat"])


@pytest.mark.parametrize("bad", [LAT * 2, LAT + 180, np.r_[LAT[:-1], np.nan]])
def test_latitudes_not_in_degrees_are_refused(bad):
    with pytest.raises(ValueError, match="'lat' has values outside -90 to 90 .or NaN."):
        xsvd.coslat_weights(field(values=bad))


def test_weights_work_in_an_eof_analysis():
    sst = xsvd.datasets.climate_field(n_time=24, n_lat=6, n_lon=12, seed=1)
    w = xsvd.coslat_weights(sst, dim="time")
    res = sst.svd(k=3, dim="time", center=True, weights=w)
    anomalies = (sst - sst.mean("time")) * w
    ref = np.linalg.svd(np.nan_to_num(anomalies.values.reshape(24, -1)), compute_uv=False)
    np.testing.assert_allclose(res.S.values, ref[:3], rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pole_weights_are_zero_not_negative_or_nan(dtype):
    # float32: cos(deg2rad(90)) is -4.4e-8, whose square root is NaN (issue 31, item 8)
    lat = np.array([-90.0, -45.0, 0.0, 45.0, 90.0], dtype=dtype)
    w = xsvd.coslat_weights(field(values=lat))
    assert w.dtype == dtype and (w.values >= 0).all()
    if dtype == "float32":  # float64's cos(90°) is 6e-17, its square root 8e-9
        assert w.values[0] == w.values[-1] == 0.0
    np.testing.assert_allclose(w.values[1:-1], np.sqrt(np.cos(np.deg2rad([-45.0, 0, 45]))), 1e-6)
    data = xr.DataArray(np.random.default_rng(0).standard_normal((20, 5)), dims=("t", "lat"))
    res = data.assign_coords(lat=lat).svd(k=2, dim="t", center=True, weights=w)
    assert np.isfinite(res.S.values).all() and float(res.weights[-1]) < 1e-8
