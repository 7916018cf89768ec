"""Genotype data decomposed over the samples without ``dim=``; .bed/.bim/.fam that disagree;
memory of the PLINK pipeline (issue 20 item 6, issue 23 items 3 and 5)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core.packed import PackedGenotypes
from xsvd.genomics import PlinkFileError, scaling
from xsvd.genomics.plink import BED_CHUNK_VARIANTS, default_variant_chunk
from xsvd.labeled.dims import SAMPLE_DIM_ATTR, default_sample_dim

N_VAR, N_SAMP = 1_200, 50  # 50 samples: two padding slots at the end of every .bed row


@pytest.fixture
def bed_files(tmp_path):
    gt = xsvd.datasets.genotypes(n_variants=N_VAR, n_samples=N_SAMP, seed=8)
    g = gt.values.astype(np.float32)
    g[np.random.default_rng(1).random(g.shape) < 0.02] = np.nan
    g[7] = 2  # monomorphic: dropped by patterson_scaling
    gt = gt.copy(data=g)
    prefix = tmp_path / "toy"
    xsvd.write_plink(gt, prefix)
    return prefix, gt


def _backed(bed, backend):
    """The .bed data lazily (Dask, packed chunks), packed in memory, or as plain NumPy."""
    if backend == "dask":
        return bed
    if backend == "packed":
        out = xsvd.pack_genotypes(bed.compute())
        assert isinstance(out.data, PackedGenotypes)
        return out
    return bed.compute()


# ---------------------------------------------------------------- samples by default


@pytest.mark.parametrize("backend", ["dask", "packed", "numpy"])
@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_open_plink_data_are_decomposed_over_samples_without_dim(bed_files, backend, method):
    prefix, _ = bed_files
    bed = _backed(xsvd.open_plink(f"{prefix}.bed", chunks=500), backend)
    assert bed.attrs[SAMPLE_DIM_ATTR] == "samples" and bed.dims == ("variants", "samples")
    kw = dict(k=3, center=True, missing="mean")
    if method == "compressed":
        kw["seed"] = 0
    run = getattr(bed.svd, method)
    res, ref = run(**kw), run(dim="samples", **kw)
    assert res.U.sizes["samples"] == N_SAMP and "variants" not in res.U.dims
    assert res.V.sizes["variants"] == N_VAR
    np.testing.assert_array_equal(res.S.values, ref.S.values)
    np.testing.assert_array_equal(res.U.values, ref.U.values)
    # the variants' PCA (the old default) has other singular vectors altogether
    other = run(dim="variants", **kw)
    assert other.U.dims[0] == "variants"


@pytest.mark.parametrize("chunked", [True, False])
def test_patterson_weights_without_dim(bed_files, chunked):
    prefix, _ = bed_files
    bed = xsvd.open_plink(f"{prefix}.bed", chunks=500)
    if not chunked:
        bed = xsvd.pack_genotypes(bed.compute())
    kept, w = xsvd.patterson_scaling(bed)
    assert kept.attrs[SAMPLE_DIM_ATTR] == "samples" and kept.sizes["variants"] < N_VAR
    kw = dict(k=3, center=True, weights=w, missing="mean", seed=0)
    res = kept.svd.compressed(**kw)  # was: "weights have dimension(s) ['variants'] that ..."
    ref = kept.svd.compressed(dim="samples", **kw)
    assert res.U.dims == ("samples", "component")
    np.testing.assert_array_equal(res.S.values, ref.S.values)
    # PLINK 2's eigenvalues of this structured set: two populations' axes well above the rest
    ev = res.S.values**2 / w.attrs["n_variants"]
    assert ev[1] > 2 * ev[2]


def test_sample_dim_attribute_survives_selections_and_is_set_by_the_genomics_functions():
    gt = xsvd.datasets.genotypes(n_variants=300, n_samples=40, seed=3)
    assert gt.attrs[SAMPLE_DIM_ATTR] == "samples"  # the synthetic data say so too
    del gt.attrs[SAMPLE_DIM_ATTR]  # data from elsewhere: the functions below set it
    packed = xsvd.pack_genotypes(gt)
    assert packed.attrs[SAMPLE_DIM_ATTR] == "samples"
    assert SAMPLE_DIM_ATTR not in gt.attrs  # the input is left alone
    for sub in (
        packed.isel(variants=slice(0, 100)),
        packed.isel(samples=np.arange(0, 40, 2)),
        packed.sel(variants=packed.variants[:50]),
        packed.transpose(),
    ):
        assert default_sample_dim(sub) == "samples"
    kept, _ = xsvd.patterson_scaling(gt)
    assert kept.attrs[SAMPLE_DIM_ATTR] == "samples"
    # a sample dimension of another name
    renamed = gt.rename(samples="individuals")
    kept, _ = xsvd.patterson_scaling(renamed, dim="individuals")
    assert default_sample_dim(kept) == "individuals"
    assert default_sample_dim(xsvd.pack_genotypes(renamed, dim="individuals")) == "individuals"
    calls = np.zeros((3, 4, 2), dtype="int8")
    ds = xr.Dataset({"call_genotype": (("variants", "samples", "ploidy"), calls)})
    assert xsvd.dosage(ds).attrs[SAMPLE_DIM_ATTR] == "samples"


def test_sample_dim_attribute_naming_no_dimension_is_ignored_and_dim_wins():
    gt = xsvd.datasets.genotypes(n_variants=300, n_samples=40, seed=3)
    packed = xsvd.pack_genotypes(gt)
    # renamed: the attribute names a dimension that is gone, the generic rule applies
    assert default_sample_dim(packed.rename(samples="ind")) == "variants"
    res = packed.svd.compressed(k=2, dim="variants", seed=0)
    assert res.U.dims[0] == "variants"
    three = xr.DataArray(np.zeros((2, 3, 4)), dims=("a", "b", "c"), attrs={SAMPLE_DIM_ATTR: "c"})
    assert default_sample_dim(three) == "c"  # otherwise ambiguous: an error
    with pytest.raises(ValueError, match="ambiguous"):
        default_sample_dim(three.rename(c="d"))


# ---------------------------------------------------------------- files that disagree


def _variant(prefix, name, fam=None, bim=None):
    """A copy of the file set under ``name`` with other .fam / .bim lines."""
    new = prefix.parent / name
    shutil.copy(f"{prefix}.bed", f"{new}.bed")
    for ext, lines in ((".fam", fam), (".bim", bim)):
        if lines is None:
            shutil.copy(f"{prefix}{ext}", f"{new}{ext}")
        else:
            (new.parent / f"{name}{ext}").write_text("".join(lines))
    return new


def _lines(prefix, ext):
    with open(f"{prefix}{ext}") as f:
        return f.readlines()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (1, r"lists 51 samples, but the \.bed seems to hold only 50"),
        (2, r"lists 52 samples, but the \.bed seems to hold only 50"),
        (-1, r"lists 49 samples, but the \.bed holds at least 50"),
        (-2, r"room for 49 to 52 samples, so \S+\.fam lists at least 1 fewer sample"),
        (3, r"room for 49 to 52 samples, so \S+\.fam lists at least 1 more sample"),
        (-10, r"the \.bed holds 1,560 variants.*or for 1,200 variants.*at least 9 fewer"),
    ],
)
def test_fam_that_disagrees_with_the_bed_is_an_error(bed_files, extra, message):
    prefix, _ = bed_files
    fam = _lines(prefix, ".fam")
    new = [f"X{i} X{i} 0 0 0 -9\n" for i in range(max(extra, 0))]
    lines = fam + new if extra > 0 else fam[:extra]
    bad = _variant(prefix, f"fam{extra:+d}", fam=lines)
    with pytest.raises(PlinkFileError, match=message):
        xsvd.open_plink(f"{bad}.bed")


def test_bim_that_disagrees_with_the_bed_is_an_error(bed_files):
    prefix, _ = bed_files
    bad = _variant(prefix, "short", bim=_lines(prefix, ".bim")[:-7])
    with pytest.raises(PlinkFileError, match=r"short\.bim lists 7 fewer variant"):
        xsvd.open_plink(f"{bad}.bed")
    bad = _variant(prefix, "junk", bim=["1 rs1 0 x A B\n"] * N_VAR)
    with pytest.raises(PlinkFileError, match=r"cannot be read as a \.bim file"):
        xsvd.open_plink(f"{bad}.bed")


@pytest.mark.parametrize("n_samples", [1, 2, 3, 5, 6, 7, 49, 51])
def test_matching_files_of_any_sample_count_open(tmp_path, n_samples):
    """No false alarm: padding checks pass on files PLINK's way (here, xsvd's writer)."""
    gt = xsvd.datasets.genotypes(n_variants=400, n_samples=max(n_samples, 3), seed=n_samples)
    gt = gt.isel(samples=slice(0, n_samples))
    xsvd.write_plink(gt, tmp_path / "ok")
    bed = xsvd.open_plink(tmp_path / "ok.bed")
    np.testing.assert_array_equal(bed.values, gt.values)


def test_a_sample_homozygous_everywhere_on_few_variants_is_not_taken_for_padding(tmp_path):
    g = np.array([[0, 1, 2, 2, 1, 2]] * 5, dtype=np.float32)  # the last sample: 2 everywhere
    gt = xr.DataArray(g, dims=("variants", "samples"))
    xsvd.write_plink(gt, tmp_path / "few")
    np.testing.assert_array_equal(xsvd.open_plink(tmp_path / "few.bed").values, g)


# ---------------------------------------------------------------- memory


def test_default_chunks_bound_variants_and_bytes():
    assert default_variant_chunk(450) == BED_CHUNK_VARIANTS  # 1,800 samples
    assert default_variant_chunk(125_000) == 134  # 500,000 samples: 16 MiB
    assert default_variant_chunk(10**9) == 1


def test_patterson_scaling_keeps_dask_chunks_packed(bed_files):
    prefix, gt = bed_files
    bed = xsvd.open_plink(f"{prefix}.bed", chunks=500)
    kept, w = xsvd.patterson_scaling(bed)
    ref, w_ref = xsvd.patterson_scaling(gt)
    # monomorphic variants (7 among them) are dropped chunk by chunk, and the chunks are
    # read packed, not unpacked to float32 by Dask's fancy indexing
    kept_at = np.isin(gt.variants, ref.variants)
    assert not kept_at[7] and kept_at.sum() < N_VAR
    sizes = tuple(int(kept_at[a : a + 500].sum()) for a in range(0, N_VAR, 500))
    assert kept.data.chunks == (sizes, (N_SAMP,))
    assert all(isinstance(b.compute(), PackedGenotypes) for b in kept.data.blocks)
    np.testing.assert_array_equal(kept.values, ref.values)
    np.testing.assert_array_equal(w.values, w_ref.values)
    np.testing.assert_array_equal(kept.variants.values, ref.variants.values.astype(str))
    xr.testing.assert_identical(
        kept.coords.to_dataset(), bed.isel(variants=kept_at).coords.to_dataset()
    )
    # transposed input: the variants are the columns
    kept_t, _ = xsvd.patterson_scaling(bed.transpose())
    assert kept_t.dims == ("samples", "variants")
    np.testing.assert_array_equal(kept_t.values, ref.values.T)


def test_allele_counts_turn_little_data_into_float_temporaries_at_once(bed_files, monkeypatch):
    prefix, gt = bed_files
    bed = xsvd.open_plink(f"{prefix}.bed")  # one chunk of 1,200 variants x 13 bytes
    seen = []
    original = PackedGenotypes.called_stats

    def spy(self):
        seen.append(self.data.nbytes)
        return original(self)

    monkeypatch.setattr(PackedGenotypes, "called_stats", spy)
    monkeypatch.setattr(scaling, "COUNT_BLOCK_BYTES", 1_000)
    kept, w = xsvd.patterson_scaling(bed)
    assert len(seen) > 10 and max(seen) <= 1_000
    ref, w_ref = xsvd.patterson_scaling(gt)
    np.testing.assert_array_equal(w.values, w_ref.values)
    np.testing.assert_array_equal(kept.values, ref.values)
