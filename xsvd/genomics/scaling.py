"""PLINK 2's per-variant scaling for PCA (Patterson, Price & Reich 2006)."""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np
import xarray as xr

from ..core import backend
from ..core.missing import GENOTYPES
from ..labeled.dims import SAMPLE_DIM_ATTR, SAMPLE_NAMES, VARIANT_NAMES

__all__ = ["patterson_scaling", "select_variants", "called_sums"]

#: Bytes of the data a frequency count turns into temporaries at a time
#: (a few times this in lookup indices and float64 sums, whatever the chunks).
COUNT_BLOCK_BYTES = 1 << 20


def patterson_scaling(
    gt: xr.DataArray, *, dim: Hashable = "samples", founders: bool | None = None
) -> tuple[xr.DataArray, xr.DataArray]:
    """PLINK 2's per-variant scaling for PCA (Patterson, Price & Reich 2006).

    Each variant ``j`` with allele frequency ``p_j`` (its mean count / 2 over
    the samples with a call) enters the PCA as ``(x - 2 p_j) / sqrt(2 p_j
    (1 - p_j))``; monomorphic variants (``p_j`` = 0 or 1, or no calls) carry no
    information and are dropped. The frequencies take one pass over the data
    (on packed data, counted on the bytes).

    Returns the polymorphic variants and their weights, to be used as::

        gt, w = xsvd.patterson_scaling(gt)
        res = gt.svd.compressed(k=10, dim="samples", center=2 * w.allele_frequency,
                                weights=w, missing="mean")
        eigenvalues = res.S**2 / w.attrs["n_variants"]   # PLINK 2's .eigenval

    which is ``plink2 --pca`` (``--pca meanimpute`` where calls are missing):
    every sample, founder or not, is centered at ``2 p_j`` (the frequencies
    are the weights' coordinate ``allele_frequency``), a missing call stands
    for ``2 p_j`` (``missing="mean"`` fills with the ``center`` given), and
    the weights divide by ``sqrt(2 p_j (1 - p_j))``. ``res.U`` are the
    samples' principal components (PLINK 2's ``.eigenvec`` up to sign). The
    default block Krylov passes keep the noise eigenvalues (components 3 and
    up of a few populations) accurate, as PLINK 2's ``--pca approx`` does with
    its own block Krylov method. Plain ``--pca`` on data with missing calls
    corrects the relationship matrix for missingness instead of filling them.
    sgkit's ``PattersonScaler`` divides by ``sqrt(p (1 - p))``, so its
    singular values are ``sqrt(2)`` times these; U, V and explained-variance
    ratios are the same.

    Founders: PLINK 2 takes the frequencies from the founders only, the
    samples with no parent listed (``father_id`` and ``mother_id`` both
    ``"0"``, as :func:`open_plink` and :func:`open_pgen` read them), unless
    given ``--nonfounders``; so does this function by default. Where the data
    have non-founders, the founders' ``2 p_j`` is not the mean of all samples,
    so ``center=True`` (which removes that mean) is not ``plink2 --pca``;
    ``center=2 * w.allele_frequency`` is. With ``founders=False`` (PLINK 2's
    ``--nonfounders``) the two are the same. Both are checked against
    ``plink2`` in ``tests/test_founders_plink2.py``.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D allele counts, dims ``(variants, dim)`` in either order.
    dim : str
        The sample dimension.
    founders : bool, optional
        Take the frequencies from the founders only (True), from every
        sample (False, PLINK 2's ``--nonfounders``), or (None, the default)
        from the founders where the coordinates ``father_id``/``mother_id``
        list a parent of some sample, else from every sample.

    Returns
    -------
    (xarray.DataArray, xarray.DataArray)
        ``gt`` without its monomorphic variants, and the weights along the
        variants (with ``allele_frequency`` as a coordinate, and the
        attribute ``frequencies_from``: ``"founders"`` or ``"all samples"``). The genotypes
        name ``dim`` as their sample dimension (the attribute
        ``xsvd_sample_dim``), so ``.svd`` takes it without ``dim=``; packed
        genotypes (:func:`open_plink`, :func:`pack_genotypes`) stay packed,
        chunk by chunk, and data on a device (CuPy, any array-API library)
        stay there. The weights are plain NumPy numbers wherever the data
        live (what ``weights=`` takes); the per-variant counts come to the
        host once (two vectors, counted by :data:`xsvd.core.backend.TRANSFERS`).

    Notes
    -----
    Memory: the counts read the data a chunk at a time and turn at most
    about :data:`COUNT_BLOCK_BYTES` of it at once into temporaries, so
    beside the data (nothing, for lazily read files) they hold a few MiB
    per thread.

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
    _check_sample_dim(gt, dim, vdim)
    gt = gt.copy(deep=False)
    gt.attrs[SAMPLE_DIM_ATTR] = dim
    chosen = _founders(gt, dim, founders)
    sums, counts = called_sums(gt.transpose(vdim, dim).data, chosen)
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
        attrs={
            "long_name": "1 / sqrt(2 p (1 - p))",
            "n_variants": int(gt.sizes[vdim]),
            "frequencies_from": "all samples" if chosen is None else "founders",
        },
    ).assign_coords(allele_frequency=(vdim, p))
    idx = np.flatnonzero(keep)
    if idx.size == gt.sizes[vdim]:
        return gt, weights
    return select_variants(gt, vdim, idx), weights.isel({vdim: idx})


def _check_sample_dim(gt: xr.DataArray, dim: Hashable, vdim: Hashable) -> None:
    """Refuse ``dim`` when the data say the samples are along the other dimension.

    Frequencies are means over samples: taken along the variants they are
    per-sample numbers, and the "PCA" that follows is one of the variants.
    The data say so by the sample-dimension attribute (set by the readers)
    or by the names of the dimensions.
    """
    named = gt.attrs.get(SAMPLE_DIM_ATTR)
    wrong = (named == vdim) or (
        named not in gt.dims
        and (str(dim).lower() in VARIANT_NAMES or str(vdim).lower() in SAMPLE_NAMES)
    )
    if wrong:
        raise ValueError(
            f"patterson_scaling was asked for the samples along {dim!r}, but these data hold "
            f"their samples along {vdim!r} (its name, or the attribute {SAMPLE_DIM_ATTR!r}): "
            f"allele frequencies are means over the samples of each variant. Pass "
            f"`dim={vdim!r}` (or leave `dim` out), and decompose with `dim={vdim!r}`; to "
            "analyse the transposed matrix, rename its dimensions first."
        )


def _founders(gt: xr.DataArray, dim: Hashable, founders: bool | None) -> np.ndarray | None:
    """The founders (no parent listed, as PLINK 2 counts them) as a host mask along ``dim``;
    None for every sample."""
    if founders is not None and not isinstance(founders, bool):
        raise ValueError(f"founders must be True, False or None, got {founders!r}.")
    if founders is False:
        return None
    parents = [gt.coords.get(c) for c in ("father_id", "mother_id")]
    if not all(p is not None and p.dims == (dim,) for p in parents):
        if founders:
            raise ValueError(
                f"founders=True needs the coordinates father_id and mother_id along {dim!r} "
                "(open_plink and open_pgen read them from the .fam or .psam); pass "
                "founders=False to take the frequencies from every sample."
            )
        return None
    mask = np.ones(gt.sizes[dim], dtype=bool)
    for p in parents:
        mask &= np.asarray(p.values).astype(str) == "0"
    if mask.all():
        return None
    if not mask.any():
        raise ValueError(
            "Every sample has a parent listed (father_id or mother_id not '0'), so there are "
            "no founders to take allele frequencies from. Pass founders=False to take them "
            "from every sample (PLINK 2's --nonfounders)."
        )
    return mask


def select_variants(gt: xr.DataArray, vdim: Hashable, idx: np.ndarray) -> xr.DataArray:
    """``gt.isel({vdim: idx})`` (positions on the host) for data on any backend.

    Dask's fancy indexing joins and takes blocks with ``np.take``, which
    unpacks packed genotypes to float32 (16 times their size: 270 MB for a
    16 MiB chunk of a ``.bed``). For sorted ``idx`` each chunk of packed
    genotypes keeps its own selected rows, packed, in a chunk of its own;
    chunks left with no rows are dropped. In-memory arrays of any library
    (CuPy, array-api-strict's devices) are taken with their namespace's
    ``take``, the positions moved once to the data's device.
    """
    data = gt.data
    idx = np.asarray(idx)
    if not backend.is_dask(data) and not backend.is_packed(data):
        return _take_in_memory(gt, vdim, idx)
    if not (backend.is_dask(data) and backend.is_packed(data)) or np.any(np.diff(idx) < 0):
        return gt.isel({vdim: idx})
    import dask.array as da

    axis = gt.get_axis_num(vdim)
    bounds = np.cumsum([0, *data.chunks[axis]])
    parts = []
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        local = idx[(idx >= a) & (idx < b)] - a
        if local.size == 0:
            continue
        block = data.blocks[(slice(None),) * axis + (i,)]
        key = (slice(None),) * axis + (local,)
        if local.size == b - a:
            parts.append(block)
            continue
        chunks = tuple((local.size,) if d == axis else c for d, c in enumerate(block.chunks))
        parts.append(
            block.map_blocks(
                _take, key, chunks=chunks, dtype=data.dtype, meta=backend.chunk_type(data)
            )
        )
    picked = gt.isel({vdim: idx})  # coordinates (and a graph that is never computed)
    return picked.copy(data=da.concatenate(parts, axis=axis))


def _take(block, key):
    """Rows (or columns) ``key`` of one block; a packed block stays packed."""
    return block[key]


def _take_in_memory(gt: xr.DataArray, vdim: Hashable, idx: np.ndarray) -> xr.DataArray:
    """``gt.isel({vdim: idx})`` through the array API: the data stay on their device (NumPy,
    CuPy or any array-API library, whose arrays take no NumPy index arrays)."""
    data = gt.data
    picked = backend.api(data).take(
        data, backend.transfer(idx, like=data), axis=gt.get_axis_num(vdim)
    )
    coords = gt.coords.to_dataset().isel({vdim: idx}, missing_dims="ignore").coords
    return xr.DataArray(picked, dims=gt.dims, coords=coords, name=gt.name, attrs=gt.attrs)


def called_sums(a, cols: np.ndarray | None = None):
    """Per-row sum and count of the called (non-missing) values of a 2-D array, over the
    columns where the host mask ``cols`` is True (all without one)."""
    if backend.is_dask(a):
        import dask

        bounds = np.cumsum([0, *a.chunks[1]])
        masks = [
            None if cols is None else cols[i:j]
            for i, j in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        parts = [
            [dask.delayed(_block_sums)(b, m) for b, m in zip(row, masks, strict=True)]
            for row in a.to_delayed()
        ]
        rows = dask.compute(parts)[0]
        sums = np.concatenate([sum(r[0] for r in row) for row in rows])
        counts = np.concatenate([sum(r[1] for r in row) for row in rows])
        return sums, counts
    return _block_sums(a, cols)


def _block_sums(b, cols=None):
    """Per-row sums and counts of called values of one block (over the columns ``cols``), a
    few rows at a time on the block's device; the two vectors come to the host once."""
    if cols is not None:  # selected on the device, rows unpacked as float64 first
        cols = backend.transfer(np.flatnonzero(cols), like=b.data if backend.is_packed(b) else b)
    per_value = backend.bytes_per_value(b) if cols is None else 8
    step = max(1, COUNT_BLOCK_BYTES // max(1, math.ceil(b.shape[1] * per_value)))
    sums, counts = [], []
    for r0 in range(0, b.shape[0], step):
        s, c = _rows_sums(b[r0 : min(r0 + step, b.shape[0]), :], cols)  # in bounds
        sums.append(s)
        counts.append(c)
    if not sums:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    xp = backend.api(sums[0])
    return backend.to_numpy(xp.concat(sums)), backend.to_numpy(xp.concat(counts))


def _rows_sums(b, cols=None):
    if backend.is_packed(b) and not b.transposed and cols is None:
        s, _, c = b.called_stats()
        return s, c
    xp = backend.api(b)
    x = b.astype(np.float64) if backend.is_packed(b) else backend.astype(b, np.float64)
    if cols is not None:
        x = xp.take(x, cols, axis=1)
    ok = ~GENOTYPES.mask(xp, x)
    return xp.sum(xp.where(ok, x, 0.0), axis=1), xp.sum(backend.astype(ok, np.int64), axis=1)
