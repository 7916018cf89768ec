"""Defaults that must not surprise: the sample dimension, size-1 dims, yes/no options, NaN advice.

- ``dim`` omitted: the first dimension only where it is unambiguous (2-D
  data, or a first dimension that is the only time-like one); otherwise a
  ``ValueError`` that lists the dims and names the ``dim=`` to pass.
- Size-1 dimensions are kept: in ``U``, ``V``, ``mean`` and ``reconstruct()``,
  with their coordinates (issue 20, item 9).
- ``center``, ``compute``, ``progress``, ``krylov``: True or False (krylov
  also None), anything else a ``TypeError``.
- A NaN error whose pattern says "sample and feature dims swapped" says so,
  naming the dimension to pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd import datasets


@pytest.fixture(scope="module")
def sst():
    """(time, lat, lon), NaN over land, datetime64 times."""
    return datasets.climate_field(n_time=48, n_lat=12, n_lon=24, seed=4)


def reference_s(data: xr.DataArray, sample_dims, k: int) -> np.ndarray:
    """Singular values of the (samples x features) matrix built with xarray's own stack."""
    features = [d for d in data.dims if d not in sample_dims]
    a = data.stack(s=list(sample_dims), f=features).transpose("s", "f").values
    return np.linalg.svd(a, compute_uv=False)[:k]


def plain(shape, dims, seed=0, **coords) -> xr.DataArray:
    rng = np.random.default_rng(seed)
    return xr.DataArray(rng.standard_normal(shape), dims=dims, coords=coords)


# ------------------------------------------------------------------ dim omitted


def test_time_first_is_the_default(sst):
    filled = sst.fillna(0.0)
    res = filled.svd(k=3)
    assert res.U.dims == ("time", "component") and res.V.dims == ("component", "lat", "lon")
    np.testing.assert_allclose(res.S.values, reference_s(filled, ["time"], 3), rtol=1e-10)


def test_time_last_is_an_error_naming_time(sst):
    with pytest.raises(ValueError, match=r"\(lat: 12, lon: 24, time: 48\).*dim='time'"):
        sst.transpose("lat", "lon", "time").svd(k=3)
    with pytest.raises(ValueError, match="dim='time'"):
        sst.transpose("lat", "time", "lon").svd.compressed(3, seed=0)
    with pytest.raises(ValueError, match="dim='time'"):
        xsvd.exact(sst.transpose("lon", "time", "lat"))


def test_datetime_coordinate_counts_as_time_whatever_its_name(sst):
    dated = sst.rename(time="date").fillna(0.0)
    assert dated.svd(k=2).U.dims == ("date", "component")
    with pytest.raises(ValueError, match="dim='date'"):
        dated.transpose("lat", "lon", "date").svd(k=2)


def test_cftime_coordinate_counts_as_time(sst):
    pytest.importorskip("cftime", reason="cftime dates need cftime: pip install cftime")
    t = xr.date_range("2000-01-01", periods=48, freq="MS", calendar="noleap", use_cftime=True)
    field = sst.fillna(0.0).rename(time="t").assign_coords(t=t)
    assert field.svd(k=2).U.dims == ("t", "component")
    with pytest.raises(ValueError, match="dim='t'"):
        field.transpose("lat", "t", "lon").svd(k=2)


def test_cf_time_attributes_count_as_time():
    for attrs in ({"axis": "T"}, {"standard_name": "time"}):
        t = xr.Variable("t", np.arange(20.0), attrs)
        data = plain((20, 3, 4), ("t", "x", "y")).assign_coords(t=t)
        assert data.svd(k=2).U.dims == ("t", "component")
        with pytest.raises(ValueError, match="dim='t'"):
            data.transpose("x", "y", "t").svd(k=2)


def test_two_dims_without_time_take_the_first_as_samples():
    data = plain((30, 8), ("obs", "var"))
    res = data.svd(k=3)
    assert res.U.dims == ("obs", "component")
    np.testing.assert_allclose(res.S.values, reference_s(data, ["obs"], 3), rtol=1e-10)
    gt = datasets.genotypes(n_variants=300, n_samples=40)
    del gt.attrs["xsvd_sample_dim"]  # without it the names decide (issue 31, 9): samples
    assert gt.svd(k=2).U.dims == ("samples", "component")
    # the synthetic genotypes name their sample dimension, as open_plink's do
    assert datasets.genotypes(n_variants=300, n_samples=40).svd(k=2).U.dims == (
        "samples",
        "component",
    )


def test_two_dims_with_time_second_is_an_error():
    data = plain((5, 30), ("station", "time"), time=np.arange(30))
    with pytest.raises(ValueError, match=r"\(station: 5, time: 30\).*dim='time'"):
        data.svd(k=2)
    assert data.svd(k=2, dim="time").U.dims == ("time", "component")


def test_three_dims_without_time_is_an_error_naming_the_first():
    data = plain((6, 7, 20), ("x", "y", "run"))
    with pytest.raises(
        ValueError, match=r"ambiguous.*Pass the sample dimension\(s\), e.g. dim='x'"
    ):
        data.svd(k=2)


def test_several_time_like_dims_are_an_error_naming_them():
    init = np.datetime64("2020-01-01") + np.arange(10).astype("timedelta64[D]")
    valid = np.datetime64("2021-01-01") + np.arange(4).astype("timedelta64[D]")
    data = plain((10, 4, 6), ("init", "valid", "x"), init=init, valid=valid)
    with pytest.raises(ValueError, match=r"Several dimensions are time-like.*\('init', 'valid'\)"):
        data.svd(k=2)


