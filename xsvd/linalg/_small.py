"""The small dense steps of the compressed SVD (symbols: see ``randomized``).

Everything here works on ``l``-column matrices (or ``(q + 1) l`` with
``krylov``), in float64, after the data have been read: the orthonormal basis
for the next pass, the final rank-``k`` factorization, and the singular
vectors of the stripe side.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _backend
from ._common import eps_tolerance


def orth(Z):
    """Orthonormal basis of the iterate ``Z`` (Householder QR, float64): the next ``W``."""
    q, _ = _backend.namespace(Z).linalg.qr(Z)
    return q


def finalize(cross, gram, k: int, dtype):
    """Rank-``k`` SVD of ``Q^T C`` from ``G = Y^T Y`` (``gram``) and ``Z = C^T Y`` (``cross``).

    With ``G = V_y diag(s^2) V_y^T`` and ``Q = Y V_y diag(1/s)``, ``Q^T C =
    diag(1/s) V_y^T Z^T``: its SVD gives the singular values and the thin-side
    singular vectors. Directions of ``Y`` with ``s_j < sqrt(eps) s_1`` are
    numerical noise and are dropped.

    Returns ``(rotation, thin, S)``: ``rotation`` (l x k) maps the stripe-side
    sketch ``Y`` to singular vectors (``U = Y rotation`` over stripes of
    samples), ``thin`` the thin-side singular vectors (thin length x k) and
    ``S`` the singular values.
    """
    xp = _backend.namespace(cross)
    evals, evecs = xp.linalg.eigh(gram)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    s = xp.sqrt(xp.clip(evals, 0, None))
    keep = s > eps_tolerance(dtype) * s[0] if float(s[0]) > 0 else s > 0
    r = int(keep.sum())
    T = evecs[:, :r] / s[:r]
    Ut, sig, Vt = xp.linalg.svd((cross @ T).T, full_matrices=False)
    kk = min(k, r)
    rotation = T @ Ut[:, :kk]
    thin = Vt[:kk].T
    sig = sig[:kk]
    if kk < k:
        warnings.warn(
            f"The data have numerical rank {kk} < k={k}: the last {k - kk} components are zero.",
            RuntimeWarning,
            stacklevel=2,
        )
        rotation = xp.concatenate([rotation, xp.zeros((rotation.shape[0], k - kk))], axis=1)
        thin = xp.concatenate([thin, xp.zeros((thin.shape[0], k - kk))], axis=1)
        sig = xp.concatenate([sig, xp.zeros(k - kk)])
    return rotation, thin, sig


def stripe_vectors(Y, mean_row, rotation):
    """One stripe's singular vectors: ``(Y_i - 1 c^T) rotation`` in float64."""
    Y = Y.astype(np.float64)
    if mean_row is not None:
        Y = Y - mean_row[None, :]
    return Y @ rotation


def krylov_basis(blocks_per_pass, mean_rows):
    """``K = [Y_0 - c_0, ..., Y_q - c_q]`` (float64, every stripe) and its Gram matrix ``K^T K``."""
    xp = _backend.namespace(blocks_per_pass[0][0])
    parts = []
    for blocks, c in zip(blocks_per_pass, mean_rows, strict=True):
        y = xp.concatenate([b.astype(np.float64) for b in blocks], axis=0)
        parts.append(y if c is None else y - c[None, :])
    K = xp.concatenate(parts, axis=1)
    return K, K.T @ K


def hstack(parts):
    return _backend.namespace(parts[0]).concatenate(parts, axis=1)


def matmul(a, b):
    return a @ b
