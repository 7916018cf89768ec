"""Varimax and promax rotation of the leading components of a result.

Rotated EOF analysis (Richman 1986) turns the ``n`` leading components into
``n`` others that span the same space and explain the same total variance,
but whose patterns are *simple*: each has large loadings on few features and
near-zero loadings elsewhere, which often makes them easier to interpret (and
less sensitive to the domain) than EOFs.

The conventions are those of xeofs' ``EOFRotator``:

- the *loadings* ``L = V * S`` (features x n; proportional to
  ``V * sqrt(lambda)``, the EOFs scaled by the square roots of the
  eigenvalues) are rotated, ``L_rot = L @ T``;
- **varimax** (Kaiser 1958): ``T`` is the orthogonal matrix that maximizes the
  variance of the squared loadings in each column, computed on the
  Kaiser-normalized loadings (each row divided by its norm, the
  communality) and iterated until the criterion changes by less than
  ``rtol``;
- **promax** (Hendrickson and White 1964): the varimax solution is raised
  elementwise to ``power`` (keeping signs) to give a target, which an oblique
  (non-orthogonal) ``T`` fits by least squares; its columns are scaled so
  that the rotated PCs have unit norm. ``power=1`` is varimax.

A rotated component's variance is the sum of squares of its loadings, so
``S_rot = ||L_rot[:, j]||``, ``V_rot = L_rot / S_rot`` (unit norm), and the
PCs ``U_rot = U @ inv(T).T`` satisfy ``U diag(S) V^T = U_rot diag(S_rot)
V_rot^T``: the rotated components rebuild the same rank-``n`` field. For
varimax, ``U_rot`` is orthonormal and the explained variances add up to the
unrotated ones; promax PCs are correlated (``pc_correlation``). Components are
sorted by variance, and each pattern's largest-magnitude entry is positive.

References
----------
Kaiser, H. F. (1958). The varimax criterion for analytic rotation in factor
analysis. *Psychometrika* 23, 187-200.

Hendrickson, A. E. and White, P. O. (1964). Promax: a quick method for
rotation to oblique simple structure. *British Journal of Statistical
Psychology* 17, 65-70.

Richman, M. B. (1986). Rotation of principal components. *Journal of
Climatology* 6, 293-335.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import xarray as xr

from ..core import backend
from ..core.blas import small_blas
from ..core.common import fix_signs, variance_ratio
from ..labeled import statistics
from ..labeled import units as _units
from ..labeled.base import Result
from ..labeled.layout import COMPONENT, component_labels

__all__ = ["RotatedResult", "rotate", "varimax", "promax"]

#: The dimension of the rotation matrix along the unrotated components.
UNROTATED = "unrotated"

METHODS = ("varimax", "promax")


class RotatedResult(Result, statistics.StatisticsMethods):
    """Rotated components of an :class:`~xsvd.SVDResult` (``res.rotate(n)``).

    Labeled like the result it comes from, with the same statistics methods
    (``pcs``, ``eofs``, ``eigenvalues``, ``correlation_maps``,
    ``covariance_maps``), ``project`` and ``plot``; see :mod:`xsvd.rotation`
    for the conventions.

    Attributes
    ----------
    U : xarray.DataArray
        Rotated PCs with unit norm, dims ``(*sample_dims, "component")``;
        orthonormal for varimax.
    S : xarray.DataArray
        The rotated components' "singular values", ``||L_rot[:, j]||``, in
        decreasing order; in the units of the result's ``S``.
    V : xarray.DataArray
        Rotated patterns with unit norm, dims ``("component", *feature_dims)``;
        NaN where the result's ``V`` is.
    rotation_matrix : xarray.DataArray
        ``T``, dims ``("unrotated", "component")``: ``L_rot = L @ T`` with
        ``L = V * S`` of the unrotated components, the sorting and signs
        included.
    pc_correlation : xarray.DataArray
        ``inv(T) @ inv(T).T``, dims ``("component_i", "component_j")``: the
        correlations of the rotated PCs of centered data (the identity for
        varimax).
    method : {"varimax", "promax"}
    settings : dict
        ``n``, ``method``, ``power``, ``max_iter``, ``rtol`` and
        ``iterations`` (the varimax iterations that ran).
    """

    def __init__(self, base, U, S, V, T, total_ss: float, settings: dict):
        # S and T are arrays of the result's memory (NumPy, CuPy or a device's), float64
        self._base = base
        self._total_ss = float(total_ss)
        self.method = settings["method"]
        self.settings = dict(settings)
        n = S.shape[0]
        coord = {COMPONENT: component_labels(n)}
        name = base.layout.name if base.layout.name is not None else "data"
        s_attrs = {"long_name": f"norms of the rotated components of {name}"}
        if "units" in base.singular_values.attrs:
            s_attrs["units"] = base.singular_values.attrs["units"]
        self._S = xr.DataArray(S, dims=(COMPONENT,), coords=coord, name="S", attrs=s_attrs)
        self.S = _units.quantify(self._S, self.unit_of("singular"))
        self.U = U
        self.V = V
        self.rotation_matrix = xr.DataArray(
            T,
            dims=(UNROTATED, COMPONENT),
            coords={UNROTATED: base.singular_values[COMPONENT].values[:n], **coord},
            name="rotation_matrix",
            attrs={"long_name": f"{self.method} rotation: L_rot = L @ T"},
        )
        Tinv = backend.api(T).linalg.inv(T)
        self.pc_correlation = xr.DataArray(
            Tinv @ Tinv.T,
            dims=("component_i", "component_j"),
            coords={"component_i": component_labels(n), "component_j": component_labels(n)},
            name="pc_correlation",
            attrs={"long_name": "correlation of the rotated PCs"},
        )

    PROJECT = None  # defined below

    @classmethod
    def from_state(cls, parts: dict, record: dict) -> RotatedResult:
        T = backend.astype(parts["rotation_matrix"].data, np.float64, copy=False)
        S = backend.astype(parts["S"].data, np.float64, copy=False)
        return cls(
            parts["base"], parts["U"], S, parts["V"], T, record["total_ss"], record["settings"]
        )

    def state(self) -> tuple[dict, dict]:
        parts = {
            "base": self._base,
            "U": self.U,
            "S": self._S,
            "V": self.V,
            "rotation_matrix": self.rotation_matrix,
        }
        return parts, {"settings": dict(self.settings), "total_ss": self._total_ss}

    @property
    def unrotated(self):
        """The result whose components were rotated."""
        return self._base

    def reconstruct(self, k: int | None = None) -> xr.DataArray:
        """The rank-``n`` approximation: rotation keeps the span of the ``n`` rotated
        components, so this is the unrotated result's ``reconstruct(n)``; ``k`` may only be
        ``n`` (fewer rotated components span no unrotated approximation)."""
        n = self.k
        if k is not None and k != n:
            raise ValueError(
                f"k={k!r}: the {n} rotated components together span the first {n} unrotated "
                f"ones, fewer of them no rank-k approximation of the data; use "
                f"`res.unrotated.reconstruct({k})` for the first {k} unrotated components."
            )
        return self._base.reconstruct(n)

    def __repr__(self) -> str:
        L = self._base.layout
        power = f", power={self.settings['power']}" if self.method == "promax" else ""
        return (
            f"<xsvd.RotatedResult: method={self.method!r}{power}, n={self._S.sizes[COMPONENT]}, "
            f"samples={dict((d, L.sizes[d]) for d in L.sample_dims)}, "
            f"features={dict((d, L.sizes[d]) for d in L.feature_dims)}>"
        )

    # ------------------------------------------ the public interface of results
    # (statistics.ResultLike): the unrotated result's, but for S and the ratios
    def unit_of(self, which: str):
        """Pint units of ``"data"``, ``"singular"`` or ``"variance"``; None when plain."""
        return self._base.unit_of(which)

    @property
    def singular_values(self) -> xr.DataArray:
        """``S`` as plain numbers (never pint-quantified)."""
        return self._S

    @property
    def units(self):
        """The pint units of the decomposition, or None."""
        return self._base.units

    @property
    def weights(self) -> xr.DataArray | None:
        """The per-feature weights of the decomposition, labeled, or None."""
        return self._base.weights

    @property
    def layout(self):
        """The unrotated result's layout of dims (read-only)."""
        return self._base.layout

    @property
    def sample_dims(self) -> tuple:
        return self._base.sample_dims

    @property
    def feature_dims(self) -> tuple:
        return self._base.feature_dims

    @property
    def n_samples(self) -> int:
        return self._base.n_samples

    @property
    def input_attrs(self) -> dict:
        return self._base.input_attrs

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """Each rotated component's share of the total variance, ``S**2 / ||B||_F**2``."""
        total = self._total_ss  # in range at any magnitude, where the result lives
        out = self._S.copy(data=variance_ratio(self._S.data, total, float(np.sqrt(total))))
        out.name = "explained_variance_ratio"
        out.attrs = {"long_name": "fraction of total variance explained", "units": "1"}
        return out

    def project(self, other: xr.DataArray) -> xr.DataArray:
        """Rotated scores of new data, on the scale of ``U`` (projecting the data gives ``U``)."""
        n = self._S.sizes[COMPONENT]
        scores = self._base.project(other).isel({COMPONENT: slice(0, n)})
        return _rotate_scores(scores, self.rotation_matrix, "scores")


