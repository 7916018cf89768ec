"""Genotype inputs: 2-bit packing, PLINK .bed files, VCF-Zarr, missing calls, scaling."""

from __future__ import annotations

import shutil
import subprocess
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from conftest import raise_if_dask_computes

import xsvd
from xsvd.core.packed import PackedGenotypes, pack
from xsvd.linalg import exact_svd, randomized_svd


def _genotypes(rng, rows, cols, missing=0.0):
    g = rng.integers(0, 3, (rows, cols)).astype(np.float32)
    if missing:
        g[rng.random(g.shape) < missing] = np.nan
    return g


# ------------------------------------------------------------------ packed array


@pytest.mark.parametrize("n", [1, 3, 4, 5, 203])
def test_pack_round_trip_all_codes(rng, n):
    g = _genotypes(rng, 9, n, missing=0.2)
    g[0, :] = np.nan
    g[1, :] = 2
    p = pack(g)
    assert p.data.shape == (9, (n + 3) // 4) and p.data.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(p), g)
    np.testing.assert_array_equal(np.asarray(p.T), g.T)
    # negative values are missing too
    np.testing.assert_array_equal(np.asarray(pack(np.where(np.isnan(g), -1, g))), g)


def test_pack_rejects_values_that_are_not_genotypes():
    with pytest.raises(ValueError, match=r"0, 1 and 2.*\[0\.5\]"):
        pack(np.array([[0, 0.5, 2]]))


def test_packed_slicing_stays_packed_and_matches(rng):
    g = _genotypes(rng, 37, 23, missing=0.1)
    p = pack(g)
    for kr in (slice(3, 20), slice(None), np.array([1, 5, 2]), np.arange(37) % 3 == 0):
        for kc in (slice(5, 18), slice(1, 2), slice(0, 23), slice(6, 6)):
            q = p[kr, kc]
            assert isinstance(q, PackedGenotypes)
            np.testing.assert_array_equal(np.asarray(q), g[kr][:, kc])
            np.testing.assert_array_equal(np.asarray(q.T[1:, 2:]), g[kr][:, kc].T[1:, 2:])
            s, ss, c = q.called_stats()
            ref = g[kr][:, kc]
            np.testing.assert_allclose(s, np.nansum(ref, axis=1))
            np.testing.assert_allclose(ss, np.nansum(ref**2, axis=1))
            np.testing.assert_array_equal(c, (~np.isnan(ref)).sum(axis=1))
    # anything else sees plain values
    np.testing.assert_array_equal(p[3], g[3])
    np.testing.assert_allclose(np.nanmean(p, axis=0), np.nanmean(g, axis=0))
    np.testing.assert_array_equal(np.asarray(p + 1), g + 1)


def test_pack_genotypes_keeps_labels_for_numpy_and_dask(rng):
    gt = xsvd.datasets.genotypes(n_variants=400, n_samples=61, seed=2)
    packed = xsvd.pack_genotypes(gt)
    assert packed.dims == gt.dims and packed.data.nbytes == 400 * 16
    xr.testing.assert_identical(
        packed.copy(data=np.asarray(packed.data)),
        gt.astype("float32").assign_attrs(xsvd_sample_dim="samples"),
    )
    lazy = xsvd.pack_genotypes(gt.chunk(variants=150, samples=40))
    assert lazy.data.chunks == ((150, 150, 100), (40, 21))
    assert isinstance(lazy.data.blocks[0, 0].compute(), PackedGenotypes)
    np.testing.assert_array_equal(lazy.values, gt.values)
    # transposed order packs along samples as well
    other = xsvd.pack_genotypes(gt.transpose())
    assert other.dims == ("samples", "variants")
    np.testing.assert_array_equal(other.values, gt.values.T)


# ---------------------------------------------------------------- missing="mean"


def _imputed(a):
    """Reference: NaN and negatives replaced by the column's mean of present values."""
    a = np.where(a < 0, np.nan, a.astype(np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an all-NaN column
        mu = np.nanmean(a, axis=0)
    return np.where(np.isnan(a), np.nan_to_num(mu), a), np.isnan(mu)


@pytest.fixture
def gappy(rng):
    """Genotypes with low-rank structure, 5% missing and one feature missing everywhere."""
    m, n = 240, 90
    pops = rng.integers(0, 3, m)
    freq = rng.uniform(0.1, 0.9, (3, n))
    a = (rng.random((m, n)) < freq[pops]).astype(np.float64)
    a += rng.random((m, n)) < freq[pops]
    a[rng.random(a.shape) < 0.05] = np.nan
    a[:, 7] = np.nan
    return a


def _inputs(a):
    """The same (samples x features) data on every backend and stripe orientation."""
    packed = pack(a.T)  # packed along the samples, as in a .bed file
    return {
        "numpy": a,
        "dask-rows": da.from_array(a, chunks=(50, -1)),
        "dask-cols": da.from_array(a, chunks=(-1, 20)),
        "packed": packed.T,
        "packed-dask": da.from_array(packed, chunks=(20, -1), asarray=False, meta=packed[:0, :0]).T,
    }


@pytest.mark.parametrize("center", [False, True])
def test_missing_mean_matches_explicitly_imputed_data(gappy, center):
    ref, all_missing = _imputed(gappy)
    B = ref - ref.mean(axis=0) if center else ref
    s_ref = np.linalg.svd(B, compute_uv=False)[:5]
    for name, x in _inputs(gappy).items():
        # a sketch as wide as the data: exact up to rounding, so only the filling is tested
        d = randomized_svd(
            x,
            5,
            center=center,
            missing="mean",
            n_power_iter=1,
            n_oversamples=90,
            seed=0,
            dtype="float64",
            compute=True,
        )
        np.testing.assert_allclose(np.asarray(d.S), s_ref, rtol=1e-6, err_msg=name)
        V = np.asarray(d.V)
        assert np.isnan(V[all_missing]).all() and not np.isnan(V[~all_missing]).any(), name
        if center:
            mean = np.asarray(d.mean)
            np.testing.assert_allclose(mean[~all_missing], ref.mean(axis=0)[~all_missing])
        e = exact_svd(x, 5, center=center, missing="mean")
        np.testing.assert_allclose(np.asarray(e.S), s_ref, rtol=1e-5, err_msg=name)


def test_missing_mean_rows_layout_reads_once_more_and_cols_does_not(gappy):
    opts = dict(missing="mean", n_power_iter=3, compute=True, seed=0)
    rows = randomized_svd(da.from_array(gappy, chunks=(50, -1)), 3, **opts)
    cols = randomized_svd(da.from_array(gappy, chunks=(-1, 20)), 3, **opts)
    assert rows.settings["passes"] == cols.settings["passes"] + 1 == 5


def test_negative_integer_codes_are_missing_calls(gappy):
    as_int = np.where(np.isnan(gappy), -1, gappy).astype(np.int8)
    a = randomized_svd(as_int, 4, center=True, missing="mean", seed=1, dtype="float64")
    b = randomized_svd(gappy, 4, center=True, missing="mean", seed=1, dtype="float64")
    np.testing.assert_allclose(a.S, b.S, rtol=1e-10)


def test_missing_default_is_an_error_that_names_the_option(gappy):
    da_ = xr.DataArray(gappy, dims=("samples", "variants"))
    with pytest.raises(xsvd.MissingValueError, match=r"missing='mean'"):
        da_.svd.compressed(k=3, dim="samples", seed=0)
    with pytest.raises(ValueError, match=r"missing must be one of"):
        da_.svd.compressed(k=3, dim="samples", missing="zero")


# ----------------------------------------------------------------------- PLINK


@pytest.fixture
def toy_bed(tmp_path, rng):
    """A .bed file set written by xsvd with 203 samples (not a multiple of 4)."""
    gt = xsvd.datasets.genotypes(n_variants=1_500, n_samples=203, seed=4)
    g = gt.values.astype(np.float32)
    g[rng.random(g.shape) < 0.02] = np.nan
    gt = gt.copy(data=g).assign_coords(
        chrom=("variants", np.where(np.arange(1_500) < 700, "1", "2")),
        position=("variants", np.arange(1_500) * 100 + 1),
        allele_1=("variants", np.full(1_500, "T")),
        allele_2=("variants", np.full(1_500, "C")),
        variants=[f"rs{i}" for i in range(1_500)],
        family_id=("samples", [f"F{i // 2}" for i in range(203)]),
    )
    prefix = tmp_path / "toy"
    xsvd.write_plink(gt, prefix)
    return prefix, gt


def test_plink_round_trip_against_bed_reader(toy_bed, tmp_path):
    bed_reader = pytest.importorskip(
        "bed_reader", reason="the PLINK cross-check needs bed-reader (in the test extra)"
    )
    open_bed, to_bed = bed_reader.open_bed, bed_reader.to_bed

    prefix, gt = toy_bed
    with open_bed(f"{prefix}.bed") as bed:  # xsvd's file, read by bed-reader
        np.testing.assert_array_equal(bed.read(dtype="float32"), gt.values.T)
        assert list(bed.iid) == list(gt.samples.values)
        assert list(bed.fid) == list(gt.family_id.values)
        assert list(bed.sid) == list(gt.variants.values)
        assert list(bed.chromosome) == list(gt.chrom.values)
        np.testing.assert_array_equal(bed.bp_position, gt.position.values)
        assert set(bed.allele_1) == {"T"} and set(bed.allele_2) == {"C"}
    # bed-reader's file, read by xsvd (all four codes, 7 samples)
    vals = np.array([[0, 1, 2, np.nan, 2, 1, 0], [np.nan] * 7, [2] * 7], dtype=np.float32).T
    to_bed(tmp_path / "other.bed", vals, properties={"iid": [f"i{j}" for j in range(7)]})
    other = xsvd.open_plink(tmp_path / "other.bed")
    np.testing.assert_array_equal(other.values, vals.T)
    assert list(other.samples.values) == [f"i{j}" for j in range(7)]


def test_open_plink_is_lazy_packed_and_labeled(toy_bed):
    prefix, gt = toy_bed
    with raise_if_dask_computes():
        bed = xsvd.open_plink(f"{prefix}.bed", chunks=400)
    assert bed.dims == ("variants", "samples") and bed.shape == (1_500, 203)
    assert bed.data.chunks == ((400, 400, 400, 300), (203,))
    chunk = bed.data.blocks[0].compute()
    assert isinstance(chunk, PackedGenotypes) and chunk.nbytes == 400 * 51
    for name in ("chrom", "position", "allele_1", "allele_2"):
        assert bed[name].dims == ("variants",)
        np.testing.assert_array_equal(bed[name].values, gt[name].values)
    assert bed.family_id.dims == ("samples",)
    np.testing.assert_array_equal(bed.values, gt.values)
    np.testing.assert_array_equal(bed.sel(variants="rs10").values, gt.values[10])


def test_svd_of_a_bed_file_never_unpacks_more_than_a_sub_block(toy_bed, monkeypatch):
    prefix, gt = toy_bed
    bed = xsvd.open_plink(f"{prefix}.bed")  # one chunk: 1500 x 203
    largest = []
    original = PackedGenotypes._base_block

    def spy(self, rows, cols, dtype):
        out = original(self, rows, cols, dtype)
        largest.append(out.size)
        return out

    monkeypatch.setattr(PackedGenotypes, "_base_block", spy)
    with xsvd.set_options(sub_block_elements=50_000):
        res = bed.svd.compressed(k=4, dim="samples", center=True, missing="mean", seed=0)
    assert largest and max(largest) <= 64 * 1_500 < bed.size / 3
    ref = gt.svd.compressed(k=4, dim="samples", center=True, missing="mean", seed=0)
    np.testing.assert_allclose(res.S[:2], ref.S[:2], rtol=1e-5)  # beyond 2: noise, flat


def test_bad_plink_files_give_clear_errors(toy_bed, tmp_path):
    prefix, _ = toy_bed
    with pytest.raises(ValueError, match=r"No \.bed file"):
        xsvd.open_plink(tmp_path / "nothing.bed")
    shutil.copy(f"{prefix}.bed", tmp_path / "cut.bed")
    shutil.copy(f"{prefix}.fam", tmp_path / "cut.fam")
    with open(f"{prefix}.bim") as f:
        lines = f.readlines()
    (tmp_path / "cut.bim").write_text("".join(lines[:-1]))
    with pytest.raises(ValueError, match=r"do not belong together or the \.bed is truncated"):
        xsvd.open_plink(tmp_path / "cut.bed")
    (tmp_path / "bad.bed").write_bytes(b"hello")
    shutil.copy(f"{prefix}.bim", tmp_path / "bad.bim")
    shutil.copy(f"{prefix}.fam", tmp_path / "bad.fam")
    with pytest.raises(ValueError, match=r"not a PLINK 1 \.bed"):
        xsvd.open_plink(tmp_path / "bad.bed")


# ------------------------------------------------------------- standardization


def test_patterson_scaling_matches_numpy_reference(toy_bed):
    prefix, gt = toy_bed
    g = gt.values.astype(np.float64).copy()
    g[:, :] = np.where(np.arange(1_500)[:, None] == 3, 2.0, g)  # variant 3: monomorphic
    gt = gt.copy(data=g)
    for source in (gt, xsvd.pack_genotypes(gt.chunk(variants=500))):
        kept, w = xsvd.patterson_scaling(source)
        p = np.nanmean(g, axis=1) / 2
        poly = (p > 0) & (p < 1)
        assert kept.sizes["variants"] == poly.sum() < 1_500 and "rs3" not in kept.variants
        np.testing.assert_allclose(w.allele_frequency, p[poly])
        np.testing.assert_allclose(w, 1 / np.sqrt(2 * p[poly] * (1 - p[poly])))
        assert w.attrs["n_variants"] == 1_500
        res = kept.svd.exact(dim="samples", center=True, weights=w, missing="mean", k=5)
        x = g[poly]
        x = np.where(np.isnan(x), 2 * p[poly][:, None], x)
        z = (x - 2 * p[poly][:, None]) / np.sqrt(2 * p[poly] * (1 - p[poly]))[:, None]
        s_ref = np.linalg.svd(z.T, compute_uv=False)[:5]
        np.testing.assert_allclose(res.S, s_ref, rtol=1e-5)


def test_pcs_separate_simulated_populations(toy_bed):
    prefix, gt = toy_bed
    bed = xsvd.open_plink(prefix)
    kept, w = xsvd.patterson_scaling(bed)
    res = kept.svd.compressed(k=2, dim="samples", center=True, weights=w, missing="mean", seed=0)
    pcs = res.U.values
    pop = gt.population.values
    centers = {p: pcs[pop == p].mean(axis=0) for p in np.unique(pop)}
    nearest = [min(centers, key=lambda p: np.linalg.norm(pc - centers[p])) for pc in pcs]
    assert (np.array(nearest) == pop).mean() == 1.0


@pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")
def test_eigenvalues_and_pcs_match_plink2(tmp_path):
    gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=150, seed=5)
    xsvd.write_plink(gt, tmp_path / "p")
    subprocess.run(
        ["plink2", "--bfile", str(tmp_path / "p"), "--pca", "4", "--out", str(tmp_path / "o")],
        check=True,
        capture_output=True,
    )
    eigenval = np.loadtxt(tmp_path / "o.eigenval")
    eigenvec = np.loadtxt(tmp_path / "o.eigenvec", usecols=range(2, 6))
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "p"))
    res = kept.svd.exact(dim="samples", center=True, weights=w, k=4)
    np.testing.assert_allclose(res.S**2 / w.attrs["n_variants"], eigenval, rtol=1e-4)
    np.testing.assert_allclose(np.abs(res.U.values), np.abs(eigenvec), atol=1e-5)


