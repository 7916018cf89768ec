"""Extended (lagged, multichannel singular spectrum) EOF without a lagged copy of the data.

The time-embedded matrix of a field ``X`` (T samples x n features), with
``L`` lags (``embedding``) ``tau`` samples apart, has the rows

    E[t] = [x_t, x_{t + tau}, ..., x_{t + (L - 1) tau}],  t = 0 .. N - 1,

``N = T - (L - 1) tau`` (as xeofs' ``ExtendedEOF``). Each of its column
blocks is a window of ``X``: ``E = [S_0 X, ..., S_{L-1} X]``, ``S_j`` the
rows ``j tau .. j tau + N - 1``. Its products never form it, and read the
data once each:

- ``E W = sum_j S_j (X W_j)``: ``X [W_0, ..., W_{L-1}]`` (one read), then
  shifted sums of the column blocks;
- ``E^T T = [X^T S_j^T T]_j``: ``X^T [S_0^T T, ..., S_{L-1}^T T]`` (one read),
  ``S_j^T T`` the rows of ``T`` placed at the window's samples.

Centering (each column of ``E`` by its own window's mean) and weights are
rank-one and diagonal corrections of these small products.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ..core import backend, fix_signs
from ..core.common import Decomposition, variance_ratio
from ..core.options import CompressedOptions, takes_options
from ..core.randomized.operator import operator_svd
from ..labeled.api import Reading, warn_uncentered
from ..labeled.base import Result, component_array, errors_part
from ..labeled.layout import COMPONENT
from ..labeled.units import describe as describe_units
from .fields import Field, operator_options, prepare_field

__all__ = ["extended_eof", "ExtendedEOFResult", "LAG"]

#: The dimension of the patterns' lags (coordinate: lag in samples, ``j * tau``).
LAG = "lag"


@takes_options(CompressedOptions, Reading)
def extended_eof(
    da: xr.DataArray,
    k: int,
    *,
    embedding: int,
    tau: int = 1,
    dim="time",
    weights: xr.DataArray | None = None,
    center: bool = True,
    method: str = "compressed",
    **options,
) -> ExtendedEOFResult:
    """Extended EOF (EEOF, M-SSA): EOFs of the field embedded with ``embedding`` lags.

    Parameters
    ----------
    da : xarray.DataArray
        The field, NumPy-, Dask- or device-backed (CuPy; the results stay
        there); features NaN at every sample are left out (NaN in the
        patterns), other NaN is an error unless ``missing="mean"``; an
        infinite value is an error.
    k : int
        Number of components.
    embedding : int
        Number of lags ``L`` (xeofs' ``embedding``), ``>= 1``.
    tau : int
        Samples between lags (xeofs' ``tau``), ``>= 1``.
    dim : str
        The sample (time) dimension, in the order of the embedding.
    weights : xarray.DataArray, optional
        Feature weights (e.g. :func:`xsvd.coslat_weights`), the same at every lag.
    center : bool
        Remove the mean of each column of the embedded matrix (each feature's
        mean over its lag's window of samples), as xeofs.
    standardize : bool, default False
        Divide each feature by its standard deviation over all the samples
        (``ddof=0``; the present values' with ``missing="mean"``; a constant
        feature gets weight 0), before the weights and the embedding, the same
        at every lag, as :func:`xsvd.svd`'s and as xeofs'
        ``ExtendedEOF(standardize=True)``: the extended EOFs of ``da /
        da.std(dim)``. ``S`` then has no units.
    method : {"compressed", "exact"}
        ``"compressed"``: matrix-free, each product reads the data once;
        ``"exact"``: forms the embedded matrix in memory (small data, the
        reference).
    missing : {"error", "mean"}
        As :func:`xsvd.svd`'s: ``"mean"`` stands each missing value (NaN; in
        integer data, negative codes) for its feature's mean over the samples
        where it is present, inside the reads (no filled copy of the data): the
        lagged copies are those of the filled field. ``"error"`` (default)
        refuses it, naming where.
    negative_missing : bool, optional
        Whether negative values count as missing, as :func:`xsvd.svd`'s.
    device : {None, "gpu", "cpu"}
        Move the field there first (as :func:`xsvd.svd`'s ``device=``); the
        results stay there.
    n_power_iter, n_oversamples, seed, tol, max_passes, dtype, krylov
        The compressed solver's options, declared once with those of
        :func:`xsvd.compressed`, with its defaults (``seed=None``: a fresh
        start block); ``dtype`` and ``krylov=False`` are refused, as in
        :func:`xsvd.mca`.

    Returns
    -------
    ExtendedEOFResult
        ``patterns`` (component, lag, feature dims), ``scores``, ``singular_values``,
        ``explained_variance``, ``explained_variance_ratio``, ``errors``.

    Notes
    -----
    As xeofs' ``ExtendedEOF(n_modes=k, tau=tau, embedding=embedding)`` (with
    ``n_pca_modes=None``), which these results match to ~1e-12 up to sign: row
    ``t`` of the embedded matrix is ``[x_t, x_{t+tau}, ...]``; the patterns
    are unit vectors with the lag dimension ``lag`` (xeofs' ``embedding``,
    coordinate ``0, tau, 2 tau, ...``); the scores are ``U S`` (xeofs'
    ``scores()``), NaN at the last ``(L - 1) tau`` samples, which start no
    complete row; ``explained_variance`` is ``S**2 / (N - 1)``. The field is
    multiplied by a power of two (exact) that brings its weighted data near 1
    before any product, and ``S`` scaled back: data of any magnitude (float32
    at 1e20, float64 at 1e+-170) neither overflow nor underflow, and
    ``explained_variance_ratio`` is right where ``total_variance`` is beyond
    float64.

    Examples
    --------
    >>> import numpy as np, xarray as xr, xsvd
    >>> t = np.arange(120)
    >>> wave = np.sin(2 * np.pi * (t[:, None] / 24 - np.arange(8)[None, :] / 8))
    >>> da = xr.DataArray(wave + 0.1 * np.random.default_rng(0).standard_normal((120, 8)),
    ...                   dims=("time", "x"))
    >>> res = xsvd.extended_eof(da, 2, embedding=4, tau=3, seed=0)
    >>> res.patterns.dims
    ('component', 'lag', 'x')
    >>> bool(res.explained_variance_ratio.sum() > 0.9)  # a propagating wave: one pair
    True
    """
    if method not in ("compressed", "exact"):
        raise ValueError(f"method must be 'compressed' or 'exact', got {method!r}.")
    given, reading = operator_options(options, "extended_eof", method)
    for name, value in (("k", k), ("embedding", embedding), ("tau", tau)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be a positive integer, got {value!r}.")
        if value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    f = prepare_field(
        da, dim, weights, center=center, standardize=reading.standardize, reading=reading
    )
    T, n = f.shape
    L, tau = int(embedding), int(tau)
    N = T - (L - 1) * tau
    if N < 2:
        raise ValueError(
            f"embedding={L} lags {tau} samples apart span {(L - 1) * tau + 1} samples, which "
            f"leaves {max(N, 0)} embedded rows of the {T} samples; at least 2 are needed. "
            "Use fewer lags or a smaller tau."
        )
    if not k <= min(N, L * n):
        raise ValueError(f"k={k!r}: it must be an integer between 1 and {min(N, L * n)}.")
    emb = Embedding(f, L, tau, center)
    settings: dict[str, Any] = {
        "method": method,
        "embedding": L,
        "tau": tau,
        "center": center,
        "standardize": reading.standardize,
        "missing": reading.missing,
    }
    if method == "exact":  # the embedded matrix formed where the data are, its SVD there
        U, S, Vt = f.xp.linalg.svd(emb.formed(), full_matrices=False)
        U, S, V = U[:, :k], S[:k], Vt[:k, :].T
        U, V = fix_signs(U, V)
        errors = np.zeros((k, 3))
    else:
        res = operator_svd(
            emb.matmat,
            emb.rmatmat,
            (N, L * n),
            int(k),
            n_oversamples=given.n_oversamples,
            n_power_iter=given.n_power_iter,
            tol=given.tol,
            max_passes=given.max_passes,
            seed=given.seed,
            dtype=f.dtype,
        )
        U, S, V, errors = f.here(res.U), f.here(res.S), f.here(res.V), res.errors
        settings.update(
            passes=res.passes, stopped=res.stopped, seed=given.seed, error_bounds=res.bounds
        )
    if not center:  # as the main svd: from U and S, the means' share of the sum of squares
        d = Decomposition(U, S, V, None, emb.total, None, method, {}, total_norm=emb.total**0.5)
        warn_uncentered(d, svd=False)
    # the field was decomposed scaled by a power of two: S back in the data's units
    S, errors = f.unscaled(S), np.array(backend.to_numpy(errors), dtype=float)
    errors[:, 0] = f.unscaled(errors[:, 0])
    settings["k"] = int(k)
    parts = _labeled_parts(f, emb, U, S, V, errors)
    record = {"settings": settings, "n_rows": emb.N, "units": describe_units(f.units)}
    return ExtendedEOFResult(parts, record)


class Embedding:
    """The embedded matrix ``E_c D`` of a :class:`~.fields.Field` as an operator.

    ``shifts`` (L x n, host): each feature's weighted mean over each lag's
    window, ``D mu_j``, of the data centered by the field's mean (exact for
    constant shifts), read once with the windows' sums of squares (for
    ``total``, the sum of squares of ``E_c D``); ``on_data``: the same where
    the data are. As the field's, ``D`` includes ``2**field.exponent``. The
    products take and give small matrices (the solver's, on the host) and
    work where the data are.
    """

    def __init__(self, field: Field, L: int, tau: int, center: bool):
        self.field, self.L, self.tau = field, L, tau
        T, n = field.shape
        self.N = T - (L - 1) * tau
        R = np.zeros((T, L))
        for j in range(L):
            R[j * tau : j * tau + self.N, j] = 1.0
        # per feature and window, the sums and sums of squares of (X - 1 m^T) D (near 1 at
        # any magnitude: D includes the field's power of two), a read each
        R = field.here(R)
        sums, squares = (
            backend.to_numpy(x) for x in (field.t_times(R), field.read(R, transpose=True, power=2))
        )
        # each column's weighted mean over its window (of the data centered by the field's)
        means = sums / self.N if center else np.zeros_like(sums)
        self.total = float((squares - self.N * means**2).sum())
        self.shifts = means.T
        self.on_data = field.here(self.shifts)

    def matmat(self, W):
        """``E_c D W`` (N x l), one read."""
        f, L, tau, N = self.field, self.L, self.tau, self.N
        n, l = f.shape[1], W.shape[1]
        blocks = backend.to_numpy(W).reshape(L, n, l)
        Y = f.times(np.concatenate(list(blocks), axis=1))  # T x (L l)
        out = f.zeros((N, l))
        for j in range(L):
            out += Y[j * tau : j * tau + N, j * l : (j + 1) * l]
        return out - f.here(np.einsum("jn,jnl->l", self.shifts, blocks))[None, :]

    def rmatmat(self, Tm):
        """``D E_c^T T`` (L n x l), one read."""
        f, L, tau, N = self.field, self.L, self.tau, self.N
        xp, (rows, n), l = f.xp, f.shape, Tm.shape[1]
        Tm = f.here(Tm)
        placed = xp.concat(  # T x (L l): T's rows at each lag's window
            [
                xp.concat([f.zeros((j * tau, l)), Tm, f.zeros((rows - j * tau - N, l))], axis=0)
                for j in range(L)
            ],
            axis=1,
        )
        out = f.t_times(placed)  # n x (L l), D (X - 1 m^T)^T
        out = xp.permute_dims(xp.reshape(out, (n, L, l)), (1, 0, 2))  # L x n x l
        correction = self.on_data[:, :, None] * xp.sum(Tm, axis=0)[None, None, :]
        return xp.reshape(out - correction, (L * n, l))

    def formed(self):
        """``E_c D`` in memory (N x L n, float64, where the data are), for ``method="exact"``."""
        B, tau, N = self.field.formed(), self.tau, self.N
        parts = [B[j * tau : j * tau + N, :] - self.on_data[j, :][None, :] for j in range(self.L)]
        return self.field.xp.concat(parts, axis=1)


class ExtendedEOFResult(Result):
    """The result of :func:`xsvd.extended_eof`: lagged patterns and their scores, labeled.

    ``U, S, V = res``: ``U`` the unit-norm scores over the samples (NaN where
    no complete embedded row starts), ``S`` the singular values of the
    centered, weighted embedded matrix, ``V`` the unit-norm ``patterns``
    (component, lag, feature dims). Also ``scores`` (``U S``),
    ``explained_variance`` (``S**2 / (N - 1)``), ``explained_variance_ratio``,
    ``total_variance`` (the embedded matrix's sum of squares, as
    :attr:`xsvd.SVDResult.total_variance`), ``errors``, ``settings`` and
    everything every result has (:class:`xsvd.labeled.base.Result`).
    """

    RECONSTRUCT = (
        "the components describe the embedded (lagged) matrix, whose rows overlap; "
        "rebuilding the field from them (diagonal averaging, as in SSA) is not implemented."
    )
    PROJECT = "scores of new data would need their own embedding; run extended_eof on them."

    def __repr__(self) -> str:
        return (
            f"<xsvd.ExtendedEOFResult: {self.k} components, embedding="
            f"{self.settings['embedding']}, tau={self.settings['tau']}, features "
            f"{self.V.dims[2:]}>"
        )

    @property
    def n_rows(self) -> int:
        """``N``: the embedded rows (samples less ``(embedding - 1) tau``)."""
        return int(self._record["n_rows"])

    @property
    def singular_values(self) -> xr.DataArray:
        """Singular values of the centered, weighted embedded matrix."""
        return self._parts["singular_values"]

    @property
    def U(self) -> xr.DataArray:
        """Unit-norm scores (samples x component), NaN at the last ``(embedding - 1) tau``."""
        return self._parts["U"]

    @property
    def V(self) -> xr.DataArray:
        """The unit-norm patterns, as :attr:`patterns`."""
        return self._parts["patterns"]

    @property
    def explained_variance(self) -> xr.DataArray:
        """``S**2 / (N - 1)``, ``N`` the embedded rows."""
        out = self.singular_values**2 / (self.n_rows - 1)
        return out.rename("explained_variance")

    @property
    def total_variance(self) -> xr.DataArray:
        """The embedded matrix's total sum of squares (as :attr:`xsvd.SVDResult.total_variance`)."""
        return self._parts["total_variance"]

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        """Each component's share of the embedded matrix's total sum of squares (right at
        any magnitude, also where ``total_variance`` is beyond float64)."""
        S = self.singular_values.data
        total, norm = (float(self._parts[p]) for p in ("total_variance", "total_norm"))
        share = variance_ratio(backend.to_numpy(S), total, norm)
        share = backend.transfer(np.asarray(share, dtype=float), S)  # where S is
        out = self.singular_values.copy(data=share)
        return out.rename("explained_variance_ratio").assign_attrs(units="1")

    @property
    def patterns(self) -> xr.DataArray:
        """Unit-norm patterns with a ``lag`` dimension (coordinate: ``j * tau`` samples)."""
        return self._parts["patterns"]

    @property
    def scores(self) -> xr.DataArray:
        """``U S`` over the samples (NaN at the last ``(embedding - 1) tau``)."""
        return (self.U * self.singular_values).rename("scores")


def _labeled_parts(f: Field, emb: Embedding, U, S, V, errors) -> dict:
    """The parts of an :class:`ExtendedEOFResult` from the solver's arrays (where the data
    are)."""
    xp, L = f.xp, emb.L
    k, n = S.shape[0], f.shape[1]
    per_lag = xp.reshape(V, (L, n, k))
    labeled = [f.layout.label_features(f.full(per_lag[j, :, :]), "patterns") for j in range(L)]
    lags = xr.DataArray(np.arange(L) * emb.tau, dims=(LAG,), name=LAG)
    patterns = xr.concat(labeled, dim=lags).transpose(COMPONENT, LAG, ...).rename("patterns")
    incomplete = xp.full(  # the last samples start no complete embedded row
        (f.shape[0] - emb.N, k), np.nan, dtype=xp.float64, device=backend.device(U)
    )
    scores = xp.concat([backend.astype(U, np.float64, copy=False), incomplete], axis=0)
    S = component_array(S, "singular_values")
    S = S.copy(data=f.here(S.values))
    with np.errstate(over="ignore", under="ignore"):  # the sum of squares beyond float64
        totals = {  # in the data's units; the norm is in range where the square is not
            "total_variance": float(f.unscaled(np.float64(emb.total), 2)),
            "total_norm": float(f.unscaled(np.float64(emb.total) ** 0.5)),
        }
    totals = {name: xr.DataArray(value, name=name) for name, value in totals.items()}
    return {
        "singular_values": S,
        "U": f.layout.label_samples(scores, "U"),
        "patterns": patterns,
        "errors": errors_part(S, errors),
        **totals,
    }
