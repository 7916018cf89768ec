"""Uncentered decompositions that are mostly the features' means warn (issue 31, item 8).

xsvd's ``center`` defaults to False, eofs and xeofs center. On absolute values (SST
anomalies + 15 °C) the uncentered first component is the mean: explained variance
ratios of [0.95, 0.04, 0.01] where the peers give those of the anomalies. The
warning comes from ``U`` and ``S`` alone (no read of the data), on NumPy, Dask (both
stripe orientations) and the strict device; centered or anomaly data stay silent, and
following its advice (``center=True``) gives the explained variance of the anomalies,
checked against NumPy's SVD of the centered matrix.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray, raise_if_dask_computes

import xsvd

WARNING = r"center=False .*means carry \d+% of the sum of squares.*pass center=True"


def _anomalies(seed: int = 0) -> np.ndarray:
    """60 x 40 anomalies (zero mean per feature) of three modes and noise."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((60, 3)) * [3.0, 2.0, 1.0] @ rng.standard_normal((3, 40))
    a += 0.3 * rng.standard_normal(a.shape)
    return a - a.mean(axis=0)


def _field(backend, a: np.ndarray) -> xr.DataArray:
    return xr.DataArray(backend(a), dims=("time", "cell"))


def _evr(res) -> np.ndarray:
    return res.as_numpy().explained_variance_ratio.values


def _ratio(b: np.ndarray, k: int) -> np.ndarray:
    s = np.linalg.svd(b, compute_uv=False)
    return s[:k] ** 2 / np.sum(s**2)


@pytest.fixture
def silent():
    """Turn the warning into an error inside the test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="center=False")
        yield


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_absolute_values_uncentered_warn_and_center_true_gives_the_anomalies(backend, method):
    a = _anomalies()
    absolute = _field(backend, a + 15.0)  # absolute SST: anomalies + 15 °C

    def run(data, **kw):
        if method == "exact":
            return data.svd.exact(k=3, dim="time", **kw)
        return data.svd.compressed(3, dim="time", seed=0, n_power_iter=4, **kw)

    with pytest.warns(UserWarning, match=WARNING):
        res = run(absolute)
    # the uncentered ratios are those of the absolute values, mostly the mean
    np.testing.assert_allclose(_evr(res), _ratio(a + 15.0, 3), rtol=1e-6)
    assert _evr(res)[0] > 0.9
    with warnings.catch_warnings():  # the advice, followed: silent, and the anomalies' ratios
        warnings.filterwarnings("error", message="center=False")
        fixed = run(absolute, center=True)
        anomalies = run(_field(backend, a))  # anomalies need no centering: silent too
    want = _ratio(a, 3)
    np.testing.assert_allclose(_evr(fixed), want, rtol=1e-6)
    np.testing.assert_allclose(_evr(anomalies), want, rtol=1e-6)
    assert abs(want[0] - _evr(res)[0]) > 0.2


def test_the_warning_names_the_share_of_the_means():
    a = _anomalies()
    with pytest.warns(UserWarning, match=WARNING) as record:
        xr.DataArray(a + 15.0, dims=("time", "cell")).svd(k=3, dim="time")
    (caught,) = [w for w in record if "center=False" in str(w.message)]
    share = float(str(caught.message).split("carry ")[1].split("%")[0]) / 100
    truth = 60 * np.sum((a + 15.0).mean(axis=0) ** 2) / np.sum((a + 15.0) ** 2)
    assert share == pytest.approx(truth, abs=0.006)  # rounded to a percent
    assert caught.filename == __file__  # it points at the caller, not at xsvd


def test_small_offsets_weights_land_and_one_sample_stay_silent(silent):
    a = _anomalies()
    da = xr.DataArray(a + 0.1, dims=("time", "cell"))  # means a small share: no warning
    da.svd(k=3, dim="time")
    land = da.where(xr.DataArray(np.arange(40) >= 5, dims="cell"))  # all-NaN columns
    land.svd(k=3, dim="time", center=True)
    da.isel(time=[0]).svd(k=1, dim="time")  # one sample: nothing to center


def test_dataset_of_absolute_fields_warns():
    a = _anomalies()
    ds = xr.Dataset({"sst": (("time", "x"), a[:, :20] + 15.0), "t2m": (("time", "y"), a[:, 20:])})
    with pytest.warns(UserWarning, match=WARNING):
        ds.svd(k=2, dim="time")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="center=False")
        ds.svd(k=2, dim="time", center=True)


def test_lazy_results_are_not_computed_to_check():
    import dask.array as da

    x = xr.DataArray(da.from_array(_anomalies() + 15.0, chunks=(20, -1)), dims=("time", "cell"))
    with warnings.catch_warnings(), raise_if_dask_computes():
        warnings.filterwarnings("error", message="center=False")
        x.svd.compressed(3, dim="time", seed=0, compute=False)


def test_patterson_scaled_genotype_pca_is_silent(silent):
    gt = xsvd.datasets.genotypes(n_variants=400, n_samples=60, seed=0)
    kept, w = xsvd.patterson_scaling(gt)
    kept.svd.exact(k=3, dim="samples", center=True, weights=w, missing="mean")
    packed = xsvd.pack_genotypes(gt)
    kept, w = xsvd.patterson_scaling(packed)
    kept.svd.compressed(3, dim="samples", center=True, weights=w, missing="mean", seed=0)


def test_the_check_reads_nothing_more():
    """Judged from U and S: each chunk is read once per pass of the solver, no more."""
    import dask.array as da

    src = CountingArray(_anomalies() + 15.0)
    x = xr.DataArray(da.from_array(src, chunks=(20, -1)), dims=("time", "cell"))
    with pytest.warns(UserWarning, match=WARNING):
        res = x.svd.compressed(3, dim="time", seed=0, n_power_iter=2)
    assert set(src.reads.values()) == {res.settings["passes"]}
