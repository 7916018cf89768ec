"""The analytic signal of a field's columns, its transform as an operator, and block products.

A block is every sample of some features (the transform runs along the
samples, so it needs each series whole), as a 2-D array of any array-API
library: NumPy, CuPy, array-api-strict's second device. Everything here
uses the arrays' own namespace (:func:`xsvd.core.backend.api`), so a block
on a device stays there; the FFT is the standard's ``fft`` extension
(``rfft``/``irfft``).

With ``P = (X - 1 mu^T) diag(d)`` (the centered, weighted data) and ``Q =
H P`` (``H``, the ``m x m`` Hilbert transform along the samples, a linear
map: :func:`hilbert_transform`, its transpose :func:`hilbert_adjoint`), the
analytic signal is ``Z = P + iQ``. The products of its real form ``R =
[[P, -Q], [Q, P]]`` need only ``P``'s, with ``H`` applied to the small
blocks on the sample side:

- ``R^T [T1; T2] = P^T [T1 + H^T T2, T2 - H^T T1]`` (one product with the data);
- ``R [W1; W2] = [C1 - H C2; H C1 + C2]`` with ``[C1, C2] = P [W1, W2]`` (one).

So neither ``Q`` nor a complex copy of the data is ever formed, the data are
read as they are stored (any chunks: no series needs to be whole), and a
product costs two real products of the data's size, not four.
"""

from __future__ import annotations

import numpy as np

from ..core import backend
from ..core.randomized.stripe import fill_missing

__all__ = [
    "analytic_signal",
    "hilbert_transform",
    "hilbert_adjoint",
    "column_stats",
    "block_products",
]

#: ``padding="exp"``: each end is extended by this many series lengths (less one sample).
PAD_LENGTHS = 1
#: Columns per FFT on NumPy: the transform along the samples (a strided axis) is fastest
#: when a few dozen columns fit the cache (measured on 2 cores, 8,998 x 2,048: 32 to 64
#: columns 1.2 s, 256 columns 2.0 s, all at once 9 s).
FFT_COLUMNS = 32
#: Series whose (padded) length has a prime factor above this are transformed as a linear
#: convolution of a fast length (factors 2, 3 and 5) at least twice as long: ``padding="exp"``
#: of 3,000 samples (8,998 = 2 x 11 x 409) in 0.62 s instead of 0.80 s per 512 columns
#: (measured on 2 cores; a factor of 83, 6,142 samples, is faster as it is).
SLOW_PRIME = 100


def _taper(x, padding: str, decay_factor: float):
    """``(pad, damp)``: samples added at each end and their damping (``padding="exp"``)."""
    if padding not in ("exp", "none"):
        raise ValueError(f"padding must be 'exp' or 'none', got {padding!r}.")
    n = x.shape[0]
    pad = min(PAD_LENGTHS * n, max(n - 1, 0)) if padding == "exp" else 0
    xp = backend.api(x)
    j = xp.arange(1, pad + 1, dtype=xp.float64, device=backend.device(x))
    return pad, xp.exp(-j / (decay_factor * n))[:, None]


def hilbert_transform(x, *, padding: str = "exp", decay_factor: float = 0.2):
    """The Hilbert transform ``H[x]`` of each column of the real 2-D float64 array ``x``.

    The FFT construction of the analytic signal ``x + i H[x]`` (Marple 1999):
    the spectrum's negative frequencies set to zero, its positive ones
    doubled; ``H[x]`` is the inverse transform of ``-i sign(f)`` times the
    spectrum (real FFTs: half the values of complex ones). ``padding="exp"``
    extends each series at both ends by its mirror image about the end
    sample, damped by ``exp(-j / (decay_factor * N))`` at ``j`` steps from
    the end (``N`` samples), before the transform, and keeps the middle;
    ``"none"`` transforms the series as they are (periodic continuation).
    Any array-API array; the result is in the same namespace and memory.
    """
    xp = backend.api(x)
    n = x.shape[0]
    pad, damp = _taper(x, padding, decay_factor)
    if pad:
        head = xp.flip(x[1 : pad + 1, :], axis=0) * xp.flip(damp, axis=0)
        tail = xp.flip(x[n - 1 - pad : n - 1, :], axis=0) * damp
        x = xp.concat([head, x, tail], axis=0)
    return _circular(x, pad, n)


