"""Every xsvd analysis against its xeofs counterpart, side by side, at equal accuracy (issue 29).

    .venv/bin/python benchmarks/analyses.py            # full run (~16 min on 2 shared cores)
    .venv/bin/python benchmarks/analyses.py --quick    # smoke run, small sizes (< 1 min)
    .venv/bin/python benchmarks/analyses.py --render benchmarks/results/analyses.json
    .venv/bin/python benchmarks/analyses.py --analyses rotation \
        --out benchmarks/results/analyses-rotation --merge benchmarks/results/analyses.json

Six analyses, each timed for xsvd and for xeofs in this one process, one
after the other (the order alternates from round to round), at default BLAS
threads, on the same data with the same options:

* EOF: ``xsvd.svd(da, k, dim="time", center=True, weights=w)`` (default
  method) vs ``xeofs.single.EOF(n_modes=k).fit(da, "time", weights=w)``;
* MCA: ``xsvd.mca(left, right, k, dim="time", weights_left=wl,
  weights_right=wr)`` and its ``squared_covariance_fraction`` vs
  ``xeofs.cross.MCA(n_modes=k, use_pca=False).fit(left, right, "time",
  weights_X=wl, weights_Y=wr)`` and its ``squared_covariance_fraction()``;
* extended EOF: ``xsvd.extended_eof(da, k, embedding=L, tau=tau, weights=w)``
  vs ``xeofs.single.ExtendedEOF(n_modes=k, embedding=L, tau=tau)``;
* Hilbert EOF: ``xsvd.hilbert_eof(da, k, padding="none", weights=w)`` vs
  ``xeofs.single.HilbertEOF(n_modes=k, padding="none")``;
* bootstrap: ``xsvd.bootstrap(da, k, n_replicates=R, seed=0, weights=w)`` vs
  ``xeofs.single.EOF(n_modes=k)`` fitted, then
  ``xeofs.validation.EOFBootstrapper(n_bootstraps=R, seed=0).fit(model)``
  (both compute the data's own decomposition and the R replicates);
* rotation: ``res.rotate(n, rtol=r)`` of a fitted ``xsvd.svd`` result vs
  ``xeofs.single.EOFRotator(n_modes=n, rtol=r).fit(model)`` of a fitted ``EOF``
  (the fits are not timed); both stop when the varimax criterion changes by
  less than ``r`` (``--rotate-rtol``, 1e-8: the default of both), relative.

Every xeofs model and every xsvd analysis uses its default solver; the timed
call also asks for what the analysis reports (xeofs computes scores and
variances in ``fit``), and every timed xsvd result is read back as NumPy.
``w`` is ``xsvd.coslat_weights`` (sqrt(cos lat)) for both tools; land
(all-NaN) cells are dropped by both.

Data:

* **eofs example** (``eofs.examples``): 50 winters of NDJFM SST anomalies
  (``sst_ndjfm_anom.nc``, 18 x 30 = 540 cells, 450 of them ocean) and, for
  MCA, the DJF 500 hPa heights (``hgt_djf.nc``, 29 x 49 = 1,421 cells) of the
  same 50 winters (1963-2012); k=10, extended EOF with embedding 3, tau 1,
  bootstrap with 20 replicates, rotation of 5 of the 10 components. Timed
  (i) on the machine as it is ("quiet") and (ii) beside a busy process
  (``busy.busy_processes``: one subprocess multiplying 1,000 x 1,000 NumPy
  matrices on every core), best of ``--repeat`` (3) after a warm-up.
* **synthetic 3,000 x 90 x 180** (``xsvd.datasets.climate_field``, as the
  ``climate`` case of ``run.py``: land NaN, 11,628 ocean cells), with
  ``--modes`` (10) planted modes so that all k=10 components stand clear of
  the noise and have defined patterns (``run.py`` plants 3: components 4-10
  are then noise, whose patterns no solver can pin down). MCA pairs it with a
  second field of the same size, the same planted modes and its own noise.
  Bootstrap with ``--replicates-large`` (10) replicates. Best of
  ``--repeat-large`` (2), no warm-up; a tool whose first run took over a
  minute runs once; a run longer than ``--cap`` (180 s) is stopped (SIGALRM)
  and reported as "> cap".

Accuracy, of each tool against a dense reference computed here from the
formed matrix (centered, weighted, land dropped):

* EOF, extended and Hilbert EOF (``dense_svd``): ``np.linalg.svd`` of the
  formed matrix up to 3e7 entries; beyond (the large field: ``np.linalg.svd``
  of 3,000 x 11,628 takes 35 s on 2 quiet cores, minutes on loaded ones, the
  lagged and complex matrices more), ``eigh`` of the n x n Gram matrix and
  one Rayleigh-Ritz step on the formed matrix itself, which gives its
  singular values to rounding (checked against ``np.linalg.svd`` on a 600 x
  2,958 field and its analytic signal: 1.6e-15 in σ, 4.5e-15 rad);
* EOF, rotation: the n x p matrix; rotation: Kaiser-
  normalized varimax (the definition xeofs and xsvd use) of the reference
  loadings ``V S``, iterated until the rotation changes by less than 1e-14;
* MCA: ``np.linalg.svd`` of the formed cross-covariance ``Xl^T Xr / (n-1)``
  when it has at most 3e7 entries, else (exact all the same) the SVD of
  ``Rl Rr^T / (n-1)`` from the QR factorizations ``Xl^T = Ql Rl``, ``Xr^T =
  Qr Rr``, its singular vectors mapped back by ``Ql``, ``Qr``;
* extended EOF: the formed lagged copy ``[X_0 X_tau ...]``, centered;
* Hilbert EOF: ``scipy.signal.hilbert`` of the centered, weighted matrix
  along time (what ``padding="none"`` means);
* bootstrap: each replicate's exact spectrum from its samples (xsvd's
  ``counts``; xeofs' draws replayed from its seed): ``np.linalg.svd`` of the
  resampled matrix for the example data, ``eigvalsh`` of its doubly centered
  n x n Gram matrix for the large field.

Reported: ``σ``: the largest relative error of the k singular values (MCA:
the covariances; bootstrap: every replicate's); ``ratio``: of the explained
variance ratios (MCA: squared covariance fractions; bootstrap: every
replicate's ratios; rotation: the rotated components' ratios); ``∠``: the
largest angle (radians) between a pattern and the reference's, up to sign
(Hilbert: up to a phase; MCA: left and right patterns; extended EOF: all
lags; bootstrap: not compared). "Equal accuracy" holds when each of xsvd's
errors is at most ``max(2 x xeofs' error, tolerance)``, tolerance 1e-6 for
``σ`` and ``ratio`` (xsvd's default ``tol``) and 1e-3 rad for ``∠``: both are
then far below the sampling error of any of these statistics.

Writes ``benchmarks/results/analyses.md`` and ``.json`` (``--out``; a
``--quick`` run writes to the temporary folder unless ``--out`` is given)
with the command, date, machine, versions, git commit, the signatures of the
xsvd calls and every run's times, errors and load.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import json
import operator
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # xeofs' bootstrapper draws a progress bar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helper modules next to this file

import numpy as np  # noqa: E402
import scipy.signal  # noqa: E402
import xarray as xr  # noqa: E402
from _harness import OtherLoad  # noqa: E402
from _report import machine_info  # noqa: E402
from busy import busy_processes  # noqa: E402

import xsvd  # noqa: E402

#: tolerances below which an error counts as equal whatever the peer's
TOL = {"sv": 1e-6, "ratio": 1e-6, "angle": 1e-3}
METRICS = ("sv", "ratio", "angle")
#: xsvd's error may be this many times xeofs' (two runs of one algorithm stopped by the same
#: rule differ by about that: rotation)
SLACK = 2.0


# --------------------------------------------------------------------------- data


@dataclass
class Data:
    """One data set: the field (and MCA's second field), their weights, a label."""

    label: str
    da: xr.DataArray
    w: xr.DataArray
    right: xr.DataArray
    w_right: xr.DataArray
    large: bool
    describe: str


def example_data() -> Data:
    """eofs' NDJFM SST anomalies and the DJF Z500 of the same 50 winters."""
    from eofs.examples import example_data_path

    with xr.open_dataset(example_data_path("sst_ndjfm_anom.nc")) as ds:
        sst = ds["sst"].load()
    with xr.open_dataset(example_data_path("hgt_djf.nc")) as ds:
        z = ds["z"].load().squeeze("pressure", drop=True)
    years = sst.time.dt.year.values
    z = z.isel(time=np.isin(z.time.dt.year.values, years))
    if z.sizes["time"] != sst.sizes["time"]:
        raise RuntimeError("the SST and Z500 winters do not match")
    z = z.assign_coords(time=sst.time.values)
    n_ocean = int(sst.isel(time=0).notnull().sum())
    return Data(
        label="eofs example",
        da=sst,
        w=xsvd.coslat_weights(sst),
        right=z,
        w_right=xsvd.coslat_weights(z),
        large=False,
        describe=(
            f"eofs example: SST {sst.sizes['time']} winters x {sst.sizes['latitude']} x "
            f"{sst.sizes['longitude']} ({n_ocean} ocean cells); Z500 {z.sizes['latitude']} x "
            f"{z.sizes['longitude']} ({z.sizes['latitude'] * z.sizes['longitude']:,} cells)"
        ),
    )


def synthetic_data(shape: tuple[int, int, int], modes: int) -> Data:
    """``climate_field`` (land NaN) and a second field with the same modes, its own noise."""
    n, ny, nx = shape
    left = xsvd.datasets.climate_field(n, ny, nx, n_modes=modes, seed=0)
    right = xsvd.datasets.climate_field(n, ny, nx, n_modes=modes, seed=0, noise=0.0)
    noise = 0.2 * np.random.default_rng(1).standard_normal(right.shape)
    right = (right + noise).rename("sst2")  # land stays NaN
    n_ocean = int(left.isel(time=0).notnull().sum())
    label = f"{n:,} x {ny} x {nx}"
    return Data(
        label=label,
        da=left,
        w=xsvd.coslat_weights(left),
        right=right,
        w_right=xsvd.coslat_weights(right),
        large=True,
        describe=(
            f"synthetic {label}: xsvd.datasets.climate_field({n}, {ny}, {nx}, "
            f"n_modes={modes}, seed=0) ({n_ocean:,} ocean cells, land NaN, noise 0.2); "
            "MCA's right field: the same modes (noise=0) plus its own noise (std 0.2, seed 1)"
        ),
    )


def matrix(da: xr.DataArray, w: xr.DataArray) -> tuple[np.ndarray, np.ndarray]:
    """The weighted (time, cells) matrix without its all-NaN cells, and the cell mask."""
    X = (da * w).transpose("time", ...).values.reshape(da.sizes["time"], -1)
    keep = ~np.isnan(X).any(axis=0)
    return X[:, keep], keep


def full(rows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Rows over the kept cells put back on the whole grid (NaN elsewhere)."""
    out = np.full((rows.shape[0], keep.size), np.nan, dtype=rows.dtype)
    out[:, keep] = rows
    return out


#: matrices with more entries get the Gram-matrix reference (np.linalg.svd of a 3,000 x
#: 11,628 matrix takes 35 s on 2 quiet cores, 6 min on a loaded one; the lagged and complex
#: ones 3-4 times that)
DENSE_MAX = 3e7


def dense_svd(X: np.ndarray, k: int) -> dict:
    """The k leading singular values and right vectors of X (n x p, n <= p), exactly.

    Up to ``DENSE_MAX`` entries: ``np.linalg.svd``. Beyond: the leading k + 10 eigenvectors
    U of the n x n Gram matrix ``X X^H`` (LAPACK ``eigh``), then one Rayleigh-Ritz step on X
    itself: Q an orthonormal basis of ``X^H U``, the SVD of ``X Q``, whose singular values
    are X's to rounding (they err by the square of the angle between Q and X's singular
    subspace, itself ~1e-13 from the Gram matrix) and whose vectors mapped by Q are X's.
    Returns ``s`` (k), ``V`` (k rows: the columns of V in ``X = U S V^H``), ``total``
    (``||X||_F^2``) and ``how``.
    """
    total = float(np.sum(np.abs(X) ** 2))
    if X.size <= DENSE_MAX:
        _, s, Vh = np.linalg.svd(X, full_matrices=False)
        return {"s": s[:k], "V": Vh[:k].conj(), "total": total, "how": "np.linalg.svd"}
    _, U = np.linalg.eigh(X @ X.conj().T)
    U = U[:, ::-1][:, : k + 10]
    Q, _ = np.linalg.qr(X.conj().T @ U)
    _, s, Wh = np.linalg.svd(X @ Q, full_matrices=False)
    V = (Q @ Wh.conj().T)[:, :k].T
    how = "eigh of the n x n Gram matrix X X^H, then one Rayleigh-Ritz step on X"
    return {"s": s[:k], "V": V, "total": total, "how": how}


def dense_how(da: xr.DataArray, columns: int = 1, rows_less: int = 0) -> str:
    """What :func:`dense_svd` does for ``da``'s matrix (times ``columns`` lags)."""
    n = da.sizes["time"] - rows_less
    entries = n * int(da.isel(time=0).notnull().sum()) * columns
    if entries <= DENSE_MAX:
        return "np.linalg.svd of"
    return (
        "eigh of the n x n Gram matrix, then one Rayleigh-Ritz step (singular values to "
        "rounding, see dense_svd) on"
    )


# --------------------------------------------------------------------------- accuracy


def rel(values, ref) -> float:
    values, ref = np.asarray(values, dtype=float).ravel(), np.asarray(ref, dtype=float).ravel()
    return float(np.max(np.abs(values - ref) / np.abs(ref)))


def max_angle(P: np.ndarray, R: np.ndarray) -> float:
    """Largest angle between the rows of P and of R (both (k, cells), NaN where R is),
    each row scaled to unit norm, up to sign (real) or one phase (complex)."""
    ok = ~np.isnan(R).any(axis=0)
    P, R = P[:, ok], R[:, ok]
    if np.isnan(P).any():
        return float("nan")
    P = P / np.linalg.norm(P, axis=1, keepdims=True)
    R = R / np.linalg.norm(R, axis=1, keepdims=True)
    inner = np.sum(np.conj(P) * R, axis=1)
    phase = np.where(np.abs(inner) > 0, inner / np.maximum(np.abs(inner), 1e-300), 1.0)
    dist = np.linalg.norm(R - P * phase[:, None], axis=1)
    return float(np.max(2 * np.arcsin(np.minimum(1.0, dist / 2))))


def rows(da: xr.DataArray, first: str, dims: tuple[str, ...]) -> np.ndarray:
    """A pattern array as (component, cells) in the order of ``dims``."""
    a = da.transpose(first, *dims).values
    return a.reshape(a.shape[0], -1)


def varimax(L: np.ndarray, atol: float = 1e-14, max_iter: int = 100_000) -> np.ndarray:
    """Kaiser-normalized varimax of loadings L (cells x n): the rotated loadings, iterated
    until the rotation matrix changes by less than ``atol`` (a stop on the criterion, as
    the libraries' ``rtol``, leaves the rotation off by about the root of ``rtol``)."""
    h = np.sqrt(np.sum(L**2, axis=1))
    X = L / h[:, None]
    p, n = X.shape
    R = np.eye(n)
    for _ in range(max_iter):
        B = X @ R
        U, _, Vt = np.linalg.svd(X.T @ (B**3 - B @ np.diag(np.sum(B**2, axis=0)) / p))
        R, R_old = U @ Vt, R
        if np.abs(R - R_old).max() < atol:
            break
    return L @ R


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One analysis on one data set: two timed calls, and how to score their output."""

    analysis: str
    data: Data
    xsvd_call: str
    xeofs_call: str
    run_xsvd: Callable[[], object]
    run_xeofs: Callable[[], object]
    score_xsvd: Callable[[object], dict]
    score_xeofs: Callable[[object], dict]
    reference_how: str = ""
    setup: Callable[[], None] | None = None  #: untimed preparation (rotation's fits)


def _read(*parts) -> None:
    """Read parts of a result into NumPy (what a user of the result does; computes any
    part made on first use)."""
    for part in parts:
        np.asarray(part.values)


def _spectrum_scorers(score, xsvd_dims, xeofs_dims, patterns: str = "V"):
    """The two scorers of a case whose ``score(s, evr, V)`` compares a spectrum and its
    patterns: one reads an xsvd result (``patterns``: its attribute over ``xsvd_dims``),
    the other an xeofs model (its components over ``xeofs_dims``)."""

    def of_xsvd(res):
        V = rows(getattr(res, patterns), "component", xsvd_dims)
        return {
            **score(res.singular_values.values, res.explained_variance_ratio.values, V),
            **_info(res),
        }

    def of_xeofs(m):
        V = rows(m.components(), "mode", xeofs_dims)
        return score(m.singular_values().values, m.explained_variance_ratio().values, V)

    return of_xsvd, of_xeofs


def _info(res) -> dict:
    """How xsvd solved it: its method, passes and reads of the data, as the result says."""
    settings = getattr(res, "settings", {}) or {}
    out = {"method": res.method}
    out.update({key: settings[key] for key in ("passes", "reads") if key in settings})
    return out


def _quiet(fn):
    """``fn`` with warnings silenced (xeofs' and the tiny problems' advice)."""

    def run(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return run


class Reference:
    """Dense references of one data set, computed on first use and kept."""

    def __init__(self, data: Data, k: int, log):
        self.data, self.k, self.log = data, k, log
        self.cache: dict = {}
        self.seconds: dict = {}

    def get(self, name: str, fn):
        if name not in self.cache:
            self.log(f"  reference {name} ({self.data.label}) ...")
            t0 = time.perf_counter()
            self.cache[name] = fn()
            self.seconds[name] = time.perf_counter() - t0
            self.log(f"  reference {name}: {self.seconds[name]:.1f} s")
        return self.cache[name]

    def eof(self):
        def make():
            X, keep = matrix(self.data.da, self.data.w)
            d = dense_svd(X - X.mean(axis=0), self.k)
            return {**d, "evr": d["s"] ** 2 / d["total"], "V": full(d["V"], keep)}

        return self.get("EOF", make)


def eof_case(data: Data, ref: Reference, k: int) -> Case:
    import xeofs

    da, w = data.da, data.w
    dims = tuple(d for d in da.dims if d != "time")

    def run_xsvd():
        res = xsvd.svd(da, k, dim="time", center=True, weights=w)
        _read(res.S, res.U, res.V, res.explained_variance_ratio)
        return res

    def run_xeofs():
        model = xeofs.single.EOF(n_modes=k)
        model.fit(da, dim="time", weights=w)
        return model

    def score(s, evr, V):
        r = ref.eof()
        return {
            "sv": rel(s, r["s"][:k]),
            "ratio": rel(evr, r["evr"][:k]),
            "angle": max_angle(V, r["V"]),
        }

    return Case(
        "EOF",
        data,
        f'xsvd.svd(da, {k}, dim="time", center=True, weights=w)',
        f'xeofs.single.EOF(n_modes={k}).fit(da, "time", weights=w)',
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        *_spectrum_scorers(score, dims, dims),
        f"{dense_how(da)} the centered, weighted ocean matrix",
    )


def mca_case(data: Data, ref: Reference, k: int) -> Case:
    from xeofs.cross import MCA

    left, right, wl, wr = data.da, data.right, data.w, data.w_right
    dims_l = tuple(d for d in left.dims if d != "time")
    dims_r = tuple(d for d in right.dims if d != "time")
    n = left.sizes["time"]

    def make():
        A, keep_l = matrix(left, wl)
        B, keep_r = matrix(right, wr)
        A, B = A - A.mean(axis=0), B - B.mean(axis=0)
        if A.shape[1] * B.shape[1] <= 3e7:
            U, s, Vt = np.linalg.svd(A.T @ B / (n - 1), full_matrices=False)
            how = "np.linalg.svd of the formed cross-covariance"
        else:  # C = Ql (Rl Rr^T) Qr^T / (n - 1), exactly
            Ql, Rl = np.linalg.qr(A.T)
            Qr, Rr = np.linalg.qr(B.T)
            W, s, Zt = np.linalg.svd(Rl @ Rr.T / (n - 1))
            U, Vt = Ql @ W[:, :k], (Qr @ Zt[:k].T).T
            how = "np.linalg.svd of Rl Rr^T / (n-1) from QR of Xl^T and Xr^T (exact)"
        return {
            "s": s,
            "frac": s**2 / np.sum(s**2),
            "L": full(U[:, :k].T, keep_l),
            "R": full(Vt[:k], keep_r),
            "how": how,
        }

    def score(s, frac, L, R):
        r = ref.get("MCA", make)
        return {
            "sv": rel(s, r["s"][:k]),
            "ratio": rel(frac, r["frac"][:k]),
            "angle": max(max_angle(L, r["L"]), max_angle(R, r["R"])),
        }

    def run_xsvd():
        res = xsvd.mca(left, right, k, dim="time", weights_left=wl, weights_right=wr)
        _read(
            res.singular_values,
            res.left_patterns,
            res.right_patterns,
            res.left_scores,
            res.right_scores,
            res.squared_covariance_fraction,
        )
        return res

    def run_xeofs():
        model = MCA(n_modes=k, use_pca=False)
        model.fit(left, right, dim="time", weights_X=wl, weights_Y=wr)
        return model, model.squared_covariance_fraction()

    def score_xeofs(out):
        model, frac = out
        cl, cr = model.components()
        return {
            **score(
                model.data["singular_values"].values,
                frac.values,
                rows(cl, "mode", dims_l),
                rows(cr, "mode", dims_r),
            ),
        }

    small = data.da.isel(time=0).notnull().sum() * data.right.isel(time=0).notnull().sum() <= 3e7
    return Case(
        "MCA",
        data,
        f'xsvd.mca(left, right, {k}, dim="time", weights_left=wl, weights_right=wr) '
        "+ .squared_covariance_fraction",
        f'xeofs.cross.MCA(n_modes={k}, use_pca=False).fit(left, right, "time", '
        "weights_X=wl, weights_Y=wr) + .squared_covariance_fraction()",
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        lambda res: {
            **score(
                res.singular_values.values,
                res.squared_covariance_fraction.values,
                rows(res.left_patterns, "component", dims_l),
                rows(res.right_patterns, "component", dims_r),
            ),
            **_info(res),
        },
        score_xeofs,
        "np.linalg.svd of the formed cross-covariance Xl^T Xr / (n-1)"
        if bool(small)
        else "np.linalg.svd of Rl Rr^T / (n-1) from the QR factorizations Xl^T = Ql Rl, "
        "Xr^T = Qr Rr (the exact SVD of the cross-covariance, without forming it)",
    )


def extended_case(data: Data, ref: Reference, k: int, L: int, tau: int) -> Case:
    from xeofs.single import ExtendedEOF

    da, w = data.da, data.w
    dims = tuple(d for d in da.dims if d != "time")

    def make():
        X, keep = matrix(da, w)
        N = X.shape[0] - (L - 1) * tau
        E = np.concatenate([X[j * tau : j * tau + N] for j in range(L)], axis=1)
        E -= E.mean(axis=0)
        d = dense_svd(E, k)
        V = d["V"].reshape(k, L, -1)
        V = np.stack([full(V[:, j], keep) for j in range(L)], axis=1).reshape(k, -1)
        return {**d, "evr": d["s"] ** 2 / d["total"], "V": V}

    def score(s, evr, V):
        r = ref.get(f"extended L={L} tau={tau}", make)
        return {
            "sv": rel(s, r["s"][:k]),
            "ratio": rel(evr, r["evr"][:k]),
            "angle": max_angle(V, r["V"]),
        }

    def run_xsvd():
        res = xsvd.extended_eof(da, k, embedding=L, tau=tau, weights=w)
        _read(res.singular_values, res.patterns, res.scores, res.explained_variance_ratio)
        return res

    def run_xeofs():
        model = ExtendedEOF(n_modes=k, embedding=L, tau=tau)
        model.fit(da, dim="time", weights=w)
        return model

    return Case(
        "extended EOF",
        data,
        f"xsvd.extended_eof(da, {k}, embedding={L}, tau={tau}, weights=w)",
        f'xeofs.single.ExtendedEOF(n_modes={k}, embedding={L}, tau={tau}).fit(da, "time", '
        "weights=w)",
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        *_spectrum_scorers(score, ("lag", *dims), ("embedding", *dims), patterns="patterns"),
        f"{dense_how(da, L, (L - 1) * tau)} the formed, centered lagged copy "
        f"(embedding {L}, tau {tau})",
    )


def hilbert_case(data: Data, ref: Reference, k: int) -> Case:
    from xeofs.single import HilbertEOF

    da, w = data.da, data.w
    dims = tuple(d for d in da.dims if d != "time")

    def make():
        X, keep = matrix(da, w)
        Z = scipy.signal.hilbert(X - X.mean(axis=0), axis=0)
        d = dense_svd(Z, k)  # Z = U S V^H: the patterns are the columns of V
        return {**d, "evr": d["s"] ** 2 / d["total"], "V": full(d["V"], keep)}

    def score(s, evr, V):
        r = ref.get("Hilbert", make)
        return {
            "sv": rel(s, r["s"][:k]),
            "ratio": rel(evr, r["evr"][:k]),
            "angle": max_angle(V, r["V"]),
        }

    def run_xsvd():
        res = xsvd.hilbert_eof(da, k, padding="none", weights=w)
        _read(res.S, res.U, res.V, res.explained_variance_ratio)
        return res

    def run_xeofs():
        model = HilbertEOF(n_modes=k, padding="none")
        model.fit(da, dim="time", weights=w)
        return model

    return Case(
        "Hilbert EOF",
        data,
        f'xsvd.hilbert_eof(da, {k}, padding="none", weights=w)',
        f'xeofs.single.HilbertEOF(n_modes={k}, padding="none").fit(da, "time", weights=w)',
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        *_spectrum_scorers(score, dims, dims),
        f"{dense_how(da)} scipy.signal.hilbert of the centered, weighted ocean matrix "
        "(patterns: the columns of V in Z = U S V^H; compared up to a phase)",
    )


def bootstrap_case(data: Data, ref: Reference, k: int, replicates: int, seed: int = 0) -> Case:
    import xeofs

    da, w = data.da, data.w
    n = da.sizes["time"]

    def gram():
        X, _ = matrix(da, w)
        return X, (X @ X.T if data.large else None)

    spectra: dict = {}  # the two tools draw the same samples from the same seed

    def spectrum(idx: np.ndarray):
        """Exact singular values and variance ratios of the resampled, centered matrix."""
        key = tuple(np.sort(idx))
        if key in spectra:
            return spectra[key]
        X, G = ref.get("bootstrap data", gram)
        if G is None:
            Y = X[idx] - X[idx].mean(axis=0)
            s2 = np.linalg.svd(Y, compute_uv=False) ** 2
        else:  # the Gram matrix of the centered rows: G doubly centered
            g = G[np.ix_(idx, idx)]
            m = g.mean(axis=0)
            s2 = np.linalg.eigvalsh(g - m[:, None] - m[None, :] + m.mean())[::-1]
        s2 = np.maximum(s2, 0.0)
        spectra[key] = (np.sqrt(s2[:k]), s2[:k] / s2.sum())
        return spectra[key]

    def score(idx_list, sv, evr):
        exact = [spectrum(idx) for idx in idx_list]
        return {
            "sv": rel(sv, np.array([e[0] for e in exact])),
            "ratio": rel(evr, np.array([e[1] for e in exact])),
        }

    def run_xsvd():
        return xsvd.bootstrap(da, k, n_replicates=replicates, seed=seed, dim="time", weights=w)

    def score_xsvd(boot):
        counts = boot.counts.transpose("replicate", "time").values
        idx = [np.repeat(np.arange(n), c) for c in counts]
        return {
            **score(
                idx,
                boot.replicate_singular_values.transpose("replicate", "component").values,
                boot.replicate_explained_variance_ratio.transpose("replicate", "component").values,
            ),
            **_info(boot),
        }

    def run_xeofs():
        model = xeofs.single.EOF(n_modes=k)
        model.fit(da, dim="time", weights=w)
        boot = xeofs.validation.EOFBootstrapper(n_bootstraps=replicates, seed=seed)
        boot.fit(model)
        return boot

    def score_xeofs(boot):
        rng = np.random.default_rng(seed)  # xeofs 3's draws, replayed
        idx = [rng.choice(n, n, replace=True) for _ in range(replicates)]
        ev = boot.explained_variance().transpose("n", "mode").values
        evr = boot.explained_variance_ratio().transpose("n", "mode").values
        return score(idx, np.sqrt(ev * (n - 1)), evr)

    return Case(
        "bootstrap",
        data,
        f'xsvd.bootstrap(da, {k}, n_replicates={replicates}, seed={seed}, dim="time", weights=w)',
        f'xeofs EOF(n_modes={k}).fit(da, "time", weights=w) + '
        f"EOFBootstrapper(n_bootstraps={replicates}, seed={seed}).fit(model)",
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        _quiet(score_xsvd),
        _quiet(score_xeofs),
        f"each of the {replicates} replicates' exact spectrum: "
        + (
            "eigvalsh of the doubly centered n x n Gram matrix of its samples"
            if data.large
            else "np.linalg.svd of the resampled, centered, weighted matrix"
        ),
    )


def rotation_case(data: Data, ref: Reference, k: int, n_rot: int, rtol: float) -> Case:
    import xeofs

    da, w = data.da, data.w
    dims = tuple(d for d in da.dims if d != "time")
    fitted: dict = {}

    def setup():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted["xsvd"] = xsvd.svd(da, k, dim="time", center=True, weights=w)
            model = xeofs.single.EOF(n_modes=k)
            model.fit(da, dim="time", weights=w)
            fitted["xeofs"] = model

    def make():
        r = ref.eof()
        V = r["V"][:n_rot]
        keep = ~np.isnan(V[0])
        Lr = varimax((V[:, keep] * r["s"][:n_rot, None]).T)
        var = np.sum(Lr**2, axis=0)
        order = np.argsort(var)[::-1]
        return {"evr": var[order] / r["total"], "V": full(Lr[:, order].T, keep)}

    def score(evr, V):
        r = ref.get(f"varimax of {n_rot}", make)
        return {"ratio": rel(evr, r["evr"]), "angle": max_angle(V, r["V"])}

    def run_xsvd():
        rot = fitted["xsvd"].rotate(n_rot, rtol=rtol)
        _read(rot.V, rot.U, rot.explained_variance_ratio)
        return rot

    def run_xeofs():
        rot = xeofs.single.EOFRotator(n_modes=n_rot, rtol=rtol)
        rot.fit(fitted["xeofs"])
        rot.components(), rot.scores(), rot.explained_variance_ratio()
        return rot

    return Case(
        "rotation",
        data,
        f"res.rotate({n_rot}, rtol={rtol:g}) of xsvd.svd(da, {k}, ...) (varimax)",
        f"xeofs.single.EOFRotator(n_modes={n_rot}, rtol={rtol:g}).fit(EOF(n_modes={k}) fitted)",
        _quiet(run_xsvd),
        _quiet(run_xeofs),
        lambda rot: score(rot.explained_variance_ratio.values, rows(rot.V, "component", dims)),
        lambda rot: score(
            rot.explained_variance_ratio().values, rows(rot.components(), "mode", dims)
        ),
        "Kaiser-normalized varimax (until the rotation changes by less than 1e-14) of "
        f"the reference loadings V S of {n_rot} components (reference EOF: {dense_how(da)} "
        "the centered, weighted ocean matrix)",
        setup=setup,
    )


# --------------------------------------------------------------------------- timing


class Capped(Exception):
    """A run went past the cap."""


@contextlib.contextmanager
def capped(seconds: float | None):
    """Raise :class:`Capped` in this (main) thread after ``seconds`` (SIGALRM)."""
    if not seconds:
        yield
        return

    def handler(signum, frame):
        raise Capped

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Run:
    """One tool's runs of one case in one setting."""

    call: str
    times_s: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)  #: others' CPU share, each timed run
    warmup_s: float | None = None
    capped_at_s: float | None = None
    error: str | None = None
    accuracy: dict = field(default_factory=dict)

    @property
    def best(self) -> float | None:
        return min(self.times_s) if self.times_s else None

    @property
    def load(self) -> float | None:
        """Others' CPU share over the timed runs (time-weighted; the counters tick every
        10 ms, so one run of a few ms alone can read 0 or over 100%)."""
        if not self.loads:
            return None
        pairs = zip(self.loads, self.times_s, strict=True)
        return min(1.0, sum(s * t for s, t in pairs) / sum(self.times_s))


