"""``xsvd.tracy_widom`` against EIGENSOFT's own ``twstats`` program on the same eigenvalues.

``.ci/run`` installs EIGENSOFT (the Debian package ``eigensoft``); elsewhere these
tests skip unless ``twstats`` is on PATH. ``twstats`` prints the statistic with 3
decimals, the p-value with 6 significant digits and the effective number of
markers with 3 decimals, so agreement is checked to those precisions (far inside
the 1e-3 on p-values that is asked of the port).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xsvd

pytest.importorskip("scipy", reason="the Tracy-Widom distribution needs scipy")
pytestmark = pytest.mark.skipif(
    shutil.which("twstats") is None,
    reason="EIGENSOFT's twstats is not on PATH (Debian/Ubuntu: apt-get install eigensoft; "
    ".ci/run installs it)",
)

#: Where the Debian package puts the table; twstats 8.0.0 has it compiled in as well.
TWTABLES = ("/usr/share/eigensoft/POPGEN/twtable", "/usr/share/eigensoft/twtable")
ALPHA = 0.05


def run_twstats(eigenvalues, workdir: Path, *, n_markers: float | None = None) -> np.ndarray:
    """``twstats`` on ``eigenvalues``: rows of (statistic, p-value, effective n), NaN for NA."""
    path = workdir / "eigenvalues.eval"
    np.savetxt(path, np.asarray(eigenvalues, dtype=np.float64), fmt="%.17g")
    cmd = ["twstats", "-i", str(path), "-o", str(workdir / "tw.out")]
    cmd += next((["-t", t] for t in TWTABLES if Path(t).exists()), [])
    if n_markers is not None:
        cmd += ["-n", str(n_markers)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    lines = (workdir / "tw.out").read_text().splitlines()
    assert lines[0].split()[-3:] == ["p-value", "effect.", "n"], lines[0]
    # the eigenvalue and difference columns can run together: read the last three
    return np.array(
        [[np.nan if t == "NA" else float(t) for t in line.split()[-3:]] for line in lines[1:]]
    )


@functools.cache
def full_pca(n_populations: int, fst: float, seed: int):
    """Every component of the Patterson-scaled PCA of 3,000 variants x 150 samples."""
    gt = xsvd.datasets.genotypes(3_000, 150, n_populations=n_populations, fst=fst, seed=seed)
    kept, w = xsvd.patterson_scaling(gt)
    return kept, w, kept.svd.exact(dim="samples", center=True, weights=w)


def leading_significant(p: np.ndarray, alpha: float = ALPHA) -> int:
    """How many leading components have p < alpha (the number of PCs EIGENSOFT users report)."""
    return int(np.argmin(np.append(np.nan_to_num(p, nan=1.0) < alpha, False)))


def assert_agrees(tw, ref: np.ndarray) -> None:
    """xsvd's Dataset against twstats' rows: every number to twstats' printed precision."""
    k = tw.sizes["component"]
    assert ref.shape[0] >= k
    stat, p, n_eff = ref[:k].T
    tested = np.isfinite(tw.p_value.values)
    np.testing.assert_array_equal(tested, np.isfinite(p))  # the same tests are made
    np.testing.assert_allclose(tw.statistic.values[tested], stat[tested], rtol=0, atol=6e-4)
    np.testing.assert_allclose(tw.p_value.values[tested], p[tested], rtol=0, atol=1e-5)
    np.testing.assert_allclose(tw.effective_n.values[tested], n_eff[tested], rtol=1e-5)
    np.testing.assert_array_equal(tw.p_value.values[tested] < ALPHA, p[tested] < ALPHA)
    assert leading_significant(tw.p_value.values) == leading_significant(p)


@pytest.mark.parametrize(
    ("n_populations", "fst", "expected"),
    [(3, 0.01, 2), (5, 0.01, 4), (1, 0.05, 0)],
    ids=["3 populations", "5 populations", "1 population (noise)"],
)
def test_tracy_widom_matches_twstats(tmp_path, n_populations, fst, expected):
    kept, _, res = full_pca(n_populations, fst, 7)
    tw = xsvd.tracy_widom(res)
    ref = run_twstats(res.S.values**2, tmp_path)  # any scale: twstats normalizes
    assert_agrees(tw, ref)
    assert leading_significant(tw.p_value.values) == expected
    # the effective number of markers beyond the structure: about the number of variants
    assert abs(tw.effective_n.values[expected] / kept.sizes["variants"] - 1) < 0.1
    # on smartpca's scale (mean 1, 6 decimals as in its .eval) the same, and close to the above
    evr = np.round(res.explained_variance_ratio.values * tw.attrs["n_eigenvalues"], 6)
    rounded = xsvd.tracy_widom(evr)
    assert_agrees(rounded, run_twstats(evr, tmp_path))
    np.testing.assert_allclose(rounded.p_value, tw.p_value, atol=1e-3)


@pytest.mark.parametrize(("n_features", "n_samples"), [(2_000, 100), (120, 200)])
def test_gaussian_noise_matches_twstats(tmp_path, n_features, n_samples):
    """Pure noise, with more markers than samples and fewer (Johnstone's n and m swap)."""
    rng = np.random.default_rng(n_features)
    noise = xr.DataArray(rng.standard_normal((n_features, n_samples)), dims=("f", "s"))
    res = noise.svd.exact(dim="s", center=True)
    tw = xsvd.tracy_widom(res)
    assert tw.sizes["component"] == min(n_features, n_samples - 1)
    assert_agrees(tw, run_twstats(res.S.values**2, tmp_path))
    assert leading_significant(tw.p_value.values) == 0
    # n' estimates the longer dimension: the markers, or the samples when they are fewer
    longer = max(n_features, n_samples - 1)
    assert abs(tw.effective_n.values[0] / longer - 1) < 0.1


