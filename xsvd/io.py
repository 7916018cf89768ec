"""Zarr in and out: stream a store into the solver, save and reopen results.

- :func:`open_zarr` opens a variable of a Zarr store (local path or URL read
  through fsspec, e.g. ``http://``, ``s3://``, ``gs://``) as a Dask-backed
  DataArray whose chunks are whole multiples of the store's chunks
  (rechunk-on-read: small storage chunks are merged when read, no rechunk in
  the graph), and whose read errors name the store, the variable and the
  chunk.
- :meth:`SVDResult.to_zarr` / :func:`open_result` save a result (U, S, V,
  coordinates, attrs and the solver settings) and reopen it. Writing is
  atomic for local paths: the store is written under a temporary name next to
  the target and renamed into place, so a failure leaves nothing behind.

zarr (and fsspec with aiohttp/requests for URLs) are optional: ``pip install
"xsvd[io]"``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["open_zarr", "open_result", "StoreReadError", "plan_chunks"]

#: Dask chunks are made about this large by merging storage chunks.
TARGET_CHUNK_BYTES = 128 * 2**20
#: Storage chunks larger than this are read whole by every task: warn.
LARGE_CHUNK_BYTES = 1024 * 2**20


class StoreReadError(OSError):
    """A Zarr store or one of its chunks could not be read.

    Raised by :func:`open_zarr` when the store cannot be opened, and at
    compute time when a chunk is missing, corrupt or forbidden. The message
    names the store, the variable and the chunk index, e.g. ``chunk (2, 0) of
    variable 'genotype' in the Zarr store 'http://.../gt.zarr'``, and the
    original error is chained as ``__cause__``. A subclass of :class:`OSError`.
    """


def _require_zarr():
    try:
        import zarr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'Reading and writing Zarr needs the io extra: pip install "xsvd[io]"'
        ) from exc


# --------------------------------------------------------------------- read


def plan_chunks(
    shape: tuple[int, ...],
    storage_chunks: tuple[int, ...],
    itemsize: int,
    target_bytes: int = TARGET_CHUNK_BYTES,
) -> tuple[int, ...]:
    """Dask chunk sizes that are whole multiples of the storage chunks.

    Storage chunks are merged along the last dimensions first (the ones that
    are contiguous on disk) until a chunk reaches about ``target_bytes``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the array.
    storage_chunks : tuple of int
        Chunk shape in the store.
    itemsize : int
        Bytes per element.
    target_bytes : int, default 128 MiB
        Aim for Dask chunks of about this size.

    Returns
    -------
    tuple of int
        One chunk size per dimension, each a whole multiple of the storage
        chunk (or the full length of the dimension).

    Examples
    --------
    >>> plan_chunks((400_000, 10_000), (1_000, 10_000), 1)
    (13000, 10000)
    """
    chunks = list(storage_chunks)
    for axis in reversed(range(len(shape))):
        size = math.prod(chunks) * itemsize
        if size >= target_bytes:
            break
        grow = max(1, int(target_bytes // size))
        chunks[axis] = min(shape[axis], chunks[axis] * grow)
    return tuple(int(c) for c in chunks)


def pick_variable(ds: xr.Dataset, variable: str | None, name: str) -> str:
    """The variable to decompose: ``variable``, or the only one ``ds`` holds."""
    if variable is None:
        if len(ds.data_vars) != 1:
            raise ValueError(
                f"{name!r} holds the variables {list(ds.data_vars)}; choose one "
                "(`variable=`, or --var on the command line)."
            )
        return next(iter(ds.data_vars))
    if variable not in ds.data_vars:
        raise ValueError(f"{name!r} has no variable {variable!r}; it holds {list(ds.data_vars)}.")
    return variable


class _ChunkReader:
    """Array-like for ``da.from_array`` that names the store and chunk on failure.

    Wraps the variable as xarray opened it (lazy, with its decoding): indexing
    by slices and taking ``.values`` reads just those storage chunks.
    """

    def __init__(
        self,
        variable: xr.Variable,
        store: str,
        name: str,
        chunks: tuple[int, ...],
        gpu_array=None,
    ):
        self.array = variable
        # with zarr's GPU buffers: the zarr array itself, whose reads are CuPy arrays
        self.gpu_array = gpu_array
        self.store = store
        self.variable = name
        self.chunks = chunks
        self.shape = tuple(variable.shape)
        self.dtype = np.dtype(variable.dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        try:
            if self.gpu_array is not None:
                return _decode_on_gpu(self.gpu_array[key], self.array.encoding, self.dtype)
            return self.array[key].values
        except Exception as exc:
            where = ", ".join(
                f"{s.start or 0}:{s.stop if s.stop is not None else n}"
                for s, n in zip(key, self.shape, strict=False)
            )
            index = tuple((s.start or 0) // c for s, c in zip(key, self.chunks, strict=False))
            raise StoreReadError(
                f"Could not read chunk {index} (elements [{where}]) of variable "
                f"{self.variable!r} in the Zarr store {self.store!r}: "
                f"{type(exc).__name__}: {exc}. The chunk may be missing or corrupt, or "
                "the store not readable; check the store (e.g. rewrite that chunk)."
            ) from exc


def _zarr_gpu_enabled() -> bool:
    """True when zarr is configured for GPU buffers (``zarr.config.enable_gpu()``)."""
    import zarr

    return "gpu" in str(zarr.config.get("ndbuffer", ""))


def _decode_on_gpu(raw, encoding: dict, dtype):
    """CF decoding xarray would do on the host (fill values, scale, offset), with CuPy."""
    import cupy

    x = raw
    fill = encoding.get("_FillValue")
    scale, offset = encoding.get("scale_factor"), encoding.get("add_offset")
    if np.dtype(dtype).kind == "f":
        x = x.astype(dtype, copy=False)
        if fill is not None and not (isinstance(fill, float) and np.isnan(fill)):
            x = cupy.where(raw == fill, cupy.nan, x)
    if scale is not None:
        x = x * scale
    if offset is not None:
        x = x + offset
    return x.astype(dtype, copy=False)


def open_zarr(
    store: str | os.PathLike,
    variable: str | None = None,
    *,
    chunks: dict | None = None,
    storage_options: dict | None = None,
) -> xr.DataArray:
    """Open a variable of a Zarr store as a Dask-backed DataArray for streaming.

    Parameters
    ----------
    store : str or path
        A local path or a URL that fsspec can read (``http://...``, ``s3://...``).
    variable : str, optional
        The variable to open; may be omitted when the store has exactly one.
    chunks : dict, optional
        Dask chunk sizes by dimension name. By default they are planned from
        the store's chunks with :func:`plan_chunks` (about 128 MiB each, whole
        multiples of the storage chunks, so each storage chunk is read once).
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Notes
    -----
    With zarr's GPU buffers enabled (``zarr.config.enable_gpu()``, needs
    CuPy), chunks are decompressed into GPU memory and the Dask chunks are
    CuPy arrays, with no round trip through NumPy.

    Returns
    -------
    xarray.DataArray
        Lazy, with the store's coordinates and attributes.

    Raises
    ------
    StoreReadError
        When the store cannot be opened; when a chunk cannot be read, at
        compute time, naming the store, variable and chunk.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> path = tempfile.mkdtemp() + "/gt.zarr"
    >>> xsvd.datasets.genotypes(2_000, 100).to_dataset().to_zarr(path)  # doctest: +ELLIPSIS
    <xarray.backends.zarr.ZarrStore object at ...>
    >>> gt = xsvd.open_zarr(path, "genotype")
    >>> gt.dims, gt.chunks is not None
    (('variants', 'samples'), True)
    """
    _require_zarr()
    name = os.fspath(store)
    try:
        ds = xr.open_zarr(store, chunks=None, storage_options=storage_options)
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the Zarr store {name!r}: {type(exc).__name__}: {exc}. "
            "Check that the path or URL exists and is a Zarr store."
        ) from exc
    if variable is None:
        if len(ds.data_vars) != 1:
            raise ValueError(
                f"The store {name!r} holds the variables {list(ds.data_vars)}; choose one "
                "with `variable=`."
            )
        variable = next(iter(ds.data_vars))
    if variable not in ds.data_vars:
        raise ValueError(
            f"The store {name!r} has no variable {variable!r}; it holds {list(ds.data_vars)}."
        )
    var = ds[variable]
    storage = var.encoding.get("chunks") or var.shape
    if chunks is None:
        plan = plan_chunks(var.shape, tuple(storage), var.dtype.itemsize)
    else:
        plan = tuple(int(chunks.get(d, s)) for d, s in zip(var.dims, storage, strict=True))
    size = math.prod(storage) * var.dtype.itemsize
    if size > LARGE_CHUNK_BYTES:
        warnings.warn(
            f"The store's chunks of {variable!r} hold {size / 2**20:.0f} MiB each, and every "
            "task reads at least one whole chunk: memory per worker thread is at least "
            "that. Rewrite the store with smaller chunks (e.g. `ds.chunk(...).to_zarr(...)`) "
            "for streaming with little memory.",
            UserWarning,
            stacklevel=2,
        )
    import dask.array as da

    gpu_array, meta = None, None
    if _zarr_gpu_enabled():
        # zarr decompresses into GPU memory: read with zarr itself, so chunks are
        # CuPy arrays from the start (xarray's reader would turn them into NumPy)
        import zarr

        from ._backend import require_cupy

        cupy = require_cupy("Reading Zarr into GPU memory")
        group = zarr.open_group(store, mode="r", storage_options=storage_options)
        gpu_array = group[variable]
        meta = cupy.empty((0,) * var.ndim, dtype=var.dtype)
    reader = _ChunkReader(var.variable, name, variable, tuple(storage), gpu_array)
    data = da.from_array(
        reader,
        chunks=plan,
        name=f"xsvd-zarr-{variable}-{uuid.uuid4().hex[:8]}",
        asarray=False,
        meta=meta,
    )
    out = xr.DataArray(data, dims=var.dims, coords=var.coords, name=variable, attrs=var.attrs)
    return out.assign_coords({k: v.load() for k, v in out.coords.items()})


# -------------------------------------------------------------------- write


def write_result(ds: xr.Dataset, path: str | os.PathLike, *, mode: str = "w-") -> None:
    """Write a result Dataset to a Zarr store, atomically for local paths."""
    _require_zarr()
    if mode not in ("w-", "w"):
        raise ValueError(f"mode must be 'w-' (fail if the path exists) or 'w', got {mode!r}.")
    text = os.fspath(path)
    if "://" in text:
        ds.to_zarr(text, mode=mode)
        return
    target = Path(text)
    if target.exists() and mode == "w-":
        raise FileExistsError(
            f"{text!r} already exists; pass mode='w' to overwrite it, or choose another path."
        )
    tmp = target.with_name(f".{target.name}.xsvd-tmp-{uuid.uuid4().hex[:8]}")
    try:
        ds.to_zarr(tmp, mode="w-")
        if target.exists():
            old = target.with_name(f".{target.name}.xsvd-old-{uuid.uuid4().hex[:8]}")
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def result_dataset(result) -> xr.Dataset:
    """The Dataset that :meth:`SVDResult.to_zarr` writes (settings as JSON attrs)."""
    L = result._layout
    d = result._d
    ds = result.to_dataset()
    ds["total_variance"] = xr.DataArray(d.total_ss)
    if d.nan_features is not None:
        ds["nan_features"] = L.label_feature_vector(d.nan_features, "nan_features")
    ds.attrs = {
        "xsvd_format": 1,
        "xsvd_method": result.method,
        "xsvd_settings": json.dumps(_jsonable(result.settings)),
        "xsvd_center": int(result.center),
        "xsvd_name": json.dumps(L.name if L.name is None else str(L.name)),
        "xsvd_dims": json.dumps([str(d_) for d_ in L.dims]),
        "xsvd_sample_dims": json.dumps([str(d_) for d_ in L.sample_dims]),
        "xsvd_input_attrs": json.dumps(_jsonable(L.attrs)),
    }
    data_units = result._unit("data")
    if data_units is not None:  # pint-quantified input: kept as a units attribute
        ds.attrs["xsvd_data_units"] = str(data_units)
    return ds


def _jsonable(obj: Any):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def open_result(path: str | os.PathLike, *, storage_options: dict | None = None):
    """Reopen a result saved with :meth:`SVDResult.to_zarr`.

    Parameters
    ----------
    path : str or path
        The result's Zarr store: a local path or a URL that fsspec can read.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    SVDResult
        The same U, S, V, coordinates, attrs and settings, loaded into
        memory; it can ``reconstruct()`` and ``project()`` as the original
        could. Pint units of a quantified input come back as ``units``
        attributes (on ``S`` and on ``reconstruct()``), not as quantities.

    Raises
    ------
    StoreReadError
        When the store cannot be opened.
    ValueError
        When the store was not written by :meth:`SVDResult.to_zarr`.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> res = sst.svd(k=3, dim="time", center=True)
    >>> path = tempfile.mkdtemp() + "/eofs.zarr"
    >>> res.to_zarr(path)
    >>> back = xsvd.open_result(path)
    >>> back.method, back.V.dims
    ('exact', ('component', 'lat', 'lon'))
    """
    _require_zarr()
    from ._layout import Layout
    from .linalg import Decomposition
    from .result import SVDResult

    name = os.fspath(path)
    try:
        ds = xr.open_zarr(path, storage_options=storage_options).load()
    except Exception as exc:
        raise StoreReadError(
            f"Could not open the result store {name!r}: {type(exc).__name__}: {exc}."
        ) from exc
    if "xsvd_format" not in ds.attrs:
        raise ValueError(f"{name!r} is not a result written by xsvd's `to_zarr`.")
    dims = tuple(json.loads(ds.attrs["xsvd_dims"]))
    sample_dims = tuple(json.loads(ds.attrs["xsvd_sample_dims"]))
    feature_dims = tuple(d for d in dims if d not in sample_dims)
    sizes = {d: ds.sizes[d] for d in dims}
    coords = {k: v.variable for k, v in ds.coords.items() if "component" not in v.dims}
    attrs = json.loads(ds.attrs["xsvd_input_attrs"])
    if "xsvd_data_units" in ds.attrs:  # the input was quantified: units as an attribute
        attrs.setdefault("units", ds.attrs["xsvd_data_units"])
    layout = Layout(
        name=json.loads(ds.attrs["xsvd_name"]),
        dims=dims,
        sample_dims=sample_dims,
        feature_dims=feature_dims,
        sizes=sizes,
        coords=coords,
        attrs=attrs,
    )
    k = ds.sizes["component"]
    U = ds.U.transpose(*sample_dims, "component").values.reshape(-1, k)
    V = ds.V.transpose("component", *feature_dims).values.reshape(k, -1).T
    mean = ds["mean"].transpose(*feature_dims).values.reshape(-1) if "mean" in ds else None
    nan_features = None
    if "nan_features" in ds:
        nan_features = ds["nan_features"].transpose(*feature_dims).values.reshape(-1)
        if mean is not None:
            mean = np.where(nan_features, 0.0, mean)
    weights = ds["weights"].transpose(*feature_dims).values.reshape(-1) if "weights" in ds else None
    settings = json.loads(ds.attrs["xsvd_settings"])
    d = Decomposition(
        U,
        ds.S.values,
        V,
        mean,
        np.asarray(ds["total_variance"].values),
        nan_features,
        ds.attrs["xsvd_method"],
        {k_: v for k_, v in settings.items() if k_ not in ("center", "weighted")},
    )
    return SVDResult(d, layout, center=bool(ds.attrs["xsvd_center"]), weights=weights)
