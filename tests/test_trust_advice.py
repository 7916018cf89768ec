"""Errors that say what was wrong, and advice that gives the right answer when followed
(issue 31, items 7 and 8, the single-field and Dataset paths).

- ``Dataset.svd(equal_variance=True)`` with a variable of no variance (all-NaN,
  constant, weight 0) is a ``ValueError`` naming it (was ``ZeroDivisionError``); its
  advice, dropping the variable, gives the other's equal-variance decomposition.
- Advice to align fields aligns along the samples only: ``xr.align`` without
  ``exclude`` also intersects same-named feature dims, cutting a 1° grid to the
  points of a 2° one. The advice in each message is run as written.
- Float32 latitudes at ±90: ``cos`` rounds to -4.4e-8; the error says so (not
  "degrees to np.cos?"), and its advice (clip) gives weight 0 at the poles.
- Booleans are not numbers of components.

Each answer is checked against ``numpy.linalg.svd`` of the matrix prepared by hand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.climate import multivariate


def _svals(b: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.svd(b, compute_uv=False)[:k]


def _centered(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=0)


def _code(message: str, contains: str) -> str:
    """The piece of code in backticks of ``message`` that contains ``contains``."""
    (code,) = [c for c in re.findall(r"`([^`]+)`", message) if contains in c]
    return code


# ------------------------------------- 1. equal_variance and a variable of no variance


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("case", ["all-NaN", "constant", "weight 0"])
def test_equal_variance_with_a_variable_of_no_variance_names_it(backend, case, standardize):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((30, 3)) @ rng.standard_normal((3, 6)) + rng.standard_normal((30, 6))
    b = rng.standard_normal((30, 4))
    weights = None
    if case == "all-NaN":
        b = np.full_like(b, np.nan)
    elif case == "constant":
        b = np.full_like(b, -1.8)
    else:
        weights = {"a": None, "b": xr.DataArray(np.zeros(4), dims="y")}
    ds = xr.Dataset({"a": (("time", "x"), backend(a)), "b": (("time", "y"), backend(b))})
    opts = dict(dim="time", center=True, equal_variance=True, standardize=standardize)
    with pytest.raises(ValueError, match=r"variable 'b' has a total \(weighted\) variance of 0"):
        ds.svd(k=2, weights=weights, **opts)  # was ZeroDivisionError: float division by zero
    # the advice, followed: drop it; `a` scaled to a total variance of 1
    res = ds.drop_vars("b").svd(k=2, **opts)
    x = _centered(a)
    if standardize:
        x = x / x.std(axis=0)
    want = _svals(x / np.sqrt(np.sum(x**2) / 30), 2)
    np.testing.assert_allclose(backend.host(res.S.data), want, rtol=1e-10)


# ------------------------------------------------------- 3. align along the samples only


def _grids():
    """A 1° field over times 0-39 and a 2° field of the same dim names over times 5-44."""
    rng = np.random.default_rng(2)
    modes = rng.standard_normal((45, 3)) * [3.0, 2.0, 1.0]
    fine = modes[:40] @ rng.standard_normal((3, 8 * 5)) + 0.1 * rng.standard_normal((40, 40))
    coarse = modes[5:] @ rng.standard_normal((3, 4 * 3)) + 0.1 * rng.standard_normal((40, 12))
    sst = xr.DataArray(
        fine.reshape(40, 8, 5),
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(40), "lat": np.arange(8.0), "lon": np.arange(5.0)},
    )
    slp = xr.DataArray(
        coarse.reshape(40, 4, 3),
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(5, 45), "lat": np.arange(0.0, 8, 2), "lon": np.arange(0.0, 5, 2)},
    )
    # the truth: every point of each grid, over the common times 5-39
    common = np.hstack([fine[5:], coarse[:35]])
    return sst, slp, _svals(_centered(common), 3)


def test_advice_for_fields_over_different_periods_keeps_each_grid():
    sst, slp, want = _grids()
    with pytest.raises(ValueError, match=r"'slp' has other 'time' labels.*exclude") as err:
        multivariate.svd({"sst": sst, "slp": slp}, 3, dim="time", center=True)
    namespace = {"xr": xr, "sst": sst, "slp": slp}
    exec(_code(str(err.value), "xr.align"), namespace)  # the advice, as written
    aligned = xr.Dataset({"sst": namespace["sst"], "slp": namespace["slp"]})
    res = aligned.svd(k=3, dim="time", center=True)  # slp's missing 1° points: left out
    np.testing.assert_allclose(res.S, want, rtol=1e-10)
    assert res.V["sst"].notnull().all()  # the 1° field whole
    # what `xr.align(sst, slp, join='inner')` did: the 1° field cut to the 2° points
    cut = xr.Dataset(dict(zip(("sst", "slp"), xr.align(sst, slp, join="inner"), strict=True)))
    assert cut.sizes["lat"] == 4 and not np.allclose(cut.svd(k=3, dim="time", center=True).S, want)


def test_advice_for_a_dataset_with_gaps_keeps_each_grid():
    sst, slp, want = _grids()
    outer = xr.Dataset({"sst": sst, "slp": slp})  # xarray aligns: NaN in the gaps
    with pytest.raises(xsvd.MissingValueError, match=r"NaN at every feature.*exclude") as err:
        outer.svd(k=3, dim="time", center=True)
    code = _code(str(err.value), "xr.align")
    fixed = eval(code, {"xr": xr, "names": ["sst", "slp"], "fields": [sst, slp]})
    res = fixed.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S, want, rtol=1e-10)


def test_advice_for_new_data_over_different_periods():
    sst, slp, _ = _grids()
    slp = slp.rename(lat="y", lon="x")
    common = dict(
        zip(
            ("sst", "slp"),
            xr.align(sst, slp, join="inner", exclude=["lat", "lon", "x", "y"]),
            strict=True,
        )
    )
    res = xr.Dataset(common).svd(k=3, dim="time", center=True)
    with pytest.raises(ValueError, match=r"'slp' has samples.*exclude") as err:
        res.project({"sst": sst, "slp": slp})
    variables = eval(_code(str(err.value), "xr.align"), {"xr": xr, "variables": [sst, slp]})
    scores = res.project(dict(zip(("sst", "slp"), variables, strict=True)))
    np.testing.assert_allclose(scores, res.U, atol=1e-10)


# ------------------------------------------------- 4. float32 latitudes at the poles


def _polar(dtype="float32"):
    rng = np.random.default_rng(4)
    lat = np.array([-90, -60, -30, 0, 30, 60, 90], dtype=dtype)
    x = rng.standard_normal((50, 7, 4))
    return xr.DataArray(x, dims=("time", "lat", "lon"), coords={"lat": lat})


@pytest.mark.parametrize("square_root", [False, True])
def test_float32_pole_weights_get_their_own_advice_and_it_works(square_root):
    da = _polar()
    cos = np.cos(np.deg2rad(da.lat))  # -4.4e-8 at the poles in float32
    w = np.sqrt(cos) if square_root else cos  # the square root: NaN there
    with pytest.raises(ValueError, match=r"= ±90 only, where cos rounds below 0 in float32") as err:
        da.svd(k=3, dim="time", center=True, weights=w)
    assert "degrees to np.cos" not in str(err.value)
    advice = "np.sqrt" if square_root else "w.clip"
    fixed = eval(_code(str(err.value), advice), {"np": np, "lat": da.lat, "w": w})
    res = da.svd(k=3, dim="time", center=True, weights=fixed)
    weight = np.sqrt(np.cos(np.deg2rad(da.lat.values.astype(np.float64))))
    weight = weight if square_root else weight**2
    weight[[0, -1]] = 0.0  # the poles: weight 0
    x = _centered(da.values.reshape(50, -1)) * np.repeat(weight, 4)
    np.testing.assert_allclose(res.S, _svals(x, 3), rtol=1e-6)
    assert float(res.weights.sel(lat=90.0).max()) == 0.0


def test_degrees_passed_to_cos_keep_their_advice():
    da = _polar("float64")
    with pytest.raises(ValueError, match=r"degrees to np.cos"):
        da.svd(k=3, dim="time", weights=np.cos(da.lat))


# --------------------------------------------------------- booleans are not counts


def test_booleans_are_not_numbers_of_components():
    da = _polar("float64")
    for run in (
        lambda: da.svd(k=True, dim="time"),
        lambda: da.svd.compressed(True, dim="time"),
        lambda: xr.Dataset({"t": da}).svd(k=True, dim="time"),
    ):
        with pytest.raises(TypeError, match=r"k must be a positive integer, got True"):
            run()
    res = da.svd(k=3, dim="time", center=True)
    both = xr.Dataset({"t": da}).svd(k=3, dim="time", center=True)
    for result in (res, both):
        for k in (True, 1.5, "2"):
            with pytest.raises(TypeError, match=r"k must be an integer between 1 and 3"):
                result.reconstruct(k)
        with pytest.raises(ValueError, match=r"between 1 and 3, got 4"):
            result.reconstruct(4)
