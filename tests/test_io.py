"""Zarr in and out, remote (HTTP) stores, read errors, progress."""

from __future__ import annotations

import functools
import http.server
import json
import os
import random
import subprocess
import sys
import threading
import warnings
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


MiB = 2**20


@pytest.mark.parametrize(
    "shape, storage, itemsize, threads, planned",
    [
        # 250 time steps of a 90 x 180 float32 grid (15.4 MiB): kept, not merged into 2,000
        ((3000, 90, 180), (250, 90, 180), 4, 1, (250, 90, 180)),
        # one step per chunk (63 KiB): merged into equal runs of at most 16 MiB
        ((3000, 90, 180), (1, 90, 180), 4, 1, (250, 90, 180)),
        # ... and into no fewer chunks than threads (17 chunks for 16 threads)
        ((3000, 90, 180), (1, 90, 180), 4, 16, (177, 90, 180)),
        # split along the grid: the last dimension grows first, in equal runs
        ((10_000, 720, 1440), (100, 90, 90), 4, 1, (100, 90, 360)),
        # 10 MB genotype blocks: kept (two would be 20 MB)
        ((400_000, 10_000), (1_000, 10_000), 1, 1, (1_000, 10_000)),
        # 100 KB blocks: the samples taken whole (10 MB), the variants not merged further
        ((400_000, 10_000), (1_000, 100), 1, 1, (1_000, 10_000)),
        # large storage chunks: kept, never split
        ((10**6, 10**4), (50_000, 10**4), 1, 1, (50_000, 10**4)),
        # a small array: one chunk per thread at most
        ((20_000, 300), (1_000, 300), 1, 2, (10_000, 300)),
        ((20_000, 300), (1_000, 300), 1, 64, (1_000, 300)),
        ((5, 7), (10, 10), 8, 1, (5, 7)),  # storage chunks larger than the array
    ],
)
def test_plan_chunks_keeps_storage_chunks_unless_small(shape, storage, itemsize, threads, planned):
    assert xsvd.io.plan_chunks(shape, storage, itemsize, threads=threads) == planned


