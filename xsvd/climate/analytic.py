"""The analytic signal of a field's columns, and its products, a block of features at a time.

A block is every sample of some features (the transform runs along the
samples, so it needs each series whole), as a 2-D array of any array-API
library: NumPy, CuPy, array-api-strict's second device. Everything here
uses the arrays' own namespace (:func:`xsvd.core.backend.api`), so a block
on a device stays there; the FFT is the standard's ``fft`` extension
(``rfft``/``irfft``).

With ``P = (X - 1 mu^T) diag(d)`` (the centered, weighted block) and
``Q = H[P]`` (its Hilbert transform along the samples), the analytic signal
is ``Z = P + iQ``. The products of :func:`block_products` are those of the
real form ``R = [[P, -Q], [Q, P]]`` of ``Z``, computed with four real
products of ``X`` and ``Q`` (centering and weights as rank-one and diagonal
corrections), never with a formed ``R`` or a complex copy of the block:

- ``R^T [T1; T2] = [Re(Z^H Tc); Im(Z^H Tc)]``, ``Tc = T1 + i T2``;
- ``R [W1; W2] = [Re(Z Wc); Im(Z Wc)]``, ``Wc = W1 + i W2``.
"""

from __future__ import annotations

import numpy as np

from ..core import backend

__all__ = [
    "PAD_LENGTHS",
    "FFT_COLUMNS",
    "SLOW_PRIME",
    "analytic_signal",
    "hilbert_transform",
    "column_stats",
    "centered",
    "transformed",
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
    if padding == "exp":
        pad = min(PAD_LENGTHS * n, max(n - 1, 0))
        j = xp.arange(1, pad + 1, dtype=xp.float64, device=backend.device(x))
        damp = xp.exp(-j / (decay_factor * n))[:, None]
        head = xp.flip(x[1 : pad + 1, :], axis=0) * xp.flip(damp, axis=0)
        tail = xp.flip(x[n - 1 - pad : n - 1, :], axis=0) * damp
        series, start = xp.concat([head, x, tail], axis=0), pad
    elif padding == "none":
        series, start = x, 0
    else:
        raise ValueError(f"padding must be 'exp' or 'none', got {padding!r}.")
    N = series.shape[0]
    f = xp.arange(N // 2 + 1, device=backend.device(x))
    # -i sign(f): 0 at 0 and at N/2 (N even), where the spectrum is kept as it is
    factor = xp.astype((f > 0) & (2 * f < N), xp.complex128) * (-1j)
    M = _convolution_length(N)
    if M is None:
        spectrum = xp.fft.rfft(series, axis=0)
        del series  # few temporaries: each is (padded) samples x columns
        spectrum *= factor[:, None]
        h = xp.fft.irfft(spectrum, n=N, axis=0)
        del spectrum
        return h[start : start + n, :]
    # the same circular convolution (kernel g = the inverse transform of the factor)
    # as a linear one of a fast length M >= 2N, folded back
    kernel = xp.fft.rfft(xp.fft.irfft(factor, n=N), n=M)
    spectrum = xp.fft.rfft(series, n=M, axis=0)
    del series
    spectrum *= kernel[:, None]
    c = xp.fft.irfft(spectrum, n=M, axis=0)
    del spectrum
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


def column_stats(x):
    """Per column of a block (every sample): NaN count, mean and standard deviation
    (``ddof=0``; NaN where a column has NaN), as one (3 x columns) float64 array."""
    xp = backend.api(x)
    x = backend.astype(x, np.float64, copy=False)
    nans = xp.sum(xp.astype(xp.isnan(x), xp.float64), axis=0)
    mean = xp.mean(x, axis=0)
    return xp.stack([nans, mean, xp.std(x, axis=0)], axis=0)


def centered(x, mean, scale):
    """``P = (x - mean) scale`` of a block of complete columns, float64 (a new array)."""
    return (backend.astype(x, np.float64, copy=False) - mean) * scale


def transformed(p, *, padding: str, decay_factor: float, columns: int | None = None):
    """``H[p]`` of a block, ``columns`` columns per FFT (all at once when None or not NumPy)."""
    n = p.shape[1]
    if columns is None or not backend.is_numpy(p) or n <= columns:
        return hilbert_transform(p, padding=padding, decay_factor=decay_factor)
    out = np.empty(p.shape, dtype=np.float64)
    for j in range(0, n, columns):
        out[:, j : j + columns] = hilbert_transform(
            p[:, j : j + columns], padding=padding, decay_factor=decay_factor
        )
    return out


def block_products(x, q, mean, scale, T=None, W=None):
    """One block's share of the real form's products: ``(R^T T rows, R W share)``.

    ``x``: the block's complete columns (samples x b, any float dtype), ``q``
    its ``H[P]`` (samples x b, float64), ``mean`` and ``scale`` (b,) vectors
    in the block's memory, or both None where ``x`` is ``P`` itself. ``T``
    (samples x 2l: ``[T1, T2]``, the real and imaginary parts side by side)
    gives the block's rows of ``Z^H Tc`` as ``[Re, Im]`` (b x 2l). ``W`` (b x
    2l, ``[W1, W2]``) gives the block's share of ``Z Wc`` as ``[Re, Im]``
    (samples x 2l); ``W="fused"`` takes the rows just computed from ``T`` (one
    read of the block for a product with ``R R^T``). Either may be None.
    Arrays of the block's namespace.
    """
    xp = backend.api(x)
    x = backend.astype(x, np.float64, copy=False)
    out_t = out_w = None
    if T is not None:
        l = T.shape[1] // 2
        a = x.T @ T  # P^T [T1, T2]
        if mean is not None:
            a = (a - mean[:, None] * xp.sum(T, axis=0)) * scale[:, None]
        b = q.T @ T  # Q^T [T1, T2]
        out_t = xp.concat([a[:, :l] + b[:, l:], a[:, l:] - b[:, :l]], axis=1)
        if isinstance(W, str):
            W = out_t
    if W is not None:
        l = W.shape[1] // 2
        if mean is None:
            c = x @ W  # P [W1, W2]
        else:
            dW = W * scale[:, None]
            c = x @ dW - mean @ dW
        d = q @ W  # Q [W1, W2]
        out_w = xp.concat([c[:, :l] - d[:, l:], d[:, :l] + c[:, l:]], axis=1)
    return out_t, out_w
