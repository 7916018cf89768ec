"""Online augmentation, decomposition and Procrustes (OADP): projected scores without shrinkage.

The arithmetic behind ``project_samples(..., method="oadp")`` (Zhang, Dey &
Lee 2020, FRAPOSA), on plain arrays:

- :func:`cross_products`: one pass over the new samples' genotypes (NumPy,
  CuPy, packed, any array-API library's device, or Dask chunks of these;
  each chunk read once for all the new samples) gives, per new sample ``y``
  (centered and weighted as the reference was), ``V y`` (its products with
  the reference's ``K`` principal axes) and ``|y|**2``, on the data's device.
- :func:`oadp_scores`: from those ``K + 1`` numbers and the reference's
  ``U`` and ``S``, the PCA of the reference augmented with the sample, and
  the Procrustes map of the augmented reference scores onto the original
  ones, applied to the sample's augmented score. These small batched
  factorizations run in NumPy on the host: the ``K + 1`` numbers per sample
  go there in one counted move, and the ``k`` scores per sample come back.

Why it works, and why it is cheap: the reference (``n`` samples) is
``U diag(S) V`` (its top ``K`` components); with a new sample ``y`` the
augmented matrix ``[U S V; y]`` is ``[[U, 0], [0, 1]] Q [V; h]`` with ``h``
the unit vector along ``y - V^T V y`` and ``Q = [[diag(S), 0], [(V y)^T,
r]]``, ``r = |y - V^T V y|`` (Brand 2002, as FRAPOSA's ``svd_online``). The
SVD of the ``(K+1) x (K+1)`` matrix ``Q`` gives the augmented PCA: its
sample scores are ``[[U, 0], [0, 1]]`` times ``Q``'s left singular vectors
and singular values. The Procrustes fit (rotation, scale, shift, in
FRAPOSA's iteration for more augmented than reference dimensions) of the
augmented reference scores onto ``U diag(S)`` only involves ``U`` through
``U^T U``, ``U``'s column means and ``n``, so it runs in ``K`` dimensions
too: the work per new sample does not grow with the reference size.

Pure arrays: no xarray here.
"""

from __future__ import annotations

import numpy as np

from ..core import backend
from ..core.missing import GENOTYPES

__all__ = ["cross_products", "oadp_scores", "reference_geometry"]

#: float64 elements of one sub-block of genotypes turned into numbers at a time (32 MiB)
_SUB_ELEMENTS = 1 << 22
#: new samples whose small factorizations are stacked into one batch
_BATCH = 2048
#: FRAPOSA's convergence test of the Procrustes iteration, and its cap on iterations
_EPSILON, _MAX_ITER = 1e-6, 10_000


def cross_products(x, mean, weights, V):
    """``[V y, |y|**2]`` for every new sample ``y`` (a column of ``x``), in one pass.

    Parameters
    ----------
    x : array (p, m)
        Allele counts of ``m`` new samples at the reference's ``p`` variants
        (NumPy, CuPy, packed, or a Dask array of them); NaN or negative
        values are missing calls, which stand for the reference mean (they
        add nothing).
    mean, weights : arrays (p,)
        The reference's centering and weights (``weights`` None: ones), on
        the host or on the device of ``x`` (its chunks', for Dask); NaN in
        ``mean`` marks variants with no reference value (left out).
    V : array (p, K)
        The reference's principal axes, on the host or that device.

    Returns
    -------
    array (m, K + 1), float64
        Columns ``0..K-1``: ``V^T y``; column ``K``: ``|y|**2``, on the
        device of ``x``. Lazy (Dask) for Dask ``x``, one block per chunk of
        samples.
    """
    K = V.shape[1]
    like = backend.chunk_type(x)  # where the data (or their chunks) are: the vectors go there
    mean, V = (backend.astype(backend.transfer(a, like=like), np.float64) for a in (mean, V))
    xp = backend.api(V)
    weights = xp.ones_like(mean) if weights is None else weights
    weights = backend.astype(backend.transfer(weights, like=like), np.float64)
    usable = xp.isfinite(mean) & xp.isfinite(weights) & xp.all(xp.isfinite(V), axis=1)
    mean = xp.where(usable, mean, 0.0)
    weights = xp.where(usable, weights, 0.0)  # a weight of 0: the variant adds nothing
    V = xp.where(usable[:, None], V, 0.0)
    if not backend.is_dask(x):
        return _block_products(x, mean, weights, V)[0, ...]
    import dask.array as da

    rows = x.chunks[0]
    meta = backend.namespace(x).empty((0, 0, 0), dtype=np.float64)
    parts = da.blockwise(
        _block_products,
        "ijc",
        x,
        "ij",
        da.from_array(mean, chunks=(rows,)),
        "i",
        da.from_array(weights, chunks=(rows,)),
        "i",
        da.from_array(V, chunks=(rows, K)),
        "ik",
        new_axes={"c": K + 1},
        adjust_chunks={"i": 1},
        concatenate=True,
        dtype=np.float64,
        meta=meta,
    )
    return parts.sum(axis=0)


