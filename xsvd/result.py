"""The labeled result of an SVD: ``U, S, V = res`` and what can be done with it.

The result also owns its saved form: :meth:`SVDResult.to_dataset` writes
everything needed to restore it into one Dataset (the format below), and
:meth:`SVDResult.from_dataset` / :func:`open_result` restore it, the layout of
dims and coordinates through :class:`~xsvd._layout.Layout`. :mod:`xsvd.io`
only moves Datasets to and from stores.

The saved form (``xsvd_format = 2``): variables ``U``, ``S``, ``V``,
``explained_variance_ratio``, ``total_variance``, and where they apply
``mean``, ``weights`` and ``nan_features``, with the input's coordinates; and
attributes

- ``xsvd_format``, ``xsvd_method``;
- ``xsvd_name``, ``xsvd_dims``, ``xsvd_sample_dims``, ``xsvd_input_attrs``:
  the layout, JSON text;
- ``xsvd_data_units``: the units of pint-quantified input;
- ``xsvd_<setting>`` for each solver setting (``xsvd_seed``, ...): numbers and
  text as they are, booleans as 0/1; settings that are None are left out.

Results saved by earlier versions (``xsvd_format = 1``, the settings as one
JSON attribute) still open.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import xarray as xr

from . import _backend, _units, io
from ._layout import COMPONENT, Layout
from .linalg import Decomposition

__all__ = ["SVDResult", "open_result"]

#: The version of the saved form that :meth:`SVDResult.to_dataset` writes.
FORMAT = 2
#: Settings that are booleans (saved as 0/1).
_BOOLEAN_SETTINGS = frozenset({"krylov", "center", "weighted"})
#: Attributes of the saved form that are not settings.
_LAYOUT_ATTRS = ("name", "dims", "sample_dims", "input_attrs")


class SVDResult:
    """Labeled singular value decomposition ``B ≈ U diag(S) V``.

    ``B`` is the data as a (samples x features) matrix, centered and weighted
    as requested. Unpacks as ``U, S, V = res``.

    For pint-quantified data, ``S`` is quantified in the data's units (times
    the weights' units when they are quantified; ``delta_degC`` for ``degC``
    data), ``mean`` and ``reconstruct()`` in the data's units; ``U``, ``V``,
    ``explained_variance_ratio`` and ``project()`` scores are plain
    (dimensionless).

    Attributes
    ----------
    U : xarray.DataArray
        Left singular vectors (sample scores), dims ``(*dim, "component")``.
    S : xarray.DataArray
        Singular values, dims ``("component",)``, in decreasing order.
    V : xarray.DataArray
        Right singular vectors (feature patterns), dims
        ``("component", *feature_dims)``; NaN at features that are NaN at
        every sample of the input.
    method : {"exact", "compressed"}
        Which solver ran.
    settings : dict
        The solver settings (k, n_power_iter, n_oversamples, seed, ...).
    """

    def __init__(
        self,
        decomposition: Decomposition,
        layout: Layout,
        *,
        center: bool,
        weights: np.ndarray | None,
        units: _units.Units | None = None,
    ):
        d = decomposition
        self._d = d
        self._layout = layout
        self._weights = weights
        self._units = units
        self.center = center
        self.method = d.method
        self.settings = dict(d.settings, center=center, weighted=weights is not None)
        name = layout.name if layout.name is not None else "data"
        self.U = layout.label_samples(
            d.U, "U", {"long_name": f"left singular vectors (sample scores) of {name}"}
        )
        s_attrs = {"long_name": f"singular values of {name}"}
        if "units" in layout.attrs:
            s_attrs["units"] = layout.attrs["units"]
        self._S = xr.DataArray(  # plain numbers, for the dimensionless ratios
            d.S,
            dims=(COMPONENT,),
            coords=layout.component_coord(d.S.shape[0]),
            name="S",
            attrs=s_attrs,
        )
        self.S = _units.quantify(self._S, self._unit("singular"))
        self.V = layout.label_features(
            d.V, "V", {"long_name": f"right singular vectors (feature patterns) of {name}"}
        )

    # ------------------------------------------------------------ protocol
    def __iter__(self):
        return iter((self.U, self.S, self.V))

    def __len__(self) -> int:
        return 3

    def __repr__(self) -> str:
        L = self._layout
        k = self.S.sizes[COMPONENT]
        lazy = " (lazy)" if self._d.lazy_parts() else ""
        return (
            f"<xsvd.SVDResult{lazy}: method={self.method!r}, k={k}, "
            f"samples={dict((d, L.sizes[d]) for d in L.sample_dims)}, "
            f"features={dict((d, L.sizes[d]) for d in L.feature_dims)}, "
            f"center={self.center}, weighted={self._weights is not None}>"
        )

    @property
    def plot(self):
        """Plots of this result: ``res.plot.scree()``, ``.components()``, ``.scores()``.

        Needs matplotlib (``pip install "xsvd[plot]"``); see :class:`xsvd.plot.ResultPlotter`.
        """
        from .plot import ResultPlotter

        return ResultPlotter(self.as_numpy())

    # ------------------------------------------------------------ dask
    def compute(self, *, progress: bool = False, **kwargs) -> SVDResult:
        """A computed copy of a lazy result (all parts in one Dask computation).

        ``progress=True`` shows a progress bar (distributed's with a client);
        other keywords go to ``dask.compute``.
        """
        if progress and not kwargs:
            from ._progress import Progress

            return self._with(self._d.computed(Progress()))
        return self._with(self._d.computed(**kwargs))

    def persist(self, **kwargs) -> SVDResult:
        """A copy whose lazy parts are computed and kept in (cluster) memory."""
        return self._with(self._d.persisted(**kwargs))

    # ------------------------------------------------------------ devices
    def as_numpy(self) -> SVDResult:
        """A copy in host memory: NumPy arrays (lazy results: Dask arrays of NumPy chunks)."""
        return self._with(self._d.moved("cpu"))

    def as_cupy(self) -> SVDResult:
        """A copy on the GPU: CuPy arrays (lazy results: Dask arrays of CuPy chunks).

        Needs CuPy (``pip install "xsvd[gpu]"``) and a CUDA device.
        """
        return self._with(self._d.moved("gpu"))

    def _with(self, d: Decomposition) -> SVDResult:
        return SVDResult(
            d, self._layout, center=self.center, weights=self._weights, units=self._units
        )

    def _unit(self, which: str):
        """Pint units of ``"data"``, ``"singular"`` or ``"variance"``; None when plain."""
        return None if self._units is None else getattr(self._units, which)

    # ------------------------------------------------------------- derived
    @property
    def mean(self) -> xr.DataArray | None:
        """The per-feature mean that was removed (None when not centering)."""
        d = self._d
        if d.mean is None:
            return None
        mean = d.mean if d.nan_features is None else _backend.where(d.nan_features, np.nan, d.mean)
        return _units.quantify(self._layout.label_feature_vector(mean, "mean"), self._unit("data"))

    @property
    def total_variance(self) -> xr.DataArray:
        """Sum of squares of the centered, weighted data (``||B||_F^2``)."""
        out = xr.DataArray(self._d.total_ss, name="total_variance")
        return _units.quantify(out, self._unit("variance"))

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """Each component's share of the total variance of the centered, weighted data.

        ``S**2 / ||B||_F**2``, so the ratios of all ``min(m, n)`` components of
        an exact SVD add up to 1 (to rounding).
        """
        out = self._S**2 / self._d.total_ss
        out.name = "explained_variance_ratio"
        out.attrs = {"long_name": "fraction of total variance explained", "units": "1"}
        return out

    # ------------------------------------------------------------ rebuild
    def reconstruct(self, k: int | None = None) -> xr.DataArray:
        """The rank-k approximation, labeled like the input.

        Weights and centering are undone: features with weight 0 come back as
        NaN (their values cannot be recovered), all-NaN features as NaN.

        Parameters
        ----------
        k : int, optional
            Use only the first ``k`` components (default: all that were computed).
        """
        d = self._d
        kmax = d.S.shape[0]
        if k is None:
            k = kmax
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= kmax:
            raise ValueError(f"k must be an integer between 1 and {kmax}, got {k!r}.")
        X = (d.U[:, :k] * d.S[:k]) @ d.V[:, :k].T
        if self._weights is not None:
            w = self._weights
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = np.where(w != 0, 1.0 / np.where(w != 0, w, 1.0), np.nan)
            X = X * _backend.on_backend_of(inv, X)
        if d.mean is not None:
            X = X + d.mean
        units = self._unit("data")
        if units is None:
            return self._layout.label_full(X)
        attrs = {k: v for k, v in self._layout.attrs.items() if k != "units"}
        return _units.quantify(self._layout.label_full(X, attrs), units)

    def project(self, other: xr.DataArray) -> xr.DataArray:
        """Component scores of new data with the same features.

        Scores are on the scale of ``U``: ``((other - mean) * weights) @ V.T / S``,
        so projecting the decomposed data gives back ``U``.

        Parameters
        ----------
        other : xarray.DataArray
            Data with the decomposed data's feature dimensions (same sizes and
            coordinates) and any sample dimensions. Quantified when the
            decomposed data were; converted to their units.

        Returns
        -------
        xarray.DataArray
            Dims ``(*sample_dims_of_other, "component")``.
        """
        L = self._layout
        other = _units.magnitude_in(other, self._units)
        X, sample_dims, shape, coords = L.samples_matrix(other)
        d = self._d
        V = d.V
        if d.nan_features is not None:
            mask = d.nan_features
            V = _backend.where(mask[:, None], 0, V)
            X = _backend.map_blocks(_zero_masked, X, mask[None, :], dtype=X.dtype)
        dtype = np.float32 if X.dtype == np.float32 else np.float64
        X = X.astype(dtype)
        if d.mean is not None:
            X = X - d.mean
        if self._weights is not None:
            X = X * _backend.on_backend_of(self._weights, X)
        scores = X @ V
        S = d.S
        scores = scores / _safe(S)
        return L.label_new_samples(scores, sample_dims, shape, coords, "scores")

    # -------------------------------------------------------------- export
    def to_zarr(self, path, *, mode: str = "w-") -> None:
        """Save U, S, V, coordinates, attrs and the solver settings to a Zarr store.

        Reopen with :func:`xsvd.open_result`. Local writes are atomic: the store
        is written under a temporary name and renamed into place, so a failure
        leaves no partial store. An existing path is only replaced with
        ``mode="w"``. Needs ``pip install "xsvd[io]"``.
        """
        io.write_store(self.as_numpy().to_dataset(), path, mode=mode)

    def to_dataset(self) -> xr.Dataset:
        """Everything that restores this result, as one Dataset (see the module docstring).

        U, S, V, the explained variance, the total variance, and where they
        apply the mean, the weights and the all-NaN feature mask, with the
        input's coordinates; the solver settings and the layout in the
        attributes. Pint units become ``units`` attributes (as
        ``.pint.dequantify()`` does). :meth:`from_dataset` (and
        :func:`xsvd.open_result` for a saved store) restores the result.
        """
        L, d = self._layout, self._d
        data = {"U": self.U, "S": _units.dequantify(self.S), "V": self.V}
        data["explained_variance_ratio"] = self.explained_variance_ratio
        data["total_variance"] = xr.DataArray(d.total_ss, name="total_variance")
        if self.mean is not None:
            data["mean"] = _units.dequantify(self.mean)
        if self._weights is not None:
            data["weights"] = L.label_feature_vector(self._weights, "weights")
        if d.nan_features is not None:
            data["nan_features"] = L.label_feature_vector(d.nan_features, "nan_features")
        ds = xr.Dataset(data)
        attrs: dict[str, Any] = {"xsvd_format": FORMAT, "xsvd_method": self.method}
        attrs.update({f"xsvd_{k}": json.dumps(v) for k, v in L.description().items()})
        data_units = self._unit("data")
        if data_units is not None:
            attrs["xsvd_data_units"] = str(data_units)
        for key, value in self.settings.items():
            if value is not None:
                attrs[f"xsvd_{key}"] = int(value) if key in _BOOLEAN_SETTINGS else _plain(value)
        ds.attrs = attrs
        return ds

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> SVDResult:
        """The result saved in ``ds`` by :meth:`to_dataset` (loaded into memory).

        Raises ``ValueError`` when ``ds`` was not written by :meth:`to_dataset`.
        """
        if "xsvd_format" not in ds.attrs:
            raise ValueError(
                "This Dataset was not written by xsvd (`SVDResult.to_dataset` or `to_zarr`): "
                "it has no `xsvd_format` attribute."
            )
        ds = ds.load()
        layout_desc, settings, center, data_units = _read_attrs(ds.attrs)
        layout = Layout.from_description(layout_desc, ds)
        if data_units is not None:  # the input was quantified: units as an attribute
            layout.attrs.setdefault("units", data_units)
        nan_features = None
        if "nan_features" in ds:
            nan_features = layout.feature_vector_values(ds["nan_features"]).astype(bool)
        mean = None
        if "mean" in ds:
            mean = layout.feature_vector_values(ds["mean"])
            if nan_features is not None:  # the solver's mean is 0 there, NaN only in the label
                mean = np.where(nan_features, 0.0, mean)
        weights = layout.feature_vector_values(ds["weights"]) if "weights" in ds else None
        d = Decomposition(
            layout.samples_values(ds["U"]),
            ds["S"].values,
            layout.features_values(ds["V"]),
            mean,
            np.asarray(ds["total_variance"].values),
            nan_features,
            ds.attrs["xsvd_method"],
            {k: v for k, v in settings.items() if k not in ("center", "weighted")},
        )
        return cls(d, layout, center=center, weights=weights)


def open_result(path: str | os.PathLike, *, storage_options: dict | None = None) -> SVDResult:
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
    ds = io.read_store(path, storage_options=storage_options)
    try:
        return SVDResult.from_dataset(ds)
    except ValueError as exc:
        raise ValueError(
            f"{os.fspath(path)!r} is not a result written by xsvd's `to_zarr`."
        ) from exc


def _read_attrs(attrs: dict):
    """``(layout description, settings, center, data units)`` from a saved result's attributes."""
    desc = {k: json.loads(attrs[f"xsvd_{k}"]) for k in _LAYOUT_ATTRS}
    units = attrs.get("xsvd_data_units")
    if int(attrs["xsvd_format"]) == 1:  # settings as one JSON attribute
        settings = json.loads(attrs["xsvd_settings"])
        if "layout" in settings:  # renamed: which way the data were cut
            cut = settings.pop("layout")
            settings["stripes"] = {"rows": "samples", "cols": "features"}.get(cut, cut)
        return desc, settings, bool(attrs["xsvd_center"]), units
    skip = {"xsvd_format", "xsvd_method", "xsvd_data_units", *(f"xsvd_{k}" for k in _LAYOUT_ATTRS)}
    settings = {}
    for name, value in attrs.items():
        if name.startswith("xsvd_") and name not in skip:
            key = name[len("xsvd_") :]
            settings[key] = bool(value) if key in _BOOLEAN_SETTINGS else _plain(value)
    return desc, settings, bool(settings.get("center", False)), units


def _plain(value):
    """A NumPy scalar as the Python number it holds (attributes read back may be NumPy)."""
    return value.item() if isinstance(value, np.generic) else value


def _zero_masked(X, mask):
    """Zero the features that were all-NaN in the decomposed data; other NaN raise."""
    xp = _backend.namespace(X)
    out = xp.where(mask, 0, X)
    if xp.isnan(out).any():
        raise ValueError(
            "The new data have NaN at features that were not all-NaN in the decomposed "
            "data. Fill or drop them before projecting."
        )
    return out


def _safe(S):
    """``S`` with zeros replaced by 1, to divide by (zero components give zero scores)."""
    return S + (S == 0)
