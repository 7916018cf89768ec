"""Pieces shared by the exact and the randomized solvers.

Pure arrays only: this package never imports xarray or pint.

The matrix being decomposed is always

    B = (A - 1 mu^T) diag(w)

with ``A`` the (samples x features) data, ``mu`` the per-feature mean over the
samples (only when centering) and ``w`` the per-feature weights (ones when
none are given). Features that are NaN at every sample are treated as zero
columns of ``A`` and come back as NaN rows of ``V``; a NaN anywhere else is an
error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Describe = Callable[[np.ndarray], str]


class MissingValueError(ValueError):
    """NaN values in features that are not NaN at every sample."""


@dataclass
class Decomposition:
    """Result of a solver, on the input's backend (NumPy, CuPy or Dask arrays).

    ``U`` is (samples x k), ``S`` (k,), ``V`` (features x k) with NaN rows for
    all-NaN features, ``mean`` the per-feature mean that was removed (None when
    not centering), ``total_ss`` the total sum of squares of ``B`` (a 0-d
    array), ``nan_features`` the boolean mask of all-NaN features (None for data
    that cannot hold NaN).
    """

    U: Any
    S: Any
    V: Any
    mean: Any
    total_ss: Any
    nan_features: Any
    method: str
    settings: dict


def has_nan_kind(dtype) -> bool:
    """True when values of this dtype can be NaN."""
    return np.dtype(dtype).kind in "fc"


MISSING_OPTIONS = ("error", "mean")


def missing_mode(dtype, missing: str) -> str | None:
    """How the solvers treat missing values, from the user's ``missing=`` option.

    - ``None``: the data cannot hold missing values (integers, default option);
    - ``"nan"``: NaN features are allowed only when NaN at every sample (zero
      columns, NaN in ``V``); any other NaN is an error;
    - ``"mean"``: NaN and negative values are missing and stand for the
      feature's mean over the samples where it is present (mean
      imputation, as PLINK 2's ``--pca meanimpute``).
    """
    if missing not in MISSING_OPTIONS:
        raise ValueError(
            f"missing must be one of {MISSING_OPTIONS}, got {missing!r}. Use "
            "`missing='mean'` to fill each missing value with its feature's mean."
        )
    if missing == "mean":
        return "mean"
    return "nan" if has_nan_kind(dtype) else None


def missing_mask(xp, x, mode: str):
    """Boolean mask of the missing entries of a float block under ``mode``."""
    if mode == "mean":
        return xp.isnan(x) | (x < 0)
    return xp.isnan(x)


def check_nan_counts(counts, n_samples: int, *, offset: int = 0, describe: Describe | None = None):
    """Return the all-NaN feature mask from per-feature NaN counts, or raise.

    A feature NaN at some samples but not all is an error that says which
    features (through ``describe``) and how to fix it.
    """
    counts = np.asarray(counts)
    partial = (counts > 0) & (counts < n_samples)
    if partial.any():
        idx = np.flatnonzero(partial) + offset
        where = describe(idx) if describe is not None else _default_describe(idx)
        raise MissingValueError(
            f"The data has NaN at some but not all samples of {idx.size} feature(s): "
            f"{where}. Features that are NaN at every sample (e.g. land in an ocean "
            "field) are handled; for the others pass `missing='mean'`, which stands each "
            "one for its feature's mean over the samples (no filled copy is made), or "
            "fill them first, e.g. `da.interpolate_na(dim)`, or drop the samples or "
            "features that hold them with `da.dropna(...)`."
        )
    return counts == n_samples


def _default_describe(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:10])
    more = f" and {idx.size - 10} more" if idx.size > 10 else ""
    return f"feature index {shown}{more}"


def fix_signs(U, V):
    """Apply xsvd's sign rule; works on NumPy, CuPy and Dask arrays alike.

    Rule: in each component the entry of ``V`` (the feature pattern) with the
    largest magnitude is positive; when the largest positive and negative
    entries have equal magnitude, the sign is +. ``U`` is flipped with ``V``
    so ``U @ diag(S) @ V.T`` is unchanged. NaN rows of ``V`` must not be set
    yet.
    """
    sign = ((V.max(axis=0) + V.min(axis=0)) >= 0) * 2 - 1
    sign = sign.astype(V.dtype)
    return U * sign, V * sign


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
    if not 1 <= k <= limit:
        raise ValueError(
            f"k={k} is out of range for a {m} x {n} (samples x features) matrix: "
            f"it must be between 1 and {limit}. Choose a smaller k."
        )
    return int(k)


def eps_tolerance(dtype) -> float:
    """Relative size below which a direction is numerical noise in ``dtype``."""
    return float(np.sqrt(np.finfo(dtype).eps))


def nan_rows(V, mask):
    """NaN in the rows of ``V`` (features x k) that belong to all-NaN features."""
    from .._backend import is_dask, namespace

    if is_dask(V) or is_dask(mask):
        import dask.array as da

        return da.where(mask[:, None], np.nan, V)
    xp = namespace(V)
    return xp.where(mask[:, None], xp.nan, V)
