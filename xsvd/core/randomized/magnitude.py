"""Magnitude rescaling: data and weights of any magnitude, multiplied without overflow.

The products with the data run in float32 or float64 (the *product dtype*).
What they must hold is the weighted matrix ``B = (A - 1 mu^T) diag(w)``
column by column: the data of feature ``j`` (largest magnitude ``a_j``) and
its weighted column (largest magnitude ``b_j = a_j |w_j|``). A feature of
1e-20 weighted by 1e20 is an ordinary column of ``B`` even though neither
factor is ordinary.

The first pass bounds every ``a_j`` from above by the column's norm (from the
sums of squares the kernels take anyway, so no sweep of its own: ``max|x| <=
||x|| <= sqrt(m) max|x|``), measuring the largest magnitude exactly only where
the squares themselves may have overflowed or underflowed (see
:func:`.stripe.norm_magnitudes`); the rules below take that bound as ``a_j``.
The data need rescaling (:func:`needs_rescaling`) when

- the largest ``a_j`` is outside :data:`SAFE_MAGNITUDE` (its squares and
  sums would overflow or underflow), or
- the largest ``b_j`` is outside :data:`SAFE_WEIGHTED` (the products of
  the weighted matrix), or
- a *relevant* feature (``b_j`` at least :data:`RELEVANT` times the largest:
  one that can change a result above the rounding of the product dtype) has
  data or a weight below :data:`COLUMN_LOW` (its own products would lose
  precision to underflow).

Rescaled (:func:`rescaling`), feature ``j`` is multiplied by a power of two
``2**c_j`` that brings ``a_j`` to ``[0.5, 1)`` as it is converted to the
product dtype (float64 data multiplied in float32 before the conversion), and
its weight becomes ``w_j 2**(g - c_j)``, with ``g`` the one power of two that
brings the largest weighted column to ``[0.5, 1)``. The matrix decomposed is
then ``2**g B`` exactly (powers of two round nothing), every factor in the
products is near 1, and the results are scaled back by ``2**-g`` (the means
by ``2**-c_j``). Features too small to matter in the product dtype (below
``2**-FLUSH`` of the largest weighted column) get weight 0, so that no
subnormal number slows the products.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import backend

__all__ = [
    "SAFE_MAGNITUDE",
    "SAFE_WEIGHT",
    "SAFE_WEIGHTED",
    "RELEVANT",
    "COLUMN_LOW",
    "Rescaling",
    "needs_rescaling",
    "rescaling",
    "power_of_two_exponent",
    "times_power_of_two",
    "within_range",
    "scaled_back",
]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)

#: Largest magnitudes of the data (as exponents of 2) that the products in each
#: dtype take without overflow or loss to underflow, with room for sums over
#: millions of rows and columns (float32: about 1e-9 to 1e9; float64: 1e-90 to 1e90).
SAFE_MAGNITUDE = {_F32: (-30, 30), _F64: (-300, 300)}
#: Weights whose largest magnitude is outside this range are brought into it by a
#: power of two before the passes (exponents of 2).
SAFE_WEIGHT = (-20, 20)
#: Largest magnitudes of the weighted columns ``|x_j| w_j`` (exponents of 2).
SAFE_WEIGHTED = {_F32: (-50, 50), _F64: (-350, 350)}
#: A feature is relevant when its weighted column is at least this fraction of
#: the largest (exponent of 2: the unit roundoff of the product dtype).
RELEVANT = {_F32: -24, _F64: -53}
#: Relevant features whose data or weight are below this are rescaled (exponent of 2).
COLUMN_LOW = {_F32: -56, _F64: -400}
#: Rescaled, weighted columns below ``2**-FLUSH`` of the largest are set to zero.
FLUSH = {_F32: 100, _F64: 1000}


@dataclass(frozen=True)
class Rescaling:
    """Powers of two that bring every factor of the products near 1.

    Attributes
    ----------
    column_exp : numpy array (n,) of int
        Feature ``j`` is multiplied by ``2**column_exp[j]`` as it is converted.
    weights : numpy array (n,), float64
        The weights to multiply with instead: ``w_j 2**(result_exp - column_exp[j])``.
    result_exp : int
        The matrix decomposed becomes ``2**result_exp`` times what it was.
    """

    column_exp: np.ndarray
    weights: np.ndarray
    result_exp: int


def power_of_two_exponent(magnitude: float, low: int, high: int) -> int:
    """0 when ``magnitude`` is within ``[2**low, 2**high]`` (or 0, or not finite),
    else ``-e`` with ``magnitude * 2**-e`` in ``[0.5, 1)``."""
    magnitude = float(magnitude)
    if magnitude == 0 or not np.isfinite(magnitude) or 2.0**low <= magnitude <= 2.0**high:
        return 0
    return -int(np.frexp(magnitude)[1])


def _log2_parts(amax, weights):
    """``log2`` of the data's and the weights' magnitudes per feature (``-inf`` for zeros)."""
    a = np.nan_to_num(np.asarray(amax, dtype=np.float64), nan=0.0)
    w = np.ones_like(a) if weights is None else np.abs(np.asarray(weights, dtype=np.float64))
    with np.errstate(divide="ignore"):
        return a, np.log2(a), w, np.log2(w)


def needs_rescaling(amax, weights, dtype, weight_exp: int = 0) -> bool:
    """Whether data of per-feature magnitudes ``amax`` and ``weights`` need rescaling.

    ``amax`` and ``weights`` (as given, or None) are host arrays (n,), the
    weights in use being ``weights * 2**weight_exp``; ``dtype`` is the
    product dtype. See the module docstring.
    """
    dtype = np.dtype(dtype)
    a, la, _, lw = _log2_parts(amax, weights)
    lw = lw + weight_exp
    if not a.size:
        return False
    low, high = SAFE_MAGNITUDE[dtype]
    top = float(a.max())
    if top > 2.0**high or 0 < top < 2.0**low:
        return True
    lb = la + lw
    lbmax = float(lb.max())
    if lbmax == -np.inf:
        return False  # every weighted column is zero
    low, high = SAFE_WEIGHTED[dtype]
    if not low <= lbmax <= high:
        return True
    relevant = lb >= lbmax + RELEVANT[dtype]
    floor = COLUMN_LOW[dtype]
    return bool(((la[relevant] < floor) | (lw[relevant] < floor)).any())


def rescaling(amax, weights, dtype, convert_dtype) -> Rescaling:
    """The per-feature and overall powers of two for data of magnitudes ``amax``.

    ``weights``: as given (host float64, or None). ``convert_dtype``: the
    dtype the data are multiplied by ``2**column_exp`` in (float64 for
    float64 data multiplied in float32, else the product dtype): the
    exponents stay within its range, so that subnormal data come up as far
    as they can. ``result_exp`` of the result is relative to ``B`` itself.
    """
    dtype = np.dtype(dtype)
    a, la, w, lw = _log2_parts(amax, weights)
    present = a > 0
    limit = int(np.finfo(convert_dtype).maxexp) - 3
    column_exp = np.zeros(a.shape, dtype=np.int64)
    column_exp[present] = np.clip(-np.frexp(a[present])[1], -limit, limit)
    lb = la + lw
    lbmax = float(lb.max()) if lb.size else -np.inf
    if lbmax == -np.inf:
        return Rescaling(column_exp, np.zeros_like(a), 0)
    result_exp = -(int(np.floor(lbmax)) + 1)
    signed = np.ones_like(a) if weights is None else np.asarray(weights, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        scaled = np.ldexp(signed, result_exp - column_exp)
    scaled[~present | (lb < lbmax - FLUSH[dtype])] = 0.0
    return Rescaling(column_exp, scaled, result_exp)


def times_power_of_two(x, exponent: int):
    """``x * 2**exponent`` for any array, in exact steps (``2**exponent`` may not be a float)."""
    exponent = int(exponent)
    while exponent:
        step = max(-1000, min(1000, exponent))
        x = x * 2.0**step
        exponent -= step
    return x


def within_range(cross, amax, weights, weight_exp: int, dtype):
    """``cross``, or a clear error when the data cannot be multiplied in ``dtype`` unscaled."""
    amax = np.nan_to_num(backend.to_numpy(amax))
    if needs_rescaling(amax, weights, dtype, weight_exp):
        low, high = SAFE_MAGNITUDE[dtype]
        top = float(amax.max())
        what = "large" if top > 2.0**high else "small" if top < 2.0**low else "large or small"
        raise ValueError(
            f"The data reach magnitudes of {top:.3g}, or features of very different "
            f"magnitudes are balanced by weights: too {what} to multiply in {dtype} without "
            "overflow or underflow, and a lazy result (compute=False) cannot read them again "
            "rescaled. Use compute=True (the default), which rescales them, or multiply the "
            "data by a suitable factor first."
        )
    return cross


def scaled_back(S, errors, stats, result_exp: int, column_exp):
    """Singular values, their errors, mean, total sum of squares and ``||B||_F``, in the
    data's own units.

    The passes decomposed ``2**result_exp B`` with feature ``j`` read as
    ``2**column_exp[j]`` times itself (None: as it is). ``||B||_F`` comes from
    the scaled sum of squares, so it is right where ``||B||_F**2`` is beyond
    float64. ``stats`` is a :class:`~.state.FeatureStats`.
    """
    e = result_exp
    total_ss = stats.total_ss
    if e == 0 and column_exp is None:
        return S, errors, stats, total_ss**0.5
    if isinstance(total_ss, float):  # a NumPy scalar: inf or 0 beyond float64, no exception
        total_ss = np.float64(total_ss)
    mean = stats.mean
    with np.errstate(over="ignore", under="ignore"):  # sums of squares beyond float64
        if mean is not None and column_exp is not None:
            mean = mean * backend.on_backend_of(np.ldexp(1.0, -column_exp), mean)
        total_norm = times_power_of_two(total_ss**0.5, -e)
        total_ss = times_power_of_two(total_ss, -2 * e)
        S = times_power_of_two(S, -e)
        while e:  # the errors of S (angles and relative residuals have no units)
            step = max(-1000, min(1000, e))
            errors = errors * backend.on_backend_of(np.array([2.0**-step, 1.0, 1.0]), errors)
            e -= step
    return S, errors, replace(stats, mean=mean, total_ss=total_ss), total_norm
