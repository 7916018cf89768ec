"""PLINK 2 formats: ``.pgen`` input, the ``.afreq``'s ``OBS_CT``, and VCF through VCF-Zarr.

``open_pgen`` is checked against ``plink2`` reading the same file set
(``--make-pgen`` from a ``.bed``, ``--make-bed`` back, ``--pca``), and
without ``plink2`` on file sets written with ``pgenlib``'s own writer. The
``.afreq`` of ``write_plink_pca`` is checked against ``plink2 --freq``; the
VCF route against ``plink2 --export vcf`` converted by bio2zarr's
``vcf2zarr`` (when installed) and against a store of the same layout made
here.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import raise_if_dask_computes

import xsvd
from xsvd.core.packed import PackedGenotypes
from xsvd.genomics import PlinkFileError

needs_plink2 = pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")
N_VAR, N_SAMP = 1_200, 90


def _plink2(*args) -> None:
    proc = subprocess.run(["plink2", *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.fixture(scope="module")
def cohort():
    """Three populations, 2 % missing calls, two chromosomes, variant ids and alleles."""
    gt = xsvd.datasets.genotypes(n_variants=N_VAR, n_samples=N_SAMP, fst=0.05, seed=8)
    values = gt.values.astype(np.float32)
    values[np.random.default_rng(8).random(values.shape) < 0.02] = np.nan
    return gt.copy(data=values).assign_coords(
        variants=[f"rs{i}" for i in range(N_VAR)],
        chrom=("variants", np.where(np.arange(N_VAR) < N_VAR // 2, "1", "2")),
        position=("variants", np.tile(np.arange(N_VAR // 2) * 100 + 1, 2)),
        allele_1=("variants", np.full(N_VAR, "G")),
        allele_2=("variants", np.full(N_VAR, "A")),
        family_id=("samples", gt.population.values),
        sex=("samples", np.arange(N_SAMP) % 3),
    )


@pytest.fixture(scope="module")
def pfiles(cohort, tmp_path_factory):
    """``.bed`` by xsvd, ``.pgen`` from it by plink2."""
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed")
    folder = tmp_path_factory.mktemp("pgen")
    xsvd.write_plink(cohort, folder / "data")
    _plink2("--bfile", folder / "data", "--make-pgen", "--out", folder / "data")
    return folder


def _write_pgen(prefix, calls, pvar: str, psam: str) -> None:
    """A file set by pgenlib's writer: ``calls`` (variants x samples) ALT counts, -9 missing."""
    import pgenlib

    writer = pgenlib.PgenWriter(f"{prefix}.pgen".encode(), calls.shape[1], calls.shape[0], False)
    writer.append_biallelic_batch(np.ascontiguousarray(calls, dtype=np.int8))
    writer.close()
    (prefix.parent / f"{prefix.name}.pvar").write_text(pvar)
    (prefix.parent / f"{prefix.name}.psam").write_text(psam)


# --------------------------------------------------------------------- .pgen


@needs_plink2
def test_pgen_reads_as_the_bed_it_was_made_from(pfiles, cohort):
    with raise_if_dask_computes():
        pgen = xsvd.open_pgen(pfiles / "data.pgen", chunks=500)
    bed = xsvd.open_plink(pfiles / "data")
    assert pgen.data.chunks[0] == (500, 500, 200)
    assert isinstance(pgen.data.blocks[1].compute(), PackedGenotypes)
    assert pgen.equals(bed)  # values (NaN where missing) and every coordinate
    assert pgen.attrs["xsvd_sample_dim"] == "samples"
    np.testing.assert_array_equal(pgen.values, cohort.values)
    assert list(pgen.coords) == list(bed.coords)
    for name in bed.coords:
        assert pgen[name].dtype.kind == bed[name].dtype.kind, name
    # and what plink2 writes back from the .pgen is what open_pgen reads
    _plink2("--pfile", pfiles / "data", "--make-bed", "--out", pfiles / "back")
    assert xsvd.open_plink(pfiles / "back").equals(pgen)


