"""Exact SVD: LAPACK for in-memory data, tall-skinny QR for Dask.

The centered, weighted float matrix ``B`` is formed with the array module of
the data: NumPy or CuPy in memory (then handed to ``linalg.svd``: LAPACK's
gesdd for NumPy, cuSOLVER for CuPy), ``dask.array`` for Dask (lazily,
centering and weights fused elementwise into the chunks; then
``dask.array.linalg.svd``, a tall-skinny QR, Benson, Gleich & Demmel 2013).
TSQR needs the short dimension in a single chunk and every block at least as
tall as it is wide; xsvd rechunks so that holds, so the user never has to.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import backend
from .blas import small_blas
from .common import Decomposition, Locate, fix_signs, frobenius_norm, nan_rows, validate_shape
from .missing import MissingRule, check_infinite, check_nan_counts, missing_rule
from .options import Preprocessing, ordered_settings, split_options, takes_options
from .progress import Progress

__all__ = ["exact_svd"]

# Above this many columns in the short dimension, TSQR blocks get large.
_TSQR_WARN_WIDTH = 10_000
#: float32 matrices whose largest magnitude is outside ``2**-60 .. 2**60`` are
#: multiplied by a power of two before their SVD (singular values beyond
#: float32's range would be ``inf`` or lose precision; results are float64).
FLOAT32_SAFE = (-60, 60)


@takes_options(Preprocessing)
def exact_svd(
    a,
    k: int | None = None,
    *,
    weights=None,
    locate: Locate | None = None,
    compute: bool = False,
    progress: bool = False,
    **options,
) -> Decomposition:
    """Exact (thin) SVD of ``B = (A - mean) * weights``, optionally truncated to ``k``.

    Parameters
    ----------
    a : array (m, n)
        NumPy, CuPy or Dask array (samples x features).
    k : int, optional
        Keep the first ``k`` components (all ``min(m, n)`` when None).
    weights, locate, compute, progress, **options
        As for :func:`xsvd.linalg.randomized_svd` (``missing="mean"`` fills a
        float copy here, as the exact SVD needs the whole matrix anyway).

    Returns
    -------
    Decomposition

    Notes
    -----
    Integer data are decomposed in float64, float32 data in float32; results
    are float64. A float32 matrix whose largest magnitude is outside about
    1e-18 to 1e18 is multiplied by a power of two (exact) for the SVD and
    its singular values scaled back in float64, so they are finite and
    right beyond float32's range.
    For Dask input the result is lazy unless ``compute=True``; the short
    dimension is put in one chunk and each block made at least as tall as it
    is wide.

    Examples
    --------
    >>> import numpy as np
    >>> from xsvd.linalg import exact_svd
    >>> a = np.random.default_rng(0).standard_normal((100, 8))
    >>> d = exact_svd(a)
    >>> np.allclose(d.S, np.linalg.svd(a, compute_uv=False))
    True
    """
    (read,) = split_options(options, (Preprocessing,), "exact_svd")
    m, n = a.shape
    k = validate_shape(m, n, k, center=read.center is True, required=False)
    given = read.given_center(n)
    dtype = np.float32 if backend.numpy_dtype(a.dtype) == np.float32 else np.float64
    # float32 data whose values or weights float32 cannot multiply: B is made in
    # float64, then brought near 1 and decomposed in float32
    wide = dtype == np.float32 and _beyond_float32(a, weights)
    rule = missing_rule(a.dtype, read.missing, read.negative_missing)
    center = read.centers if given is None else given
    B, mean, nan_mask = _prepare(a, np.float64 if wide else dtype, center, weights, rule, locate)
    B, scale = _in_range(B, wide)
    if backend.is_dask(B):
        U, S, V = _tsqr_svd(B)
    else:
        with small_blas(B):  # a small matrix: one BLAS thread; the data's SVD: all of them
            U, S, Vt = backend.api(B).linalg.svd(B, full_matrices=False)
        V = Vt.T
    # float64 results whatever the input, as from the compressed solver
    U, S, V = (backend.astype(x, np.float64) for x in (U, S, V))
    if scale is not None:
        S = S / scale
    with np.errstate(over="ignore"):  # beyond float64: the shares come from total_norm
        total_ss = backend.array_module(S).sum(S**2)
    total_norm = frobenius_norm(S)
    if k is not None:
        U, S, V = U[:, :k], S[:k], V[:, :k]
    U, V = fix_signs(U, V)
    if nan_mask is not None:
        V = nan_rows(V, nan_mask)
    errors = S[:, None] * backend.on_backend_of(np.zeros((1, 3)), S)  # exact: none, to rounding
    settings = ordered_settings(k=k, weighted=weights is not None, **read.settings())
    d = Decomposition(
        U, S, V, mean, total_ss, nan_mask, "exact", settings, errors, total_norm=total_norm
    )
    if not compute:
        return d
    return d.computed(Progress() if progress and backend.is_dask(a) else None)


def _prepare(a, dtype, center, weights, rule: MissingRule, locate):
    """``B`` as a float array of the data's kind, its feature means and all-missing mask.

    ``center``: True, False, or the values to subtract (a float64 host vector), which
    then fill in missing values too (``missing="mean"``), and are 0 at features NaN at
    every sample under ``missing="error"`` (zeros there, so they stay zero).
    """
    given = None if isinstance(center, bool) else backend.on_backend_of(center, a)
    if backend.is_packed(a) and not backend.is_dask(a):  # genotypes: unpacked (exact)
        a = a.unpack(dtype)  # on the bytes' backend (a device's library takes no duck array)
    xp = backend.array_module(a)  # numpy, cupy or dask.array: the same code for each
    m = a.shape[0]
    f64 = backend.to_dtype(xp, np.float64)
    # float64 from float32 keeps subnormal values on devices that flush them
    B = backend.float64_exact(a) if np.dtype(dtype) == np.float64 else backend.astype(a, dtype)
    if backend.numpy_dtype(a.dtype).kind in "fc":  # every block of B waits for its check
        infinite = backend.map_blocks(
            _checked_finite, xp.any(xp.isinf(B), axis=0), locate, dtype=bool, meta=_bool_meta(B)
        )
        B = backend.map_blocks(_after_check, B, infinite[None, :], dtype=dtype)
    nan_mask = None
    if rule.fills:
        mask = rule.mask(xp, B)
        zeroed = xp.where(mask, 0.0, B)
        present = m - xp.count_nonzero(mask, axis=0)
        nan_mask = present == 0
        if given is None:
            divisor = backend.astype(xp.maximum(present, 1), np.float64)
            fill = backend.astype(xp.sum(zeroed, axis=0, dtype=f64) / divisor, dtype)
        else:
            fill = backend.astype(given, dtype)
        B = xp.where(mask, fill[None, :], zeroed)
    elif rule.active:
        isnan = xp.isnan(B)
        nan_mask = backend.map_blocks(
            _checked_mask,
            xp.count_nonzero(isnan, axis=0),
            m,
            locate,
            dtype=bool,
            meta=_bool_meta(B),
        )
        # every block of B waits for the NaN check of its features
        B = backend.map_blocks(
            _after_check, xp.where(isnan, 0.0, B), nan_mask[None, :], dtype=dtype
        )
    mean = None
    if given is not None:
        mean = given
        if nan_mask is not None and not rule.fills:
            mean = xp.where(nan_mask, 0.0, mean)
        B = B - backend.astype(mean, dtype)
    elif center:
        mean = xp.sum(B, axis=0, dtype=f64) / m
        B = B - backend.astype(mean, dtype)
    if weights is not None:
        B = B * backend.astype(backend.on_backend_of(weights, B), dtype)
    return B, mean, nan_mask


def _beyond_float32(a, weights) -> bool:
    """Whether float32 data, or their weights, are too large or small to prepare in float32.

    Weights with a nonzero magnitude outside :data:`FLOAT32_SAFE`, or (NumPy
    and CuPy data: measured here, cheap beside the SVD) data whose largest
    magnitude is (subnormal values included); Dask data on a device that flushes
    subnormal values, whose magnitude is not known before the read.
    """
    low, high = 2.0 ** FLOAT32_SAFE[0], 2.0 ** FLOAT32_SAFE[1]
    if weights is not None:
        w = np.abs(np.asarray(backend.to_numpy(weights), dtype=np.float64))
        w = w[w > 0]
        if w.size and (w.min() < low or w.max() > high):
            return True
    if backend.is_dask(a):  # not measured before the read: on a device that flushes
        return backend.flushes_subnormals(backend.chunk_type(a))  # subnormals, always
    if backend.is_packed(a) or a.size == 0:
        return False  # genotypes: 0, 1, 2
    xp = backend.namespace(a)
    if xp is np and not backend.flushes_subnormals(a):  # NaN (missing) left out, no copy
        flat = a.reshape(-1)
        top = max(float(np.fmax.reduce(flat)), -float(np.fmin.reduce(flat)))
    else:  # on a device that flushes subnormal float32 values: from their bits
        top = backend.to_scalar(backend.api(a).max(backend.column_magnitudes(a)))
    return bool(np.isfinite(top) and 0 < top and not low <= top <= high)


def _in_range(B, wide: bool = False):
    """``B`` times a power of two that brings a float32 ``B`` of extreme magnitude near 1.

    ``wide``: ``B`` is float64 (prepared so from float32 data) and comes
    back float32, always scaled. Returns ``(B, scale)``: the singular values
    of the ``B`` returned are ``scale`` times those of the one given (None:
    unchanged). Dask: the scale is a lazy 0-d array (1 where none is
    needed); NumPy and CuPy: nothing is multiplied where none is needed.
    """
    if (backend.numpy_dtype(B.dtype) != np.float32 and not wide) or B.size == 0:
        return (backend.astype(B, np.float32), None) if wide else (B, None)
    xp = backend.array_module(B)
    amax = xp.maximum(xp.max(B), -xp.min(B))
    low, high = (0, 0) if wide else FLOAT32_SAFE
    limit = int(np.finfo(backend.numpy_dtype(B.dtype)).maxexp) - 3
    if backend.is_dask(B):
        exponent = xp.clip(-xp.frexp(amax.astype(np.float64))[1], -limit, limit)
        needed = (amax > 0) & ((amax < 2.0**low) | (amax > 2.0**high))
        scale = xp.where(needed, xp.ldexp(1.0, exponent), 1.0)
        return (B * scale.astype(B.dtype)).astype(np.float32), scale
    amax = backend.to_scalar(amax)
    if amax == 0 or 2.0**low <= amax <= 2.0**high:
        return backend.astype(B, np.float32, copy=False), None
    scale = 2.0 ** int(np.clip(-np.frexp(amax)[1], -limit, limit))
    return backend.astype(B * scale, np.float32, copy=False), scale


def _bool_meta(B):
    if not backend.is_dask(B):
        return None  # only Dask's map_blocks takes a meta
    return backend.namespace(B).empty((0,), dtype=bool)


def _checked_mask(counts, m, locate, block_info=None):
    offset = block_info[0]["array-location"][0][0] if block_info else 0
    return check_nan_counts(counts, m, offset=offset, locate=locate)


def _checked_finite(flags, locate, block_info=None):
    offset = block_info[0]["array-location"][0][0] if block_info else 0
    check_infinite(flags, offset=offset, locate=locate)
    return flags


def _after_check(block, _mask):
    return block


def _tsqr_svd(B):
    """Thin SVD of a Dask matrix through TSQR, transposing short-wide input."""
    import dask.array as da

    m, n = B.shape
    wide = n > m
    X = B.T if wide else B
    rows, cols = X.shape
    if cols > _TSQR_WARN_WIDTH:
        gib = cols * cols * X.dtype.itemsize / 2**30
        warnings.warn(
            f"An exact SVD of a {m} x {n} Dask array puts {cols} columns in every block "
            f"(at least {gib:.1f} GiB each). Consider `.svd.compressed(k=...)`.",
            UserWarning,
            stacklevel=3,
        )
    # the short dimension in one chunk, every block at least as tall as wide
    row_chunk = max(cols, max(X.chunks[0]))
    X = X.rechunk({0: min(row_chunk, rows), 1: -1})
    u, s, vt = da.linalg.svd(X)
    if wide:
        return vt.T, s, u
    return u, s, vt.T
