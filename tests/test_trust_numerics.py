"""Numbers that can be trusted at any magnitude (issue 20, items 2, 3, 4, 10 and 11).

Every case is compared with ``numpy.linalg.svd`` of the same prepared
float64 matrix ``B = (A - mean) * weights``, on every backend (``backend``
fixture: NumPy, Dask in both stripe orientations, CuPy where a GPU is
present), and the compressed solver's error estimates are checked against
the true errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from conftest import matrix_with_spectrum, raise_if_dask_computes

import xsvd
from xsvd.linalg import exact_svd, randomized_svd

SPECTRUM = np.r_[200.0, 150.0, 100.0, np.full(27, 1.0)]


def _base(m=240, n=30, seed=0):
    return matrix_with_spectrum(SPECTRUM, m, n, seed=seed)


def _prepared(a, weights=None, center=True):
    """``B`` in float64 (power-of-two scaling keeps extreme columns exact)."""
    B = np.asarray(a, dtype=np.float64)
    if center:
        B = B - B.mean(axis=0)
    return B if weights is None else B * weights


def _svd(B, k):
    """numpy's SVD of ``B``, computed on ``B`` brought near 1 by a power of two."""
    e = np.frexp(np.abs(B).max())[1]
    U, S, Vt = np.linalg.svd(np.ldexp(B, -e), full_matrices=False)
    return U[:, :k], np.ldexp(S[:k], e), Vt[:k].T


def _angles(X, Y):
    """Angle between matching columns of two matrices of unit columns."""
    c = np.abs((X * Y).sum(axis=0))
    return np.arcsin(np.clip(np.linalg.norm(X - Y * (X * Y).sum(axis=0), axis=0), 0, 1)), c


def _agrees(backend, d, B, k, rtol):
    """The decomposition ``d`` is numpy's SVD of ``B``; its error estimates bound the truth."""
    U0, S0, V0 = _svd(B, k)
    U, S, V, errors = backend.host(d.U, d.S, d.V, d.errors)
    np.testing.assert_allclose(S, S0, rtol=rtol)
    assert np.isfinite(U).all() and np.isfinite(V).all()
    angle_v, cos_v = _angles(V, V0)
    _, cos_u = _angles(U, U0)
    np.testing.assert_allclose(cos_v, 1, atol=100 * rtol)
    np.testing.assert_allclose(cos_u, 1, atol=100 * rtol)
    assert (errors[:, 0] >= np.abs(S - S0)).all(), (errors[:, 0], np.abs(S - S0))
    assert (errors[:, 1] >= angle_v).all(), (errors[:, 1], angle_v)


# ----------------------------------- 2. features of very different magnitudes, weighted


@pytest.mark.parametrize(
    "dtype, exponent, rtol",
    [("float32", 20, 1e-5), ("float32", 35, 1e-5), ("float64", 150, 1e-10)],
)
def test_compressed_weights_balance_features_of_any_magnitude(backend, dtype, exponent, rtol):
    n = 30
    scale = np.where(np.arange(n) % 3 == 0, 10.0**-exponent, 10.0**exponent)
    a = (_base(n=n) * scale).astype(dtype)
    w = 1 / scale
    d = randomized_svd(backend(a), 3, weights=w, center=True, seed=0, compute=True)
    _agrees(backend, d, _prepared(a, w), 3, rtol)
    total = backend.host(d.total_ss)
    np.testing.assert_allclose(total, (_prepared(a, w) ** 2).sum(), rtol=1e-5)


@pytest.mark.parametrize("chunks", [None, {"time": 60}, {"x": 10}])
def test_standardize_balances_features_of_any_magnitude(chunks):
    n = 30
    scale = np.where(np.arange(n) % 2 == 0, 1e-30, 1e30)
    a = (_base(n=n) * scale).astype(np.float32)
    da = xr.DataArray(a, dims=("time", "x"))
    if chunks is not None:
        da = da.chunk(chunks)
    res = xsvd.compressed(da, k=3, dim="time", center=True, standardize=True, seed=0)
    B = _prepared(a)
    B = B / np.sqrt((B**2).mean(axis=0))
    U0, S0, V0 = _svd(B, 3)
    np.testing.assert_allclose(res.S.values, S0, rtol=1e-5)
    err = res.errors["S"].values
    assert (err >= np.abs(res.S.values - S0)).all()