def hilbert_adjoint(y, *, padding: str = "exp", decay_factor: float = 0.2):
    """``H^T y``: the transpose of :func:`hilbert_transform` (same arguments), applied to
    each column of ``y``. The periodic transform is antisymmetric (``H^T = -H``); the
    padding's extension is folded back onto the samples it copied."""
    xp = backend.api(y)
    n = y.shape[0]
    pad, damp = _taper(y, padding, decay_factor)
    if not pad:
        return -_circular(y, 0, n)
    zeros = xp.zeros((pad, y.shape[1]), dtype=y.dtype, device=backend.device(y))
    h = -_circular(xp.concat([zeros, y, zeros], axis=0), 0, n + 2 * pad)
    rest = xp.zeros((n - 1 - pad, y.shape[1]), dtype=y.dtype, device=backend.device(y))
    one = xp.zeros((1, y.shape[1]), dtype=y.dtype, device=backend.device(y))
    head = xp.flip(h[:pad, :] * xp.flip(damp, axis=0), axis=0)  # onto samples 1 .. pad
    tail = xp.flip(h[pad + n :, :] * damp, axis=0)  # onto samples n - 1 - pad .. n - 2
    return (
        h[pad : pad + n, :]
        + xp.concat([one, head, rest], axis=0)
        + xp.concat([rest, tail, one], axis=0)
    )


