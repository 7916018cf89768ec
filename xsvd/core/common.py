"""Pieces shared by the exact and the randomized solvers.

Pure arrays only: this package never imports xarray or pint.

The matrix being decomposed is always

    B = (A - 1 mu^T) diag(w)

with ``A`` the (samples x features) data, ``mu`` the per-feature mean over the
samples (only when centering) and ``w`` the per-feature weights (ones when
none are given). What counts as missing, and what is done with it, is
:mod:`xsvd.core.missing`'s business.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import backend
from .missing import Locate, MissingValueError

__all__ = [
    "Decomposition",
    "MissingValueError",
    "Locate",
    "fix_signs",
    "validate_shape",
    "validate_k",
    "eps_tolerance",
    "nan_rows",
    "frobenius_norm",
    "variance_ratio",
    "EXACT_K_SHARE",
]

#: ``k >= min(m, n) / EXACT_K_SHARE`` asks for a share of the matrix where a
#: randomized sketch saves nothing: ``method="auto"`` then uses the exact SVD,
#: and the compressed SVD warns before it reads anything.
EXACT_K_SHARE = 4


@dataclass
class Decomposition:
    """Result of a solver, on the input's backend (NumPy, CuPy or Dask arrays).

    ``U`` is (samples x k), ``S`` (k,), ``V`` (features x k) with NaN rows for
    all-NaN features, ``mean`` the per-feature mean that was removed (None when
    not centering), ``total_ss`` the total sum of squares of ``B`` (a 0-d
    array), ``nan_features`` the boolean mask of all-NaN features (None for data
    that cannot hold NaN), ``errors`` (k x 3) the estimated errors of each
    component: of ``S`` (absolute), of the singular vectors (an angle in
    radians) and the relative residual ``||B^T u - s v|| / s`` (zeros for the
    exact SVD), ``total_norm`` the Frobenius norm ``||B||_F`` (a 0-d array,
    finite wherever ``S`` is, when ``total_ss`` is beyond float64; None: the
    square root of ``total_ss``).
    """

    U: Any
    S: Any
    V: Any
    mean: Any
    total_ss: Any
    nan_features: Any
    method: str
    settings: dict
    errors: Any = None
    total_norm: Any = None

    #: The array parts, in the order above.
    ARRAYS = ("U", "S", "V", "mean", "total_ss", "nan_features", "errors", "total_norm")

    def variance_ratio(self, S=None):
        """``S**2 / ||B||_F**2`` (``S``: these singular values by default), see
        :func:`variance_ratio`."""
        return variance_ratio(self.S if S is None else S, self.total_ss, self.total_norm)

    def mean_share(self) -> float:
        """A lower bound, from ``U`` and ``S`` alone, on the share of ``||B||_F**2`` that
        the column means of ``B`` carry (no read of the data).

        The means carry ``||B^T 1||**2 / m`` (``m`` samples), of which the computed
        components hold ``sum_i S_i**2 (u_i . 1)**2 / m``. 0 for centered data (their
        ``U`` is orthogonal to ``1``); near 1 for uncentered data far from 0 (absolute
        temperatures), whose first component is then the mean. 0.0 where it is not
        finite (a total of 0).
        """
        xp = backend.array_module(self.U)
        along = xp.abs(xp.sum(self.U, axis=0)) / math.sqrt(self.U.shape[0])
        share = float(backend.to_numpy(xp.sum(self.variance_ratio(self.S * along))))
        return share if math.isfinite(share) else 0.0

    def lazy_parts(self) -> dict:
        """The parts that are Dask arrays, by name."""
        return {n: getattr(self, n) for n in self.ARRAYS if backend.is_lazy(getattr(self, n))}

    def computed(self, progress=None, **kwargs) -> Decomposition:
        """A copy with every lazy part computed, in one Dask computation.

        ``progress``: an object whose ``compute(obj)`` shows progress while
        computing (``xsvd.core.progress.Progress``); other keywords go to
        ``dask.compute``.
        """
        lazy = self.lazy_parts()
        if not lazy:
            return self
        if progress is not None:
            return replace(self, **progress.compute(lazy))
        return replace(
            self, **dict(zip(lazy, backend.compute(*lazy.values(), **kwargs), strict=True))
        )

    def persisted(self, **kwargs) -> Decomposition:
        """A copy whose lazy parts are computed and kept in (cluster) memory."""
        lazy = self.lazy_parts()
        if not lazy:
            return self
        return replace(
            self, **dict(zip(lazy, backend.persist(*lazy.values(), **kwargs), strict=True))
        )

    def moved(self, device: str) -> Decomposition:
        """A copy on ``device`` ("cpu" or "gpu"); lazy parts stay lazy."""
        parts = {n: getattr(self, n) for n in self.ARRAYS if getattr(self, n) is not None}
        return replace(self, **{n: backend.move(x, device) for n, x in parts.items()})


def fix_signs(U, V):
    """Apply xsvd's sign rule; works on NumPy, CuPy and Dask arrays alike.

    Rule: in each component the entry of ``V`` (the feature pattern) with the
    largest magnitude is positive; when the largest positive and negative
    entries have equal magnitude, the sign is +. ``U`` is flipped with ``V``
    so ``U @ diag(S) @ V.T`` is unchanged. NaN rows of ``V`` must not be set
    yet.
    """
    xp = backend.array_module(V)
    sign = backend.astype((xp.max(V, axis=0) + xp.min(V, axis=0)) >= 0, V.dtype) * 2 - 1
    return U * sign, V * sign


def validate_shape(m: int, n: int, k: int | None, *, center: bool, required: bool) -> int | None:
    """Check that an ``m x n`` matrix can be decomposed as asked; return ``k`` (or None)."""
    if m == 0 or n == 0:
        raise ValueError(
            f"The data are empty: a {m} x {n} (samples x features) matrix. Check the "
            "selection that made them (e.g. a `.sel()` that matched nothing)."
        )
    if center and m == 1:
        raise ValueError(
            "center=True with a single sample leaves nothing to decompose: the mean is that "
            "sample. Decompose more samples, or pass center=False."
        )
    return validate_k(k, m, n, required=required)


def validate_k(k: int | None, m: int, n: int, *, required: bool) -> int | None:
    """Check the number of components against the matrix shape."""
    if k is None:
        if required:
            raise ValueError(
                "The compressed SVD needs the number of components: pass `k=` "
                "(e.g. `.svd.compressed(k=10)`)."
            )
        return None
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be a positive integer, got {k!r}.")
    limit = min(m, n)
    if k < 1:
        raise ValueError(
            f"k={k}: k is the number of components to compute and must be at least 1 "
            f"(at most {limit} for a {m} x {n} (samples x features) matrix)."
        )
    if k > limit:
        raise ValueError(
            f"k={k} is out of range for a {m} x {n} (samples x features) matrix: "
            f"it must be between 1 and {limit}. Choose a smaller k."
        )
    return int(k)


def eps_tolerance(dtype) -> float:
    """Relative size below which a direction is numerical noise in ``dtype``."""
    return float(np.sqrt(np.finfo(dtype).eps))


def frobenius_norm(S):
    """``sqrt(sum(S**2))`` without overflow or underflow (NumPy, CuPy or Dask)."""
    xp = backend.array_module(S)
    top = xp.max(S)
    top = xp.where(top > 0, top, 1.0)
    return top * xp.sqrt(xp.sum((S / top) ** 2))


def variance_ratio(S, total_ss, total_norm=None):
    """Each component's share ``S**2 / total_ss`` of the total sum of squares.

    Where ``S**2`` or ``total_ss`` is beyond float64's range (data near
    1e200 or 1e-200) the shares come from the ratios ``(S / total_norm)**2``,
    which are in range; elsewhere they are exactly ``S**2 / total_ss``.
    NumPy, CuPy or Dask arrays.
    """
    tiny = float(np.finfo(np.float64).tiny / np.finfo(np.float64).eps)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        plain = S**2 / total_ss
        if total_norm is None:
            return plain
        square = S**2
        ok = (square < np.inf) & (total_ss < np.inf) & (total_ss >= tiny)
        return backend.where(ok, plain, (S / total_norm) ** 2)


def nan_rows(V, mask):
    """NaN in the rows of ``V`` (features x k) that belong to all-NaN features."""
    return backend.where(mask[:, None], np.nan, V)
