"""The cost of a varimax iteration: how often it reads the features x n loadings (issue 29).

Counted, not timed: the loadings are a NumPy subclass that counts every ufunc call (products,
elementwise arithmetic, reductions) that touches a full-size array.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from xsvd.rotation import promax, varimax


class Counting(np.ndarray):
    """An ndarray that counts the ufunc calls on arrays of at least ``Counting.big`` values."""

    big = 0
    calls = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, Counting) else x for x in inputs]
        if any(isinstance(x, np.ndarray) and x.size >= Counting.big for x in plain):
            Counting.calls += 1
        out = getattr(ufunc, method)(*plain, **kwargs)
        return out.view(Counting) if isinstance(out, np.ndarray) else out


def _full_size_calls(L: np.ndarray, iterations: int) -> int:
    Counting.big, Counting.calls = L.size // 2, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # max_iter reached, on purpose
        T, done = varimax(L.view(Counting), max_iter=iterations, rtol=1e-300)
    assert done == iterations
    return Counting.calls


def test_varimax_reads_the_loadings_twice_an_iteration():
    """B = A T and A^T B^3 read the loadings; B^3 costs two elementwise products; the column
    sums of B^2 and the B diag(w) term are n x n work. Per iteration: at most 4 full-size
    operations (was 7: B**3, B**2, its column sums, B * w and the difference besides)."""
    L = np.random.default_rng(0).standard_normal((5_000, 6))
    per_iteration = (_full_size_calls(L, 5) - _full_size_calls(L, 2)) / 3
    assert per_iteration <= 4


@pytest.mark.parametrize("n", [2, 5, 8])
def test_varimax_equals_the_textbook_iteration(n):
    """Same rotation as the plain Kaiser-normalized varimax (B**3 - B diag(colsum B^2)/p) to
    rounding, iteration for iteration, and its rotated loadings an orthogonal rotation of L."""
    rng = np.random.default_rng(n)
    L = rng.standard_normal((400, n)) * np.linspace(3, 1, n)
    A = L / np.linalg.norm(L, axis=1)[:, None]
    R = np.eye(n)
    for _ in range(30):
        B = A @ R
        u, _, vt = np.linalg.svd(A.T @ (B**3 - B * (np.sum(B**2, axis=0) / A.shape[0])))
        R = u @ vt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        T, _ = varimax(L, max_iter=30, rtol=1e-300)
    np.testing.assert_allclose(T, R, atol=1e-12)
    np.testing.assert_allclose(T.T @ T, np.eye(n), atol=1e-13)


def test_promax_power_1_is_varimax():
    """Promax with power 1 (the target is the varimax solution itself) is varimax."""
    L = np.random.default_rng(3).standard_normal((300, 4)) * [4.0, 3.0, 2.0, 1.0]
    Tv, _ = varimax(L, rtol=1e-12)
    Tp, _ = promax(L, power=1, rtol=1e-12)
    np.testing.assert_allclose(Tp, Tv, atol=1e-10)
