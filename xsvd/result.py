"""The labeled result of an SVD: ``U, S, V = res`` and what can be done with it."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from . import _backend, _units
from ._layout import COMPONENT, Layout
from .linalg import Decomposition

__all__ = ["SVDResult"]


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
        lazy = " (lazy)" if _backend.is_dask(self._d.S) else ""
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

            lazy = _lazy_parts(self._d)
            if lazy:
                import dataclasses

                done = Progress().compute(lazy)
                return self._with(dataclasses.replace(self._d, **done))
            return self
        return self._with(_dask_apply("compute", self._d, **kwargs))

    def persist(self, **kwargs) -> SVDResult:
        """A copy whose lazy parts are computed and kept in (cluster) memory."""
        return self._with(_dask_apply("persist", self._d, **kwargs))

    # ------------------------------------------------------------ devices
    def as_numpy(self) -> SVDResult:
        """A copy in host memory: NumPy arrays (lazy results: Dask arrays of NumPy chunks)."""
        return self._with(_moved(self._d, "cpu"))

    def as_cupy(self) -> SVDResult:
        """A copy on the GPU: CuPy arrays (lazy results: Dask arrays of CuPy chunks).

        Needs CuPy (``pip install "xsvd[gpu]"``) and a CUDA device.
        """
        return self._with(_moved(self._d, "gpu"))

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
        mean = d.mean if d.nan_features is None else _nan_where(d.nan_features, d.mean)
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
            X = X * _on_backend(inv, X)
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
            V = _fill_rows(V, mask)
            X = _fill_masked_features(X, mask)
        dtype = np.float32 if X.dtype == np.float32 else np.float64
        X = X.astype(dtype)
        if d.mean is not None:
            X = X - d.mean
        if self._weights is not None:
            X = X * _on_backend(self._weights, X)
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
        from .io import result_dataset, write_result

        write_result(result_dataset(self.as_numpy()), path, mode=mode)

    def to_dataset(self) -> xr.Dataset:
        """U, S, V (and the mean and explained variance) as one Dataset, for saving.

        Pint units become ``units`` attributes (as ``.pint.dequantify()`` does).
        """
        data = {"U": self.U, "S": _units.dequantify(self.S), "V": self.V}
        data["explained_variance_ratio"] = self.explained_variance_ratio
        if self.mean is not None:
            data["mean"] = _units.dequantify(self.mean)
        if self._weights is not None:
            data["weights"] = self._layout.label_feature_vector(self._weights, "weights")
        ds = xr.Dataset(data)
        ds.attrs = {
            "xsvd_method": self.method,
            "xsvd_sample_dims": list(map(str, self._layout.sample_dims)),
            **{f"xsvd_{k}": _attr(v) for k, v in self.settings.items() if v is not None},
        }
        return ds


_PARTS = ("U", "S", "V", "mean", "total_ss", "nan_features")


def _moved(d: Decomposition, device: str) -> Decomposition:
    import dataclasses

    parts = {n: getattr(d, n) for n in _PARTS if getattr(d, n) is not None}
    return dataclasses.replace(d, **{n: _backend.move(x, device) for n, x in parts.items()})


def _lazy_parts(d: Decomposition) -> dict:
    return {name: getattr(d, name) for name in _PARTS if _backend.is_dask(getattr(d, name))}


def _dask_apply(how: str, d: Decomposition, **kwargs) -> Decomposition:
    """``dask.compute`` or ``dask.persist`` every lazy part of a decomposition at once."""
    import dataclasses

    lazy = _lazy_parts(d)
    if not lazy:
        return d
    import dask

    done = getattr(dask, how)(*lazy.values(), **kwargs)
    return dataclasses.replace(d, **dict(zip(lazy, done, strict=True)))


def _attr(v: Any):
    if isinstance(v, bool | np.bool_):
        return int(v)
    return v


def _on_backend(vec: np.ndarray, like):
    """A NumPy vector moved to the backend of ``like`` (CuPy when its chunks are)."""
    xp = _backend.namespace(like)
    return xp.asarray(vec)


def _nan_where(mask, x):
    if _backend.is_dask(x) or _backend.is_dask(mask):
        import dask.array as da

        return da.where(mask, np.nan, x)
    return _backend.namespace(x).where(mask, np.nan, x)


def _safe(S):
    return S + (S == 0)


def _fill_rows(V, mask):
    if _backend.is_dask(V):
        import dask.array as da

        return da.where(mask[:, None], 0, V)
    xp = _backend.namespace(V)
    return xp.where(mask[:, None], 0, V)


def _fill_masked_features(X, mask):
    """Zero the features that were all-NaN in the decomposed data; other NaN raise."""
    if _backend.is_dask(X) or _backend.is_dask(mask):
        import dask.array as da

        return da.map_blocks(_zero_masked, X, mask[None, :], dtype=X.dtype)
    return _zero_masked(X, mask[None, :])


def _zero_masked(X, mask):
    xp = _backend.namespace(X)
    out = xp.where(mask, 0, X)
    if xp.isnan(out).any():
        raise ValueError(
            "The new data have NaN at features that were not all-NaN in the decomposed "
            "data. Fill or drop them before projecting."
        )
    return out
