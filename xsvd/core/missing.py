"""What counts as a missing (or invalid) value, and what the solvers do with it.

The one home of the rule. The user's options ``missing=`` and
``negative_missing=`` and the data's dtype give a :class:`MissingRule`:

=================  ===========  ==============================================
``missing=``       data         rule
=================  ===========  ==============================================
``"error"``        integer      nothing can be missing (``action="none"``)
``"error"``        float        NaN is allowed only in features that are NaN
                                at every sample (land in an ocean field): they
                                are zero columns in the solve and NaN in ``V``;
                                any other NaN raises :class:`MissingValueError`
``"mean"``         float        NaN is missing and stands for its feature's
                                mean over the samples where it is present
                                (mean imputation, as PLINK 2's ``--pca
                                meanimpute``)
``"mean"``         integer      negative values are missing (the genotype
                                codes of PLINK and sgkit, e.g. -1) and stand
                                for their feature's mean
=================  ===========  ==============================================

Negative values count as missing only in integer data, where NaN cannot
exist; in floating-point data they are values (anomalies are negative half
the time) unless ``negative_missing=True`` asks for it. :data:`GENOTYPES` is
the genotype convention on its own (NaN or negative is missing), for
packing, counting and reading genotypes.

Infinite values are never allowed: :func:`check_infinite` raises
:class:`InfiniteValueError`, naming where they are.

Pure arrays (NumPy or CuPy): no xarray here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import backend

__all__ = [
    "MISSING_OPTIONS",
    "MissingRule",
    "MissingValueError",
    "InfiniteValueError",
    "GENOTYPES",
    "missing_rule",
    "check_nan_counts",
    "check_infinite",
]

#: The values ``missing=`` accepts.
MISSING_OPTIONS = ("error", "mean")

Locate = Callable[[np.ndarray], str]


class MissingValueError(ValueError):
    """Missing values that the chosen ``missing=`` option does not handle.

    Raised for NaN in features that are not NaN at every sample (with
    ``missing="error"``); the message names the features and how to fix it.
    """


class InfiniteValueError(ValueError):
    """Infinite values (``inf`` or ``-inf``) in the data; the message names where."""


@dataclass(frozen=True)
class MissingRule:
    """How missing values are recognised and treated.

    Attributes
    ----------
    action : {"none", "error", "mean"}
        ``"none"``: the data cannot hold missing values. ``"error"``: only
        whole-feature NaN is allowed (see the module docstring). ``"mean"``:
        missing values stand for their feature's mean over present samples.
    negative : bool
        Negative values are missing too (genotype codes).
    """

    action: str
    negative: bool = False

    @property
    def active(self) -> bool:
        """True when the data may hold missing values that need handling."""
        return self.action != "none"

    @property
    def fills(self) -> bool:
        """True when missing values are filled with their feature's mean."""
        return self.action == "mean"

    def mask(self, xp, x):
        """Boolean mask of the missing entries of float (or integer) values ``x``."""
        missing = xp.isnan(x)
        if self.negative:
            missing = missing | (x < 0)
        return missing


#: PLINK's and sgkit's convention for genotype calls: NaN or a negative code is missing.
GENOTYPES = MissingRule("mean", negative=True)


def missing_rule(dtype, missing: str, negative_missing: bool | None = None) -> MissingRule:
    """The rule for data of ``dtype`` under the user's ``missing=`` and ``negative_missing=``.

    ``negative_missing`` None (default): negative values are missing only in
    integer data with ``missing="mean"``.
    """
    if missing not in MISSING_OPTIONS:
        raise ValueError(
            f"missing must be one of {MISSING_OPTIONS}, got {missing!r}. Use "
            "`missing='mean'` to fill each missing value with its feature's mean."
        )
    if negative_missing not in (None, True, False):
        raise ValueError(f"negative_missing must be True, False or None, got {negative_missing!r}.")
    floating = backend.numpy_dtype(dtype).kind in "fc"
    if missing == "mean":
        negative = not floating if negative_missing is None else bool(negative_missing)
        return MissingRule("mean", negative=negative)
    if negative_missing:
        raise ValueError(
            "negative_missing=True says negative values are missing, and missing='error' "
            "allows no missing values (other than features missing at every sample). "
            "Pass missing='mean' to fill them with their feature's mean."
        )
    return MissingRule("error") if floating else MissingRule("none")


#: How to fix partly missing features where ``missing="mean"`` is taken (the default advice).
NAN_ADVICE = (
    "Features that are NaN at every sample (e.g. land in an ocean field) are handled; for "
    "the others pass `missing='mean'`, which stands each one for its feature's mean over the "
    "samples (no filled copy is made), or fill them first, e.g. `da.interpolate_na(dim)`, or "
    "leave the features that hold them out, as land: `da.where(da.notnull().all(dim))`."
)
#: How to fix infinite values where ``missing="mean"`` is taken (the default advice).
INFINITE_ADVICE = (
    "Replace them (e.g. `da.where(np.isfinite(da))` makes them NaN, which `missing='mean'` "
    "then fills) or drop those features."
)


def check_nan_counts(
    counts,
    n_samples: int,
    *,
    offset: int = 0,
    locate: Locate | None = None,
    advice: str = NAN_ADVICE,
):
    """The all-NaN feature mask from per-feature NaN counts (rule ``"error"``), or raise.

    ``counts`` may be NumPy or CuPy; the mask comes back on the same backend.
    A feature NaN at some samples but not all is a :class:`MissingValueError`
    that says which features (through ``locate``, from flat feature indices
    counted from ``offset``) and how to fix it (``advice``: an analysis that
    takes no ``missing=`` gives its own).
    """
    host = backend.to_numpy(counts)
    partial = (host > 0) & (host < n_samples)
    if partial.any():
        idx = np.flatnonzero(partial) + offset
        where = locate(idx) if locate is not None else _default_locate(idx)
        raise MissingValueError(
            f"The data has NaN at some but not all samples of {idx.size} feature(s): "
            f"{where}. {advice}"
        )
    return backend.on_backend_of(host == n_samples, counts)


def check_infinite(
    flags, *, offset: int = 0, locate: Locate | None = None, advice: str = INFINITE_ADVICE
) -> None:
    """Raise :class:`InfiniteValueError` when any feature holds an infinite value.

    ``flags``: per feature, whether it holds ``inf`` or ``-inf`` (NumPy or
    CuPy), the features counted from ``offset``; ``locate`` names them;
    ``advice`` says how to fix it (an analysis without ``missing=`` gives its own).
    """
    host = backend.to_numpy(flags)
    if not host.any():
        return
    idx = np.flatnonzero(host) + offset
    where = locate(idx) if locate is not None else _default_locate(idx)
    raise InfiniteValueError(
        f"The data hold infinite values (inf or -inf) in {idx.size} feature(s): {where}. "
        f"An SVD of them has no meaning. {advice}"
    )


def _default_locate(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:10])
    more = f" and {idx.size - 10} more" if idx.size > 10 else ""
    return f"feature index {shown}{more}"
