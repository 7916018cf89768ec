"""MCA of Dask fields in one chunk along the samples and several along the features.

A stripe of samples of such fields is all of both, so the fused read of
:func:`xsvd.climate.fields.cross_products` would hold both fields whole; it
reads them by stripes of features instead (two reads a pass), a few chunks
alive at a time, with the same results as in memory.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray

import xsvd
from xsvd.climate import fields


def _field(seed: int, n_lat: int, n_lon: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(120)[:, None, None]
    lat = np.arange(n_lat)[None, :, None]
    lon = np.arange(n_lon)[None, None, :]
    wave = np.sin(0.3 * t + 0.5 * lat) * np.cos(0.2 * lon) + 0.5 * np.cos(0.11 * t + lon * 0.3)
    return wave + 0.3 * rng.standard_normal((120, n_lat, n_lon))


def _lazy(values: np.ndarray, dims, counting: bool):
    source = CountingArray(values) if counting else values
    chunks = (values.shape[0], 1, values.shape[2])  # every time step, one latitude a chunk
    return source, xr.DataArray(da.from_array(source, chunks=chunks, asarray=False), dims=dims)


def test_striped_by_features_holds_a_few_chunks_and_matches_memory():
    left_np, right_np = _field(0, 12, 9), _field(1, 10, 8)
    cl, left = _lazy(left_np, ("time", "lat", "lon"), counting=True)
    cr, right = _lazy(right_np, ("time", "y", "x"), counting=True)
    with dask.config.set(scheduler="threads", num_workers=2):
        lazy = xsvd.mca(left, right, 3, seed=0)
        S, P, Q = lazy.S.values, lazy.left_patterns.values, lazy.right_patterns.values
    eager = xsvd.mca(
        xr.DataArray(left_np, dims=("time", "lat", "lon")),
        xr.DataArray(right_np, dims=("time", "y", "x")),
        3,
        seed=0,
    )
    np.testing.assert_allclose(S, eager.S.values, rtol=1e-10)
    np.testing.assert_allclose(P, eager.left_patterns.values, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(Q, eager.right_patterns.values, rtol=1e-8, atol=1e-12)
    # 12 and 10 chunks: a stripe of samples would hold them all at once
    assert max(cl.max_live, cr.max_live) <= 4, (cl.max_live, cr.max_live)


@pytest.mark.parametrize("by_features", [True, False])
def test_cross_products_of_either_read_agree(monkeypatch, by_features):
    left_np, right_np = _field(2, 6, 5), _field(3, 4, 7)
    _, left = _lazy(left_np, ("time", "lat", "lon"), counting=False)
    _, right = _lazy(right_np, ("time", "y", "x"), counting=False)
    monkeypatch.setattr(fields, "_by_features", lambda a: by_features and a.numblocks[1] > 1)
    fl, fr = fields.prepare_field(left, "time"), fields.prepare_field(right, "time")
    rng = np.random.default_rng(4)
    W, T = rng.standard_normal((fr.shape[1], 3)), rng.standard_normal((fl.shape[1], 2))
    CW, CtT = (fl.unscaled(fr.unscaled(np.asarray(C))) for C in fields.cross_products(fl, fr, W, T))
    Bl = left_np.reshape(120, -1) - left_np.reshape(120, -1).mean(0)
    Br = right_np.reshape(120, -1) - right_np.reshape(120, -1).mean(0)
    np.testing.assert_allclose(CW, Bl.T @ Br @ W, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(CtT, Br.T @ Bl @ T, rtol=1e-10, atol=1e-10)
