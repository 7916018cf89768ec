"""Projection by online augmentation, decomposition and Procrustes (``method="oadp"``).

Held-out samples of simulated populations are projected on the PCs of the
others and compared with the gold standard of Zhang, Dey & Lee (2020): the
exact augmentation (ADP), each held-out sample added to the whole reference,
the PCA of the augmented set from its Gram matrix, and the Procrustes map of
its top ``2 k`` PCs onto the reference's ``k``, written out here in ``n``
dimensions as FRAPOSA writes it. The *slope* of a PC is the least-squares
slope of the projected scores on the gold standard's: 1 when nothing is
shrunk.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd

K = 10  # components of the reference PCA


# ------------------------------------------------------------- FRAPOSA in n dims


def _procrustes(Y, X):
    """Rotation, scale and shift taking X (n x k2) closest to Y (n x k2)."""
    Xm, Ym = X.mean(axis=0), Y.mean(axis=0)
    u, s, vt = np.linalg.svd((Y - Ym).T @ (X - Xm))
    R = vt.T @ u.T
    rho = s.sum() / ((X - Xm) ** 2).sum()
    return R, rho, Ym - rho * Xm @ R


def _procrustes_diffdim(Y, X):
    """FRAPOSA's procrustes_diffdim: Y (n x k) padded with columns that follow the fit."""
    Z = np.zeros((X.shape[0], X.shape[1] - Y.shape[1]))
    for _ in range(10_000):
        R, rho, c = _procrustes(np.hstack([Y, Z]), X)
        if Z.shape[1] == 0:
            break
        fitted = (X @ R * rho + c)[:, Y.shape[1] :]
        done = ((fitted - Z) ** 2).sum() / ((fitted - fitted.mean(axis=0)) ** 2).sum() < 1e-6
        Z = fitted
        if done:
            break
    return R, rho, c


def _fit_new(ref_scores, augmented):
    """The last row of ``augmented`` (n + 1 x k2) mapped as its first n rows fit ``ref_scores``."""
    R, rho, c = _procrustes_diffdim(ref_scores, augmented[:-1])
    return (augmented[-1] @ R * rho + c)[: ref_scores.shape[1]]


def _adp(X, Y, k):
    """Exact ADP of new samples Y (m x p) on reference X (n x p), on the scale of U."""
    n = X.shape[0]
    gram = X @ X.T
    ev, vec = np.linalg.eigh(gram)
    s = np.sqrt(np.maximum(ev[::-1][:k], 0))
    ref = vec[:, ::-1][:, :k] * s
    aug = np.zeros((n + 1, n + 1))
    aug[:n, :n] = gram
    out = []
    for y, cross in zip(Y, (X @ Y.T).T, strict=True):
        aug[:n, n] = aug[n, :n] = cross
        aug[n, n] = y @ y
        e, v = np.linalg.eigh(aug)
        out.append(_fit_new(ref, v[:, ::-1][:, : 2 * k] * np.sqrt(np.maximum(e[::-1][: 2 * k], 0))))
    return np.array(out) / s


def _oadp_n_dims(U, S, V, y, k, k2):
    """FRAPOSA's oadp (svd_online + procrustes_diffdim), with the reference's n samples."""
    n, Kr = U.shape
    L = V @ y
    Q = np.zeros((Kr + 1, Kr + 1))
    Q[:Kr, :Kr] = np.diag(S)
    Q[:Kr, Kr] = L
    Q[Kr, Kr] = np.sqrt(max(y @ y - L @ L, 0))
    _, d, rt = np.linalg.svd(Q)
    basis = np.zeros((n + 1, Kr + 1))
    basis[:n, :Kr] = U
    basis[n, Kr] = 1
    return _fit_new(U[:, :k] * S[:k], (basis @ rt.T)[:, :k2] * d[:k2]) / S[:k]


# ------------------------------------------------------------------- the data