@needs_plink2
def test_pca_of_the_pgen_matches_plink2_pca(pfiles, cohort, tmp_path):
    complete = cohort.fillna(0)  # plink2 --pca mean-imputes only with `meanimpute`
    xsvd.write_plink(complete, tmp_path / "c")
    _plink2("--bfile", tmp_path / "c", "--make-pgen", "--out", tmp_path / "c")
    _plink2("--pfile", tmp_path / "c", "--pca", 4, "--out", tmp_path / "pca")
    kept, w = xsvd.patterson_scaling(xsvd.open_pgen(tmp_path / "c"))
    res = kept.svd.exact(k=4, center=True, weights=w)  # the sample dim from the attribute
    eigenval = np.loadtxt(tmp_path / "pca.eigenval")
    np.testing.assert_allclose(res.S.values**2 / w.attrs["n_variants"], eigenval, rtol=1e-4)
    vec = pd.read_csv(tmp_path / "pca.eigenvec", sep="\t")
    assert list(vec.IID) == list(res.U.samples.values)
    np.testing.assert_allclose(np.abs(res.U.values), np.abs(vec.iloc[:, 2:].values), atol=1e-5)
    # with missing calls: the same as plink2 --pca meanimpute
    _plink2("--pfile", pfiles / "data", "--pca", 4, "meanimpute", "--out", tmp_path / "mi")
    kept, w = xsvd.patterson_scaling(xsvd.open_pgen(pfiles / "data"))
    res = kept.svd.exact(k=4, center=True, weights=w, missing="mean")
    np.testing.assert_allclose(
        res.S.values**2 / w.attrs["n_variants"], np.loadtxt(tmp_path / "mi.eigenval"), rtol=1e-4
    )


def test_pvar_and_psam_columns(tmp_path, monkeypatch):
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    import xsvd.genomics.pgen as pgen_module

    calls = np.array([[0, 1, 2, -9, 1], [2, 2, 1, 0, 0], [1, -9, 0, 0, 2]], dtype=np.int8)
    pvar = (
        "##fileformat=VCFv4.3\n##source=test\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tCM\n"
        "1\t100\trs1\tA\tG\t.\t.\tAF=0.5\t0.5\n"
        "1\t200\trs2\tC\tT\t.\t.\t.\t0.75\n"
        "X\t300\trs3\tG\tA,C\t.\t.\t.\t1\n"
    )
    psam = (
        "#FID\tIID\tPAT\tMAT\tSEX\tHEIGHT\tBMI\n"
        "f1\ta\t0\t0\t1\t1.7\t22\nf1\tb\ta\t0\t2\tNA\t23\nf2\tc\t0\t0\tNA\t1.6\t24\n"
        "f2\td\t0\t0\tF\t1.8\t25\nf3\te\t0\t0\tM\t1.5\t26\n"
    )
    _write_pgen(tmp_path / "t", calls, pvar, psam)
    monkeypatch.setattr(pgen_module, "_READ_GENOTYPES", 5)  # one variant per read
    gt = xsvd.open_pgen(tmp_path / "t.pvar")
    np.testing.assert_array_equal(gt.values, np.where(calls < 0, np.nan, calls))
    assert list(gt.variants.values) == ["rs1", "rs2", "rs3"]
    assert list(gt.allele_1.values) == ["G", "T", "A,C"]  # ALT, counted
    assert list(gt.allele_2.values) == ["A", "C", "G"]
    np.testing.assert_array_equal(gt.cm.values, [0.5, 0.75, 1.0])
    np.testing.assert_array_equal(gt.position.values, [100, 200, 300])
    assert gt.position.dtype == np.int64 and list(gt.chrom.values) == ["1", "1", "X"]
    assert list(gt.family_id.values) == ["f1", "f1", "f2", "f2", "f3"]
    assert list(gt.father_id.values) == ["0", "a", "0", "0", "0"]
    np.testing.assert_array_equal(gt.sex.values, [1, 2, 0, 2, 1])
    assert list(gt.phenotype.values) == ["1.7", "-9", "1.6", "1.8", "1.5"]  # the first one
    # no header lines: the .bim's and the .fam's columns
    bim_like = "1\trs1\t0\t100\tG\tA\n1\trs2\t0\t200\tT\tC\n2\trs3\t0\t300\tA\tG\n"
    fam_like = "".join(f"F\ts{i}\t0\t0\t{i % 3}\t-9\n" for i in range(5))
    _write_pgen(tmp_path / "h", calls, bim_like, fam_like)
    gt = xsvd.open_pgen(tmp_path / "h", chunks=2)
    assert gt.data.chunks[0] == (2, 1)
    np.testing.assert_array_equal(gt.values, np.where(calls < 0, np.nan, calls))
    assert list(gt.allele_1.values) == ["G", "T", "A"] and list(gt.chrom.values) == ["1", "1", "2"]
    assert list(gt.samples.values) == [f"s{i}" for i in range(5)]
    np.testing.assert_array_equal(gt.sex.values, [0, 1, 2, 0, 1])
    # only IID: FID, parents and phenotype as plink2 --make-bed writes them
    _write_pgen(tmp_path / "i", calls, pvar, "#IID\n" + "".join(f"x{i}\n" for i in range(5)))
    gt = xsvd.open_pgen(tmp_path / "i")
    assert set(gt.family_id.values) == {"0"} and set(gt.phenotype.values) == {"-9"}
    assert set(gt.sex.values) == {0}


