"""Genomics inputs and defaults that went wrong silently (issue 31, items 7 and 9).

The sample dimension asked of ``patterson_scaling`` (and of ``xsvd run --weights
patterson``) must be the samples; damaged or malformed PLINK files are errors that name
the file (and the line); ``tracy_widom`` refuses a count given as text.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xsvd
from xsvd.cli import main
from xsvd.genomics import PlinkFileError


@pytest.fixture
def bed_prefix(tmp_path):
    gt = xsvd.datasets.genotypes(n_variants=300, n_samples=40, seed=3)
    prefix = tmp_path / "toy"
    xsvd.write_plink(gt, prefix)
    return prefix


# ------------------------------------------------------------ item 3: the sample dimension


@pytest.mark.parametrize("source", ["bed", "memory", "plain names"])
def test_patterson_scaling_refuses_the_variants_as_samples(bed_prefix, source):
    gt = xsvd.open_plink(bed_prefix)
    if source == "memory":
        gt = gt.compute()
    elif source == "plain names":  # no sample-dimension attribute: the names say it
        gt = xr.DataArray(gt.values, dims=("variants", "samples"))
    with pytest.raises(ValueError, match=r"samples along 'samples'.*Pass `dim='samples'`"):
        xsvd.patterson_scaling(gt, dim="variants")
    kept, w = xsvd.patterson_scaling(gt, dim="samples")  # the right way still works
    assert w.dims == ("variants",)


def test_patterson_scaling_takes_other_names_when_nothing_says_otherwise():
    g = xsvd.datasets.genotypes(n_variants=100, n_samples=20, seed=1).values
    gt = xr.DataArray(g.T, dims=("ind", "site"))  # names xsvd does not know
    _, w = xsvd.patterson_scaling(gt, dim="ind")
    assert w.dims == ("site",) and w.sizes["site"] <= 100


def test_cli_refuses_patterson_weights_over_the_variants(bed_prefix, tmp_path, capsys):
    out = tmp_path / "o.zarr"
    argv = ["run", f"{bed_prefix}.bed", "--dim", "variants", "--k", "2", "--center"]
    assert main([*argv, "--weights", "patterson", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "allele frequencies are means over the samples" in err
    assert "--dim samples" in err or "dim='samples'" in err
    assert not out.exists()


# ------------------------------------------------------------ item 7: clear errors


def _pgen_file_set(prefix, n_var=800, n_samp=40):
    pgenlib = pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    calls = xsvd.datasets.genotypes(n_variants=n_var, n_samples=n_samp, seed=1).values
    writer = pgenlib.PgenWriter(f"{prefix}.pgen".encode(), n_samp, n_var, False)
    writer.append_biallelic_batch(np.ascontiguousarray(calls.astype(np.int8)))
    writer.close()
    rows = "".join(f"1\t{i + 1}\trs{i}\tA\tG\n" for i in range(n_var))
    (prefix.parent / f"{prefix.name}.pvar").write_text("#CHROM\tPOS\tID\tREF\tALT\n" + rows)
    psam = "#FID\tIID\tSEX\n" + "".join(f"f{i}\ts{i}\t1\n" for i in range(n_samp))
    (prefix.parent / f"{prefix.name}.psam").write_text(psam)
    return calls


def test_truncated_pgen_is_an_error_naming_the_file(tmp_path):
    prefix = tmp_path / "toy"
    calls = _pgen_file_set(prefix)
    np.testing.assert_array_equal(xsvd.open_pgen(prefix).values, calls)  # whole: fine
    pgen = tmp_path / "toy.pgen"
    pgen.write_bytes(pgen.read_bytes()[:-2000])
    with pytest.raises(PlinkFileError, match=r"toy\.pgen.*truncated or damaged"):
        xsvd.open_pgen(prefix)


def test_damaged_pgen_block_is_an_error_naming_the_file(tmp_path):
    """Damage after opening (the opening check cannot see it) surfaces when a chunk is read,
    naming the file and the variants (which chunk fails first is the threads' choice)."""
    prefix = tmp_path / "toy"
    _pgen_file_set(prefix)
    gt = xsvd.open_pgen(prefix, chunks=200)
    (tmp_path / "toy.pgen").write_bytes((tmp_path / "toy.pgen").read_bytes()[:-2000])
    with pytest.raises(PlinkFileError, match=r"toy\.pgen' cannot be read at variants \d+-\d+"):
        gt.compute()


@pytest.mark.parametrize("value", ["1000", True, [1000], np.nan])
def test_tracy_widom_refuses_a_count_that_is_not_a_number(value):
    eigenvalues = np.linspace(10, 1, 40)
    with pytest.raises(ValueError, match="n_variants must be a number above 1"):
        xsvd.tracy_widom(eigenvalues, n_variants=value)
    assert xsvd.tracy_widom(eigenvalues, n_variants=1000).sizes["component"] == 40


def _rewrite_line(path, number, edit):
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = edit(lines[number - 1])
    path.write_text("".join(lines))


def _drop_last_field(line):
    return "\t".join(line.split()[:-1]) + "\n"


def _drop_third_field(line):
    fields = line.split()
    return "\t".join(fields[:2] + fields[3:]) + "\n"


@pytest.mark.parametrize("edit", [_drop_last_field, _drop_third_field], ids=["last", "middle"])
@pytest.mark.parametrize("ext", [".bim", ".fam"])
def test_bed_file_set_lines_with_a_missing_column_are_refused(bed_prefix, ext, edit):
    path = bed_prefix.parent / f"toy{ext}"
    _rewrite_line(path, 7, edit)
    with pytest.raises(PlinkFileError, match=rf"toy\{ext}', line 7, has 5 field\(s\)"):
        xsvd.open_plink(bed_prefix).compute()


@pytest.mark.parametrize("edit", [_drop_last_field, _drop_third_field], ids=["last", "middle"])
@pytest.mark.parametrize("ext", [".pvar", ".psam"])
def test_pgen_file_set_lines_with_a_missing_column_are_refused(tmp_path, ext, edit):
    prefix = tmp_path / "toy"
    _pgen_file_set(prefix)
    path = tmp_path / f"toy{ext}"
    _rewrite_line(path, 8, edit)  # line 8: the 7th data line after the header
    width = 5 if ext == ".pvar" else 3
    with pytest.raises(PlinkFileError, match=rf"toy\{ext}', line 8, has {width - 1} field"):
        xsvd.open_pgen(prefix)


def test_fam_na_phenotype_is_kept_as_written(bed_prefix):
    fam = bed_prefix.parent / "toy.fam"
    _rewrite_line(fam, 3, lambda line: "\t".join([*line.split()[:5], "NA"]) + "\n")
    assert xsvd.open_plink(bed_prefix).phenotype.values[2] == "NA"


def test_duplicate_sample_ids_are_refused_in_one_family_and_warned_across(bed_prefix, tmp_path):
    fam = bed_prefix.parent / "toy.fam"
    original = fam.read_text()
    lines = original.splitlines()
    # the same family and id twice: refused, as PLINK 2 does
    f4, i4 = lines[4].split()[:2]
    _rewrite_line(fam, 10, lambda line: "\t".join([f4, i4, *line.split()[2:]]) + "\n")
    with pytest.raises(PlinkFileError, match=rf"'{i4}' on lines 5 and 10\) in the same family"):
        xsvd.open_plink(bed_prefix)
    # one id in two families: a warning (selecting by id is ambiguous)
    fam.write_text(original)
    _rewrite_line(fam, 10, lambda line: "\t".join(["other", i4, *line.split()[2:]]) + "\n")
    with pytest.warns(UserWarning, match="different families"):
        gt = xsvd.open_plink(bed_prefix)
    assert (gt.samples.values == i4).sum() == 2
    # a .psam too
    prefix = tmp_path / "p2"
    _pgen_file_set(prefix)
    psam = tmp_path / "p2.psam"
    _rewrite_line(psam, 6, lambda line: "f2\ts2\t1\n")
    with pytest.raises(PlinkFileError, match=r"'s2' on lines 4 and 6\) in the same family"):
        xsvd.open_pgen(prefix)


# ------------------------------------------------------------ item 9: duplicate variant ids


@pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")
def test_missing_variant_ids_are_written_so_plink2_projects_with_them(tmp_path):
    n = 600
    gt = xsvd.datasets.genotypes(n, 90, n_populations=3, fst=0.05, seed=2)
    gt = gt.assign_coords(
        variants=np.full(n, "."),  # PLINK's missing id, as many .bim files have it
        chrom=("variants", np.full(n, "1")),
        position=("variants", np.arange(n) * 100 + 1),
        allele_1=("variants", np.full(n, "G")),
        allele_2=("variants", np.full(n, "A")),
    )
    xsvd.write_plink(gt.isel(samples=slice(0, 60)), tmp_path / "ref")
    xsvd.write_plink(gt.isel(samples=slice(60, 90)), tmp_path / "new")
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "ref"))
    res = kept.svd.exact(k=3, center=True, weights=w)
    m = w.attrs["n_variants"]
    with pytest.warns(UserWarning, match=r"missing id '\.'.*--set-missing-var-ids '@:#:\$r:\$a'"):
        files = xsvd.write_plink_pca(res, tmp_path / "pca", n_variants=m)
    ids = pd.read_csv(files[3], sep="\t")["ID"]
    assert ids.is_unique and ids.iloc[0] == "1:1:A:G"
    proc = subprocess.run(
        ["plink2", "--bfile", tmp_path / "new", "--set-missing-var-ids", "@:#:$r:$a",
         "--read-freq", files[3], "--score", files[2], "2", "5", "header-read",
         "no-mean-imputation", "variance-standardize", "cols=+scoresums",
         "--score-col-nums", "6-8", "--out", tmp_path / "s"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    score = pd.read_csv(tmp_path / "s.sscore", sep="\t")
    sums = score[[f"PC{i + 1}_SUM" for i in range(3)]].values
    new = xsvd.open_plink(tmp_path / "new")
    new = new.isel(variants=np.isin(new.position, kept.position))  # the ids are all '.'
    ours = xsvd.project_samples(res, new, shrinkage=False)
    np.testing.assert_allclose(sums / (m * np.sqrt(np.loadtxt(files[1]))), ours.values, rtol=1e-4)


def test_other_duplicate_variant_ids_warn(tmp_path):
    gt = xsvd.datasets.genotypes(300, 40, seed=2)
    gt = gt.assign_coords(variants=[f"rs{i // 2}" for i in range(300)])
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd.exact(k=2, dim="samples", center=True, weights=w)
    with pytest.warns(UserWarning, match=r"listed more than once \(e\.g\. 'rs0'"):
        xsvd.write_plink_pca(res, tmp_path / "pca")


# ------------------------------------------------------------ item 9: founders' frequencies


def _pedigree(n_founders=200, n_children=100, n_variants=3_000, seed=0):
    """Founders of three populations and children of two founders each (a third of the
    samples with parents listed), with 1% missing calls among the children."""
    rng = np.random.default_rng(seed)
    gt = xsvd.datasets.genotypes(n_variants, n_founders, n_populations=3, fst=0.05, seed=4)
    g, pop = gt.values.astype(np.int64), gt.population.values
    parents = [rng.choice(np.flatnonzero(pop == p), 2, replace=False) for p in pop[:n_children]]
    kids = [rng.binomial(1, g[:, a] / 2) + rng.binomial(1, g[:, b] / 2) for a, b in parents]
    values = np.concatenate([g, np.array(kids).T], axis=1).astype(np.float64)
    values[:, n_founders:][rng.random((n_variants, n_children)) < 0.01] = np.nan
    ids = [f"F{i}" for i in range(n_founders)] + [f"C{i}" for i in range(n_children)]
    father = ["0"] * n_founders + [f"F{a}" for a, _ in parents]
    mother = ["0"] * n_founders + [f"F{b}" for _, b in parents]
    return xr.DataArray(
        values,
        dims=("variants", "samples"),
        coords={
            "variants": [f"rs{i}" for i in range(n_variants)],
            "samples": ids,
            "father_id": ("samples", father),
            "mother_id": ("samples", mother),
        },
    )


def _founder_truth(gt, founders):
    """Dense NumPy: PLINK 2's frequencies (founders' or all samples') and the eigenvalues of
    its PCA, every sample centered at 2 p (missing calls at 2 p)."""
    x = gt.values
    p = np.nanmean(x[:, founders], axis=1) / 2
    keep = (p > 0) & (p < 1)
    z = np.nan_to_num(x[keep] - 2 * p[keep, None]) / np.sqrt(2 * p[keep] * (1 - p[keep]))[:, None]
    return p, np.linalg.svd(z, compute_uv=False) ** 2 / x.shape[0]


def test_patterson_frequencies_from_founders_by_default(backend):
    gt = _pedigree(n_founders=60, n_children=30, n_variants=400)
    founders = gt.father_id.values == "0"
    data = gt.copy(data=backend(gt.values))
    kept, w = xsvd.patterson_scaling(data)
    assert w.attrs["frequencies_from"] == "founders"
    p, _ = _founder_truth(gt, founders)
    keep = (p > 0) & (p < 1)
    np.testing.assert_allclose(w.allele_frequency.values, p[keep], rtol=1e-12)
    np.testing.assert_allclose(w.values, 1 / np.sqrt(2 * p[keep] * (1 - p[keep])), rtol=1e-12)
    _, w_all = xsvd.patterson_scaling(data, founders=False)
    assert w_all.attrs["frequencies_from"] == "all samples"
    p_all = np.nanmean(gt.values, axis=1)[keep] / 2
    np.testing.assert_allclose(w_all.allele_frequency.values[: keep.sum()], p_all, rtol=1e-12)
    assert np.abs(w.allele_frequency.values - p_all).max() > 1e-3  # they differ


def test_patterson_founders_on_packed_data(tmp_path):
    gt = _pedigree(n_founders=60, n_children=30, n_variants=400)
    xsvd.write_plink(gt, tmp_path / "ped")
    bed = xsvd.open_plink(tmp_path / "ped", chunks=100)
    p, _ = _founder_truth(gt, gt.father_id.values == "0")
    for data in (bed, xsvd.pack_genotypes(bed.compute())):
        _, w = xsvd.patterson_scaling(data)
        np.testing.assert_allclose(w.allele_frequency.values, p[(p > 0) & (p < 1)], rtol=1e-6)


def test_founders_option_is_checked():
    gt = _pedigree(n_founders=20, n_children=10, n_variants=100)
    with pytest.raises(ValueError, match="founders=True needs the coordinates father_id"):
        xsvd.patterson_scaling(gt.drop_vars(["father_id", "mother_id"]), founders=True)
    orphans = gt.assign_coords(mother_id=("samples", np.full(30, "M")))
    with pytest.raises(ValueError, match="no founders.*founders=False"):
        xsvd.patterson_scaling(orphans)
    with pytest.raises(ValueError, match="founders must be True, False or None"):
        xsvd.patterson_scaling(gt, founders="yes")
    _, w = xsvd.patterson_scaling(
        gt.assign_coords(
            father_id=("samples", np.full(30, "0")), mother_id=("samples", np.full(30, "0"))
        )
    )
    assert w.attrs["frequencies_from"] == "all samples"  # no parents: every sample a founder


@pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")
def test_founders_and_nonfounders_match_plink2_pca(tmp_path):
    gt = _pedigree(n_founders=150, n_children=75, n_variants=2_000)
    xsvd.write_plink(gt, tmp_path / "ped")
    for extra, name in (([], "f"), (["--nonfounders"], "a")):
        out = tmp_path / name
        for cmd in (["--pca", "6", "meanimpute"], ["--freq"]):
            proc = subprocess.run(
                ["plink2", "--bfile", tmp_path / "ped", *cmd, *extra, "--out", out],
                capture_output=True, text=True,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout[-2000:]
    bed = xsvd.open_plink(tmp_path / "ped")
    founders = gt.father_id.values == "0"
    # PLINK 2 (founders, its default): the frequencies, and the PCA with every sample
    # centered at the founders' 2 p, as the docstring's recipe writes it
    kept, w = xsvd.patterson_scaling(bed)
    afreq = pd.read_csv(tmp_path / "f.afreq", sep="\t").set_index("ID")
    np.testing.assert_allclose(
        w.allele_frequency.values, afreq.loc[kept.variants.values, "ALT_FREQS"], atol=1e-6
    )
    z = (kept - 2 * w.allele_frequency).fillna(0)
    res = z.svd.exact(k=6, center=False, weights=w)
    eig = res.S.values**2 / w.attrs["n_variants"]
    np.testing.assert_allclose(eig, np.loadtxt(tmp_path / "f.eigenval"), rtol=1e-4)
    np.testing.assert_allclose(eig, _founder_truth(gt, founders)[1][:6], rtol=1e-5)
    # --nonfounders: every sample, center=True
    kept, w = xsvd.patterson_scaling(bed, founders=False)
    res = kept.svd.exact(k=6, center=True, weights=w, missing="mean")
    eig_all = res.S.values**2 / w.attrs["n_variants"]
    np.testing.assert_allclose(eig_all, np.loadtxt(tmp_path / "a.eigenval"), rtol=1e-4)
    assert np.abs(eig / eig_all - 1).max() > 3e-3  # the two differ by far more than that


# ------------------------------------------------------------ item 9: Tracy-Widom, every eigenvalue


def test_relationship_eigenvalues_are_every_squared_singular_value(backend):
    gt = xsvd.datasets.genotypes(n_variants=600, n_samples=80, n_populations=3, seed=6)
    values = gt.values.astype(np.float64)
    values[np.random.default_rng(2).random(values.shape) < 0.02] = np.nan
    gt = gt.copy(data=values)
    kept, w = xsvd.patterson_scaling(gt)
    truth = kept.svd.exact(dim="samples", center=True, weights=w, missing="mean")
    data = kept.copy(data=backend(kept.values))
    lam = xsvd.genomics.relationship_eigenvalues(data, w, missing="mean")
    assert isinstance(lam.data, np.ndarray) and lam.sizes["component"] == 80
    np.testing.assert_allclose(lam.values[:79], truth.S.values[:79] ** 2, rtol=1e-10)
    assert abs(lam.values[79]) < 1e-9 * lam.values[0]  # centering leaves one zero
    tw, want = xsvd.tracy_widom(lam), xsvd.tracy_widom(truth)
    np.testing.assert_allclose(tw.effective_n, want.effective_n, rtol=1e-8)
    with pytest.raises(ValueError, match='missing calls.*missing="mean"'):
        xsvd.genomics.relationship_eigenvalues(data, w)


def test_relationship_eigenvalues_of_packed_data(tmp_path, backend):
    gt = xsvd.datasets.genotypes(n_variants=500, n_samples=60, seed=7)
    kept, w = xsvd.patterson_scaling(gt)
    want = xsvd.genomics.relationship_eigenvalues(kept, w)
    packed = xsvd.pack_genotypes(kept.copy(data=backend(kept.values)))
    got = xsvd.genomics.relationship_eigenvalues(packed, w)
    np.testing.assert_allclose(got.values, want.values, rtol=1e-10, atol=1e-9 * want.values[0])
    uncentered = xsvd.genomics.relationship_eigenvalues(packed, center=False)
    s = np.linalg.svd(kept.values.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(uncentered.values, s**2, rtol=1e-9, atol=1e-9 * s[0] ** 2)


# ------------------------------------------------------------ issue 29: packed data on a device


@pytest.mark.parametrize("missing", [False, True])
def test_packed_genotypes_on_a_device_that_is_not_cupy(backend, tmp_path, missing):
    """patterson_scaling, project_samples and write_plink_pca on packed genotypes wherever
    they are (array-api-strict's device1 stands for a GPU that is not CuPy's)."""
    gt = xsvd.datasets.genotypes(n_variants=401, n_samples=61, n_populations=3, seed=3)
    values = gt.values.astype(np.float32)
    if missing:
        values[np.random.default_rng(0).random(values.shape) < 0.02] = np.nan
    gt = gt.copy(data=values)
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd.exact(k=3, dim="samples", center=True, weights=w, missing="mean")
    want_scores = xsvd.project_samples(res, kept, method="lzw")
    packed = xsvd.pack_genotypes(gt.copy(data=backend(values)))
    kept_d, w_d = xsvd.patterson_scaling(packed)
    np.testing.assert_allclose(w_d.values, w.values, rtol=1e-12)
    assert kept_d.sizes == kept.sizes
    scores = xsvd.project_samples(res, kept_d, method="lzw")
    np.testing.assert_allclose(backend.host(scores.data), want_scores.values, rtol=1e-5)
    a = xsvd.write_plink_pca(res, tmp_path / "host", genotypes=kept)
    b = xsvd.write_plink_pca(res, tmp_path / "dev", genotypes=kept_d)
    assert a[3].read_text() == b[3].read_text()  # the .afreq, with OBS_CT counted on the bytes
    row = xsvd.pack_genotypes(gt.isel(variants=slice(0, 3)).copy(data=backend(values[:3])))
    sums, _, called = row.data.called_stats() if not backend.lazy else (None, None, None)
    if sums is not None:
        np.testing.assert_allclose(backend.host(sums), np.nansum(values[:3], axis=1))
        np.testing.assert_array_equal(backend.host(called), (~np.isnan(values[:3])).sum(1))
