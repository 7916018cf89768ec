"""PLINK 2's per-variant scaling for PCA (Patterson, Price & Reich 2006)."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import xarray as xr

from ..core import backend
from ..core.missing import GENOTYPES

__all__ = ["patterson_scaling"]


def patterson_scaling(
    gt: xr.DataArray, *, dim: Hashable = "samples"
) -> tuple[xr.DataArray, xr.DataArray]:
    """PLINK 2's per-variant scaling for PCA (Patterson, Price & Reich 2006).

    Each variant ``j`` with allele frequency ``p_j`` (its mean count / 2 over
    the samples with a call) enters the PCA as ``(x - 2 p_j) / sqrt(2 p_j
    (1 - p_j))``; monomorphic variants (``p_j`` = 0 or 1, or no calls) carry no
    information and are dropped. The frequencies take one pass over the data
    (on packed data, counted on the bytes).

    Returns the polymorphic variants and their weights, to be used as::

        gt, w = xsvd.patterson_scaling(gt)
        res = gt.svd.compressed(k=10, dim="samples", center=True, weights=w,
                                missing="mean", krylov=True)
        eigenvalues = res.S**2 / w.attrs["n_variants"]   # PLINK 2's .eigenval

    Centering with ``center=True`` removes ``2 p_j`` (the mean over called
    samples, which ``missing="mean"`` also uses for missing calls), and the
    weights divide by ``sqrt(2 p_j (1 - p_j))``. ``res.U`` are the samples'
    principal components (PLINK 2's ``.eigenvec`` up to sign). ``krylov=True``
    keeps the noise eigenvalues (components 3 and up of a few populations)
    accurate, as PLINK 2's ``--pca approx`` does with its own block Krylov
    method. Missing calls: ``missing="mean"`` is PLINK 2's ``--pca
    meanimpute`` (and ``--pca approx``); plain ``--pca`` corrects the
    relationship matrix for missingness instead. sgkit's ``PattersonScaler``
    divides by ``sqrt(p (1 - p))``, so its singular values are ``sqrt(2)``
    times these; U, V and explained-variance ratios are the same.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D allele counts, dims ``(variants, dim)`` in either order.
    dim : str
        The sample dimension.

    Returns
    -------
    (xarray.DataArray, xarray.DataArray)
        ``gt`` without its monomorphic variants, and the weights along the
        variants (with ``allele_frequency`` as a coordinate).

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=100)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> kept.sizes["variants"] <= 2_000, w.dims
    (True, ('variants',))
    """
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"patterson_scaling needs a 2-D DataArray with a {dim!r} dimension (pass "
            "`dim=` to name the sample dimension)."
        )
    vdim = next(d for d in gt.dims if d != dim)
    sums, counts = _called_sums(gt.transpose(vdim, dim).data)
    p = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0) / 2
    keep = (counts > 0) & (p > 0) & (p < 1)
    w = np.zeros_like(p)
    w[keep] = 1.0 / np.sqrt(2 * p[keep] * (1 - p[keep]))
    weights = xr.DataArray(
        w,
        dims=(vdim,),
        coords={**{k: v for k, v in gt.coords.items() if v.dims == (vdim,)}},
        name="patterson_weight",
        # PLINK 2 divides S**2 by every variant it was given, monomorphic ones included
        attrs={"long_name": "1 / sqrt(2 p (1 - p))", "n_variants": int(gt.sizes[vdim])},
    ).assign_coords(allele_frequency=(vdim, p))
    idx = np.flatnonzero(keep)
    if idx.size == gt.sizes[vdim]:
        return gt, weights
    return gt.isel({vdim: idx}), weights.isel({vdim: idx})


def _called_sums(a):
    """Per-row sum and count of the called (non-missing) values of a 2-D array."""
    if backend.is_dask(a):
        import dask

        parts = [[dask.delayed(_block_sums)(b) for b in row] for row in a.to_delayed()]
        rows = dask.compute(parts)[0]
        sums = np.concatenate([sum(r[0] for r in row) for row in rows])
        counts = np.concatenate([sum(r[1] for r in row) for row in rows])
        return sums, counts
    return _block_sums(a)


def _block_sums(b):
    if backend.is_packed(b) and not b.transposed:
        s, _, c = b.called_stats()
        return backend.to_numpy(s), backend.to_numpy(c)
    xp = backend.namespace(b)
    x = b.astype(np.float64) if backend.is_packed(b) else xp.asarray(b, dtype=np.float64)
    ok = ~GENOTYPES.mask(xp, x)
    return (
        backend.to_numpy(xp.where(ok, x, 0).sum(axis=1)),
        backend.to_numpy(ok.sum(axis=1)),
    )
