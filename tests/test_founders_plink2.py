"""``center=2 * w.allele_frequency`` is PLINK 2's ``--pca``, founders or not.

PLINK 2 takes the allele frequencies from the founders (no parent in the
``.fam``) unless given ``--nonfounders``, and centers every sample, founder or
not, at ``2 p``; ``--pca meanimpute`` fills a missing call with ``2 p`` too.
``xsvd.patterson_scaling`` takes the same frequencies, and ``center=`` the
values they give; checked here against ``plink2`` itself (skipped where it is not
installed), on packed data in memory and on Dask, in both stripe orientations.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import xarray as xr

import xsvd

needs_plink2 = pytest.mark.skipif(shutil.which("plink2") is None, reason="plink2 is not installed")

K = 5


def _pedigree(n_variants: int, missing: float, seed: int = 0) -> xr.DataArray:
    """90 founders of three populations and 45 children of two founders each; variants
    polymorphic among the founders (PLINK 2 refuses a PCA where a variant monomorphic in
    the founders is not in the others); ``missing`` of the calls missing."""
    rng = np.random.default_rng(seed)
    n_f, n_c = 90, 45
    gt = xsvd.datasets.genotypes(3 * n_variants, n_f, n_populations=3, fst=0.05, seed=seed)
    g, pop = gt.values.astype(np.float64), gt.population.values
    p = g.mean(axis=1) / 2
    g = g[(p > 0.05) & (p < 0.95)][:n_variants]
    parents = [rng.choice(np.flatnonzero(pop == q), 2, replace=False) for q in pop[:n_c]]
    kids = [rng.binomial(1, g[:, a] / 2) + rng.binomial(1, g[:, b] / 2) for a, b in parents]
    values = np.concatenate([g, np.stack(kids, axis=1)], axis=1)
    values[rng.random(values.shape) < missing] = np.nan
    ids = [f"F{i}" for i in range(n_f)] + [f"C{i}" for i in range(n_c)]
    father = ["0"] * n_f + [f"F{a}" for a, _ in parents]
    mother = ["0"] * n_f + [f"F{b}" for _, b in parents]
    return xr.DataArray(
        values,
        dims=("variants", "samples"),
        coords={
            "variants": [f"v{i}" for i in range(values.shape[0])],
            "samples": ids,
            "father_id": ("samples", father),
            "mother_id": ("samples", mother),
        },
    )


def _plink2_pca(prefix, out, *args) -> tuple[np.ndarray, np.ndarray]:
    cmd = ["plink2", "--bfile", str(prefix), "--pca", str(K), *args, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    eigenval = np.loadtxt(f"{out}.eigenval")
    eigenvec = np.loadtxt(f"{out}.eigenvec", usecols=range(2, 2 + K))
    return eigenval, eigenvec


@pytest.fixture(scope="module", params=[(1_200, "features"), (100, "samples")], ids=str)
def plink_runs(request, tmp_path_factory):
    """File sets with and without missing calls, and PLINK 2's PCAs of each:
    ``--pca`` and ``--pca meanimpute``, founders' frequencies or ``--nonfounders``."""
    n_variants, stripes = request.param
    folder = tmp_path_factory.mktemp("founders")
    runs = {}
    for missing, mode in ((0.0, ()), (0.02, ("meanimpute",))):
        prefix = folder / f"p{missing}"
        xsvd.write_plink(_pedigree(n_variants, missing), prefix)
        for founders, extra in ((None, ()), (False, ("--nonfounders",))):
            out = folder / f"o{missing}{founders}"
            runs[missing, founders] = prefix, _plink2_pca(prefix, out, *mode, *extra)
    return stripes, runs


def _assert_as_plink2(res, w, plink, rtol):
    eigenval, eigenvec = plink
    np.testing.assert_allclose(res.S.values**2 / w.attrs["n_variants"], eigenval, rtol=rtol)
    U = res.U.transpose("samples", "component").values
    np.testing.assert_allclose(np.abs(U), np.abs(eigenvec), atol=2e-6)


@needs_plink2
@pytest.mark.parametrize("missing", [0.0, 0.02], ids=["pca", "meanimpute"])
@pytest.mark.parametrize("founders", [None, False], ids=["founders", "nonfounders"])
@pytest.mark.parametrize("packed", ["dask", "memory"])
def test_center_at_2p_is_plink2_pca(plink_runs, missing, founders, packed):
    stripes, runs = plink_runs
    prefix, plink = runs[missing, founders]
    gt = xsvd.open_plink(prefix, chunks=400)  # packed, on Dask: stripes of variants
    if packed == "memory":  # the shorter side whole
        gt = xsvd.pack_genotypes(gt.compute())
    kept, w = xsvd.patterson_scaling(gt, founders=founders)
    if packed == "dask" and stripes == "samples":  # packed chunks of samples
        kept = kept.chunk({"samples": 45, "variants": -1})
    assert w.attrs["frequencies_from"] == ("founders" if founders is None else "all samples")
    center = 2 * w.allele_frequency
    kw = dict(center=center, weights=w, missing="mean")
    if packed == "memory":  # (the exact SVD of Dask data: a TSQR, slow here)
        _assert_as_plink2(kept.svd.exact(k=K, **kw), w, plink, rtol=2e-6)
        # center=True removes the mean of every sample: --nonfounders only
        plain = kept.svd.exact(k=K, center=True, weights=w, missing="mean")
        if founders is False:
            _assert_as_plink2(plain, w, plink, rtol=2e-6)
        else:
            eigenval = plain.S.values**2 / w.attrs["n_variants"]
            assert np.abs(eigenval / plink[0] - 1).max() > 1e-4
    res = kept.svd.compressed(k=K, n_power_iter=12, seed=0, **kw)
    assert res.settings["center"] == "given"
    assert res.settings["stripes"] == stripes
    _assert_as_plink2(res, w, plink, rtol=2e-6)
