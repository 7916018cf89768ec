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
    assert pngs == [
        "climate-components.png",
        "climate-scree.png",
        "climate-timeseries.png",
        "genotype-scores.png",
    ]
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
    text = capsys.readouterr().out
    assert "xsvd: pass 2/2" in text and "2 passes over the data" in text


def test_run_says_1_pass_not_1_passes(sst_store, tmp_path, capsys):
    argv = ["run", str(sst_store), "--dim", "time", "--k", "2", "--method", "compressed"]
    assert main([*argv, "--n-power-iter", "0", "--out", str(tmp_path / "o.zarr")]) == 0
    text = capsys.readouterr().out
    assert "(k=2, 1 pass over the data," in text and "passes" not in text


def test_run_coslat_weights(sst_store, tmp_path, capsys):
    out = tmp_path / "eofs.zarr"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--center", "--seed", "1"]
    argv += ["--method", "compressed", "--weights", "coslat", "--out", str(out)]
    assert main(argv) == 0
    assert "weights: sqrt(cos(lat))" in capsys.readouterr().out
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    w = xsvd.coslat_weights(ref)
    want = ref.svd.compressed(k=3, dim="time", center=True, weights=w, seed=1)
    res = xsvd.open_result(out)
    assert res.settings["weighted"]
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-10)
    np.testing.assert_allclose(res.to_dataset()["weights"].isel(lon=0).values, w.values)
    # the weights matter: unweighted, the singular values differ
    plain = ref.svd.compressed(k=3, dim="time", center=True, seed=1)
    assert np.abs(res.S.values - plain.S.values).max() > 1e-3 * plain.S.values[0]


def test_run_coslat_needs_a_latitude_in_degrees(tmp_path, capsys):
    import xarray as xr

    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    z = np.random.default_rng(0).standard_normal((6, 4))
    for i, y in enumerate([[0.0, 1, 2, 3], [0.0, 60, 120, 180]]):
        store = tmp_path / f"s{i}.zarr"
        attrs = {"units": "degrees_N"} if i else {}  # y in degrees north, or just y
        xr.Dataset({"z": (("t", "y"), z)}, coords={"y": ("y", y, attrs)}).to_zarr(store)
        argv = ["run", str(store), "--dim", "t", "--k", "1", "--weights", "coslat"]
        assert main([*argv, "--out", str(tmp_path / "o.zarr")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "give --weights VAR" in err
        assert ("needs a latitude coordinate" if i == 0 else "outside -90 to 90") in err
    assert not (tmp_path / "o.zarr").exists()


def test_run_weights_variable_of_a_netcdf_file(tmp_path, capsys):
    pytest.importorskip("scipy", reason="writing netCDF 3 here needs scipy")
    import xarray as xr

    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    sst = xsvd.datasets.climate_field(n_time=40, n_lat=8, n_lon=16, seed=2)
    area = (np.cos(np.deg2rad(sst.lat)) * xr.ones_like(sst.lon)).rename("area")
    path = tmp_path / "sst.nc"
    xr.Dataset({"sst": sst, "cell_weight": np.sqrt(area)}).to_netcdf(path, engine="scipy")
    out = tmp_path / "o.zarr"
    argv = ["run", str(path), "--var", "sst", "--dim", "time", "--center", "--method", "exact"]
    assert main([*argv, "--weights", "cell_weight", "--out", str(out)]) == 0
    assert "weights: variable 'cell_weight'" in capsys.readouterr().out
    want = sst.svd.exact(dim="time", center=True, weights=np.sqrt(area))
    got = xsvd.open_result(out).S.values  # the last is 0 (centered): compare to S[0]
    np.testing.assert_allclose(got, want.S.values, rtol=1e-10, atol=1e-12 * got[0])


def test_run_missing_mean(tmp_path, capsys):
    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    sst = xsvd.datasets.climate_field(n_time=40, n_lat=8, n_lon=16, seed=3)
    gappy = sst.copy()
    gappy[5, 4, 3] = np.nan  # one value of an ocean cell
    path = tmp_path / "gappy.zarr"
    gappy.to_dataset().to_zarr(path)
    argv = ["run", str(path), "--dim", "time", "--k", "3", "--center", "--method", "exact"]
    assert main([*argv, "--out", str(tmp_path / "a.zarr")]) == 2
    err = capsys.readouterr().err
    assert "--missing mean" in err and "missing='mean'" not in err
    assert not (tmp_path / "a.zarr").exists()
    assert main([*argv, "--missing", "mean", "--out", str(tmp_path / "b.zarr")]) == 0
    res = xsvd.open_result(tmp_path / "b.zarr")
    want = gappy.svd.exact(dim="time", center=True, missing="mean")
    np.testing.assert_allclose(res.S.values, want.S.values[:3], rtol=1e-10)
    assert res.settings["missing"] == "mean"


def test_run_help_reads_well():
    from xsvd.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    text = " ".join(sub.choices["run"].format_help().split())
    assert "--weights {coslat,VAR}" in text and "--missing {error,mean}" in text
    assert "sqrt(cos(latitude))" in text and "covariance is weighted by cos(latitude)" in text
    assert "--method {auto,exact,compressed}" in text and "(default auto)" in text
    assert "(default error)" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "{tmp}/missing.zarr", "--dim", "time", "--k", "2"], "does not exist"),
        (["run", "{store}", "--var", "tos", "--dim", "time", "--k", "2"], "no variable 'tos'"),
        (["run", "{store}", "--dim", "depth", "--k", "2"], "'depth' is not a dimension"),
        (["run", "{store}", "--dim", "time", "--k", "500", "--method", "compressed"], "k=500"),
        (["run", "{store}", "--dim", "time", "--k", "2", "--out", "{store}"], "already exists"),
        (["run", "{store}", "--dim", "time", "--method", "compressed"], "needs --k"),
        (["run", "{store}", "--dim", "time", "--k", "2", "--weights", "area"], "'area' is neither"),
        (["run", "{store}", "--dim", "time", "--k", "2", "--weights", "month"], "not feature dim"),
        (["run", "{store}", "--dim", "lat,lon", "--k", "2", "--weights", "coslat"], "along the s"),
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
