"""The result of a multivariate SVD: one ``U`` and ``S``, a pattern per variable.

:class:`MultivariateResult` wraps the :class:`~xsvd.SVDResult` of the
combined matrix (all variables' features along one dim, ``FEATURE``) and
gives back per-variable Datasets through
:meth:`xsvd.climate.stacked.Stacked.split`: ``V``, ``mean``, the
weights, ``eofs()`` and ``reconstruct()``. Everything else (``U``, ``S``,
explained variance, errors, eigenvalues, PCs, projection) is the combined
result's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..labeled import units as _units
from ..labeled.base import Result
from ..labeled.layout import COMPONENT, describe_layout, layout_from_description

if TYPE_CHECKING:
    from ..labeled.result import SVDResult
    from .stacked import Stacked

__all__ = ["MultivariateResult", "FEATURE"]

#: The one feature dimension of the combined matrix (every variable's features).
FEATURE = "stacked_feature"


class MultivariateResult(Result):
    """Labeled multivariate (combined) SVD of several fields: ``U, S, V = res``.

    The variables' (centered, weighted) matrices side by side,
    ``B = [B_1, B_2, ...] ≈ U diag(S) [V_1, V_2, ...]``, as eofs'
    ``MultivariateEof``: one set of sample scores (PCs) for all variables and
    a pattern per variable.

    Attributes
    ----------
    U : xarray.DataArray
        Left singular vectors (sample scores), dims ``(*dim, "component")``.
    S : xarray.DataArray
        Singular values, dims ``("component",)``, in decreasing order.
    V : xarray.Dataset
        Right singular vectors: one variable per input variable, dims
        ``("component", *its feature dims)``, NaN at features that are NaN
        at every sample of it. Together (all variables) each component has
        unit norm.
    method : {"exact", "compressed"}
        Which solver ran.
    settings : dict
        The solver settings; ``equal_variance`` is True when the variables
        were scaled (factors in :attr:`scales`).

    Examples
    --------
    >>> import xarray as xr, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> ds = xr.Dataset({"sst": sst, "sst2": (sst**2).rename(lat="y", lon="x")})
    >>> U, S, V = ds.svd(k=2, dim="time", center=True)
    >>> list(V.data_vars), V["sst2"].dims
    (['sst', 'sst2'], ('component', 'y', 'x'))
    """

    def __init__(
        self,
        result: SVDResult,
        stack: Stacked,
        *,
        scales: dict | None = None,
        units: dict | None = None,
        scaled: bool = False,
    ):
        self._result = result
        self._stack = stack
        self._scales = scales
        self._variable_units = units  # name -> pint units of quantified variables
        self._scaled = scaled
        self.method = result.method
        self.settings = dict(result.settings)
        if scales is not None:
            self.settings["equal_variance"] = True
        self.center = result.center
        self.U = result.U
        self.S = _units.quantify(result.S, self.unit_of("singular"))
        self.V = self._dataset(result.V, "right singular vectors (feature patterns) of {}")

    # ------------------------------------------------------------ protocol
    def __repr__(self) -> str:
        L = self._stack.layout
        k = self.S.sizes[COMPONENT]
        lazy = " (lazy)" if self._result.decomposition.lazy_parts() else ""
        features = {
            name: dict(zip(layout.feature_dims, layout.feature_shape, strict=True))
            for name, layout in self._stack.layouts.items()
        }
        return (
            f"<xsvd.MultivariateResult{lazy}: method={self.method!r}, k={k}, "
            f"samples={dict((d, L.sizes[d]) for d in L.sample_dims)}, features={features}, "
            f"center={self.center}, equal_variance={self._scales is not None}>"
        )

    def _dataset(self, x: xr.DataArray, long_name: str | None = None) -> xr.Dataset:
        parts = self._stack.split(x)
        if long_name is not None:
            for name, part in parts.items():
                part.attrs = {"long_name": long_name.format(name)}
        return xr.Dataset(parts)

    def _with(self, result: SVDResult) -> MultivariateResult:
        return MultivariateResult(
            result,
            self._stack,
            scales=self._scales,
            units=self._variable_units,
            scaled=self._scaled,
        )

    # ------------------------------------------------------------- units
    def unit_of(self, which: str):
        """Pint units of ``"singular"`` (of ``S``: where every variable was quantified
        with the same units and not standardized or scaled to equal variance) or
        ``"variance"``; None otherwise (each variable's data units are on its ``mean``
        and ``reconstruct()``)."""
        found = self._variable_units or {}
        if which == "data" or self._scaled or set(found) != set(self._stack.names):
            return None
        singular = {_units.delta(u) for u in found.values()}
        if len(singular) != 1:
            return None
        (unit,) = singular
        return unit if which == "singular" else unit**2

    def _quantified(self, ds: xr.Dataset) -> xr.Dataset:
        """Each quantified variable of ``ds`` (a mean, a reconstruction) in its units."""
        for name, unit in (self._variable_units or {}).items():
            ds[name] = _units.quantify(ds[name], unit)
        return ds

    # --------------------------------------------------------- saved form
    def group_of(self, part: str) -> str:
        return part  # each variable's patterns on its own grid (dim names may be shared)

    def state(self) -> tuple[dict, dict]:
        names = self._stack.names
        parts: dict = {"combined": self._result}
        parts.update({f"V{i}": self.V[name] for i, name in enumerate(names)})
        record = {
            "names": [str(n) for n in names],
            "layouts": [describe_layout(self._stack.layouts[n]) for n in names],
            "scales": None if self._scales is None else [self._scales[n] for n in names],
            "units": {
                str(n): _units.describe(_units.Units(u, None))
                for n, u in (self._variable_units or {}).items()
            },
            "scaled": self._scaled,
        }
        return parts, record

    @classmethod
    def from_state(cls, parts: dict, record: dict) -> MultivariateResult:
        from .stacked import Stacked

        combined = parts["combined"]
        names = tuple(record["names"])
        layouts = {}
        for i, (name, description) in enumerate(zip(names, record["layouts"], strict=True)):
            labels = xr.merge([combined.U.rename("U"), parts[f"V{i}"].rename("V")])
            layouts[name] = layout_from_description(description, labels)
        sizes = [layouts[n].n_features for n in names]
        offsets = tuple(np.cumsum([0, *sizes])[:-1].tolist())
        stack = Stacked(names, layouts, offsets, combined.layout)
        scales = record.get("scales")
        scales = None if scales is None else dict(zip(names, scales, strict=True))
        quantities = {}
        for name, description in (record.get("units") or {}).items():
            restored = _units.restore(description)
            if restored is not None and restored.data is not None:
                quantities[name] = restored.data
        return cls(
            combined,
            stack,
            scales=scales,
            units=quantities or None,
            scaled=bool(record.get("scaled", False)),
        )

    # ------------------------------------------------------ public interface
    @property
    def result(self) -> SVDResult:
        """The SVD of the combined matrix (one feature dim ``"stacked_feature"``)."""
        return self._result

    @property
    def variables(self) -> tuple:
        """The names of the decomposed variables, in the order of the combined matrix."""
        return self._stack.names

    @property
    def stacked(self) -> Stacked:
        """Where each variable's features are in the combined matrix (read-only)."""
        return self._stack

    @property
    def sample_dims(self) -> tuple:
        """The sample dimension(s): the rows of the decomposed matrix."""
        return self._stack.layout.sample_dims

    @property
    def n_samples(self) -> int:
        """The number of samples (rows of the matrix)."""
        return self._stack.layout.n_samples

    @property
    def singular_values(self) -> xr.DataArray:
        """``S`` as plain numbers."""
        return self._result.singular_values

    def error_values(self):
        return self._result.decomposition.errors

    # ------------------------------------------------------------ dask
    def compute(self, *, progress: bool = False, **kwargs) -> MultivariateResult:
        """A computed copy of a lazy result; see :meth:`xsvd.SVDResult.compute`."""
        return self._with(self._result.compute(progress=progress, **kwargs))

    def persist(self, **kwargs) -> MultivariateResult:
        """A copy whose lazy parts are computed and kept in (cluster) memory."""
        return self._with(self._result.persist(**kwargs))

    def as_numpy(self) -> MultivariateResult:
        """A copy in host memory (see :meth:`xsvd.SVDResult.as_numpy`)."""
        return self._with(self._result.as_numpy())

    def as_cupy(self) -> MultivariateResult:
        """A copy on the GPU (see :meth:`xsvd.SVDResult.as_cupy`)."""
        return self._with(self._result.as_cupy())

    # ------------------------------------------------------------- derived
    @property
    def mean(self) -> xr.Dataset | None:
        """Each variable's per-feature mean that was removed (None when not centering)."""
        mean = self._result.mean
        if mean is None:
            return None
        out = self._dataset(mean)
        for name in self._stack.names:
            units = self._stack.layouts[name].attrs.get("units")
            out[name].attrs = {} if units is None else {"units": units}
        return self._quantified(out)

    @property
    def weights(self) -> xr.Dataset | None:
        """The weights as the solver used them, per variable (with the standard
        deviations of ``standardize`` and the factors of ``equal_variance``), or None."""
        w = self._result.weights
        return None if w is None else self._dataset(w)

    @property
    def scales(self) -> xr.DataArray | None:
        """``equal_variance=True``: each variable's factor ``1 / sqrt(total variance)``
        (dims ``("variable",)``), folded into :attr:`weights`; else None."""
        if self._scales is None:
            return None
        names = list(self._stack.names)
        return xr.DataArray(
            np.array([self._scales[n] for n in names]),
            dims=("variable",),
            coords={"variable": names},
            name="scales",
            attrs={"long_name": "factor that gave each variable a total variance of 1"},
        )

    @property
    def total_variance(self) -> xr.DataArray:
        """Sum of squares of the centered, weighted (combined) data."""
        return self._result.total_variance

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """Each component's share of the total variance of all variables together."""
        return self._result.explained_variance_ratio

    @property
    def errors(self) -> xr.Dataset:
        """Estimated errors of every component; see :attr:`xsvd.SVDResult.errors`."""
        return self._result.errors

    # ---------------------------------------------------------- statistics
    def eigenvalues(self, *, ddof: int = 1) -> xr.DataArray:
        """``S**2 / (n - ddof)``, eofs' ``MultivariateEof.eigenvalues()``."""
        return self._result.eigenvalues(ddof=ddof)

    def pcs(self, *, scaling: str | int = "singular", ddof: int = 1) -> xr.DataArray:
        """The PCs, scaled as eofs' ``pcscaling``; see :func:`xsvd.statistics.pcs`."""
        return self._result.pcs(scaling=scaling, ddof=ddof)

    def eofs(
        self, *, scaling: str | int = "none", ddof: int = 1, unweighted: bool = False
    ) -> xr.Dataset:
        """The EOFs per variable, scaled as eofs' ``eofscaling``; see :func:`xsvd.statistics.eofs`.

        ``unweighted=True`` divides the weights (and the factors of
        ``standardize`` and ``equal_variance``) back out.
        """
        out = self._result.eofs(scaling=scaling, ddof=ddof, unweighted=unweighted)
        return self._dataset(out, f"{out.attrs['long_name']} of {{}}")

    def north_errors(self, *, ddof: int = 1, ratio: bool = False) -> xr.DataArray:
        """North et al. (1982) typical errors of the eigenvalues; see
        :meth:`xsvd.SVDResult.north_errors`."""
        return self._result.north_errors(ddof=ddof, ratio=ratio)

    # ------------------------------------------------------------ rebuild
    def reconstruct(self, k: int | None = None) -> xr.Dataset:
        """The rank-k approximation of every variable, labeled like the input.

        Weights, ``standardize``, ``equal_variance`` and centering are undone;
        features with weight 0 and all-NaN features come back as NaN.

        Parameters
        ----------
        k : int, optional
            Use only the first ``k`` components (default: all computed).
        """
        X = self._result.reconstruct(k)
        parts = self._stack.split(X, name_attrs=True)
        return self._quantified(xr.Dataset(parts, attrs=dict(self._stack.layout.attrs)))

    def project(self, other, *, missing: str | None = None) -> xr.DataArray:
        """Component scores of new data with the same variables and features.

        On the scale of ``U``: projecting the decomposed data gives ``U`` back.

        Parameters
        ----------
        other : xarray.Dataset or mapping of str to xarray.DataArray
            Every decomposed variable, with its feature dims (same sizes and
            coordinates), and any sample dimensions shared by all.
        missing : {None, "mean"}
            See :meth:`xsvd.SVDResult.project`.

        Returns
        -------
        xarray.DataArray
            Dims ``(*sample_dims_of_other, "component")``.
        """
        return self._result.project(self._stack.combined_new(other), missing=missing)