def test_pgen_errors_say_what_is_wrong(tmp_path, monkeypatch):
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    calls = np.zeros((2, 4), dtype=np.int8)
    pvar = "#CHROM\tPOS\tID\tREF\tALT\n1\t1\ta\tA\tG\n1\t2\tb\tA\tG\n"
    psam = "#IID\n" + "".join(f"s{i}\n" for i in range(4))
    _write_pgen(tmp_path / "t", calls, pvar, psam)
    with pytest.raises(PlinkFileError, match="No .pgen file"):
        xsvd.open_pgen(tmp_path / "nothing")
    (tmp_path / "t.pvar").write_text(pvar + "1\t3\tc\tA\tG\n")
    with pytest.raises(PlinkFileError, match="holds 2 variants but t.pvar lists 3"):
        xsvd.open_pgen(tmp_path / "t")
    (tmp_path / "t.pvar").write_text("#CHROM\tPOS\tREF\tALT\n1\t1\tA\tG\n1\t2\tA\tG\n")
    with pytest.raises(PlinkFileError, match="no ID column"):
        xsvd.open_pgen(tmp_path / "t")
    (tmp_path / "t.pvar").rename(tmp_path / "t.pvar.zst")
    with pytest.raises(PlinkFileError, match="Zstandard"):
        xsvd.open_pgen(tmp_path / "t")
    (tmp_path / "t.pvar.zst").unlink()
    with pytest.raises(PlinkFileError, match="The .pvar"):
        xsvd.open_pgen(tmp_path / "t")
    monkeypatch.setitem(__import__("sys").modules, "pgenlib", None)
    with pytest.raises(ImportError, match=r"xsvd\[genomics\]"):
        xsvd.open_pgen(tmp_path / "t")


# -------------------------------------------------------------------- .afreq


@needs_plink2
def test_afreq_obs_ct_matches_plink2_freq(cohort, tmp_path):
    xsvd.write_plink(cohort, tmp_path / "d")
    _plink2("--bfile", tmp_path / "d", "--freq", "--out", tmp_path / "f")
    theirs = pd.read_csv(tmp_path / "f.afreq", sep="\t").set_index("ID")
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "d"))
    res = kept.svd.exact(k=3, center=True, weights=w, missing="mean")
    with pytest.warns(UserWarning, match="genotypes="):
        files = xsvd.write_plink_pca(res, tmp_path / "w")
    ours = pd.read_csv(files[3], sep="\t")  # OBS_CT unknown: left out, and PLINK 2 reads it
    assert list(ours.columns) == ["#CHROM", "ID", "REF", "ALT", "ALT_FREQS"]
    np.testing.assert_allclose(ours.ALT_FREQS, theirs.loc[ours.ID].ALT_FREQS, atol=1e-6)
    _plink2(
        "--bfile", tmp_path / "d", "--read-freq", files[3], "--score", files[2], "2", "5",
        "header-read", "no-mean-imputation", "variance-standardize", "--score-col-nums", "6-8",
        "--out", tmp_path / "s",
    )  # fmt: skip
    assert (tmp_path / "s.sscore").exists()
    for given in (kept, kept.compute(), xsvd.pack_genotypes(kept.compute()).T):
        files = xsvd.write_plink_pca(res, tmp_path / "x", genotypes=given)
        ours = pd.read_csv(files[3], sep="\t")
        assert list(ours.columns) == ["#CHROM", "ID", "REF", "ALT", "ALT_FREQS", "OBS_CT"]
        assert (theirs.loc[ours.ID].OBS_CT.values == ours.OBS_CT.values).all()
        assert ours.OBS_CT.min() < 2 * N_SAMP  # missing calls are not counted
        np.testing.assert_allclose(ours.ALT_FREQS, theirs.loc[ours.ID].ALT_FREQS, atol=1e-6)
    # without missing calls: twice the number of samples, as plink2 counts them
    complete = cohort.fillna(1)
    full = xsvd.patterson_scaling(complete)[0].svd.exact(k=3, dim="samples", center=True)
    ours = pd.read_csv(xsvd.write_plink_pca(full, tmp_path / "y")[3], sep="\t")
    assert set(ours.OBS_CT) == {2 * N_SAMP}
    with pytest.raises(ValueError, match="not in `genotypes`"):
        xsvd.write_plink_pca(res, tmp_path / "z", genotypes=kept.isel(variants=slice(5, None)))


# ----------------------------------------------------------------- VCF-Zarr


