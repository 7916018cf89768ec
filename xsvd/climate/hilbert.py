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
- In memory, ``method="exact"``: LAPACK's complex SVD of ``Z``.
- Otherwise (Dask data, or ``method="compressed"``): the real matrix
  ``R = [[P, -Q], [Q, P]]`` (``2m x 2n``), built lazily from the chunks of
  ``Z``, goes to xsvd's own solvers (:func:`xsvd.linalg.exact_svd`,
  :func:`xsvd.linalg.randomized_svd`) for ``2k`` components. ``R`` is ``Z``
  acting on ``C^n`` seen as ``R^{2n}``: every singular value of ``Z``
  appears twice, with vectors ``[Re u; Im u]`` and ``[-Im u; Re u]``. The
  complex-linear part of the rank-``2k`` result, ``(1/2) U_c diag(S) V_c^H``
  with ``U_c = U_top + i U_bottom`` (the same for ``V``), is ``Z``'s
  rank-``k`` SVD; a small complex SVD (``2k`` columns) extracts it, so near
  equal singular values need no pairing of columns.

The phase convention
--------------------
A complex singular pair is defined up to a factor ``exp(i theta)`` on ``u``
and ``v`` together. xsvd fixes it: in each component the entry of ``V``
with the largest magnitude is real and positive (the first such entry where
several tie). The same rule on NumPy and Dask data, for every solver.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from typing import Literal

import numpy as np
import xarray as xr

from ..core import MissingValueError, backend, exact_svd, randomized_svd
from ..labeled.api import choose_method, labeled_matrix
from ..labeled.base import Result, component_array, errors_from_part, errors_part, ratio
from ..labeled.layout import COMPONENT, Layout

__all__ = ["hilbert_eof", "HilbertResult", "analytic_signal", "complex_phase_rule"]

#: Warn when putting the sample dimension in one chunk makes a block larger than this.
BLOCK_WARN_BYTES = 256 * 2**20
#: ``padding="exp"``: each end is extended by this many series lengths.
PAD_LENGTHS = 1


