"""2-bit packing of 0/1/2 genotypes already in memory (NumPy, CuPy or Dask chunks).

The :class:`~xsvd.PackedGenotypes` array itself lives in :mod:`xsvd.core.packed`.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import xarray as xr

from ..core import backend
from ..core.packed import PackedGenotypes, pack
from ..labeled.dims import SAMPLE_DIM_ATTR

__all__ = ["pack_genotypes"]


def pack_genotypes(gt: xr.DataArray, *, dim: Hashable = "samples") -> xr.DataArray:
    """Hold 0/1/2 genotypes four to a byte (in host or GPU memory, or per Dask chunk).

    The result has the same dims, coordinates and float32 values (NaN for
    missing) but takes a sixteenth of float32's memory (a quarter of
    uint8's); xsvd's solvers unpack it a small block at a time inside the
    products. Dask chunks are packed one by one (lazily), CuPy data stay on
    the GPU, data of other array-API libraries (array-api-strict's
    devices) on theirs: nothing comes to the host. The result names ``dim`` as its sample
    dimension (the attribute ``xsvd_sample_dim``), so ``.svd`` takes it
    without ``dim=``.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D; values 0, 1, 2, with NaN or negative values for missing calls.
    dim : str
        The dimension packed along (the samples, as in a ``.bed`` file).

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=1_000, n_samples=200)
    >>> packed = xsvd.pack_genotypes(gt)
    >>> packed.data.nbytes, gt.data.nbytes
    (50000, 200000)
    """
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"pack_genotypes needs a 2-D DataArray with a {dim!r} dimension; pass `dim=` "
            "to name the dimension to pack along."
        )
    order = gt.dims
    other = next(d for d in order if d != dim)
    t = gt.transpose(other, dim)
    data = t.data
    if backend.is_dask(data):
        xp = backend.namespace(data)
        meta = PackedGenotypes(xp.empty((0, 0), dtype=np.uint8), 0)
        packed = data.map_blocks(pack, dtype=np.float32, meta=meta)
    elif backend.is_packed(data):
        packed = data
    else:  # on the data's device (NumPy, CuPy or any array-API library)
        packed = pack(data)
    out = t.copy(data=packed)
    out.attrs[SAMPLE_DIM_ATTR] = dim
    return out.transpose(*order)