def test_float64_data_multiplied_in_float32_beyond_its_range(backend):
    """dtype='float32' on float64 data of 1e100 or 1e-60: neither inf nor zeros."""
    for magnitude in (1e100, 1e-60):
        a = _base() * magnitude
        d = randomized_svd(backend(a), 3, center=True, seed=0, compute=True, dtype="float32")
        _agrees(backend, d, _prepared(a), 3, 1e-5)
    for magnitude in (1e60, 1e-60):  # missing values filled with means beyond float32 too
        a = _base() * magnitude
        a[np.random.default_rng(1).random(a.shape) < 0.05] = np.nan
        filled = np.where(np.isnan(a), np.nanmean(a, axis=0), a)
        d = randomized_svd(
            backend(a), 3, center=True, seed=0, compute=True, dtype="float32", missing="mean"
        )
        np.testing.assert_allclose(backend.host(d.S), _svd(_prepared(filled), 3)[1], rtol=1e-5)
    a = _base() * 1e300
    a[5, 7] = np.inf  # a real infinite value is still one
    with pytest.raises(xsvd.InfiniteValueError, match=r"feature index 7\b"):
        d = randomized_svd(backend(a), 3, seed=0, compute=True, dtype="float32")
        backend.host(d.S)


def test_ordinary_weighted_data_are_read_once_per_pass(backend):
    """Weights of 1e-8 to 1 (sqrt(cos(lat)) at the poles) need no rescaling: no extra read."""
    a = _base().astype(np.float32) * 300
    w = np.sqrt(np.cos(np.linspace(-np.pi / 2, np.pi / 2, 30)))
    d = randomized_svd(backend(a), 3, weights=w, seed=0, compute=True, n_power_iter=3)
    plain = randomized_svd(backend(a), 3, seed=0, compute=True, n_power_iter=3)
    assert d.settings["passes"] == plain.settings["passes"]


def test_error_estimates_of_float64_data_near_1e85(backend):
    """Not rescaled (within 1e-90..1e90), their squared residuals overflowed: inf estimates."""
    a = _base() * 1e85
    d = randomized_svd(backend(a), 3, center=True, seed=0, compute=True)
    assert np.isfinite(backend.host(d.errors)).all()
    _agrees(backend, d, _prepared(a), 3, 1e-10)


# ------------------------------------------------------------------- 4. subnormal data


@pytest.mark.parametrize("dtype, magnitude", [("float64", 1e-310), ("float32", 1e-42)])
def test_compressed_subnormal_data(backend, dtype, magnitude):
    a = (_base() * magnitude).astype(dtype)
    assert np.abs(a).max() < np.finfo(dtype).tiny  # every value subnormal
    d = randomized_svd(backend(a), 3, center=True, seed=0, compute=True)
    # subnormal values carry few digits: compare with the matrix they are
    _agrees(backend, d, _prepared(a), 3, 1e-4 if dtype == "float32" else 1e-8)


# ------------------------------------------- 3. exact float32 beyond float32, variances


def test_exact_float32_singular_values_beyond_float32_range(backend):
    a = (_base() * 1e37).astype(np.float32)  # S[0] about 2e39 > float32's 3.4e38
    d = exact_svd(backend(a), 3, center=True)
    S = backend.host(d.S)
    assert np.isfinite(S).all()
    np.testing.assert_allclose(S, _svd(_prepared(a), 3)[1], rtol=1e-5)
    tiny = (_base() * 1e-41).astype(np.float32)  # subnormal float32
    S = backend.host(exact_svd(backend(tiny), 3, center=True).S)
    np.testing.assert_allclose(S, _svd(_prepared(tiny), 3)[1], rtol=1e-3)


