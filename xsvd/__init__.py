"""xsvd: labeled exact and randomized SVD for xarray, on NumPy, Dask and CuPy.

Importing xsvd registers the ``DataArray.svd`` and ``Dataset.svd`` accessors::

    import xsvd
    U, S, V = da.svd.compressed(k=10, dim="time")
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import datasets, linalg, rotation, statistics  # noqa: F401  (documented paths)
from .accessor import SVDAccessor, register
from .climate.bootstrap import BootstrapResult, bootstrap
from .climate.extended import ExtendedEOFResult, extended_eof
from .climate.hilbert import HilbertResult, hilbert_eof
from .climate.mca import MCAResult, mca
from .climate.multivariate_result import MultivariateResult
from .climate.rotation import RotatedResult
from .climate.weights import coslat_weights
from .core import InfiniteValueError, MissingValueError
from .core.packed import PackedGenotypes
from .genomics import (
    dosage,
    open_pgen,
    open_plink,
    pack_genotypes,
    patterson_scaling,
    project_samples,
    relationship_eigenvalues,
    shrinkage_factors,
    tracy_widom,
    write_eigenvec,
    write_plink,
    write_plink_pca,
)
from .io import MissingChunksWarning, StoreReadError, open_result, open_zarr
from .labeled.api import choose_method, compressed, exact, svd
from .labeled.base import Result
from .labeled.result import SVDResult
from .options import get_options, set_options

try:
    __version__ = version("xsvd")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

register()

__all__ = [
    "svd",
    "exact",
    "compressed",
    "choose_method",
    "SVDResult",
    "RotatedResult",
    "hilbert_eof",
    "HilbertResult",
    "bootstrap",
    "BootstrapResult",
    "Result",
    "mca",
    "MCAResult",
    "extended_eof",
    "ExtendedEOFResult",
    "MultivariateResult",
    "coslat_weights",
    "SVDAccessor",
    "MissingValueError",
    "InfiniteValueError",
    "open_zarr",
    "open_result",
    "StoreReadError",
    "MissingChunksWarning",
    "datasets",
    "open_plink",
    "open_pgen",
    "write_plink",
    "pack_genotypes",
    "PackedGenotypes",
    "dosage",
    "patterson_scaling",
    "project_samples",
    "shrinkage_factors",
    "write_eigenvec",
    "write_plink_pca",
    "tracy_widom",
    "relationship_eigenvalues",
    "set_options",
    "get_options",
    "__version__",
]
