"""Maximum covariance analysis (MCA): the SVD of the cross-covariance of two fields.

With ``Bl = (Xl - 1 mul^T) Dl`` and ``Br = (Xr - 1 mur^T) Dr`` the centered,
weighted (samples x features) matrices of the two fields (which share the
sample dimension; their grids may differ),

    C = Bl^T Br / (n - 1) = P diag(S) Q^T,

with ``P`` the left patterns, ``Q`` the right patterns and ``S`` the
singular values (covariances). ``C`` is never formed by the default
``method="compressed"``: one *pass* reads each field once, a block of
samples of both at a time (:func:`~xsvd.climate.fields.cross_products`),
and gives both ``C W = sum_i Bl_i^T (Br_i W)`` and ``C^T T = sum_i Br_i^T
(Bl_i T)`` (centering and weights are rank-one and diagonal corrections of
the small products); the matrix-free block Krylov SVD of ``[[0, C], [C^T,
0]]`` (:func:`xsvd.core.randomized.operator.fused_operator_svd`) finds
``k`` triplets and their error estimates from a few such passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ..core import backend, fix_signs
from ..core.common import variance_ratio
from ..core.options import CompressedOptions, takes_options
from ..core.randomized.operator import fused_operator_svd
from ..labeled.api import Reading, warn_uncentered
from ..labeled.base import Result, component_array, errors_part
from .fields import (
    Field,
    check_same_memory,
    covariance_units,
    cross_products,
    operator_options,
    prepare_field,
)

__all__ = ["mca", "MCAResult", "METHODS"]

#: ``mca(method=)``: the matrix-free compressed SVD, or the full SVD of the formed ``C``.
METHODS = ("compressed", "exact")


@takes_options(CompressedOptions, Reading)
def mca(
    left: xr.DataArray,
    right: xr.DataArray,
    k: int,
    *,
    dim="time",
    weights_left: xr.DataArray | None = None,
    weights_right: xr.DataArray | None = None,
    center: bool = True,
    method: str = "compressed",
    **options,
) -> MCAResult:
    """Maximum covariance analysis of two fields: the SVD of their cross-covariance.

    The ``k`` pairs of patterns (unit vectors ``p_i`` of the left field's
    features, ``q_i`` of the right's) whose expansion coefficients have the
    largest covariances ``S_i``: ``C = Bl^T Br / (n - 1) = P diag(S) Q^T``,
    ``Bl``, ``Br`` the centered and weighted fields (samples x features),
    ``n`` the number of samples (Bretherton, Smith & Wallace 1992).

    Parameters
    ----------
    left, right : xarray.DataArray
        The two fields. They share the sample dimension(s) ``dim`` (same size
        and, where both have them, the same coordinates); their other
        dimensions (features) may differ. NumPy-, Dask- or device-backed
        (CuPy), both in the same memory; the results stay there. Features
        that are NaN at every sample (land in an ocean field) are left out
        and are NaN in the patterns and maps; other NaN is an error unless
        ``missing="mean"``.
    k : int
        Number of modes.
    dim : str or sequence of str
        The sample dimension(s).
    weights_left, weights_right : xarray.DataArray, optional
        Weights that multiply each field's features (e.g.
        :func:`xsvd.coslat_weights`), as xeofs' ``weights_X``/``weights_Y``.
    center : bool
        Remove each feature's mean over the samples first.
    standardize : bool
        Divide each feature by its standard deviation (``ddof=0``, before the
        weights), as xeofs' ``standardize=True``. A constant feature (a
        deviation at rounding level, as ``docs/input-rules.md`` defines it) gets
        weight 0; its correlation maps are NaN with or without ``standardize``.
    method : {"compressed", "exact"}
        ``"compressed"`` (default) never forms ``C``: each pass reads each
        field once and gives a product with ``C`` and one with ``C^T``.
        ``"exact"`` forms ``C`` (left features x right features, in memory)
        and takes its full SVD: for small fields, and as the reference.
    missing : {"error", "mean"}
        As :func:`xsvd.svd`'s, for each field: ``"mean"`` stands each missing
        value (NaN; in integer data, negative codes) for its feature's mean
        over the samples where it is present, inside the reads (no filled
        copy of the data): the results are those of the filled fields, with
        ``standardize`` by the present values' standard deviation as
        :func:`xsvd.svd`'s. ``"error"`` (default) refuses it, naming where.
    negative_missing : bool, optional
        Whether negative values count as missing, as :func:`xsvd.svd`'s.
    device : {None, "gpu", "cpu"}
        Move both fields there first (as :func:`xsvd.svd`'s ``device=``); the
        results stay there.
    n_power_iter, n_oversamples, seed, tol, max_passes
        The compressed solver's options, declared once with those of
        :func:`xsvd.compressed` and with its defaults: by default it passes
        until every estimated relative error is below 1e-6 (at most 8
        passes); ``n_power_iter=q``: ``q + 1`` passes; ``seed=None`` draws a
        fresh start block (pass a seed for reproducible results).
    dtype, krylov
        Not available here: the products are in the data's precision and
        every pass's basis is kept (block Krylov); ``dtype=`` and
        ``krylov=False`` are refused with an error.

    Returns
    -------
    MCAResult
        ``singular_values``, ``squared_covariance_fraction``,
        ``left_patterns`` / ``right_patterns``, ``left_scores`` /
        ``right_scores``, ``homogeneous_maps()``, ``heterogeneous_maps()``,
        ``errors``.

    Notes
    -----
    Conventions, as xeofs' ``xeofs.cross.MCA`` (``use_pca=False``), which
    these results match to ~1e-12 up to the sign of each mode:

    - ``singular_values`` are those of ``C`` with ``1 / (n - 1)``: xeofs'
      ``data["singular_values"]``;
    - the patterns are unit vectors in the weighted space (xeofs'
      ``components()``); the scores are the weighted, centered data times
      them, ``Bl p_i`` (xeofs' ``scores()``, not normalized);
    - ``squared_covariance_fraction`` is ``S_i**2 / ||C||_F**2`` (xeofs'
      ``squared_covariance_fraction()``);
    - the homogeneous maps correlate each field with its own scores, the
      heterogeneous maps with the other field's (xeofs'
      ``homogeneous_patterns()`` / ``heterogeneous_patterns()``, without
      p-values);
    - sign: the largest entry of each right pattern is positive (xeofs'
      signs are those of its solver).

    Reads of the data (of each field): one for the features' statistics, one
    per pass (compressed; ``settings["passes"]``), one for the scores; each
    of ``homogeneous_maps()`` / ``heterogeneous_maps()`` one more (both
    computed together). Dask data stream when chunked along the samples
    (a field in one chunk along them is held in memory during a pass).
    ``squared_covariance_fraction`` needs ``||C||_F^2``, computed on first
    use (one more read of each field) without forming ``C`` as
    ``<Gl, Gr>_F``, ``G = B B^T`` over the samples, from blocks of features
    (every sample; a Dask field's blocks are computed one at a time, so a
    lazy input is never loaded whole; memory ``n**2`` and one block), or
    from ``C`` where it has at most ``n**2`` values
    (:func:`covariance_norm`). The fields are each multiplied by a power of two
    (exact) that brings their weighted data near 1 before any product, and
    the results scaled back: data of any magnitude neither overflow nor
    underflow in the products (float32 at 1e20 or 1e-25 as float64 at 1e200).

    On a device (CuPy) the products, patterns, scores and ``S`` stay there;
    only the small matrices of the solver cross to the host and back.

    Examples
    --------
    >>> import numpy as np, xarray as xr, xsvd
    >>> rng = np.random.default_rng(0)
    >>> sst = xr.DataArray(rng.standard_normal((50, 4, 5)), dims=("time", "lat", "lon"))
    >>> slp = xr.DataArray(rng.standard_normal((50, 6)), dims=("time", "station"))
    >>> slp = slp + sst.isel(lat=0, lon=slice(0, 1)).values
    >>> res = xsvd.mca(sst, slp, k=2, dim="time", seed=0)
    >>> res.left_patterns.dims, res.right_scores.dims
    (('component', 'lat', 'lon'), ('time', 'component'))
    >>> bool(res.squared_covariance_fraction[0] > 0.5)
    True
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    given, reading = operator_options(options, "mca", method)
    standardize = reading.standardize
    kw = dict(center=center, standardize=standardize, reading=reading)
    fl = prepare_field(left, dim, weights_left, what="left field", **kw)
    fr = prepare_field(right, dim, weights_right, what="right field", **kw)
    check_same_memory({"left": fl, "right": fr})
    _check_samples(left, right, fl, fr)
    n = fl.shape[0]
    if n < 2:
        raise ValueError("MCA needs at least 2 samples (the covariance divides by n - 1).")
    limit = min(fl.shape[1], fr.shape[1])
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be a positive integer, got {k!r}.")
    if not 1 <= k <= limit:
        raise ValueError(
            f"k={k!r}: it must be an integer between 1 and {limit} (the smaller field's "
            "number of features without NaN)."
        )
    k = int(k)
    if not center:  # the main svd's rule, for each field: its means' share of its squares
        warn_uncentered(
            max((f.mean_component() for f in (fl, fr)), key=lambda d: d.mean_share()), svd=False
        )
    settings: dict[str, Any] = {
        "method": method,
        "center": center,
        "standardize": standardize,
        "missing": reading.missing,
    }
    if method == "exact":  # C formed where the data are, and its SVD there
        C = cross_covariance(fl, fr)
        P, S_all, Qt = fl.xp.linalg.svd(C, full_matrices=False)
        P, S, Q = P[:, :k], S_all[:k], Qt[:k, :].T
        P, Q = fix_signs(P, Q)
        errors = np.zeros((k, 3))
        norm = backend.to_scalar(fl.xp.sum(S_all**2)) ** 0.5
    else:
        scale = 1.0 / (n - 1)

        def both(W, T):  # one read of each field, a block of samples of both at a time
            CW, CtT = cross_products(fl, fr, W, T)
            return CW * scale, CtT * scale

        dtype = np.float32 if np.float32 in (fl.dtype, fr.dtype) else np.float64
        res = fused_operator_svd(
            both,
            (fl.shape[1], fr.shape[1]),
            k,
            n_oversamples=given.n_oversamples,
            n_power_iter=given.n_power_iter,
            tol=given.tol,
            max_passes=given.max_passes,
            seed=given.seed,
            dtype=dtype,
        )
        # the small host results back where the data are
        P, S, Q, errors, norm = fl.here(res.U), fl.here(res.S), fr.here(res.V), res.errors, None
        settings.update(
            passes=res.passes,
            stopped=res.stopped,
            n_oversamples=given.n_oversamples,
            seed=given.seed,
            error_bounds=res.bounds,
        )
    settings["k"] = k
    # the fields were decomposed each scaled by a power of two: S back in the data's units
    S, errors = fr.unscaled(fl.unscaled(S)), np.array(backend.to_numpy(errors), dtype=float)
    errors[:, 0] = fr.unscaled(fl.unscaled(errors[:, 0]))
    S = component_array(S, "singular_values", {"long_name": "singular values"})
    S = S.copy(data=fl.here(S.values))
    parts = {
        "singular_values": S,
        "left_patterns": fl.layout.label_features(fl.full(P), "left_patterns"),
        "right_patterns": fr.layout.label_features(fr.full(Q), "right_patterns"),
        "left_scores": fl.layout.label_samples(fl.unscaled(fl.times(P)), "left_scores"),
        "right_scores": fr.layout.label_samples(fr.unscaled(fr.times(Q)), "right_scores"),
        "errors": errors_part(S, errors),
    }
    if norm is not None:
        parts["total_norm"] = _norm_part(fr.unscaled(fl.unscaled(norm)))
    record = {"settings": settings, "n_samples": n, "units": covariance_units(fl, fr)}
    return MCAResult(parts, record, (fl, fr))


def _check_samples(left, right, fl: Field, fr: Field) -> None:
    # the advice aligns the samples only: a plain `xr.align` would also intersect the
    # coordinates of two grids that share dim names (a 1-degree field cut to 2-degree points)
    features = sorted({*fl.layout.feature_dims, *fr.layout.feature_dims}, key=str)
    align = f"`left, right = xr.align(left, right, join='inner', exclude={features!r})`"
    if fl.layout.sample_dims != fr.layout.sample_dims or fl.shape[0] != fr.shape[0]:
        raise ValueError(
            f"left and right must share the sample dimension(s): left has "
            f"{dict(zip(fl.layout.sample_dims, fl.layout.sample_shape, strict=True))}, right "
            f"{dict(zip(fr.layout.sample_dims, fr.layout.sample_shape, strict=True))}. "
            f"Select the same samples in both, e.g. {align} (the samples only)."
        )
    for d in fl.layout.sample_dims:
        if (
            d in left.xindexes  # xindexes: a quantified feature coordinate's PintIndex
            and d in right.xindexes  # has no pandas form (.indexes raises)
            and not left.xindexes[d].equals(right.xindexes[d])
        ):
            raise ValueError(
                f"left and right have different {d!r} coordinates. Align the samples first, "
                f"e.g. {align}."
            )


def cross_covariance(fl: Field, fr: Field):
    """``C = Bl^T Br / (n - 1)``, formed (left features x right features, float64), in the
    memory of the data (computed for Dask): ``Br`` formed, then one read of the left."""
    return fl.read(fr.formed(), transpose=True, power=1) / (fl.shape[0] - 1)


def covariance_norm(fl: Field, fr: Field) -> float:
    """``||C||_F`` (in the data's units), exactly, streaming: ``C`` is never formed where
    it is larger than the Gram matrix over the samples.

    Where ``C`` (``a x b`` values) is no larger than ``n**2``, from ``C`` formed
    (:func:`cross_covariance`; then also fewer operations). Otherwise
    ``<Gl, Gr>_F / (n - 1)**2`` with ``G = B B^T`` over the samples, without
    holding ``Gr``: ``Gl`` is summed from blocks of the left field's features
    (every sample, ``Bl_c Bl_c^T``), then ``<Gl, Gr> = sum_c <Gl, Br_c
    Br_c^T> = sum_c sum((Gl Br_c) * Br_c)`` over blocks of the right field's, a
    panel of rows at a time: one read of each field, one ``n x n`` matrix and
    one block in memory (a Dask field's blocks are computed one at a time:
    :meth:`Field.blocks`), never the data.
    """
    n, a, b = fl.shape[0], fl.shape[1], fr.shape[1]
    if a * b <= n * n:
        C = cross_covariance(fl, fr)
        return fr.unscaled(fl.unscaled(backend.to_scalar(fl.xp.sum(C * C)) ** 0.5))
    G = _gram(fl)
    total = fl.zeros(())
    for block in fr.blocks():  # <Gl, b b^T> = sum((Gl b) * b), a panel of rows at a time
        for rows in _panels(n):
            total += fl.xp.sum((G[rows, :] @ block) * block[rows, :])
        del block  # one block in memory at a time
    return fr.unscaled(fl.unscaled(backend.to_scalar(total) ** 0.5 / (n - 1)))


def _norm_part(norm: float) -> xr.DataArray:
    return xr.DataArray(float(norm), name="total_norm", attrs={"long_name": "||C||_F"})


def _gram(f: Field):
    """``B B^T`` (samples x samples), from blocks of features: one read. Summed a panel of
    rows at a time: no other ``n x n`` matrix is made."""
    G = f.zeros((f.shape[0],) * 2)
    for block in f.blocks():
        for rows in _panels(f.shape[0]):
            G[rows, :] += block[rows, :] @ block.T
        del block  # one block in memory at a time
    return G


def _panels(n: int, size: int = 256):
    return (slice(r, min(n, r + size)) for r in range(0, n, size))


#: MCA's parts of each field: saved with the field's own coordinates (the grids may differ).
_SIDES = {
    f"{side}_{what}": side
    for side in ("left", "right")
    for what in ("patterns", "scores", "homogeneous", "heterogeneous")
}


class MCAResult(Result):
    """The result of :func:`xsvd.mca`: coupled patterns of two fields, labeled.

    ``U, S, V = res`` are the SVD of the cross-covariance ``C = P diag(S) Q^T``:
    ``U`` the left patterns ``P``, ``S`` the singular values (covariances), ``V``
    the right patterns ``Q`` (each ``(component, *features)``).
    ``explained_variance_ratio`` is the squared covariance fraction
    ``S**2 / ||C||_F**2``. Also ``left_scores``, ``right_scores``,
    ``homogeneous_maps()``, ``heterogeneous_maps()``, ``errors``, ``settings``
    and everything every result has (:class:`xsvd.labeled.base.Result`).
    Components are selected by position (``.isel(component=0)`` is the
    leading mode).
    """

    GROUPS = _SIDES
    RECONSTRUCT = (
        "MCA decomposes the cross-covariance of two fields, not a field; decompose each "
        "field with `xsvd.svd` to rebuild it."
    )
    PROJECT = (
        "scores of new data are each field's centered, weighted data times its patterns; "
        "run `xsvd.mca` on the data that include the new samples."
    )

    def __init__(self, parts: dict, record: dict, fields: tuple | None = None):
        super().__init__(parts, record)
        self._fields = fields

    def _again(self, parts: dict, record: dict) -> MCAResult:
        return MCAResult(parts, record, self._fields)

    def __repr__(self) -> str:
        left, right = (self._parts[f"{s}_patterns"].dims[1:] for s in ("left", "right"))
        return (
            f"<xsvd.MCAResult: {self.k} modes, left features {left}, right features "
            f"{right}, method={self.method!r}>"
        )

    @property
    def n_samples(self) -> int:
        return int(self._record["n_samples"])

    @property
    def singular_values(self) -> xr.DataArray:
        """The covariances of the modes' scores: singular values of ``C`` (with 1/(n-1))."""
        return self._parts["singular_values"]

    @property
    def U(self) -> xr.DataArray:
        """The left patterns ``P`` (as :attr:`left_patterns`)."""
        return self.left_patterns

    @property
    def V(self) -> xr.DataArray:
        """The right patterns ``Q`` (as :attr:`right_patterns`)."""
        return self.right_patterns

    @property
    def total_squared_covariance(self) -> float:
        """``||C||_F**2``, the sum of all squared singular values (computed on first use;
        ``inf`` or 0 where it is beyond float64, the fractions are still right)."""
        with np.errstate(over="ignore", under="ignore"):
            return float(np.float64(self._total_norm()) ** 2)

    def _total_norm(self) -> float:
        if self._parts.get("total_norm") is None:
            if self._fields is None:
                raise ValueError(_NO_FIELDS.format(what="the total squared covariance"))
            self._parts["total_norm"] = _norm_part(covariance_norm(*self._fields))
        return float(self._parts["total_norm"])

    @property
    def squared_covariance_fraction(self) -> xr.DataArray:
        """Each mode's share of the squared covariance, ``S**2 / ||C||_F**2``."""
        S = self.singular_values.data
        norm = self._total_norm()
        frac = variance_ratio(backend.to_numpy(S), self.total_squared_covariance, norm)
        attrs = {"long_name": "squared covariance fraction", "units": "1"}
        return (
            self.singular_values.copy(data=backend.transfer(np.asarray(frac, float), S))
            .rename("squared_covariance_fraction")
            .assign_attrs(attrs)
        )

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """MCA's analogue: the :attr:`squared_covariance_fraction`."""
        return self.squared_covariance_fraction

    @property
    def left_patterns(self) -> xr.DataArray:
        """Unit-norm patterns of the left field (in the weighted space), NaN where left out."""
        return self._parts["left_patterns"]

    @property
    def right_patterns(self) -> xr.DataArray:
        """Unit-norm patterns of the right field (in the weighted space)."""
        return self._parts["right_patterns"]

    @property
    def left_scores(self) -> xr.DataArray:
        """Expansion coefficients of the left field: its centered, weighted data times its
        patterns (samples x component)."""
        return self._parts["left_scores"]

    @property
    def right_scores(self) -> xr.DataArray:
        """Expansion coefficients of the right field (samples x component)."""
        return self._parts["right_scores"]

    def _maps(self):
        names = [
            f"{s}_{kind}" for s in ("left", "right") for kind in ("homogeneous", "heterogeneous")
        ]
        if any(self._parts.get(n) is None for n in names):  # one read of each field: all four
            if self._fields is None:
                raise ValueError(_NO_FIELDS.format(what="the correlation maps"))
            fl, fr = self._fields
            k = self.k
            scores = [fl.here(x.data) for x in (self.left_scores, self.right_scores)]
            both = fl.xp.concat(scores, axis=1)  # where the data are
            ml, mr = fl.correlations(both), fr.correlations(both)
            attrs = {"units": "1"}
            for f, m, side, own, other in (
                (fl, ml, "left", slice(0, k), slice(k, 2 * k)),
                (fr, mr, "right", slice(k, 2 * k), slice(0, k)),
            ):
                for kind, cols in (("homogeneous", own), ("heterogeneous", other)):
                    out = f.layout.label_features(f.full(m[:, cols]), f"{side}_{kind}")
                    out.attrs = {"long_name": f"{kind} correlation map", **attrs}
                    self._parts[f"{side}_{kind}"] = out
        return self._parts

    def homogeneous_maps(self) -> tuple[xr.DataArray, xr.DataArray]:
        """``(left, right)``: each field correlated with its own scores, per mode."""
        parts = self._maps()
        return parts["left_homogeneous"], parts["right_homogeneous"]

    def heterogeneous_maps(self) -> tuple[xr.DataArray, xr.DataArray]:
        """``(left, right)``: the left field correlated with the right scores, and the
        right field with the left scores, per mode."""
        parts = self._maps()
        return parts["left_heterogeneous"], parts["right_heterogeneous"]

    def to_dataset(self) -> xr.Dataset:
        """The saved form (:class:`~xsvd.labeled.base.Result`), with the total squared
        covariance (computed first where not yet known: one read of each field) and the
        correlation maps where they were computed."""
        if self._fields is not None:
            self._total_norm()
        return super().to_dataset()


_NO_FIELDS = (
    "{what} of an MCA need the two fields, which a result reopened from a store no longer "
    "holds. Compute them before saving (e.g. "
    "`res.homogeneous_maps()`), or run `xsvd.mca` again."
)
