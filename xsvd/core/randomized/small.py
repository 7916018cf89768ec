"""The small dense steps of the compressed SVD (symbols: see ``randomized``).

Everything here works on ``l``-column matrices (or ``(q + 1) l`` with
``krylov``), in float64, after the data have been read: the orthonormal basis
for the next pass, the final rank-``k`` factorization, and the singular
vectors of the stripe side.

The entry points (``@small_step``) run on one BLAS thread when their
matrices are small (:mod:`..blas`): a multi-threaded BLAS gains nothing
there and oversubscribes a loaded machine. The per-stripe products
(:func:`stripe_vectors`, :func:`krylov_gram`, ...) are data-sized and keep
every thread.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import backend
from ..blas import one_blas_thread, small_step
from ..common import eps_tolerance
from .magnitude import times_power_of_two


@small_step
def orth(Z):
    """Orthonormal basis of the iterate ``Z`` (Householder QR, float64): the next ``W``."""
    q, _ = backend.api(Z).linalg.qr(Z)
    return q


@small_step
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
    xp = backend.api(cross)
    evals, evecs = xp.linalg.eigh(gram)
    evals, evecs = xp.flip(evals, axis=0), xp.flip(evecs, axis=1)
    s = xp.sqrt(xp.clip(evals, 0.0, None))
    host = backend.to_numpy(s)  # l values: how many directions to keep
    keep = host > eps_tolerance(dtype) * host[0] if host[0] > 0 else host > 0
    r = int(keep.sum())
    T = evecs[:, :r] / s[:r]
    Ut, sig, Vt = xp.linalg.svd((cross @ T).T, full_matrices=False)
    kk = min(k, r)
    rotation = T @ Ut[:, :kk]
    thin = Vt[:kk, :].T
    sig = sig[:kk]
    if kk < k:
        warn_rank(kk, k)
        rotation, thin = _zero_columns(rotation, k - kk), _zero_columns(thin, k - kk)
        sig = _zero_columns(sig, k - kk)
    return rotation, thin, sig


def _zero_columns(x, count: int):
    """``x`` (a vector or a matrix) with ``count`` zeros (columns) after it."""
    xp = backend.api(x)
    shape = (count,) if x.ndim == 1 else (x.shape[0], count)
    zeros = xp.zeros(shape, dtype=x.dtype, device=backend.device(x))
    return xp.concat([x, zeros], axis=x.ndim - 1)


def warn_rank(r: int, k: int, stacklevel: int = 3) -> None:
    """The warning that the last ``k - r`` components are zero."""
    warnings.warn(
        f"The data have numerical rank {r} < k={k}: the last {k - r} components are zero.",
        RuntimeWarning,
        stacklevel=stacklevel,
    )


def noise_level(dtype) -> float:
    """Eigenvalues (squared singular values) below this times the largest are rounding
    noise: of the products (``dtype``) or of the float64 small math."""
    return max(float(np.finfo(dtype).eps), ROUNDING * _EPS64)


def stripe_vectors(Y, mean_row, rotation):
    """One stripe's singular vectors: ``(Y_i - 1 c^T) rotation`` in float64."""
    xp = backend.api(Y)
    Y = xp.astype(Y, xp.float64)
    if mean_row is not None:
        Y = Y - mean_row[None, :]
    return Y @ rotation


@small_step
def reread_basis(bases: list, rotation, S):
    """``[W_0, ..., W_q] X``: the thin-side Ritz vectors with unit columns (``rotation`` is
    ``X / S``), to multiply the data with once more (``Problem.reread``)."""
    return hstack(bases) @ (rotation * S)


def reread_vectors(Y, mean_row, S):
    """One stripe's singular vectors from ``Y_i = C_i W X``: ``Y_i / S`` in float64 (0 where
    ``S`` is 0)."""
    xp = backend.api(S)
    Y = xp.astype(Y, xp.float64)
    if mean_row is not None:
        Y = Y - mean_row[None, :]
    return Y * xp.where(S > 0, 1 / xp.where(S > 0, S, 1.0), 0.0)


def _krylov_rows(blocks, mean_rows):
    """One stripe's rows of ``K = [Y_0 - 1 c_0^T, ..., Y_q - 1 c_q^T]`` in float64."""
    xp = backend.api(blocks[0])
    parts = []
    for y, c in zip(blocks, mean_rows, strict=True):
        y = xp.astype(y, xp.float64)
        parts.append(y if c is None else y - c[None, :])
    return xp.concat(parts, axis=1)


