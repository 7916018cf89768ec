"""VCF-Zarr (sgkit, bio2zarr) genotype calls as allele dosages, lazily."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core import backend
from ..core.missing import GENOTYPES
from ..labeled.dims import SAMPLE_DIM_ATTR

__all__ = ["dosage"]


def dosage(ds: xr.Dataset, *, genotype: str = "call_genotype") -> xr.DataArray:
    """Alternate-allele dosage ``(variants, samples)`` of a VCF-Zarr / sgkit dataset.

    The number of non-reference alleles of each call in ``call_genotype``
    (allele indices, 0 = reference; any other index counts once, so
    multi-allelic sites give 0-2 as well), computed lazily chunk by chunk; a
    call with any allele missing (negative index, as sgkit and bio2zarr write
    them) is NaN, which
    ``missing="mean"`` then handles. 1-D per-variant and per-sample variables
    (``variant_position``, ``variant_contig``, ``sample_id``, ...) become
    coordinates; ``sample_id`` labels the samples. The result names
    ``samples`` as its sample dimension (the attribute ``xsvd_sample_dim``),
    so ``.svd`` takes it without ``dim=``. The dosages are computed where the
    calls are (NumPy, Dask chunks, CuPy or any array-API library's device)
    and stay there.

    Examples
    --------
    >>> import numpy as np, xarray as xr, xsvd
    >>> calls = np.array([[[0, 1], [1, 1]], [[0, 0], [-1, 0]]], dtype="int8")
    >>> ds = xr.Dataset({"call_genotype": (("variants", "samples", "ploidy"), calls)})
    >>> xsvd.dosage(ds).values
    array([[ 1.,  2.],
           [ 0., nan]], dtype=float32)
    """
    if genotype not in ds:
        raise KeyError(
            f"The dataset has no {genotype!r} variable (it has {list(ds.data_vars)}). "
            "Pass the genotype call variable as `genotype=`."
        )
    g = ds[genotype]
    if "ploidy" not in g.dims:
        raise ValueError(f"{genotype!r} has dims {g.dims}; expected a 'ploidy' dimension.")
    if g.chunks is not None and len(g.chunksizes["ploidy"]) > 1:
        g = g.chunk(ploidy=-1)
    out = xr.apply_ufunc(
        _dosage_block,
        g,
        input_core_dims=[["ploidy"]],
        dask="parallelized",
        output_dtypes=[np.float32],
    )
    coords = {}
    for name, var in ds.variables.items():
        if name in out.coords or var.ndim != 1 or var.dims[0] not in out.dims:
            continue
        # T: NumPy 2 strings (bio2zarr's variant_id); a device's dtypes known by name
        if backend.numpy_dtype(var.dtype).kind in "biufUSOMT":
            coords[name] = var
    out = out.assign_coords(coords)
    if "sample_id" in out.coords and "samples" not in out.indexes:
        out = out.assign_coords(samples=out["sample_id"].values)
    out = out.rename("dosage").transpose("variants", "samples", ...)
    out.attrs[SAMPLE_DIM_ATTR] = "samples"
    return out


def _dosage_block(g):
    """Dosages of one block of calls, on its device (through the array API)."""
    xp = backend.api(g)
    missing = xp.any(GENOTYPES.mask(xp, g), axis=-1)  # an allele index < 0 is a missing call
    # count of non-reference alleles (0/2 at a multi-allelic site counts 1, as in sgkit)
    count = xp.sum(backend.astype(g > 0, np.int16), axis=-1, dtype=xp.int16)
    count = backend.astype(count, np.float32)
    # NaN as float32 itself: a bare NaN promoted the dosages to float64 on some versions
    return backend.where(missing, xp.full_like(count, xp.nan), count)
