"""The saved form of every result but :class:`xsvd.SVDResult`: its parts and record.

A result of :class:`xsvd.labeled.base.Result`'s family describes itself by
:meth:`~xsvd.labeled.base.Result.state`: labeled parts (DataArrays, or
nested results such as the SVD a rotation was made from) and a JSON-able
record. :func:`parts_to_dataset` puts them in one Dataset:

- each DataArray part is a variable of its name. Parts of a *group* (a
  field of its own, e.g. MCA's left and right fields, whose grids may share
  dim names) have their dims and coordinates prefixed ``"{group}__"`` so
  that they never clash; complex parts are saved as their real part and a
  variable ``"{name}__imag"``;
- a nested result's own saved form is put in with every name prefixed
  ``"{part}__"``, its attributes kept in the record of parts;
- attributes: ``xsvd_format`` (as :mod:`xsvd.io.results`), ``xsvd_result``
  (the class name), ``xsvd_method``, ``xsvd_record`` and ``xsvd_parts``
  (JSON text) and ``xsvd_contents`` (shapes and checksums of every
  variable, :mod:`xsvd.io.contents`, checked on reading).

:func:`parts_from_dataset` undoes it and calls the class's
:meth:`~xsvd.labeled.base.Result.from_state`, so a reopened result is of
the same class with the same numbers and coordinates.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from ..labeled import units
from ..labeled.base import RESULT_CLASSES, Result
from . import contents
from .results import jsonable, result_from_dataset

__all__ = ["parts_to_dataset", "parts_from_dataset", "SEP"]

#: Between a group's (or a nested result's) name and the names it prefixes.
SEP = "__"


def parts_to_dataset(res: Result, *, version: int) -> xr.Dataset:
    """Everything that restores ``res`` (computed, in host memory) as one Dataset."""
    res = res.as_numpy().compute()
    parts, record = res.state()
    pieces, described = [], {}
    for name, part in parts.items():
        if part is None:
            continue
        if isinstance(part, Result):
            nested = part.to_dataset()
            prefix = f"{name}{SEP}"
            described[name] = {"kind": "result", "prefix": prefix, "attrs": dict(nested.attrs)}
            pieces.append(_renamed(nested, lambda n, p=prefix: p + n).drop_attrs(deep=False))
            continue
        group = res.group_of(name)
        x = units.dequantify(part).as_numpy()
        ds = x.to_dataset(name=name)
        if group:
            ds = _renamed(ds, lambda n, g=group, v=name: n if n == v else f"{g}{SEP}{n}")
        entry = {
            "kind": "array",
            "group": group,
            "name": None if x.name is None else str(x.name),
            "coords": [str(c) for c in ds[name].coords],
        }
        if np.iscomplexobj(ds[name].values):
            values = ds[name].values
            ds[name] = ds[name].copy(data=values.real)
            ds[f"{name}{SEP}imag"] = ds[name].copy(data=values.imag)
            entry["complex"] = True
        described[name] = entry
        pieces.append(ds.drop_attrs(deep=False))
    out = xr.merge(pieces, compat="identical", join="exact", combine_attrs="override")
    out.attrs = {
        "xsvd_format": version,
        "xsvd_result": type(res).__name__,
        "xsvd_method": str(res.method),
        "xsvd_record": json.dumps(jsonable(record)),
        "xsvd_parts": json.dumps(described),
    }
    out.attrs["xsvd_contents"] = json.dumps(contents.record(out))
    return out


def parts_from_dataset(ds: xr.Dataset, *, source=None, explain=None) -> Result:
    """The result saved in ``ds`` by :func:`parts_to_dataset` (checked, in memory)."""
    name = ds.attrs["xsvd_result"]
    cls = RESULT_CLASSES.get(name)
    if cls is None:
        raise ValueError(
            f"This Dataset holds an xsvd {name!r}, which this version of xsvd does not know. "
            "Open it with the version of xsvd that saved it."
        )
    ds = ds.load()
    contents.verify(ds, json.loads(ds.attrs["xsvd_contents"]), source, explain)
    described = json.loads(ds.attrs["xsvd_parts"])
    parts = {}
    for part, entry in described.items():
        if entry["kind"] == "result":
            parts[part] = _nested(ds, entry)
            continue
        x = ds[part]
        x = x.drop_vars([c for c in x.coords if c not in entry["coords"]])
        if entry.get("complex"):
            x = x.copy(data=x.values + 1j * ds[f"{part}{SEP}imag"].values)
        group = entry["group"]
        if group:
            cut = len(group) + len(SEP)
            x = _renamed(x.to_dataset(name=part), lambda n, c=cut, v=part: n if n == v else n[c:])[
                part
            ]
        parts[part] = x.rename(entry["name"])
    for part in getattr(cls, "OPTIONAL_PARTS", ()):
        parts.setdefault(part, None)
    return cls.from_state(parts, json.loads(ds.attrs["xsvd_record"]))


def _nested(ds: xr.Dataset, entry: dict) -> Result:
    prefix = entry["prefix"]
    names = [n for n in ds.variables if str(n).startswith(prefix)]
    sub = ds[[n for n in names if n not in ds.coords]]
    sub = sub.drop_vars([c for c in sub.coords if not str(c).startswith(prefix)])
    sub = _renamed(sub, lambda n: n[len(prefix) :])
    sub.attrs = dict(entry["attrs"])
    return result_from_dataset(sub)


def _renamed(ds: xr.Dataset, new):
    """``ds`` with every variable, coordinate and dim renamed by ``new(name)``."""
    names = {str(n) for n in ds.variables} | {str(d) for d in ds.dims}
    return ds.rename({n: new(n) for n in names if new(n) != n})
