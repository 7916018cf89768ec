"""EIGENSOFT's Tracy-Widom test of PCA eigenvalues, and the Tracy-Widom distribution of order 1.

:func:`tracy_widom` labels what :func:`twstats` computes (plain NumPy, and
SciPy's Airy function, imported when needed).

The distribution
----------------
The largest eigenvalue of a large real Wishart (or GOE) matrix, centered and
scaled, follows the Tracy-Widom law of order 1 (TW1). Its distribution
function is a Fredholm determinant (Ferrari & Spohn 2005; Bornemann 2010,
eq. 5.7)::

    F1(s) = det(I - K_s)  on L2(s, inf),   K_s(x, y) = Ai((x + y) / 2) / 2

computed as Bornemann (2010) does, by a Nystrom discretization: Gauss-Legendre
nodes ``x_i`` and weights ``w_i`` on ``(s, b)``, with ``b`` far enough that
the Airy kernel is negligible beyond it, and ``F1(s) = det(I - A)``,
``A_ij = sqrt(w_i) K_s(x_i, x_j) sqrt(w_j)``. The error falls exponentially
with the number of nodes; 48 give about 13 correct digits. The right tail
``1 - F1(s)`` (the p-value) comes from the eigenvalues ``mu_i`` of the
symmetric ``A``, as ``-expm1(sum(log1p(-mu_i)))``, so that it keeps its
relative accuracy where ``F1`` rounds to 1 (down to about 1e-300).

References: F. Bornemann, "On the numerical evaluation of distributions in
random matrix theory: a review", Markov Process. Related Fields 16 (2010)
803-866; C. A. Tracy and H. Widom, "On orthogonal and symplectic matrix
ensembles", Commun. Math. Phys. 177 (1996) 727-754.

The test
--------
:func:`twstats` follows EIGENSOFT's ``twstats`` program (Patterson, Price &
Reich 2006, "Population structure and eigenanalysis", PLoS Genet 2(12):
e190): for component ``i`` it takes the ``m`` eigenvalues from ``i`` on,
normalizes them to mean 1 (``e = lambda * m / sum(lambda)``), estimates the
effective number of markers as ``twstats`` does, ``n = m (m + 2) / (sum(e**2)
- m)`` (the paper's own formula differs in terms of lower order; ``n`` is
fixed instead when given), and compares ``x = n e_i`` with Johnstone's (2001)
centering and scaling::

    mu    = (sqrt(n - 1) + sqrt(m))**2
    sigma = (sqrt(n - 1) + sqrt(m)) * (1 / sqrt(n - 1) + 1 / sqrt(m))**(1/3)
    TW    = (x - mu) / sigma,      p-value = 1 - F1(TW)

(``n`` and ``m`` swap where ``n < m``, as in EIGENSOFT). With fewer than
``min_remaining`` eigenvalues left (10 in ``twstats``) the test is not made.

Against EIGENSOFT
-----------------
Checked against EIGENSOFT 8.0.0's ``twstats`` and ``smartpca`` (Debian's
``eigensoft``; tests/test_eigensoft.py, benchmarks/eigensoft.py): on the
same eigenvalues the statistic, p-value and ``n'`` agree to the precision
``twstats`` prints (3 decimals, 6 significant digits, 3 decimals), on
structured and pure-noise spectra, with ``n'`` estimated or given (``-n``).
The conventions: ``m`` is the number of nonzero eigenvalues from component
``i`` on (``n_samples - 1`` for a centered PCA with more markers than
samples; the number of markers when there are fewer, and ``n'`` then
estimates the other dimension, the number of samples). The eigenvalues may
be on any scale: ``smartpca`` scales its relationship matrix to trace
``n_samples - 1`` (its ``.eval`` is ``(n_samples - 1) *
explained_variance_ratio``), PLINK 2 divides by the number of variants,
xsvd's ``S**2`` by nothing; the test normalizes them to mean 1. Where they
differ, on purpose:

- p-values: ``twstats`` interpolates a table of ``1 - F1`` on ``[-8, 8]``
  (cubic Hermite on values to 9 decimals; within 1e-7 of :func:`tw1_sf`),
  and beyond 8 returns Margetis and Edelman's asymptotic TW1 *density*,
  ``s**-1/4 exp(-2 s**1.5 / 3) / (4 sqrt(pi))``, about ``sqrt(s)`` times
  the tail (its p-values past 8 are too large by that factor, all below
  3e-8; at 8 they jump from 8e-9 up to 2.3e-8). xsvd computes the tail at
  every ``s``; both underflow to 0 past ``s`` of about 107.
- Zero eigenvalues: ``twstats`` drops values up to 1e-6 whatever their
  scale (feed it eigenvalues of mean about 1); xsvd drops those up to 1e-8
  times the mean, so the scale does not matter.
- Equal eigenvalues (``sum(e**2) = m``, ``n'`` infinite): ``twstats``
  crashes; xsvd returns NaN.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import xarray as xr

from ..core import backend
from ..core.missing import GENOTYPES
from ..labeled.dims import default_sample_dim
from ..labeled.layout import component_labels
from .results import spectrum

__all__ = [
    "tracy_widom",
    "relationship_eigenvalues",
    "twstats",
    "tw1_cdf",
    "tw1_sf",
    "TW1_MEAN",
    "TW1_VARIANCE",
    "GRAM_BLOCK_BYTES",
]

#: Bytes of float64 values a block of variants is unpacked to at a time for the Gram matrix.
GRAM_BLOCK_BYTES = 32 * 2**20

#: The mean and variance of TW1 (as tabulated by Bornemann 2010), for tests and checks.
TW1_MEAN = -1.2065335745820
TW1_VARIANCE = 1.6077810345810

#: Gauss-Legendre nodes of the Nystrom discretization.
_NODES = 48
#: Below this, F1 < 1e-21: reported as 0 (the discretization is not relative there).
_LEFT = -10.0


def _special():
    try:
        import scipy.special
    except ImportError as exc:  # pragma: no cover - scipy is in the test extra
        raise ImportError(
            "The Tracy-Widom distribution needs SciPy's Airy function: "
            'pip install "xsvd[genomics]"'
        ) from exc
    return scipy.special


def _ai(x: np.ndarray, special) -> np.ndarray:
    """The Airy function Ai: ``airy`` up to 2, past it the modified Bessel function
    ``Ai(x) = sqrt(x / 3) K_{1/3}(z) / pi``, ``z = 2 x**1.5 / 3`` (SciPy's ``airy`` also
    computes the growing ``Bi``, slowly, for large ``x``)."""
    out = np.empty_like(x)
    near = x <= 2.0
    out[near] = special.airy(x[near])[0]
    far = x[~near]
    z = 2.0 * far**1.5 / 3.0
    out[~near] = np.sqrt(far / 3.0) / np.pi * special.kve(1.0 / 3.0, z) * np.exp(-z)
    return out


def _nystrom(s: np.ndarray, special) -> np.ndarray:
    """The symmetric Nystrom matrices ``A`` of ``Ai((x+y)/2)/2`` on ``(s, b)``, one per ``s``."""
    a = np.maximum(s, 0.0)
    # past b - s, Ai((x+y)/2) is below ~1e-20 of its value at the left end
    reach = (a**1.5 + 69.0) ** (2.0 / 3.0) - a
    b = a + 2.0 * reach
    x, w = np.polynomial.legendre.leggauss(_NODES)
    half = ((b - s) / 2.0)[:, None]
    x = s[:, None] + half * (x + 1.0)
    root = np.sqrt(w * half)
    i, j = np.triu_indices(_NODES)  # the kernel is symmetric: half of it
    kernel = np.empty((s.size, _NODES, _NODES))
    kernel[:, i, j] = 0.5 * _ai((x[:, i] + x[:, j]) / 2.0, special)
    kernel[:, j, i] = kernel[:, i, j]
    return root[:, :, None] * kernel * root[:, None, :]


def _log_f1(s: np.ndarray) -> np.ndarray:
    """``log F1(s)`` for finite ``s`` (1-D), a batch of determinants at a time."""
    special = _special()
    out = np.full(s.shape, -np.inf)
    inside = np.flatnonzero(s >= _LEFT)
    for start in range(0, inside.size, 256):
        idx = inside[start : start + 256]
        mu = np.linalg.eigvalsh(_nystrom(s[idx], special))
        with np.errstate(invalid="ignore", divide="ignore"):
            logs = np.log1p(-mu).sum(axis=-1)
        out[idx] = np.where(np.all(mu < 1.0, axis=-1), logs, -np.inf)
    return out


def _evaluate(s, finite_value, infinite_value) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    flat = s.ravel()
    out = np.where(np.isnan(flat), np.nan, infinite_value(flat))
    ok = np.isfinite(flat)
    if ok.any():
        out[ok] = finite_value(_log_f1(flat[ok]))
    return out.reshape(s.shape)


def tw1_cdf(s) -> np.ndarray:
    """The TW1 distribution function ``F1(s)`` (float or array of floats)."""
    return _evaluate(s, np.exp, lambda v: (v > 0).astype(np.float64))


def tw1_sf(s) -> np.ndarray:
    """``1 - F1(s)``, with full relative accuracy in the right tail (the p-value)."""
    return _evaluate(s, lambda log: 0.0 - np.expm1(log), lambda v: (v < 0).astype(np.float64))


def twstats(
    eigenvalues: np.ndarray,
    *,
    n_total: int,
    total: float,
    total_squares: float | None,
    n_markers: float | None = None,
    min_remaining: int = 10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EIGENSOFT's Tracy-Widom test of each of the leading ``eigenvalues``.

    Parameters
    ----------
    eigenvalues : array
        The leading eigenvalues, in decreasing order (any common scale).
    n_total : int
        How many nonzero eigenvalues there are in all (``m`` of the first test).
    total, total_squares : float
        The sum of all ``n_total`` eigenvalues and of their squares;
        ``total_squares`` may be None when ``n_markers`` is given.
    n_markers : float, optional
        A fixed (effective) number of markers instead of the estimate.
    min_remaining : int
        No test with fewer eigenvalues left than this.

    Returns
    -------
    (statistic, p_value, effective_n) : arrays, NaN where no test is made.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if n_markers is None and total_squares is None:
        raise ValueError("twstats needs the sum of squares of all eigenvalues or n_markers.")
    k = lam.size
    before = np.concatenate([[0.0], np.cumsum(lam)[:-1]])
    before_sq = np.concatenate([[0.0], np.cumsum(lam**2)[:-1]])
    stat = np.full(k, np.nan)
    n_eff = np.full(k, np.nan)
    for i in range(k):
        m = n_total - i
        rest = total - before[i]
        if m < max(min_remaining, 2) or not rest > 0 or not lam[i] > 0:
            continue
        scale = m / rest  # the remaining eigenvalues, normalized to mean 1
        if n_markers is None:
            squares = (total_squares - before_sq[i]) * scale**2
            excess = squares - m
            if not excess > 0:
                continue
            n = m * (m + 2.0) / excess
        else:
            n = float(n_markers)
        stat[i] = _johnstone(lam[i] * scale * n, m, n)
        n_eff[i] = n
    p_value = np.full(k, np.nan)
    done = np.isfinite(stat)
    if done.any():
        p_value[done] = tw1_sf(stat[done])
    return stat, p_value, n_eff


def _johnstone(x: float, p: float, n: float) -> float:
    """Johnstone's (2001) centering and scaling, as EIGENSOFT's ``twnorm``."""
    if n < p:
        p, n = n, p
    if n <= 1 or p <= 0:
        return np.nan
    root = np.sqrt(n - 1.0) + np.sqrt(p)
    mu = root**2
    sigma = root * (1.0 / np.sqrt(n - 1.0) + 1.0 / np.sqrt(p)) ** (1.0 / 3.0)
    return (x - mu) / sigma


def tracy_widom(
    eigenvalues,
    *,
    n_variants: float | None = None,
    min_remaining: int = 10,
) -> xr.Dataset:
    """Tracy-Widom significance of each eigenvalue, as EIGENSOFT's ``twstats`` computes it.

    Patterson, Price & Reich (2006) test whether component ``i`` is
    structure or noise by comparing its eigenvalue, among the eigenvalues
    from ``i`` on, with the largest eigenvalue of a Wishart matrix of pure
    noise: normalized to mean 1 and multiplied by the effective number of
    markers ``n'``, centered and scaled with Johnstone's (2001) ``mu`` and
    ``sigma``, it follows the Tracy-Widom law of order 1 under the null
    (its distribution function computed as the Fredholm determinant of the
    Airy kernel, discretized as Bornemann 2010 does). The test runs
    down the components (each one among those that follow it), so the
    number of significant leading components estimates how many PCs carry
    population structure.

    ``n'`` is estimated from the spread of the eigenvalues as ``twstats``
    does, ``n' = m (m + 2) / (sum(e**2) - m)`` for the ``m`` eigenvalues
    ``e`` normalized to mean 1 (the paper's formula, ``(m + 1) m**2 / ((m -
    1) sum(e**2) - m**2)``, differs only in terms of lower order), which
    needs all of them: those of :func:`relationship_eigenvalues` (the
    samples' Gram matrix, streamed over the variants: seconds where
    ``exact`` takes minutes), a result that holds every component (``exact``
    without ``k``), or the full list. A compressed result holds the leading
    components only: give its data to :func:`relationship_eigenvalues`
    (``n'`` cannot be estimated from the leading components). ``n_variants``
    fixes ``n'`` instead, as ``twstats -n`` does; a count of variants is not
    an effective number of markers: LD, even after pruning, makes ``n'``
    smaller than the count, and the test with the count calls noise
    components significant. With LD the test is too liberal even with ``n'``
    estimated (as in EIGENSOFT, whose ``twstats`` gives the same numbers;
    see the module notes): the null of independent markers does not hold,
    and blocks of linked variants make significant components of their own.
    Prune hard before reading the count as a number of ancestry axes (the
    genomics guide, "Tracy-Widom, EIGENSOFT and LD", has measured numbers).

    Parameters
    ----------
    eigenvalues : SVDResult or array-like
        A PCA result (its ``S**2``; any scale, the test is scale-free), or
        all the eigenvalues of one, on any common scale (e.g. every line of
        a ``.eigenval`` file of all components, or EIGENSOFT's ``.eval``).
        Values at most 1e-8 of the mean count as zero (a centered PCA
        leaves one) and are not tested.
    n_variants : float, optional
        A fixed effective number of markers instead of the estimate
        (``twstats -n``; not the number of variants, see above).
    min_remaining : int, default 10
        No test (NaN) with fewer eigenvalues left, as ``twstats``.

    Returns
    -------
    xarray.Dataset
        Along ``component``: ``statistic`` (the TW statistic), ``p_value``
        and ``effective_n`` (``n'``).

    References
    ----------
    N. Patterson, A. L. Price and D. Reich, "Population structure and
    eigenanalysis", PLoS Genet. 2 (2006) e190. I. M. Johnstone, "On the
    distribution of the largest eigenvalue in principal components
    analysis", Ann. Statist. 29 (2001) 295-327. F. Bornemann, "On the
    numerical evaluation of distributions in random matrix theory: a
    review", Markov Process. Related Fields 16 (2010) 803-866. Needs SciPy
    (``pip install "xsvd[genomics]"``) for the Airy function.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=120, n_populations=3)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> res = kept.svd.exact(dim="samples", center=True, weights=w)
    >>> tw = xsvd.tracy_widom(res)
    >>> (tw.p_value.values[:4] < 1e-6).tolist()
    [True, True, False, False]
    """
    from ..labeled.result import SVDResult

    if n_variants is not None and not (
        isinstance(n_variants, int | float | np.integer | np.floating)
        and not isinstance(n_variants, bool)
        and n_variants > 1
    ):
        raise ValueError(
            f"n_variants must be a number above 1 (the effective number of markers), got "
            f"{n_variants!r}; pass a number, e.g. `n_variants=int(text)` for a count read "
            "as text."
        )
    if isinstance(min_remaining, bool) or not isinstance(min_remaining, int | np.integer):
        raise ValueError(f"min_remaining must be an integer, got {min_remaining!r}.")
    if isinstance(eigenvalues, SVDResult):
        k, n, p, lam = spectrum(eigenvalues)
        rank = min(n - 1 if eigenvalues.center else n, p)
        positive = int((lam > 1e-8 * 1.0 / max(rank, 1)).sum())
        coords = {"component": eigenvalues.S["component"].values}
        if k >= rank:  # every eigenvalue: n' can be estimated
            rank = min(rank, positive)
            lam = lam[:rank]
            coords = {"component": coords["component"][:rank]}
            sums = (float(lam.sum()), float((lam**2).sum()))
        elif n_variants is None:
            raise ValueError(
                f"The result holds {k} of its {rank} eigenvalues; estimating the effective "
                "number of markers needs them all: test every eigenvalue of the data, "
                "`xsvd.tracy_widom(xsvd.genomics.relationship_eigenvalues(kept, w, "
                "missing='mean'))` (fast: the Gram matrix of the samples), or decompose "
                "with `exact(...)` without `k`."
            )
        else:
            sums = (1.0, None)  # explained variance ratios: they sum to 1
    else:
        lam = np.asarray(getattr(eigenvalues, "values", eigenvalues), dtype=np.float64)
        if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)):
            raise ValueError("Expected a result or a 1-D array of finite eigenvalues.")
        lam = np.sort(lam)[::-1]
        lam = lam[lam > 1e-8 * max(lam.mean(), 0.0)]
        if lam.size == 0:
            raise ValueError("The eigenvalues are all zero (or negative): nothing to test.")
        rank = lam.size
        coords = {"component": component_labels(rank)}
        sums = (float(lam.sum()), float((lam**2).sum()))
    stat, p_value, n_eff = twstats(
        lam,
        n_total=rank,
        total=sums[0],
        total_squares=sums[1],
        n_markers=n_variants,
        min_remaining=int(min_remaining),
    )
    dims = ("component",)
    return xr.Dataset(
        {
            "statistic": (dims, stat, {"long_name": "Tracy-Widom statistic"}),
            "p_value": (dims, p_value, {"long_name": "p-value (TW1 upper tail)"}),
            "effective_n": (dims, n_eff, {"long_name": "effective number of markers n'"}),
        },
        coords=coords,
        attrs={"n_eigenvalues": int(rank)},
    )


def relationship_eigenvalues(
    gt: xr.DataArray,
    weights: xr.DataArray | None = None,
    *,
    dim: Hashable | None = None,
    center: bool = True,
    missing: str = "error",
) -> xr.DataArray:
    """Every eigenvalue of the samples' Gram matrix ``B B^T``, for :func:`tracy_widom`.

    ``B`` is the matrix ``.svd`` decomposes with the same options (samples
    along ``dim``, each variant centered and multiplied by its weight,
    missing calls at the variant's mean under ``missing="mean"``), so the
    values are ``S**2`` of ``exact`` without ``k``, every component, at a
    fraction of its cost: the ``n x n`` matrix is summed over blocks of
    variants (Dask chunk by chunk, a few MiB of them unpacked at a time) and
    only its eigenvalues are computed (``eigvalsh``). This is what
    EIGENSOFT's ``smartpca`` and ``twstats`` use, and what :func:`tracy_widom`
    needs to estimate the effective number of markers ``n'``, which a
    compressed result (its leading components only) cannot give.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D genotypes (NumPy, Dask, packed, or on a device), e.g. ``kept`` of
        :func:`patterson_scaling`.
    weights : xarray.DataArray, optional
        Along the variants, e.g. ``w`` of :func:`patterson_scaling`.
    dim : str, optional
        The sample dimension (default: as ``.svd`` takes it).
    center : bool, default True
        Remove each variant's mean over the samples.
    missing : {"error", "mean"}
        Missing calls (NaN, negative codes): an error, or the variant's mean.

    Returns
    -------
    xarray.DataArray
        The ``n_samples`` eigenvalues, largest first, along ``component``.

    Notes
    -----
    Memory: the ``n x n`` float64 matrix (per Dask chunk in flight) and
    :data:`GRAM_BLOCK_BYTES` of unpacked values; time ``n_variants * n**2``.
    The matrix comes to the host once (counted) for ``eigvalsh``.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=120, n_populations=3)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> lam = xsvd.genomics.relationship_eigenvalues(kept, w)
    >>> tw = xsvd.tracy_widom(lam)
    >>> lam.sizes["component"], (tw.p_value.values[:4] < 1e-6).tolist()
    (120, [True, True, False, False])
    """
    if missing not in ("error", "mean"):
        raise ValueError(f"missing must be 'error' or 'mean', got {missing!r}.")
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2:
        raise ValueError("relationship_eigenvalues needs 2-D genotypes (a DataArray).")
    dim = default_sample_dim(gt) if dim is None else dim
    if dim not in gt.dims:
        raise ValueError(f"dim={dim!r} is not a dimension of the data, {list(gt.dims)}.")
    vdim = next(d for d in gt.dims if d != dim)
    a = gt.transpose(vdim, dim).data
    n_var, n = a.shape
    w = None
    if weights is not None:
        if not isinstance(weights, xr.DataArray) or weights.dims != (vdim,):
            raise ValueError(f"weights must be a DataArray along {vdim!r}, as `w` is.")
        if vdim in weights.coords and vdim in gt.coords:
            weights = weights.sel({vdim: gt[vdim].values})
        elif weights.sizes[vdim] != gt.sizes[vdim]:
            raise ValueError(f"weights has {weights.sizes[vdim]} values for {n_var} variants.")
        w = np.asarray(weights.values, dtype=np.float64)
    if backend.is_dask(a):
        import dask.array as da

        a = a.rechunk({1: -1})  # whole rows: every pair of samples in each block
        rows = np.ones(a.shape[0]) if w is None else w
        wd = da.from_array(rows[:, None], chunks=(a.chunks[0], 1))
        meta = backend.namespace(a).empty((0, 0), dtype=np.float64)
        parts = da.map_blocks(
            _gram, a, wd, center, missing, chunks=((n,) * a.numblocks[0], (n,)),
            dtype=np.float64, meta=meta,
        )  # fmt: skip
        gram = parts.reshape(a.numblocks[0], n, n).sum(axis=0).compute()
    else:
        gram = _gram(a, None if w is None else w[:, None], center, missing)
    lam = np.linalg.eigvalsh(backend.to_numpy(gram))[::-1]
    return xr.DataArray(
        np.maximum(lam, 0.0),
        dims=("component",),
        coords={"component": component_labels(n)},
        name="eigenvalue",
        attrs={"long_name": "eigenvalues of B B^T (S**2 of every component)"},
    )


def _gram(x, w, center: bool, missing: str):
    """``B^T B`` of one block of variants (rows), on its device, a few MiB at a time."""
    xp = backend.api(x)
    rows, n = x.shape
    step = max(1, GRAM_BLOCK_BYTES // (8 * max(n, 1)))
    gram = None
    for r0 in range(0, rows, step):
        b = x[r0 : min(r0 + step, rows), :]
        v = b.astype(np.float64) if backend.is_packed(b) else backend.astype(b, np.float64)
        gone = GENOTYPES.mask(xp, v)
        if missing == "error" and bool(xp.any(gone)):
            raise ValueError(
                "The genotypes have missing calls (NaN or negative codes); pass "
                'missing="mean" to count each as its variant\'s mean, as .svd does.'
            )
        v = xp.where(gone, 0.0, v)
        if center:
            called = xp.sum(backend.astype(~gone, np.float64), axis=1, keepdims=True)
            mean = xp.sum(v, axis=1, keepdims=True) / xp.maximum(called, 1.0)
            v = xp.where(gone, 0.0, v - mean)
        if w is not None:
            v = v * backend.transfer(np.asarray(w[r0 : r0 + v.shape[0]]), like=v)
        part = v.T @ v
        gram = part if gram is None else gram + part
    if gram is None:
        return xp.zeros((n, n), dtype=xp.float64, device=backend.device(x))
    return gram
