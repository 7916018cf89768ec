"""One result family (issue 29): every result class x every member of the shared interface.

Each analysis returns a subclass of :class:`xsvd.labeled.base.Result`; this file walks
every one of them (made from NumPy and from Dask data) through every member: the parts,
the ratios, the errors, the copies, the plots, the saved form (``to_zarr`` and
``xsvd.open_result`` give the same class with identical numbers and coordinates),
``reconstruct`` and ``project`` (a value where defined, a ValueError that says why
where not).
"""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.labeled.base import RESULT_CLASSES, Result

matplotlib.use("Agg")


def _field(seed=0, m=40, ny=4, nx=6, land=True):
    rng = np.random.default_rng(seed)
    t = np.arange(m)
    x = np.linspace(0, 3, nx)
    X = (
        2 * np.cos(0.3 * t[:, None, None] - x[None, None, :]) * np.linspace(1, 2, ny)[:, None]
        + 0.5 * rng.standard_normal((m, ny, nx))
        + 10.0
    )
    if land:
        X[:, 0, 0] = np.nan
    coords = {"time": t, "lat": np.linspace(-30, 30, ny), "lon": np.linspace(0, 300, nx)}
    return xr.DataArray(X, dims=("time", "lat", "lon"), coords=coords, name="sst")


def _data(da, backend):
    return da.chunk({"time": 10}) if backend == "dask" else da


def _svd(backend):
    return xsvd.compressed(_data(_field(), backend), 3, dim="time", center=True, seed=0)


def _exact(backend):
    return xsvd.exact(_data(_field(), backend), dim="time", center=True)


def _multivariate(backend):
    right = _field(seed=1, ny=3, nx=5).rename(lat="y", lon="x")
    ds = xr.Dataset({"sst": _data(_field(), backend), "slp": _data(right, backend)})
    return ds.svd(k=3, dim="time", center=True)


def _rotated(backend):
    return xsvd.exact(_data(_field(), backend), dim="time", center=True).rotate(3)


def _mca(backend):
    right = _field(seed=1, ny=3, nx=5, land=False)  # the same dim names on another grid
    right = right.assign_coords(lat=right.lat + 0.5)
    return xsvd.mca(_data(_field(), backend), _data(right, backend), 3, dim="time", seed=0)


def _extended(backend):
    return xsvd.extended_eof(_data(_field(), backend), 3, embedding=3, tau=2, dim="time", seed=0)


def _hilbert(backend):
    return xsvd.hilbert_eof(_data(_field(), backend), 3, dim="time", padding="none")


def _bootstrap(backend):
    return xsvd.bootstrap(_data(_field(), backend), 3, 6, dim="time", seed=0)


BUILDERS = {
    "SVDResult-compressed": _svd,
    "SVDResult-exact": _exact,
    "MultivariateResult": _multivariate,
    "RotatedResult": _rotated,
    "MCAResult": _mca,
    "ExtendedEOFResult": _extended,
    "HilbertResult": _hilbert,
    "BootstrapResult": _bootstrap,
}


