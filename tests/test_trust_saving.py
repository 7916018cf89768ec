"""A save never deletes what it did not write, and a read never sees a half-replaced store.

Issue 31, item 6: ``res.to_zarr(path, mode="w")`` deleted any folder at
``path`` (the user's files with it), and a reader racing repeated
``mode="w"`` saves got spurious "corrupt" errors. The races are played out
deterministically: the reader's or the writer's steps are interleaved by
monkeypatching, never by timing.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest
import xarray as xr

import xsvd
from xsvd import datasets

pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')


def _results():
    """Two results of different shapes and values: a mix of the two cannot pass for either."""
    old = datasets.climate_field(n_time=48, n_lat=12, n_lon=24, seed=2)
    new = datasets.climate_field(n_time=24, n_lat=6, n_lon=12, seed=5)
    return old.svd(k=3, dim="time", center=True), new.svd(k=2, dim="time", center=True)


def _assert_same(a, b):
    for x, y in zip(a, b, strict=True):  # U, S, V
        xr.testing.assert_identical(x, y)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------- what mode="w" may replace
def test_mode_w_refuses_a_folder_of_the_users_files(tmp_path):
    res, _ = _results()
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "chapter1.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match=r"thesis'.*not a result saved by xsvd") as err:
        res.to_zarr(folder, mode="w")
    assert "another path" in str(err.value) and "delete" in str(err.value)
    assert (folder / "chapter1.tex").read_text() == "years of work"
    assert _listing(folder) == ["chapter1.tex"]
    assert _listing(tmp_path) == ["thesis"]  # nothing written beside it either


def test_mode_w_refuses_a_file(tmp_path):
    res, _ = _results()
    path = tmp_path / "notes.zarr"
    path.write_text("not a store")
    with pytest.raises(FileExistsError, match=r"notes\.zarr' is a file"):
        res.to_zarr(path, mode="w")
    assert path.read_text() == "not a store"
    assert _listing(tmp_path) == ["notes.zarr"]


def test_mode_w_refuses_a_zarr_store_of_other_data(tmp_path):
    res, _ = _results()
    path = tmp_path / "sst.zarr"
    data = datasets.climate_field(n_time=6, n_lat=3, n_lon=4).to_dataset(name="sst")
    data.to_zarr(path, zarr_format=3, consolidated=False)
    with pytest.raises(FileExistsError, match="sst.zarr"):
        res.to_zarr(path, mode="w")
    xr.testing.assert_identical(xr.open_zarr(path, consolidated=False).load(), data.load())
    with pytest.raises(FileExistsError, match="sst.zarr"):  # nor by the Dataset writer
        xsvd.io.write_store(data, path, mode="w")


def test_mode_w_replaces_a_result_or_an_empty_folder(tmp_path):
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    path.mkdir()  # empty: nothing to lose
    res.to_zarr(path, mode="w")
    _assert_same(xsvd.open_result(path), res)
    res2.to_zarr(path, mode="w")  # a result xsvd saved: replaced
    _assert_same(xsvd.open_result(path), res2)
    assert _listing(tmp_path) == ["r.zarr"]  # no leftovers


def test_mode_w_replaces_a_result_saved_by_an_older_format(tmp_path):
    """Format 2 stores (``.zattrs``) with ``xsvd_format`` are xsvd's too."""
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever zarr says of format 2
        res.to_dataset().to_zarr(path, zarr_format=2, consolidated=False)
    res2.to_zarr(path, mode="w")
    _assert_same(xsvd.open_result(path), res2)


# ---------------------------------------------------- readers racing a replacing save
def _puts_the_new_store_in(src, dst, path: Path) -> bool:
    """Whether ``os.replace(src, dst)`` is the save's renaming of its new store to ``path``.

    (zarr renames each file it writes into place too: those are not it.)
    """
    return Path(dst) == path and Path(src).name.startswith(f".{path.name}.xsvd-tmp-")


def test_read_that_spans_a_whole_replacing_save_gets_the_new_result(tmp_path, monkeypatch):
    """The reader opens the old store's metadata, a save replaces it, then the chunks are read."""
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    real_open = xsvd.io.store.open_zarr_dataset
    saves = []

    def open_then_a_save(source, **kwargs):
        ds = real_open(source, **kwargs)  # metadata of the old store; chunks not read yet
        if not saves:
            saves.append(source)
            res2.to_zarr(path, mode="w")
        return ds

    monkeypatch.setattr(xsvd.io.store, "open_zarr_dataset", open_then_a_save)
    back = xsvd.open_result(path)  # was: StoreReadError, "the store is corrupt"
    assert saves
    _assert_same(back, res2)


