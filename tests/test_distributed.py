"""The Dask graphs run unchanged on a multi-process dask.distributed cluster."""

from __future__ import annotations

import numpy as np
import pytest

from xsvd import coslat_weights, datasets

distributed = pytest.importorskip(
    "distributed", reason='needs distributed: pip install "xsvd[distributed]"'
)


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_same_results_as_threaded_scheduler(client):
    import dask

    sst = datasets.climate_field(n_time=96, n_lat=12, n_lon=24, seed=3)
    w = coslat_weights(sst)
    gt = datasets.genotypes(3000, 150, seed=3, chunks=1000)
    cases = [
        (sst.chunk({"time": 24}), dict(dim="time", center=True, weights=w)),
        (sst.chunk({"time": -1, "lat": 4}), dict(dim="time", center=True, weights=w)),
        # float64 products: float32 sums depend on BLAS threading, which differs
        # between a worker process and a local thread pool
        (gt, dict(dim="samples", center=True, dtype="float64")),
    ]
    for obj, kw in cases:
        dist = obj.svd.compressed(k=4, seed=0, **kw)  # the client is the default scheduler
        lazy = obj.svd.compressed(k=4, seed=0, compute=False, **kw)  # one graph, all passes
        with dask.config.set(scheduler="threads"):
            local = obj.svd.compressed(k=4, seed=0, **kw)
        assert all(x.chunks is not None for x in lazy)
        for a, b, c in zip(dist, lazy, local, strict=True):
            np.testing.assert_allclose(a.values, c.values, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(b.values, c.values, rtol=1e-10, atol=1e-12)
    ex = sst.chunk({"time": 24}).svd.exact(dim="time", k=3, center=True)
    np.testing.assert_allclose(ex.S.values, sst.svd.exact(dim="time", k=3, center=True).S.values)


def test_partial_nan_error_travels_back_from_workers(client):
    sst = datasets.climate_field(n_time=48, n_lat=12, n_lon=24, seed=3).copy()
    sst.values[3, 6, 10] = np.nan
    with pytest.raises(ValueError, match=r"lat=.*missing=.mean."):
        sst.chunk({"time": 12}).svd.compressed(k=2, dim="time", seed=0)


def test_a_worker_dying_mid_run_is_retried_and_the_result_is_right(client, tmp_path):
    import os

    import dask.array as da
    import xarray as xr

    marker = str(tmp_path / "died-once")
    data = np.random.default_rng(0).integers(0, 3, (4000, 120), dtype=np.uint8)

    def load(block, block_info=None):
        # the first time chunk 2 is read in a worker process, that process dies
        if block_info[0]["chunk-location"][0] == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return block

    x = da.from_array(data, chunks=(1000, 120)).map_blocks(load, dtype=np.uint8)
    gt = xr.DataArray(x, dims=("variants", "samples"))
    kw = dict(k=3, dim="samples", center=True, seed=0, dtype="float64", n_power_iter=2)
    res = gt.svd.compressed(**kw)
    assert os.path.exists(marker)  # a worker did die
    ref = xr.DataArray(data, dims=("variants", "samples")).chunk({"variants": 1000})
    import dask

    with dask.config.set(scheduler="threads"):
        want = ref.svd.compressed(**kw)
    for a, b in zip(res, want, strict=True):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10, atol=1e-12)


def test_progress_with_a_client_shows_each_pass(client, capsys):
    gt = datasets.genotypes(3000, 60, seed=1, chunks=1000)
    gt.svd.compressed(k=2, dim="samples", seed=0, n_power_iter=1, progress=True)
    out = capsys.readouterr().out
    assert "xsvd: pass 1/2" in out and "xsvd: pass 2/2" in out