def krylov_gram(*args):
    """``krylov_gram(Y_0i, ..., Y_qi, mean_rows)``: one stripe's share ``K_i^T K_i``."""
    K = _krylov_rows(args[:-1], args[-1])
    return K.T @ K


def krylov_vectors(*args):
    """``krylov_vectors(Y_0i, ..., Y_qi, mean_rows, rotation)``: one stripe's ``K_i rotation``."""
    return _krylov_rows(args[:-2], args[-2]) @ args[-1]


def hstack(parts):
    return backend.api(parts[0]).concat(parts, axis=1)


def krylov_room(length: int, rank: int, width: int, used: int) -> int:
    """Columns of the next Krylov block of a basis of ``length`` rows, ``used`` columns so
    far: ``width``, or what is left to explore. Every block after the first (random) one
    lies in the range of the matrix, of dimension at most ``rank``: the space is full at
    ``width + rank`` columns, or at ``length``."""
    return max(0, min(width, min(length, width + rank) - used))


@small_step
def orth_against(Z, previous: list, width: int | None = None):
    """Orthonormal basis of the part of ``Z`` orthogonal to the ``previous`` blocks.

    ``width``: at most this many columns (the dimensions left in the thin
    space, when the Krylov space is about to fill it): the dominant
    directions of that part.

    The next block of a block Lanczos process (block Krylov with full
    reorthogonalization): every block is orthogonal to all before it, so the
    Krylov basis stays well conditioned however many passes are made.
    Classical Gram-Schmidt twice, then the SVD of what is left; where less
    than a block is left (the Krylov space became invariant: data of low
    rank), seeded random directions orthogonal to the space fill the block,
    so that the basis stays orthonormal and the next pass explores the rest
    (any orthonormal basis gives valid Ritz pairs).
    """
    xp = backend.api(Z)
    V = xp.concat(previous, axis=1)
    Z = xp.where(xp.isfinite(Z), Z, 0.0)  # a first pass out of range (read again, rescaled)
    given = Z
    top = xp.max(xp.abs(Z)) if Z.size else xp.zeros((), dtype=Z.dtype, device=backend.device(Z))
    with np.errstate(over="ignore", invalid="ignore"):
        norm = xp.linalg.matrix_norm(Z) if Z.size else top
    for _ in range(2):
        Z = Z - V @ (V.T @ Z)
    width = Z.shape[1] if width is None else min(width, Z.shape[1])
    q, s, _ = xp.linalg.svd(Z, full_matrices=False)
    # to the host at once: the norm (and its largest entry) and the singular values
    host = backend.to_numpy(xp.concat([xp.stack([norm, top]), s]))
    scale, top, s_h = float(host[0]), float(host[1]), host[2:]
    if not np.isfinite(scale):  # its square beyond float64 (data near 1e80): in two steps
        scale = top * backend.to_scalar(xp.linalg.matrix_norm(given / top))
    found = int((s_h > _EPS64 * Z.shape[0] * max(scale, _TINY)).sum())
    if found < width:  # the Krylov space is invariant: go on from new (seeded) directions
        fresh = np.random.default_rng(V.shape[1]).standard_normal((Z.shape[0], width - found))
        fresh = backend.on_backend_of(fresh, Z)
        for _ in range(2):
            fresh = fresh - V @ (V.T @ fresh)
        q = xp.concat([q[:, :found], fresh], axis=1)
    q = q[:, :width]
    for _ in range(2):
        q = q - V @ (V.T @ q)
        q, _ = xp.linalg.qr(q)
    return q


#: Rounding of the products, in units of the product dtype's eps times the largest
#: eigenvalue: in the singular values (through the thin-side Ritz values) and in the
#: vectors and residuals; of the float64 small math, in units of float64's eps.
ROUNDING = 50.0
#: Rounding of products narrower than float64 (float32) in the singular values of the
#: final Gram matrix of the sketches, in units of eps times ``s_1`` (added to the estimate
#: of the error of every ``s_j``). The sweep of ``benchmarks/float32_floor.py`` (float32
#: and uint8 data, offsets up to 1e6 times the spread, both stripe orientations, 240 x 30
#: to 4,000 x 40,000; ``benchmarks/results/float32-floor.md``) needed at most 2.07
#: (uint8 genotypes) to keep every estimate above the true error; the median rounding
#: error was 0.054 eps s_1, so that the estimates are about 75x the typical error (the
#: floor ``ROUNDING eps s_1^2 / (2 s_j)`` before: at least 25 eps s_1, 500x).
PRODUCT_ROUNDING = 4.0
ANGLE_ROUNDING = 5.0
_EPS64 = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


