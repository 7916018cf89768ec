"""Zarr in and out, remote (HTTP) stores, read errors, progress."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd import datasets

pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A genotype store with small storage chunks (1,000 variants x all samples)."""
    path = tmp_path_factory.mktemp("stores") / "gt.zarr"
    gt = datasets.genotypes(6000, 120, seed=5).chunk({"variants": 1000})
    gt.to_dataset().to_zarr(path)
    return path


@pytest.fixture(scope="module")
def server(store):
    """Serve the store's folder over HTTP on 127.0.0.1; chunk 'c/2/0' answers 403."""
    for name in ("fsspec", "aiohttp", "requests"):
        pytest.importorskip(name, reason=f'HTTP stores need {name}: pip install "xsvd[io]"')

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.endswith("forbidden.zarr/genotype/c/2/0"):
                self.send_error(403, "Forbidden")
                return
            super().do_GET()

    root = store.parent
    forbidden = root / "forbidden.zarr"
    if not forbidden.exists():
        datasets.genotypes(6000, 120, seed=5).chunk({"variants": 1000}).to_dataset().to_zarr(
            forbidden
        )
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
    )
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


# ----------------------------------------------------------------- reading


def test_plan_chunks_merges_storage_chunks():
    assert xsvd.io.plan_chunks((400_000, 10_000), (1_000, 10_000), 1) == (13_000, 10_000)
    assert xsvd.io.plan_chunks((100, 50), (10, 50), 8, target_bytes=8 * 50 * 30) == (30, 50)
    # already large: unchanged
    assert xsvd.io.plan_chunks((10**6, 10**4), (50_000, 10**4), 1) == (50_000, 10**4)


def test_open_zarr_streams_and_matches_memory(store):
    gt = xsvd.open_zarr(store, "genotype", chunks={"variants": 2000})
    assert gt.chunks == ((2000,) * 3, (120,))
    assert gt.population.dims == ("samples",) and isinstance(gt.population.data, np.ndarray)
    ref = datasets.genotypes(6000, 120, seed=5)
    np.testing.assert_array_equal(gt.values, ref.values)
    # float64 products: float32 sums may differ in the last bit between memory layouts
    kw = dict(k=4, dim="samples", center=True, seed=0, dtype="float64")
    got = gt.svd.compressed(**kw)
    want = ref.chunk({"variants": 2000}).svd.compressed(**kw)
    np.testing.assert_allclose(got.S.values, want.S.values, rtol=1e-10)
    # default plan: whole multiples of the storage chunks
    assert all(c % 1000 == 0 or c == 6000 for c in xsvd.open_zarr(store).chunks[0])


def test_large_storage_chunks_warn(store):
    with xsvd.set_options(large_storage_chunk_bytes=1000):
        with pytest.warns(UserWarning, match="smaller chunks"):
            xsvd.open_zarr(store, "genotype")


def test_missing_store_and_variable(tmp_path, store):
    with pytest.raises(xsvd.StoreReadError, match="nope.zarr"):
        xsvd.open_zarr(tmp_path / "nope.zarr")
    with pytest.raises(ValueError, match="no variable 'dosage'.*genotype"):
        xsvd.open_zarr(store, "dosage")


def test_corrupt_chunk_names_store_and_chunk(tmp_path):
    path = tmp_path / "bad.zarr"
    datasets.genotypes(3000, 40, seed=1).chunk({"variants": 1000}).to_dataset().to_zarr(path)
    (path / "genotype" / "c" / "1" / "0").write_bytes(b"this is not zstd data")
    gt = xsvd.open_zarr(path, "genotype", chunks={"variants": 1000})
    with pytest.raises(xsvd.StoreReadError, match=r"chunk \(1, 0\).*'genotype'.*bad\.zarr"):
        gt.svd.compressed(k=2, dim="samples", seed=0)


def test_http_store_works_the_same(server, store):
    url = f"{server}/{store.name}"
    kw = dict(k=3, dim="samples", seed=0, dtype="float64")
    remote = xsvd.open_zarr(url, "genotype").svd.compressed(**kw)
    local = xsvd.open_zarr(store, "genotype").svd.compressed(**kw)
    for a, b in zip(remote, local, strict=True):
        xr.testing.assert_allclose(a, b)


def test_http_errors_name_store_and_chunk(server):
    with pytest.raises(xsvd.StoreReadError, match="missing.zarr"):
        xsvd.open_zarr(f"{server}/missing.zarr")
    gt = xsvd.open_zarr(f"{server}/forbidden.zarr", "genotype", chunks={"variants": 1000})
    with pytest.raises(xsvd.StoreReadError, match=r"chunk \(2, 0\).*forbidden\.zarr"):
        gt.svd.compressed(k=2, dim="samples", seed=0)


# -------------------------------------------------------------- results