def test_read_of_a_store_moved_aside_before_it_is_opened_reads_the_old_one(tmp_path, monkeypatch):
    """The reader finds the store; the save's first rename moves it aside; then it is opened."""
    res, _ = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    real_open = xsvd.io.store.open_zarr_dataset
    moved = []

    def moved_aside_then_open(source, **kwargs):
        if not moved:  # what write_store's first rename does
            moved.append(tmp_path / ".r.zarr.xsvd-old-0a1b2c3d")
            os.replace(path, moved[0])
        return real_open(source, **kwargs)

    monkeypatch.setattr(xsvd.io.store, "open_zarr_dataset", moved_aside_then_open)
    back = xsvd.open_result(path)  # was: StoreReadError, "Could not open the store"
    assert moved
    _assert_same(back, res)


def test_read_between_the_renames_of_a_save_gets_a_whole_result(tmp_path, monkeypatch):
    """A read starts between the save's two renames and finishes after the save.

    It opens the old store where the save moved it; the save then renames the
    new store in and deletes the old one before the read has the chunks.
    """
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    real_replace = os.replace
    real_open = xsvd.io.store.open_zarr_dataset
    state = {}

    def open_then_the_save_finishes(source, **kwargs):
        ds = real_open(source, **kwargs)
        if ".xsvd-old-" in os.fspath(source) and "finished" not in state:
            state["finished"] = True
            real_replace(state["tmp"], path)  # the save's second rename...
            shutil.rmtree(source)  # ...and its deleting the old store
        return ds

    def replace(src, dst):
        if _puts_the_new_store_in(src, dst, path) and "read" not in state:
            state["tmp"] = src
            assert not path.exists()  # between the two renames
            state["read"] = xsvd.open_result(path)  # was: StoreReadError or wrong numbers
            if not os.path.exists(src):
                return  # renamed in during the read
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(xsvd.io.store, "open_zarr_dataset", open_then_the_save_finishes)
    res2.to_zarr(path, mode="w")
    assert state["finished"]
    _assert_same(state["read"], res2)
    _assert_same(xsvd.open_result(path), res2)
    assert _listing(tmp_path) == ["r.zarr"]


def test_read_in_the_window_between_the_renames_gets_the_old_result(tmp_path, monkeypatch):
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    real_replace = os.replace
    reads = []

    def replace(src, dst):
        if _puts_the_new_store_in(src, dst, path):
            reads.append(xsvd.open_result(path))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    res2.to_zarr(path, mode="w")
    assert len(reads) == 1
    _assert_same(reads[0], res)


def test_a_store_replaced_during_every_read_is_a_clear_error(tmp_path, monkeypatch):
    res, res2 = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    real_open = xsvd.io.store.open_zarr_dataset
    saves = []

    def open_then_a_save(source, **kwargs):
        ds = real_open(source, **kwargs)
        saves.append(source)
        (res, res2)[len(saves) % 2].to_zarr(path, mode="w")
        return ds

    monkeypatch.setattr(xsvd.io.store, "open_zarr_dataset", open_then_a_save)
    with pytest.raises(xsvd.StoreReadError, match="replaced by another save"):
        xsvd.open_result(path)
    assert len(saves) == xsvd.io.store.READ_ATTEMPTS


def test_a_corrupt_store_is_still_an_error_at_once(tmp_path, monkeypatch):
    res, _ = _results()
    path = tmp_path / "r.zarr"
    res.to_zarr(path)
    chunk = next(p for p in sorted((path / "U" / "c").rglob("*")) if p.is_file())
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x10
    chunk.write_bytes(bytes(data))
    real_open = xsvd.io.store.open_zarr_dataset
    opens = []

    def counted(source, **kwargs):
        opens.append(source)
        return real_open(source, **kwargs)

    monkeypatch.setattr(xsvd.io.store, "open_zarr_dataset", counted)
    with pytest.raises(xsvd.StoreReadError, match="checksum"):
        xsvd.open_result(path)
    assert len(opens) == 1  # not read again: nothing replaced it
