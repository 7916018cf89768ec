"""New samples on the PCs of reference samples, without the shrinkage of plain projection.

:func:`project_samples` centers and weights new genotypes as the reference
was, matching variants by id and flipping swapped alleles, and undoes the
shrinkage of projected scores either by the asymptotic factors of
:func:`shrinkage_factors` (Lee, Zou & Wright 2010; ``method="lzw"``) or by
online augmentation, decomposition and Procrustes (Zhang, Dey & Lee 2020;
``method="oadp"``, the arithmetic in :mod:`~xsvd.genomics.oadp`).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import xarray as xr

from ..core import backend
from . import oadp
from .plink import BED_CHUNK_BYTES
from .results import host_values, spectrum, variant_dim
from .scaling import select_variants

__all__ = ["project_samples", "shrinkage_factors"]


def shrinkage_factors(res) -> xr.DataArray:
    """How much projecting new samples shrinks each component's scores (Lee, Zou & Wright 2010).

    The PCs of ``n`` reference samples with ``p`` variants fit the reference
    samples' own noise; a new sample's projection onto them is shrunk
    towards 0, by an asymptotic factor that Lee, Zou & Wright (2010) derive
    for the spiked covariance model (a few population eigenvalues ``lambda``
    above a noise level ``sigma**2``, ``gamma = p / n``)::

        rho_k = (lambda_k - sigma**2) / (lambda_k - sigma**2 + gamma sigma**2)

    ``lambda_k`` is estimated from the sample eigenvalue ``d_k`` (the
    variance of component ``k`` of the reference samples) by inverting
    ``d = lambda (1 + gamma sigma**2 / (lambda - sigma**2))``, which holds
    for ``d`` above the noise edge ``sigma**2 (1 + sqrt(gamma))**2``; and
    ``sigma**2`` from the total variance less the components above that
    edge, ``(trace - sum lambda_k) / (p - m)``, the two estimated together
    (iterated to a fixed point). ``rho_k`` is the ratio of the expected
    spread (root mean square) of a new sample's score to a reference
    sample's; for components at or below the edge (noise) that ratio is
    ``sqrt(sigma**2 / d_k)``, which meets the formula above at the edge. A
    component counts as above the edge when it clears the 99th percentile
    of the largest noise eigenvalue's Tracy-Widom fluctuation (Johnstone
    2001), so that noise components are not taken for weak structure.

    The model assumes independent noise of one variance across variants:
    LD-prune the variants (as for the PCA itself). Dey & Lee (2019) extend
    it to correlated noise.

    Parameters
    ----------
    res : SVDResult
        A centered PCA of the reference samples, samples along ``U``.

    Returns
    -------
    xarray.DataArray
        Along ``component``: the factors ``rho_k`` (between 0 and 1 for the
        structure components); divide projected scores by them. They live
        where the result's ``S`` lives (NumPy, or the result's device, moved
        there once: the ``k`` numbers are computed on the host), so that
        device scores divide by them. Attributes: the noise variance (over
        the trace), ``gamma`` and the number of components above the noise
        edge.

    References
    ----------
    S. Lee, F. Zou and F. A. Wright, "Convergence and prediction of principal
    component scores in high-dimensional settings", Ann. Statist. 38 (2010)
    3605-3629. R. Dey and S. Lee, "Asymptotic properties of principal
    component analysis and shrinkage-bias adjustment under the generalized
    spiked population model", J. Multivariate Anal. 173 (2019) 145-164.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=200, fst=0.02)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> res = kept.svd.exact(k=4, dim="samples", center=True, weights=w)
    >>> xsvd.shrinkage_factors(res).values.round(2)
    array([0.74, 0.72, 0.24, 0.24])
    """
    host = _shrinkage(res)
    return host.copy(data=backend.transfer(host.values, like=res.S.data))


def _shrinkage(res) -> xr.DataArray:
    """:func:`shrinkage_factors` of ``res``, plain NumPy numbers on the host."""
    k, n, p, ratios = spectrum(res)
    dof = n - 1 if res.center else n
    if dof < 2 or p < k + 1:
        raise ValueError(
            f"Shrinkage factors need more samples and variants than components; the result "
            f"has {n} samples, {p} variants and {k} components."
        )
    gamma = p / dof
    # the largest noise eigenvalue is about sigma2 (1 + sqrt(gamma))**2, give or take its
    # Tracy-Widom fluctuation (Johnstone 2001); a spike must clear its 99th percentile
    root = np.sqrt(dof) + np.sqrt(p)
    spread = root * (1 / np.sqrt(dof) + 1 / np.sqrt(p)) ** (1 / 3)
    edge = (root**2 + _TW1_99 * spread) / dof
    d = ratios  # the sample eigenvalues, as fractions of the trace
    sigma2 = 1.0 / p
    lam = np.full(k, np.nan)
    spike = np.zeros(k, dtype=bool)
    for _ in range(200):
        spike = d > sigma2 * edge
        lam = np.where(spike, _population_eigenvalue(d, sigma2, gamma), np.nan)
        new = (1.0 - lam[spike].sum()) / (p - spike.sum())
        done = abs(new - sigma2) <= 1e-13 * sigma2
        sigma2 = new
        if done:
            break
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = np.where(
            spike,
            (lam - sigma2) / (lam - sigma2 + gamma * sigma2),
            np.sqrt(sigma2 / np.where(d > 0, d, 1.0)),
        )
    factors = np.where(d > 0, factors, 1.0)
    return xr.DataArray(
        factors,
        dims=("component",),
        coords={"component": res.S["component"].values},
        name="shrinkage",
        attrs={
            "long_name": "shrinkage of projected scores (Lee, Zou & Wright 2010)",
            "noise_variance_fraction": float(sigma2),
            "gamma": float(gamma),
            "n_spikes": int(spike.sum()),
        },
    )


#: The 99th percentile of the Tracy-Widom distribution of order 1 (Johnstone 2001, table 1).
_TW1_99 = 2.0234


def _population_eigenvalue(d, sigma2: float, gamma: float):
    """``lambda`` with ``d = lambda (1 + gamma sigma2 / (lambda - sigma2))`` (the larger root)."""
    b = d + sigma2 - gamma * sigma2
    disc = np.maximum(b * b - 4.0 * d * sigma2, 0.0)
    return (b + np.sqrt(disc)) / 2.0


def project_samples(
    res,
    gt: xr.DataArray,
    *,
    dim: Hashable = "samples",
    shrinkage: bool | np.ndarray | xr.DataArray = True,
    method: str = "lzw",
    k: int | None = None,
    k_augmented: int | None = None,
) -> xr.DataArray:
    """Scores of new samples on the PCs of reference samples, corrected for shrinkage.

    The new samples' genotypes are centered and weighted as the reference's
    were, with each missing call standing for the reference mean of its
    variant (it adds nothing), which is what PLINK 2's ``--score ...
    no-mean-imputation variance-standardize`` sums with the reference
    allele frequencies (``--read-freq``; see :func:`write_plink_pca`). The
    scores are on the scale of ``res.U`` (PLINK 2's ``.eigenvec``), so that
    reference and new samples can be plotted together.

    Plainly projected scores (``res.project``) are shrunk towards 0 compared
    with the reference samples': the reference PCs fit the reference
    samples' own noise, which new samples do not share. Two corrections:

    - ``method="lzw"`` (default): divide each component by the asymptotic
      factor of :func:`shrinkage_factors` (Lee, Zou & Wright 2010;
      ``shrinkage=True``), estimated from the eigenvalues for independent
      variants of one noise level. Exact for the structure components of
      LD-pruned data; it does not know the shrinkage of components that LD
      or other correlated noise makes.
    - ``method="oadp"``: online augmentation, decomposition and Procrustes
      (Zhang, Dey & Lee 2020; FRAPOSA). Each new sample is added to the
      reference, the PCA of the augmented set is taken (its top
      ``k_augmented`` components), and the Procrustes map (rotation, scale,
      shift) that takes the augmented reference scores onto the original
      ones takes the sample's augmented score to its score: as if it had
      been in the reference PCA, without a model of the noise. The
      augmented PCA is an update of the reference's ``K`` components (the
      SVD of a ``(K+1) x (K+1)`` matrix) from ``V y`` and ``|y|**2`` of the
      sample ``y``, which one pass over the new genotypes gives for all the
      new samples (each chunk read once); the rest takes microseconds per
      sample, independently of the reference size (:mod:`~xsvd.genomics.oadp`).
      The reference's components beyond ``K`` are left out of the
      augmented PCA, which matters for noise components only: compute the
      reference PCA with a few more components than you need (FRAPOSA
      uses ``4 k`` for ``k``) for the closest match with the exact
      augmentation (ADP, Wang et al. 2015). The result is computed at once
      for in-memory data, lazily for Dask data.

    Variants are matched by id (the ``variants`` coordinate) when both have
    ids, in the reference's order; where ``allele_1`` and ``allele_2`` of
    the new data are those of the reference swapped, the counts are
    flipped (``2 - x``). Other allele mismatches are an error.

    Parameters
    ----------
    res : SVDResult
        A centered PCA of the reference samples (``dim`` along ``U``), e.g.
        with :func:`patterson_scaling`'s weights.
    gt : xarray.DataArray
        The new samples' allele counts (of ``allele_1``), dims
        ``(variants, dim)`` in either order; NumPy, Dask or packed
        (:func:`open_plink`). NaN or negative codes are missing calls.
    dim : str
        The sample dimension of ``gt``.
    shrinkage : bool or array
        For ``method="lzw"``: True divides by :func:`shrinkage_factors` of
        ``res``; False gives the plain projection; or the factors to divide
        by, one per component. ``method="oadp"`` takes only True (the
        default).
    method : {"lzw", "oadp"}
        The correction, as above.
    k : int, optional
        The number of leading components to return. Default: all of
        ``res``'s.
    k_augmented : int, optional
        ``method="oadp"``: the components of each augmented PCA that are
        fitted onto the reference's ``k`` (FRAPOSA's ``dim_stu``), between
        ``k`` and the ``K`` components of ``res``. Default ``min(2 k, K)``.

    Returns
    -------
    xarray.DataArray
        ``(dim, "component")``, with ``gt``'s sample coordinates; for
        ``method="lzw"`` the factors used as the coordinate ``shrinkage``
        (1 when not corrected). The attribute ``method`` says which.

    References
    ----------
    D. Zhang, R. Dey and S. Lee, "Fast and robust ancestry prediction using
    principal component analysis", Bioinformatics 36 (2020) 3439-3446.
    C. Wang, X. Zhan, L. Liang, G. R. Abecasis and X. Lin, "Improved
    ancestry estimation for both genotyping and sequencing data using
    projection Procrustes analysis and genotype imputation", Am. J. Hum.
    Genet. 96 (2015) 926-937.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=300, fst=0.02)
    >>> ref, new = gt.isel(samples=slice(0, None, 2)), gt.isel(samples=slice(1, None, 2))
    >>> kept, w = xsvd.patterson_scaling(ref)
    >>> res = kept.svd.exact(k=2, dim="samples", center=True, weights=w)
    >>> scores = xsvd.project_samples(res, new.sel(variants=kept.variants))
    >>> scores.sizes
    Frozen({'samples': 150, 'component': 2})
    >>> scores.shrinkage.values.round(2)
    array([0.67, 0.64])
    >>> oadp = xsvd.project_samples(res, new.sel(variants=kept.variants), method="oadp")
    >>> for u in (scores, oadp):  # the spread of the new samples over the reference's
    ...     print((u.std("samples") / res.U.std("samples")).values.round(2))
    [1.01 1.02]
    [1. 1.]
    """
    if method not in ("lzw", "oadp"):
        raise ValueError(
            f"method must be 'lzw' (shrinkage factors) or 'oadp' (online augmentation, "
            f"decomposition and Procrustes), got {method!r}."
        )
    if not res.center:
        raise ValueError(
            "project_samples needs a centered PCA (`center=True`): new samples are centered "
            "with the reference means, which also stand for their missing calls."
        )
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"project_samples needs a 2-D DataArray with a {dim!r} dimension (pass `dim=` to "
            "name the sample dimension of the new data)."
        )
    vdim = variant_dim(res)
    if vdim not in gt.dims:
        raise ValueError(
            f"The new data have dims {gt.dims}; the reference PCA's variants are along "
            f"{vdim!r}. Rename the variant dimension of the new data to {vdim!r}."
        )
    gt = _match_variants(res, gt, vdim)
    K = res.S.sizes["component"]
    k = _count("k", K if k is None else k, 1, K, f"the {K} components of the reference PCA")
    if method == "oadp":
        if shrinkage is not True:
            raise ValueError(
                "shrinkage= applies to method='lzw'; method='oadp' corrects the shrinkage "
                "itself. Leave shrinkage out, or use method='lzw'."
            )
        k2 = min(2 * k, K) if k_augmented is None else k_augmented
        k2 = _count("k_augmented", k2, k, K, f"k={k} and the {K} components of the PCA")
        return _project_oadp(res, gt, vdim, dim, k, k2)
    if k_augmented is not None:
        raise ValueError("k_augmented applies to method='oadp' only.")
    if shrinkage is True:
        factors = _shrinkage(res).values
    elif shrinkage is False or shrinkage is None:
        factors = np.ones(K)
    else:  # given factors, from any device (e.g. shrinkage_factors of a device result)
        given = host_values(shrinkage) if isinstance(shrinkage, xr.DataArray) else shrinkage
        factors = np.asarray(backend.to_numpy(given), dtype=np.float64).reshape(-1)
        if factors.size != K or not np.all(np.isfinite(factors) & (factors > 0)):
            raise ValueError(
                f"shrinkage must be True, False or {K} positive factors (one per component), "
                f"got {shrinkage!r}."
            )
    if backend.is_packed(gt.data) and not backend.is_dask(gt.data):
        gt = gt.copy(data=_as_dask(gt.data))  # projected a block of variants at a time
    scores = res.project(gt, missing="mean")
    # the K factors go where the scores are (a device: one counted move), as the label stays
    scores = scores / xr.DataArray(backend.transfer(factors, like=scores.data), dims="component")
    scores = scores.assign_coords(shrinkage=("component", factors))
    if k < K:
        scores = scores.isel(component=slice(0, k))
    scores.name = "scores"
    scores.attrs = {
        "long_name": "projected principal component scores (scale of U)",
        "method": "lzw",
    }
    return scores


def _count(name: str, value, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}.")
    if value > high:
        raise ValueError(f"{name}={value} is more than {what} allow: at most {high}.")
    return int(value)


def _project_oadp(res, gt: xr.DataArray, vdim: Hashable, dim: Hashable, k: int, k2: int):
    """:func:`project_samples` with ``method="oadp"``: one pass, then the small updates."""
    # the reference's arrays stay where the result lives; cross_products moves them (once,
    # counted) to the data's device, and the few numbers the small factorizations need of
    # U (U^T U, its means) and S come to the host
    sdims = [d for d in res.U.dims if d != "component"]
    U = res.U.transpose(*sdims, "component").data
    U = backend.reshape(U, (-1, res.U.sizes["component"]))
    S = np.asarray(host_values(res.singular_values), dtype=np.float64)
    V = res.V.transpose(vdim, "component").data
    mean = res.mean.transpose(vdim).data
    weights = res.weights
    w = None if weights is None else np.asarray(weights.transpose(vdim).values)
    products = oadp.cross_products(gt.transpose(vdim, dim).data, mean, w, V)
    scores = oadp.oadp_scores(products, S, oadp.reference_geometry(U), k, k2)
    coords = {name: c.variable for name, c in gt.coords.items() if c.dims == (dim,)}
    coords["component"] = res.S["component"].values[:k]
    return xr.DataArray(
        scores,
        dims=(dim, "component"),
        coords=coords,
        name="scores",
        attrs={
            "long_name": "principal component scores by OADP (scale of U)",
            "method": "oadp",
            "k_augmented": k2,
        },
    )


def _as_dask(packed):
    """In-memory packed genotypes as one Dask array of packed blocks (rows of ~16 MiB)."""
    import dask.array as da

    rows = max(1, BED_CHUNK_BYTES // max(packed.data.shape[1], 1))
    return da.from_array(packed, chunks=(rows, -1), asarray=False, meta=packed[:0, :0])


def _match_variants(res, gt: xr.DataArray, vdim: Hashable) -> xr.DataArray:
    """``gt`` with the reference's variants, in its order, allele-swapped ones flipped."""
    ref = res.V
    if vdim in ref.coords and vdim in gt.coords:
        ids = ref[vdim].values
        if gt.sizes[vdim] != ids.size or not np.array_equal(gt[vdim].values, ids):
            import pandas as pd

            have = pd.Index(gt[vdim].values)
            absent = ~np.isin(ids, have)
            if absent.any():
                shown = ", ".join(str(v) for v in ids[absent][:5])
                raise ValueError(
                    f"{int(absent.sum())} variant(s) of the reference PCA are not in the new "
                    f"data (e.g. {shown}). Project on the variants both have: "
                    f"`common = np.intersect1d(res.V[{vdim!r}], new[{vdim!r}])`, then run the "
                    f"PCA of the reference genotypes on them, `kept.sel({vdim}=common)`, and "
                    "project on that result."
                )
            if not have.is_unique:
                twice = pd.Index(have[have.duplicated()]).unique()
                shown = ", ".join(str(v) for v in twice[:5])
                raise ValueError(
                    f"The new data have {twice.size} duplicate variant id(s) (e.g. {shown}); "
                    f"keep one of each first, e.g. `new.drop_duplicates({vdim!r})` (the "
                    "first)."
                )
            gt = select_variants(gt, vdim, have.get_indexer(ids))  # on the data's device
    alleles = ("allele_1", "allele_2")
    if not all(a in ref.coords and a in gt.coords for a in alleles):
        return gt
    r1, r2 = (np.asarray(ref[a].values).astype(str) for a in alleles)
    n1, n2 = (np.asarray(gt[a].values).astype(str) for a in alleles)
    same = (r1 == n1) & (r2 == n2)
    swapped = (r1 == n2) & (r2 == n1) & ~same
    bad = ~(same | swapped)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        shown = ", ".join(f"{ref[vdim].values[j]} ({r1[j]}/{r2[j]} vs {n1[j]}/{n2[j]})" for j in i)
        raise ValueError(
            f"{int(bad.sum())} variant(s) have other alleles in the new data than in the "
            f"reference (allele_1/allele_2): {shown}. Drop them from both, or fix the "
            "allele codes (e.g. strand flips)."
        )
    if swapped.any():
        gt = _flipped(gt, vdim, swapped).assign_coords(allele_1=(vdim, r1), allele_2=(vdim, r2))
    return gt


def _flipped(gt: xr.DataArray, vdim: Hashable, swapped: np.ndarray) -> xr.DataArray:
    """``2 - x`` at the ``swapped`` variants, negative codes (missing calls) as NaN, on the
    data's backend (Dask lazily; a device's arrays with the flags moved there once)."""
    t = gt.transpose(vdim, ...)
    x = t.data
    if backend.is_packed(x) and not backend.is_dask(x):
        x = x.unpack()
    dtype = backend.numpy_dtype(x.dtype)
    if dtype.kind not in "fc":  # as xarray's where: NaN in float32 for small integers
        x = backend.astype(x, np.float32 if dtype.itemsize <= 2 else np.float64)
    flip = backend.reshape(backend.transfer(swapped, like=x), (-1, 1))
    called = backend.where(x >= 0, x, np.nan)  # negative codes are missing calls: NaN
    return t.copy(data=backend.where(flip, 2 - called, called)).transpose(*gt.dims)