@dataclass
class Row:
    analysis: str
    data: str
    setting: str
    xsvd: Run
    xeofs: Run
    reference: str = ""
    goal: float = 1.0  #: issue 29: xeofs / xsvd at least this, at equal accuracy

    @property
    def met(self) -> bool | None:
        if self.ratio is None or self.equal is False:
            return None if self.ratio is None else False
        return self.ratio >= self.goal

    @property
    def ratio(self) -> float | None:
        if self.xsvd.best is None:
            return None
        if self.xeofs.capped_at_s is not None and self.xeofs.best is None:
            return self.xeofs.capped_at_s / self.xsvd.best  # a lower bound
        if self.xeofs.best is None:
            return None
        return self.xeofs.best / self.xsvd.best

    @property
    def equal(self) -> bool | None:
        a, b = self.xsvd.accuracy, self.xeofs.accuracy
        if not a or not b:
            return None
        for m in METRICS:
            if m in a and m in b:
                if not (a[m] <= max(SLACK * b[m], TOL[m])):
                    return False
        return True


def measure(
    case: Case, setting: str, repeat: int, warmup: bool, cap: float | None, log, goal: float
) -> Row:
    """Best of ``repeat`` of each tool (order alternating), the accuracy of the last run."""
    runs = {"xsvd": Run(case.xsvd_call), "xeofs": Run(case.xeofs_call)}
    fns = {"xsvd": case.run_xsvd, "xeofs": case.run_xeofs}
    scores = {"xsvd": case.score_xsvd, "xeofs": case.score_xeofs}
    last: dict = {}
    if case.setup is not None:
        case.setup()

    def once(tool: str, warming: bool = False) -> float | None:
        run = runs[tool]
        gc.collect()
        try:
            with OtherLoad() as load, capped(cap):
                t0 = time.perf_counter()
                out = fns[tool]()
                dt = time.perf_counter() - t0
        except Capped:
            run.capped_at_s = cap
            log(f"    {tool}: > cap ({cap:g} s)")
            return None
        except Exception:  # noqa: BLE001  (recorded, the suite goes on)
            run.error = traceback.format_exc()
            log(f"    {tool}: FAILED\n{run.error}")
            return None
        last[tool] = out
        if not warming:
            run.loads.append(load.share)
        return dt

    tools = ["xsvd", "xeofs"]
    if warmup:
        for tool in tools:
            runs[tool].warmup_s = once(tool, warming=True)
    for r in range(repeat):
        for tool in tools if r % 2 == 0 else tools[::-1]:
            run = runs[tool]
            if run.error or run.capped_at_s is not None:
                continue
            if r > 0 and not warmup and run.times_s and run.times_s[0] > 60:
                continue  # a long run: once is enough
            dt = once(tool)
            if dt is not None:
                run.times_s.append(dt)
                log(f"    {case.analysis} [{setting}] {tool}: {dt:.3f} s")
    for tool in tools:
        if tool in last and not runs[tool].error:
            try:
                runs[tool].accuracy = scores[tool](last[tool])
            except Exception:  # noqa: BLE001
                runs[tool].error = "scoring failed:\n" + traceback.format_exc()
                log(f"    {tool}: scoring FAILED\n{runs[tool].error}")
    last.clear()
    return Row(
        case.analysis,
        case.data.label,
        setting,
        runs["xsvd"],
        runs["xeofs"],
        case.reference_how,
        goal,
    )


