"""The saved form of a result: :class:`xsvd.SVDResult` to and from a Dataset, a store, a file.

:func:`result_to_dataset` writes everything needed to restore a result into
one Dataset, :func:`result_from_dataset` restores it, :func:`write_result`
saves it as a Zarr store (:func:`xsvd.io.write_store`: atomic, checksums) and
:func:`open_result` reopens a store or a netCDF file. The result is used
through its public interface only (``layout``, ``decomposition``,
``units``, the labeled parts, the constructor).

The saved form (``xsvd_format = 5``): variables ``U``, ``S``, ``V``,
``explained_variance_ratio``, ``total_variance``, and where they apply
``mean``, ``weights``, ``nan_features``, ``total_norm`` (``||B||_F``, from
which the variance shares come where ``total_variance`` is beyond float64)
and the error estimates
``error_S``, ``error_angle``, ``error_residual``, with the input's
coordinates; and the attributes

- ``xsvd_format`` (an integer) and ``xsvd_method`` (text);
- ``xsvd_layout``: JSON text, how the input's dims map to the matrix
  (:func:`describe_layout`:
  name, dims, sample dims, input attributes; where they apply the calendar
  of each coordinate of cftime dates, which a store of the standard
  calendar would give back as datetime64);
- ``xsvd_settings``: JSON text, the result's ``settings`` dict as it is
  (numbers, text, booleans, lists, None; ``center`` and ``weighted``
  included);
- ``xsvd_contents``: JSON text, every variable (coordinates included) with
  its shape and a CRC-32 checksum of its values
  (:func:`xsvd.io.contents.record`). Reading checks it: a variable or chunk
  that is missing (which Zarr reads as the fill value), or a value that
  changed, raises :class:`~xsvd.io.StoreReadError` instead of giving NaN;
- ``xsvd_units``, where the result has pint units: JSON text, the units of
  the quantified input (of ``mean`` and ``reconstruct()``), of ``S``, and
  the names of the quantified coordinates
  (:func:`xsvd.labeled.units.describe`). Reading quantifies the result again
  where pint and pint-xarray are installed; else the units are ``units``
  attributes. ``S`` and ``mean`` also carry their units as ``units``
  attributes, as ``.pint.dequantify()`` writes them.

Every attribute is a number or text, so the Dataset can be written to netCDF
(netCDF-3 included) as well as to Zarr, and :func:`open_result` reads both.

The ``component`` coordinate counts from 1 (EOF1, PC1) from version 5 on;
versions 3 and 4 were written when it counted from 0, and are otherwise the
same as version 5 (version 4) or as below (version 3). Reading rebuilds the
``component`` labels of any version from the number of components, so a
result saved by an older xsvd reopens with components counted from 1.

Version 3 had neither ``xsvd_contents`` nor ``xsvd_units`` (the data's units
were ``xsvd_data_units``, those of ``S`` its ``units`` attribute). It is still
read, without a warning: the check is then that ``U`` and ``S`` hold no NaN,
nor ``V`` and ``mean`` outside the all-NaN features (a lost chunk reads as
NaN), and the units are restored from those attributes.
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..core import Decomposition, backend
from ..labeled import units
from ..labeled.layout import describe_layout, jsonable, layout_from_description
from . import contents
from .errors import StoreReadError
from .netcdf import is_netcdf, read_netcdf
from .store import read_store, write_store

if TYPE_CHECKING:
    from ..labeled.result import SVDResult

__all__ = ["FORMAT", "result_to_dataset", "result_from_dataset", "write_result", "open_result"]

#: The version of the saved form that :func:`result_to_dataset` writes.
FORMAT = 5
#: The versions :func:`result_from_dataset` reads (3: no record of the contents, no units;
#: 3 and 4: the saved ``component`` coordinate counts from 0, and is relabeled from 1).
READS = (3, 4, 5)
#: The columns of ``SVDResult.errors`` that are saved (as ``error_*``).
ERROR_COLUMNS = ("S", "angle", "residual")


def result_to_dataset(res: SVDResult) -> xr.Dataset:
    """Everything that restores ``res``, as one Dataset (the saved form above).

    Pint units become ``units`` attributes (as ``.pint.dequantify()`` does),
    and are recorded in ``xsvd_units``. A lazy result is computed first: the
    record of the contents (``xsvd_contents``) holds checksums of the values.
    """
    from ..labeled.result import SVDResult

    if not isinstance(res, SVDResult):  # every other result: its parts (xsvd.io.parts)
        from .parts import parts_to_dataset

        return parts_to_dataset(res, version=FORMAT)
    if res.decomposition.lazy_parts():
        res = res.compute()
    layout, d = res.layout, res.decomposition
    data = {"U": res.U, "S": units.dequantify(res.S), "V": res.V}
    data["explained_variance_ratio"] = res.explained_variance_ratio
    data["total_variance"] = units.dequantify(res.total_variance)
    if d.total_norm is not None:  # ||B||_F: the variance shares where total_variance is inf
        data["total_norm"] = xr.DataArray(np.asarray(backend.to_numpy(d.total_norm), float))
    if res.mean is not None:
        data["mean"] = units.dequantify(res.mean)
    if res.weights is not None:
        data["weights"] = res.weights
    if d.nan_features is not None:
        data["nan_features"] = layout.label_feature_vector(d.nan_features, "nan_features")
    if d.errors is not None:
        errors = res.errors
        for name in ERROR_COLUMNS:
            data[f"error_{name}"] = units.dequantify(errors[name]).rename(f"error_{name}")
    ds = xr.Dataset(data)
    ds.attrs = {
        "xsvd_format": FORMAT,
        "xsvd_result": "SVDResult",
        "xsvd_method": res.method,
        "xsvd_layout": json.dumps(describe_layout(layout)),
        "xsvd_settings": json.dumps(jsonable(res.settings)),
        "xsvd_contents": json.dumps(contents.record(ds.as_numpy())),
    }
    saved_units = units.describe(res.units)
    if saved_units is not None:
        ds.attrs["xsvd_units"] = json.dumps(saved_units)
    return ds


def result_from_dataset(ds: xr.Dataset, *, explain=None) -> SVDResult:
    """The result saved in ``ds`` by :func:`result_to_dataset` (loaded into memory).

    ``ds`` is read into memory and checked against the record of what was
    written (``xsvd_contents``; for version 3, that ``U``, ``S``, ``V`` and
    ``mean`` hold no NaN where a result has none). ``explain(name)``, where
    given, says which chunks of a variable are missing (a Zarr store);
    without it, a Dataset opened lazily from a local Zarr store is listed.

    Raises
    ------
    ValueError
        When ``ds`` was not written by xsvd, or in a version of the saved
        form that this version does not read.
    StoreReadError
        When a variable is missing, has another shape, or holds other values
        than were written (e.g. a chunk of a Zarr store was deleted).
    """
    from ..labeled.result import SVDResult

    version = ds.attrs.get("xsvd_format")
    if version is None:
        raise ValueError(
            "This Dataset was not written by xsvd (`SVDResult.to_dataset` or `to_zarr`): "
            "it has no `xsvd_format` attribute."
        )
    if int(version) not in READS:
        raise ValueError(
            f"This result was saved in version {int(version)} of xsvd's saved form, by a "
            f"development version of xsvd; this version reads versions "
            f"{', '.join(map(str, READS))}. Compute the result again and save it with this "
            "version."
        )
    source = ds.encoding.get("source")
    source = None if source is None else str(source)
    if explain is None and source is not None and os.path.isdir(source):  # opened lazily
        explain = partial(contents.missing_chunks, source, None)
    if ds.attrs.get("xsvd_result", "SVDResult") != "SVDResult":  # xsvd.io.parts' form
        from .parts import parts_from_dataset

        return parts_from_dataset(ds, source=source, explain=explain)
    ds = ds.load()
    if int(version) >= 4:
        if "xsvd_contents" not in ds.attrs:
            where = "" if source is None else f" {source!r}"
            raise StoreReadError(
                f"The saved result{where} has no `xsvd_contents` attribute (the record of "
                "what was written), so it cannot be checked; write the result again."
            )
        contents.verify(ds, json.loads(ds.attrs["xsvd_contents"]), source, explain)
        saved_units = json.loads(ds.attrs.get("xsvd_units", "null"))
    else:
        contents.check_values(ds, source, explain)
        saved_units = None
        if "xsvd_data_units" in ds.attrs:  # version 3: the data's units; those of S on S
            saved_units = {"data": ds.attrs["xsvd_data_units"], "singular": None}
            saved_units["singular"] = ds["S"].attrs.get("units")
    result_units = units.restore(saved_units)
    # the saved `component` labels are not read: the result labels its components
    # (from 1) as every result does, whatever the version counted from
    layout = layout_from_description(json.loads(ds.attrs["xsvd_layout"]), ds)
    data_text = units.text_of(result_units, "data")
    if data_text is not None:  # the input was quantified, pint is not here: an attribute
        layout.attrs.setdefault("units", data_text)
    # all settings, center and weighted included (the result reads center from them);
    # the weights are saved as a variable where weighted is true
    settings = json.loads(ds.attrs["xsvd_settings"])
    nan_features = None
    if "nan_features" in ds:
        nan_features = layout.feature_vector_values(ds["nan_features"]).astype(bool)
    mean = None
    if "mean" in ds:
        mean = layout.feature_vector_values(ds["mean"])
        if nan_features is not None:  # the solver's mean is 0 there, NaN only in the label
            mean = np.where(nan_features, 0.0, mean)
    weights = layout.feature_vector_values(ds["weights"]) if "weights" in ds else None
    errors = None
    if all(f"error_{name}" in ds for name in ERROR_COLUMNS):
        errors = np.stack([ds[f"error_{name}"].values for name in ERROR_COLUMNS], axis=1)
    d = Decomposition(
        U=layout.samples_values(ds["U"]),
        S=ds["S"].values,
        V=layout.features_values(ds["V"]),
        mean=mean,
        total_ss=np.asarray(ds["total_variance"].values),
        nan_features=nan_features,
        method=ds.attrs["xsvd_method"],
        settings=settings,
        errors=errors,
        total_norm=np.asarray(ds["total_norm"].values) if "total_norm" in ds else None,
    )
    return SVDResult(d, layout, weights=weights, units=result_units)


def write_result(res: SVDResult, path: str | os.PathLike, *, mode: str = "w-") -> None:
    """Save ``res`` as a Zarr store (:func:`xsvd.io.write_store`); a lazy result is computed first.

    Computing before writing keeps the write itself short, and a failed
    computation leaves nothing on disk.
    """
    write_store(res.as_numpy().compute().to_dataset(), path, mode=mode)


def open_result(path: str | os.PathLike, *, storage_options: dict | None = None) -> SVDResult:
    """Reopen a result saved with :meth:`xsvd.SVDResult.to_zarr` or as netCDF.

    Parameters
    ----------
    path : str or path
        The result's Zarr store (a local path or a URL that fsspec can
        read), or a local netCDF file written by
        ``res.to_dataset().to_netcdf(path)`` (netCDF-3 through scipy;
        netCDF-4 needs h5netcdf or netCDF4). Dates of cftime calendars come
        back as cftime dates of the same calendar, the standard one too.
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    SVDResult
        The same U, S, V, coordinates, attrs and settings, loaded into
        memory; it can ``reconstruct()`` and ``project()`` as the original
        could. A result of pint-quantified data is quantified again where
        pint and pint-xarray are installed (pint's application registry),
        else its units are ``units`` attributes (of ``S``, ``mean`` and
        ``reconstruct()``).

    Raises
    ------
    StoreReadError
        When the store or file cannot be opened, or does not hold what was
        written: a variable or chunk missing (which Zarr reads as the fill
        value), a value changed. The message names the store, the variable
        and, for a Zarr store, the missing chunks.
    ValueError
        When it does not hold a result written by xsvd.

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
    text = os.fspath(path)
    explain = None
    if is_netcdf(path):
        ds = read_netcdf(path)
    elif "://" not in text and os.path.isfile(text):
        raise StoreReadError(
            f"{text!r} is a file but not a netCDF file (netCDF-3 or netCDF-4) and a Zarr store "
            "is a folder; give a result saved with `res.to_zarr(path)` or "
            "`res.to_dataset().to_netcdf(path)`."
        )
    else:
        ds = read_store(path, storage_options=storage_options)
        where = ds.encoding.get("source") or path  # a moved-aside store is read where it is
        explain = partial(contents.missing_chunks, where, storage_options)
    if "xsvd_format" not in ds.attrs:
        raise ValueError(
            f"{text!r} is not a result written by xsvd (`res.to_zarr(path)` or "
            "`res.to_dataset().to_netcdf(path)`)."
        )
    ds.encoding["source"] = text
    return result_from_dataset(ds, explain=explain)