@needs_plink2
def test_vcf_zarr_by_bio2zarr_reads_as_the_bed(cohort, tmp_path):
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    vcf = pytest.importorskip("bio2zarr.vcf", reason="needs bio2zarr[vcf] (vcf2zarr)")
    one = cohort.isel(variants=slice(0, N_VAR // 2))  # one contig: vcf2zarr needs no index
    xsvd.write_plink(one, tmp_path / "d")
    _plink2("--bfile", tmp_path / "d", "--export", "vcf", "id-paste=iid", "--out", tmp_path / "d")
    vcf.convert([str(tmp_path / "d.vcf")], str(tmp_path / "d.vcz"), variants_chunk_size=200)
    ds = xr.open_zarr(tmp_path / "d.vcz", consolidated=False)
    dos = xsvd.dosage(ds)  # ALT counts, as the .bed's allele_1
    assert dos.data.chunks[0] == (200, 200, 200)
    np.testing.assert_array_equal(dos.values, xsvd.open_plink(tmp_path / "d").values)
    assert list(dos.samples.values) == list(one.samples.values)
    assert list(dos.variant_id.values[:2]) == ["rs0", "rs1"]
    res = dos.svd.exact(k=2, dim="samples", center=True, missing="mean")
    ref = one.svd.exact(k=2, dim="samples", center=True, missing="mean")
    np.testing.assert_allclose(res.S, ref.S, rtol=1e-10)


def test_vcf_zarr_store_in_bio2zarr_layout(cohort, tmp_path):
    """The variables and dtypes vcf2zarr writes (bio2zarr 0.2), made here."""
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    counts = np.nan_to_num(cohort.values, nan=-1).astype(np.int8)
    first = np.where(counts == 2, 1, np.where(counts == 1, np.arange(N_SAMP) % 2, 0))
    calls = np.stack([first, counts - first], axis=-1).astype(np.int8)
    calls[counts < 0] = -1  # both alleles missing: "./."
    n = N_VAR
    ds = xr.Dataset(
        {
            "call_genotype": (("variants", "samples", "ploidy"), calls),
            "call_genotype_mask": (("variants", "samples", "ploidy"), calls < 0),
            "call_genotype_phased": (("variants", "samples"), np.zeros(calls.shape[:2], bool)),
            "variant_allele": (("variants", "alleles"), np.tile(["A", "G"], (n, 1))),
            "variant_id": ("variants", cohort.variants.values.astype(object)),
            "variant_id_mask": ("variants", np.zeros(n, bool)),
            "variant_position": ("variants", cohort.position.values.astype(np.int32)),
            "variant_contig": ("variants", (cohort.chrom.values == "2").astype(np.int8)),
            "variant_quality": ("variants", np.full(n, np.nan, np.float32)),
            "variant_filter": (("variants", "filters"), np.ones((n, 1), bool)),
            "contig_id": ("contigs", np.array(["1", "2"], dtype=object)),
            "filter_id": ("filters", np.array(["PASS"], dtype=object)),
            "sample_id": ("samples", cohort.samples.values.astype(object)),
        },
        attrs={"vcf_zarr_version": "0.4", "source": "bio2zarr-0.2.1"},
    )
    chunked = {"call_genotype": {"chunks": (400, N_SAMP, 2)}}  # as vcf2zarr's -l 400
    ds.to_zarr(tmp_path / "c.vcz", zarr_format=2, encoding=chunked)
    dos = xsvd.dosage(xr.open_zarr(tmp_path / "c.vcz"))
    np.testing.assert_array_equal(dos.values, cohort.values)
    assert list(dos.samples.values) == list(cohort.samples.values)
    assert {"variant_id", "variant_position", "variant_contig"} <= set(dos.coords)
    assert dos.data.chunks[0] == (400, 400, 400)


def test_default_chunks_are_open_plinks(tmp_path):
    """At most 4,096 variants per chunk by default, as ``open_plink`` (bytes alone allowed
    37,000 variants of 1,800 samples, which raised a PCA's peak memory)."""
    pytest.importorskip("pgenlib", reason='needs pgenlib: pip install "xsvd[genomics]"')
    n_var, n_samp = 9_000, 12
    calls = np.random.default_rng(1).integers(0, 3, (n_var, n_samp), dtype=np.int8)
    pvar = "#CHROM\tPOS\tID\tREF\tALT\n" + "".join(
        f"1\t{i + 1}\tv{i}\tA\tG\n" for i in range(n_var)
    )
    psam = "#IID\n" + "".join(f"s{j}\n" for j in range(n_samp))
    _write_pgen(tmp_path / "t", calls, pvar, psam)
    gt = xsvd.open_pgen(tmp_path / "t.pgen")
    assert gt.chunks[0] == (4096, 4096, 808)
    xsvd.write_plink(gt, tmp_path / "b")
    assert xsvd.open_plink(tmp_path / "b").chunks[0] == gt.chunks[0]
    np.testing.assert_array_equal(gt.values, calls)