def test_exact_float32_whose_weights_float32_cannot_hold(backend):
    """Subnormal float32 data weighted 1e42 (beyond float32): B is ordinary, and so is its SVD."""
    a = (_base() * 1e-42).astype(np.float32)
    w = np.full(30, 1e42)
    S = backend.host(exact_svd(backend(a), 3, center=True, weights=w).S)
    np.testing.assert_allclose(S, _svd(_prepared(a, w), 3)[1], rtol=1e-5)
    scale = np.where(np.arange(30) % 3 == 0, 1e-20, 1e20)  # item 2's case, exact
    a = (_base() * scale).astype(np.float32)
    S = backend.host(exact_svd(backend(a), 3, center=True, weights=1 / scale).S)
    np.testing.assert_allclose(S, _svd(_prepared(a, 1 / scale), 3)[1], rtol=1e-5)


@pytest.mark.parametrize("magnitude", [1e200, 1e-300, 1e-160])
@pytest.mark.parametrize("method", ["exact", "compressed"])
@pytest.mark.parametrize("chunks", [None, {"time": 60}])
def test_variance_ratio_at_any_magnitude(magnitude, method, chunks):
    a = _base() * magnitude
    da = xr.DataArray(a, dims=("time", "x"))
    if chunks is not None:
        da = da.chunk(chunks)
    kw = {"seed": 0} if method == "compressed" else {}
    res = xsvd.svd(da, k=3, dim="time", center=True, method=method, **kw)
    B = _prepared(a)
    e = np.frexp(np.abs(B).max())[1]
    s = np.linalg.svd(np.ldexp(B, -e), compute_uv=False)  # of B / 2**e
    got = res.explained_variance_ratio.values
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, s[:3] ** 2 / (s**2).sum(), rtol=1e-9)
    norm = float(np.asarray(res.decomposition.total_norm))
    np.testing.assert_allclose(norm, np.ldexp(np.sqrt((s**2).sum()), e), rtol=1e-9)
    # the total itself is a float64: inf or 0 only where ||B||^2 is beyond float64's range
    tv = float(res.total_variance.values)
    if magnitude > 1:
        assert tv == np.inf
    else:
        with np.errstate(under="ignore"):
            total = float(np.ldexp((s**2).sum(), 2 * e))
        np.testing.assert_allclose(tv, total, rtol=1e-5, atol=0)


def test_eigenvalues_where_s_squared_overflows():
    a = _base(m=240) * 1e152  # S[0]**2 beyond float64, S[0]**2 / 239 not
    res = xsvd.exact(xr.DataArray(a, dims=("time", "x")), dim="time", center=True)
    lam = res.eigenvalues().values[:3]
    S = res.S.values[:3]
    assert np.isfinite(lam).all()
    np.testing.assert_allclose(lam, (S / np.sqrt(239)) ** 2, rtol=1e-12)


# ------------------------------------------------------- 11. k out of range, k too large


def test_k_zero_says_at_least_one():
    a = _base()
    for solver in (exact_svd, randomized_svd):
        with pytest.raises(ValueError, match=r"k=0: .* must be at least 1"):
            solver(a, 0)


def test_warns_before_any_read_when_exact_is_cheaper():
    import dask.array as da

    a = da.zeros((4_000, 600), chunks=(1_000, 600))
    with raise_if_dask_computes(), pytest.warns(UserWarning, match=r"method='exact'"):
        randomized_svd(a, 150, seed=0, compute=False)  # k = short side / 4
    with raise_if_dask_computes(), warnings.catch_warnings():
        warnings.simplefilter("error")
        randomized_svd(a, 149, seed=0, compute=False)  # below the rule: silent
        randomized_svd(da.zeros((400, 60), chunks=(100, 60)), 30, seed=0, compute=False)


# ------------------------------------------------ 10. error estimates: bounds, or flagged

