"""Matrix-free compressed SVD: a linear operator given only by its products.

``A`` (m x n) is known through two callables::

    matmat(W)  -> A @ W      (W: n x l)
    rmatmat(T) -> A.T @ T    (T: m x l)

that may read data (for Dask data they return computed, small arrays: the
caller decides what one call reads). One *pass* is one ``matmat`` and one
``rmatmat``: ``Y_j = A W_j`` and ``Z_j = A^T Y_j``, a block of the Krylov
space of ``A^T A`` (block Lanczos with full reorthogonalization, as the
main solver, :mod:`.solver`, with ``krylov=True``). The Ritz triplets of the
span of every pass's basis, their error estimates (``errors``: the singular
value's error, the vectors' angle, the relative residual, the same
estimates as the main solver's) and the ``W``-side singular vectors come
from the small matrices alone (:func:`.small.krylov_finish`); the ``Y``-side
vectors ``A W X / s`` from the sketches ``Y_j`` kept (when they take at most
``xsvd.set_options(krylov_sketch_bytes=...)``), else from one more
``matmat``. Every small step is in float64.

The basis side is the shorter side of ``A`` (``A`` is worked on transposed
when ``m < n``): the Krylov space fills it sooner and its factorizations are
smaller. Used by :func:`xsvd.mca` (``A`` the cross-covariance of two fields)
and the extended EOF (``A`` the time-embedded data), which never form ``A``.

References
----------
Halko, Martinsson & Tropp (2011), "Finding structure with randomness",
SIAM Review 53(2); Musco & Musco (2015), "Randomized block Krylov methods
for stronger and faster approximate singular value decomposition", NeurIPS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...options import OPTIONS
from .. import backend
from ..options import (
    DEFAULT_MAX_PASSES,
    DEFAULT_N_OVERSAMPLES,
    DEFAULT_N_POWER_ITER,
    DEFAULT_TOL,
)
from .small import (
    estimates_are_bounds,
    hstack,
    krylov_finish,
    orth,
    orth_against,
    thin_errors,
)

__all__ = ["OperatorSVD", "operator_svd"]


@dataclass(frozen=True)
class OperatorSVD:
    """The rank-``k`` SVD ``A ~ U diag(S) V^T`` of an operator, in float64.

    ``errors`` (k x 3): per component the estimated error of ``S``, the angle
    (radians) of the singular vectors and the relative residual; upper
    bounds when ``bounds`` (see :func:`.small.estimates_are_bounds`).
    ``passes``: the passes made (``matmat`` + ``rmatmat``); ``reads``: the
    calls of ``matmat`` (``passes``, or one more for ``U``).
    """

    U: np.ndarray
    S: np.ndarray
    V: np.ndarray
    errors: np.ndarray
    passes: int
    reads: int
    bounds: bool


def operator_svd(
    matmat: Callable,
    rmatmat: Callable,
    shape: tuple[int, int],
    k: int,
    *,
    n_oversamples: int | None = None,
    n_power_iter: int | None = None,
    tol: float | None = None,
    max_passes: int | None = None,
    seed: int | None = 0,
    dtype=np.float64,
) -> OperatorSVD:
    """Rank-``k`` SVD of the ``m x n`` operator ``A`` given by ``matmat`` and ``rmatmat``.

    Parameters
    ----------
    matmat, rmatmat : callable
        ``matmat(W)`` returns ``A @ W`` (m x l) for an n x l float64 ``W``;
        ``rmatmat(T)`` returns ``A.T @ T`` (n x l) for an m x l ``T``. In-memory
        arrays (NumPy, or CuPy moved to the host), any float dtype.
    shape : (int, int)
        ``(m, n)``.
    k : int
        Components, ``1 <= k <= min(m, n)``.
    n_oversamples : int, optional
        Extra columns of each block (default 10; at least 10 for the error
        estimates to be bounds).
    n_power_iter : int, optional
        A fixed number of passes, ``n_power_iter + 1``.
    tol, max_passes : float, int, optional
        Pass until every component's estimated relative error (singular value
        and residual) is below ``tol``, at most ``max_passes`` times (default
        20). With neither ``n_power_iter`` nor ``tol``: ``tol=1e-6`` and at
        most ``DEFAULT_N_POWER_ITER + 1`` (8) passes.
    seed : int or None
        Seed of the Gaussian start block.
    dtype : numpy dtype
        The precision of the products (their rounding enters the estimates).

    Returns
    -------
    OperatorSVD

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((60, 40))
    >>> res = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, n_power_iter=6)
    >>> bool(np.allclose(res.S, np.linalg.svd(a, compute_uv=False)[:3]))
    True
    """
    m, n = (int(s) for s in shape)
    if not isinstance(k, int | np.integer) or not 1 <= k <= min(m, n):
        raise ValueError(
            f"k must be an integer between 1 and {min(m, n)} for a {m} x {n} operator."
        )
    p = DEFAULT_N_OVERSAMPLES if n_oversamples is None else int(n_oversamples)
    if p < 0:
        raise ValueError(f"n_oversamples must be >= 0, got {n_oversamples!r}.")
    most, tol = _stopping(n_power_iter, tol, max_passes)
    if m < n:  # work on A^T: the basis on the shorter side
        V, S, U, errors, counts = _run(rmatmat, matmat, (n, m), int(k), p, most, tol, seed, dtype)
    else:
        U, S, V, errors, counts = _run(matmat, rmatmat, (m, n), int(k), p, most, tol, seed, dtype)
    # xsvd's sign rule: the largest-magnitude entry of each V column is positive
    sign = np.where((V.max(axis=0) + V.min(axis=0)) >= 0, 1.0, -1.0)
    return OperatorSVD(U * sign, S, V * sign, errors, *counts)


def _stopping(n_power_iter, tol, max_passes) -> tuple[int, float | None]:
    """The most passes and the tolerance (None: a fixed number of passes)."""
    if n_power_iter is not None:
        if tol is not None or max_passes is not None:
            raise ValueError("Pass either n_power_iter (fixed passes) or tol (and max_passes).")
        if not isinstance(n_power_iter, int | np.integer) or n_power_iter < 0:
            raise ValueError(f"n_power_iter must be an integer >= 0, got {n_power_iter!r}.")
        return int(n_power_iter) + 1, None
    if tol is None:
        if max_passes is not None:
            raise ValueError("max_passes bounds the passes that tol asks for: pass tol too.")
        return DEFAULT_N_POWER_ITER + 1, DEFAULT_TOL
    if not 0 < tol < 1:
        raise ValueError(f"tol must be a number between 0 and 1, e.g. 1e-6, got {tol!r}.")
    most = DEFAULT_MAX_PASSES if max_passes is None else int(max_passes)
    if most < 1:
        raise ValueError(f"max_passes must be >= 1, got {max_passes!r}.")
    return most, float(tol)


def _run(matmat, rmatmat, shape, k, p, most, tol, seed, dtype):
    """The passes on ``A`` (m x n, ``m >= n``), bases (n x l) on the thin side: ``(U, S, V,
    errors, (passes, reads, bounds))``."""
    m, n = shape
    width = min(k + p, n)
    keep = most * m * width * 8 <= OPTIONS["krylov_sketch_bytes"]
    basis = orth(backend.standard_normal(np, seed, (n, width), np.float64))
    bases, crosses, sketches = [], [], []
    while True:
        Y = _float64(matmat(basis), (m, basis.shape[1]), "matmat")
        Z = _float64(rmatmat(Y), (n, basis.shape[1]), "rmatmat")
        bases.append(basis)
        crosses.append(Z)
        if keep:
            sketches.append(Y)
        room = _room(m, n, width, len(bases))
        if len(bases) >= most or room == 0 or _converged(bases, crosses, k, tol, dtype):
            break
        basis = orth_against(Z, bases, room)
    passes = len(bases)
    if passes == 1 and width < n:  # the Ritz pairs of a random basis: nothing bounds them
        return _single(Y, basis, k)
    gram = None
    if keep:
        K = hstack(sketches)
        gram = K.T @ K
    rotation, V, S, errors = krylov_finish(gram, bases, crosses, k, dtype)
    if keep:
        U, reads = K @ rotation, passes
    else:  # one more product: U = A V / S
        U = _float64(matmat(V), (m, k), "matmat") * _inverse(S)
        reads = passes + 1
    bounds = estimates_are_bounds(True, p, passes - 1)
    return U, S, V, np.asarray(errors), (passes, reads, bounds)


def _single(Y, basis, k: int):
    """One pass: Rayleigh-Ritz on the start basis (``U`` from ``Y``), unknown errors."""
    u, S, vt = np.linalg.svd(Y, full_matrices=False)  # A (W vt^T) = u diag(S)
    U, S, V = u[:, :k], S[:k], basis @ vt[:k].T
    return U, S, V, np.tile([np.inf, np.pi / 2, np.inf], (k, 1)), (1, 1, True)


def _room(m: int, n: int, width: int, blocks: int) -> int:
    """Columns of the next Krylov block: ``width``, or what is left of the thin side (the
    blocks after the first lie in the range of ``A^T``, of dimension <= min(m, n))."""
    space = min(n, width + min(m, n))
    return max(0, min(width, space - blocks * width))


def _converged(bases, crosses, k: int, tol, dtype) -> bool:
    """``tol``: every component's relative S error and residual below it."""
    if tol is None or len(bases) < 2:  # the first (random) basis says nothing yet
        return False
    errors, S = thin_errors(bases, crosses, k, dtype)
    errors, S = backend.to_numpy(errors), backend.to_numpy(S)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(S > 0, errors[:, 0] / S, np.inf)
    return bool(np.maximum(rel, errors[:, 2]).max() <= tol)


def _float64(x, shape, name: str):
    """A product as a float64 NumPy array (CuPy results are moved to the host)."""
    x = backend.to_numpy(x)
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} returned shape {tuple(x.shape)}, expected {tuple(shape)}.")
    return x.astype(np.float64, copy=False)


def _inverse(S):
    return np.where(S > 0, 1 / np.where(S > 0, S, 1), 0)