def ritz(V, Z, gram=None):
    """Rayleigh-Ritz of ``M = C^T C`` on the span of the orthonormal ``V``, with ``Z = M V``.

    ``gram``: the same matrix ``V^T M V`` as the Gram matrix ``K^T K`` of the
    sketches ``K = C V`` (so that ``K x / s`` are orthonormal to rounding);
    from ``V^T Z`` when not given. Returns the Ritz values (descending,
    clipped at 0) and their vectors' coordinates ``X``.
    """
    xp = backend.api(Z)
    H = V.T @ Z if gram is None else gram
    with one_blas_thread():  # (passes x width)^2: hundreds; all threads beside a busy
        lam, X = xp.linalg.eigh((H + H.T) / 2)  # process took 20x longer (576: 8.7 s vs 0.37)
    return xp.clip(xp.flip(lam, axis=0), 0.0, None), xp.flip(X, axis=1)


def ritz_errors(V, Z, lam, X, k: int, dtype, block: int | None = None, gram: bool = False):
    """Estimated errors of the ``k`` leading Ritz triplets, exact residuals and bounds.

    With ``rho_j = ||M x_j - lam_j x_j||`` (``x_j = V X_j``; computed exactly
    from ``Z``, no read of the data), for the singular triplet ``s_j =
    sqrt(lam_j)``, ``v_j = x_j``, ``u_j = C x_j / s_j``:

    - eigenvalue error, Kato-Temple with the next eigenvalue below taken as at
      most ``lam_{j+1} + rho_{j+1}``: ``min(rho_j, rho_j**2 / gap_j)``, and at
      least the rounding of the products (``ROUNDING eps lam_1``); the singular
      value's error is that over ``2 s_j``. With ``gram`` (the Ritz values are
      those of the Gram matrix of the sketches ``K = C V``, in float64, from
      products in a narrower ``dtype``): at least the rounding of the float64
      small math (``ROUNDING eps64 lam_1``), plus the rounding of the products,
      ``PRODUCT_ROUNDING eps s_1`` in the singular value (:func:`product_rounding`);
    - angle of the singular vectors, Davis-Kahan: ``arcsin(min(1, rho_j / g_j))``
      with ``g_j`` the gap to the neighbouring eigenvalues;
    - relative residual ``rho_j / lam_j``, which is ``||C^T u_j - s_j v_j|| / s_j``.

    The Kato-Temple bound is safe but, where singular values crowd (the
    noise bulk of genotype data, say), far above the true error once the
    Ritz values converge. With ``block`` (the columns each pass added to the
    Krylov space, from ``EXTRAPOLATION_BLOCKS`` passes on) the eigenvalue estimate is instead
    the geometric mean of that bound and an extrapolation of the Ritz values'
    convergence: with ``d_t`` the increase of ``lam_j`` from the Krylov space
    of one pass fewer, and ``c = d_t / d_{t-1}`` its rate (the largest of
    ``j`` and its neighbours), ``2 d_t c / (1 - c)`` (Aitken).

    Returns a (k, 3) float64 array: S error, angle (radians), residual.
    """
    xp = backend.api(Z)
    d = lam.shape[0]
    kk = min(k, d)
    if kk == 0:
        if k == 0:
            return xp.zeros((0, 3), dtype=xp.float64, device=backend.device(Z))
        return unknown_errors(xp, k, like=Z)
    lam_h = backend.to_numpy(lam)  # d values (small, on the host)
    shift = _even_shift(float(lam_h[0]))
    if shift:  # eigenvalues near float64's limits: their squares below would not fit
        Z, lam = times_power_of_two(Z, shift), times_power_of_two(lam, shift)
        lam_h = times_power_of_two(lam_h, shift)
    R = Z @ X - V @ (X * lam)
    rho_h = backend.to_numpy(xp.sum(R**2, axis=0))  # d values
    out = _estimates(np.sqrt(rho_h), lam_h, k, kk, dtype, shift, block, V, Z, gram)
    return backend.on_backend_of(out, Z)