def _block_products(x, mean, weights, V):
    """``(1, m, K + 1)`` partial sums of :func:`cross_products` over a block of variants,
    on the block's device (through the array API)."""
    xp = backend.api(x)
    rows, m = x.shape
    K = V.shape[1]
    mean, weights, V = (
        backend.astype(backend.transfer(a, like=x), np.float64, copy=False)
        for a in (mean, weights, V)
    )
    products = xp.zeros((m, K), dtype=xp.float64, device=backend.device(x))
    squares = xp.zeros((m,), dtype=xp.float64, device=backend.device(x))
    step = max(1, _SUB_ELEMENTS // max(m, 1))
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        if backend.is_packed(x):
            v = x.block((r0, r1), (0, m), dtype=np.float64)
        else:
            v = backend.astype(x[r0:r1, :], np.float64, copy=False)
        y = (v - mean[r0:r1, None]) * weights[r0:r1, None]
        y = xp.where(GENOTYPES.mask(xp, v), 0.0, y)  # a missing call: the reference mean
        products = products + y.T @ V[r0:r1, :]
        squares = squares + xp.sum(y * y, axis=0)
    return xp.concat([products, squares[:, None]], axis=1)[None, ...]


def reference_geometry(U) -> tuple:
    """What the Procrustes fit needs of the reference's ``U`` (n, K): ``(n, U^T U, means)``,
    computed where ``U`` lives; the ``K x K`` and ``K`` numbers come to the host (NumPy)."""
    (U,) = backend.compute(U)
    U = backend.astype(U, np.float64, copy=False)
    H, means = U.T @ U, backend.api(U).mean(U, axis=0)
    return U.shape[0], backend.to_numpy(H), backend.to_numpy(means)


def oadp_scores(products, S, geometry, k: int, k_augmented: int):
    """OADP scores ``(m, k)`` of new samples, on the scale of the reference's ``U``.

    Parameters
    ----------
    products : array (m, K + 1)
        :func:`cross_products` of the new samples (on any device: the scores
        come back on it; a Dask array gives a lazy result, block by block of
        samples).
    S : NumPy array (K,)
        The reference's singular values.
    geometry : tuple
        :func:`reference_geometry` of the reference's ``U``.
    k : int
        Reference components to return (FRAPOSA's ``dim_ref``).
    k_augmented : int
        Components of each augmented PCA fitted onto them
        (``k <= k_augmented <= K``; FRAPOSA's ``dim_stu``).
    """
    S = np.asarray(S, dtype=np.float64)
    if backend.is_dask(products):
        return products.map_blocks(
            _scores_block,
            S,
            geometry,
            k,
            k_augmented,
            chunks=(products.chunks[0], (k,)),
            dtype=np.float64,
            meta=backend.namespace(products).empty((0, 0), dtype=np.float64),
        )
    return _scores_block(products, S, geometry, k, k_augmented)


def _scores_block(products, S, geometry, k, k_augmented):
    """The scores of a block of samples, on the device of their ``products``: the small
    factorizations run in NumPy (one counted move there and one back)."""
    host = backend.to_numpy(products)
    out = np.empty((host.shape[0], k))
    for a in range(0, host.shape[0], _BATCH):
        b = min(a + _BATCH, host.shape[0])
        out[a:b] = _augment_and_fit(host[a:b], S, geometry, k, k_augmented)
    return backend.transfer(out / S[:k], like=products)


def _augment_and_fit(products, S, geometry, k, k2):
    """FRAPOSA's ``oadp`` for a batch of samples, in the reference's ``K`` dimensions."""
    n, H, ubar = geometry
    m, K = products.shape[0], S.size
    L, q = products[:, :K], products[:, K]
    r = np.sqrt(np.maximum(q - (L * L).sum(axis=1), 0.0))  # |y| off the reference's axes
    # the augmented matrix is [[U, 0], [0, 1]] Q [V; h]: its PCA is Q's SVD
    Q = np.zeros((m, K + 1, K + 1))
    diag = np.arange(K)
    Q[:, diag, diag] = S
    Q[:, K, :K] = L
    Q[:, K, K] = r
    P, sigma, _ = np.linalg.svd(Q)
    X = P[:, :K, :k2] * sigma[:, None, :k2]  # augmented reference scores = U @ X
    x_new = P[:, K, :k2] * sigma[:, :k2]  # the new sample's augmented score
    Y = np.zeros((K, k))  # the reference scores U diag(S) = U @ Y
    Y[diag[:k], diag[:k]] = S[:k]
    rot, rho, shift = _procrustes_fit(X, Y, n, H, ubar, k)
    return (np.einsum("mi,mij->mj", x_new, rot) * rho[:, None] + shift)[:, :k]


def _procrustes_fit(X, Y, n, H, ubar, k):
    """FRAPOSA's ``procrustes_diffdim`` of ``U @ X`` onto ``U @ Y`` (padded), per sample.

    A matrix of the reference's samples is held as ``U @ A + 1 b`` (``A``:
    ``K`` rows, ``b``: a shift per column): centering it leaves ``Uc @ A``
    with ``Uc^T Uc = G = H - n ubar ubar^T``, so every inner product the
    fit takes is a ``K``-dimensional one. ``Y`` is padded with columns
    ``Z`` that follow the fitted ``X`` until they settle (relative change
    below ``1e-6``, as FRAPOSA).
    """
    m, K, k2 = X.shape
    G = H - n * np.outer(ubar, ubar)
    X_mean = np.einsum("i,mij->mj", ubar, X)
    GX = G @ X
    trXX = np.einsum("mij,mij->m", X, GX)
    AZ = np.zeros((m, K, k2 - k))
    bZ = np.zeros((m, k2 - k))
    rot, rho, shift = np.zeros((m, k2, k2)), np.zeros(m), np.zeros((m, k2))
    active = np.arange(m)
    for _ in range(_MAX_ITER):
        W = np.concatenate([np.broadcast_to(Y, (active.size, K, k)), AZ[active]], axis=2)
        W_mean = np.einsum("i,mij->mj", ubar, W)
        W_mean[:, k:] += bZ[active]
        u, s, vt = np.linalg.svd(np.swapaxes(W, 1, 2) @ GX[active])
        R = np.swapaxes(vt, 1, 2) @ np.swapaxes(u, 1, 2)
        scale = s.sum(axis=1) / np.where(trXX[active] > 0, trXX[active], 1.0)
        c = W_mean - scale[:, None] * np.einsum("mi,mij->mj", X_mean[active], R)
        rot[active], rho[active], shift[active] = R, scale, c
        if k2 == k:
            break
        fitted = scale[:, None, None] * (X[active] @ R)
        AZn, bZn = fitted[:, :, k:], c[:, k:]
        D, db = AZn - AZ[active], bZn - bZ[active]
        change = (
            np.einsum("mij,ik,mkj->m", D, H, D)
            + 2 * n * np.einsum("i,mij,mj->m", ubar, D, db)
            + n * (db * db).sum(axis=1)
        )
        size = np.einsum("mij,ik,mkj->m", AZn, G, AZn)
        AZ[active], bZ[active] = AZn, bZn
        active = active[~(change < _EPSILON * size)]
        if active.size == 0:
            break
    return rot, rho, shift