@pytest.mark.parametrize(
    "shape, storage, itemsize, target, threads",
    [
        ((10_000, 720, 1440), (1, 720, 1440), 4, 2**27, 1),
        ((10_000, 720, 1440), (100, 90, 90), 4, 2**27, 16),
        ((4128, 4429), (59, 4121), 4, 2**20, 1),
        ((24, 4077), (21, 1337), 2, 2**16, 3),
        ((1718, 27), (652, 24), 4, 2**16, 1),
        ((5, 7), (10, 10), 8, 2**20, 1),  # storage chunks larger than the array
        ((123_457,), (1000,), 8, 2**20, 1),
        ((123_457,), (1000,), 8, 2**30, 7),
        ((3000, 90, 180), (250, 90, 180), 4, 16 * MiB, 1),
        ((3000, 90, 180), (7, 13, 180), 4, 16 * MiB, 5),
    ],
)
def test_plan_chunks_whole_storage_chunks_no_larger_than_needed(
    shape, storage, itemsize, target, threads
):
    plan = xsvd.io.plan_chunks(shape, storage, itemsize, target_bytes=target, threads=threads)
    stored = [min(s, n) for s, n in zip(storage, shape, strict=True)]
    for c, s, n in zip(plan, stored, shape, strict=True):
        assert c == n or (c % s == 0 and s <= c < n), (plan, storage)
    size, stored_size = np.prod(plan) * itemsize, np.prod(stored) * itemsize
    if plan != tuple(stored):  # merged: within the target and one chunk per thread at least
        assert size <= target and size <= -(-np.prod(shape) * itemsize // threads)
    # never larger than the storage chunk or the target, whichever is larger
    assert size <= max(stored_size, target)


def test_open_zarr_keeps_16_mib_storage_chunks(tmp_path):
    """250-step chunks of a 90 x 180 float32 grid were merged into 2,000-step chunks (issue 22)."""
    import dask.array as dsa

    path = tmp_path / "field.zarr"
    zeros = dsa.zeros((500, 90, 180), dtype=np.float32, chunks=(250, 90, 180))
    xr.Dataset({"sst": (("time", "lat", "lon"), zeros)}).to_zarr(path)
    assert xsvd.open_zarr(path, "sst").chunks == ((250, 250), (90,), (180,))


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


#: Variables of a CF-encoded store: raw dtype, zarr fill value (_FillValue), attributes.
CF_VARIABLES = {
    "packed": ("int16", -32768, {"scale_factor": 0.01, "add_offset": 15.0, "missing_value": -1}),
    "unsigned": ("int8", -1, {"_Unsigned": "true", "scale_factor": 0.5, "missing_value": [-2, 9]}),
    "signed": ("uint8", 255, {"_Unsigned": "false", "add_offset": 1.0}),
    "masked": ("int16", 7, {"missing_value": 8}),
    "masked64": ("int32", 7, {"missing_value": [8, 9]}),
    "floats": ("float32", float("nan"), {"missing_value": -999.0, "scale_factor": 2.0}),
    "plain": ("uint16", None, {}),
}


def _cf_store(folder: Path) -> Path:
    """A Zarr store whose variables use every CF encoding xarray decodes on reading."""
    import zarr

    path = folder / "cf.zarr"
    group = zarr.open_group(path, mode="w", zarr_format=2)
    rng = np.random.default_rng(0)
    for name, (dtype, fill, attrs) in CF_VARIABLES.items():
        if np.dtype(dtype).kind == "f":
            data = rng.normal(size=(40, 30)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            data = rng.integers(info.min, info.max, (40, 30), endpoint=True).astype(dtype)
        data.flat[::7] = 0 if fill is None else fill
        for i, value in enumerate(np.ravel(attrs.get("missing_value", []))):
            data.flat[3 + i :: 11] = value
        array = group.create_array(
            name,
            shape=data.shape,
            chunks=(16, 30),
            dtype=dtype,
            fill_value=fill,
            attributes={"_ARRAY_DIMENSIONS": ["y", "x"], **attrs},
        )
        array[:] = data
    zarr.consolidate_metadata(path)
    return path


@pytest.mark.parametrize("name", list(CF_VARIABLES))
def test_chunks_read_raw_decode_as_xarray_does(tmp_path, name):
    """The GPU read path (raw chunks from zarr, decoded by xsvd) gives what xarray gives."""
    import zarr

    path = _cf_store(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray: "multiple fill values"
        var = xr.open_zarr(path)[name]
        want = var.values
    raw = zarr.open_group(path, mode="r")[name]
    got = xsvd.io.zarr.decode_chunk(raw[16:32], var.encoding, var.dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want[16:32])
    if want.dtype.kind == "f" and name != "plain":
        assert np.isnan(want).any()  # the store does exercise the masks
    # ... and through the reader that open_zarr gives to Dask
    reader = xsvd.io.zarr.ChunkReader(var.variable, str(path), name, (16, 30), raw=raw)
    np.testing.assert_array_equal(reader[slice(0, 40), slice(0, 30)], want)
    host = xsvd.io.zarr.ChunkReader(var.variable, str(path), name, (16, 30))
    np.testing.assert_array_equal(host[slice(0, 40), slice(0, 30)], want)


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


def _store_with_missing_chunks(folder: Path, zarr_format: int = 3) -> Path:
    """A genotype store (6 chunks of 1,000 variants) whose chunks 3 and 5 were lost."""
    path = folder / f"lost{zarr_format}.zarr"
    if not path.exists():
        gt = datasets.genotypes(6000, 40, seed=3).chunk({"variants": 1000})
        gt.to_dataset().to_zarr(path, zarr_format=zarr_format)
        keys = ("c/3/0", "c/5/0") if zarr_format == 3 else ("3.0", "5.0")
        for key in keys:
            (path / "genotype" / key).unlink()
    return path


MISSING = r"2 of the 6 storage chunks of variable 'genotype' are missing .*lost\d\.zarr"


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_missing_chunks_warn_by_default(tmp_path, zarr_format):
    path = _store_with_missing_chunks(tmp_path, zarr_format)
    with pytest.warns(xsvd.io.MissingChunksWarning, match=MISSING) as record:
        gt = xsvd.open_zarr(path, "genotype")
    message = str(record[0].message)
    assert "(3, 0), (5, 0)" in message and "fill value" in message
    assert "only the fill value" in message  # why it can be expected
    assert "missing_chunks='error'" in message and "missing_chunks='ignore'" in message
    assert issubclass(xsvd.io.MissingChunksWarning, UserWarning)
    # what the warning is about: zarr fills the lost variants with zeros
    ref = datasets.genotypes(6000, 40, seed=3).values
    assert (gt.values[3000:4000] == 0).all() and (ref[3000:4000] != 0).any()
    np.testing.assert_array_equal(gt.values[:3000], ref[:3000])


def test_missing_chunks_error_or_ignore(tmp_path):
    path = _store_with_missing_chunks(tmp_path)
    with pytest.raises(xsvd.StoreReadError, match=MISSING + r".*\(3, 0\), \(5, 0\)"):
        xsvd.open_zarr(path, "genotype", missing_chunks="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt = xsvd.open_zarr(path, "genotype", missing_chunks="ignore")
    assert gt.shape == (6000, 40)
    with pytest.raises(ValueError, match="missing_chunks must be"):
        xsvd.open_zarr(path, "genotype", missing_chunks="raise")


def test_complete_store_has_no_missing_chunks(store):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xsvd.open_zarr(store, "genotype")
        xsvd.open_zarr(store, "genotype", missing_chunks="error")


def test_missing_chunks_of_http_stores(server, store):
    _store_with_missing_chunks(store.parent)
    with pytest.warns(xsvd.io.MissingChunksWarning, match=MISSING + r".*\(3, 0\), \(5, 0\)"):
        xsvd.open_zarr(f"{server}/lost3.zarr", "genotype")
    with pytest.raises(xsvd.StoreReadError, match=r"missing from the Zarr store 'http://"):
        xsvd.open_zarr(f"{server}/lost3.zarr", "genotype", missing_chunks="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xsvd.open_zarr(f"{server}/{store.name}", "genotype", missing_chunks="error")


# -------------------------------------------------------------- results


def _result():
    sst = datasets.climate_field(n_time=48, n_lat=12, n_lon=24, seed=2)
    w = xsvd.coslat_weights(sst)
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


def _fail_midway(monkeypatch):
    """Make writing a store fail after part of it is on disk."""
    real = xr.Dataset.to_zarr

    def fail_midway(self, store, *args, **kwargs):
        real(self[["S"]], store, *args, **kwargs)  # something is written...
        raise OSError("disk full")  # ...then the write fails

    monkeypatch.setattr(xr.Dataset, "to_zarr", fail_midway)


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    _, res = _result()
    _fail_midway(monkeypatch)
    with pytest.raises(OSError, match="disk full"):
        res.to_zarr(tmp_path / "r.zarr")
    assert list(tmp_path.iterdir()) == []


def test_failed_replace_leaves_the_old_store(tmp_path, monkeypatch):
    _, res = _result()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    res2 = datasets.climate_field(n_time=24, n_lat=6, n_lon=12).svd(k=2, dim="time")
    with monkeypatch.context() as patch:
        _fail_midway(patch)
        with pytest.raises(OSError, match="disk full"):
            res2.to_zarr(path, mode="w")
    xr.testing.assert_identical(xsvd.open_result(path).S, res.S)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]
    # the new store cannot be moved into place: the old one is put back
    real = os.replace

    def refuse_the_new_store(src, dst):
        if ".xsvd-tmp-" in os.fspath(src):
            raise PermissionError("no")
        real(src, dst)

    monkeypatch.setattr(os, "replace", refuse_the_new_store)
    with pytest.raises(PermissionError):
        res2.to_zarr(path, mode="w")
    xr.testing.assert_identical(xsvd.open_result(path).S, res.S)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


def _debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".xsvd-" in p.name)


def _fake_store(path: Path) -> None:
    (path / "U").mkdir(parents=True)
    (path / "U" / "zarr.json").write_text("{}")


def test_later_save_removes_stale_debris_only(tmp_path, monkeypatch):
    """Debris of killed saves is removed by the next save once stale; a running save's is not."""
    _, res = _result()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    debris = [".r.zarr.xsvd-tmp-0123abcd", ".r.zarr.xsvd-old-89abcdef"]
    other = ".other.zarr.xsvd-tmp-33333333"  # another path's
    for name in [*debris, other]:
        _fake_store(tmp_path / name)
    res.to_zarr(path, mode="w")  # fresh: possibly a save still running
    assert _debris(tmp_path) == sorted([*debris, other])
    monkeypatch.setattr(xsvd.io.store, "STALE_AFTER", -1)  # as if an hour later
    res.to_zarr(path, mode="w")
    assert _debris(tmp_path) == [other]
    xr.testing.assert_identical(xsvd.open_result(path).S, res.S)


def test_save_killed_between_its_renames_is_recovered(tmp_path):
    """Killed after moving the old store aside: reading finds it, the next save puts it back."""
    _, res = _result()
    res2 = datasets.climate_field(n_time=24, n_lat=6, n_lon=12).svd(k=2, dim="time")
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    res2.to_zarr(tmp_path / "new.zarr")
    path.rename(tmp_path / ".r.zarr.xsvd-old-0a1b2c3d")
    (tmp_path / "new.zarr").rename(tmp_path / ".r.zarr.xsvd-tmp-0a1b2c3d")
    back = xsvd.open_result(path)  # the old result, read where it was moved
    xr.testing.assert_identical(back.S, res.S)
    assert not path.exists()  # reading renames nothing
    with pytest.raises(FileExistsError):  # the old result is there: not replaced
        res2.to_zarr(path)
    assert path.exists() and _debris(tmp_path) == [".r.zarr.xsvd-tmp-0a1b2c3d"]
    xr.testing.assert_identical(xsvd.open_result(path).S, res.S)


SAVE_IN_A_LOOP = """
import sys, xsvd
ds = xsvd.io.read_store(sys.argv[1])  # what res.to_zarr(path, mode="w") writes
print("ready", flush=True)
while True:
    xsvd.io.write_store(ds, sys.argv[1], mode="w")
"""


def test_killed_saves_leave_a_readable_result(tmp_path, monkeypatch):
    _, res = _result()
    here = str(Path(xsvd.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    paths = [tmp_path / str(i) / "r.zarr" for i in range(3)]
    procs = []
    rng = random.Random(0)
    try:
        for path in paths:
            path.parent.mkdir()
            res.to_zarr(path)
            command = [sys.executable, "-c", SAVE_IN_A_LOOP, str(path)]
            procs.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env))
        for proc in procs:
            assert proc.stdout.readline() == "ready\n"
            threading.Event().wait(rng.uniform(0.05, 0.3))  # then killed mid-save
            proc.kill()
            proc.wait()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
            proc.stdout.close()
    monkeypatch.setattr(xsvd.io.store, "STALE_AFTER", -1)  # as if an hour later
    for path in paths:
        xr.testing.assert_identical(xsvd.open_result(path).S, res.S)
        assert all(p.name.startswith(".r.zarr.xsvd-") for p in path.parent.iterdir() if p != path)
        res.to_zarr(path, mode="w")
        assert sorted(p.name for p in path.parent.iterdir()) == ["r.zarr"]


@pytest.mark.parametrize("variable", ["U", "V"])
def test_flipped_byte_is_an_error_on_reading(tmp_path, variable):
    _, res = _result()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    for name in ("U", "S", "V", "lat", "time"):
        codecs = json.loads((path / name / "zarr.json").read_text())["codecs"]
        assert {"name": "crc32c"} in codecs, name
    chunk = next(p for p in sorted((path / variable / "c").rglob("*")) if p.is_file())
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x10
    chunk.write_bytes(bytes(data))
    with pytest.raises(xsvd.StoreReadError, match=rf"'{variable}'.*r\.zarr.*checksum"):
        xsvd.open_result(path)


def test_every_variable_is_checksummed_after_text_ones(tmp_path):
    """Text coordinates (sample names) are rewritten before the codecs are set: the
    variables after them keep their CRC-32C too (they lost it, a stale variable)."""
    ds = xr.Dataset(
        {"txt": ("x", np.array(["a", "b"])), "a": ("x", [1.0, 2.0]), "b": ("y", [3.0])},
        coords={"x": np.array(["p", "q"]), "lab": ("x", np.array(["u", "v"])), "y": [0]},
    )
    xsvd.io.write_store(ds, tmp_path / "d.zarr")
    gt = xsvd.datasets.genotypes(300, 20, seed=1)
    gt.svd(k=2, dim="samples", center=True).to_zarr(tmp_path / "r.zarr")
    for store, names in (("d.zarr", ds.variables), ("r.zarr", ("U", "S", "V", "samples"))):
        for name in names:
            meta = json.loads((tmp_path / store / name / "zarr.json").read_text())
            assert {"name": "crc32c"} in meta["codecs"], (store, name)
    xr.testing.assert_identical(xsvd.io.read_store(tmp_path / "d.zarr"), ds)


def test_saving_and_reading_results_do_not_warn(tmp_path):
    _, res = _result()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res.to_zarr(tmp_path / "r.zarr")
        xsvd.open_result(tmp_path / "r.zarr")
    # stores without consolidated metadata open as well, without warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res.to_dataset().to_zarr(tmp_path / "plain.zarr", consolidated=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = xsvd.open_result(tmp_path / "plain.zarr")
    xr.testing.assert_identical(back.V, res.V)


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


def test_to_dataset_holds_everything_from_dataset_needs():
    sst, res = _result()
    ds = res.to_dataset()
    assert ds.attrs["xsvd_format"] == 5 and ds.attrs["xsvd_method"] == "compressed"
    settings = json.loads(ds.attrs["xsvd_settings"])
    assert settings["n_power_iter"] == 2 and settings["center"] is True
    assert json.loads(ds.attrs["xsvd_layout"])["sample_dims"] == ["time"]
    back = xsvd.SVDResult.from_dataset(ds)
    for a, b in zip(res, back, strict=True):
        xr.testing.assert_identical(a, b)
    assert back.settings == res.settings and back.center is True
    xr.testing.assert_allclose(back.reconstruct(), res.reconstruct())
    xr.testing.assert_allclose(back.project(sst), res.project(sst))
    with pytest.raises(ValueError, match="not written by xsvd"):
        xsvd.SVDResult.from_dataset(sst.to_dataset())
    ds.attrs["xsvd_format"] = 2
    with pytest.raises(ValueError, match="version 2 .* reads versions 3, 4, 5"):
        xsvd.SVDResult.from_dataset(ds)
