"""Hilbert EOF meets the input rules (issue 31, items 3, 4 and 7), on every backend.

Each truth is computed independently: ``scipy.signal.hilbert`` for the analytic
signal, ``numpy.linalg.svd`` for its complex SVD.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.climate.analytic import hilbert_adjoint, hilbert_transform
from xsvd.core.blas import one_blas_thread

signal = pytest.importorskip("scipy.signal")

K = 3


def _matrix(m: int = 70, n: int = 24, seed: int = 0) -> np.ndarray:
    """Two travelling waves and noise; columns 2 and 3 land (NaN at every sample)."""
    rng = np.random.default_rng(seed)
    t, x = np.arange(m)[:, None], np.linspace(0, 2 * np.pi, n)[None, :]
    a = 2 * np.cos(2 * np.pi * t / 11 - x) + np.cos(2 * np.pi * t / 5 - 2 * x + 1)
    a = a + 0.3 * rng.standard_normal((m, n)) + 4.0
    a[:, 2:4] = np.nan
    return a


def _labeled(data) -> xr.DataArray:
    m, n = data.shape
    return xr.DataArray(data, dims=("time", "x"), coords={"x": np.arange(n) * 2.0}, name="f")


def _truth(a: np.ndarray):
    """S, the variance shares and V (kept features) of the complex SVD of the analytic
    signal of the centered data (scipy.signal.hilbert: the periodic transform)."""
    keep = ~np.isnan(a[0])
    z = signal.hilbert(a[:, keep] - a[:, keep].mean(axis=0), axis=0)
    with one_blas_thread():
        _, s, vh = np.linalg.svd(z, full_matrices=False)
    return s, s**2 / np.sum(s**2), vh.conj().T, keep


@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_infinite_values_are_an_error_naming_the_feature(backend, method):
    """An ``inf`` is refused with the core's InfiniteValueError naming the feature (it was a
    LinAlgError, or the feature dropped as if it were land)."""
    a = _matrix()
    a[5, 7] = np.inf
    a[9, 12] = -np.inf
    with pytest.raises(xsvd.InfiniteValueError, match=r"2 feature\(s\).*x=14\.0.*x=24\.0"):
        xsvd.hilbert_eof(_labeled(backend(a)), K, padding="none", method=method)


@pytest.mark.parametrize("scale", [1e170, 1e-170, 1e300, 1e-300])
@pytest.mark.parametrize("method", ["exact", "compressed"])
def test_any_magnitude_gives_the_dense_truth(backend, method, scale):
    """Data at 1e+-170 and 1e+-300 (float64): S in the data's units, the variance shares
    and the patterns equal the dense truth's (were S = 0, shares 0, inf or NaN)."""
    a = _matrix(seed=1)
    s, shares, v, keep = _truth(a)
    options = {"seed": 0, "tol": 1e-12, "max_passes": 30} if method == "compressed" else {}
    res = xsvd.hilbert_eof(
        _labeled(backend(a * scale)), K, padding="none", method=method, **options
    )
    got = backend.host(res.S.data) / scale
    np.testing.assert_allclose(got, s[:K], rtol=1e-10)
    np.testing.assert_allclose(backend.host(res.explained_variance_ratio.data), shares[:K],
                               rtol=1e-10)  # fmt: skip
    V = backend.host(res.V.data).T
    assert np.isnan(V[~keep]).all()
    inner = np.abs((v[:, :K].conj() * V[keep]).sum(axis=0))
    np.testing.assert_allclose(inner, 1.0, atol=1e-9)  # the same patterns, up to a phase
    if method == "compressed":
        S_err = backend.host(res.errors.S.data) / scale
        assert np.all(S_err >= np.abs(got - s[:K])) and np.all(np.isfinite(S_err))
    total = float(res.total_variance)  # in the data's units squared (inf beyond float64)
    with np.errstate(over="ignore", under="ignore"):
        want = np.sum(s**2) * scale * scale
    assert total == pytest.approx(want, rel=1e-10) or (np.isinf(want) and np.isinf(total))


def test_constant_feature_is_left_out_when_standardized(backend):
    """A constant not exact in binary (sea ice at -1.8) has a standard deviation at
    rounding level: it is constant (docs/input-rules.md), weight 0, not a feature
    scaled by 1e15 that turns rounding into a component."""
    a = _matrix(seed=2)
    ice = a.copy()
    ice[:, 10] = -1.8
    want = xsvd.hilbert_eof(_labeled(np.delete(a, 10, axis=1)), K, padding="none",
                            method="exact", standardize=True)  # fmt: skip
    got = xsvd.hilbert_eof(_labeled(backend(ice)), K, padding="none", method="exact",
                           standardize=True)  # fmt: skip
    np.testing.assert_allclose(backend.host(got.S.data), want.S.values, rtol=1e-10)


def test_exact_k_above_the_ocean_features_says_so(backend):
    """``method="exact"`` with land and ``k`` above the features that are not land: a
    clear error that says the largest ``k`` (it was a shape mismatch)."""
    a = _matrix(m=40, n=8)  # 6 ocean features
    with pytest.raises(ValueError, match=r"only 6 feature\(s\).*k <= 6"):
        xsvd.hilbert_eof(_labeled(backend(a)), 7, padding="none", method="exact")
    res = xsvd.hilbert_eof(_labeled(backend(a)), 6, padding="none", method="exact")
    s, *_ = _truth(a)
    np.testing.assert_allclose(backend.host(res.S.data), s[:6], rtol=1e-10)


@pytest.mark.parametrize("n", [7, 8, 64, 205])  # 205 with "exp": 613 samples, a prime
@pytest.mark.parametrize("padding", ["none", "exp"])
def test_adjoint_is_the_transpose_of_the_transform(n, padding):
    """The solver's products use ``H^T`` on the sample side: it is the dense transpose of
    the transform (the padding's extension folded back), and ``H`` is scipy's."""
    eye = np.eye(n)
    H = hilbert_transform(eye, padding=padding)
    np.testing.assert_allclose(hilbert_adjoint(eye, padding=padding), H.T, atol=1e-13)
    if padding == "none":
        np.testing.assert_allclose(H, signal.hilbert(eye, axis=0).imag, atol=1e-13)