def rotate(
    res,
    n: int,
    *,
    method: str = "varimax",
    power: float | None = None,
    max_iter: int = 1000,
    rtol: float = 1e-8,
) -> RotatedResult:
    """Rotate the ``n`` leading components of ``res`` (varimax or promax).

    Parameters
    ----------
    res : xsvd.SVDResult
        A computed or lazy result (a lazy result's ``V`` and ``S`` are
        computed; its ``U`` is rotated lazily).
    n : int
        How many leading components to rotate (at least 2).
    method : {"varimax", "promax"}
        Orthogonal (varimax) or oblique (promax) rotation.
    power : float, optional
        Promax only: the power the varimax loadings are raised to for the
        target, default 4 (larger: simpler, more correlated components; 1
        gives varimax).
    max_iter : int, default 1000
        The most varimax iterations; a RuntimeWarning says when they were
        not enough.
    rtol : float, default 1e-8
        Stop when the varimax criterion changes by less than this, relative.

    Returns
    -------
    RotatedResult

    Examples
    --------
    >>> import numpy as np, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> res = sst.svd(k=4, dim="time", center=True)
    >>> rot = res.rotate(3)
    >>> rot  # doctest: +NORMALIZE_WHITESPACE
    <xsvd.RotatedResult: method='varimax', n=3, samples={'time': 48},
     features={'lat': 12, 'lon': 24}>
    >>> bool(np.isclose(rot.explained_variance_ratio.sum(),
    ...                 res.explained_variance_ratio[:3].sum()))
    True
    """
    if method not in METHODS:
        raise ValueError(f"method must be 'varimax' or 'promax', got {method!r}.")
    if method == "varimax" and power is not None:
        raise ValueError(
            "power= is the promax exponent; varimax takes none. Pass method='promax' "
            "or leave out power."
        )
    if method == "promax":
        power = 4 if power is None else power
        if not isinstance(power, numbers.Real) or isinstance(power, bool) or not power >= 1:
            raise ValueError(f"power must be a number >= 1 (usually 2 to 4), got {power!r}.")
    k = res.singular_values.sizes[COMPONENT]
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 2 <= n <= k:
        raise ValueError(
            f"n must be an integer between 2 and {k} (the result's components), got {n!r}: "
            "rotation mixes at least two components."
        )
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if not isinstance(rtol, numbers.Real) or not rtol > 0:
        raise ValueError(f"rtol must be a positive number, got {rtol!r}.")
    n = int(n)
    layout = res.layout
    first = {COMPONENT: slice(0, n)}
    Vn = res.V.isel(first).transpose(COMPONENT, *layout.feature_dims)
    vdata, sdata, total_ss = backend.compute(
        Vn.data, res.singular_values.data[:n], res.decomposition.total_ss
    )
    # the small steps run where the result lives (NumPy, CuPy or a device), in float64
    xp = backend.api(vdata)
    V = xp.permute_dims(backend.reshape(vdata, (n, vdata.size // n)), (1, 0))
    S = xp.astype(_where_like(sdata, vdata), xp.float64)
    L = xp.astype(V, xp.float64) * S[None, :]
    Lv = L[xp.all(xp.isfinite(L), axis=1)]
    fit, extra = (varimax, {}) if method == "varimax" else (promax, {"power": power})
    T, iterations = fit(Lv, max_iter=max_iter, rtol=rtol, **extra)
    # sort by variance, then xsvd's sign rule (each pattern's largest-magnitude entry positive)
    Lr = Lv @ T
    ss = xp.sum(Lr**2, axis=0)
    order = xp.argsort(-ss, stable=True)
    T, _ = fix_signs(xp.take(T, order, axis=1), xp.take(Lr, order, axis=1))
    L_rot = L @ T  # NaN rows stay NaN
    S_rot = xp.sqrt(xp.take(ss, order))
    with np.errstate(divide="ignore", invalid="ignore"):
        V_rot = L_rot / xp.where(S_rot > 0, S_rot, 1.0)
    name = layout.name if layout.name is not None else "data"
    V_lab = layout.label_features(
        backend.astype(V_rot, vdata.dtype, copy=False),
        "V",
        {"long_name": f"{method}-rotated patterns of {name}"},
    )
    rot_T = xr.DataArray(T, dims=(UNROTATED, COMPONENT))
    U = _rotate_scores(res.U.isel(first), rot_T, "U")
    U.attrs = {"long_name": f"{method}-rotated principal components of {name} (unit norm)"}
    settings = {
        "n": n,
        "method": method,
        "power": power,
        "max_iter": int(max_iter),
        "rtol": float(rtol),
        "iterations": iterations,
    }
    total_ss = float(backend.to_numpy(total_ss))
    return RotatedResult(res, U, S_rot, V_lab, T, total_ss, settings)


def _where_like(x, like):
    """``x`` in the memory of ``like``: itself when it is there, else moved (counted)."""
    same = backend.namespace(x) is backend.namespace(like)
    if same and backend.device(x) == backend.device(like):
        return x
    return backend.transfer(backend.to_numpy(x), like)


def _rotate_scores(scores: xr.DataArray, T: xr.DataArray, name: str) -> xr.DataArray:
    """``scores @ inv(T).T``: unrotated scores (unit-norm scale) to rotated ones."""
    xp = backend.api(T.data)
    M = xp.linalg.inv(xp.astype(T.data, xp.float64)).T
    M = backend.astype(_where_like(M, scores.data), backend.numpy_dtype(scores.dtype), copy=False)
    dims = [d for d in scores.dims if d != COMPONENT]
    data = scores.transpose(*dims, COMPONENT).data @ M  # any array library, lazy on Dask
    coords = scores.drop_vars(COMPONENT).coords
    out = xr.DataArray(data, dims=(*dims, COMPONENT), coords=coords)
    out = out.assign_coords({COMPONENT: component_labels(M.shape[0])})
    out.name = name
    return out


# ------------------------------------------------------------ pure arrays
def varimax(L, *, max_iter: int = 1000, rtol: float = 1e-8) -> tuple[Any, int]:
    """The orthogonal varimax rotation ``T`` (n x n) of loadings ``L`` (p x n).

    ``L`` of any array library (NumPy, CuPy, a device's): ``T`` is computed
    where it is, in its dtype. Kaiser-normalized: the rows of ``L`` are divided by their norms first
    (rows of norm 0 are left out). Returns ``(T, iterations)``; warns when
    ``max_iter`` iterations did not reach ``rtol``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> T, _ = varimax(rng.standard_normal((40, 3)))
    >>> bool(np.allclose(T.T @ T, np.eye(3)))
    True
    """
    xp = backend.api(L)
    A = _kaiser(L)
    p, n = A.shape
    T = xp.eye(n, dtype=xp.float64, device=backend.device(L))
    if p == 0:
        return T, 0
    # Two reads of A a step (B = A T, A^T B^3; NumPy's B ** 3 is a slow pow), the rest n x n:
    # colsum(B^2) = diag(T^T (A^T A) T). Stop as xeofs: the criterion changes < rtol, relative.
    crit = 0.0
    with small_blas(A):
        At = A.T
        gram = At @ A
        for it in range(1, max_iter + 1):
            B = A @ T
            M = gram @ T
            G = At @ (B * B * B) - M * (xp.sum(T * M, axis=0) / p)
            u, s, vt = xp.linalg.svd(G)
            T = u @ vt
            old, crit = crit, backend.to_scalar(xp.sum(s))  # one number to the host
            if crit == 0.0 or abs(crit - old) <= rtol * crit:
                return T, it
    warnings.warn(
        f"The varimax rotation did not converge in max_iter={max_iter} iterations "
        f"(rtol={rtol}); the components are rotated, but maybe not to the optimum. "
        "Pass a larger max_iter.",
        RuntimeWarning,
        stacklevel=3,
    )
    return T, max_iter


def promax(L, *, power: float = 4, max_iter: int = 1000, rtol: float = 1e-8) -> tuple[Any, int]:
    """The oblique promax rotation ``T`` (n x n) of loadings ``L`` (p x n), of any array
    library (computed where ``L`` is).

    Varimax first; then the Kaiser-normalized varimax loadings raised to
    ``power`` (signs kept) are the target that ``T`` fits by least squares,
    with columns scaled so that ``diag(inv(T.T @ T)) = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> T, _ = promax(rng.standard_normal((40, 3)), power=4)
    >>> phi = np.linalg.inv(T) @ np.linalg.inv(T).T  # correlation of the rotated PCs
    >>> np.diag(phi).round(12)
    array([1., 1., 1.])
    """
    xp = backend.api(L)
    R, iterations = varimax(L, max_iter=max_iter, rtol=rtol)
    A = _kaiser(L @ R)
    target = A * xp.abs(A) ** (power - 1)
    C = xp.linalg.pinv(A) @ target  # least squares (A has full column rank)
    d = xp.sqrt(xp.linalg.diagonal(xp.linalg.pinv(C.T @ C)))
    return R @ (C * d), iterations


def _kaiser(L):
    """Rows divided by their norms (the square roots of the communalities); zero rows dropped."""
    xp = backend.api(L)
    h = xp.sqrt(xp.sum(L**2, axis=1))
    keep = h > 0
    return L[keep] / h[keep][:, None]