#: The issue's cases: a tiny gap after the k-th singular value, a geometric spectrum.
GAP = np.r_[np.linspace(10, 6, 5), 6 - 1e-3, np.linspace(5.9, 1, 144)]
GEOMETRIC = 0.8 ** np.arange(150)


@pytest.mark.parametrize("spectrum", [GAP, GEOMETRIC], ids=["gap", "geometric"])
def test_estimates_bound_the_errors_where_the_settings_say_so(spectrum):
    a = matrix_with_spectrum(spectrum, 300, 150, seed=0)
    _, S0, Vt0 = np.linalg.svd(a, full_matrices=False)
    for p in (10, 15):
        for seed in range(6):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no warning: these settings give bounds
                d = randomized_svd(a, 5, seed=seed, n_oversamples=p, n_power_iter=1)
            assert "error_bounds" not in d.settings
            angle, _ = _angles(d.V, Vt0[:5].T)
            assert (d.errors[:, 0] >= np.abs(d.S - S0[:5])).all()
            assert (d.errors[:, 1] >= angle).all()


def test_estimates_bound_the_errors_on_a_cluster_below_k():
    """16 singular values within 1e-3 below the first, 4 passes: the first extrapolated
    rate (from three Krylov spaces) fell to 0.04x the true error."""
    rng = np.random.default_rng(0)
    for seed in range(6):
        s = 1 / (1 + np.arange(80))
        s[1:17] = s[0] * (1 - 1e-3 * rng.random(16))
        s[17:] = s[0] / 2 / np.sqrt(1 + np.arange(63))
        a = matrix_with_spectrum(np.sort(s)[::-1], 90, 80, seed=seed)
        s0 = np.linalg.svd(a, compute_uv=False)[:1]
        for q in (3, 4, 5):
            d = randomized_svd(a, 1, seed=0, n_power_iter=q)
            assert d.errors[0, 0] >= abs(d.S[0] - s0[0]), (seed, q)


@pytest.mark.parametrize(
    "options",
    [
        {"n_oversamples": 0, "n_power_iter": 1},  # the settings
        {"n_oversamples": 9},
        {"krylov": False, "n_power_iter": 3},
    ],
)
def test_settings_whose_estimates_are_not_bounds_say_so_before_reading(options):
    import dask.array as da

    a = da.from_array(matrix_with_spectrum(GAP, 300, 150, seed=0), chunks=(100, 150))
    with raise_if_dask_computes(), pytest.warns(RuntimeWarning, match=r"not upper bounds"):
        d = randomized_svd(a, 5, seed=0, compute=False, **options)
    assert d.settings["error_bounds"] is False
    data = xr.DataArray(matrix_with_spectrum(GAP, 300, 150, seed=0), dims=("time", "x"))
    with pytest.warns(RuntimeWarning, match=r"not upper bounds"):
        res = xsvd.compressed(data, k=5, dim="time", seed=0, **options)
    assert res.errors.attrs["error_bounds"] == 0
    assert res.settings["error_bounds"] is False
    assert "error_bounds" not in xsvd.compressed(data, k=5, dim="time", seed=0).errors.attrs


# ------------------------------------------- issue 31, 8: advice for complex input


def test_complex_input_advice_gives_the_complex_svd():
    """The error for complex data advises the real form; followed, it gives Z's SVD."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((60, 20)) + 1j * rng.standard_normal((60, 20))
    with pytest.raises(TypeError, match=r"real form") as info:
        xsvd.svd(xr.DataArray(z, dims=("time", "x")), k=3, dim="time")
    assert "astype('float64')" not in str(info.value)
    real_form = np.block([[z.real, -z.imag], [z.imag, z.real]])  # as the message says
    S = exact_svd(real_form, 6).S
    S0 = np.linalg.svd(z, compute_uv=False)[:3]
    np.testing.assert_allclose(S[::2], S0, rtol=1e-12)
    np.testing.assert_allclose(S[1::2], S0, rtol=1e-12)
