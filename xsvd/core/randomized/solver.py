"""Compressed (randomized) SVD that reads the data q + 1 times.

``A`` is the (m samples x n features) data and

    B = (A - 1 mu^T) diag(w)

the matrix actually decomposed (centering and weights optional). The data
are cut into *stripes* that each hold one dimension whole, the *thin side*.
Call ``C`` the matrix whose rows are cut: ``C = B`` for stripes of samples
and ``C = B^T`` for stripes of features. Small ``(thin length) x l``
matrices live on the thin side.

One read of a stripe ``C_i`` gives both ``Y_i = C_i W`` and its share
``C_i^T Y_i`` of ``Z = C^T C W``. So a pass over the data is one step of
subspace iteration on ``C^T C``, and after ``q + 1`` passes

    Y = C W_q,  W_q = orth((C^T C)^q Omega),  Z = C^T Y,

i.e. ``Y`` spans ``(C C^T)^q C Omega``: the same subspace as the normalized
power scheme of Halko, Martinsson & Tropp (2011, Alg. 4.4) with ``q``
iterations, which needs ``2q + 2`` passes. The projection ``Q^T C`` it then
needs is recovered from the same last pass without reading the data again
(as in single-pass randomized SVD: Tropp, Yurtsever, Udell & Cevher 2017;
Yu, Gu, Li et al. 2017): see :func:`._small.finalize`.

Every iterate is orthonormalized (QR of the ``(thin length) x l`` matrix
``Z``), so the tail of fast-decaying spectra is not lost as it is with
unnormalized power iterations. Centering and weights never touch the data:
they enter as rank-one and diagonal corrections of the small products.
Integer and float32 data are multiplied in float32, a sub-block at a time
(a uint8 block becomes float32 only while it is being multiplied); partial
sums, Gram matrices and the small factorizations are float64.

Glossary: the papers' symbols and the names in the code
--------------------------------------------------------

==============  =========================  ======================================
symbol          code                       meaning
==============  =========================  ======================================
``A``           ``a``, a stripe's          the data, m x n (samples x features)
                ``blocks``
``m``, ``n``    ``n_samples``,             the shape of ``A``
                ``n_features``
``mu``          ``mean``                   feature means (``center=True``) or
                                           the values ``center=`` gives
``w``, ``D``    ``weights``                feature weights, ``D = diag(w)``
``B``           (never formed)             ``(A - 1 mu^T) D``
``C``           the stripe matrix          ``B`` (``stripes="samples"``) or
                                           ``B^T`` (``stripes="features"``)
``k``           ``k``                      components
``p``           ``n_oversamples``          extra sketch columns
``l``           ``width``                  sketch columns, ``k + p``
``q``           ``n_power_iter``           subspace iterations (``q + 1`` reads)
``Omega``       first ``basis``            Gaussian test matrix (thin length x l)
``W``           ``basis``                  orthonormal basis of a pass, ``orth(Z)``
``D W``         ``basis_w``                the weighted basis (stripes of samples)
``[W, 1]``      ``basis_ext``              basis with a column of ones (stripes
                                           of features): its product gives sums
``Y``           ``Sketch.blocks``          ``C W``, per stripe (stripe side x l)
``c``           ``Sketch.mean_row``        ``mu^T D W``: centering of ``Y`` when
                                           read uncentered (first pass)
``Z``           ``Sketch.cross``           ``C^T Y`` (thin length x l)
``G``           ``Sketch.gram``            ``Y^T Y`` (l x l)
``M``           ``rotation``               maps ``Y`` to singular vectors
``K``           (krylov)                   ``[Y_0, ..., Y_q]``, every pass's
                                           sketch side by side
==============  =========================  ======================================

The code: :mod:`.plan` (the :class:`~.plan.Problem`, which way to cut the data, which
executor), :mod:`.sample_stripes` and :mod:`.feature_stripes` (a pass each way),
:mod:`.stripe` (a stripe a sub-block at a time), :mod:`.small` (the small factorizations),
:mod:`.state` (what passes hand on), :mod:`.executors` (eager or Dask), :mod:`.magnitude`
(data and weights of any magnitude). The pass loop is :func:`solve` below, also the
loop of the matrix-free solvers (:mod:`.operator`) and of the bootstrap's replicates.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from .. import backend
from ..common import (
    Decomposition,
    Locate,
    fix_signs,
    nan_rows,
    validate_shape,
)
from ..config import OPTIONS
from ..missing import missing_rule
from ..options import (
    CompressedOptions,
    Preprocessing,
    ordered_settings,
    split_options,
    takes_options,
)
from ..progress import Progress
from .feature_stripes import FeatureStripes
from .magnitude import (
    SAFE_WEIGHT,
    needs_rescaling,
    power_of_two_exponent,
    rescaling,
    scaled_back,
    within_range,
)
from .plan import SAMPLES, Problem, plan, warn_if_exact_is_cheaper, watches_range
from .sample_stripes import SampleStripes
from .small import (
    BOUND_MIN_OVERSAMPLES,
    FIXED,
    MAX_PASSES,
    SPACE_FULL,
    estimates_are_bounds,
    finalize,
    krylov_finish,
    krylov_gram,
    krylov_room,
    krylov_vectors,
    orth,
    orth_against,
    precision_floor,
    relative_errors,
    reread_basis,
    reread_vectors,
    stop_reason,
    stripe_vectors,
    thin_errors,
    unknown_errors,
)
from .state import Carry, Sketch
from .stripe import narrows

__all__ = ["randomized_svd", "solve"]


@takes_options(Preprocessing, CompressedOptions)
def randomized_svd(
    a,
    k: int,
    *,
    weights=None,
    locate: Locate | None = None,
    compute: bool = False,
    progress: bool = False,
    **options,
) -> Decomposition:
    """Rank-``k`` randomized SVD of ``B = (A - mean) * weights``.

    Parameters
    ----------
    a : array (m, n)
        NumPy, CuPy or Dask array, samples along rows, features along columns.
    k : int
        Number of components.
    center : bool or array (n,)
        True: remove each feature's (column's) mean over the samples. An
        array: the values to remove instead (any backend; moved to the
        data's), not read from the data: ``d.mean`` is them and
        ``settings["center"]`` is ``"given"``. With ``missing="mean"`` they
        fill in the missing values too (no extra read for the means).
    weights : array (n,), optional
        Per-feature factors applied after centering.
    n_power_iter : int, optional
        Iterations ``q``; the data are read ``q + 1`` times (fewer when the
        Krylov space fills the matrix; not with ``tol``). Default: stop when
        converged, i.e. ``tol=DEFAULT_TOL`` (1e-6), or when every estimate is
        at the precision of the products (float32: about 1e-5, see
        :func:`._small.stop_reason`), capped at ``DEFAULT_N_POWER_ITER + 1``
        (8) passes without a warning; one lazy graph (``compute=False``)
        reads 8 times.
    n_oversamples : int
        Extra sketch columns ``p``; the sketch has ``l = k + p`` columns.
    tol : float, optional
        Instead of a fixed number of passes: pass over the data until the
        estimated relative error of every singular value and the relative
        residual of every singular triplet (``Decomposition.errors``) are
        below ``tol``, or ``max_passes`` is reached (with a warning). Needs
        computed results (``compute=True`` for Dask input).
    max_passes : int, optional
        With ``tol``: the most reads of the data (default 20).
    seed : int, optional
        Seed of the Gaussian test matrix (drawn on the data's backend).
    dtype : {None, "float32", "float64"}
        Precision of the products with the data; by default float64 data stay
        float64 and everything else is computed in float32.
    missing : {"error", "mean"}
        ``"error"``: NaN is allowed only in features NaN at every sample.
        ``"mean"``: missing values (NaN; in integer data, negative values)
        stand for their feature's mean over the samples where it is present,
        filled in each float sub-block as it is multiplied (no filled copy).
        When stripes are blocks of samples, the means take one extra read of
        the data. See :mod:`xsvd.core.missing`.
    negative_missing : bool, optional
        Whether negative values are missing too. Default: in integer data
        (genotype codes such as -1) with ``missing="mean"``, not in
        floating-point data.
    krylov : bool
        Default True. Keep every pass's sketch and take the singular vectors
        from their joint span (a block Krylov space, Musco & Musco 2015)
        instead of the last sketch only (False: subspace iteration): the same
        reads of the data, much more accurate
        singular values when the spectrum decays slowly (e.g. the noise
        components of genotype data), for ``q + 1`` times the memory of the
        small sketches and a little more small math.
    locate : callable, optional
        Turns flat feature indices into a readable location for error messages.
    **options
        The fields of :class:`~xsvd.core.options.Preprocessing` (``center``,
        ``missing``, ``negative_missing``) and
        :class:`~xsvd.core.options.CompressedOptions` (the others above).
    compute : bool
        Dask input only. True: return computed (NumPy or CuPy) arrays; the
        passes are then computed one by one (each one ``dask.compute`` of
        small results), so each chunk is read afresh per pass and held by no
        later pass, whatever the input's own graph. False: return Dask arrays
        of one lazy graph for all passes.
    progress : bool
        With ``compute=True`` and Dask input: show a progress bar per pass
        (see :class:`xsvd.core.progress.Progress`).

    Returns
    -------
    Decomposition
        ``settings["stripes"]`` says which way the data were cut
        (``"samples"`` or ``"features"``), ``settings["passes"]`` how often
        they were read, ``settings["stopped"]`` why no more (``"converged"``,
        ``"precision of float32 products"``, ``"max_passes"``,
        ``"n_power_iter"`` or ``"space full"``). ``errors`` holds the error estimates of every
        component (see :func:`._small.error_estimates`), computed from the
        passes made, without another read.

    Raises
    ------
    MissingValueError, InfiniteValueError
        For NaN that ``missing`` does not allow, and for infinite values,
        naming the features that hold them.

    Notes
    -----
    Memory: besides the stripes being read (one per worker thread), a NumPy
    float sub-block of about 4 MiB per stripe (see :func:`xsvd.set_options`),
    and ``O((m + n) l)`` for the small matrices. The input is never copied
    whole, centered, weighted or converted to float.

    Magnitude: where the dtype leaves it open (floating point, integers of
    32 bits and more), the first pass also measures every feature's largest
    magnitude. Data too large or too small to multiply in the product dtype
    (float32: outside about 1e-9 to 1e9; float64: 1e-90 to 1e90), or
    features whose weighted columns ``|x_j| w_j`` the products cannot hold
    (features of very different magnitudes balanced by weights or
    ``standardize``, subnormal data), are read again with each feature
    multiplied by its own power of two (exact) and the weights by the
    inverse, and the results scaled back: one more read, counted in
    ``settings["passes"]``; see :mod:`xsvd.core.randomized.magnitude`. With
    ``compute=False`` (one lazy graph) such data raise a ``ValueError``
    instead. Weights of extreme magnitude alone are rescaled at no cost.

    References
    ----------
    N. Halko, P. G. Martinsson and J. A. Tropp, Finding structure with
    randomness: probabilistic algorithms for constructing approximate matrix
    decompositions, SIAM Review 53(2), 217-288, 2011.

    J. A. Tropp, A. Yurtsever, M. Udell and V. Cevher, Practical sketching
    algorithms for low-rank matrix approximation, SIAM J. Matrix Anal. Appl.
    38(4), 1454-1485, 2017.

    C. Musco and C. Musco, Randomized block Krylov methods for stronger and
    faster approximate singular value decomposition, NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from xsvd.linalg import randomized_svd
    >>> a = np.random.default_rng(0).standard_normal((500, 200))
    >>> d = randomized_svd(a, 5, seed=0)
    >>> d.U.shape, d.S.shape, d.V.shape
    ((500, 5), (5,), (200, 5))
    >>> d.settings["stripes"], d.settings["passes"]
    ('samples', 8)
    >>> bool((d.errors[:, 0] < 1e-3 * d.S).all())  # estimated errors of S
    True
    """
    read, given = split_options(options, (Preprocessing, CompressedOptions), "randomized_svd")
    m, n = a.shape
    k = validate_shape(m, n, k, center=read.center is True, required=True)
    center = read.given_center(n)
    opts = given.resolved(lazy=backend.is_dask(a) and not compute)
    warn_if_exact_is_cheaper(m, n, k, opts, a)
    bounds = _bounds_or_warning(opts)
    ctype = backend.compute_dtype(a.dtype, opts.dtype)
    rule = missing_rule(a.dtype, read.missing, read.negative_missing)
    show = Progress() if progress and compute and backend.is_dask(a) else None
    stripes, sub_block, ex = plan(a, compute, show)
    given = None if weights is None else np.asarray(backend.to_numpy(weights), dtype=np.float64)
    w, result_exp = given, 0
    if w is not None and w.size:
        result_exp = power_of_two_exponent(np.abs(w).max(), *SAFE_WEIGHT)
        if result_exp:
            w = np.ldexp(w, result_exp)
    problem = Problem(
        n_samples=m,
        n_features=n,
        k=k,
        width=min(k + opts.n_oversamples, m, n),
        n_power_iter=opts.n_power_iter,
        dtype=ctype,
        options=opts,
        center=read.centers,
        given_center=None if center is None else backend.on_backend_of(center, a),
        weights=None if w is None else backend.on_backend_of(w, a),
        missing=rule,
        locate=locate,
        stripes=stripes,
        sub_block=sub_block,
        watch_range=watches_range(a),
        narrowing=narrows(a.dtype, ctype),
        result_exp=result_exp,
        given_weights=given,
    )
    problem = replace(problem, reread=problem.rereads(OPTIONS["krylov_sketch_bytes"]))
    if show is not None:
        show.total = problem.most_passes
    omega = backend.standard_normal(
        ex.xp, opts.seed, (problem.thin_length, problem.width), np.float64, like=ex.like
    )
    stripe_side, thin_side, S, errors, stats, problem = solve(ex, problem, omega, show)
    S, errors, stats, total_norm = scaled_back(
        S, errors, stats, problem.result_exp, problem.column_exp
    )
    U, V = (stripe_side, thin_side) if stripes == SAMPLES else (thin_side, stripe_side)
    U, V = fix_signs(U, V)
    if stats.nan_mask is not None:
        V = nan_rows(V, stats.nan_mask)
    settings = ordered_settings(
        k=k,
        n_power_iter=problem.n_power_iter,
        dtype=str(ctype),
        stripes=stripes,
        passes=problem.passes,
        stopped=problem.stopped,
        weighted=weights is not None,
        **read.settings(),
        **opts.settings(),
        **({} if bounds else {"error_bounds": False}),
    )
    if opts.converges:  # computed: say what was reached
        reached = float(backend.to_numpy(relative_errors(errors, S)).max())
        settings = ordered_settings(**settings, estimated_error=reached)
        if reached > opts.tol and not opts.default_stop:
            floor = precision_floor(S, ctype)
            floor = float(floor[np.isfinite(floor)].max(initial=0.0))
            fix = f" {ctype} products cannot estimate below about {floor:.0e} here: for a "
            fix = "" if floor <= opts.tol else fix + "smaller tol pass dtype='float64'."
            warnings.warn(
                f"tol={opts.tol:g} was not reached in max_passes={opts.max_passes} passes over "
                f"the data: the largest estimated relative error is {reached:.3g}. Pass a "
                "larger max_passes, a larger n_oversamples (wider sketches converge faster), "
                f"or accept the estimates (res.errors).{fix}",
                RuntimeWarning,
                stacklevel=2,
            )
    return Decomposition(
        U,
        S,
        V,
        stats.mean,
        stats.total_ss,
        stats.nan_mask,
        "compressed",
        settings,
        errors,
        total_norm=total_norm,
    )


def _bounds_or_warning(opts: CompressedOptions) -> bool:
    """Whether the error estimates will bound the errors; a warning, before any read, if not."""
    iterations = 1 if opts.converges else opts.n_power_iter  # converging: more than one pass
    if estimates_are_bounds(opts.krylov, opts.n_oversamples, iterations):
        return True
    why = "krylov=False" if not opts.krylov else f"n_oversamples={opts.n_oversamples}"
    warnings.warn(
        f"With {why} the error estimates (res.errors) are rough estimates, not upper "
        "bounds: on spectra with small gaps, clusters or slow decay near k they were "
        "measured up to 20 times below the true errors. res.settings['error_bounds'] says "
        "so (False). For estimates that bound the errors keep krylov=True and "
        f"n_oversamples >= {BOUND_MIN_OVERSAMPLES} (the defaults).",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


def solve(ex, problem: Problem, omega, progress: Progress | None = None, make_side=None):
    """The passes over the data and the final step: the algorithm, orientation aside.

    The one block-Krylov loop of xsvd: the stripes of the data (``make_side`` None:
    :class:`.SampleStripes` or :class:`.FeatureStripes`, as ``problem.stripes`` says) or
    a linear operator (:mod:`.operator`), each a *side* made by ``make_side(ex, problem)``
    with ``prepare()``, ``read(basis, stats, fill, first) -> (Sketch, stats)``,
    ``magnitudes(stats)`` and ``finish(stats)``; optionally ``sketch(basis) -> Sketch``
    for the final read of ``problem.reread``, which needs only the stripe side (the
    operator: ``A W`` without ``A^T A W``). A Krylov space of its own: see
    :class:`.operator.FusedSide`; several, each its own stop test: ``stopping(problem)``.

    Returns the stripe-side and thin-side singular vectors, the singular
    values, their error estimates and the feature statistics, as arrays of
    the input's kind (in the units of the rescaled data, see
    :func:`.magnitude.scaled_back`), and the problem as it ran (its ``n_power_iter``
    the iterations made, ``stopped`` why).
    """
    make_side = make_side or _side
    side = make_side(ex, problem)
    start = ex.call(getattr(side, "start", orth), omega)
    carry = Carry(basis=start, fill=side.prepare())
    if carry.fill is not None and problem.prepass:
        carry = ex.end_pass(carry)  # the means' own read
    adaptive = problem.options.converges
    room = getattr(side, "room", lambda blocks: _krylov_room(problem, blocks))
    p, stopped = 0, None
    while True:
        full = problem.options.krylov and room(p + 1) == 0  # full: exact, no stop test
        last = p + 1 >= problem.most_iterations or full
        carry = _one_pass(ex, problem, side, carry, first=p == 0, last=last, keep=adaptive)
        if p == 0 and problem.watch_range and ex.concrete and not problem.rescaled:
            amax = backend.to_numpy(side.magnitudes(carry.stats))
            w, e = problem.given_weights, problem.result_exp
            if needs_rescaling(amax, w, problem.dtype, e):
                # too large or small to multiply: read the first pass again, rescaled
                problem = _rescaled(ex, problem, amax)
                side = make_side(ex, problem)
                carry = Carry(basis=start, fill=carry.fill)
                if progress is not None:
                    progress.total = problem.most_passes
                continue
        stopped = _converged(problem, carry.sketches, side) if adaptive and not full else None
        if last or stopped:
            break
        carry = replace(carry, basis=_following(ex, problem, side, carry.sketches))
        p += 1
    if stopped is None:
        stopped = SPACE_FULL if full else MAX_PASSES if adaptive else FIXED
    problem = replace(problem, n_power_iter=p, stopped=stopped)
    stripe_side, thin_side, S, errors = _final_factors(ex, problem, carry.sketches, side, carry)
    return stripe_side, thin_side, S, errors, side.finish(carry.stats), problem


def _rescaled(ex, problem: Problem, amax) -> Problem:
    """The problem with every feature and weight brought near 1 by powers of two."""
    convert = np.float64 if problem.narrowing else problem.dtype
    r = rescaling(amax, problem.given_weights, problem.dtype, convert)
    return replace(
        problem,
        weights=backend.on_backend_of(r.weights, ex.like),
        column_scale=backend.on_backend_of(np.ldexp(1.0, r.column_exp), ex.like),
        column_exp=r.column_exp,
        result_exp=r.result_exp,
        rescaled=True,
    )


def _side(ex, problem: Problem):
    return (SampleStripes if problem.stripes == SAMPLES else FeatureStripes)(ex, problem)


def _one_pass(
    ex, problem: Problem, side, carry: Carry, first: bool, last: bool, keep: bool
) -> Carry:
    """One read of the data: its sketch, as the next basis and the final step need it
    (``keep``: every pass may be the last, ``tol``: keep the whole sketch)."""
    sketch, stats = side.read(carry.basis, carry.stats, carry.fill, first)
    sketch = replace(sketch, basis=carry.basis)
    if first and problem.watch_range and not ex.concrete:
        # one lazy graph cannot read the first pass again: refuse what it cannot multiply
        amax, w, e = side.magnitudes(stats), problem.given_weights, problem.result_exp
        checked = ex.call(within_range, sketch.cross, amax, w, e, problem.dtype)
        sketch = replace(sketch, cross=checked)
    if problem.reread and not (first and last):  # the final step reads the data again
        kept = [*carry.sketches, replace(sketch, blocks=None, gram=None)]
    elif problem.options.krylov:  # the final step uses every pass's sketch
        kept = [*carry.sketches, sketch if (last or keep) else replace(sketch, gram=None)]
    else:  # only the last one
        kept = [sketch] if (last or keep) else [replace(sketch, blocks=None, gram=None)]
    return ex.end_pass(Carry(None, stats, kept, carry.fill))


def _following(ex, problem: Problem, side, kept: list[Sketch]):
    """The next pass's basis, from the last sketch: once the stop test says to go on."""
    bases, cross = [s.basis for s in kept], kept[-1].cross
    if hasattr(side, "following"):  # a side with its own Krylov blocks
        return side.following(cross, bases)
    if problem.options.krylov:  # block Lanczos: the next block orthogonal to all before
        return ex.call(orth_against, cross, bases, _krylov_room(problem, len(kept)))
    return ex.call(orth, cross)  # subspace iteration


def _krylov_room(problem: Problem, blocks: int) -> int:
    """Columns of the next Krylov block after ``blocks`` blocks: ``l``, or what is left to explore.

    Every block after the first (random) one lies in the range of the data,
    of dimension at most ``min(m, n)``: the space is full at ``l + min(m, n)``
    columns, or at the thin side's length.
    """
    rank = min(problem.thin_length, problem.stripe_length)
    return krylov_room(problem.thin_length, rank, problem.width, blocks * problem.width)


def _estimate_inputs(sketches: list[Sketch]):
    """The thin-side bases and their images that the error estimates use."""
    return [s.basis for s in sketches], [s.cross for s in sketches]


def _converged(problem: Problem, sketches: list[Sketch], side=None) -> str | None:
    """``tol``: why the passes may stop (:func:`._small.stop_reason`), or None (concrete
    executors).

    On the Ritz values (the thin side's, or ``side.ritz``) the final step can only improve.
    """
    if len(sketches) == 1 and problem.options.krylov:
        return None  # the Ritz pairs of the first (random) basis say nothing yet
    if hasattr(side, "stopping"):  # a side of several problems: each its own test
        return side.stopping(problem)
    if hasattr(side, "ritz"):
        _, _, S, errors = side.ritz(*_estimate_inputs(sketches), problem.k, problem.dtype)
    else:
        errors, S = thin_errors(*_estimate_inputs(sketches), problem.k, problem.dtype)
    if problem.watched is not None:
        errors, S = errors[: problem.watched], S[: problem.watched]
    opts, power = problem.options, getattr(side, "power", 2)
    return stop_reason(errors, S, opts.tol, opts.default_stop, problem.dtype, power)


def _listed(*items):
    return list(items)


def _final_factors(ex, problem: Problem, sketches: list[Sketch], side, carry: Carry):
    """Singular vectors, values and error estimates from the passes' sketches.

    - One pass: the stripe-side sketch of it (single-pass SVD, see
      :func:`._small.finalize`); nothing bounds its error without another
      read, so the estimates are unknown (inf). Unless its block filled the
      thin side (``stopped == "space full"``): the Ritz triplets below are
      then exact, with their (rounding) estimates.
    - Block Krylov (``krylov``, more passes): the Rayleigh-Ritz triplets of
      the span of every pass's basis (:func:`._small.krylov_finish`), with
      exact residuals. The sketches ``K = [Y_0 - 1 c_0^T, Y_1, ..., Y_q]``
      are handled stripe by stripe (their Gram matrix summed, each stripe's
      singular vectors its rows of ``K`` times the rotation), so no
      stripe-side matrix larger than a stripe is formed.
    - Block Krylov with ``problem.reread`` (sketches too large to keep): the
      same Ritz triplets from the thin side alone (``K^T K = W^T C^T C W =
      W^T Z``), and the stripe-side vectors ``C W X / s`` from one more read.
    - Subspace iteration: the stripe-side sketch of the last pass; the
      estimates, from the Ritz pairs of the pass's basis, are conservative.
    """
    k, dtype = problem.k, problem.dtype
    last = sketches[-1]
    if hasattr(side, "ritz"):  # a side with its own Ritz triplets, from its bases alone
        return side.ritz(*_estimate_inputs(sketches), k, dtype)
    if problem.reread and problem.n_power_iter > 0:
        bases, crosses = _estimate_inputs(sketches)
        rotation, thin, S, errors = ex.call(krylov_finish, None, bases, crosses, k, dtype, nout=4)
        basis = ex.call(reread_basis, bases, rotation, S)
        sketch = getattr(side, "sketch", None)  # a side that reads less for the sketch alone
        again = sketch(basis) if sketch else side.read(basis, carry.stats, carry.fill, False)[0]
        parts = ex.end_pass(ex.map(reread_vectors, again.blocks, again.mean_row, S))
    elif problem.options.krylov and (problem.n_power_iter > 0 or problem.stopped == SPACE_FULL):
        rows = ex.call(_listed, *[s.mean_row for s in sketches])  # one task argument
        others = tuple(s.blocks for s in sketches[1:])
        gram = ex.sum(ex.map(krylov_gram, sketches[0].blocks, rows, per_stripe=others))
        bases, crosses = _estimate_inputs(sketches)
        rotation, thin, S, errors = ex.call(krylov_finish, gram, bases, crosses, k, dtype, nout=4)
        parts = ex.map(krylov_vectors, sketches[0].blocks, rows, rotation, per_stripe=others)
    else:
        rotation, thin, S = ex.call(finalize, last.cross, last.gram, k, dtype, nout=3)
        parts = ex.map(stripe_vectors, last.blocks, last.mean_row, rotation)
        if problem.n_power_iter > 0:
            errors = ex.call(_conservative_errors, *_estimate_inputs([last]), S, dtype)
        else:
            errors = ex.call(_unknown_errors, S)
    stripe_side = ex.concat(parts, [(s, k) for s in ex.sizes], np.float64)
    thin_side = ex.array(thin, (problem.thin_length, k), np.float64)
    S = ex.array(S, (k,), np.float64)
    return stripe_side, thin_side, S, ex.array(errors, (k, 3), np.float64)


def _conservative_errors(bases, crosses, S, dtype):
    return thin_errors(bases, crosses, S.shape[0], dtype)[0]


def _unknown_errors(S):
    return unknown_errors(backend.api(S), S.shape[0], like=S)