# --------------------------------------------------------------------------- report


def _t(run: Run) -> str:
    if run.error and run.best is None:
        return "FAILED"
    if run.best is None and run.capped_at_s is not None:
        return f"> cap ({run.capped_at_s:g})"
    return "–" if run.best is None else f"{run.best:.3g}"


def _acc(run: Run) -> str:
    a = run.accuracy
    if not a:
        return "–"
    bits = []
    for m, name in (("sv", "σ"), ("ratio", "ratio"), ("angle", "∠")):
        if m in a:
            bits.append(f"{name} {a[m]:.1e}")
    return " · ".join(bits)


def _load(run: Run) -> str:
    return "–" if run.load is None else f"{run.load:.0%}"


def table(rows: list[Row]) -> str:
    head = (
        "| analysis | data | load | xsvd s | xeofs s | xeofs / xsvd | xsvd error "
        "| xeofs error | equal accuracy | other CPU xsvd / xeofs |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        ratio = r.ratio
        if ratio is None:
            ratio_s = "–"
        else:
            lower = r.xeofs.best is None and r.xeofs.capped_at_s is not None
            ratio_s = f"{'> ' if lower else ''}{ratio:.2f}×"
            if ratio < 1:
                ratio_s = f"**{ratio_s}**"
        eq = {None: "–", True: "yes", False: "**no**"}[r.equal]
        lines.append(
            f"| {r.analysis} | {r.data} | {r.setting} | {_t(r.xsvd)} | {_t(r.xeofs)} | {ratio_s} "
            f"| {_acc(r.xsvd)} | {_acc(r.xeofs)} | {eq} | {_load(r.xsvd)} / {_load(r.xeofs)} |"
        )
    return "\n".join(lines)


def signatures() -> dict:
    out = {}
    for name in ("svd", "mca", "extended_eof", "hilbert_eof", "bootstrap"):
        out[f"xsvd.{name}"] = str(inspect.signature(getattr(xsvd, name)))
    out["SVDResult.rotate"] = str(inspect.signature(xsvd.SVDResult.rotate))
    return out


def _jsonable(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(type(obj).__name__)


def report(
    path: Path,
    machine: dict,
    config: dict,
    rows: list[Row],
    data_lines: list[str],
    ref_seconds: dict[str, float],
    wall: float,
) -> str:
    """Write ``path``.md and .json; return the results table."""
    tab = table(rows)
    v = machine["versions"]
    git = machine.get("git") or {}
    commit = git.get("commit", "?")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    blas = ", ".join(
        f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} threads)"
        for b in machine["blas"]
        if b.get("user_api") == "blas"
    )
    ref_lines = [f"- {name}: {sec:.1f} s" for name, sec in ref_seconds.items()]
    how = {}
    for r in rows:
        how.setdefault((r.analysis, r.data), r.reference)
    slower = [r for r in rows if r.ratio is not None and r.ratio < 1]
    failed = [(r, t) for r in rows for t in ("xsvd", "xeofs") if getattr(r, t).error]
    unequal = [r for r in rows if r.equal is False]
    lines = [
        "# Every analysis against xeofs (issue 29)",
        "",
        f"- Date (UTC): {machine['date_utc']}",
        f"- Command: `{machine['command']}` (in `{machine['cwd']}`, "
        f"PYTHONPATH={machine.get('pythonpath', '')!r})",
        f"- xsvd source: `{machine.get('xsvd_source', '?')}`, commit {commit}",
        f"- Machine: {machine['cpu_model']}, {machine['logical_cores']} logical cores "
        f"({machine['usable_cores']} usable), {machine['ram_gb']} GiB RAM; "
        f"BLAS: {blas} (default threads)",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val),
        f"- Wall time of the whole run: {wall / 60:.1f} min",
        *[f"- Rows replaced by a later run: {line}" for line in machine.get("merged", [])],
        f"- Config: {config}",
        "",
        "## Results",
        "",
        tab,
        "",
        "Times: best of the timed runs, seconds (eofs example: best of "
        f"{config['repeat']} after a warm-up; large: best of {config['repeat_large']}, "
        "no warm-up, one run if the first took over a minute). `xeofs / xsvd` > 1: xsvd "
        "is faster (bold: slower). Errors against the dense references below: `σ` the "
        "largest relative error of the k singular values (MCA: covariances; bootstrap: every "
        "replicate's), `ratio` of the explained variance ratios (MCA: squared covariance "
        "fractions; bootstrap: every replicate's; rotation: the rotated components'), `∠` the "
        "largest pattern angle in radians (up to sign; Hilbert: up to a phase). `equal "
        f"accuracy`: every xsvd error ≤ max({SLACK:g} × xeofs', tolerance) with tolerance "
        f"{TOL['sv']:g} for σ and ratio, {TOL['angle']:g} rad for ∠. `load`: quiet = the "
        "machine as it is, busy = beside one process multiplying NumPy matrices on every "
        "core. `other CPU`: the share of the machine's CPU that other processes used "
        "during the tool's timed runs (time-weighted over the runs; coarse for runs of a few "
        "ms): a shared machine is only as quiet as that.",
        "",
        "## Data",
        "",
        *[f"- {line}" for line in data_lines],
        "",
        "## References",
        "",
        *[f"- {a} ({d}): {h}" for (a, d), h in how.items()],
        "",
        "Time to compute them (not timed against anything):",
        "",
        *ref_lines,
        "",
        "## Notes",
        "",
    ]
    if slower:
        lines += [
            f"- xsvd slower than xeofs: {r.analysis}, {r.data}, {r.setting}: "
            f"{r.xsvd.best:.3g} s vs {r.xeofs.best:.3g} s ({1 / r.ratio:.2f}× slower)"
            for r in slower
        ]
    if unequal:
        lines += [
            f"- xsvd less accurate than allowed: {r.analysis}, {r.data}, {r.setting}: "
            f"xsvd {_acc(r.xsvd)} vs xeofs {_acc(r.xeofs)}"
            for r in unequal
        ]
    for r, t in failed:
        lines += [
            f"- {t} failed on {r.analysis}, {r.data}, {r.setting}:",
            "",
            "```",
            getattr(r, t).error.strip(),
            "```",
            "",
        ]
    if not (slower or unequal or failed):
        lines.append("- xsvd is at least as fast as xeofs at equal accuracy in every row.")
    judged = [r for r in rows if r.met is not None]
    missed = [r for r in judged if not r.met]
    lines.append(
        "- Goal of issue 29 (xeofs / xsvd ≥ 1 on the eofs example, quiet and busy; ≥ 3 on the "
        f"large field; at equal accuracy): met in {len(judged) - len(missed)} of "
        f"{len(judged)} rows"
        + ("" if not missed else "; missed: ")
        + "; ".join(
            f"{r.analysis}, {r.data}, {r.setting} ({r.ratio:.2f}× against ≥ {r.goal:g}×"
            + ("" if r.equal is not False else ", accuracy not equal")
            + ")"
            for r in missed
        )
        + "."
    )
    lines += ["", "## Signatures of the xsvd calls in this run", ""]
    lines += [f"- `{k}{s}`" for k, s in config["signatures"].items()]
    lines += ["", "## Every run", ""]
    for r in rows:
        for tool in ("xsvd", "xeofs"):
            run = getattr(r, tool)
            times = ", ".join(f"{t:.3g}" for t in run.times_s)
            warm = "" if run.warmup_s is None else f"; warm-up {run.warmup_s:.3g} s"
            extra = "".join(
                f"; {key} {run.accuracy[key]}"
                for key in ("method", "passes", "reads")
                if key in run.accuracy
            )
            lines.append(
                f"- {r.analysis}, {r.data}, {r.setting}, {tool}: `{run.call}`: "
                f"runs {times or '–'} s{warm}{extra}"
            )
    path.with_suffix(".md").write_text("\n".join(lines).rstrip() + "\n")
    doc = {
        "machine": machine,
        "config": config,
        "wall_s": wall,
        "tolerances": TOL,
        "data": data_lines,
        "reference_seconds": ref_seconds,
        "rows": [
            {
                **asdict(r),
                "ratio": r.ratio,
                "equal_accuracy": r.equal,
                "goal_met": r.met,
                "xsvd_best_s": r.xsvd.best,
                "xeofs_best_s": r.xeofs.best,
            }
            for r in rows
        ],
    }
    path.with_suffix(".json").write_text(json.dumps(doc, indent=2, default=_jsonable) + "\n")
    return tab


