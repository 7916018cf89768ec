"""PLINK file-set names are prefixes, dots and all, as in PLINK (issue 31, item 9).

``Path.with_suffix`` turned ``cohort.pruned`` (or ``cohort.pruned.bed``) into
``cohort.bed``: ``open_plink``, ``open_pgen`` and ``xsvd run`` read another
file set, ``write_plink(gt, "cohort.subset")`` overwrote ``cohort.bed``, and
``open_plink("x.vcf")`` opened ``x.bed``. Here each dotted set lies next to a
set of another shape under the name ``with_suffix`` would have made of it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import xsvd
from xsvd.cli import main
from xsvd.genomics import PlinkFileError, plink

BED = (".bed", ".bim", ".fam")
PGEN = (".pgen", ".pvar", ".psam")


def _genotypes(n_variants, n_samples, seed):
    return xsvd.datasets.genotypes(n_variants=n_variants, n_samples=n_samples, seed=seed)


def _write_bed_as(gt, folder, name):
    """A .bed set named ``name``, written under a plain name and renamed (whatever the writer)."""
    xsvd.write_plink(gt, folder / "plain")
    for suffix in BED:
        os.replace(folder / f"plain{suffix}", folder / f"{name}{suffix}")


def _write_pgen(folder, name, calls):
    """A .pgen set by pgenlib's writer (xsvd writes none): ALT counts, variants x samples."""
    import pgenlib

    n_var, n_samp = calls.shape
    writer = pgenlib.PgenWriter(str(folder / f"{name}.pgen").encode(), n_samp, n_var, False)
    writer.append_biallelic_batch(np.ascontiguousarray(calls, dtype=np.int8))
    writer.close()
    rows = "".join(f"1\t{i + 1}\trs{i}\tA\tG\n" for i in range(n_var))
    (folder / f"{name}.pvar").write_text("#CHROM\tPOS\tID\tREF\tALT\n" + rows)
    (folder / f"{name}.psam").write_text("#IID\n" + "".join(f"s{i}\n" for i in range(n_samp)))


@pytest.fixture
def cohorts(tmp_path):
    """``cohort`` (300 x 40) and, beside it, ``cohort.pruned`` (50 x 12)."""
    full, pruned = _genotypes(300, 40, seed=1), _genotypes(50, 12, seed=2)
    _write_bed_as(full, tmp_path, "cohort")
    _write_bed_as(pruned, tmp_path, "cohort.pruned")
    return tmp_path, full, pruned


# ------------------------------------------------------------------- the rule
@pytest.mark.parametrize(
    ("name", "suffixes", "prefix"),
    [
        ("cohort.pruned", BED, "cohort.pruned"),
        ("cohort.pruned.bed", BED, "cohort.pruned"),
        ("cohort.pruned.bim", BED, "cohort.pruned"),
        ("cohort.pruned.fam", BED, "cohort.pruned"),
        ("x.vcf", BED, "x.vcf"),
        ("run.2024.01", BED, "run.2024.01"),
        ("cohort.pgen", BED, "cohort.pgen"),  # not a file of a PLINK 1 set
        ("cohort.pruned", PGEN, "cohort.pruned"),
        ("cohort.pruned.pgen", PGEN, "cohort.pruned"),
        ("cohort.pruned.pvar", PGEN, "cohort.pruned"),
        ("cohort.pruned.psam", PGEN, "cohort.pruned"),
        ("cohort.bed", PGEN, "cohort.bed"),
    ],
)
def test_file_set_names_are_prefixes_as_in_plink(tmp_path, name, suffixes, prefix):
    paths = plink.file_set_paths(tmp_path / name, suffixes)
    assert paths == tuple(tmp_path / f"{prefix}{s}" for s in suffixes)
    assert plink.file_set_paths(str(tmp_path / name), suffixes) == paths  # str or Path alike


# -------------------------------------------------------------------- PLINK 1
@pytest.mark.parametrize("suffix", ["", ".bed", ".bim", ".fam"])
def test_open_plink_reads_the_dotted_set_not_its_neighbour(cohorts, suffix):
    folder, full, pruned = cohorts
    gt = xsvd.open_plink(folder / f"cohort.pruned{suffix}")
    assert gt.shape == (50, 12)  # was (300, 40): cohort.bed
    np.testing.assert_array_equal(gt.values, pruned.values)
    assert xsvd.open_plink(folder / "cohort").shape == (300, 40)


