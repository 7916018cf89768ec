"""``missing="mean"``, ``negative_missing`` and ``device=`` in :func:`xsvd.bootstrap` (issue 29).

A gap stands for its feature's mean over all the data's present samples, filled as
the data are read: the bootstrap of the data with gaps is the bootstrap of
``da.fillna(da.mean(dim))`` (land, NaN at every sample, left out as before), on
NumPy, Dask (stripes of samples and of features) and array-api-strict's second
device, every part of the result where the data were.
"""

from __future__ import annotations

import inspect
from contextlib import nullcontext

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend as core_backend

M, NF = 36, 24  # samples, features
LAND = 5
PARTS = (
    "U",
    "S",
    "V",
    "explained_variance_ratio",
    "replicate_singular_values",
    "replicate_explained_variance_ratio",
    "congruence",
    "explained_variance_ratio_ci",
    "congruence_ci",
    "replicate_V",
)


def _values(seed=3, scale=1.0):
    """Two strong components on noise, an offset, land (feature 5) and scattered gaps."""
    rng = np.random.default_rng(seed)
    X = (
        6 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + 3 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + rng.standard_normal((M, NF))
        + 10.0
    ) * scale
    X[rng.random((M, NF)) < 0.06] = np.nan
    X[:, LAND] = np.nan
    X[:4, 7] = np.nan  # a feature with several gaps, at the first samples
    return X


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(a.shape[0])}, name="f")


def _filled(X) -> np.ndarray:
    da = _labeled(X)
    return da.fillna(da.mean("time")).values


def _on_device_of(x, backend) -> bool:
    if backend.name == "strict":
        import array_api_strict as xs

        return core_backend.namespace(x) is xs and x.device == xs.Device("device1")
    return isinstance(x, np.ndarray)  # NumPy data, and Dask results (computed)


def _same(got, want, backend, rtol=1e-8):
    """Every part of ``got`` where the data were and equal to ``want``'s, NaN where NaN."""
    for name in PARTS:
        g, w = getattr(got, name), getattr(want, name)
        assert _on_device_of(g.data, backend), (name, type(g.data))
        g, w = core_backend.to_numpy(g.data), core_backend.to_numpy(w.data)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        scale = max(float(np.nanmax(np.abs(w))), 1e-300)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12 * scale, err_msg=name)


def _weights():
    return xr.DataArray(np.linspace(0.5, 1.5, NF), dims="x")


@pytest.mark.parametrize(
    "case",
    [{}, {"weights": True}, {"center": False}, {"scale": 1e200}],
    ids=["plain", "weights", "uncentered", "rescaled"],
)
def test_missing_mean_is_the_bootstrap_of_the_filled_data(backend, case):
    """Gaps at their feature's mean over all the data: the point estimates, the replicates
    and the intervals of `da.fillna(da.mean(dim))`'s bootstrap (several batches: the later
    ones fill with the means the first read found; data of 1e200 rescaled too)."""
    X = _values(scale=case.get("scale", 1.0))
    kwargs = dict(dim="time", seed=0, batch=3, keep_patterns=True)
    if case.get("weights"):
        kwargs["weights"] = _weights()
    if "center" in case:
        kwargs["center"] = case["center"]
    with pytest.warns(UserWarning) if "center" in case else nullcontext():
        got = xsvd.bootstrap(_labeled(backend(X)), 3, 7, missing="mean", **kwargs)
    with pytest.warns(UserWarning) if "center" in case else nullcontext():
        want = xsvd.bootstrap(_labeled(backend(_filled(X))), 3, 7, **kwargs)
    _same(got, want, backend)
    assert np.isnan(core_backend.to_numpy(got.V.data)[:, LAND]).all()  # land left out
    assert not np.isnan(core_backend.to_numpy(got.V.data)[:, 7]).any()  # gaps filled
    assert got.settings["missing"] == "mean" and want.settings["missing"] == "error"
    # the data's first read made again over Dask stripes of samples (their gaps read as 0)
    again = 1 if backend.name == "dask-samples" else 0
    assert got.settings["reads"] == want.settings["reads"] + again