def render(json_path: Path, out: Path | None) -> int:
    """Write the Markdown (and JSON) of an earlier run again, e.g. after the report changed."""
    doc = json.loads(json_path.read_text())
    fields = {"analysis", "data", "setting", "xsvd", "xeofs", "reference", "goal"}
    rows = []
    for d in doc["rows"]:
        d = {key: val for key, val in d.items() if key in fields}
        d.setdefault("goal", 1.0 if d["data"] == "eofs example" else 3.0)
        rows.append(Row(**{**d, "xsvd": Run(**d["xsvd"]), "xeofs": Run(**d["xeofs"])}))
    machine = doc["machine"]
    machine.setdefault("xsvd_source", "?")
    machine.setdefault("pythonpath", "")
    ref_seconds = {key.replace(": ", ", ", 1): sec for key, sec in doc["reference_seconds"].items()}
    out = out or json_path.with_suffix("")
    print(report(out, machine, doc["config"], rows, doc["data"], ref_seconds, doc["wall_s"]))
    print(f"written: {out.with_suffix('.md')}, {out.with_suffix('.json')}")
    return 0


def merge(into: Path, new: Path) -> int:
    """Replace the rows of the run ``into`` (JSON) by those of the same analysis, data and load
    of the run ``new``; the report names the run that gave each replaced row."""
    doc, later = json.loads(into.read_text()), json.loads(new.read_text())
    key = operator.itemgetter("analysis", "data", "setting")
    fresh = {key(r): r for r in later["rows"]}
    doc["rows"] = [fresh.pop(key(r), r) for r in doc["rows"]] + list(fresh.values())
    m = later["machine"]
    rows = sorted({f"{r['analysis']} ({r['data']}, {r['setting']})" for r in later["rows"]})
    doc["machine"].setdefault("merged", []).append(
        f"{', '.join(rows)}: from the run of {m['date_utc']}, commit "
        f"{(m.get('git') or {}).get('commit', '?')[:12]}, `{m['command']}` ({new.name})"
    )
    for name, sec in later["reference_seconds"].items():  # the earlier run's stay
        doc["reference_seconds"].setdefault(name, sec)
    into.write_text(json.dumps(doc, indent=2) + "\n")
    return render(into, None)


