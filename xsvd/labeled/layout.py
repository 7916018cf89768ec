"""The only place that knows about dimensions and coordinates.

A :class:`Layout` records how an N-D DataArray maps to the (samples x
features) matrix the solvers see: which dimensions are samples (the rows, the
``dim`` argument) and which are features (all others, in the input's order),
their sizes and coordinates. It stacks data to that matrix with a plain
reshape (no MultiIndex is built), labels the solvers' plain arrays back, and
takes labeled results apart again (``*_values``) when a saved result is
reopened; :mod:`xsvd.io.results` saves and restores it (with the
coordinates kept in the saved Dataset).

The default sample dimension (``dim`` omitted) is :mod:`.dims`' business,
weights and standardization :mod:`.preprocess`'s. One input rule lives here
(see docs/input-rules.md):

- Every dimension is kept, size 1 included (a single pressure level, say):
  ``U``, ``V``, ``mean``, the weights and ``reconstruct()`` carry the input's
  dimension names and coordinates. A size-1 feature dimension is one more
  (trivial) axis of the features; ``project(new)`` takes new data with it
  (at the same label) or without it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core import backend
from .dims import as_dims, cftime_calendar, default_sample_dim

COMPONENT = "component"
#: The label of the first component: components count from 1 (EOF1, PC1), as in papers,
#: PLINK's ``.eigenvec`` headers and xeofs' ``mode``.
FIRST_COMPONENT = 1


def component_labels(k: int) -> np.ndarray:
    """The ``component`` labels of ``k`` components: ``1, 2, ..., k``."""
    return np.arange(FIRST_COMPONENT, FIRST_COMPONENT + int(k))


@dataclass(frozen=True)
class Layout:
    """How a DataArray's dims map to (samples, features).

    ``dims`` are the input's dimensions in its order (size-1 ones included),
    ``sizes`` their sizes and ``coords`` every coordinate of the input.
    """

    name: Hashable | None
    dims: tuple[Hashable, ...]
    sample_dims: tuple[Hashable, ...]
    feature_dims: tuple[Hashable, ...]
    sizes: dict
    coords: dict  # name -> xr.Variable, every coordinate of the input
    attrs: dict

    # ------------------------------------------------------------------ build
    @classmethod
    def from_dataarray(cls, obj: xr.DataArray, dim=None) -> Layout:
        if not isinstance(obj, xr.DataArray):
            raise TypeError(
                f"xsvd works on an xarray.DataArray, got {type(obj).__name__}. "
                "For a Dataset pick a variable, e.g. `ds['sst']`; for a plain array, "
                "wrap it with `xr.DataArray(array, dims=(...))`."
            )
        if obj.ndim < 2:
            raise ValueError(
                f"An SVD needs at least 2 dimensions (samples and features); this "
                f"DataArray has dims {obj.dims}."
            )
        sample_dims = (default_sample_dim(obj),) if dim is None else as_dims(dim)
        if not sample_dims:
            raise ValueError(
                f"dim={dim!r} names no dimension. Pass the sample dimension(s), one or more "
                f"of {obj.dims}."
            )
        missing = [d for d in sample_dims if d not in obj.dims]
        if missing:
            raise ValueError(
                f"dim {missing[0]!r} is not a dimension of this DataArray; its dimensions "
                f"are {obj.dims}. Pass one or more of them as `dim=`."
            )
        if len(set(sample_dims)) != len(sample_dims):
            raise ValueError(f"dim lists a dimension twice: {sample_dims}.")
        feature_dims = tuple(d for d in obj.dims if d not in sample_dims)
        if not feature_dims:
            raise ValueError(
                f"dim={sample_dims} uses every dimension as samples, which leaves no "
                "features. Leave at least one dimension out of `dim`."
            )
        if COMPONENT in obj.dims or COMPONENT in obj.coords:
            what = "dimension" if COMPONENT in obj.dims else "coordinate"
            raise ValueError(
                f"The data have a {what} named {COMPONENT!r}, the name xsvd gives the "
                "components of U, S and V. Rename it first, e.g. "
                f"`da.rename({{{COMPONENT!r}: 'mode'}})`."
            )
        empty = [d for d in obj.dims if obj.sizes[d] == 0]
        if empty:
            raise ValueError(
                f"The data are empty: dimension {empty[0]!r} has size 0 (sizes "
                f"{dict(obj.sizes)}). Check the selection that made them (e.g. a `.sel()` "
                "that matched nothing)."
            )
        return cls(
            name=obj.name,
            dims=tuple(obj.dims),
            sample_dims=sample_dims,
            feature_dims=feature_dims,
            sizes=dict(obj.sizes),
            coords={k: v.variable for k, v in obj.coords.items()},
            attrs=dict(obj.attrs),
        )

    # ----------------------------------------------------------- properties
    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in self.sample_dims)

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in self.feature_dims)

    @property
    def n_samples(self) -> int:
        return int(np.prod(self.sample_shape))

    @property
    def n_features(self) -> int:
        return int(np.prod(self.feature_shape))

    # --------------------------------------------------------------- stacking
    def to_matrix(self, obj: xr.DataArray):
        """The (samples x features) matrix of ``obj`` (lazy for Dask; a view when possible)."""
        data = obj.transpose(*self.sample_dims, *self.feature_dims).data
        if data.ndim == 2:
            return data
        return backend.reshape(data, (self.n_samples, self.n_features))

    def _single_labels(self, other: xr.DataArray) -> xr.DataArray:
        """New data with each size-1 feature dim of the data, at the data's label.

        The new data may lack such a dim (it is added back; a scalar
        coordinate of that name must hold the data's label) or have it at
        several labels (the data's is selected); another label is an error.
        """
        for d in self.feature_dims:
            if self.sizes[d] != 1:
                continue
            label = self.coords[d].values[0] if d in self.coords else None
            if d in other.dims and label is not None and d in other.indexes:
                if label not in other.indexes[d]:
                    raise ValueError(
                        f"The decomposed data have the single {d!r} {_fmt(label)} (a size-1 "
                        f"dimension), which the new data lack along {d!r}. Project data at "
                        f"{d}={_fmt(label)}: select it from data that hold it, e.g. "
                        f"`data.sel({d}={_fmt(label)})`."
                    )
                other = other.sel({d: [label]})
            elif d not in other.dims:
                if label is not None and d in other.coords and other[d].ndim == 0:
                    if other[d].values[()] != label:
                        raise ValueError(
                            f"The decomposed data have the single {d!r} {_fmt(label)} (a "
                            f"size-1 dimension), and the new data are at {d}="
                            f"{_fmt(other[d].values[()])}. Project data at {d}="
                            f"{_fmt(label)}: select it from data that hold it, e.g. "
                            f"`data.sel({d}={_fmt(label)})`."
                        )
                other = other.expand_dims(d)  # a scalar coordinate becomes its index
        return other

    def samples_matrix(self, other: xr.DataArray):
        """Stack new data with the same features: returns (matrix, sample dims, coords)."""
        other = self._single_labels(other)
        extra = [d for d in self.feature_dims if d not in other.dims]
        if extra:
            raise ValueError(
                f"The new data lack the feature dimension(s) {extra}; they must have the "
                f"features {self.feature_dims} of the decomposed data."
            )
        for d in self.feature_dims:
            if other.sizes[d] != self.sizes[d]:
                raise ValueError(
                    f"Feature dimension {d!r} has size {other.sizes[d]} in the new data but "
                    f"{self.sizes[d]} in the decomposed data. Select the decomposed "
                    f"features, e.g. `new.sel({d}=res.V[{d!r}])` (or by position, "
                    f"`new.isel({d}=slice(0, {self.sizes[d]}))`, where they have no labels)."
                )
            if d in self.coords and d in other.coords:
                if not np.array_equal(
                    np.asarray(self.coords[d].values), np.asarray(other[d].values)
                ):
                    raise ValueError(
                        f"The coordinate {d!r} of the new data differs from the decomposed "
                        "data's. Put the new data on the decomposed data's labels first, "
                        "e.g. `new.reindex_like(res.V)` (NaN where a label is new to them; "
                        "`res.project(..., missing='mean')` lets those stand for the mean)."
                    )
        sample_dims = tuple(d for d in other.dims if d not in self.feature_dims)
        shape = tuple(other.sizes[d] for d in sample_dims)
        data = other.transpose(*sample_dims, *self.feature_dims).data
        data = backend.reshape(data, (int(np.prod(shape)), self.n_features))
        coords = {k: v.variable for k, v in other.coords.items() if set(v.dims) <= set(sample_dims)}
        return data, sample_dims, shape, coords

    def feature_locator(self) -> FeatureLocator:
        """A small picklable object that names features in error messages."""
        coords = self.index_values(self.feature_dims)
        return FeatureLocator(self.feature_dims, self.feature_shape, coords)

    def index_values(self, dims) -> dict:
        """The 1-D coordinate values of ``dims`` (not too long), to name positions with."""
        return {
            d: np.asarray(self.coords[d].values)
            for d in dims
            if d in self.coords and self.coords[d].dims == (d,) and self.sizes[d] <= 100_000
        }

    def samples_values(self, U: xr.DataArray) -> np.ndarray:
        """Inverse of :meth:`label_samples`: the (samples x k) array of ``U``."""
        return U.transpose(*self.sample_dims, COMPONENT).values.reshape(self.n_samples, -1)

    def features_values(self, V: xr.DataArray) -> np.ndarray:
        """Inverse of :meth:`label_features`: the (features x k) array of ``V``."""
        return V.transpose(COMPONENT, *self.feature_dims).values.reshape(-1, self.n_features).T

    def feature_vector_values(self, x: xr.DataArray) -> np.ndarray:
        """Inverse of :meth:`label_feature_vector`: the (features,) array of ``x``."""
        return x.transpose(*self.feature_dims).values.reshape(self.n_features)

    # ---------------------------------------------------------------- labels
    def coords_on(self, dims: Iterable[Hashable]) -> dict:
        """The coordinates that lie along ``dims`` only."""
        dims = set(dims)
        return {k: v for k, v in self.coords.items() if set(v.dims) <= dims}

    def component_coord(self, k: int) -> dict:
        """The ``component`` coordinate of ``k`` components, counted from 1 (EOF1, PC1)."""
        return {COMPONENT: (COMPONENT, component_labels(k))}

    def label_samples(self, U, name: str, attrs: dict | None = None) -> xr.DataArray:
        """(samples x k) array -> DataArray (*sample_dims, component)."""
        k = U.shape[1]
        data = backend.reshape(U, (*self.sample_shape, k))
        coords = {**self.coords_on(self.sample_dims), **self.component_coord(k)}
        return xr.DataArray(
            data, dims=(*self.sample_dims, COMPONENT), coords=coords, name=name, attrs=attrs
        )

    def label_features(self, V, name: str, attrs: dict | None = None) -> xr.DataArray:
        """(features x k) array -> DataArray (component, *feature_dims)."""
        k = V.shape[1]
        data = backend.reshape(V.T, (k, *self.feature_shape))
        coords = {**self.coords_on(self.feature_dims), **self.component_coord(k)}
        return xr.DataArray(
            data, dims=(COMPONENT, *self.feature_dims), coords=coords, name=name, attrs=attrs
        )

    def label_feature_vector(self, x, name: str) -> xr.DataArray:
        """(features,) array -> DataArray over the feature dims."""
        return xr.DataArray(
            backend.reshape(x, self.feature_shape),
            dims=self.feature_dims,
            coords=self.coords_on(self.feature_dims),
            name=name,
        )

    def label_full(self, X, attrs: dict | None = None) -> xr.DataArray:
        """(samples x features) array -> DataArray like the input (dims in its order)."""
        data = backend.reshape(X, (*self.sample_shape, *self.feature_shape))
        out = xr.DataArray(
            data,
            dims=(*self.sample_dims, *self.feature_dims),
            coords=self.coords_on(self.dims),
            name=self.name,
            attrs=self.attrs if attrs is None else attrs,
        )
        return out.transpose(*self.dims)

    def label_new_samples(self, U, sample_dims, shape, coords, name: str) -> xr.DataArray:
        k = U.shape[1]
        return xr.DataArray(
            backend.reshape(U, (*shape, k)),
            dims=(*sample_dims, COMPONENT),
            coords={**coords, **self.component_coord(k)},
            name=name,
        )


@dataclass(frozen=True)
class FeatureLocator:
    """Turns flat feature indices into ``lat=-12.5, lon=180.0``-style text."""

    dims: tuple
    shape: tuple
    coords: dict

    def __call__(self, idx: np.ndarray) -> str:
        idx = np.asarray(idx)
        parts = []
        for flat in idx[:5]:
            pos = np.unravel_index(int(flat), self.shape)
            items = []
            for d, i in zip(self.dims, pos, strict=True):
                if d in self.coords:
                    items.append(f"{d}={_fmt(self.coords[d][i])}")
                else:
                    items.append(f"{d}[{i}]")
            parts.append("(" + ", ".join(items) + ")")
        more = f" and {idx.size - 5} more" if idx.size > 5 else ""
        return ", ".join(parts) + more


def label_gap(wanted, have) -> tuple[Any, str] | None:
    """Whether the index ``have`` covers every label of ``wanted`` once: ``None`` if it does,
    else the labels it lacks and up to three of them as text (or "duplicates") for an error."""
    lacking = wanted.difference(have)
    if not len(lacking) and have.is_unique:
        return None
    return lacking, ", ".join(_fmt(v) for v in lacking[:3]) if len(lacking) else "duplicates"


def _fmt(value: Any) -> str:
    if isinstance(value, np.datetime64 | np.timedelta64):
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value) if isinstance(value, str) else str(value)


# ------------------------------------------------ the layout, saved and restored
def describe_layout(layout: Layout) -> dict:
    """What, besides the coordinates, restores this layout: JSON-able values.

    ``cftime`` maps each coordinate of cftime dates to its calendar: a store
    decodes dates of the standard calendar as ``datetime64``, and
    :func:`layout_from_description` turns them back.
    """
    out = {
        "name": None if layout.name is None else str(layout.name),
        "dims": [str(d) for d in layout.dims],
        "sample_dims": [str(d) for d in layout.sample_dims],
        "input_attrs": jsonable(layout.attrs),
    }
    calendars = {str(k): c for k, v in layout.coords.items() if (c := cftime_calendar(v))}
    if calendars:
        out["cftime"] = calendars
    return out


def layout_from_description(description: dict, ds: xr.Dataset) -> Layout:
    """The layout of a saved result: ``description`` plus the sizes and coords of ``ds``."""
    dims = tuple(description["dims"])
    sample_dims = tuple(description["sample_dims"])
    coords = {k: v.variable for k, v in ds.coords.items() if COMPONENT not in v.dims}
    for name, calendar in (description.get("cftime") or {}).items():
        if name in coords:
            coords[name] = as_cftime(coords[name], calendar)
    return Layout(
        name=description["name"],
        dims=dims,
        sample_dims=sample_dims,
        feature_dims=tuple(d for d in dims if d not in sample_dims),
        sizes={d: ds.sizes[d] for d in dims},
        coords=coords,
        attrs=dict(description["input_attrs"]),
    )


def jsonable(obj: Any):
    """``obj`` with NumPy scalars and arrays as plain Python, anything else unknown as text."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def as_cftime(var: xr.Variable, calendar: str) -> xr.Variable:
    """``var``'s datetime64 values as cftime dates of ``calendar`` (other values unchanged).

    A store decodes dates of the standard calendar as datetime64 unless told
    otherwise; this undoes that, to the microsecond (cftime's resolution).
    Without cftime installed, the dates stay datetime64.
    """
    if var.dtype.kind != "M":
        return var
    try:
        import cftime
    except ImportError:
        return var
    values = var.values
    if np.isnat(values).any():  # cftime has no "not a time"
        return var
    micro = values.astype("datetime64[us]").astype(np.int64)
    dates = cftime.num2date(
        micro.ravel(),
        "microseconds since 1970-01-01",
        calendar=calendar,
        only_use_cftime_datetimes=True,
    )
    values = np.asarray(dates, dtype=object).reshape(var.shape)
    return xr.Variable(var.dims, values, dict(var.attrs))
