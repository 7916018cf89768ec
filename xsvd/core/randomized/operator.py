"""Matrix-free compressed SVD: a linear operator given only by its products.

``A`` (m x n) is known through ``matmat(W) -> A @ W`` and ``rmatmat(T) -> A.T @ T``,
which may read data (the caller decides what one call reads). Both solvers run on
the loop of the compressed SVD (:func:`.solver.solve`), the operator one stripe of
the data, with its stopping rule, error estimates and signs. :func:`operator_svd`
(extended and Hilbert EOF; :class:`OperatorSide`): a pass is ``Y = A W``, ``Z = A^T
Y``, the basis on the shorter side. :func:`fused_operator_svd` (:func:`xsvd.mca`;
:class:`FusedSide`), for operators whose ``A W`` and ``A^T T`` cost one read
together: a pass is one call ``both(W, T)``, block Lanczos on ``[[0, A], [A^T, 0]]``
with a left and a right basis, twice the Krylov columns per read
(``benchmarks/solver_fused.py`` compares the two).

References
----------
Halko, Martinsson & Tropp (2011), "Finding structure with randomness",
SIAM Review 53(2); Musco & Musco (2015), "Randomized block Krylov methods
for stronger and faster approximate singular value decomposition", NeurIPS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .. import backend
from ..blas import small_step
from ..common import fix_signs
from ..config import OPTIONS
from ..missing import MissingRule
from ..options import CompressedOptions
from .executors import Eager
from .plan import SAMPLES, Problem
from .small import (
    FIXED,
    ROUNDING,
    estimates_are_bounds,
    hstack,
    krylov_room,
    noise_level,
    orth,
    orth_against,
    ritz_errors,
    unknown_errors,
    warn_rank,
)
from .solver import solve
from .state import FeatureStats, Sketch

__all__ = ["OperatorSVD", "operator_svd", "fused_operator_svd", "problem_of"]


@dataclass(frozen=True)
class OperatorSVD:
    """The rank-``k`` SVD ``A ~ U diag(S) V^T`` of an operator, in float64.

    ``errors`` (k x 3): per component the estimated error of ``S``, the angle
    (radians) of the singular vectors and the relative residual; upper
    bounds when ``bounds`` (see :func:`.small.estimates_are_bounds`).
    ``passes``: the passes made (``matmat`` + ``rmatmat``, or one call of
    ``both`` for :func:`fused_operator_svd`); ``reads``: the calls of
    ``matmat`` (``passes``, or one more for ``U``; ``passes`` when fused);
    ``stopped``: why the passes stopped (as ``settings["stopped"]`` of
    :func:`xsvd.compressed`: ``"converged"``, ``"precision of float32
    products"``, ``"max_passes"``, ``"n_power_iter"`` or ``"space full"``).
    """

    U: np.ndarray
    S: np.ndarray
    V: np.ndarray
    errors: np.ndarray
    passes: int
    reads: int
    bounds: bool
    stopped: str = FIXED


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
    complex_form: bool = False,
    watched: int | None = None,
) -> OperatorSVD:
    """Rank-``k`` SVD of the ``m x n`` operator ``A`` given by ``matmat`` and ``rmatmat``.

    Runs on the loop of the compressed SVD (:func:`.solver.solve`): the same
    block Krylov passes, stopping rule, error estimates, final factors and
    sign rule, the operator standing in for the stripes of the data.

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
        20). With neither ``n_power_iter`` nor ``tol``: until converged
        (``tol=1e-6``) or at the precision of ``dtype`` products, at most
        ``DEFAULT_N_POWER_ITER + 1`` (8) passes, as :func:`xsvd.compressed`.
    seed : int or None
        Seed of the Gaussian start block.
    dtype : numpy dtype
        The precision of the products (their rounding enters the estimates).
    complex_form : bool, default False
        ``A`` is the real form ``[[P, -Q], [Q, P]]`` of a complex ``P + iQ``
        (``m``, ``n`` and the block width even): it commutes with ``J = [[0,
        -I], [I, 0]]``, and the start block is drawn ``J``-invariant (``[G,
        J G]``), so every Krylov block's span is ``J``-invariant: the complex
        vectors ``top + i bottom`` of a block of ``l`` columns span only ``l /
        2`` complex dimensions, and the operator may multiply those alone (half
        the work of ``l`` real columns). Each block is then a complex block
        Krylov step of ``l / 2`` columns; the answer is the same operator's.
    watched : int, optional
        The leading components whose estimates decide when to stop (``tol`` and
        the default stop); default all ``k``. Fewer where the caller asks for
        components it only needs for their gap (their estimates stay large where
        they sit in noise, and would keep the passes going to ``max_passes``).

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
    m, n, opts = _checked(shape, k, n_oversamples, n_power_iter, tol, max_passes, seed)
    if watched is not None and not 1 <= int(watched) <= k:
        raise ValueError(f"watched must be between 1 and k={k}, got {watched!r}.")
    names, transposed = ("matmat", "rmatmat"), m < n
    if transposed:  # work on A^T: the basis (n x l) on the shorter side
        matmat, rmatmat, m, n, names = rmatmat, matmat, n, m, names[::-1]
    problem = problem_of(m, n, int(k), min(int(k) + opts.n_oversamples, n), opts, dtype, watched)
    kept = problem.most_iterations * m * problem.width * 8  # the sketches: float64
    reread = problem.most_iterations > 1 and kept > OPTIONS["krylov_sketch_bytes"]
    problem = replace(problem, reread=reread)
    complex_form = complex_form and n % 2 == 0 and problem.width % 2 == 0
    drawn = (n, problem.width // 2 if complex_form else problem.width)
    omega = backend.standard_normal(np, opts.seed, drawn, np.float64)
    omega = _j_invariant(omega) if complex_form else omega
    side = OperatorSide(matmat, rmatmat, (m, n), names, complex_form=complex_form)
    return _solved(problem, omega, side, transposed)


def _checked(shape, k, n_oversamples, n_power_iter, tol, max_passes, seed):
    """``(m, n, options)``: the arguments both solvers take, checked and resolved as
    :func:`xsvd.compressed` resolves them."""
    m, n = (int(s) for s in shape)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= min(m, n):
        raise ValueError(
            f"k must be an integer between 1 and {min(m, n)} for a {m} x {n} operator."
        )
    given = CompressedOptions(
        n_power_iter=n_power_iter,
        n_oversamples=n_oversamples,
        seed=seed,
        tol=tol,
        max_passes=max_passes,
        krylov=True,
    )
    return m, n, given.resolved(lazy=False)


def _solved(problem: Problem, omega, side, transposed: bool = False) -> OperatorSVD:
    """The operator ``side`` solved by :func:`.solver.solve`, one stripe (``problem.n_samples``
    rows; ``transposed``: of ``A^T``)."""
    ex = Eager(np.empty((problem.n_samples, 0)), 0)  # one stripe: the operator
    U, V, S, errors, _, problem = solve(ex, problem, omega, make_side=lambda ex, problem: side)
    U, V = fix_signs(*((V, U) if transposed else (U, V)))  # xsvd's one sign rule
    q = problem.n_power_iter
    bounds = estimates_are_bounds(True, problem.options.n_oversamples, q)
    return OperatorSVD(U, S, V, np.asarray(errors), q + 1, problem.passes, bounds, problem.stopped)


def problem_of(m: int, n: int, k: int, width: int, opts, dtype, watched=None) -> Problem:
    """The :class:`.plan.Problem` of an operator (m x n): nothing to center, weigh or fill."""
    return Problem(
        n_samples=m,
        n_features=n,
        k=k,
        width=width,
        n_power_iter=opts.n_power_iter,
        dtype=np.dtype(dtype),
        options=opts,
        center=False,
        weights=None,
        missing=MissingRule("none"),
        locate=None,
        stripes=SAMPLES,
        sub_block=0,
        watched=watched,
    )


@small_step
def _complex_block(W, previous: list) -> None:
    """Make the real block ``W`` (2L x l, ``l`` even) the exact real form of an orthonormal
    complex block ``B`` orthogonal to the ``previous`` ones (``B`` appended to them), in
    place: ``B`` spans the leading ``l / 2`` directions of ``W_top + i W_bottom`` (all of
    its span where ``W``'s is ``J``-invariant, as a Krylov block of ``J``-invariant
    blocks is but for rounding). Left as it is where ``l`` is odd or an earlier block was
    (None appended)."""
    half, l = W.shape[0] // 2, W.shape[1]
    if l % 2 or l == 0 or any(b is None for b in previous) or not np.isfinite(W).all():
        previous.append(None)
        return
    U, _, _ = np.linalg.svd(W[:half] + 1j * W[half:], full_matrices=False)
    B = U[:, : l // 2]
    if previous:
        P = np.concatenate(previous, axis=1)
        for _ in range(2):
            B = B - P @ (P.conj().T @ B)
    B, _ = np.linalg.qr(B)
    W[:half] = np.concatenate([B.real, -B.imag], axis=1)
    W[half:] = np.concatenate([B.imag, B.real], axis=1)
    previous.append(B)


def _j_invariant(G):
    """``[G, J G]`` with ``J [a; b] = [-b; a]`` (halves of the rows): a start block whose
    span ``J`` maps onto itself (the real form of the complex block ``G_top + i G_bottom``)."""
    half = G.shape[0] // 2
    return np.concatenate([G, np.concatenate([-G[half:], G[:half]], axis=0)], axis=1)


class OperatorSide:
    """A linear operator as the side the passes of :func:`.solver.solve` read.

    One read is ``Y = A W`` and ``Z = A^T Y``, one stripe; no statistics (no
    centering, weights or missing values).

    ``complex_form`` (:func:`operator_svd`): before each read the block is
    replaced, in place (the solver keeps the array it passes), by the exact
    real form ``[[Re B, -Im B], [Im B, Re B]]`` of an orthonormal complex
    ``B`` (``l / 2`` columns, orthogonal to the earlier blocks' ``B``): the
    same span where the block's is ``J``-invariant (a Krylov block of
    ``J``-invariant blocks is, but for rounding, which alone would let the
    structure drift away within a few passes), else its leading complex
    directions. Any orthonormal block orthogonal to the earlier ones gives
    valid Ritz pairs and exact residuals; this one keeps the structure that
    halves the products. Blocks of odd width are read as they are.
    """

    def __init__(self, matmat, rmatmat, shape, names=("matmat", "rmatmat"), complex_form=False):
        self.matmat, self.rmatmat, self.shape, self.names = matmat, rmatmat, shape, names
        self.complex_form, self.complex_blocks = complex_form, []

    def prepare(self):
        return None

    def read(self, basis, stats, fill, first: bool):
        """``(Sketch, stats)``: ``Y = A W``, ``Z = A^T Y`` and the Gram matrix ``Y^T Y``."""
        if self.complex_form:
            if first:
                self.complex_blocks = []
            _complex_block(basis, self.complex_blocks)
        Y = self.sketch(basis).blocks[0]
        Z = _float64(self.rmatmat(Y), (self.shape[1], Y.shape[1]), self.names[1])
        stats = stats or FeatureStats(mean=None, total_ss=None, nan_mask=None)
        return Sketch([Y], None, Z, Y.T @ Y), stats

    def sketch(self, basis):
        """``Y = A W`` alone (the final read of ``Problem.reread``)."""
        Y = _float64(self.matmat(basis), (self.shape[0], basis.shape[1]), self.names[0])
        return Sketch([Y], None, None, None)

    def magnitudes(self, stats):
        return None

    def finish(self, stats):
        return stats


@small_step
def _single(Y, basis, k: int):
    """One fused pass: Rayleigh-Ritz on the start basis (``U`` from ``Y``), unknown errors."""
    u, S, vt = np.linalg.svd(Y, full_matrices=False)  # A (W vt^T) = u diag(S)
    U, S, V = u[:, :k], S[:k], basis @ vt[:k].T
    return U, V, S, unknown_errors(np, k)


def _float64(x, shape, name: str):
    """A product as a float64 NumPy array (CuPy results are moved to the host)."""
    x = backend.to_numpy(x)
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} returned shape {tuple(x.shape)}, expected {tuple(shape)}.")
    return x.astype(np.float64, copy=False)


def fused_operator_svd(
    both: Callable,
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
    """Rank-``k`` SVD of the ``m x n`` operator ``A`` given by ``both(W, T) -> (A W, A^T T)``.

    For operators whose two products cost one read of the data together
    (the cross-covariance of two fields, a block of samples of both at a
    time: :func:`xsvd.climate.fields.cross_products`). One *pass* is one
    call: block Lanczos (full reorthogonalization) on the symmetric
    ``H = [[0, A], [A^T, 0]]`` from the start block ``[[T_0, 0], [0, W_0]]``,
    whose Krylov space splits into a left basis ``U_j`` (``T_0, A W_0, A A^T
    T_0, ...``) and a right basis ``V_j`` (``W_0, A^T T_0, A^T A W_0, ...``):
    after ``q`` passes the right basis is the block Krylov space of ``A^T A``
    of degree ``(q - 1) / 2`` from ``2 l`` start columns, and every block's
    image is known. The Ritz triplets are those of ``U^T A V`` (two-sided,
    the Rayleigh-Ritz of ``H`` on ``diag(U, V)``); their residuals on both
    sides, ``A v - s u`` and ``A^T u - s v``, are exact without another
    pass, and :func:`.small.ritz_errors` on ``H`` (eigenvalues ``+-s``) gives
    the error estimates: the S error, the angle of each of ``u`` and ``v``
    (Davis-Kahan on ``H``'s unit vectors ``[u; v] / sqrt(2)``, times up to
    ``sqrt(2)`` for either half) and the relative residual of both sides
    together. One pass alone gives the Ritz triplets of ``A W_0``, errors
    unknown.

    Parameters
    ----------
    both : callable
        ``both(W, T)`` returns ``(A @ W, A.T @ T)`` for float64 ``W`` (n x a)
        and ``T`` (m x b); ``a`` or ``b`` may be 0.
    shape, k, n_oversamples, n_power_iter, tol, max_passes, seed, dtype
        As :func:`operator_svd`; a pass is one call of ``both``: by default
        until every estimated relative error is below ``tol=1e-6``, at most
        ``DEFAULT_N_POWER_ITER + 1`` (8) calls; ``n_power_iter``: that many
        calls and one more.

    Returns
    -------
    OperatorSVD
        ``reads == passes`` (no product after the last pass).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((60, 40))
    >>> res = fused_operator_svd(lambda w, t: (a @ w, a.T @ t), a.shape, 3, n_power_iter=9)
    >>> bool(np.allclose(res.S, np.linalg.svd(a, compute_uv=False)[:3]))
    True
    """
    m, n, opts = _checked(shape, k, n_oversamples, n_power_iter, tol, max_passes, seed)
    # each side's block has k + p columns (half of them fell below the true errors, decay 0.99)
    problem = problem_of(m, n, int(k), int(k) + opts.n_oversamples, opts, dtype)
    omega = backend.standard_normal(np, opts.seed, (m + n, problem.width), np.float64)
    return _solved(problem, omega, FusedSide(both, (m, n), problem.width))


class FusedSide(OperatorSide):
    """``both`` as a side of :func:`.solver.solve` (:func:`fused_operator_svd`): a basis is
    the pair ``(T, W)``, halves of ``H``'s block-diagonal ``[[T, 0], [0, W]]``, its image
    the pair ``(A W, A^T T)`` of one call. A Krylov space of its own, for which ``solve``
    takes the side's ``start(omega)`` (the first basis), ``room(blocks)`` (0: the space is
    full), ``following(cross, bases)`` (the next basis: each half has its own blocks and
    room), ``ritz(bases, crosses, k, dtype) -> (U, V, S, errors)`` (the Ritz triplets of the
    stop test and the final step) and ``power`` (``H``'s eigenvalues are the singular
    values themselves: :func:`.small.stop_reason`)."""

    power = 1

    def __init__(self, both, shape, width: int):
        self.both, self.shape, self.width, self.found = both, shape, width, (None, None)

    def start(self, omega):
        """``(T_0, W_0)``: each half of the Gaussian ``omega`` (m + n rows), orthonormal."""
        m, n = self.shape
        return orth(omega[:m, : min(self.width, m)]), orth(omega[m:, : min(self.width, n)])

    def read(self, basis, stats, fill, first: bool):
        (T, W), (m, n) = basis, self.shape
        AW, AtT = self.both(W, T)
        AW = _float64(AW, (m, W.shape[1]), "both(W, T)[0]")
        return Sketch([], None, (AW, _float64(AtT, (n, T.shape[1]), "both(W, T)[1]")), None), stats

    def room(self, blocks: int) -> int:
        """Columns the halves' next blocks may add after ``blocks`` blocks (0: both full)."""
        used = blocks * self.width
        return sum(krylov_room(x, min(self.shape), self.width, used) for x in self.shape)

    def following(self, cross, bases: list):
        """The next pair: each half's image orthogonal to that half's blocks, at most its room."""
        pairs = []
        for image, blocks, x in zip(cross, zip(*bases, strict=True), self.shape, strict=True):
            room = krylov_room(x, min(self.shape), self.width, sum(b.shape[1] for b in blocks))
            live = [b for b in blocks if b.shape[1]]
            pairs.append(orth_against(image, live, room) if room else np.zeros((x, 0)))
        return tuple(pairs)

    def ritz(self, bases: list, crosses: list, k: int, dtype):
        """``(U, V, S, errors)``: the Ritz triplets of the pairs' span, once a pass (one pass:
        of ``A W_0``, nothing bounds them, unless the space is full)."""
        if self.found[0] is not bases[-1]:
            (lefts, rights), (images, co_images) = (zip(*x, strict=True) for x in (bases, crosses))
            if len(bases) == 1 and self.room(1):
                self.found = bases[-1], _single(images[0], rights[0], k)
            else:
                self.found = bases[-1], _two_sided(lefts, rights, images, co_images, k, dtype)
        return self.found[1]


@small_step
def _two_sided(lefts, rights, images, co_images, k: int, dtype):
    """Ritz triplets of ``U^T A V`` over the multiplied blocks, and their error estimates.

    The Rayleigh-Ritz of ``H = [[0, A], [A^T, 0]]`` on ``diag(U, V)`` (blocks
    in pass order, for the extrapolation of :func:`.small.ritz_errors`):
    eigenvalues ``+-s``, eigenvectors ``[x; +-y] / sqrt(2)`` with ``u = U x``,
    ``v = V y``. ``ritz_errors`` reports an eigenvalue error ``e`` of ``H``
    as ``e / (2 sqrt(lam))`` (its eigenvalues being squares there); that
    factor is undone, since ``H``'s eigenvalue is ``s`` itself.
    """
    q = len(images)
    U, V = hstack(lefts[:q]), hstack(rights[:q])
    K, L = hstack(images), hstack(co_images)
    (Ql, Kl), (Qr, Lr) = _split(K, U), _split(L, V)  # K = [U Ql] Kl, L = [V Qr] Lr
    a, b = U.shape[1], V.shape[1]
    # H's basis diag(U, V) and its image [[0, K], [L, 0]] in the orthonormal coordinates
    # [U Ql] (left rows) and [V Qr] (right rows): the same norms and products, small
    left_of = np.concatenate([np.full(blk.shape[1], j) for j, blk in enumerate(lefts[:q])])
    right_of = np.concatenate([np.full(blk.shape[1], j) for j, blk in enumerate(rights[:q])])
    order = np.argsort(np.r_[2 * left_of, 2 * right_of + 1], kind="stable")  # pass order
    lrows = a + Ql.shape[1]
    Vh, Zh = np.zeros((lrows + b + Qr.shape[1], a + b)), np.zeros((lrows + b + Qr.shape[1], a + b))
    Vh[:a, :a], Zh[lrows:, :a] = np.eye(a), Lr
    Vh[lrows : lrows + b, a:], Zh[:lrows, a:] = np.eye(b), Kl
    Vh, Zh = Vh[:, order], Zh[:, order]
    G = Vh.T @ Zh
    lam, X = np.linalg.eigh((G + G.T) / 2)
    lam, X = lam[::-1], X[:, ::-1]
    top = float(lam[0])
    shift = 0 if not np.isfinite(top) or top <= 0 else -int(np.frexp(top)[1])
    scaled = np.ldexp(lam, shift)  # eigenvalues near 1: exact powers of two
    noise = noise_level(dtype)
    keep = scaled[:k] ** 2 > noise * scaled[0] ** 2 if top > 0 else np.zeros(k, bool)
    r = int(keep.sum())
    errors = np.zeros((k, 3))
    if r:
        est = ritz_errors(
            Vh,
            np.ldexp(Zh, shift),
            scaled,
            X,
            r,
            dtype,
            block=int(sum(b.shape[1] for b in (lefts[0], rights[0]))),
        )
        floor = ROUNDING * float(np.finfo(dtype).eps) * scaled[0]
        errors[:r, 0] = np.ldexp(est[:, 0] * 2 * np.sqrt(np.maximum(scaled[:r], floor)), -shift)
        # either half of a unit [u; v] / sqrt(2) is off by up to sqrt(2) times its angle
        half = np.minimum(1.0, np.sqrt(2) * np.sin(est[:, 1] / 2))
        errors[:r, 1] = np.minimum(np.pi / 2, 2 * np.arcsin(half))
        errors[:r, 2] = np.sqrt(2) * est[:, 2]  # ||A v - s u||, ||A^T u - s v|| each
    X = X[np.argsort(order)]  # rows back in the order of U's then V's columns
    P, Q = np.zeros((U.shape[0], k)), np.zeros((V.shape[0], k))
    for out, basis, rows in ((P, U, slice(0, a)), (Q, V, slice(a, a + b))):
        vec = basis @ X[rows, :r]
        out[:, :r] = vec / np.linalg.norm(vec, axis=0)
    S = np.zeros(k)
    S[:r] = lam[:r]
    if r < k:
        warn_rank(r, k, stacklevel=4)
    return P, Q, S, errors


def _split(K, U):
    """``K = [U Q] C`` with ``Q`` orthonormal and orthogonal to ``U`` (two rounds of
    Gram-Schmidt, then QR): ``(Q, C)``."""
    C = U.T @ K
    rest = K - U @ C
    again = U.T @ rest
    rest -= U @ again
    Q, R = np.linalg.qr(rest)
    return Q, np.concatenate([C + again, R], axis=0)