# --------------------------------------------------------------------------- main


ANALYSES = ("EOF", "MCA", "extended", "Hilbert", "bootstrap", "rotation")


def cases(data: Data, ref: Reference, args, replicates: int) -> list[Case]:
    k = args.k
    make = {
        "EOF": lambda: eof_case(data, ref, k),
        "MCA": lambda: mca_case(data, ref, k),
        "extended": lambda: extended_case(data, ref, k, args.embedding, args.tau),
        "Hilbert": lambda: hilbert_case(data, ref, k),
        "bootstrap": lambda: bootstrap_case(data, ref, k, replicates),
        "rotation": lambda: rotation_case(data, ref, k, args.rotate, args.rotate_rtol),
    }
    return [make[a]() for a in args.analyses]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--quick", action="store_true", help="small sizes, one run each, no warm-up (< 1 min)"
    )
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--embedding", type=int, default=3)
    p.add_argument("--tau", type=int, default=1)
    p.add_argument("--rotate", type=int, default=5, help="components rotated (of k)")
    p.add_argument(
        "--rotate-rtol",
        type=float,
        default=1e-8,
        help="rotation: both tools stop when the varimax criterion changes by less than this, "
        "relative (the default of both)",
    )
    p.add_argument("--replicates", type=int, default=20, help="bootstrap, eofs example")
    p.add_argument("--replicates-large", type=int, default=10, help="bootstrap, large field")
    p.add_argument("--shape", default="3000x90x180", help="time x lat x lon of the large field")
    p.add_argument("--modes", type=int, default=10, help="planted modes of the large field")
    p.add_argument("--repeat", type=int, default=3, help="timed runs, eofs example")
    p.add_argument("--repeat-large", type=int, default=2, help="timed runs, large field")
    p.add_argument("--cap", type=float, default=180.0, help="seconds; a longer run is stopped")
    p.add_argument("--analyses", default=",".join(ANALYSES), help="comma-separated subset")
    p.add_argument("--no-busy", dest="busy", action="store_false", help="skip the busy runs")
    p.add_argument("--no-large", dest="large", action="store_false", help="skip the large field")
    p.add_argument(
        "--no-small", dest="small", action="store_false", help="skip the eofs example data"
    )
    p.add_argument("--busy-threads", type=int, default=os.cpu_count() or 2)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="path prefix of the .md and .json (default benchmarks/results/analyses; "
        "--quick: $TMPDIR/xsvd-analyses-quick)",
    )
    p.add_argument(
        "--render",
        type=Path,
        default=None,
        help="only write the report again from this JSON of an earlier run (to --out, "
        "default: next to it)",
    )
    p.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="also put this run's rows into the JSON of an earlier run (replacing its rows of "
        "the same analysis, data and load; the report says which rows came from which run) "
        "and write that report again",
    )
    args = p.parse_args(argv)
    if args.render is not None:
        return render(args.render, args.out)
    args.analyses = [a.strip() for a in args.analyses.split(",") if a.strip()]
    unknown = set(args.analyses) - set(ANALYSES)
    if unknown:
        p.error(f"unknown analyses {sorted(unknown)}; choose from {', '.join(ANALYSES)}")
    if args.quick:
        args.shape, args.repeat, args.repeat_large = "120x18x36", 1, 1
        args.replicates, args.replicates_large = 5, 3
    warmup = not args.quick
    if args.out is None:
        args.out = (
            Path(tempfile.gettempdir()) / "xsvd-analyses-quick"
            if args.quick
            else HERE / "results" / "analyses"
        )
    shape = tuple(int(v) for v in args.shape.lower().split("x"))
    t_start = time.perf_counter()

    def log(msg):
        print(msg, flush=True)

    source = Path(xsvd.__file__).resolve().parents[1]
    machine = machine_info(source)  # the git commit of the source timed
    machine["xsvd_source"] = str(source)
    machine["pythonpath"] = os.environ.get("PYTHONPATH", "")
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}
    config.update(out=str(args.out), merge=args.merge and str(args.merge))
    config["signatures"] = signatures()
    log(f"xsvd {xsvd.__file__}; signatures: {config['signatures']}")
    rows: list[Row] = []
    datasets: list[Data] = []
    refs: list[Reference] = []

    small = example_data() if args.small else None
    if small is not None:
        datasets.append(small)
        ref = Reference(small, args.k, log)
        refs.append(ref)
    todo = cases(small, ref, args, args.replicates) if small is not None else []
    for case in todo:
        log(f"{case.analysis} [{small.label}, quiet]")
        rows.append(measure(case, "quiet", args.repeat, warmup, args.cap, log, 1.0))
    if args.busy and todo:
        with busy_processes(1, args.busy_threads):
            for case in todo:
                log(f"{case.analysis} [{small.label}, busy]")
                rows.append(measure(case, "busy", args.repeat, warmup, args.cap, log, 1.0))

    if args.large:
        log(f"making the {args.shape} fields ...")
        big = synthetic_data(shape, args.modes)
        datasets.append(big)
        ref = Reference(big, args.k, log)
        refs.append(ref)
        for case in cases(big, ref, args, args.replicates_large):
            log(f"{case.analysis} [{big.label}]")
            rows.append(measure(case, "quiet", args.repeat_large, False, args.cap, log, 3.0))
            gc.collect()
        del big
    wall = time.perf_counter() - t_start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    ref_seconds = {f"{r.data.label}, {name}": sec for r in refs for name, sec in r.seconds.items()}
    data_lines = [d.describe for d in datasets]
    tab = report(args.out, machine, config, rows, data_lines, ref_seconds, wall)
    print()
    print(tab)
    print(
        f"\nwritten: {args.out.with_suffix('.md')}, {args.out.with_suffix('.json')} "
        f"({wall / 60:.1f} min)"
    )
    if args.merge is not None:
        merge(args.merge, args.out.with_suffix(".json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
