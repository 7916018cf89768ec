"""``standardize=`` in :func:`xsvd.bootstrap`, as in every analysis (issue 29).

Each feature over its standard deviation over all the data's samples (``ddof=0``, the
present values' with ``missing="mean"``; constant features weight 0), folded into the
weights: the bootstrap of ``da / da.std(dim)`` (the scale fixed, each replicate
re-centered on its own mean), on NumPy, Dask (stripes of samples and of features) and
array-api-strict's second device.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend as core_backend

M, NF = 30, 16  # samples, features
PARTS = (
    "S",
    "V",
    "U",
    "explained_variance_ratio",
    "replicate_singular_values",
    "replicate_explained_variance_ratio",
    "congruence",
    "explained_variance_ratio_ci",
    "congruence_ci",
    "replicate_V",
)


def _values(gaps: bool = False) -> np.ndarray:
    """Two components on noise, features of very different spreads (1e-3 to 1e3)."""
    rng = np.random.default_rng(7)
    X = (
        5 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + 2 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + rng.standard_normal((M, NF))
        + 4.0
    ) * np.logspace(-3, 3, NF)
    if gaps:
        X[rng.random((M, NF)) < 0.08] = np.nan
        X[:3, 2] = np.nan
    return X


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(a.shape[0])}, name="f")


def _same(got, want, rtol=1e-8):
    for name in PARTS:
        g = core_backend.to_numpy(getattr(got, name).data)
        w = core_backend.to_numpy(getattr(want, name).data)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        scale = max(float(np.nanmax(np.abs(w))), 1e-300)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12 * scale, err_msg=name)


@pytest.mark.parametrize("case", ["plain", "weights", "gaps"])
def test_standardize_is_the_bootstrap_of_the_standardized_data(backend, case):
    """standardize=True: point estimates, replicates, intervals and patterns of the
    bootstrap of ``da / da.std(dim)`` (with weights: times them; with gaps and
    missing='mean': the present values' std, the gaps at the means)."""
    X = _values(gaps=case == "gaps")
    kwargs = dict(dim="time", seed=0, batch=3, keep_patterns=True)
    if case == "weights":
        kwargs["weights"] = xr.DataArray(np.linspace(0.5, 1.5, NF), dims="x")
    if case == "gaps":
        kwargs["missing"] = "mean"
    da = _labeled(X)
    scaled = da / da.std("time")
    got = xsvd.bootstrap(_labeled(backend(X)), 3, 7, standardize=True, **kwargs)
    want = xsvd.bootstrap(_labeled(backend(scaled.values)), 3, 7, **kwargs)
    _same(got, want)
    assert got.settings["standardize"] is True and want.settings["standardize"] is False
    # without it, the largest features are the components: not the same
    plain = xsvd.bootstrap(_labeled(backend(X)), 3, 7, **kwargs)
    assert not np.allclose(
        core_backend.to_numpy(plain.explained_variance_ratio.data),
        core_backend.to_numpy(want.explained_variance_ratio.data),
    )


def test_standardize_gives_constant_features_weight_zero():
    """A constant feature (the main svd's rule) gets weight 0: a zero pattern, no NaN."""
    X = _values()
    X[:, 4] = 2.5
    got = xsvd.bootstrap(_labeled(X), 3, 5, dim="time", seed=0, standardize=True)
    V = got.V.values
    assert np.all(V[:, 4] == 0) and np.isfinite(V).all()


def test_standardize_is_declared_once_and_checked():
    sig = inspect.signature(xsvd.bootstrap).parameters["standardize"]
    assert sig.default is False and sig.kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="standardize must be True or False"):
        xsvd.bootstrap(_labeled(_values()), 2, 3, dim="time", standardize="yes")