@pytest.fixture(
    scope="module",
    params=[(n, b) for n in BUILDERS for b in ("numpy", "dask")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def result(request):
    name, backend = request.param
    return BUILDERS[name](backend).compute()


def test_every_result_class_is_walked():
    walked = {name.split("-")[0] for name in BUILDERS}
    assert walked == set(RESULT_CLASSES), set(RESULT_CLASSES) ^ walked


def test_parts(result):
    assert isinstance(result, Result)
    U, S, V = result
    assert len(result) == 3 and S is not None
    k = result.k
    assert U.sizes["component"] == k and S.sizes["component"] == k
    assert V.sizes["component"] == k
    s = result.singular_values
    assert isinstance(s, xr.DataArray) and s.dims == ("component",)
    assert list(s["component"].values) == list(range(1, k + 1))
    assert np.all(np.diff(s.values) <= 1e-12 * s.values[0]) and np.all(s.values >= 0)
    np.testing.assert_array_equal(np.asarray(getattr(S, "magnitude", S.values)), s.values)


def test_explained_variance_ratio(result):
    r = result.explained_variance_ratio
    assert r.dims == ("component",) and r.attrs.get("units") == "1"
    assert np.all((r.values >= 0) & (r.values <= 1 + 1e-12))
    assert float(r.sum()) <= 1 + 1e-9


def test_errors(result):
    e = result.errors
    assert set(e.data_vars) == {"S", "S_relative", "angle", "residual"}
    assert e["S"].dims == ("component",) and e.sizes["component"] == result.k
    np.testing.assert_array_equal(e["component"].values, result.singular_values["component"])


def test_settings_and_method(result):
    assert isinstance(result.settings, dict) and result.settings
    assert isinstance(result.method, str) and result.method
    assert repr(result).startswith(f"<xsvd.{type(result).__name__}")


def test_copies_keep_the_numbers(result):
    for copy in (result.compute(), result.persist(), result.as_numpy()):
        assert type(copy) is type(result)
        xr.testing.assert_identical(copy.singular_values, result.singular_values)
        xr.testing.assert_identical(copy.explained_variance_ratio, result.explained_variance_ratio)


def test_plot(result):
    ax = result.plot.scree()
    assert len(ax.patches) == result.k  # one bar per component
    matplotlib.pyplot.close("all")


def test_saved_and_reopened_as_the_same_class(result, tmp_path):
    result.to_zarr(tmp_path / "r.zarr")
    back = xsvd.open_result(tmp_path / "r.zarr")
    assert type(back) is type(result)
    for a, b in zip(back, result, strict=True):
        xr.testing.assert_identical(a, b)
    xr.testing.assert_identical(back.singular_values, result.singular_values)
    xr.testing.assert_identical(back.explained_variance_ratio, result.explained_variance_ratio)
    xr.testing.assert_identical(back.errors, result.errors)
    assert back.settings == result.settings and back.method == result.method
    again = type(result).from_dataset(result.to_dataset())
    xr.testing.assert_identical(again.singular_values, result.singular_values)


def test_reconstruct_undoes_weights_and_mean_or_says_why(result):
    if type(result).RECONSTRUCT is not None:
        with pytest.raises(ValueError, match="reconstruct\\(\\) is not defined: .{20,}"):
            result.reconstruct()
        return
    full = result.reconstruct()
    data = full if isinstance(full, xr.DataArray) else full["sst"]
    # the field is near 10 everywhere (its mean): the mean is added back
    assert 7 < float(data.mean()) < 13
    assert bool(np.isnan(data.isel(time=0, lat=0, lon=0)))  # land stays NaN


def test_project_or_says_why(result):
    if type(result).PROJECT is not None:
        with pytest.raises(ValueError, match="project\\(\\) is not defined: .{20,}"):
            result.project(_field())
        return
    new = _field()
    if type(result).__name__ == "MultivariateResult":
        new = xr.Dataset({"sst": new, "slp": _field(seed=1, ny=3, nx=5).rename(lat="y", lon="x")})
    scores = result.project(new)
    assert scores.sizes["component"] == result.k
    s = result.singular_values.values
    kept = s > 1e-10 * s[0]  # a zero component (the mean's) has no scores
    assert kept.sum() >= 3
    np.testing.assert_allclose(scores.values[..., kept], result.U.values[..., kept], atol=1e-8)


def test_zero_variance_gives_nan_ratios_everywhere():
    """``0 / 0`` is NaN in every result (it was 0 in Hilbert EOF and NaN elsewhere)."""
    flat = _field(land=False) * 0 + 3.0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [
            xsvd.exact(flat, dim="time", center=True),
            xsvd.hilbert_eof(flat, 2, dim="time", method="exact"),
            xsvd.extended_eof(flat, 2, embedding=2, method="exact"),
            xsvd.mca(flat, flat, 2, dim="time", method="exact"),
        ]
    for res in results:
        assert np.isnan(res.explained_variance_ratio.values).all(), type(res).__name__


UNITS_BUILDERS = {
    "SVDResult": lambda da: xsvd.svd(da, 3, dim="time", center=True),
    # seeded: the quantified and the plain run must draw the same start blocks
    "MCAResult": lambda da: xsvd.mca(da, da.isel(lon=slice(0, 3)) * 2, 2, dim="time", seed=0),
    "ExtendedEOFResult": lambda da: xsvd.extended_eof(da, 2, embedding=2, dim="time", seed=0),
    "HilbertResult": lambda da: xsvd.hilbert_eof(da, 2, dim="time", padding="none"),  # exact
    "BootstrapResult": lambda da: xsvd.bootstrap(da, 2, 4, dim="time", seed=0),
    "MultivariateResult": lambda da: xr.Dataset({"a": da, "b": 2 * da}).svd(
        k=2, dim="time", center=True
    ),
}


@pytest.mark.parametrize("name", list(UNITS_BUILDERS))
def test_units_of_quantified_data_are_kept_by_every_analysis(name, tmp_path):
    """Pint units behave as in the main svd: no UnitStrippedWarning (an error here, see
    pyproject's filterwarnings), S in the data's units, ratios plain, a reopened result
    quantified again (the analyses dropped them with ~19 UnitStrippedWarnings)."""
    pint_xarray = pytest.importorskip("pint_xarray")
    plain = _field(land=False)
    quantified = plain.copy(data=pint_xarray.unit_registry.Quantity(plain.values, "K"))
    res = UNITS_BUILDERS[name](quantified)
    ref = UNITS_BUILDERS[name](plain)
    expected = "kelvin ** 2" if name == "MCAResult" else "kelvin"  # MCA: a covariance
    assert str(res.S.data.units) == expected
    np.testing.assert_allclose(res.S.data.magnitude, ref.singular_values.values, rtol=1e-9)
    assert not hasattr(res.explained_variance_ratio.data, "units")
    assert isinstance(res.singular_values.data, np.ndarray)
    res.to_zarr(tmp_path / "q.zarr")
    back = xsvd.open_result(tmp_path / "q.zarr")
    assert str(back.S.data.units) == expected
    if name == "MultivariateResult":  # each variable's mean and reconstruction in its units
        assert str(res.reconstruct()["b"].data.units) == "kelvin"
        assert str(back.mean["a"].data.units) == "kelvin"
        np.testing.assert_allclose(back.reconstruct()["b"].data.magnitude, ref.reconstruct()["b"])
    if name == "HilbertResult":  # the field (rank 2) back in its units, mean and all
        rebuilt = res.reconstruct()
        assert str(rebuilt.data.units) == "kelvin"
        np.testing.assert_allclose(rebuilt.data.magnitude, ref.reconstruct().values, atol=1e-9)
        assert 7 < float(rebuilt.data.magnitude.mean()) < 13  # the mean (10 K) is back
