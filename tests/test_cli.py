"""The `xsvd` command."""

from __future__ import annotations

import re

import numpy as np
import pytest

import xsvd
from xsvd.cli import main


def test_demo_reports_shapes_method_variance_and_time(capsys, tmp_path):
    argv = ["demo", "--variants", "4000", "--samples", "120", "--k", "4"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("method: compressed (k=4") == 2
    assert "U {'samples': 120, 'component': 4}" in out
    assert "V {'component': 4, 'lat': 36, 'lon': 72}" in out
    assert re.search(r"explained variance: \d+\.\d%", out)
    assert re.search(r"in \d+\.\d\d s", out)
    # the planted climate modes are found: correlations printed as 0.9xx or 1.000
    corr = re.search(r"planted modes: ([\d. ]+)", out).group(1).split()
    assert len(corr) == 3 and min(map(float, corr)) > 0.95
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # the demo says what to install instead
        assert 'Plots skipped: install matplotlib (pip install "xsvd[plot]")' in out
        assert not list(tmp_path.glob("*.png"))
        return
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs == ["climate-components.png", "climate-scree.png", "genotype-scores.png"]
    assert all((tmp_path / p).stat().st_size > 10_000 for p in pngs)
    assert all(str(tmp_path / p) in out for p in pngs)  # says where


def test_bad_arguments_give_a_one_line_error(capsys):
    assert main(["demo", "--k", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xsvd: error:") and err.count("\n") == 1


# ------------------------------------------------------------------ xsvd run


@pytest.fixture
def sst_store(tmp_path):
    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    path = tmp_path / "sst.zarr"
    xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4).to_dataset().to_zarr(path)
    return path


def test_run_writes_a_result_store(sst_store, tmp_path, capsys):
    out = tmp_path / "eofs.zarr"
    argv = ["run", str(sst_store), "--var", "sst", "--dim", "time", "--k", "3", "--center"]
    assert main([*argv, "--method", "compressed", "--seed", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "method: compressed (k=3" in text and str(out) in text
    res = xsvd.open_result(out)
    assert res.V.dims == ("component", "lat", "lon") and res.settings["seed"] == 2
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    want = ref.svd.compressed(k=3, dim="time", center=True, seed=2)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-10)


def test_run_progress(sst_store, tmp_path, capsys):
    out = tmp_path / "p.zarr"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "2", "--method", "compressed"]
    assert main([*argv, "--n-power-iter", "1", "--progress", "--out", str(out)]) == 0
    assert "xsvd: pass 2/2" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "{tmp}/missing.zarr", "--dim", "time", "--k", "2"], "does not exist"),
        (["run", "{store}", "--var", "tos", "--dim", "time", "--k", "2"], "no variable 'tos'"),
        (["run", "{store}", "--dim", "depth", "--k", "2"], "'depth' is not a dimension"),
        (["run", "{store}", "--dim", "time", "--k", "500", "--method", "compressed"], "k=500"),
        (["run", "{store}", "--dim", "time", "--k", "2", "--out", "{store}"], "already exists"),
    ],
)
def test_run_bad_input_is_one_line_no_traceback_no_output(
    args, message, sst_store, tmp_path, capsys
):
    argv = [a.format(tmp=tmp_path, store=sst_store) for a in args]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "out.zarr")]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("xsvd: error:") and err.count("\n") == 1 and message in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no partial output


def test_run_non_numeric_data(tmp_path, capsys):
    import xarray as xr

    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    path = tmp_path / "s.zarr"
    xr.Dataset({"s": (("a", "b"), np.array([["x", "y"], ["z", "w"]], dtype=object))}).to_zarr(path)
    assert main(["run", str(path), "--dim", "a", "--out", str(tmp_path / "o.zarr")]) == 2
    assert "numeric" in capsys.readouterr().err
