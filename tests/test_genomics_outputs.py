"""After a genotype PCA: projecting new samples, PLINK 2's PCA files, Tracy-Widom tests.

The PLINK 2 checks run ``plink2`` on small file sets the tests write (skipped
without it): its own ``--pca`` on the same ``.bed``, ``--covar`` reading the
``.eigenvec`` xsvd writes, and ``--score`` projecting new samples with the
``.eigenvec.allele`` / ``.eigenvec.var`` and ``.afreq`` files xsvd writes.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xsvd

N_VARIANTS, N_SAMPLES, K = 2_000, 300, 4

needs_plink2 = pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")


def _labeled(gt: xr.DataArray) -> xr.DataArray:
    """Variant ids, chromosomes and alleles as a .bim has them; populations as family ids."""
    n = gt.sizes["variants"]
    return gt.assign_coords(
        variants=[f"rs{i}" for i in range(n)],
        chrom=("variants", np.where(np.arange(n) < n // 2, "1", "2")),
        position=("variants", np.arange(n) * 1_000 + 1),
        allele_1=("variants", np.full(n, "G")),  # the counted allele: PLINK 2's ALT
        allele_2=("variants", np.full(n, "A")),
        family_id=("samples", gt.population.values),
    )


@pytest.fixture(scope="module")
def cohort():
    """Three populations (weak structure, Fst 0.02): 200 reference and 100 new samples."""
    gt = _labeled(
        xsvd.datasets.genotypes(N_VARIANTS, N_SAMPLES, n_populations=3, fst=0.02, seed=11)
    )
    new = np.arange(N_SAMPLES) % 3 == 0  # every population in both
    ref = gt.isel(samples=~new)
    kept, w = xsvd.patterson_scaling(ref)
    res = kept.svd.exact(k=K, dim="samples", center=True, weights=w)
    return ref, gt.isel(samples=new), kept, w, res


def _rms(a) -> np.ndarray:
    return np.sqrt((np.asarray(a, dtype=np.float64) ** 2).mean(axis=0))


def _with_missing(gt: xr.DataArray, share: float, seed: int) -> xr.DataArray:
    values = gt.values.astype(np.float32)
    values[np.random.default_rng(seed).random(values.shape) < share] = np.nan
    return gt.copy(data=values)


def _plain_projection(res, kept, w, new: np.ndarray) -> np.ndarray:
    """NumPy reference: standardize with the reference frequencies, missing calls as 0."""
    p = kept.values.astype(np.float64).mean(axis=1) / 2  # the reference has no missing call
    z = (new.astype(np.float64) - 2 * p[:, None]) * w.values[:, None]
    z = np.where(np.isnan(z), 0.0, z)
    return (z.T @ res.V.values.T) / res.S.values


# ------------------------------------------------------------------- projection


def test_projection_fills_missing_calls_with_reference_means(cohort):
    ref, new, kept, w, res = cohort
    gappy = _with_missing(new.sel(variants=kept.variants), 0.03, seed=1)
    expected = _plain_projection(res, kept, w, gappy.values)
    scores = xsvd.project_samples(res, gappy, shrinkage=False)
    assert scores.dims == ("samples", "component") and scores.sizes["samples"] == 100
    np.testing.assert_allclose(scores.values, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(scores.shrinkage, np.ones(K))
    assert list(scores.population.values) == list(new.population.values)  # labels kept
    # integer codes with -1 for missing calls, Dask chunks and packed data: the same
    codes = gappy.fillna(-1).astype(np.int8)
    for data in (codes, gappy.chunk(variants=500), xsvd.pack_genotypes(gappy)):
        other = xsvd.project_samples(res, data, shrinkage=False)
        np.testing.assert_allclose(other.values, expected, rtol=1e-5, atol=1e-7)
    # the reference samples project onto their own U
    back = xsvd.project_samples(res, kept, shrinkage=False)
    np.testing.assert_allclose(back.values, res.U.values, atol=1e-8)


def test_result_project_missing_mean(cohort):
    _, new, kept, _, res = cohort
    gappy = _with_missing(new.sel(variants=kept.variants), 0.05, seed=2)
    filled = gappy.fillna(res.mean)
    np.testing.assert_allclose(
        res.project(gappy, missing="mean").values, res.project(filled).values, atol=1e-10
    )
    with pytest.raises(ValueError, match="missing must be None or 'mean'"):
        res.project(gappy, missing="zero")
    # a variant without any call in the reference is left out (NaN in V): ignored here
    few = slice(0, 400)  # fewer variants from here on: quicker
    holed = kept.isel(variants=few).astype(np.float32).copy()
    holed[5] = np.nan
    res_holed = holed.svd.exact(k=2, dim="samples", center=True, missing="mean")
    assert np.isnan(res_holed.V.values[:, 5]).all()
    part = filled.isel(variants=few)
    expected = res_holed.project(part.where(part.variants != holed.variants[5], 0))
    np.testing.assert_allclose(
        res_holed.project(gappy.isel(variants=few), missing="mean").values,
        expected.values,
        atol=1e-6,
    )
    plain = kept.isel(variants=few).svd.exact(k=2, dim="samples")
    with pytest.raises(ValueError, match="center=True"):
        plain.project(gappy.isel(variants=few), missing="mean")
    with pytest.raises(ValueError, match="centered PCA"):
        xsvd.project_samples(plain, gappy.isel(variants=few))


def test_shrinkage_correction_gives_new_samples_the_reference_spread(cohort):
    _, new, kept, _, res = cohort
    factors = xsvd.shrinkage_factors(res)
    assert factors.attrs["n_spikes"] == 2  # three populations: two structure components
    raw = xsvd.project_samples(res, new, shrinkage=False)
    corrected = xsvd.project_samples(res, new)
    reference = _rms(res.U)
    shrunk = _rms(raw) / reference
    spread = _rms(corrected) / reference
    assert np.all(shrunk[:2] < 0.85), shrunk  # the plain projection is visibly shrunk
    assert np.all(np.abs(spread - 1) < 0.1), spread  # corrected: the reference's spread
    np.testing.assert_allclose(corrected.values, raw.values / factors.values)
    np.testing.assert_allclose(corrected.shrinkage, factors)
    # each population's centre moves out to where the reference samples sit
    for pop in ("POP0", "POP1", "POP2"):
        centre = res.U.sel(samples=res.U.population == pop).mean("samples")[:2]
        moved = corrected.sel(samples=corrected.population == pop).mean("samples")[:2]
        assert float(np.linalg.norm(moved - centre)) < 0.2 * float(np.linalg.norm(centre))
    given = xsvd.project_samples(res, new, shrinkage=np.full(K, 0.5))
    np.testing.assert_allclose(given.values, 2 * raw.values)
    with pytest.raises(ValueError, match="positive factors"):
        xsvd.project_samples(res, new, shrinkage=[1.0, 0.0])


def test_shrinkage_factors_match_the_spiked_model():
    """Gaussian data with two spikes: the estimate against Lee, Zou & Wright's formula."""
    rng = np.random.default_rng(3)
    n, p, spikes = 200, 2_000, np.array([40.0, 20.0])  # noise variance 1
    gamma = p / (n - 1)
    basis = np.linalg.qr(rng.standard_normal((p, 2)))[0]
    x = rng.standard_normal((n, p)) + (rng.standard_normal((n, 2)) * np.sqrt(spikes - 1)) @ basis.T
    da = xr.DataArray(x, dims=("samples", "features"))
    res = da.svd.exact(k=4, dim="samples", center=True)
    factors = xsvd.shrinkage_factors(res)
    theory = (spikes - 1) / (spikes - 1 + gamma)
    np.testing.assert_allclose(factors.values[:2], theory, rtol=0.05)
    # the noise components: at the edge of the noise spectrum, where the formula meets
    # sqrt(sigma2 / d) (the largest of them may be on either side of it)
    np.testing.assert_allclose(factors.values[2:], 1 / (1 + np.sqrt(gamma)), rtol=0.05)
    np.testing.assert_allclose(factors.attrs["noise_variance_fraction"] * x.var(0).sum(), 1, 0.05)
    # and what they are for: new samples from the same model
    new = (
        rng.standard_normal((400, p))
        + (rng.standard_normal((400, 2)) * np.sqrt(spikes - 1)) @ basis.T
    )
    scores = res.project(xr.DataArray(new, dims=("samples", "features")))
    ratio = _rms(scores.values[:, :2]) / _rms(res.U.values[:, :2])
    np.testing.assert_allclose(ratio, factors.values[:2], rtol=0.1)