def analytic_signal(x, *, padding: str = "exp", decay_factor: float = 0.2):
    """Analytic signal ``x + i H[x]`` of each column of the real 2-D array ``x`` (float64).

    The FFT construction (Marple 1999): the spectrum's negative frequencies
    are set to zero and its positive ones doubled. ``padding="exp"``
    extends each series at both ends by its mirror image about the end
    sample, damped by ``exp(-j / (decay_factor * N))`` at ``j`` steps from
    the end (``N`` samples), before the transform, and keeps the middle:
    this tempers the jumps the FFT sees between the two ends. ``"none"``
    transforms the series as they are (periodic continuation).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(64)
    >>> z = analytic_signal(np.cos(2 * np.pi * 4 * t / 64)[:, None], padding="none")
    >>> bool(np.allclose(z[:, 0], np.exp(2j * np.pi * 4 * t / 64)))
    True
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if padding == "exp":
        pad = min(PAD_LENGTHS * n, max(n - 1, 0))
        j = np.arange(1, pad + 1, dtype=np.float64)[:, None]
        damp = np.exp(-j / (decay_factor * n))
        head = x[1 : pad + 1][::-1] * damp[::-1]
        tail = x[n - 1 - pad : n - 1][::-1] * damp
        series = np.concatenate([head, x, tail], axis=0)
        start = pad
    elif padding == "none":
        series, start = x, 0
    else:
        raise ValueError(f"padding must be 'exp' or 'none', got {padding!r}.")
    N = series.shape[0]
    h = np.zeros(N)
    h[0] = 1.0
    if N % 2 == 0:
        h[N // 2] = 1.0
        h[1 : N // 2] = 2.0
    else:
        h[1 : (N + 1) // 2] = 2.0
    z = np.fft.ifft(np.fft.fft(series, axis=0) * h[:, None], axis=0)
    return z[start : start + n]


def _prepared_block(x, w, *, center: bool, standardize: bool, padding: str, decay: float):
    """One block (all samples x some features): anomalies, weights, analytic signal."""
    x = np.asarray(x, dtype=np.float64)
    w = None if w is None else np.asarray(w, dtype=np.float64).reshape(-1)
    nan = np.isnan(x)
    all_nan = nan.all(axis=0)
    if (nan.any(axis=0) & ~all_nan).any():
        raise MissingValueError(
            "The Hilbert transform needs every feature complete along the sample dimension: "
            f"{int((nan.any(axis=0) & ~all_nan).sum())} feature(s) in a block are NaN at some "
            "samples but not all (the FFT would spread the gap over the whole series). Fill "
            "them first, e.g. `da.interpolate_na('time')` or `da.fillna(0)` on anomalies; "
            "features NaN at every sample (land) are fine."
        )
    x = np.where(all_nan, 0.0, x)
    if center:
        x = x - x.mean(axis=0)
    if standardize:
        sd = x.std(axis=0)
        x = x / np.where(sd > 0, sd, np.inf)
    if w is not None:
        x = x * w
    z = analytic_signal(x, padding=padding, decay_factor=decay)
    return np.where(all_nan, complex(np.nan, np.nan), z)


def complex_phase_rule(U, V):
    """xsvd's phase rule for complex singular pairs (NumPy arrays, NaN rows of ``V`` allowed).

    In each column the entry of ``V`` with the largest magnitude becomes
    real and positive (the first where several tie); ``U`` turns with it, so
    ``U diag(S) V^H`` is unchanged.
    """
    mag = np.where(np.isnan(V), -1.0, np.abs(V))
    top = V[mag.argmax(axis=0), np.arange(V.shape[1])]
    turn = np.where(np.abs(top) > 0, np.conj(top) / np.where(top == 0, 1, np.abs(top)), 1)
    return U * turn, V * turn


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
        self._parts = dict(parts)
        self._record = dict(record)
        self.settings = dict(record["settings"])
        self.method = record["method"]
        self.n_samples = int(record["n_samples"])

    @classmethod
    def from_state(cls, parts: dict, record: dict) -> HilbertResult:
        return cls(parts, record)

    def state(self) -> tuple[dict, dict]:
        return dict(self._parts), dict(self._record)

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
    def singular_values(self) -> xr.DataArray:
        return self._parts["S"]

    S = singular_values

    def error_values(self):
        return errors_from_part(self._parts.get("errors"))

    @property
    def total_variance(self) -> xr.DataArray:
        """``||Z||_F**2``, the sum of squares of the analytic signal of the centered,
        weighted data (its real part's is half of it, for a long record)."""
        return self._parts["total_variance"]

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        out = self.S.copy(data=ratio(self.S, self.total_variance))
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
        return xr.apply_ufunc(np.angle, self.V).rename("components_phase")

    def scores_amplitude(self, *, normalized: bool = True) -> xr.DataArray:
        """``|U|`` (xeofs' default), or ``|U S|`` with ``normalized=False``: amplitude in time."""
        return abs(self.scores(normalized=normalized)).rename("scores_amplitude")

    def scores_phase(self) -> xr.DataArray:
        """``angle(U)`` in radians (-pi, pi]: each component's phase in time."""
        return xr.apply_ufunc(np.angle, self.U).rename("scores_phase")

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
        U, S, V = self.U.isel(sel), self.S.isel(sel), self.V.isel(sel)
        X = xr.dot(U * S, np.conj(V), dim=COMPONENT).real
        scale = self._parts.get("scale")
        if scale is not None:  # weights over standard deviations: divided out
            X = X / scale.where(scale != 0)
        mean = self._parts.get("mean")
        if mean is not None:
            X = X + mean
        dims = [*self.U.dims[:-1], *self.V.dims[1:]]
        return X.transpose(*dims).rename(self._record.get("name"))

    def to_dataset(self) -> xr.Dataset:
        """The saved form (:class:`~xsvd.labeled.base.Result`; complex parts as their real
        and imaginary parts)."""
        return super().to_dataset()


def hilbert_eof(
    da: xr.DataArray,
    k: int | None = None,
    *,
    dim: Hashable = "time",
    weights: xr.DataArray | None = None,
    center: bool = True,
    standardize: bool = False,
    padding: Literal["exp", "none"] = "exp",
    decay_factor: float = 0.2,
    method: Literal["auto", "exact", "compressed"] = "auto",
    **compressed_options,
) -> HilbertResult:
    """Hilbert (complex) EOF analysis: propagating patterns with amplitude and phase.

    Parameters
    ----------
    da : xarray.DataArray
        NumPy- or Dask-backed field; ``dim`` must be ordered in time (the
        transform assumes evenly spaced samples).
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
    **compressed_options
        ``n_power_iter``, ``n_oversamples``, ``seed``, ``tol``, ... for
        ``method="compressed"`` (see :func:`xsvd.compressed`).

    Returns
    -------
    HilbertResult
        Complex ``U`` (scores), ``S``, complex ``V`` (patterns), computed.
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

    Partly missing features (NaN at some samples) are an error: the FFT
    would spread each gap over the whole series. Features NaN at every
    sample stay NaN in ``V``.

    Dask: the transform needs each series whole, so the sample dimension is
    put in one chunk (lazily; the feature dimensions stay chunked): a block
    then holds every sample of its features, as complex numbers (16 bytes
    each). Make blocks small along the features (``da.chunk({"time": -1,
    "lat": 10})``) for big records; a warning says when a block exceeds
    256 MiB. The data are read once per pass of the solver.

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
    layout, da, a, w, _ = labeled_matrix(da, dims, weights)
    m, n = a.shape
    if method == "auto":
        method = choose_method(m, n, k)
    if compressed_options and method != "compressed":
        raise ValueError(
            f"{', '.join(compressed_options)} only apply to method='compressed'; the "
            f"{method} solver was chosen. Drop them or pass `method='compressed'`."
        )
    if k is not None and (not isinstance(k, int | np.integer) or not 1 <= k <= min(m, n)):
        raise ValueError(f"k must be an integer between 1 and {min(m, n)}, got {k!r}.")
    if k is None and method == "compressed":
        raise ValueError("method='compressed' needs the number of components: pass `k=`.")
    kw = dict(center=center, standardize=standardize, padding=padding, decay=decay_factor)
    settings = dict(k=k, center=center, standardize=standardize, padding=padding)
    if padding == "exp":
        settings["decay_factor"] = decay_factor
    if method == "exact" and not backend.is_dask(a):
        U, S, V, total = _exact_in_memory(backend.to_numpy(a), w, k, kw)
        errors = np.zeros((S.shape[0], 3))
    else:
        Z = _analytic_dask(a, w, kw) if backend.is_dask(a) else _prepared_block(a, w, **kw)
        U, S, V, total, solved, errors = _via_real_form(Z, m, n, k, method, compressed_options)
        settings.update({key: v for key, v in solved.items() if key not in settings})
    U, V = complex_phase_rule(U, V)
    settings["k"] = int(S.shape[0])
    name = layout.name if layout.name is not None else "data"
    S = component_array(S, "S", {"long_name": f"singular values of {name}"})
    parts = {
        "U": layout.label_samples(U, "U", {"long_name": f"complex scores of {name}"}),
        "S": S,
        "V": layout.label_features(V, "V", {"long_name": f"complex patterns of {name}"}),
        "errors": errors_part(S, errors),
        "total_variance": xr.DataArray(float(total), name="total_variance"),
        **_undo(layout, a, w, center=center, standardize=standardize),
    }
    record = {"settings": settings, "method": method, "n_samples": m, "name": layout.name}
    return HilbertResult(parts, record)


def _undo(layout: Layout, a, w, *, center: bool, standardize: bool) -> dict:
    """The per-feature mean and scale (weights over standard deviations) that
    :meth:`HilbertResult.reconstruct` undoes, labeled (NaN at all-NaN features)."""
    parts = {}
    x = backend.astype(a, np.float64)
    stats = {"mean": x.mean(axis=0)} if center else {}
    if standardize:
        stats["std"] = x.std(axis=0)
    if backend.is_dask(a):
        stats = dict(zip(stats, backend.compute(*stats.values()), strict=True))
    stats = {key: np.asarray(backend.to_numpy(v), dtype=np.float64) for key, v in stats.items()}
    mean, std = stats.get("mean"), stats.get("std")
    if mean is not None:
        parts["mean"] = layout.label_feature_vector(mean, "mean")
    scale = np.ones(layout.n_features) if w is None else np.asarray(backend.to_numpy(w), float)
    if std is not None:
        scale = np.where(std > 0, scale / np.where(std > 0, std, 1.0), 0.0)
    if w is not None or std is not None:
        parts["scale"] = layout.label_feature_vector(scale, "scale")
    return parts


def _exact_in_memory(a, w, k, kw):
    Z = _prepared_block(a, w, **kw)
    nan = np.isnan(Z[0])
    U, S, Vh = np.linalg.svd(Z[:, ~nan], full_matrices=False)
    r = S.shape[0] if k is None else k
    V = np.full((Z.shape[1], r), complex(np.nan, np.nan))
    V[~nan] = Vh[:r].conj().T
    return U[:, :r], S[:r], V, float((S**2).sum())


def _analytic_dask(a, w, kw):
    """The analytic signal of Dask data, lazily: samples in one chunk, features as they are."""
    import dask.array as da

    if len(a.chunks[0]) > 1:
        a = a.rechunk({0: -1})
        block = a.shape[0] * max(a.chunks[1]) * 16
        if block > BLOCK_WARN_BYTES:
            warnings.warn(
                f"The Hilbert transform needs each series whole: the sample dimension is put "
                f"in one chunk, so a block holds {block / 2**20:.0f} MiB of complex values. "
                "Chunk the feature dimensions smaller (e.g. `da.chunk({'time': -1, 'lat': "
                "10})`) to use less memory.",
                UserWarning,
                stacklevel=3,
            )
    wd = da.from_array(np.ones(a.shape[1]) if w is None else w, chunks=(a.chunks[1],))[None]
    return da.map_blocks(lambda x, wb: _prepared_block(x, wb, **kw), a, wd, dtype=np.complex128)


def _via_real_form(Z, m, n, k, method, options):
    """SVD of ``Z`` through ``R = [[P, -Q], [Q, P]]`` and xsvd's real solvers."""
    lib = backend.array_module(Z)
    P, Q = Z.real, Z.imag
    R = lib.block([[P, -Q], [Q, P]])
    kk = None if k is None else 2 * k
    if method == "exact":
        d = exact_svd(R, kk, center=False, compute=True)
    else:
        d = randomized_svd(R, kk, center=False, compute=True, **options)
    UR, SR, VR = (backend.to_numpy(x) for x in (d.U, d.S, d.V))
    # all components: as many as the features present (land left out) or the samples
    r = min(m, n - int(np.isnan(VR[:n]).any(axis=1).sum())) if k is None else k
    U, S, V = pairs_to_complex(UR, SR, VR, m, n, r)
    total = float(backend.to_numpy(d.total_ss)) / 2
    # each complex triplet is a pair of real ones: the larger of the pair's estimates
    errors = None
    if d.errors is not None:
        e = np.asarray(backend.to_numpy(d.errors), dtype=np.float64)[: 2 * r]
        errors = np.maximum(e[0::2], e[1::2]) if e.shape[0] == 2 * r else None
    return U, S, V, total, d.settings, errors
