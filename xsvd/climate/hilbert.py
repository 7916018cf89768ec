"""Hilbert (complex) EOF: amplitude and phase of propagating patterns.

Each feature's anomaly series ``x(t)`` is replaced by its analytic signal
``z(t) = x(t) + i H[x](t)`` (``H``: the Hilbert transform along the sample
dimension, computed with the FFT), and the complex (time x space) matrix
``Z = P + iQ`` is decomposed, ``Z = U diag(S) V^H``. A wave that travels
through the domain, which ordinary EOFs split into a pair of standing
patterns in quadrature, is one complex component: the phase of ``V`` shows
where it is ahead or behind, that of ``U`` its progress in time
(Horel 1984; Hannachi, Jolliffe & Stephenson 2007).

How ``Z`` is decomposed
-----------------------
``Z`` is read as the data are stored (:mod:`.analytic_field`), on NumPy,
Dask and devices alike:

- ``method="exact"``: the dense complex SVD of ``Z`` (LAPACK's, or the
  device library's ``linalg.svd``), ``Z`` formed a block of features at a
  time (every sample of each).
- ``method="compressed"``: xsvd's matrix-free block Krylov solver
  (:func:`xsvd.core.randomized.operator.operator_svd`, with its error
  estimates and stopping) on the real form ``R = [[P, -Q], [Q, P]]``
  (``Q = H P``, ``H`` the transform along the samples), never formed: ``H``
  acts on the solver's small blocks (:mod:`.analytic`), the data are
  multiplied as they are. The blocks are real forms of complex ones
  (``complex_form``), so each product is that of ``Z`` or ``Z^H`` with
  ``k + 1 + n_oversamples / 2`` complex columns: complex block Krylov on
  ``Z``. Each singular value of ``Z`` appears twice in ``R``: the rank-``2k``
  result's complex-linear part gives ``Z``'s rank-``k`` SVD
  (:func:`pairs_to_complex`), each pair its triplet's errors (:func:`complex_errors`).

The phase convention
--------------------
A complex singular pair is defined up to a factor ``exp(i theta)`` on ``u``
and ``v`` together. xsvd fixes it: in each component the entry of ``V`` with
the largest magnitude (the first where several tie) is real and positive.

Results live where NumPy and device (CuPy, any array-API library) data are
(the transform is the standard's ``fft``; the solver's small matrices cross
to the host); Dask data give computed NumPy results.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from typing import Literal

import numpy as np
import xarray as xr

from ..core import backend
from ..core.blas import one_blas_thread, small_blas, small_step
from ..core.missing import missing_rule
from ..core.options import CompressedOptions, check_flag, split_options, takes_options
from ..core.randomized.magnitude import times_power_of_two
from ..core.randomized.operator import operator_svd
from ..core.randomized.small import ANGLE_ROUNDING, MAX_PASSES, ROUNDING
from ..labeled.api import Reading, choose_method, labeled_matrix
from ..labeled.base import Result, errors_part, ratio
from ..labeled.layout import COMPONENT, Layout
from ..labeled.units import describe as describe_units
from ..labeled.units import quantify
from . import analytic_field
from .analytic import analytic_signal

__all__ = ["hilbert_eof", "HilbertResult", "analytic_signal", "complex_phase_rule"]


def complex_phase_rule(U, V):
    """xsvd's phase rule for complex singular pairs (arrays of any backend, NaN rows of
    ``V`` allowed).

    In each column the entry of ``V`` with the largest magnitude becomes
    real and positive (the first where several tie); ``U`` turns with it, so
    ``U diag(S) V^H`` is unchanged.
    """
    xp = backend.api(V)
    k = V.shape[1]
    mag = xp.where(xp.isnan(V), -1.0, xp.abs(V))
    first = xp.argmax(mag, axis=0)
    columns = xp.arange(k, dtype=first.dtype, device=backend.device(V))
    top = xp.take(xp.reshape(V, (-1,)), first * k + columns)
    size = xp.abs(top)
    one = xp.ones_like(top)
    turn = xp.where(size > 0, xp.conj(top) / xp.where(size > 0, size, 1.0), one)
    return U * turn, V * turn


@small_step
def pairs_to_complex(UR, S, VR, m: int, n: int, k: int):
    """Rank-``k`` SVD of ``Z`` from an SVD of its real form ``R = [[P, -Q], [Q, P]]``.

    ``UR`` (2m x K), ``S`` (K,), ``VR`` (2n x K, NaN rows allowed). The
    complex-linear part of ``UR diag(S) VR^T`` is ``(1/2) Uc diag(S) Vc^H``;
    returns its leading ``k`` triplets ``(U, S, V)``, ``Z ~ U diag(S) V^H``.
    """
    nan = np.isnan(VR[:n]).any(axis=1)
    VR = np.where(np.isnan(VR), 0.0, VR)
    Uc = UR[:m] + 1j * UR[m:]
    Vc = VR[:n] + 1j * VR[n:]
    qu, ru = np.linalg.qr(Uc)
    qv, rv = np.linalg.qr(Vc)
    a, s, bh = np.linalg.svd(0.5 * (ru * S) @ rv.conj().T)
    U, V = qu @ a[:, :k], qv @ bh.conj().T[:, :k]
    V[nan] = complex(np.nan, np.nan)
    return U, s[:k], V


def complex_errors(errors, S, k: int) -> np.ndarray:
    """The error estimates (k x 3) of ``Z``'s triplets from those of its real form's.

    ``errors`` (2K x 3) and ``S`` (2K,): the solver's estimates and Ritz
    values of ``R``'s leading ``2K >= 2k`` triplets, where each of ``Z``'s
    is a pair (``2j``, ``2j + 1``). Per complex triplet:

    - the error of ``S`` and the relative residual: the larger of the pair's;
    - the angle of the vectors: the solver's angle of each real vector is
      no bound here (its partner has the same singular value, a gap of 0),
      so it is Davis-Kahan's for the pair's plane (the complex vector and
      its multiples by ``exp(i theta)``), as the solver computes it for one
      vector: the pair's residual ``sqrt(rho_a^2 + rho_b^2)`` over the gap
      between its Ritz values and the other pairs' eigenvalues (above: their
      Ritz values, lower bounds; below: Ritz value plus error). Without a
      pair below the last (``K == k``) its angle is ``pi / 2``, the trivial bound.
    """
    e = np.asarray(backend.to_numpy(errors), dtype=np.float64)
    S = np.asarray(backend.to_numpy(S), dtype=np.float64)
    K = min(e.shape[0], S.shape[0]) // 2
    if K < k:  # fewer real triplets than two per component: nothing is known
        return np.tile([np.inf, np.pi / 2, np.inf], (k, 1))
    pair_e = e[: 2 * K].reshape(K, 2, 3)
    pair_s = S[: 2 * K].reshape(K, 2)
    s_err = pair_e[:, :, 0].max(axis=1)
    residual = pair_e[:, :, 2].max(axis=1)
    lam_hi, lam_lo = pair_s.max(axis=1) ** 2, pair_s.min(axis=1) ** 2
    rho = np.sqrt(((pair_e[:, :, 2] * pair_s**2) ** 2).sum(axis=1))  # ||R^T R x - lam x||
    above = np.r_[np.inf, lam_lo[:-1]]  # the eigenvalues above are at least these
    below = np.r_[(pair_s.max(axis=1)[1:] + s_err[1:]) ** 2, np.nan]  # and below at most
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.minimum(above - lam_hi, lam_lo - below)
        unit = max(ANGLE_ROUNDING, ROUNDING) * float(np.finfo(np.float64).eps)
        sine = np.where(gap > 0, (rho + unit * lam_hi[0]) / gap, 1.0) + unit
        angle = np.arcsin(np.clip(np.where(np.isnan(sine), 1.0, sine), 0, 1))
    return np.stack([s_err, angle, residual], axis=1)[:k]


class HilbertResult(Result):
    """The Hilbert EOF of a field: complex ``U, S, V = res``, ``Z ~ U diag(S) V^H``.

    Attributes
    ----------
    U : xarray.DataArray
        Complex unit-norm scores, dims ``(dim, "component")``.
    S : xarray.DataArray
        Singular values, dims ``("component",)``.
    V : xarray.DataArray
        Complex unit-norm patterns, dims ``("component", *feature_dims)``;
        NaN where the input is NaN at every sample.
    explained_variance_ratio : xarray.DataArray
        ``S**2 / ||Z||_F**2``: each component's share of the variance of the
        analytic signal (the real and the imaginary part together); NaN where
        that is 0.
    method : {"exact", "compressed"}
    settings : dict

    Also everything every result has (:class:`xsvd.labeled.base.Result`).
    """

    PROJECT = (
        "scores of new samples would need the analytic signal of the new data over the "
        "whole record (the Hilbert transform is not local in time); decompose the longer "
        "record instead."
    )

    def __init__(self, parts: dict, record: dict):
        super().__init__(parts, record)
        self.n_samples = int(record["n_samples"])

    def __repr__(self) -> str:
        sizes = dict(self.U.sizes)
        samples = {d: sizes[d] for d in self.U.dims if d != COMPONENT}
        features = {d: self.V.sizes[d] for d in self.V.dims if d != COMPONENT}
        return (
            f"<xsvd.HilbertResult: method={self.method!r}, k={self.k}, "
            f"samples={samples}, features={features}>"
        )

    @property
    def U(self) -> xr.DataArray:
        return self._parts["U"]

    @property
    def V(self) -> xr.DataArray:
        return self._parts["V"]

    @property
    def total_variance(self) -> xr.DataArray:
        """``||Z||_F**2``, the sum of squares of the analytic signal of the centered,
        weighted data (its real part's is half of it, for a long record)."""
        return self._parts["total_variance"]

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        out = self._parts.get("explained_variance_ratio")  # computed where S**2 is in range
        if out is None:  # a store saved before it was a part
            S = self.singular_values
            shares = ratio(S.data, self.total_variance.data)
            out = S.copy(data=backend.on_backend_of(shares, S.data))
        return out.rename("explained_variance_ratio").assign_attrs(units="1")

    def eigenvalues(self, *, ddof: int = 1) -> xr.DataArray:
        """``S**2 / (n - ddof)``: xeofs' ``explained_variance()`` (``ddof=1``)."""
        if not isinstance(ddof, int) or not 0 <= ddof < self.n_samples:
            raise ValueError(f"ddof must be an integer in [0, {self.n_samples}), got {ddof!r}.")
        return (self.S**2 / (self.n_samples - ddof)).rename("eigenvalues")

    def components(self) -> xr.DataArray:
        """The complex patterns ``V`` (unit norm)."""
        return self.V

    def scores(self, *, normalized: bool = False) -> xr.DataArray:
        """Complex scores: ``U * S`` (default, xeofs' ``scores()``) or unit-norm ``U``."""
        return self.U if normalized else (self.U * self.S).rename("scores")

    def components_amplitude(self) -> xr.DataArray:
        """``|V|``: each pattern's spatial amplitude."""
        return abs(self.V).rename("components_amplitude")

    def components_phase(self) -> xr.DataArray:
        """``angle(V)`` in radians (-pi, pi]: each pattern's spatial phase."""
        return _angle(self.V).rename("components_phase")

    def scores_amplitude(self, *, normalized: bool = True) -> xr.DataArray:
        """``|U|`` (xeofs' default), or ``|U S|`` with ``normalized=False``: amplitude in time."""
        return abs(self.scores(normalized=normalized)).rename("scores_amplitude")

    def scores_phase(self) -> xr.DataArray:
        """``angle(U)`` in radians (-pi, pi]: each component's phase in time."""
        return _angle(self.U).rename("scores_phase")

    def reconstruct(self, k: int | None = None) -> xr.DataArray:
        """The field that the first ``k`` components describe, ``Re(U diag(S) V^H)``, with
        the weights, the standardization and the mean undone (features of weight 0 and
        all-NaN features NaN), labeled like the input.

        Parameters
        ----------
        k : int, optional
            Use only the first ``k`` components (default: all that were computed).
        """
        k = self._check_k(k)
        sel = {COMPONENT: slice(0, k)}
        U, S, V = self.U.isel(sel), self.singular_values.isel(sel), self.V.isel(sel)
        xp = backend.api(U.data)
        samples, features = U.shape[:-1], V.shape[1:]
        u = backend.reshape(U.data, (int(np.prod(samples)), k))
        v = backend.reshape(V.data, (k, int(np.prod(features))))
        X = xp.real((u * S.data) @ xp.conj(v))
        scale = self._parts.get("scale")
        if scale is not None:  # weights over standard deviations: divided out
            d = backend.reshape(scale.data, (v.shape[1],))
            X = X / xp.where(d != 0, d, xp.nan)
        mean = self._parts.get("mean")
        if mean is not None:
            X = X + backend.reshape(mean.data, (v.shape[1],))
        coords = {
            name: c
            for part in (U, V)
            for name, c in part.coords.items()
            if COMPONENT not in c.dims and name != COMPONENT
        }
        out = xr.DataArray(
            backend.reshape(X, (*samples, *features)),
            dims=(*U.dims[:-1], *V.dims[1:]),
            coords=coords,
            name=self._record.get("name"),
        )
        return quantify(out, self.unit_of("data"))  # in the data's units, as every result


@takes_options(CompressedOptions, Reading)
def hilbert_eof(
    da: xr.DataArray,
    k: int | None = None,
    *,
    dim: Hashable = "time",
    weights: xr.DataArray | None = None,
    center: bool = True,
    padding: Literal["exp", "none"] = "exp",
    decay_factor: float = 0.2,
    method: Literal["auto", "exact", "compressed"] = "auto",
    **options,
) -> HilbertResult:
    """Hilbert (complex) EOF analysis: propagating patterns with amplitude and phase.

    Parameters
    ----------
    da : xarray.DataArray
        NumPy-, device- (CuPy) or Dask-backed field; ``dim`` must be ordered
        in time (the transform assumes evenly spaced samples).
    k : int, optional
        Components; all of them when None (exact solver only).
    dim : hashable, default "time"
        The (one) sample dimension, along which the Hilbert transform runs.
    weights : xarray.DataArray, optional
        Feature weights (e.g. :func:`xsvd.coslat_weights`), multiplying the
        anomalies before the transform.
    center : bool, default True
        Remove each feature's mean over ``dim`` first.
    standardize : bool, default False
        Also divide each feature by its standard deviation (``ddof=0``);
        constant features become 0.
    padding : {"exp", "none"}, default "exp"
        ``"exp"``: mirror each series at both ends with an exponential
        taper before the FFT (see :func:`analytic_signal`), to temper the
        end effects; ``"none"``: no padding. xsvd's ``"exp"`` is its own
        taper, not xeofs' (same name, similar purpose); with
        ``padding="none"`` both packages compute the same analytic signal.
    decay_factor : float, default 0.2
        The taper's e-folding length as a fraction of the series length.
    method : {"auto", "exact", "compressed"}
        ``"auto"`` follows :func:`xsvd.choose_method` on the field's shape.
    n_power_iter, n_oversamples, seed, tol, max_passes
        ``method="compressed"`` only, with the defaults and meanings of
        :func:`xsvd.compressed`: by default the passes stop once every
        component's estimated relative error is below ``1e-6``, after 8 at
        most. The solver is block Krylov in float64, so ``krylov=False`` and
        ``dtype="float32"`` are refused. ``n_oversamples`` (rounded up to even)
        are the extra real columns of the real form's block: ``n_oversamples /
        2`` complex ones. For the accuracy of xeofs' ``HilbertEOF`` (singular
        values to ~1e-15, patterns to ~1e-9) pass ``tol=1e-7`` and a
        ``max_passes`` of 15 or more: the defaults stop at about 1e-10 and
        1e-5 on slowly converging fields (:file:`benchmarks/results/hilbert.md`).
    missing, negative_missing, device
        As :func:`xsvd.svd`'s: ``missing="mean"`` stands each gap (NaN at some
        samples of a feature) for its feature's mean over the samples where it
        is present, before the transform, as ``da.fillna(da.mean(dim))`` would
        (no filled copy is made); ``device=`` moves the data there first.

    Returns
    -------
    HilbertResult
        Complex ``U`` (scores), ``S``, complex ``V`` (patterns), computed, in
        the data's memory (NumPy for Dask data). ``errors``: the solver's
        estimates for each complex component (see :func:`complex_errors`).
        ``components_amplitude()``, ``components_phase()``,
        ``scores_amplitude()``, ``scores_phase()`` and
        ``explained_variance_ratio`` as xeofs' ``HilbertEOF``.

    Notes
    -----
    Phase: in each component the largest-magnitude entry of ``V`` is real
    and positive. xeofs' ``HilbertEOF`` (``padding="none"``) gives the same
    amplitudes, explained variance and singular values; its components and
    scores are ``V * exp(i theta_j)`` and ``U * S * exp(i theta_j)`` for one
    angle ``theta_j`` per component (LAPACK's arbitrary phase), so its
    phases are xsvd's plus ``theta_j`` (mod 2 pi).

    Gaps are an error with ``missing="error"``: the FFT would spread each
    over the whole series. ``missing="mean"`` with ``standardize=True``: the
    standard deviation of the present values (:func:`xsvd.svd`'s). Features
    NaN at every sample stay NaN in ``V``.

    Infinite values are an error naming the features
    (:class:`xsvd.InfiniteValueError`). Data of any magnitude (1e-300 to
    1e300) are decomposed through one power of two that brings them near 1:
    ``S``, its errors and the variance shares are right, ``total_variance``
    is ``inf`` or 0 where it is beyond float64. With ``standardize=True``
    constant features (the rule of ``docs/input-rules.md``) get weight 0.

    Memory: neither the real form, the transform of the field, nor a complex
    or centered copy of it is formed for ``method="compressed"``: beside the
    data, blocks of a few columns and the solver's Krylov basis (measured
    peak 1.65x the field, the field included, for 3,000 x 16,200 values:
    :file:`benchmarks/results/hilbert.md`). ``method="exact"`` forms the
    complex ``Z`` (16 bytes a value) for LAPACK.

    Dask: one read for the statistics, which need whole series (stripes of
    features, about 64 MiB, gathered one at a time where the samples are in
    several chunks), then one read per pass, the chunks as they are (one
    per product where the samples are in several chunks or outnumber the
    features): 0.37 GB in chunks of 250 samples, 0.41 GB in chunks of 10
    latitudes, for a 0.39 GB field. The results are computed (NumPy).

    References
    ----------
    Horel (1984), "Complex principal component analysis: theory and
    examples", J. Climate Appl. Meteor. 23; Marple (1999), "Computing the
    discrete-time analytic signal via FFT", IEEE Trans. Signal Process. 47.

    Examples
    --------
    >>> import numpy as np, xarray as xr, xsvd
    >>> t, x = np.arange(120), np.linspace(0, 2 * np.pi, 40, endpoint=False)
    >>> wave = np.cos(2 * np.pi * t[:, None] / 12 - x[None, :])  # travels along x
    >>> da = xr.DataArray(wave, dims=("time", "x"), coords={"x": x})
    >>> res = xsvd.hilbert_eof(da, k=2, padding="none")
    >>> round(float(res.explained_variance_ratio[0]), 2)  # one complex mode for the wave
    1.0
    >>> slope = np.polyfit(x, np.unwrap(res.components_phase().isel(component=0)), 1)[0]
    >>> round(float(slope), 2)  # the phase advances along x
    1.0
    """
    dims = (dim,) if isinstance(dim, Hashable) and not isinstance(dim, tuple) else tuple(dim)
    if len(dims) != 1:
        raise ValueError(
            f"hilbert_eof needs one ordered sample dimension (time) for the Hilbert "
            f"transform, got dim={dim!r}."
        )
    if method not in ("auto", "exact", "compressed"):
        raise ValueError(f"method must be 'auto', 'exact' or 'compressed', got {method!r}.")
    if padding not in ("exp", "none"):
        raise ValueError(f"padding must be 'exp' or 'none', got {padding!r}.")
    if not decay_factor > 0:
        raise ValueError(f"decay_factor must be > 0, got {decay_factor!r}.")
    check_flag("center", center)
    options, reading = split_options(options, (CompressedOptions, Reading), "hilbert_eof")
    standardize = reading.standardize
    check_flag("standardize", standardize)
    layout, da, a, w, units = labeled_matrix(da, dims, weights, reading.device)
    rule = missing_rule(a.dtype, reading.missing, reading.negative_missing)
    m, n = a.shape
    if method == "auto":
        method = choose_method(m, n, k)
    given = options.given()
    if given and method != "compressed":
        raise ValueError(
            f"{', '.join(given)} only apply to method='compressed'; the "
            f"{method} solver was chosen. Drop them or pass `method='compressed'`."
        )
    if k is not None and (
        isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= min(m, n)
    ):
        raise ValueError(f"k must be an integer between 1 and {min(m, n)}, got {k!r}.")
    if k is None and method == "compressed":
        raise ValueError("method='compressed' needs the number of components: pass `k=`.")
    if method == "compressed":
        _check_solver_options(options)
    f = analytic_field.prepare(
        a,
        w,
        center=center,
        standardize=standardize,
        padding=padding,
        decay_factor=decay_factor,
        locate=layout.feature_locator(),
        rule=rule,
    )
    if k is not None and k > min(f.shape):
        raise ValueError(
            f"k={k} components, but only {f.shape[1]} feature(s) are not NaN at every "
            f"sample: pass k <= {min(f.shape)}."
        )
    settings = dict(k=k, center=center, standardize=standardize, padding=padding)
    settings["missing"] = reading.missing
    if padding == "exp":
        settings["decay_factor"] = decay_factor
    if method == "exact":
        U, S, V, errors = _exact(f, k)
    else:
        U, S, V, errors, solved = _compressed(f, int(k), options)
        settings.update(solved)
    shares = ratio(S, f.total)  # of 2**exponent Z: in range at any magnitude
    with np.errstate(over="ignore", under="ignore"):  # inf or 0 beyond float64
        total = float(times_power_of_two(np.float64(f.total), -2 * f.exponent))
    S, errors = times_power_of_two(S, -f.exponent), np.array(errors, dtype=np.float64)
    errors[:, 0] = times_power_of_two(errors[:, 0], -f.exponent)
    U, V = complex_phase_rule(U, V)
    if not backend.is_dask(a):  # results stay where the data are
        U, S, V, shares = (backend.on_backend_of(x, a) for x in (U, S, V, shares))
    V = f.full_rows(V)
    settings["k"] = int(S.shape[0])
    name = layout.name if layout.name is not None else "data"
    S = xr.DataArray(
        S,
        dims=(COMPONENT,),
        coords=layout.component_coord(int(S.shape[0])),
        name="S",
        attrs={"long_name": f"singular values of {name}"},
    )
    parts = {
        "U": layout.label_samples(U, "U", {"long_name": f"complex scores of {name}"}),
        "S": S,
        "V": layout.label_features(V, "V", {"long_name": f"complex patterns of {name}"}),
        "errors": errors_part(S, errors),
        "total_variance": xr.DataArray(total, name="total_variance"),
        "explained_variance_ratio": S.copy(data=shares).rename("explained_variance_ratio"),
        **_undo(layout, f, a, w, center=center, standardize=standardize),
    }
    record = {"settings": settings, "method": method, "n_samples": m, "name": layout.name}
    record["units"] = describe_units(units)
    return HilbertResult(parts, record)


def _angle(x: xr.DataArray) -> xr.DataArray:
    """``angle(x)`` in radians (-pi, pi], in the memory of ``x`` (NumPy's ``np.angle``)."""
    xp = backend.api(x.data)
    return x.copy(data=xp.atan2(xp.imag(x.data), xp.real(x.data)))


def _check_solver_options(options: CompressedOptions) -> None:
    """Refuse what the operator solver cannot honour; check the rest as xsvd.compressed."""
    if options.krylov is False:
        raise ValueError(
            "hilbert_eof runs on the block Krylov solver only; krylov=False (subspace "
            "iteration) is not available for it. Drop krylov=False."
        )
    if options.dtype is not None and backend.numpy_dtype(options.dtype) != np.float64:
        raise ValueError(
            f"hilbert_eof computes the analytic signal and its products in float64; "
            f"dtype={options.dtype!r} is not available for it. Drop dtype= (or pass "
            "dtype='float64')."
        )
    options.resolved(lazy=False)  # the same errors as xsvd.compressed for the others


def _exact(f, k):
    """The dense complex SVD of ``Z``: ``(U, S, V, errors)``, V on the kept features."""
    Z = f.formed()
    xp = backend.api(Z)
    with small_blas(Z):  # one BLAS thread where it is small
        U, S, Vh = xp.linalg.svd(Z, full_matrices=False)
    r = S.shape[0] if k is None else k
    return U[:, :r], S[:r], xp.conj(Vh[:r, :]).T, np.zeros((r, 3))


def _compressed(f, k: int, options: CompressedOptions):
    """Block Krylov on the real form: ``(U, S, V, errors, settings)`` (host NumPy).

    One pair more than asked where there is room, for the gap below the
    last component that its angle's bound needs (:func:`complex_errors`).
    The blocks (``2 pairs + p`` columns, ``p`` the ``n_oversamples`` rounded
    up to even) are real forms of complex blocks of ``pairs + p / 2`` columns
    (``complex_form``): each product multiplies the data by that many complex
    columns, ``2 pairs + p`` real ones, where a generic real block of the
    same width needs twice as many.
    """
    m, n = f.shape
    pairs = k + 1 if k < min(m, n) else k
    resolved = options.resolved(lazy=False)
    with one_blas_thread():  # the products run on threads of their own (.analytic_field)
        res = operator_svd(
            f.matmat,
            f.rmatmat,
            (2 * m, 2 * n),
            2 * pairs,
            # even: the block is the real form of a complex one of pairs + p / 2 columns
            n_oversamples=resolved.n_oversamples + resolved.n_oversamples % 2,
            n_power_iter=options.n_power_iter,
            tol=options.tol,
            max_passes=options.max_passes,
            seed=options.seed,
            complex_form=True,
            watched=2 * k,  # the pair below is there for its gap: it need not converge
        )
    U, S, V = pairs_to_complex(res.U, res.S, res.V, m, n, k)
    errors = complex_errors(res.errors, res.S, k)
    settings = {
        "n_power_iter": res.passes - 1,
        "n_oversamples": resolved.n_oversamples,
        "seed": options.seed,
        "dtype": "float64",
        "passes": res.passes,
        "stopped": res.stopped,
        "krylov": True,
    }
    if options.n_power_iter is None:  # stopped by tol (asked for, or the default)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(S > 0, errors[:, 0] / S, np.inf)
        reached = float(np.maximum(rel, errors[:, 2]).max())
        settings.update(tol=resolved.tol, estimated_error=reached)
        if options.max_passes is not None:
            settings["max_passes"] = int(options.max_passes)
        if options.tol is not None and res.stopped == MAX_PASSES:  # the solver's verdict
            warnings.warn(
                f"tol={options.tol:g} was not reached in {res.passes} passes over the data: "
                f"the largest estimated relative error is {reached:.3g}. Pass a larger "
                "max_passes, a larger n_oversamples, or accept the estimates (res.errors).",
                RuntimeWarning,
                stacklevel=3,
            )
    if not res.bounds:
        settings["error_bounds"] = False
    return U, S, V, errors, settings


def _undo(layout: Layout, f, a, w, *, center: bool, standardize: bool) -> dict:
    """The per-feature mean and scale (weights over standard deviations) that
    :meth:`HilbertResult.reconstruct` undoes, labeled (NaN at all-NaN features), in the
    memory of the data (host for Dask data)."""
    like = None if backend.is_dask(a) else a
    parts = {}
    if center:
        mean = f.mean if like is None else backend.on_backend_of(f.mean, like)
        parts["mean"] = layout.label_feature_vector(mean, "mean")
    if w is not None or standardize:
        scale = f.scale if like is None else backend.on_backend_of(f.scale, like)
        parts["scale"] = layout.label_feature_vector(scale, "scale")
    return parts