def test_variants_are_matched_by_id_and_swapped_alleles_flipped(cohort):
    _, new, kept, w, res = cohort
    new = new.sel(variants=kept.variants)
    expected = xsvd.project_samples(res, new).values
    order = np.random.default_rng(4).permutation(new.sizes["variants"])
    shuffled = new.isel(variants=order)
    swap = np.zeros(new.sizes["variants"], bool)
    swap[::7] = True
    a1 = np.where(swap, shuffled.allele_2, shuffled.allele_1)
    a2 = np.where(swap, shuffled.allele_1, shuffled.allele_2)
    values = np.where(swap[:, None], 2 - shuffled.values, shuffled.values)
    other = shuffled.copy(data=values).assign_coords(allele_1=("variants", a1))
    other = other.assign_coords(allele_2=("variants", a2))
    np.testing.assert_allclose(xsvd.project_samples(res, other).values, expected, atol=1e-10)
    with pytest.raises(ValueError, match=r"1 variant\(s\) of the reference PCA are not in"):
        xsvd.project_samples(res, other.isel(variants=slice(1, None)))
    strand = other.copy()
    strand["allele_1"] = strand.allele_1.where(np.arange(strand.sizes["variants"]) != 3, "T")
    with pytest.raises(ValueError, match="other alleles"):
        xsvd.project_samples(res, strand)