def test_fixed_number_of_markers_matches_twstats_n(tmp_path):
    """``n_variants=`` (a result with the leading components only, Dask-backed) is ``-n``."""
    kept, w, full = full_pca(5, 0.01, 7)
    leading = kept.chunk(variants=1_000).svd.exact(k=8, dim="samples", center=True, weights=w)
    n = kept.sizes["variants"]
    ref = run_twstats(full.S.values**2, tmp_path, n_markers=n)
    tw = xsvd.tracy_widom(leading, n_variants=n)
    assert tw.sizes["component"] == 8
    assert_agrees(tw, ref)
    assert leading_significant(tw.p_value.values) == 4


def test_eigensoft_example_matches(tmp_path):
    """EIGENSOFT's own example spectrum, as it ships (twexample.eval, 149 eigenvalues)."""
    example = Path("/usr/share/eigensoft/POPGEN/twexample.eval")
    if not example.exists():
        pytest.skip("the eigensoft package's example files are not installed")
    eigenvalues = np.loadtxt(example)
    tw = xsvd.tracy_widom(eigenvalues)
    ref = run_twstats(eigenvalues, tmp_path)
    assert_agrees(tw, ref)
    assert leading_significant(ref[:, 1]) == 2


def test_right_tail_beyond_the_table(tmp_path):
    """Past TW = 8, the end of its table, twstats returns the asymptotic TW1 *density*
    ``s**-1/4 exp(-2 s**1.5 / 3) / (4 sqrt(pi))`` as the p-value, sqrt(s) times the
    asymptotic tail; xsvd computes the tail itself. Both are far below any threshold."""
    _, _, res = full_pca(3, 0.01, 7)
    tw = xsvd.tracy_widom(res)
    ref = run_twstats(res.S.values**2, tmp_path)
    s = tw.statistic.values[:2]
    assert np.all(s > 8) and np.all(ref[:2, 1] > 0)
    density = s**-0.25 * np.exp(-2 * s**1.5 / 3) / (4 * np.sqrt(np.pi))
    np.testing.assert_allclose(ref[:2, 1], density, rtol=0.01)  # s printed to 3 decimals
    np.testing.assert_allclose(ref[:2, 1] / tw.p_value.values[:2], np.sqrt(s), rtol=0.02)


SMARTPCA = "/usr/lib/eigensoft/smartpca"  # Debian's program (the smartpca on PATH is a script)


@pytest.mark.skipif(not Path(SMARTPCA).exists(), reason="EIGENSOFT's smartpca is not installed")
@pytest.mark.parametrize(("n_variants", "n_samples", "expected"), [(1_500, 200, 3), (150, 240, 2)])
def test_relationship_eigenvalues_match_smartpca(tmp_path, n_variants, n_samples, expected):
    """Every eigenvalue from the Gram matrix (no SVD), then the test: smartpca's own table
    (statistic, p-value, effective n), with missing calls; more markers than samples and
    fewer (where n' estimates the samples)."""
    gt = xsvd.datasets.genotypes(n_variants, n_samples, n_populations=4, fst=0.02, seed=5)
    values = gt.values.astype(np.float32)
    values[np.random.default_rng(0).random(values.shape) < 0.01] = np.nan
    gt = gt.copy(data=values).assign_coords(
        variants=[f"rs{i}" for i in range(n_variants)],
        chrom=("variants", np.full(n_variants, "1")),  # smartpca ignores chromosome 0
        position=("variants", 1 + 1000 * np.arange(n_variants)),
    )
    xsvd.write_plink(gt, tmp_path / "toy")
    par = tmp_path / "sp.par"
    par.write_text(
        "".join(f"{key}: {tmp_path / name}\n" for key, name in [
            ("genotypename", "toy.bed"), ("snpname", "toy.bim"), ("indivname", "toy.fam"),
            ("evecoutname", "sp.evec"), ("evaloutname", "sp.eval"),
        ]) + "numoutevec: 10\nnumoutlieriter: 0\nnumthreads: 1\n"
    )  # fmt: skip
    log = subprocess.run([SMARTPCA, "-p", str(par)], capture_output=True, text=True, timeout=300)
    lines = log.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Tracy-Widom"))
    rows = [line for line in lines[start + 2 :] if line.split() and line.split()[0].isdigit()]
    table = np.array([[float(t) for t in line.split()[-3:]] for line in rows[:10]])

    kept, w = xsvd.patterson_scaling(xsvd.open_plink(tmp_path / "toy"))
    lam = xsvd.genomics.relationship_eigenvalues(kept, w, missing="mean")
    assert lam.sizes["component"] == n_samples
    smartpca_eval = np.loadtxt(tmp_path / "sp.eval")  # scaled to sum n_samples - 1
    np.testing.assert_allclose(
        lam.values[:10] * (n_samples - 1) / lam.values.sum(), smartpca_eval[:10], atol=2e-6
    )
    tw = xsvd.tracy_widom(lam)
    assert_agrees(tw.isel(component=slice(0, len(table))), table)
    assert leading_significant(tw.p_value.values) == expected  # 3 axes of 4 populations
