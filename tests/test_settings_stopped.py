"""Every operator analysis says why its passes stopped, as ``xsvd.compressed`` does (issue 30)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd

STOPS = {"converged", "precision of float32 products", "max_passes", "n_power_iter", "space full"}


def _field(seed=0, m=60, n=40):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, 3)) @ rng.standard_normal((3, n)) + 1e-3 * rng.standard_normal(
        (m, n)
    )
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(m)})


@pytest.mark.parametrize(
    "run",
    [
        lambda f, **o: xsvd.mca(f, f.rename(x="y") * 2, 2, dim="time", seed=0, **o),
        lambda f, **o: xsvd.extended_eof(f, 2, embedding=2, dim="time", seed=0, **o),
        lambda f, **o: xsvd.hilbert_eof(f, 2, dim="time", method="compressed", seed=0, **o),
        lambda f, **o: f.svd.compressed(k=2, dim="time", seed=0, **o),
    ],
    ids=["mca", "extended", "hilbert", "svd"],
)
def test_settings_say_why_the_passes_stopped(run):
    f = _field()
    assert run(f).settings["stopped"] in STOPS
    assert run(f, n_power_iter=2).settings["stopped"] in ("n_power_iter", "space full")
