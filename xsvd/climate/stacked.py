"""Several fields as one (samples x features) matrix: :class:`Stacked`.

Every data variable of a Dataset (or every DataArray of a mapping) is read as
its own matrix by its own :class:`~xsvd.labeled.layout.Layout` (features: its
dims other than the shared sample dims, so the variables' grids may differ);
:class:`Stacked` puts them side by side along one feature axis (lazily for
Dask), checks that they share the samples, turns per-variable weights and
``center=`` values into vectors over the columns, and takes results apart
again per variable (:meth:`Stacked.split`). Used by
:mod:`xsvd.climate.multivariate` and its result.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core import backend
from ..core.common import frobenius_norm
from ..labeled import preprocess
from ..labeled import units as _units
from ..labeled.dims import as_dims, default_sample_dim
from ..labeled.layout import FeatureLocator, Layout
from .multivariate_result import FEATURE

__all__ = ["Stacked", "as_variables", "concatenate_columns"]


@dataclass(frozen=True)
class Stacked:
    """How the variables of a Dataset map to the columns of one (samples x features) matrix.

    ``names`` in order, each variable's :class:`~xsvd.labeled.layout.Layout`
    and first column (``offsets``), and ``layout``: the combined matrix's
    layout, the sample dims with one feature dim ``FEATURE`` of all columns.
    """

    names: tuple
    layouts: dict
    offsets: tuple
    layout: Layout

    # ------------------------------------------------------------------ build
    @classmethod
    def from_data(cls, data, dim=None) -> Stacked:
        variables = as_variables(data)
        names = tuple(variables)
        sample_dims = _sample_dims(variables, dim)
        layouts = {}
        for name, var in variables.items():
            _check_variable(name, var, sample_dims)
            layouts[name] = Layout.from_dataarray(var, sample_dims)
        first = names[0]
        if not isinstance(data, xr.Dataset):  # a Dataset has one coordinate per dim already
            _check_shared(variables, layouts, first, sample_dims)
        L = layouts[first]
        offsets = tuple(np.cumsum([0] + [layouts[n].n_features for n in names])[:-1].tolist())
        total = sum(layouts[name].n_features for name in names)
        combined = Layout(
            name=", ".join(str(name) for name in names),
            dims=(*sample_dims, FEATURE),
            sample_dims=sample_dims,
            feature_dims=(FEATURE,),
            sizes={**{d: L.sizes[d] for d in sample_dims}, FEATURE: total},
            coords=L.coords_on(sample_dims),
            attrs=dict(data.attrs) if isinstance(data, xr.Dataset) else {},
        )
        return cls(names, layouts, offsets, combined)

    @property
    def n_features(self) -> int:
        return self.layout.sizes[FEATURE]

    def span(self, name) -> slice:
        """The columns of variable ``name`` in the combined matrix."""
        start = self.offsets[self.names.index(name)]
        return slice(start, start + self.layouts[name].n_features)

    def variables(self, data) -> dict:
        """The decomposed variables of ``data`` (a Dataset or mapping), in order."""
        variables = as_variables(data)
        return {name: variables[name] for name in self.names}

    # --------------------------------------------------------------- matrix
    def to_matrix(self, variables: Mapping):
        """The variables' matrices side by side (Dask: lazily, rows chunked as the first's)."""
        mats = []
        for name in self.names:
            var = variables[name]
            if backend.numpy_dtype(var.dtype).kind not in "biuf":
                raise TypeError(
                    f"Variable {name!r} holds {var.dtype} values, not numbers. Select the "
                    f"fields to decompose, e.g. `ds[{list(self.names[:2])!r}]`, or drop it "
                    f"(`ds.drop_vars({name!r})`)."
                )
            mats.append(self.layouts[name].to_matrix(var))
        return concatenate_columns(mats)

    def weights_vector(self, weights) -> np.ndarray | None:
        """The per-variable weights as one vector over the columns (None: unweighted)."""
        if weights is None:
            return None
        example = f"xsvd.coslat_weights(ds[{self.names[0]!r}])"
        lacking = "which would leave it unweighted beside weighted ones"
        per = self._per_variable(weights, "weights", example, lacking, lambda name: "None")
        vectors = []
        for name, given in per.items():
            L = self.layouts[name]
            try:
                w = preprocess.weights_vector(L, given)
            except (TypeError, ValueError) as err:
                raise type(err)(f"weights of variable {name!r}: {err}") from None
            vectors.append(np.ones(L.n_features) if w is None else w)
        return np.concatenate(vectors)

    def center_values(self, center) -> xr.DataArray:
        """``center=`` values per variable (a Dataset or a dict of DataArrays over each
        variable's feature dims, or one DataArray for every variable) as one DataArray over
        the columns, for the core (:func:`xsvd.labeled.preprocess.center_vector`)."""
        example = f"ds[{self.names[0]!r}].mean('time')"
        lacking = "which would subtract nothing from it beside the others"
        sample = ", ".join(f"{d}=0" for d in self.layout.sample_dims)

        def zeros(name: str) -> str:
            return f"xr.zeros_like(ds[{name!r}].isel({sample}, drop=True))"

        vectors = []
        for name, given in self._per_variable(center, "center", example, lacking, zeros).items():
            try:
                vectors.append(preprocess.center_vector(self.layouts[name], given))
            except (TypeError, ValueError) as err:
                raise type(err)(f"center of variable {name!r}: {err}") from None
        return xr.DataArray(np.concatenate(vectors), dims=(FEATURE,))

    def _per_variable(self, values, what: str, example: str, lacking: str, none) -> dict:
        """``values`` keyed by variable, in the variables' order: a Dataset or a mapping
        (every variable needs an entry; ``none(name)``: the code of an entry that leaves a
        variable as it is), or one value for every variable."""
        if isinstance(values, xr.Dataset):
            given = dict(values.data_vars)
        elif isinstance(values, Mapping):
            given = dict(values)
        else:  # one DataArray (or number) for every variable
            given = dict.fromkeys(self.names, values)
        unknown = [name for name in given if name not in self.layouts]
        if unknown:
            raise ValueError(
                f"{what} are given for {unknown[0]!r}, which is not one of the decomposed "
                f"variables {list(self.names)}. Key the {what} by variable name, e.g. "
                f"`{what}={{{self.names[0]!r}: {example}}}`."
            )
        missing = [name for name in self.names if name not in given]
        if missing:
            name = missing[0]
            raise ValueError(
                f"{what} have no entry for the variable {name!r} (they are keyed "
                f"{list(given)}), {lacking}. Give every variable an entry, e.g. "
                f"`{what}={{**{what}, {name!r}: {none(name)}}}`."
            )
        return {name: given[name] for name in self.names}

    def equal_variance_scales(self, a, weights, standardized, read) -> dict:
        """Each variable's factor ``1 / sqrt(total weighted variance)``.

        ``standardized``: the weights with the standard deviations folded in
        (then each varying feature's weighted variance is its weight squared,
        no read); otherwise the standard deviations are read here.
        """
        w = np.ones(self.n_features) if weights is None else np.asarray(weights)
        if standardized is not None:
            spread = np.where(np.asarray(standardized) != 0, w, 0.0)
        else:
            inv = preprocess.standardized_weights(
                a, None, missing=read.missing, negative_missing=read.negative_missing
            )
            with np.errstate(divide="ignore", over="ignore"):
                spread = np.where(inv > 0, w / np.where(inv > 0, inv, 1.0), 0.0)
        scales = {}
        for name in self.names:
            norm = frobenius_norm(np.abs(spread[self.span(name)]))  # a NumPy float, never 1 / 0.0
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                scale = 1.0 / norm
            if not (np.isfinite(norm) and norm > 0 and np.isfinite(scale)):
                raise ValueError(
                    f"equal_variance=True: variable {name!r} has a total (weighted) variance "
                    f"of {norm**2:.3g}, which cannot be scaled to 1 (every feature constant, "
                    "all-NaN, of weight 0, or values out of range). Drop the variable "
                    f"(`ds.drop_vars({name!r})`) or pass equal_variance=False."
                )
            scales[name] = float(scale)
        return scales

    def per_feature(self, per_variable: Mapping) -> np.ndarray:
        """A value per variable, repeated over its columns."""
        return np.concatenate(
            [np.full(self.layouts[n].n_features, float(per_variable[n])) for n in self.names]
        )

    def gap_hint(self, variables: Mapping) -> str | None:
        """Advice for a NaN error when a variable is NaN at every feature at some samples.

        That is what a Dataset of fields covering different periods holds
        (xarray fills the gaps with NaN). In-memory NumPy data only.
        """
        for name in self.names:
            L = self.layouts[name]
            x = variables[name].data
            if not isinstance(x, np.ndarray) or x.dtype.kind not in "fc":
                continue
            empty = np.isnan(L.to_matrix(variables[name])).all(axis=1)
            if empty.any() and not empty.all():
                dims = L.sample_dims
                where = FeatureLocator(dims, L.sample_shape, L.index_values(dims))(
                    np.flatnonzero(empty)
                )
                return (
                    f"Variable {name!r} is NaN at every feature at {int(empty.sum())} of "
                    f"{L.n_samples} samples ({where}): do the variables cover different "
                    f"{dims[0]!r} ranges? A Dataset fills the gaps with NaN. Decompose the "
                    f"common range: align the fields along {dims[0]!r} only, `xr.Dataset(dict("
                    f"zip(names, xr.align(*fields, join='inner', exclude={self.feature_dims()}"
                    f"))))`. {_EXCLUDE}"
                )
        return None

    def feature_dims(self) -> list:
        """Every variable's feature dims, once each (what ``xr.align`` must exclude)."""
        return sorted({d for L in self.layouts.values() for d in L.feature_dims}, key=str)

    def locate(self, idx) -> str:
        """Names flat column indices as ``sst (lat=-12.5, lon=180.0)`` in error messages."""
        idx = np.asarray(idx)
        parts = []
        starts = np.asarray(self.offsets)
        for flat in idx[:5]:
            i = int(np.searchsorted(starts, int(flat), side="right")) - 1
            name = self.names[i]
            where = self.layouts[name].feature_locator()(np.asarray([int(flat) - starts[i]]))
            parts.append(f"{name} {where}")
        more = f" and {idx.size - 5} more" if idx.size > 5 else ""
        return ", ".join(parts) + more

    # --------------------------------------------------------------- labels
    def split(self, x: xr.DataArray, *, name_attrs: bool = False) -> dict:
        """A DataArray over ``FEATURE`` -> one DataArray per variable over its feature dims.

        ``name_attrs``: give each the variable's dims order and attributes
        (for data-like results: the mean, the reconstruction).
        """
        others = [d for d in x.dims if d != FEATURE]
        x = x.transpose(*others, FEATURE)
        keep = {c: v for c, v in x.coords.items() if FEATURE not in v.dims}
        out = {}
        for name in self.names:
            L = self.layouts[name]
            block = x.data[..., self.span(name)]
            data = backend.reshape(block, (*block.shape[:-1], *L.feature_shape))
            coords = {**keep, **L.coords_on(L.feature_dims)}
            part = xr.DataArray(
                data, dims=(*others, *L.feature_dims), coords=coords, attrs=dict(x.attrs)
            )
            if name_attrs:
                order = [d for d in L.dims if d in part.dims]
                part = part.transpose(*order, ...)
                part.attrs = dict(L.attrs)
            out[name] = part.rename(name)
        return out

    def combined_new(self, other) -> xr.DataArray:
        """New data with every variable's features, as one DataArray over (samples, FEATURE)."""
        variables = as_variables(other)
        lacking = [name for name in self.names if name not in variables]
        if lacking:
            raise ValueError(
                f"The new data lack the variable {lacking[0]!r}; project() needs every "
                f"decomposed variable {list(self.names)} (with their feature dims)."
            )
        mats, first = [], None
        for name in self.names:
            L = self.layouts[name]
            var = _units.magnitude_in(variables[name], None, L.attrs)
            X, sample_dims, shape, coords = L.samples_matrix(var)
            if first is None:
                first = (name, sample_dims, shape, coords)
            elif (sample_dims, shape) != first[1:3] or not _same_coords(coords, first[3]):
                mine = dict(zip(sample_dims, shape, strict=True))
                theirs = dict(zip(first[1], first[2], strict=True))
                raise ValueError(
                    f"In the new data, variable {name!r} has samples {mine} but {first[0]!r} "
                    f"has {theirs} (or other labels). "
                    "Every variable needs the same samples: align them along the samples "
                    f"only, e.g. `xr.align(*variables, join='inner', exclude="
                    f"{self.feature_dims()})`. {_EXCLUDE}"
                )
            mats.append(X)
        _, sample_dims, shape, coords = first
        matrix = concatenate_columns(mats)
        return xr.DataArray(
            backend.reshape(matrix, (*shape, self.n_features)),
            dims=(*sample_dims, FEATURE),
            coords=coords,
        )


def concatenate_columns(mats: list):
    """Matrices with the same rows side by side: NumPy/CuPy, or lazily for Dask.

    Dask matrices are rechunked along the rows to the first Dask one's row
    chunks (each block of rows then holds every variable), NumPy ones wrapped
    with those chunks. Where no matrix is chunked along its features (fields
    chunked along time, as usual), each block of rows becomes one chunk of all
    the columns, so the solver streams stripes of samples as it does for one
    field (a block of rows of every variable at a time, never a whole field).
    """
    if len(mats) == 1:
        return mats[0]
    lazy = [m for m in mats if backend.is_dask(m)]
    if not lazy:
        return backend.api(mats[0]).concat(mats, axis=1)
    import dask.array as da

    rows = lazy[0].chunks[0]
    parts = []
    for m in mats:
        if not backend.is_dask(m):
            m = da.from_array(m, chunks=(rows, -1))
        elif m.chunks[0] != rows:
            m = m.rechunk({0: rows})
        parts.append(m)
    out = da.concatenate(parts, axis=1)
    if all(m.numblocks[1] == 1 for m in parts):
        out = out.rechunk({1: -1})
    return out


# ------------------------------------------------------------------ checks
#: Why the advice to align excludes the feature dims.
_EXCLUDE = (
    "(`exclude` keeps each grid whole: without it xr.align also intersects feature dims "
    "of the same name, cutting a finer grid to the points of a coarser one.)"
)


def as_variables(data) -> dict:
    if isinstance(data, xr.Dataset):
        if not data.data_vars:
            raise ValueError(
                "The Dataset has no data variables to decompose (only coordinates). Add the "
                "fields as data variables, e.g. `xr.Dataset({'sst': sst, 'slp': slp})`."
            )
        return {name: data[name] for name in data.data_vars}
    if (
        isinstance(data, Mapping)
        and data
        and all(isinstance(v, xr.DataArray) for v in data.values())
    ):
        return dict(data)
    raise TypeError(
        "The multivariate SVD takes an xarray.Dataset (or a non-empty dict of DataArrays), "
        f"got {type(data).__name__}. For one field use `da.svd(...)`."
    )


def _sample_dims(variables: dict, dim) -> tuple:
    if dim is not None:
        return as_dims(dim)
    chosen = {}
    for name, var in variables.items():
        try:
            chosen[name] = default_sample_dim(var)
        except ValueError as err:
            raise ValueError(f"Variable {name!r}: {err}") from None
    if len(set(chosen.values())) > 1:
        raise ValueError(
            f"dim was not given, and the variables' default sample dimensions differ: "
            f"{chosen}. Pass the sample dimension(s) they share, e.g. "
            f"dim={next(iter(chosen.values()))!r}."
        )
    return (next(iter(chosen.values())),)


def _check_variable(name, var: xr.DataArray, sample_dims: tuple) -> None:
    lacking = [d for d in sample_dims if d not in var.dims]
    if lacking:
        raise ValueError(
            f"Variable {name!r} has no sample dimension {lacking[0]!r} (its dims are "
            f"{var.dims}). Every variable must have the sample dimension(s) {sample_dims}: "
            f"drop it (`ds.drop_vars({name!r})`), or pass the dim the variables share."
        )
    if all(d in sample_dims for d in var.dims):
        raise ValueError(
            f"Variable {name!r} has only the sample dimension(s) {var.dims}, so no features. "
            f"Drop it (`ds.drop_vars({name!r})`), or give it a feature dimension "
            f"(`ds[{name!r}].expand_dims('point')`)."
        )


def _check_shared(variables: dict, layouts: dict, first, sample_dims) -> None:
    """A mapping's variables: equal sample coordinates; same-named feature dims agree."""
    ref = variables[first]
    for name, var in variables.items():
        grids = sorted({*layouts[first].feature_dims, *layouts[name].feature_dims}, key=str)
        for d in sample_dims:
            if var.sizes[d] != ref.sizes[d] or not _same_index(var, ref, d):
                raise ValueError(
                    f"Variable {name!r} has other {d!r} labels than {first!r} (sizes "
                    f"{var.sizes[d]} and {ref.sizes[d]}). All variables must share the sample "
                    f"coordinates: align them along {d!r} only, e.g. `{first}, {name} = "
                    f"xr.align({first}, {name}, join='inner', exclude={grids})`, or select "
                    f"the same {d!r}. {_EXCLUDE}"
                )
    seen: dict[Hashable, Any] = {}
    for name, var in variables.items():
        for d in layouts[name].feature_dims:
            if d in seen and (
                var.sizes[d] != seen[d][1].sizes[d] or not _same_index(var, seen[d][1], d)
            ):
                raise ValueError(
                    f"Variables {seen[d][0]!r} and {name!r} both have a feature dimension "
                    f"{d!r}, with different coordinates (different grids). Rename one, e.g. "
                    f"`{name}.rename({d}='{d}_{name}')`, so the patterns can share a Dataset."
                )
            seen.setdefault(d, (name, var))


def _same_index(a: xr.DataArray, b: xr.DataArray, d) -> bool:
    if d in a.indexes and d in b.indexes:
        return a.indexes[d].equals(b.indexes[d])
    return True


def _same_coords(a: dict, b: dict) -> bool:
    shared = set(a) & set(b)
    return all(a[c].dims == b[c].dims and a[c].equals(b[c]) for c in shared)