def _populations(n_variants, n_samples, *, ld, fst, seed):
    """Allele counts (variants x samples) of 3 populations (Balding-Nichols).

    ``ld``: SNPs in blocks of 20 adjacent ones, each block a mosaic of 4
    haplotypes whose frequencies differ by population, plus two long LD
    regions (300 SNPs, two haplotypes, as an inversion) that make PCs 3 and
    4 of their own, as long-range LD does in unpruned data.
    """
    rng = np.random.default_rng(seed)
    pop = np.arange(n_samples) % 3
    scale = (1 - fst) / fst
    if not ld:
        anc = rng.uniform(0.05, 0.95, (n_variants, 1))
        f = rng.beta(anc * scale, (1 - anc) * scale, size=(n_variants, 3))[:, pop]
        return (rng.random(f.shape) < f).astype(np.uint8) + (rng.random(f.shape) < f)
    blocks = [_block(rng, pop, 20, 4, scale, 0.02) for _ in range(n_variants // 20)]
    return np.concatenate(blocks + [_block(rng, pop, 300, 2, scale, 0.05) for _ in range(2)])


def _block(rng, pop, length, n_hap, scale, change):
    templates = rng.random((n_hap, length)) < rng.uniform(0.05, 0.95, length)
    base = rng.dirichlet(np.full(n_hap, 2.0))
    freqs = np.stack([rng.dirichlet(base * scale) for _ in range(3)])[pop]
    counts = np.zeros((length, pop.size), np.uint8)
    for _ in range(2):
        u = rng.random((pop.size, 1))
        hap = np.minimum((u > np.cumsum(freqs, axis=1)).sum(axis=1), n_hap - 1)
        counts += templates[hap].T ^ (rng.random((length, pop.size)) < change)
    return counts


def _split(g, *, seed=1):
    """Reference and held-out (a sixth) samples, on the reference's SNPs of MAF >= 5 %."""
    gt = xr.DataArray(g, dims=("variants", "samples"))
    gt = gt.assign_coords(samples=[f"s{i}" for i in range(g.shape[1])])
    held = np.zeros(g.shape[1], bool)
    held[np.random.default_rng(seed).choice(g.shape[1], g.shape[1] // 6, replace=False)] = True
    freq = g[:, ~held].mean(axis=1) / 2
    gt = gt.isel(variants=np.flatnonzero((freq >= 0.05) & (freq <= 0.95)))
    return gt.isel(samples=~held), gt.isel(samples=held)


def _standardized(res, w, gt):
    """The PCA's rows (samples x variants) for genotypes ``gt``: centered and weighted."""
    return (gt.values.T - res.mean.values) * w.values


def _slopes(est, gold):
    return np.array(
        [np.cov(gold[:, j], est[:, j])[0, 1] / np.var(gold[:, j], ddof=1) for j in range(4)]
    )


def _aligned(gold, plain):
    """``gold`` with each PC's sign that of the reference PCA (the plain projection's)."""
    return gold * np.sign((gold * plain[:, : gold.shape[1]]).sum(axis=0))


@pytest.fixture(scope="module")
def unpruned():
    """3 populations in LD blocks with 2 long LD regions: PCs 1-4 carry structure."""
    ref, new = _split(_populations(6_000, 300, ld=True, fst=0.05, seed=2))
    kept, w = xsvd.patterson_scaling(ref)
    res = kept.svd.exact(k=K, dim="samples", center=True, weights=w)
    plain = xsvd.project_samples(res, new, shrinkage=False).values
    gold = _aligned(_adp(_standardized(res, w, kept), _standardized(res, w, new), 4), plain)
    return kept, new, w, res, gold


# --------------------------------------------------------------------- tests


def test_held_out_slopes_are_within_5_percent_of_1_on_pcs_1_to_4(unpruned):
    kept, new, w, res, gold = unpruned
    oadp = xsvd.project_samples(res, new, method="oadp", k=4)
    assert oadp.dims == ("samples", "component") and oadp.sizes["component"] == 4
    assert list(oadp.samples.values) == list(new.samples.values)
    assert oadp.attrs["method"] == "oadp" and oadp.attrs["k_augmented"] == 8
    slopes = _slopes(oadp.values, gold)
    np.testing.assert_allclose(slopes, 1, atol=0.05)
    # the plain projection is shrunk on every one of them: the slopes can fail
    plain = xsvd.project_samples(res, new, shrinkage=False).values
    assert (_slopes(plain, gold) < 0.92).all()
    # all 10 components, each augmented PCA's top 10 fitted onto them
    every = xsvd.project_samples(res, new, method="oadp")
    assert every.sizes["component"] == K and every.attrs["k_augmented"] == K
    np.testing.assert_allclose(_slopes(every.values, gold), 1, atol=0.05)


def test_pruned_like_structure_pcs_are_not_shrunk():
    ref, new = _split(_populations(4_000, 240, ld=False, fst=0.02, seed=3))
    kept, w = xsvd.patterson_scaling(ref)
    res = kept.svd.exact(k=K, dim="samples", center=True, weights=w)
    plain = xsvd.project_samples(res, new, shrinkage=False).values
    gold = _aligned(_adp(_standardized(res, w, kept), _standardized(res, w, new), 2), plain)
    oadp = xsvd.project_samples(res, new, method="oadp", k=2).values
    slopes = [np.cov(gold[:, j], oadp[:, j])[0, 1] / np.var(gold[:, j], ddof=1) for j in (0, 1)]
    np.testing.assert_allclose(slopes, 1, atol=0.02)
    assert (np.std(plain[:, :2], axis=0) < 0.9 * np.std(oadp, axis=0)).all()


def test_same_numbers_as_fraposa_in_n_dimensions():
    """The K-dimensional arithmetic is FRAPOSA's oadp, which works with all n reference rows."""
    ref, new = _split(_populations(1_500, 120, ld=False, fst=0.05, seed=4))
    kept, w = xsvd.patterson_scaling(ref)
    res = kept.svd.exact(k=8, dim="samples", center=True, weights=w)
    U, S, V = res.U.values, res.S.values, res.V.values
    Y = _standardized(res, w, new)
    for k, k2 in [(3, 6), (4, 4), (2, 8)]:
        ours = xsvd.project_samples(res, new, method="oadp", k=k, k_augmented=k2).values
        theirs = np.array([_oadp_n_dims(U, S, V, y, k, k2) for y in Y])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_with_every_component_it_is_the_exact_augmentation():
    """OADP leaves out the reference's components beyond K: with all of them, it is ADP."""
    ref, new = _split(_populations(800, 60, ld=False, fst=0.05, seed=5))
    kept, w = xsvd.patterson_scaling(ref)
    full = kept.svd.exact(dim="samples", center=True, weights=w)  # all n components
    ours = xsvd.project_samples(full, new, method="oadp", k=3, k_augmented=6).values
    gold = _adp(_standardized(full, w, kept), _standardized(full, w, new), 3)
    np.testing.assert_allclose(ours, _aligned(gold, ours), rtol=1e-7, atol=1e-10)


def test_dask_packed_and_plink_inputs_give_the_same_scores(unpruned, tmp_path):
    kept, new, w, res, _ = unpruned
    expected = xsvd.project_samples(res, new, method="oadp", k=4).values
    lazy = xsvd.project_samples(res, new.chunk(variants=1_000, samples=20), method="oadp", k=4)
    assert lazy.chunks is not None  # lazy for Dask data: one pass when computed
    np.testing.assert_allclose(lazy.values, expected, rtol=1e-10, atol=1e-13)
    packed = xsvd.pack_genotypes(new)
    np.testing.assert_allclose(
        xsvd.project_samples(res, packed, method="oadp", k=4).values, expected, rtol=1e-10
    )
    labeled = new.assign_coords(variants=[f"rs{i}" for i in new.variants.values])
    xsvd.write_plink(labeled, tmp_path / "new")
    bed = xsvd.open_plink(tmp_path / "new", chunks=700)  # Dask chunks of packed bytes
    ref_labeled = kept.assign_coords(variants=labeled.variants.values)
    res_labeled = ref_labeled.svd.exact(
        k=K, dim="samples", center=True, weights=w.assign_coords(variants=labeled.variants.values)
    )
    scores = xsvd.project_samples(res_labeled, bed, method="oadp", k=4)
    np.testing.assert_allclose(np.abs(scores.values), np.abs(expected), rtol=1e-8, atol=1e-12)


def test_missing_calls_stand_for_the_reference_mean(unpruned):
    _, new, _, res, _ = unpruned
    values = new.values.astype(np.float64)
    gaps = np.random.default_rng(7).random(values.shape) < 0.05
    values[gaps] = np.nan
    gappy = new.copy(data=values)
    filled = new.copy(data=np.where(gaps, res.mean.values[:, None], values))
    np.testing.assert_allclose(
        xsvd.project_samples(res, gappy, method="oadp", k=4).values,
        xsvd.project_samples(res, filled, method="oadp", k=4).values,
        rtol=1e-10,
    )
    coded = new.copy(data=np.where(gaps, -1, new.values).astype(np.int8))  # -1: missing call
    np.testing.assert_allclose(
        xsvd.project_samples(res, coded, method="oadp", k=4).values,
        xsvd.project_samples(res, gappy, method="oadp", k=4).values,
        rtol=1e-10,
    )


def test_k_selects_components_for_both_methods(unpruned):
    _, new, _, res, _ = unpruned
    lzw = xsvd.project_samples(res, new)
    first = xsvd.project_samples(res, new, k=3)
    assert list(first.component.values) == [1, 2, 3] and first.attrs["method"] == "lzw"
    np.testing.assert_allclose(first.values, lzw.values[:, :3])
    np.testing.assert_allclose(first.shrinkage, lzw.shrinkage[:3])


def test_errors_say_what_to_pass(unpruned):
    _, new, _, res, _ = unpruned
    with pytest.raises(ValueError, match="method must be 'lzw'"):
        xsvd.project_samples(res, new, method="adp")
    with pytest.raises(ValueError, match="shrinkage= applies to method='lzw'"):
        xsvd.project_samples(res, new, method="oadp", shrinkage=False)
    with pytest.raises(ValueError, match="k=11 is more than"):
        xsvd.project_samples(res, new, method="oadp", k=11)
    with pytest.raises(ValueError, match="k must be an integer from 1"):
        xsvd.project_samples(res, new, method="oadp", k=0)
    with pytest.raises(ValueError, match="k_augmented must be an integer from 4"):
        xsvd.project_samples(res, new, method="oadp", k=4, k_augmented=3)
    with pytest.raises(ValueError, match="k_augmented=11 is more than"):
        xsvd.project_samples(res, new, method="oadp", k=4, k_augmented=11)
    with pytest.raises(ValueError, match="k_augmented applies to method='oadp'"):
        xsvd.project_samples(res, new, k_augmented=8)