def _result():
    sst = datasets.climate_field(n_time=48, n_lat=12, n_lon=24, seed=2)
    w = np.sqrt(np.cos(np.deg2rad(sst.lat)))
    return sst, sst.svd.compressed(k=3, dim="time", center=True, weights=w, seed=11, n_power_iter=2)


def test_result_round_trip(tmp_path):
    sst, res = _result()
    path = tmp_path / "eofs.zarr"
    res.to_zarr(path)
    back = xsvd.open_result(path)
    for a, b in zip(res, back, strict=True):
        xr.testing.assert_identical(a, b)
    assert back.method == "compressed"
    for key in ("k", "n_power_iter", "n_oversamples", "seed", "center", "weighted", "dtype"):
        assert back.settings[key] == res.settings[key], key
    assert back.settings["seed"] == 11 and back.settings["n_power_iter"] == 2
    xr.testing.assert_identical(back.U.month, sst.month)
    xr.testing.assert_allclose(back.reconstruct(), res.reconstruct())
    xr.testing.assert_allclose(back.project(sst), res.project(sst))
    xr.testing.assert_allclose(back.explained_variance_ratio, res.explained_variance_ratio)
    assert back.reconstruct().attrs == sst.attrs
    xr.testing.assert_identical(back.mean, res.mean)


def test_write_refuses_existing_path_unless_asked(tmp_path):
    _, res = _result()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    with pytest.raises(FileExistsError, match="mode='w'"):
        res.to_zarr(path)
    res2 = datasets.climate_field(n_time=24, n_lat=6, n_lon=12).svd(k=2, dim="time")
    res2.to_zarr(path, mode="w")
    assert xsvd.open_result(path).S.size == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]  # no leftovers


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    _, res = _result()
    real = xr.Dataset.to_zarr

    def fail_midway(self, store, *args, **kwargs):
        real(self[["S"]], store, *args, **kwargs)  # something is written...
        raise OSError("disk full")  # ...then the write fails

    monkeypatch.setattr(xr.Dataset, "to_zarr", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        res.to_zarr(tmp_path / "r.zarr")
    assert list(tmp_path.iterdir()) == []


def test_open_result_rejects_other_stores(store):
    with pytest.raises(ValueError, match="not a result"):
        xsvd.open_result(store)


# -------------------------------------------------------------- progress


def test_progress_shows_each_pass(capsys):
    gt = datasets.genotypes(3000, 60, chunks=1000)
    gt.svd.compressed(k=2, dim="samples", seed=0, n_power_iter=2, progress=True)
    out = capsys.readouterr().out
    assert "xsvd: pass 1/3" in out and "xsvd: pass 3/3" in out and "100% Completed" in out
    lazy = gt.svd.exact(dim="samples", k=2, compute=False)
    lazy.compute(progress=True)
    assert "100% Completed" in capsys.readouterr().out


# --------------------------------------------------------- saved form

DATA = Path(__file__).parent / "data"


def test_results_saved_by_format_1_still_open():
    """Stores written by `to_zarr` before the saved form had a version 2 (tests/data)."""
    back = xsvd.open_result(DATA / "format1-climate.zarr")
    expected = np.load(DATA / "format1-climate-expected.npz")
    np.testing.assert_array_equal(back.U.values, expected["U"])
    np.testing.assert_array_equal(back.S.values, expected["S"])
    np.testing.assert_array_equal(back.V.values, expected["V"])
    np.testing.assert_array_equal(back.mean.values, expected["mean"])
    np.testing.assert_allclose(back.reconstruct().values, expected["rec"], rtol=1e-12)
    np.testing.assert_allclose(back.explained_variance_ratio.values, expected["evr"])
    assert back.V.dims == ("component", "lat", "lon") and back.method == "compressed"
    assert back.settings["stripes"] == "features"  # was "layout": "cols"
    assert back.settings["seed"] == 5 and back.center and back.settings["weighted"]
    units = xsvd.open_result(DATA / "format1-units.zarr")
    assert units.method == "exact" and units.S.attrs["units"] == "meter"
    assert units.reconstruct().attrs["units"] == "meter"


def test_to_dataset_holds_everything_from_dataset_needs():
    sst, res = _result()
    ds = res.to_dataset()
    assert ds.attrs["xsvd_format"] == 2 and ds.attrs["xsvd_n_power_iter"] == 2
    assert ds.attrs["xsvd_center"] == 1 and ds.attrs["xsvd_krylov"] == 0
    back = xsvd.SVDResult.from_dataset(ds)
    for a, b in zip(res, back, strict=True):
        xr.testing.assert_identical(a, b)
    assert back.settings == res.settings
    xr.testing.assert_allclose(back.reconstruct(), res.reconstruct())
    xr.testing.assert_allclose(back.project(sst), res.project(sst))
    with pytest.raises(ValueError, match="not written by xsvd"):
        xsvd.SVDResult.from_dataset(sst.to_dataset())
