"""The bootstrap on the core's rules (issues 29 and 31): each replicate stops as the core's
solvers do, and ``center=False`` warns as ``xsvd.svd`` does, on every backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(a.shape[0])}, name="f")


def _strong_first(m=150, nf=120, seed=0) -> np.ndarray:
    """One component 1e5 times the noise: the others' relative errors cannot go below
    about 1e-4 with float64 products (the floor of the estimates), far above tol=1e-6."""
    rng = np.random.default_rng(seed)
    return 1e5 * np.outer(rng.standard_normal(m), rng.standard_normal(nf)) + rng.standard_normal(
        (m, nf)
    )


def test_default_stop_at_the_precision_of_the_products(backend):
    """The default stop also ends at the precision of the products, as xsvd.compressed's
    does (it ran to the cap of 8 passes, estimates unable to go lower, "max_passes")."""
    X = _strong_first()
    want = xsvd.compressed(_labeled(X), 3, dim="time", center=True, seed=0, dtype="float64")
    assert want.settings["stopped"] == "precision of float64 products"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default stop: no warning
        got = xsvd.bootstrap(_labeled(backend(X)), 3, 4, dim="time", seed=0)
    assert got.settings["stopped"] == want.settings["stopped"]
    assert got.settings["passes"] < 8
    assert 1e-6 < got.settings["estimated_error"] < 1e-2
    # an asked tol is not cut short by the precision: max_passes, with a warning
    with pytest.warns(RuntimeWarning, match="tol=1e-06 was not reached in max_passes=5"):
        asked = xsvd.bootstrap(_labeled(X), 3, 4, dim="time", seed=0, tol=1e-6, max_passes=5)
    assert asked.settings["stopped"] == "max_passes" and asked.settings["passes"] == 5


def _uncentered_warning(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "center=False" in str(w.message)]


def test_uncentered_bootstrap_warns_as_svd(backend):
    """center=False on data far from 0 (means 99% of the sum of squares) says so, with the
    rule of xsvd.svd's warning (not its words on xsvd's default and on eigenvalues(), which
    a bootstrap does not have); centered input or center=True says nothing."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 30)) + 10.0
    said = _uncentered_warning(lambda: xsvd.svd(_labeled(X), 2, dim="time", center=False))
    run = lambda Y, **kw: xsvd.bootstrap(_labeled(backend(Y)), 2, 5, dim="time", seed=0, **kw)  # noqa: E731
    got = _uncentered_warning(lambda: run(X, center=False))
    assert len(said) == 1 and len(got) == 1
    assert "carry 99% of the sum of squares" in got[0] and "carry 99%" in said[0]
    assert "xsvd's default" in said[0] and "xsvd's default" not in got[0]
    assert "north_errors" not in got[0] and "center=True, the default" in got[0]
    assert _uncentered_warning(lambda: run(X)) == []
    assert _uncentered_warning(lambda: run(X - X.mean(axis=0), center=False)) == []