# --------------------------------------------------------------- writing files


def _read_eigenvec(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype={"#FID": str, "IID": str})


def test_written_files(cohort, tmp_path):
    _, _, kept, w, res = cohort
    files = xsvd.write_plink_pca(res, tmp_path / "ref", n_variants=w.attrs["n_variants"])
    assert [f.name for f in files] == [
        "ref.eigenvec",
        "ref.eigenval",
        "ref.eigenvec.allele",
        "ref.afreq",
    ]
    vec = _read_eigenvec(tmp_path / "ref.eigenvec")
    assert list(vec.columns) == ["#FID", "IID", "PC1", "PC2", "PC3", "PC4"]
    assert list(vec["#FID"]) == list(kept.family_id.values)
    assert list(vec["IID"]) == list(kept.samples.values)
    np.testing.assert_allclose(vec.iloc[:, 2:].values, res.U.values, rtol=1e-8, atol=1e-12)
    val = np.loadtxt(tmp_path / "ref.eigenval")
    np.testing.assert_allclose(val, res.S.values**2 / w.attrs["n_variants"], rtol=1e-8)
    allele = pd.read_csv(tmp_path / "ref.eigenvec.allele", sep="\t")
    assert list(allele.columns[:5]) == ["#CHROM", "ID", "REF", "ALT", "A1"]
    assert len(allele) == 2 * kept.sizes["variants"]
    alt = allele[allele.A1 == allele.ALT]
    weights = res.V.values.T * np.sqrt(w.attrs["n_variants"]) / 2
    np.testing.assert_allclose(alt.iloc[:, 5:].values, weights, rtol=1e-8, atol=1e-12)
    refs = allele[allele.A1 == allele.REF].iloc[:, 5:].values
    np.testing.assert_allclose(refs, -alt.iloc[:, 5:].values)
    freq = pd.read_csv(tmp_path / "ref.afreq", sep="\t")
    np.testing.assert_allclose(freq.ALT_FREQS, w.allele_frequency, rtol=1e-8)
    # only the samples' table, and the other loadings file
    only = xsvd.write_plink_pca(res, tmp_path / "only", loadings=None)
    assert [f.name for f in only] == ["only.eigenvec", "only.eigenval"]
    np.testing.assert_allclose(
        np.loadtxt(tmp_path / "only.eigenval"), res.S.values**2 / kept.sizes["variants"]
    )
    xsvd.write_plink_pca(res, tmp_path / "var", loadings="var")
    var = pd.read_csv(tmp_path / "var.eigenvec.var", sep="\t")
    assert list(var.columns[:4]) == ["#CHROM", "ID", "MAJ", "NONMAJ"]
    major_alt = (var.MAJ == "G").values
    np.testing.assert_array_equal(major_alt, w.allele_frequency.values > 0.5)
    sign = np.where(major_alt, 1, -1)[:, None]
    np.testing.assert_allclose(
        var.iloc[:, 4:].values * sign, res.V.values.T * np.sqrt(kept.sizes["variants"])
    )


