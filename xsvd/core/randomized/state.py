"""What the passes of the compressed SVD hand to each other (symbols: see ``randomized``).

Plain dataclasses. Their fields are arrays, Dask ``Delayed`` objects (before
a lazy pass is computed) or lists of either, one per stripe; Dask computes
and rebuilds dataclasses, so an executor can compute a whole :class:`Carry`
at the end of a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from .. import backend


@dataclass
class Sketch:
    """One pass's sketch of the stripe matrix ``C``.

    Attributes
    ----------
    blocks : list
        ``Y_i = C_i W`` for every stripe ``i`` (product dtype), still without
        the correction by ``mean_row``.
    mean_row : array (l,) or None
        What centering takes off every row of ``Y`` when the data were read
        uncentered (the first pass over stripes of samples); None otherwise.
    cross : array (thin length x l)
        ``Z = C^T Y``, float64: the next basis is ``orth(Z)``.
    gram : array (l x l) or None
        ``G = Y^T Y``, float64 (None where the final step does not need it).
    basis : array (thin length x l) or None
        The orthonormal ``W`` the pass multiplied, for the error estimates.
    """

    blocks: list
    mean_row: Any
    cross: Any
    gram: Any
    basis: Any = None


@dataclass
class FeatureStats:
    """What the first pass learns about the features (the thin or the stripe side).

    Attributes
    ----------
    mean : array (n,) or None
        Feature means ``mu`` (None without centering).
    total_ss : scalar array
        ``||B||_F^2``, the total sum of squares of the centered, weighted data.
    nan_mask : array (n,) of bool, or None
        Features missing at every sample (None when nothing can be missing).
    amax : array or None
        Per feature, a bound on the largest magnitude in the data as read (the
        column's norm, or the largest magnitude where that is measured exactly:
        see :func:`.stripe.norm_magnitudes`), where the data's dtype does not
        bound it (see ``Problem.watch_range``).
    fill : array (n,) or None
        ``missing="mean"`` over stripes of features: each feature's fill value
        (its mean over present values, in the product dtype), for later passes.
    """

    mean: Any
    total_ss: Any
    nan_mask: Any
    amax: Any = None
    fill: Any = None


@dataclass
class Carry:
    """What one pass hands to the next, and the last one to the final step.

    Attributes
    ----------
    basis : array (thin length x l) or None
        ``W``: the test matrix ``Omega``, then ``orth(Z)`` of each pass; None after the last.
    stats : FeatureStats, list of FeatureStats (one per stripe), or None
        From the first pass on.
    sketches : list of Sketch
        The sketches the final step needs: the last pass's, or every pass's (``krylov``).
    fill : array (n,) or None
        ``missing="mean"`` over stripes of samples: each feature's mean over
        its present values, read before the passes.
    """

    basis: Any
    stats: Any = None
    sketches: list = field(default_factory=list)
    fill: Any = None


class Summable:
    """Field-by-field ``+`` for per-stripe partial sums (None stays None).

    Fields named in ``MAXED`` are combined by their elementwise maximum instead.
    """

    MAXED: tuple = ()

    def __add__(self, other):
        parts = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a is None:
                parts[f.name] = None
            elif f.name in self.MAXED:
                parts[f.name] = backend.namespace(a).maximum(a, b)
            else:
                parts[f.name] = a + b
        return replace(self, **parts)