def product_rounding(lam, dtype) -> np.ndarray:
    """Per Ritz value ``lam_j = s_j^2`` of the Gram matrix of sketches multiplied in
    ``dtype``, the rounding of the products in the eigenvalue: ``2 s_j`` times
    ``PRODUCT_ROUNDING eps s_1`` (0 for float64 products: the small math's floor covers
    them)."""
    eps = float(np.finfo(dtype).eps)
    if eps <= _EPS64 or not lam.size:
        return np.zeros(lam.shape)
    root = np.sqrt(np.maximum(lam, 0.0))
    return 2 * root * PRODUCT_ROUNDING * eps * root[0]


def _estimates(rho, lam, k: int, kk: int, dtype, shift: int, block, V, Z, gram=False):
    """:func:`ritz_errors` on the host, from the Ritz values and residual norms (NumPy)."""
    d = lam.shape[0]
    floor = ROUNDING * float(np.finfo(dtype).eps) * lam[0]  # of the residuals (and below)
    if gram:  # the small math's floor, and the products' rounding added
        least, extra = ROUNDING * _EPS64 * lam[0], product_rounding(lam, dtype)
    else:
        least, extra = floor, np.zeros(d)
    # bounds from the last Ritz value up: lam_{j+1} <= lam~_{j+1} + err_{j+1}
    lam_h, rho_h = lam, rho
    extrapolate = block is not None and d >= EXTRAPOLATION_BLOCKS * block
    err_h = np.empty(d)
    # upper bound of the eigenvalue below the current one; below the last Ritz value
    # nothing is known (the eigenvalue after it may be as close as it likes)
    above_next = np.inf
    for j in range(d - 1, -1, -1):
        gap = lam_h[j] - above_next
        if gap > 0 and rho_h[j] ** 2 / gap < rho_h[j]:
            bound = rho_h[j] ** 2 / gap
        else:  # not separated: the Ritz value may stand for a lower eigenvalue
            bound = rho_h[j] * (1.0 if extrapolate else UNSEPARATED_SAFETY)
        err_h[j] = max(bound, float(least)) + extra[j]
        above_next = lam_h[j] + err_h[j]
    # (the angles' gaps keep the products' floor of the thin-side Ritz values)
    below = np.r_[lam_h[1:] + np.maximum(err_h[1:], floor), lam_h[-1]][:kk]
    if extrapolate:
        rest = _with_extrapolation(V, Z, lam_h, err_h - extra, kk, block, float(least))
        err_h[:kk] = rest + extra[:kk]
    gap_down = lam[:kk] - below
    gap_up = np.concatenate([np.full(1, np.inf), lam[: kk - 1] - lam[1:kk]])
    r = rho[:kk]
    err_lam = err_h[:kk]
    with np.errstate(divide="ignore", invalid="ignore"):
        s_err = err_lam / (2 * np.sqrt(np.maximum(lam[:kk], least if gram else floor)))
        gap = np.minimum(gap_up, gap_down)
        # rounding mixes neighbours: of the products (dtype) or of the float64 small math
        unit = max(ANGLE_ROUNDING * float(np.finfo(dtype).eps), ROUNDING * _EPS64)
        sine = np.where(gap > 0, (r + unit * lam[0]) / gap, 1.0)  # Davis-Kahan
        sine = sine + ROUNDING * float(np.finfo(dtype).eps)
        angle = np.arcsin(np.clip(sine, 0, 1))
        residual = np.where(lam[:kk] > 0, np.maximum(r, floor) / lam[:kk], np.inf)
    out = np.stack([times_power_of_two(s_err, -shift // 2), angle, residual], axis=1)
    if kk < k:  # components beyond the sketch: nothing is known
        out = np.concatenate([out, unknown_errors(np, k - kk)], axis=0)
    return out


#: Eigenvalues (squared singular values) beyond ``2**-SAFE_EXPONENT .. 2**SAFE_EXPONENT``
#: are scaled by an even power of two for the error estimates (exact, undone after).
SAFE_EXPONENT = 400


def _even_shift(top: float) -> int:
    """An even exponent ``e`` with ``top * 2**e`` near 1, or 0 when ``top`` is ordinary."""
    if not np.isfinite(top) or top <= 0 or 2.0**-SAFE_EXPONENT <= top <= 2.0**SAFE_EXPONENT:
        return 0
    return -2 * (int(np.frexp(top)[1]) // 2)


#: Passes (Krylov blocks) from which the convergence of the Ritz values is extrapolated.
#: (From 4, the first rate, measured on three Krylov spaces, fell to 0.04x the true
#: error on a cluster of 16 singular values within 1e-3 below the k-th.)
EXTRAPOLATION_BLOCKS = 5
#: Before that, the bound of Ritz values not separated from the next is widened by this.
UNSEPARATED_SAFETY = 2.0
#: Safety factor of the extrapolated eigenvalue errors.
EXTRAPOLATION_SAFETY = 2.0
#: From this many passes (Krylov blocks) on, the extrapolation has the weight
#: ``TRUSTED_WEIGHT`` in the geometric mean (before: 1/2): measured to keep every
#: estimate above the true error and to bring the median ratio on a Marchenko-Pastur
#: bulk at the default 8 passes from 14x to under 10x (tests/test_accuracy.py).
TRUSTED_BLOCKS = 6
TRUSTED_WEIGHT = 0.75


def _with_extrapolation(V, Z, lam, bound, k: int, block: int, floor: float):
    """Eigenvalue error estimates: a geometric mean of ``bound`` and an Aitken extrapolation.

    The Ritz values of the Krylov spaces of one and two passes fewer are
    those of the leading parts of ``H = V^T Z`` (the blocks are in pass order).
    """
    H = backend.to_numpy(V.T @ Z)
    H = (H + H.T) / 2
    d = H.shape[0]
    before = np.linalg.eigvalsh(H[: d - block, : d - block])[::-1][:k]
    earlier = np.linalg.eigvalsh(H[: d - 2 * block, : d - 2 * block])[::-1][:k]
    step, previous = lam[:k] - before, before - earlier
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(previous > 0, step / previous, 1.0)
    rate = np.where(np.isfinite(rate), rate, 1.0)
    rate = np.maximum.reduce([rate, np.r_[rate[1:], rate[-1]], np.r_[rate[0], rate[:-1]]])
    with np.errstate(divide="ignore", invalid="ignore"):
        aitken = np.where(rate < 1, EXTRAPOLATION_SAFETY * step * rate / (1 - rate), np.inf)
    guess = np.maximum(np.minimum(aitken, bound[:k]), floor)
    weight = TRUSTED_WEIGHT if d >= TRUSTED_BLOCKS * block else 0.5
    return np.where(np.isfinite(aitken), bound[:k] ** (1 - weight) * guess**weight, bound[:k])


#: The error estimates were measured never to fall below the true errors with
#: block Krylov (``krylov=True``) and at least this many oversamples (the
#: default): 9 spectra (a tiny gap at ``k``, a step, geometric decay 0.8, 0.95
#: and 0.99, power law, flat, low rank plus noise, spikes on a noise bulk),
#: k = 3 to 20, 1 to 7 iterations, 10 to 30 seeds each. With 5 oversamples
#: they fell to 0.76 of the true error (decay 0.99), with 0 to 3 to 0.03; with
#: subspace iteration (``krylov=False``), whose Ritz values in a cluster at
#: ``k`` may stand for eigenvalues below it, to 0.05 at any oversampling.
BOUND_MIN_OVERSAMPLES = 10


def estimates_are_bounds(krylov: bool, n_oversamples: int, n_power_iter: int) -> bool:
    """Whether the error estimates of these settings are (measured) upper bounds.

    One pass (``n_power_iter=0``) gives none (inf, pi / 2): trivially bounds.
    """
    return n_power_iter == 0 or (krylov and n_oversamples >= BOUND_MIN_OVERSAMPLES)


def unknown_errors(xp, k: int, like=None):
    """Errors of components nothing bounds (a single pass): inf, pi / 2, inf (on the device
    of ``like`` when given)."""
    out = np.tile([np.inf, np.pi / 2, np.inf], (k, 1))
    return out if like is None else backend.on_backend_of(out, like)


@small_step
def krylov_finish(gram, bases: list, crosses: list, k: int, dtype):
    """The final step of block Krylov: the Ritz triplets of every pass's span, and their errors.

    Returns ``(rotation, thin, S, errors)``: ``rotation`` maps a stripe's rows of
    ``K = [Y_0, ..., Y_q]`` to its singular vectors (``K X / s``), ``thin``
    the thin-side singular vectors ``V X``.
    """
    xp = backend.api(crosses[0])
    V, Z = hstack(bases), hstack(crosses)
    lam, X = ritz(V, Z, gram)
    # Ritz values below the rounding of the products (or of the float64 small math) are noise
    lam_h = backend.to_numpy(lam)  # the Ritz values (small) decide how many are kept
    noise = noise_level(dtype) * lam_h[0]
    keep = lam_h > noise if lam_h[0] > 0 else lam_h > 0
    r = min(k, int(keep.sum()))
    S = xp.sqrt(lam[:r])
    rotation = X[:, :r] / S
    thin = V @ X[:, :r]
    errors = ritz_errors(V, Z, lam, X, r, dtype, block=bases[0].shape[1], gram=True)
    if r < k:
        warn_rank(r, k)
        rotation, thin = _zero_columns(rotation, k - r), _zero_columns(thin, k - r)
        S = _zero_columns(S, k - r)
        errors = xp.concat(
            [errors, xp.zeros((k - r, 3), dtype=errors.dtype, device=backend.device(errors))],
            axis=0,
        )
    return rotation, thin, S, errors


@small_step
def thin_errors(bases: list, crosses: list, k: int, dtype):
    """Error estimates from the thin-side Ritz pairs of the passes' bases; and their S.

    For the check of ``tol`` after each pass, and as (conservative) estimates
    for results that come from the stripe-side sketch of the last pass
    (subspace iteration), which is at least as good as these Ritz pairs.
    """
    V, Z = hstack(bases), hstack(crosses)
    lam, X = ritz(V, Z)
    xp = backend.api(Z)
    S = xp.sqrt(lam[:k])
    return ritz_errors(V, Z, lam, X, k, dtype), S


# ------------------------------------------------------------------ when to stop

#: Why the passes stopped (``settings["stopped"]``); :func:`stop_reason` names the
#: precision of the products (``"precision of float32 products"``).
CONVERGED, MAX_PASSES, FIXED, SPACE_FULL = "converged", "max_passes", "n_power_iter", "space full"
#: The default stop counts a component as done once its estimated relative error is
#: within this factor of the floor that the rounding of the products puts under it.
PRECISION_SLACK = 2.0


def relative_errors(errors, S):
    """Per component, the larger of the relative S error and the relative residual."""
    xp = backend.api(errors)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = xp.where(S > 0, errors[:, 0] / S, xp.inf)
    return xp.maximum(rel, errors[:, 2])


def precision_floor(S, dtype, power: int = 2) -> np.ndarray:
    """Per component, the relative error below which no estimate goes with products in
    ``dtype`` (:func:`relative_errors`: the floor of the residuals in :func:`ritz_errors`,
    ``ROUNDING eps (s_1 / s_j)^power``, the power 2 where the Ritz values are squares of
    the singular values; the S errors' floor of the final Gram step, ``PRODUCT_ROUNDING
    eps s_1 / s_j``, is below it), inf for components below the rounding of the products
    (those :func:`krylov_finish` sets to 0)."""
    S = np.asarray(backend.to_numpy(S), dtype=np.float64)
    if not S.size or not S[0] > 0:
        return np.full(S.shape, np.inf)
    eps = float(np.finfo(dtype).eps)
    with np.errstate(divide="ignore", over="ignore"):
        ratio = (S / S[0]) ** 2
        floor = ROUNDING * eps / ratio ** (power / 2)
    return np.where(ratio > noise_level(dtype), floor, np.inf)


def stop_reason(errors, S, tol: float, at_precision: bool, dtype, power: int = 2) -> str | None:
    """Whether converging passes may stop, and why: every component's estimated relative
    error (:func:`relative_errors`) at most ``tol`` (``"converged"``); or, with
    ``at_precision`` (the default stop), at most the precision the products can show
    (:func:`precision_floor`, float32 products cannot estimate below about 1e-5): another
    pass could not change the answer at that precision. None: go on."""
    rel = np.asarray(backend.to_numpy(relative_errors(errors, S)))
    if rel.max() <= tol:
        return CONVERGED
    floor = PRECISION_SLACK * precision_floor(S, dtype, power)
    if at_precision and np.all(rel <= np.maximum(tol, floor)):
        return f"precision of {np.dtype(dtype).name} products"
    return None
