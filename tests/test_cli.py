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
    argv = ["run", str(sst_store), "--dim", "time", "--k", "2", "--method=compressed", "--seed=0"]
    assert main([*argv, "--n-power-iter", "1", "--progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "xsvd: pass 2/2" in text and "2 passes over the data" in text


def test_run_says_1_pass_not_1_passes(sst_store, tmp_path, capsys):
    argv = ["run", str(sst_store), "--dim", "time", "--k", "2", "--method=compressed", "--seed=0"]
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
    assert "--weights {coslat,patterson,VAR}" in text and "--missing {error,mean}" in text
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


# ------------------------------------------------- output format (issue 22, item 7)


def test_run_out_nc_writes_a_netcdf_file_open_result_reads(sst_store, tmp_path, capsys):
    from xsvd.io.netcdf import is_netcdf

    out = tmp_path / "eofs.nc"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--center", "--seed", "2"]
    argv += ["--method", "compressed", "--out", str(out)]
    assert main(argv) == 0
    assert "wrote U, S, V to the netCDF file" in capsys.readouterr().out
    assert out.is_file() and is_netcdf(out)  # a file, not a Zarr folder named eofs.nc
    assert [p.name for p in tmp_path.iterdir() if p.name != "sst.zarr"] == ["eofs.nc"]
    res = xsvd.open_result(out)
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    want = ref.svd.compressed(k=3, dim="time", center=True, seed=2)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-10)
    assert res.V.dims == ("component", "lat", "lon")
    # --overwrite replaces it, also a Zarr folder left under that name by an older xsvd
    out.unlink()
    out.mkdir()
    (out / "zarr.json").write_text("{}")
    assert main([*argv[:-1], str(out), "--overwrite"]) == 0
    assert out.is_file() and is_netcdf(out)


@pytest.mark.parametrize("name", ["eofs.h5", "eofs.csv", "eofs.npz"])
def test_run_out_with_an_unknown_suffix_is_refused_before_computing(
    name, sst_store, tmp_path, capsys
):
    argv = ["run", str(sst_store), "--dim", "time", "--k", "2", "--out", str(tmp_path / name)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".zarr" in err and ".nc" in err and name in err
    assert not (tmp_path / name).exists()


def test_run_out_without_suffix_is_a_zarr_store(sst_store, tmp_path):
    out = tmp_path / "eofs"
    assert main(["run", str(sst_store), "--dim", "time", "--k", "2", "--out", str(out)]) == 0
    assert out.is_dir() and xsvd.open_result(out).S.size == 2


# ------------------------------------------------------------ --k, in its words


def test_run_large_field_without_k_says_give_k(tmp_path, capsys):
    import xarray as xr

    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    path = tmp_path / "big.zarr"
    z = np.random.default_rng(0).standard_normal((1001, 1002)).astype(np.float32)
    xr.Dataset({"z": (("time", "x"), z)}).to_zarr(path)
    assert main(["run", str(path), "--dim", "time", "--out", str(tmp_path / "o.zarr")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1001 x 1002" in err
    assert "--k" in err and "--method exact" in err
    assert "k=" not in err and "method=" not in err  # no Python spelling
    assert not (tmp_path / "o.zarr").exists()


def test_library_advice_in_the_command_words():
    from xsvd.cli import command_words

    assert command_words("pass `missing='mean'`, or") == "pass --missing mean, or"
    assert command_words("Pass missing_chunks='error' for") == "Pass --missing-chunks error for"
    assert (
        command_words("max_passes bounds it: pass tol too")
        == "--max-passes bounds it: pass --tol too"
    )
    assert command_words("n_power_iter=3 or tol=1e-3") == "--n-power-iter 3 or --tol 1e-3"
    assert command_words("missing values of the tolerance") == "missing values of the tolerance"


# ------------------------------------- --standardize, --tol, --max-passes


def test_run_standardize(sst_store, tmp_path):
    out = tmp_path / "corr.zarr"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--center", "--standardize"]
    assert main([*argv, "--method", "exact", "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    assert res.settings["standardize"]
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    want = ref.svd.exact(k=3, dim="time", center=True, standardize=True)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-10)
    # and it changed something: the covariance EOFs have other singular values
    plain = ref.svd.exact(k=3, dim="time", center=True)
    assert np.abs(res.S.values - plain.S.values).max() > 1e-2 * plain.S.values[0]


def test_run_tol_and_max_passes(sst_store, tmp_path):
    out = tmp_path / "tol.zarr"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--center", "--seed", "0"]
    argv += ["--method", "compressed", "--tol", "1e-8", "--max-passes", "12"]
    assert main([*argv, "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    assert res.settings["tol"] == 1e-8 and res.settings["max_passes"] == 12
    assert res.settings["passes"] <= 12
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    want = ref.svd.exact(k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-7)


def test_run_bad_tol_is_said_as_a_flag(sst_store, tmp_path, capsys):
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--method", "compressed"]
    assert main([*argv, "--tol", "2", "--out", str(tmp_path / "o.zarr")]) == 2
    err = capsys.readouterr().err
    assert "--tol must be" in err and not (tmp_path / "o.zarr").exists()


# ------------------------------------------------------------- --missing-chunks


def test_run_missing_chunks(tmp_path, capsys):
    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    sst = xsvd.datasets.climate_field(n_time=40, n_lat=8, n_lon=16, seed=3)
    path = tmp_path / "lost.zarr"
    sst.chunk({"time": 10}).to_dataset().to_zarr(path)
    (path / "sst" / "c" / "1" / "0" / "0").unlink()  # time steps 10-19 are gone
    argv = ["run", str(path), "--dim", "time", "--k", "2", "--method", "exact"]
    argv += ["--missing", "mean"]  # the lost chunk reads as NaN
    assert main([*argv, "--out", str(tmp_path / "a.zarr")]) == 0  # default: warn
    err = capsys.readouterr().err
    assert err.startswith("xsvd: warning: 1 of the 4 storage chunks") and err.count("\n") == 1
    assert "--missing-chunks error" in err and "missing_chunks=" not in err
    assert main([*argv, "--missing-chunks", "error", "--out", str(tmp_path / "b.zarr")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xsvd: error: 1 of the 4 storage chunks") and "(1, 0, 0)" in err
    assert not (tmp_path / "b.zarr").exists()
    assert main([*argv, "--missing-chunks", "ignore", "--out", str(tmp_path / "c.zarr")]) == 0
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------- genotype files


@pytest.fixture
def bed(tmp_path):
    pytest.importorskip("zarr", reason='writing the result needs zarr: pip install "xsvd[io]"')
    gt = xsvd.datasets.genotypes(n_variants=1500, n_samples=60, seed=3)
    values = gt.values.astype(np.float32)
    values[np.random.default_rng(3).random(values.shape) < 0.01] = np.nan  # missing calls
    values[:5] = 0  # monomorphic variants, left out by the Patterson scaling
    gt = gt.copy(data=values)
    xsvd.write_plink(gt, tmp_path / "toy")
    return gt


@pytest.mark.parametrize("suffix", [".bed", ".fam"])  # .bim too: any of the three
def test_run_plink_files_as_plink2_pca(bed, suffix, tmp_path, capsys):
    out = tmp_path / "pca.zarr"
    argv = ["run", str(tmp_path / f"toy{suffix}"), "--k", "3", "--center"]
    argv += ["--weights", "patterson", "--missing", "mean", "--out", str(out)]
    assert main(argv) == 0
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "toy.bed"))
    assert w.size <= 1495  # the 5 set to 0, and any the draw made monomorphic
    text = capsys.readouterr().out
    assert "Patterson scaling, 1 / sqrt(2 p (1 - p)) per variant as PLINK 2's --pca" in text
    assert f"({1500 - w.size} monomorphic variants left out)" in text
    res = xsvd.open_result(out)
    assert res.U.dims == ("samples", "component") and res.V.sizes["variants"] == w.size
    want = kept.svd.exact(k=3, dim="samples", center=True, weights=w, missing="mean")
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-6)


def test_run_plink_missing_calls_need_missing_mean(bed, tmp_path, capsys):
    argv = ["run", str(tmp_path / "toy.bed"), "--k", "3", "--out", str(tmp_path / "o.zarr")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--missing mean" in err and "netCDF" not in err


def test_run_pgen(tmp_path, capsys):
    pgenlib = pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    calls = xsvd.datasets.genotypes(n_variants=800, n_samples=40, seed=1).values.astype(np.int8)
    writer = pgenlib.PgenWriter(str(tmp_path / "toy.pgen").encode(), 40, 800, False)
    writer.append_biallelic_batch(np.ascontiguousarray(calls))
    writer.close()
    rows = "".join(f"1\t{i + 1}\trs{i}\tA\tG\n" for i in range(800))
    (tmp_path / "toy.pvar").write_text("#CHROM\tPOS\tID\tREF\tALT\n" + rows)
    (tmp_path / "toy.psam").write_text("#IID\n" + "".join(f"s{i}\n" for i in range(40)))
    out = tmp_path / "pca.nc"
    argv = ["run", str(tmp_path / "toy.pgen"), "--k", "2", "--center", "--weights", "patterson"]
    assert main([*argv, "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    kept, w = xsvd.patterson_scaling(xsvd.open_pgen(tmp_path / "toy.pgen"))
    want = kept.svd.exact(k=2, dim="samples", center=True, weights=w)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-6)


def test_run_vcf_says_how_to_convert(tmp_path, capsys):
    path = tmp_path / "calls.vcf.gz"
    path.write_bytes(b"not read")
    assert main(["run", str(path), "--k", "2", "--out", str(tmp_path / "o.zarr")]) == 2
    err = capsys.readouterr().err
    assert f"plink2 --vcf {path} --make-pgen --out {tmp_path / 'calls'}" in err


def test_run_without_dim_names_the_dimensions(sst_store, tmp_path, capsys):
    assert main(["run", str(sst_store), "--k", "2", "--out", str(tmp_path / "o.zarr")]) == 2
    err = capsys.readouterr().err
    assert "give --dim" in err and "['time', 'lat', 'lon']" in err


# ------------------------------------- flags made from the options' declarations (issue 29)


def _run_help() -> str:
    from xsvd.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    return " ".join(sub.choices["run"].format_help().split())


def test_run_flags_are_the_declared_options():
    from dataclasses import MISSING, fields

    from xsvd.cli import NOT_FLAGS, build_parser
    from xsvd.core.options import CompressedOptions, Preprocessing
    from xsvd.labeled.api import Labeling

    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    actions = {a.dest: a for a in sub.choices["run"]._actions}
    scalar = {"center", "missing", "negative_missing", "standardize", "device", "progress"}
    scalar |= {"n_power_iter", "n_oversamples", "seed", "krylov", "tol", "max_passes"}
    for cls in (Labeling, Preprocessing, CompressedOptions):
        for f in fields(cls):
            if f.name not in scalar:  # dim, weights (own flags), compute, dtype: not scalar
                assert f.name in NOT_FLAGS or f.name in ("dim", "weights", "dtype")
                continue
            action = actions[f.name]
            assert action.option_strings[0] == "--" + f.name.replace("_", "-")
            assert action.default == (None if f.default is MISSING else f.default)
    assert actions["missing"].choices == ("error", "mean")
    assert actions["device"].choices == ("gpu", "cpu")
    assert actions["method"].choices == ("auto", "exact", "compressed")
    assert actions["n_oversamples"].type is int and actions["tol"].type is float
    assert "--no-krylov" in actions["krylov"].option_strings
    text = _run_help()  # help from the docstrings, in flags, defaults in words
    assert (
        "--n-oversamples N_OVERSAMPLES compressed only: extra columns of the random sketch." in text
    )
    assert "(default: 10)" in text
    assert "below --tol 1e-6, 8 passes at most" in text
    assert "n_power_iter" not in text and "max_passes" not in text and "``" not in text


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--method", "exact", "--tol", "1e-3"], "--tol only applies"),
        (["--method", "exact", "--n-power-iter", "3"], "--n-power-iter only applies"),
        (["--seed", "1"], "--seed only applies"),  # auto chose the exact SVD for this shape
        (["--method", "exact", "--no-krylov", "--seed", "1"], "--seed, --krylov only apply"),
    ],
)
def test_run_refuses_compressed_options_for_the_exact_svd_in_flags(
    flags, said, sst_store, tmp_path, capsys
):
    out = tmp_path / "o.zarr"
    assert (
        main(["run", str(sst_store), "--dim", "time", "--k", "3", *flags, "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("xsvd: error: ") and err.count("\n") == 1
    assert said in err and "the exact SVD was chosen" in err and "pass --method compressed" in err
    assert "method=" not in err and "`" not in err
    assert not out.exists()


def test_run_new_flags_reach_the_solver(sst_store, tmp_path, capsys):
    out = tmp_path / "o.zarr"
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--method", "compressed"]
    argv += ["--seed", "1", "--n-oversamples", "4", "--no-krylov", "--n-power-iter", "2"]
    assert main([*argv, "--device", "cpu", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("xsvd: warning: With --no-krylov the error estimates")
    assert "keep --krylov and --n-oversamples >= 10" in err and "krylov=" not in err
    res = xsvd.open_result(out)
    assert res.settings["n_oversamples"] == 4 and res.settings["krylov"] is False
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    with pytest.warns(RuntimeWarning, match="krylov=False"):  # the library's own words
        want = ref.svd.compressed(
            3, dim="time", seed=1, n_oversamples=4, krylov=False, n_power_iter=2
        )
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-10)


def test_run_tol_not_reached_is_said_in_flags(sst_store, tmp_path, capsys):
    argv = ["run", str(sst_store), "--dim", "time", "--k", "5", "--method", "compressed"]
    argv += ["--seed", "0", "--tol", "1e-9", "--max-passes", "2"]
    assert main([*argv, "--out", str(tmp_path / "o.zarr")]) == 0
    err = capsys.readouterr().err
    assert "xsvd: warning: --tol 1e-09 was not reached in --max-passes 2 passes" in err
    assert "max_passes" not in err and "tol=" not in err


def test_missing_chunks_flag_is_the_declared_option_of_open_zarr():
    """--missing-chunks is made from open_zarr's declaration: its Literal type, its default
    and the first sentence of its docstring entry, as the solver's options are."""
    import inspect
    from typing import get_args

    from xsvd.cli import build_parser
    from xsvd.io.zarr import MissingChunks

    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    action = {a.dest: a for a in sub.choices["run"]._actions}["missing_chunks"]
    assert action.option_strings == ["--missing-chunks"]
    assert action.choices == get_args(MissingChunks) == ("warn", "error", "ignore")
    assert action.default == inspect.signature(xsvd.open_zarr).parameters["missing_chunks"].default
    entry = inspect.getdoc(xsvd.open_zarr).split("missing_chunks : ")[1].split("\n", 1)[1]
    first = " ".join(entry.split(" store). ")[0].split()).replace("``", "")
    assert first.startswith("What to do when storage chunks")
    text = _run_help()
    assert f"--missing-chunks {{warn,error,ignore}} {first} store). (default warn)" in text


def test_run_negative_missing_is_a_switch_with_three_states():
    from xsvd.cli import build_parser

    base = ["run", "s.zarr", "--out", "o.zarr"]
    parse = build_parser().parse_args
    assert parse(base).negative_missing is None  # the library's default
    assert parse([*base, "--negative-missing"]).negative_missing is True
    assert parse([*base, "--no-negative-missing"]).negative_missing is False


def test_command_words_of_switches():
    from xsvd.cli import command_words

    assert (
        command_words("keep krylov=True, or pass center=True") == "keep --krylov, or pass --center"
    )
    assert command_words("with `krylov=False` the") == "with --no-krylov the"
    assert command_words("pass `method='compressed'`.") == "pass --method compressed."
    assert command_words("the method and the center") == "the method and the center"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["eofs.nc", "eofs.zarr"])
def test_run_device_gpu_writes_the_result(name, sst_store, tmp_path, capsys):
    from conftest import gpu_available

    if not gpu_available():
        pytest.skip("needs CuPy and a GPU")
    out = tmp_path / name
    argv = ["run", str(sst_store), "--dim", "time", "--k", "3", "--method", "compressed"]
    assert main([*argv, "--seed", "0", "--device", "gpu", "--out", str(out)]) == 0
    assert "explained variance" in capsys.readouterr().out
    ref = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24, seed=4)
    want = ref.svd.compressed(3, dim="time", seed=0)
    np.testing.assert_allclose(xsvd.open_result(out).S.values, want.S.values, rtol=1e-6)


def test_run_plink_with_parents_is_plink2_pca(tmp_path, capsys):
    """--center --weights patterson on a file set with parents centers at 2 p of the founders
    (the frequencies the weights take), as plink2 --pca does, not at the mean of every
    sample (PLINK 2's eigenvalues 2-8% away on this pedigree)."""
    pytest.importorskip("zarr", reason='writing the result needs zarr: pip install "xsvd[io]"')
    from test_founders_plink2 import _pedigree

    xsvd.write_plink(_pedigree(300, 0.0), tmp_path / "fam")
    out = tmp_path / "pca.zarr"
    argv = ["run", str(tmp_path / "fam.bed"), "--k", "3", "--center"]
    assert main([*argv, "--weights", "patterson", "--missing", "mean", "--out", str(out)]) == 0
    assert "p from founders" in capsys.readouterr().out
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "fam.bed"))
    res = xsvd.open_result(out)
    want = kept.svd.exact(k=3, dim="samples", center=2 * w.allele_frequency, weights=w)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-6)
    plain = kept.svd.exact(k=3, dim="samples", center=True, weights=w)
    assert np.abs(res.S.values / plain.S.values - 1).max() > 1e-3
    assert res.settings["center"] == "given"