# ------------------------------------------------------------------- VCF-Zarr


def _vcf_zarr_dataset(rng, n_var=600, n_samp=80):
    gt = xsvd.datasets.genotypes(n_variants=n_var, n_samples=n_samp, seed=6).values
    calls = np.stack([(rng.random(gt.shape) < gt / 2), np.zeros(gt.shape, bool)], axis=-1)
    calls = calls.astype(np.int8)
    calls[..., 1] = gt - calls[..., 0]  # two allele indices that add up to the dosage
    miss = rng.random(gt.shape) < 0.03
    calls[miss, 0] = -1  # one allele missing makes the call missing
    return xr.Dataset(
        {
            "call_genotype": (("variants", "samples", "ploidy"), calls),
            "variant_position": ("variants", np.arange(n_var) * 10),
            "variant_contig": ("variants", np.zeros(n_var, np.int16)),
            "sample_id": ("samples", [f"NA{i:05d}" for i in range(n_samp)]),
        }
    ), np.where(miss, np.nan, gt)


def test_vcf_zarr_dosage_one_liner(tmp_path, rng):
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    ds, expected = _vcf_zarr_dataset(rng)
    ds.chunk(variants=200).to_zarr(tmp_path / "calls.zarr")
    ds = xr.open_zarr(tmp_path / "calls.zarr")
    gt = xsvd.dosage(ds)  # loads only the sample ids (an index needs them in memory)
    with raise_if_dask_computes():
        gt = xsvd.dosage(ds.drop_vars("sample_id"))
        res = gt.svd.compressed(
            k=3, dim="samples", center=True, missing="mean", compute=False, seed=0
        )
    assert gt.dims == ("variants", "samples") and gt.dtype == np.float32
    assert gt.data.chunks[0] == (200, 200, 200)
    np.testing.assert_array_equal(gt.values, expected)
    labeled = xsvd.dosage(ds)
    assert labeled.samples.values[0] == "NA00000" and "variant_position" in labeled.coords
    ref, _ = _imputed(expected.T)
    s_ref = np.linalg.svd(ref - ref.mean(axis=0), compute_uv=False)[:3]
    np.testing.assert_allclose(res.compute().S[:2], s_ref[:2], rtol=1e-4)  # 3 populations


def test_project_packed_genotypes():
    # packed genotypes (which cannot be reshaped) project as their unpacked values do
    gt = xsvd.datasets.genotypes(n_variants=500, n_samples=60, seed=2)
    packed = xsvd.pack_genotypes(gt)
    res = packed.svd.compressed(k=3, dim="samples", center=True, seed=0)
    scores = res.project(packed)
    np.testing.assert_allclose(scores.values, res.project(gt).values, atol=1e-6)
    np.testing.assert_allclose(scores.values, res.U.values, atol=1e-5)  # the same samples