def _circular(series, start: int, n: int):
    """Rows ``start`` to ``start + n`` of the periodic Hilbert transform of ``series``."""
    xp = backend.api(series)
    N = series.shape[0]
    f = xp.arange(N // 2 + 1, device=backend.device(series))
    # -i sign(f): 0 at 0 and at N/2 (N even), where the spectrum is kept as it is
    factor = xp.astype((f > 0) & (2 * f < N), xp.complex128) * (-1j)
    M = _convolution_length(N)
    if M is None:
        spectrum = xp.fft.rfft(series, axis=0)
        spectrum *= factor[:, None]
        return xp.fft.irfft(spectrum, n=N, axis=0)[start : start + n, :]
    # the same circular convolution (kernel g = the inverse transform of the factor)
    # as a linear one of a fast length M >= 2N, folded back
    kernel = xp.fft.rfft(xp.fft.irfft(factor, n=N), n=M)
    spectrum = xp.fft.rfft(series, n=M, axis=0)
    spectrum *= kernel[:, None]
    c = xp.fft.irfft(spectrum, n=M, axis=0)
    return c[start : start + n, :] + c[start + N : start + N + n, :]


def _largest_prime_factor(n: int) -> int:
    largest, f = 1, 2
    while f * f <= n:
        while n % f == 0:
            largest, n = f, n // f
        f += 1
    return max(largest, n)


def _convolution_length(N: int) -> int | None:
    """A fast FFT length ``M >= 2N`` (factors 2, 3, 5) where the transform of length
    ``N`` itself would be slow (a prime factor above :data:`SLOW_PRIME`), else None."""
    if N < 2 or _largest_prime_factor(N) <= SLOW_PRIME:
        return None
    M = 2 * N
    while _largest_prime_factor(M) > 5:
        M += 1
    return M


def analytic_signal(x, *, padding: str = "exp", decay_factor: float = 0.2):
    """Analytic signal ``x + i H[x]`` of each column of the real 2-D array ``x`` (complex128).

    See :func:`hilbert_transform` for the construction and ``padding``. NumPy
    input (or a list) gives NumPy; other array-API arrays stay where they are.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(64)
    >>> z = analytic_signal(np.cos(2 * np.pi * 4 * t / 64)[:, None], padding="none")
    >>> bool(np.allclose(z[:, 0], np.exp(2j * np.pi * 4 * t / 64)))
    True
    """
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    x = backend.astype(x, np.float64, copy=False)
    xp = backend.api(x)
    h = hilbert_transform(x, padding=padding, decay_factor=decay_factor)
    return xp.astype(h, xp.complex128) * 1j + x


#: Rows of :func:`column_stats`.
STATS = ("nans", "infs", "amax", "mean", "std", "energy", "unit")


def column_stats(x, *, center: bool, padding: str, decay_factor: float, rule=None):
    """Per column of a block (every sample), one (7 x columns) float64 array whose rows
    are :data:`STATS`: the counts of NaN and of infinite values, the largest finite
    magnitude ``amax``, mean and standard deviation (``ddof=0``) of the finite values,
    and ``||p||^2 + ||H p||^2`` of ``p = (x - mean) u`` (``x u`` without ``center``),
    ``u`` (``unit``) a power of two that brings ``amax`` near 1: no square overflows or
    underflows at any magnitude. Non-finite values count as 0 in the last three.

    ``rule``: a :class:`xsvd.core.missing.MissingRule` that fills (``missing="mean"``):
    the first row counts the values it calls missing (NaN; negative values too where it
    says so), ``amax``, the mean and the standard deviation are those of the present
    values (over their number, as :func:`xsvd.labeled.preprocess.standardized_weights`),
    and the energy is that of the series with each missing value standing for the mean:
    the block holds every sample, so the mean is known before the transform.
    """
    xp = backend.api(x)
    x = backend.astype(x, np.float64, copy=False)
    fills = rule is not None and rule.fills
    finite = xp.isfinite(x)
    missing = rule.mask(xp, x) if fills else xp.isnan(x)
    nans = xp.sum(xp.astype(missing, xp.float64), axis=0)
    infs = xp.sum(xp.astype(xp.isinf(x), xp.float64), axis=0)
    x = xp.where(finite & ~missing if fills else finite, x, 0.0)
    amax = xp.max(xp.abs(x), axis=0)
    e = xp.clip(xp.floor(xp.log2(xp.where(amax > 0, amax, 1.0))), -1000.0, 1000.0)
    unit = xp.pow(2.0, -e)
    x = x * unit
    count = xp.clip(x.shape[0] - nans, 1.0) if fills else max(x.shape[0], 1)
    mean = xp.sum(x, axis=0) / count
    if fills:  # each missing value stands for its column's mean: no deviation there
        x = xp.where(missing, mean, x)
        std = xp.sqrt(xp.sum((x - mean) ** 2, axis=0) / count)
    else:
        std = xp.sqrt(xp.mean((x - mean) ** 2, axis=0))
    p = x - mean if center else x
    energy = xp.sum(p * p, axis=0)
    N = p.shape[0]
    if padding == "none":  # Parseval: H keeps the power of every frequency but 0 and N/2
        lost = xp.sum(p, axis=0) ** 2
        if N % 2 == 0:
            odd = xp.astype(xp.arange(N, device=backend.device(p)) % 2, xp.float64)
            lost = lost + xp.sum(p * (1.0 - 2.0 * odd)[:, None], axis=0) ** 2
        return xp.stack([nans, infs, amax, mean / unit, std / unit, 2 * energy - lost / N, unit])
    step = FFT_COLUMNS if backend.is_numpy(p) else max(1, p.shape[1])
    for j in range(0, p.shape[1], step):
        h = hilbert_transform(p[:, j : j + step], padding=padding, decay_factor=decay_factor)
        energy[j : j + step] += xp.sum(h * h, axis=0)
    return xp.stack([nans, infs, amax, mean / unit, std / unit, energy, unit], axis=0)


def block_products(x, mean, scale, U=None, W=None, *, rule=None, fill=None):
    """One block's share of the products of ``P = (x - 1 mean^T) diag(scale)``.

    ``x``: complete columns (samples x b, any float dtype; the block's rows of
    every sample where ``U`` and ``W`` are given for the same rows), ``mean``
    and ``scale`` (b,) in the block's memory. ``U`` (samples x c) gives
    ``P^T U`` (b x c); ``W`` (b x c) gives the block's share of ``P W``
    (samples x c); ``W="fused"`` takes ``P^T U`` just computed (one read of the
    block for ``P P^T U``). Either may be None. Arrays of the block's namespace;
    ``P`` is never formed (rank-one and diagonal corrections). ``fill`` (b,): the
    values that stand for those ``rule`` calls missing (``missing="mean"``: the
    features' means), put in as the block is read (a copy of the block only where
    something is missing).
    """
    xp = backend.api(x)
    x = backend.astype(x, np.float64, copy=False)
    if fill is not None:
        x, _ = fill_missing(xp, x, rule, fill, count=False)
    rows = share = None
    if U is not None:
        rows = (x.T @ U - mean[:, None] * xp.sum(U, axis=0)) * scale[:, None]
        if isinstance(W, str):
            W = rows
    if W is not None:
        dW = W * scale[:, None]
        share = x @ dW - mean @ dW
    return rows, share
