"""Reading and writing: Zarr stores and netCDF files in, results out.

- :mod:`xsvd.io.zarr`: :func:`open_zarr` streams a variable of a Zarr store
  (local or a URL) into the solver, in Dask chunks planned by
  :func:`plan_chunks`, with errors that name the store and the chunk, and a
  check for missing storage chunks (:class:`MissingChunksWarning`).
- :mod:`xsvd.io.store`: :func:`write_store` writes a Dataset as a Zarr store,
  atomically for local paths and with a checksum per chunk;
  :func:`read_store` reads one back (:class:`StoreReadError` when it cannot).
- :mod:`xsvd.io.netcdf`: :func:`is_netcdf`, :func:`read_netcdf`.
- :mod:`xsvd.io.results`: the saved form of :class:`xsvd.SVDResult`
  (:func:`result_to_dataset`, :func:`result_from_dataset`,
  :func:`write_result`) and :func:`open_result`.
- :mod:`xsvd.io.contents`: the record of what a saved result holds (shapes,
  checksums) and the check that it reads back whole.

zarr (and fsspec with aiohttp/requests for URLs) are optional: ``pip install
"xsvd[io]"``.
"""

from __future__ import annotations

from .errors import MissingChunksWarning, StoreReadError
from .netcdf import is_netcdf, read_netcdf
from .results import open_result, result_from_dataset, result_to_dataset, write_result
from .store import read_store, write_store
from .zarr import TARGET_CHUNK_BYTES, open_zarr, pick_variable, plan_chunks

__all__ = [
    "open_zarr",
    "StoreReadError",
    "MissingChunksWarning",
    "plan_chunks",
    "pick_variable",
    "TARGET_CHUNK_BYTES",
    "write_store",
    "read_store",
    "is_netcdf",
    "read_netcdf",
    "open_result",
    "result_to_dataset",
    "result_from_dataset",
    "write_result",
]