def test_writers_refuse_what_plink_cannot_read(cohort, tmp_path):
    _, _, kept, _, res = cohort
    with pytest.raises(ValueError, match="n_variants must be an integer at least"):
        xsvd.write_plink_pca(res, tmp_path / "x", n_variants=10)
    with pytest.raises(ValueError, match="loadings must be"):
        xsvd.write_plink_pca(res, tmp_path / "x", loadings="sample")
    spaced = res.U.assign_coords(samples=[f"id {i}" for i in range(res.U.sizes["samples"])])
    with pytest.raises(ValueError, match="spaces"):
        xsvd.write_eigenvec(spaced, tmp_path / "x.eigenvec")
    with pytest.raises(ValueError, match="no sample ids"):
        xsvd.write_eigenvec(res.U.drop_vars("samples"), tmp_path / "x.eigenvec")
    plain = kept.isel(variants=slice(0, 400)).svd.exact(k=2, dim="samples")
    with pytest.raises(ValueError, match="centered PCA"):
        xsvd.write_plink_pca(plain, tmp_path / "x")
    assert not list(tmp_path.iterdir())  # nothing half-written


def _plink2(*args: str) -> None:
    proc = subprocess.run(["plink2", *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]


def _same_up_to_sign(a, b, **tol):
    signs = np.sign((a * b).sum(axis=0))
    np.testing.assert_allclose(a * signs, b, **tol)


@needs_plink2
def test_files_match_plink2_pca(cohort, tmp_path):
    ref, _, kept, w, res = cohort
    xsvd.write_plink(ref, tmp_path / "ref")
    files = xsvd.write_plink_pca(res, tmp_path / "xsvd", n_variants=w.attrs["n_variants"])
    _plink2("--bfile", tmp_path / "ref", "--pca", "allele-wts", K, "--out", tmp_path / "pa")
    _plink2("--bfile", tmp_path / "ref", "--pca", "biallelic-var-wts", K, "--out", tmp_path / "pv")
    np.testing.assert_allclose(
        np.loadtxt(files[1]), np.loadtxt(tmp_path / "pa.eigenval"), rtol=1e-4
    )
    mine, theirs = _read_eigenvec(files[0]), _read_eigenvec(tmp_path / "pa.eigenvec")
    assert list(mine.columns) == list(theirs.columns)
    assert (mine.iloc[:, :2].values == theirs.iloc[:, :2].values).all()
    _same_up_to_sign(mine.iloc[:, 2:].values, theirs.iloc[:, 2:].values, atol=1e-5)

    key = ["ID", "A1"]
    mine = pd.read_csv(files[2], sep="\t").set_index(key)
    theirs = pd.read_csv(tmp_path / "pa.eigenvec.allele", sep="\t").set_index(key)
    theirs = theirs.loc[mine.index]  # PLINK also lists monomorphic variants (weight 0)
    assert (mine[["#CHROM", "REF", "ALT"]].values == theirs[["#CHROM", "REF", "ALT"]].values).all()
    _same_up_to_sign(mine.iloc[:, 3:].values, theirs.iloc[:, 3:].values, rtol=1e-4, atol=1e-5)

    xsvd.write_plink_pca(res, tmp_path / "xv", n_variants=w.attrs["n_variants"], loadings="var")
    mine = pd.read_csv(tmp_path / "xv.eigenvec.var", sep="\t").set_index("ID")
    theirs = pd.read_csv(tmp_path / "pv.eigenvec.var", sep="\t").set_index("ID").loc[mine.index]
    assert (mine[["MAJ", "NONMAJ"]].values == theirs[["MAJ", "NONMAJ"]].values).all()
    _same_up_to_sign(mine.iloc[:, 3:].values, theirs.iloc[:, 3:].values, rtol=1e-4, atol=1e-5)


@needs_plink2
def test_plink2_reads_the_eigenvec_as_covariates(cohort, tmp_path):
    ref, _, _, _, res = cohort
    xsvd.write_plink(ref, tmp_path / "ref")
    path = xsvd.write_eigenvec(res.U, tmp_path / "pcs.eigenvec")
    _plink2("--bfile", tmp_path / "ref", "--covar", path, "--write-covar", "--out", tmp_path / "c")
    cov = pd.read_csv(tmp_path / "c.cov", sep="\t", dtype={"#FID": str, "IID": str})
    assert list(cov.columns) == ["#FID", "IID", "PC1", "PC2", "PC3", "PC4"]
    assert list(cov.IID) == list(res.U.samples.values)
    np.testing.assert_allclose(cov.iloc[:, 2:].values, res.U.values, rtol=1e-5, atol=1e-9)


@needs_plink2
@pytest.mark.parametrize("loadings", ["allele", "var"])
def test_plink2_score_with_the_written_files_matches_the_projection(cohort, tmp_path, loadings):
    """New samples with missing calls and some alleles swapped in their .bim."""
    _, new, kept, w, res = cohort
    new = _with_missing(new, 0.03, seed=5)
    swap = np.arange(N_VARIANTS) % 9 == 0
    flipped = new.copy(data=np.where(swap[:, None], 2 - new.values, new.values))
    flipped = flipped.assign_coords(
        allele_1=("variants", np.where(swap, "A", "G")),
        allele_2=("variants", np.where(swap, "G", "A")),
    )
    xsvd.write_plink(flipped, tmp_path / "new")
    m = w.attrs["n_variants"]
    files = xsvd.write_plink_pca(res, tmp_path / "ref", n_variants=m, loadings=loadings)
    cols = ("2", "5", "6-9") if loadings == "allele" else ("2", "3", "5-8")
    _plink2(
        "--bfile", tmp_path / "new",
        "--read-freq", files[3],
        "--score", files[2], cols[0], cols[1], "header-read", "no-mean-imputation",
        "variance-standardize",
        "cols=+scoresums", "--score-col-nums", cols[2],
        "--out", tmp_path / "s",
    )  # fmt: skip
    score = pd.read_csv(tmp_path / "s.sscore", sep="\t", dtype={"#FID": str, "IID": str})
    sums = score[[f"PC{i + 1}_SUM" for i in range(K)]].values
    eigenval = np.loadtxt(files[1])
    plink_scores = sums / (m * np.sqrt(eigenval))

    bed = xsvd.open_plink(tmp_path / "new")  # packed, alleles swapped at every 9th variant
    ours = xsvd.project_samples(res, bed, shrinkage=False)
    assert list(score.IID) == list(ours.samples.values)
    np.testing.assert_allclose(plink_scores, ours.values, rtol=1e-4, atol=1e-6)


# ----------------------------------------------------------------- Tracy-Widom


def test_tw1_distribution_known_values():
    pytest.importorskip("scipy", reason="the Tracy-Widom distribution needs scipy")
    from xsvd.genomics.twstats import TW1_MEAN, TW1_VARIANCE, tw1_cdf, tw1_sf

    # percentiles of TW1 (Johnstone 2001, table 1, two decimals)
    probs = [0.01, 0.05, 0.10, 0.30, 0.50, 0.70, 0.90, 0.95, 0.99]
    points = [-3.90, -3.18, -2.78, -1.91, -1.27, -0.59, 0.45, 0.98, 2.02]
    np.testing.assert_allclose(tw1_cdf(points), probs, atol=0.0025)
    np.testing.assert_allclose(tw1_sf(points), 1 - np.array(probs), atol=0.0025)
    # mean and variance by quadrature of the distribution function
    x, wq = np.polynomial.legendre.leggauss(60)
    right, left = 8 * (x + 1), -5 * (x + 1)  # (0, 16) and (-10, 0)
    tail, head = tw1_sf(right), tw1_cdf(left)
    mean = 8 * wq @ tail - 5 * wq @ head
    second = 2 * 8 * wq @ (right * tail) + 2 * 5 * wq @ (-left * head)
    np.testing.assert_allclose(mean, TW1_MEAN, atol=1e-9)
    np.testing.assert_allclose(second - mean**2, TW1_VARIANCE, atol=1e-9)
    # the right tail keeps its relative accuracy (Ai's asymptotics: 1 - F1 ~ e^(-2s^1.5/3))
    s = np.array([20.0, 40.0])
    asymptote = np.exp(-2 * s**1.5 / 3) / (4 * np.sqrt(np.pi) * s**0.75)
    np.testing.assert_allclose(tw1_sf(s), asymptote, rtol=0.05)
    assert tw1_cdf(-np.inf) == 0 and tw1_cdf(np.inf) == 1 and np.isnan(tw1_cdf(np.nan))


def test_tw1_matches_largest_goe_eigenvalues():
    """The largest eigenvalue of GOE matrices (Dumitriu-Edelman tridiagonal model)."""
    linalg = pytest.importorskip("scipy.linalg", reason="the GOE simulation needs scipy")
    from xsvd.genomics.twstats import TW1_MEAN, TW1_VARIANCE, tw1_cdf

    rng = np.random.default_rng(0)
    n, reps = 400, 1_500
    df = np.arange(n - 1, 0, -1)
    top = np.empty(reps)
    for r in range(reps):
        diag = rng.standard_normal(n)
        off = np.sqrt(rng.chisquare(df) / 2)
        top[r] = linalg.eigvalsh_tridiagonal(diag, off, select="i", select_range=(n - 1, n - 1))[0]
    x = np.sqrt(2) * n ** (1 / 6) * (top - np.sqrt(2 * n))
    # tolerances of about 5 standard errors (plus the finite-n bias, ~0.01)
    assert abs(x.mean() - TW1_MEAN) < 0.17
    assert abs(x.var() - TW1_VARIANCE) < 0.35
    grid = np.array([-3.5, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 1.0, 2.0])
    empirical = (x[:, None] <= grid).mean(axis=0)
    np.testing.assert_allclose(empirical, tw1_cdf(grid), atol=0.06)


def test_twstats_finds_the_structure_components(cohort):
    pytest.importorskip("scipy", reason="the Tracy-Widom distribution needs scipy")
    ref, _, kept, w, res = cohort
    full = kept.svd.exact(dim="samples", center=True, weights=w)
    tw = xsvd.tracy_widom(full)
    assert tw.sizes["component"] == ref.sizes["samples"] - 1  # centered: one zero eigenvalue
    p = tw.p_value.values
    assert np.all(p[:2] < 1e-12) and np.all(p[2:6] > 0.01), p[:6]
    # n' beyond the structure: about the number of (unlinked) variants
    assert abs(tw.effective_n.values[2] / kept.sizes["variants"] - 1) < 0.1
    assert np.isnan(tw.p_value.values[-9:]).all()  # fewer than 10 eigenvalues left
    # the same from the eigenvalues alone (any scale, any order; the zero one dropped)
    eigenvalues = np.random.default_rng(0).permutation(full.S.values**2 / 7.0)
    again = xsvd.tracy_widom(eigenvalues)
    np.testing.assert_allclose(again.statistic, tw.statistic, rtol=1e-8)
    # the leading components only: every eigenvalue of the data is needed
    with pytest.raises(ValueError, match="relationship_eigenvalues"):
        xsvd.tracy_widom(res)
    lam = xsvd.genomics.relationship_eigenvalues(kept, w)  # what the error advises
    np.testing.assert_allclose(xsvd.tracy_widom(lam).statistic, tw.statistic, rtol=1e-8)
    fixed = xsvd.tracy_widom(res, n_variants=kept.sizes["variants"])
    assert fixed.sizes["component"] == K and np.all(fixed.effective_n == kept.sizes["variants"])
    both = xsvd.tracy_widom(full, n_variants=kept.sizes["variants"])
    np.testing.assert_allclose(fixed.statistic, both.statistic[:K], rtol=1e-6)
    assert np.all(fixed.p_value[:2] < 1e-12) and np.all(fixed.p_value[2:] > 0.01)


def test_twstats_on_pure_noise_is_not_significant():
    """One population, no structure: the eigenvalues of the relationship matrix."""
    pytest.importorskip("scipy", reason="the Tracy-Widom distribution needs scipy")
    first = []
    for seed in range(30):
        gt = xsvd.datasets.genotypes(1_000, 100, n_populations=1, seed=100 + seed).values
        gt = gt[(gt.min(axis=1) < gt.max(axis=1))].astype(np.float64)  # polymorphic
        p = gt.mean(axis=1, keepdims=True) / 2
        z = (gt - 2 * p) / np.sqrt(2 * p * (1 - p))
        eigenvalues = np.linalg.eigvalsh(z.T @ z / z.shape[0])  # any order, one zero
        tw = xsvd.tracy_widom(eigenvalues)
        assert tw.sizes["component"] == 99
        first.append(float(tw.p_value[0]))
    first = np.array(first)
    # p-values of the first component are about uniform: loose bounds, far from chance
    assert (first < 0.05).mean() <= 0.2 and 0.3 < first.mean() < 0.7, first.round(3)
    assert first.min() > 1e-4
