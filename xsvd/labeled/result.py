"""The labeled result of an SVD: ``U, S, V = res`` and what can be done with it.

The saved form of a result (``to_dataset``, ``from_dataset``, ``to_zarr``,
:func:`xsvd.open_result`) is :mod:`xsvd.io.results`' business; the methods
here forward to it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core import Decomposition, backend
from ..core.missing import missing_rule
from . import statistics
from . import units as _units
from .base import Result
from .layout import COMPONENT, Layout

__all__ = ["SVDResult"]


class SVDResult(Result, statistics.StatisticsMethods):
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
        weights: np.ndarray | None = None,
        units: _units.Units | None = None,
    ):
        d = decomposition
        self._d = d
        self._layout = layout
        self._weights = weights
        self._units = units
        self.center = bool(d.settings["center"])
        self.method = d.method
        self.settings = dict(d.settings)
        name = layout.name if layout.name is not None else "data"
        self.U = layout.label_samples(
            d.U, "U", {"long_name": f"left singular vectors (sample scores) of {name}"}
        )
        s_attrs = {"long_name": f"singular values of {name}"}
        if "units" in layout.attrs and not d.settings.get("standardize"):
            s_attrs["units"] = layout.attrs["units"]
        if units is not None and units.text:  # reopened without pint: the saved units, as text
            s_attrs.pop("units", None)
            if units.text.get("singular") is not None:
                s_attrs["units"] = units.text["singular"]
        self._S = xr.DataArray(  # plain numbers, for the dimensionless ratios
            d.S,
            dims=(COMPONENT,),
            coords=layout.component_coord(d.S.shape[0]),
            name="S",
            attrs=s_attrs,
        )
        self.S = _units.quantify(self._S, self.unit_of("singular"))
        self.V = layout.label_features(
            d.V, "V", {"long_name": f"right singular vectors (feature patterns) of {name}"}
        )

    # ------------------------------------------------------------ protocol
    def __repr__(self) -> str:
        L = self._layout
        k = self.S.sizes[COMPONENT]
        lazy = " (lazy)" if self._d.lazy_parts() else ""
        return (
            f"<xsvd.SVDResult{lazy}: method={self.method!r}, k={k}, "
            f"samples={dict((d, L.sizes[d]) for d in L.sample_dims)}, "
            f"features={dict((d, L.sizes[d]) for d in L.feature_dims)}, "
            f"center={self.settings['center']!r}, weighted={self._weights is not None}>"
        )

    # ------------------------------------------------------------ dask
    def compute(self, *, progress: bool = False, **kwargs) -> SVDResult:
        """A computed copy of a lazy result (all parts in one Dask computation).

        ``progress=True`` shows a progress bar (distributed's with a client);
        other keywords go to ``dask.compute``.
        """
        if progress and not kwargs:
            from ..core.progress import Progress

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
        return SVDResult(d, self._layout, weights=self._weights, units=self._units)

    # ---------------------------------------------------- public interface
    # What the field modules (statistics, rotation, genomics, plots) and the
    # saved form read of a result: nothing else, never private attributes.
    @property
    def layout(self) -> Layout:
        """How the input's dims map to the (samples x features) matrix (read-only)."""
        return self._layout

    @property
    def decomposition(self) -> Decomposition:
        """The unlabeled arrays the solver returned (read-only)."""
        return self._d

    @property
    def sample_dims(self) -> tuple:
        """The sample dimension(s): the rows of the decomposed matrix."""
        return self._layout.sample_dims

    @property
    def feature_dims(self) -> tuple:
        """The feature dimensions (size-1 ones included): the columns of the matrix."""
        return self._layout.feature_dims

    @property
    def n_samples(self) -> int:
        """The number of samples (rows of the matrix)."""
        return self._layout.n_samples

    @property
    def input_attrs(self) -> dict:
        """A copy of the decomposed DataArray's attributes."""
        return dict(self._layout.attrs)

    @property
    def units(self) -> _units.Units | None:
        """The pint units of the decomposition (:class:`xsvd.labeled.units.Units`), or None."""
        return self._units

    @property
    def singular_values(self) -> xr.DataArray:
        """``S`` as plain numbers (never pint-quantified), for ratios and scalings."""
        return self._S

    @property
    def weights_vector(self):
        """The per-feature weights as the solver used them (a flat array), or None."""
        return self._weights

    @property
    def weights(self) -> xr.DataArray | None:
        """The per-feature weights, labeled over the feature dims (plain numbers), or None."""
        if self._weights is None:
            return None
        return self._layout.label_feature_vector(backend.to_numpy(self._weights), "weights")

    # ------------------------------------------------------------- derived
    @property
    def mean(self) -> xr.DataArray | None:
        """The per-feature values that were removed: the mean, or the values given as
        ``center=`` (None when not centering)."""
        d = self._d
        if d.mean is None:
            return None
        mean = d.mean if d.nan_features is None else backend.where(d.nan_features, np.nan, d.mean)
        out = self._layout.label_feature_vector(mean, "mean")
        text = _units.text_of(self._units, "data") or self._layout.attrs.get("units")
        if text is not None and self.unit_of("data") is None:  # plain: units as an attribute
            out.attrs["units"] = text
        return _units.quantify(out, self.unit_of("data"))

    @property
    def total_variance(self) -> xr.DataArray:
        """Sum of squares of the centered, weighted data (``||B||_F^2``)."""
        out = xr.DataArray(self._d.total_ss, name="total_variance")
        return _units.quantify(out, self.unit_of("variance"))

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """Each component's share of the total variance of the centered, weighted data.

        ``S**2 / ||B||_F**2``, so the ratios of all ``min(m, n)`` components of
        an exact SVD add up to 1 (to rounding).
        """
        out = self._S.copy(data=self._d.variance_ratio(self._S.data))  # in range at any magnitude
        out.name = "explained_variance_ratio"
        out.attrs = {"long_name": "fraction of total variance explained", "units": "1"}
        return out

    @property
    def errors(self) -> xr.Dataset:
        """Estimated errors of every component, labeled like ``S``.

        Computed from the passes over the data already made (no extra read);
        zero for the exact SVD. Variables:

        - ``S``: the estimated absolute error of each singular value (in the
          units of ``S``); ``S_relative``: the same over ``S``;
        - ``angle``: a bound on the angle between the computed and the true
          singular vectors, in radians (``pi / 2``: the vector is not
          determined, e.g. among singular values too close to tell apart);
        - ``residual``: ``||B^T u - s v|| / s``, how far the triplet is from
          satisfying the SVD's equations, relative.

        The estimates come from the residuals of a Rayleigh-Ritz step (as in
        ARPACK and PRIMME); see the algorithm page of the documentation.
        ``compressed(..., tol=)`` reads the data until ``S_relative`` and
        ``residual`` are below ``tol`` for every component. With
        ``krylov=False`` or ``n_oversamples < 10`` they are rough estimates,
        not upper bounds: ``attrs["error_bounds"]`` is then 0 (and
        ``settings["error_bounds"]`` False).
        """
        e = self._d.errors
        k = self._S.sizes[COMPONENT]
        if e is None:  # saved by an earlier version: not known
            e = np.full((k, 3), np.nan)
        dims, coords = (COMPONENT,), self._S.coords
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = e[:, 0] / self._S.data
        s_err = xr.DataArray(e[:, 0], dims=dims, coords=coords, attrs=dict(self._S.attrs))
        s_err.attrs["long_name"] = "estimated error of the singular values"
        data = {
            "S": _units.quantify(s_err, self.unit_of("singular")),
            "S_relative": (dims, relative, {"long_name": "estimated relative error of S"}),
            "angle": (
                dims,
                e[:, 1],
                {"long_name": "bound on the angle of the singular vectors", "units": "radian"},
            ),
            "residual": (dims, e[:, 2], {"long_name": "relative residual ||B^T u - s v|| / s"}),
        }
        bounds = self._d.settings.get("error_bounds", True)  # False: rough estimates
        return xr.Dataset(data, coords=coords, attrs={} if bounds else {"error_bounds": 0})

    # ---------------------------------------------------------- statistics
    # The statistics EOF papers report come from StatisticsMethods (eigenvalues,
    # pcs, eofs, correlation_maps, covariance_maps); North errors and rotation
    # are for unrotated results only.
    def north_errors(self, *, ddof: int = 1, ratio: bool = False) -> xr.DataArray:
        """North et al. (1982) typical errors of the eigenvalues, ``lambda * sqrt(2 / n)``.

        eofs' ``northTest()``; ``ratio=True`` for those of
        ``explained_variance_ratio``. See :func:`xsvd.statistics.north_errors`.
        """
        return statistics.north_errors(self, ddof=ddof, ratio=ratio)

    def rotate(
        self,
        n: int,
        *,
        method: str = "varimax",
        power: float | None = None,
        max_iter: int = 1000,
        rtol: float = 1e-8,
    ):
        """Varimax or promax rotation of the ``n`` leading components.

        Returns a :class:`~xsvd.rotation.RotatedResult`; see
        :func:`xsvd.rotation.rotate`.
        """
        from ..climate import rotation

        return rotation.rotate(self, n, method=method, power=power, max_iter=max_iter, rtol=rtol)

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
        k = self._check_k(k)
        X = (d.U[:, :k] * d.S[:k]) @ d.V[:, :k].T
        if self._weights is not None:
            w = self._weights
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = np.where(w != 0, 1.0 / np.where(w != 0, w, 1.0), np.nan)
            X = X * backend.on_backend_of(inv, X)
        if d.mean is not None:
            X = X + d.mean
        units = self.unit_of("data")
        if units is None:
            return self._layout.label_full(X)
        attrs = {k: v for k, v in self._layout.attrs.items() if k != "units"}
        return _units.quantify(self._layout.label_full(X, attrs), units)

    def project(self, other: xr.DataArray, *, missing: str | None = None) -> xr.DataArray:
        """Component scores of new data with the same features.

        Scores are on the scale of ``U``: ``((other - mean) * weights) @ V.T / S``,
        so projecting the decomposed data gives back ``U``.

        Parameters
        ----------
        other : xarray.DataArray
            Data with the decomposed data's feature dimensions (same sizes and
            coordinates) and any sample dimensions. Quantified when the
            decomposed data were; converted to their units. Plain data whose
            ``units`` attribute differs from the decomposed data's are
            converted with pint, or refused naming both units when pint
            cannot (:func:`xsvd.labeled.units.magnitude_in` has the rules).
        missing : {None, "mean"}
            None (default): values NaN at features that were NaN at every
            sample of the decomposed data are ignored; other NaN are not
            expected. ``"mean"``: missing values (NaN, and negative codes in
            integer data, as for the decompositions' ``missing="mean"``) stand
            for the decomposed data's mean of their feature, so they add
            nothing to the scores (as in the sums of PLINK 2's ``--score``
            with ``no-mean-imputation`` and the reference allele
            frequencies). Needs a centered result.

        Returns
        -------
        xarray.DataArray
            Dims ``(*sample_dims_of_other, "component")``, in the memory where
            this result lives (whatever memory ``other`` is in).

        Notes
        -----
        The scores live where the result lives: ``other`` is moved to the
        result's memory first (host data to a result on a device, device data
        to a result on the host), once, through
        :func:`xsvd.core.backend.transfer`, which counts every move
        (``backend.TRANSFERS``). To have the scores elsewhere, move the result
        (:meth:`as_numpy`, :meth:`as_cupy`) rather than the data. Dask data
        projected on a CuPy result become Dask arrays of CuPy chunks; Dask
        cannot hold other array libraries' arrays as chunks, so for a result
        of such a library compute ``other`` first.

        Examples
        --------
        >>> import numpy as np, xsvd
        >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
        >>> res = sst.svd(k=3, dim="time", center=True)
        >>> scores = res.project(sst)
        >>> bool(abs(scores - res.U).max() < 1e-9)
        True
        """
        if missing not in (None, "mean"):
            raise ValueError(
                f"missing must be None or 'mean', got {missing!r}. Use `missing='mean'` to "
                "let missing values stand for the decomposed data's mean of their feature."
            )
        d = self._d
        if missing == "mean" and d.mean is None:
            raise ValueError(
                "project(missing='mean') fills missing values with the decomposed data's "
                "feature means, which only a centered result has. Decompose with "
                "`center=True`, or fill the new data first (e.g. `new.fillna(value)`)."
            )
        L = self._layout
        other = _units.magnitude_in(other, self._units, self._layout.attrs)
        X, sample_dims, shape, coords = L.samples_matrix(other)
        V = d.V
        X = _in_memory_of(X, V)  # the scores live where the result lives
        if d.nan_features is not None:
            mask = d.nan_features
            V = backend.where(mask[:, None], 0.0, V)
            if missing is None:
                row = backend.row_like(mask[None, :], X)
                X = backend.map_blocks(_zero_masked, X, row, dtype=X.dtype)
        dtype = np.float32 if backend.numpy_dtype(X.dtype) == np.float32 else np.float64
        if missing == "mean":  # the decompositions' rule: NaN, and negative codes in integers
            rule = missing_rule(backend.numpy_dtype(X.dtype), "mean")
            gaps = backend.map_blocks(_missing_mask, X, rule, dtype=bool)
        X = backend.astype(X, dtype)
        if d.mean is not None:
            X = X - d.mean
        if missing == "mean":  # at the mean they stand for: zero once centered
            X = backend.where(gaps, 0.0, X)
        if self._weights is not None:
            X = X * backend.on_backend_of(self._weights, X)
        scores = X @ V
        S = d.S
        scores = scores / _safe(S)
        return L.label_new_samples(scores, sample_dims, shape, coords, "scores")


def _zero_masked(X, mask):
    """Zero the features that were all-NaN in the decomposed data; other NaN raise."""
    xp = backend.api(X)
    zero = 0.0 if backend.numpy_dtype(X.dtype).kind in "fc" else 0  # scalars of X's kind
    out = xp.where(mask, zero, X)
    if backend.to_scalar(xp.any(xp.isnan(out))):
        raise ValueError(
            "The new data have NaN at features that were not all-NaN in the decomposed "
            "data. Pass `missing='mean'` (a centered result) to let each stand for its "
            "feature's mean in the decomposed data, or fill them first, e.g. "
            "`new.interpolate_na(dim)` along the sample dimension."
        )
    return out


def _same_memory(x, like) -> bool:
    """Whether ``x`` (or its chunks) and ``like`` live in the same memory."""
    if backend.is_numpy(x) or backend.is_numpy(like):
        return backend.is_numpy(x) and backend.is_numpy(like)
    return backend.namespace(x) is backend.namespace(like) and backend.device(x) == backend.device(
        like
    )


def _in_memory_of(X, like):
    """New data ``X`` moved to the memory of the result's array ``like`` (counted moves)."""
    if _same_memory(X, like):
        return X
    if backend.is_numpy(like):
        return backend.to_host(X)
    if backend.is_cupy(like):
        return backend.to_cupy(X)
    if backend.is_dask(X):
        raise TypeError(
            f"The result lives on {backend.device(like)!r} (arrays of "
            f"{backend.namespace(like).__name__}), which Dask cannot hold as chunks, so "
            "lazily chunked new data cannot be projected there. Compute the new data first "
            "(`other.compute()`), or project on the result in host memory (`res.as_numpy()`)."
        )
    return backend.transfer(X, like)


def _safe(S):
    """``S`` with zeros replaced by 1, to divide by (zero components give zero scores)."""
    return backend.where(S == 0, 1.0, S)


def _missing_mask(X, rule):
    """Where ``X`` is missing under ``rule`` (a block of the new data)."""
    return rule.mask(backend.namespace(X), X)