def test_size_one_dims_do_not_decide_the_default(sst):
    filled = sst.fillna(0.0).expand_dims(level=[850.0])  # (level: 1, time, lat, lon)
    res = filled.svd(k=3)
    assert res.U.dims == ("time", "component")
    np.testing.assert_allclose(
        res.S.values, reference_s(filled.isel(level=0), ["time"], 3), rtol=1e-10
    )


def test_empty_dim_is_an_error(sst):
    with pytest.raises(ValueError, match="names no dimension"):
        sst.svd(k=2, dim=())


# ------------------------------------------------------------- size-1 dims


@pytest.fixture(scope="module")
def level_field(sst):
    """(time, level: 1, lat, lon), with a second coordinate on level."""
    return sst.expand_dims(level=[850.0], axis=1).assign_coords(level_name=("level", ["low"]))


def test_size_one_feature_dims_are_kept(sst, level_field):
    w = xsvd.coslat_weights(sst)
    res = level_field.svd(k=3, dim="time", center=True, weights=w)
    ref = sst.svd(k=3, dim="time", center=True, weights=w)
    assert res.V.dims == ("component", "level", "lat", "lon")
    assert res.mean.dims == ("level", "lat", "lon")
    for part in (res.V, res.mean):
        assert part.level.values.tolist() == [850.0]
        assert part.level_name.values.tolist() == ["low"]
    np.testing.assert_allclose(res.S.values, ref.S.values, rtol=1e-12)
    np.testing.assert_allclose(res.V.isel(level=0).values, ref.V.values, atol=1e-12)


def test_reconstruct_keeps_size_one_dims(level_field):
    res = level_field.svd(k=3, dim="time", center=True)
    rec = res.reconstruct()
    assert rec.dims == level_field.dims
    assert rec.level.values.tolist() == [850.0]
    rms = float(np.sqrt(((rec - level_field) ** 2).mean()))
    assert rms < 0.3  # the noise of the field is 0.2
    # projecting the data, with or without the size-1 dim, gives U back
    np.testing.assert_allclose(res.project(level_field).values, res.U.values, atol=1e-10)
    np.testing.assert_allclose(
        res.project(level_field.isel(level=0)).values, res.U.values, atol=1e-10
    )


def test_other_level_is_refused_when_projecting(level_field):
    res = level_field.svd(k=2, dim="time")
    other = level_field.assign_coords(level=[500.0])
    with pytest.raises(ValueError, match=r"single 'level' 850.0.*\.sel\(level=850.0\)"):
        res.project(other)


def test_weights_over_a_size_one_dim(sst, level_field):
    w = xsvd.coslat_weights(sst).expand_dims(level=[850.0])
    res = level_field.svd(k=2, dim="time", weights=w)
    ref = sst.svd(k=2, dim="time", weights=w.isel(level=0))
    np.testing.assert_allclose(res.S.values, ref.S.values, rtol=1e-12)


def test_size_one_sample_dims_and_lone_features_are_kept():
    data = plain((20, 1, 6), ("time", "member", "x"))
    res = data.svd(k=2, dim=("time", "member"))
    assert res.U.dims == ("time", "member", "component")
    lone = plain((20, 1), ("time", "x"))
    assert lone.svd(k=1, dim="time").V.dims == ("component", "x")


# -------------------------------------------------------- yes/no options


@pytest.mark.parametrize(
    "options",
    [
        {"center": "yes"},
        {"center": "False"},
        {"center": 1},
        {"compute": "no"},
        {"progress": None},
        {"krylov": "yes", "method": "compressed"},
    ],
    ids=lambda o: ",".join(f"{k}={v!r}" for k, v in o.items()),
)
def test_yes_no_options_must_be_booleans(options):
    data = plain((30, 8), ("obs", "var"))
    name = next(iter(options))
    # (center also takes the values to subtract: its message says so)
    said = r"True(, False or None| or False|, False or the values to subtract)"
    with pytest.raises(TypeError, match=rf"{name} must be {said}"):
        data.svd(k=2, dim="obs", **options)


def test_numpy_booleans_and_krylov_none_are_accepted():
    data = plain((30, 8), ("obs", "var"))
    a = data.svd(k=2, dim="obs", center=np.bool_(True))
    b = data.svd.compressed(2, dim="obs", center=True, krylov=None, seed=0)
    np.testing.assert_allclose(a.S.values, b.S.values, rtol=1e-8)
    assert a.center


# ------------------------------------------------------------ NaN advice


def test_time_as_a_feature_gets_the_swapped_dims_advice(sst):
    swapped = sst.transpose("lat", "lon", "time")
    with pytest.raises(xsvd.MissingValueError) as info:
        swapped.svd(k=3, dim="lat")
    message = str(info.value)
    assert "Were the dimensions swapped?" in message and "pass dim='time'" in message
    # the advice comes before the generic advice to impute
    assert message.index("swapped") < message.index("missing='mean'")
    with pytest.raises(xsvd.MissingValueError, match="swapped.*dim='time'"):
        sst.svd(k=3, dim=("lat", "lon"))


def test_all_nan_samples_get_the_swapped_dims_advice(sst):
    cells = sst.rename(time="step").assign_coords(step=np.arange(48))  # nothing time-like
    with pytest.raises(xsvd.MissingValueError, match=r"swapped\? \d+ of the 288 samples are NaN"):
        cells.svd(k=3, dim=("lat", "lon"))


def test_a_real_gap_gets_no_such_advice(sst):
    j, i = np.argwhere(np.isfinite(sst[0].values))[0]  # an ocean cell
    gappy = sst.copy()
    gappy[3, j, i] = np.nan
    with pytest.raises(xsvd.MissingValueError) as info:
        gappy.svd(k=3, dim="time")
    assert "swapped" not in str(info.value) and "1 feature(s)" in str(info.value)