@pytest.mark.parametrize("suffix", ["", ".bed"])
def test_write_plink_to_a_dotted_name_leaves_the_other_set_byte_identical(cohorts, suffix):
    folder, full, pruned = cohorts
    before = {s: (folder / f"cohort{s}").read_bytes() for s in BED}
    subset = full.isel(variants=slice(0, 30), samples=slice(0, 8))
    xsvd.write_plink(subset, folder / f"cohort.subset{suffix}")
    for s in BED:  # was: cohort.bed/.bim/.fam overwritten with the subset
        assert (folder / f"cohort{s}").read_bytes() == before[s], s
    back = xsvd.open_plink(folder / "cohort.subset.bed")
    np.testing.assert_array_equal(back.values, subset.values)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{name}{s}" for name in ("cohort", "cohort.pruned", "cohort.subset") for s in BED
    )


def test_open_plink_of_a_vcf_name_looks_for_its_bed_and_says_to_convert(tmp_path):
    _write_bed_as(_genotypes(20, 8, seed=3), tmp_path, "x")  # what with_suffix found
    (tmp_path / "x.vcf").write_text("##fileformat=VCFv4.2\n")
    with pytest.raises(PlinkFileError) as err:
        xsvd.open_plink(tmp_path / "x.vcf")  # was: x.bed, opened without a word
    message = str(err.value)
    assert repr(str(tmp_path / "x.vcf.bed")) in message
    assert "prefix" in message and "plink2 --vcf" in message and "--make-bed" in message


def test_a_missing_dotted_set_names_the_file_looked_for(cohorts):
    folder, _, _ = cohorts
    with pytest.raises(PlinkFileError, match=r"cohort\.other\.bed'.*prefix"):
        xsvd.open_plink(folder / "cohort.other")  # was: cohort.bed, opened


# -------------------------------------------------------------------- PLINK 2
@pytest.fixture
def pgen_cohorts(tmp_path):
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    full = _genotypes(300, 40, seed=1).values.astype(np.int8)
    pruned = _genotypes(50, 12, seed=2).values.astype(np.int8)
    _write_pgen(tmp_path, "cohort", full)
    _write_pgen(tmp_path, "cohort.pruned", pruned)
    return tmp_path, full, pruned


@pytest.mark.parametrize("suffix", ["", ".pgen", ".pvar", ".psam"])
def test_open_pgen_reads_the_dotted_set_not_its_neighbour(pgen_cohorts, suffix):
    folder, full, pruned = pgen_cohorts
    gt = xsvd.open_pgen(folder / f"cohort.pruned{suffix}")
    assert gt.shape == (50, 12)  # was (300, 40): cohort.pgen
    np.testing.assert_array_equal(gt.values, pruned)
    assert xsvd.open_pgen(folder / "cohort").shape == (300, 40)


def test_open_pgen_of_a_vcf_name_looks_for_its_pgen_and_says_to_convert(pgen_cohorts):
    folder, _, _ = pgen_cohorts
    _write_pgen(folder, "x", np.zeros((5, 4), dtype=np.int8))
    (folder / "x.vcf").write_text("##fileformat=VCFv4.2\n")
    with pytest.raises(PlinkFileError) as err:
        xsvd.open_pgen(folder / "x.vcf")  # was: x.pgen
    message = str(err.value)
    assert repr(str(folder / "x.vcf.pgen")) in message and "--make-pgen" in message


# ------------------------------------------------------------------------ CLI
@pytest.mark.parametrize("suffix", ["", ".bed", ".fam"])
def test_run_on_a_dotted_bed_set_decomposes_that_set(cohorts, suffix):
    folder, full, pruned = cohorts
    out = folder / "pca.zarr"
    argv = ["run", str(folder / f"cohort.pruned{suffix}"), "--k", "2", "--center"]
    assert main([*argv, "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    assert res.U.sizes["samples"] == 12 and res.V.sizes["variants"] == 50  # was 40, 300
    want = pruned.svd.exact(k=2, dim="samples", center=True)
    np.testing.assert_allclose(res.S.values, want.S.values, rtol=1e-5)


@pytest.mark.parametrize("suffix", ["", ".pgen"])
def test_run_on_a_dotted_pgen_set_decomposes_that_set(pgen_cohorts, suffix):
    folder, full, pruned = pgen_cohorts
    out = folder / "pca.zarr"
    argv = ["run", str(folder / f"cohort.pruned{suffix}"), "--k", "2", "--center"]
    assert main([*argv, "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    assert res.U.sizes["samples"] == 12 and res.V.sizes["variants"] == 50


def test_run_on_a_prefix_of_two_kinds_of_set_asks_which(cohorts, capsys):
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    folder, _, _ = cohorts
    _write_pgen(folder, "cohort.pruned", np.zeros((5, 4), dtype=np.int8))
    argv = ["run", str(folder / "cohort.pruned"), "--k", "2", "--out", str(folder / "o.zarr")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cohort.pruned.bed or" in err and "cohort.pruned.pgen" in err