def test_missing_mean_without_gaps_reads_and_gives_what_missing_error_does(backend):
    """No feature with gaps (land only): missing='mean' fills nothing, reads the data as
    often and gives the same numbers as the default."""
    X = _values()
    X = np.where(np.isnan(X).all(axis=0), np.nan, _filled(X))
    got = xsvd.bootstrap(_labeled(backend(X)), 3, 7, dim="time", seed=0, missing="mean")
    want = xsvd.bootstrap(_labeled(backend(X)), 3, 7, dim="time", seed=0)
    for name in ("S", "V", "replicate_singular_values", "congruence_ci"):
        g = core_backend.to_numpy(getattr(got, name).data)
        w = core_backend.to_numpy(getattr(want, name).data)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, err_msg=name)
    assert got.settings["reads"] == want.settings["reads"]


@pytest.mark.parametrize("codes", ["integer", "float negative_missing=True"])
def test_negative_codes_are_missing(backend, codes):
    """Integer data with missing='mean' (and floats with negative_missing=True): negative
    codes stand for their feature's mean, as NaN does; a feature coded -1 throughout is
    left out as land."""
    rng = np.random.default_rng(4)
    G = rng.integers(0, 3, size=(M, NF)) + rng.integers(0, 2, size=(1, NF))
    G[rng.random((M, NF)) < 0.06] = -1
    G[:, LAND] = -1
    truth = _filled(np.where(G < 0, np.nan, G.astype(np.float64)))
    data = G if codes == "integer" else G.astype(np.float64)
    extra = {} if codes == "integer" else {"negative_missing": True}
    got = xsvd.bootstrap(
        _labeled(backend(data)),
        3,
        6,
        dim="time",
        seed=0,
        missing="mean",
        keep_patterns=True,
        **extra,
    )
    want = xsvd.bootstrap(_labeled(backend(truth)), 3, 6, dim="time", seed=0, keep_patterns=True)
    _same(got, want, backend)


def test_missing_error_names_the_gaps_and_offers_missing_mean(backend):
    X = _values()
    gappy = int((np.isnan(X).any(axis=0) & ~np.isnan(X).all(axis=0)).sum())
    with pytest.raises(xsvd.MissingValueError, match="missing='mean'") as err:
        xsvd.bootstrap(_labeled(backend(X)), 3, 4, dim="time", seed=0)
    assert f"NaN at some but not all samples of {gappy} feature(s): (x[0])" in str(err.value)
    with pytest.raises(ValueError, match="missing must be one of"):
        xsvd.bootstrap(_labeled(X), 3, 4, dim="time", missing="zero")
    with pytest.raises(ValueError, match="Pass missing='mean'"):
        xsvd.bootstrap(_labeled(X), 3, 4, dim="time", negative_missing=True)


def test_device_cpu_brings_device_data_to_the_host():
    """device='cpu' on array-api-strict's second device: NumPy results, those of NumPy."""
    pytest.importorskip("array_api_strict")
    from conftest import on_strict_device

    X = _values()
    want = xsvd.bootstrap(_labeled(X), 3, 6, dim="time", seed=0, missing="mean", keep_patterns=True)
    got = xsvd.bootstrap(
        _labeled(on_strict_device(X)),
        3,
        6,
        dim="time",
        seed=0,
        missing="mean",
        keep_patterns=True,
        device="cpu",
    )
    for name in PARTS:
        g, w = getattr(got, name).data, getattr(want, name).data
        assert isinstance(g, np.ndarray), (name, type(g))
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, err_msg=name)


def test_device_gpu_without_cupy_says_what_to_install():
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"xsvd\[gpu\]"):
        xsvd.bootstrap(_labeled(_values()), 3, 4, dim="time", missing="mean", device="gpu")
    with pytest.raises(ValueError, match="device must be"):
        xsvd.bootstrap(_labeled(_values()), 3, 4, dim="time", device="tpu")


def test_signature_and_help_list_the_options():
    params = inspect.signature(xsvd.bootstrap).parameters
    for name, default in (("missing", "error"), ("negative_missing", None), ("device", None)):
        assert params[name].default == default
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert f"{name} :" in xsvd.bootstrap.__doc__
