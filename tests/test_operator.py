"""The matrix-free compressed SVD (xsvd.core.randomized.operator) against numpy.linalg.svd."""

from __future__ import annotations

import numpy as np
import pytest

import xsvd
from xsvd.core.randomized.operator import fused_operator_svd, operator_svd


def _decaying(m: int, n: int, rate: float, seed: int) -> np.ndarray:
    """An m x n matrix with singular values ``rate**j`` (random singular vectors)."""
    rng = np.random.default_rng(seed)
    r = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal((m, r)))
    v, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return (u * rate ** np.arange(r)) @ v.T


def _angles(x, y):
    """Angles between matching columns, accurate near 0."""
    sign = np.sign((x * y).sum(axis=0))
    return 2 * np.arcsin(np.minimum(1, np.linalg.norm(x - y * sign, axis=0) / 2))


def _counted(a):
    calls = {"matmat": 0, "rmatmat": 0}

    def matmat(w):
        calls["matmat"] += 1
        return a @ w

    def rmatmat(t):
        calls["rmatmat"] += 1
        return a.T @ t

    return matmat, rmatmat, calls


@pytest.mark.parametrize("shape", [(200, 90), (90, 200), (150, 150)])
@pytest.mark.parametrize("n_power_iter", [1, 2, 4])
@pytest.mark.parametrize("rate", [0.8, 0.97])
def test_matches_numpy_and_estimates_bound_the_truth(shape, n_power_iter, rate):
    a = _decaying(*shape, rate, seed=shape[0] + 7 * n_power_iter)
    k = 6
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    matmat, rmatmat, calls = _counted(a)
    res = operator_svd(matmat, rmatmat, a.shape, k, n_power_iter=n_power_iter, seed=3)
    assert res.U.shape == (shape[0], k) and res.V.shape == (shape[1], k)
    assert res.passes == n_power_iter + 1 == calls["matmat"] == calls["rmatmat"]
    assert res.stopped == "n_power_iter"
    assert res.bounds
    s_err = np.abs(res.S - s[:k])
    angle = np.maximum(_angles(res.U, u[:, :k]), _angles(res.V, vt[:k].T))
    assert np.all(res.errors[:, 0] >= s_err)
    assert np.all(res.errors[:, 1] >= angle)
    # the vectors are a consistent pair (exactly through the shorter side: the long side's
    # vectors are its image), and orthonormal
    if shape[0] >= shape[1]:
        np.testing.assert_allclose(a @ res.V, res.U * res.S, atol=1e-12)
    else:
        np.testing.assert_allclose(a.T @ res.U, res.V * res.S, atol=1e-12)
    np.testing.assert_allclose(res.V.T @ res.V, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(res.U.T @ res.U, np.eye(k), atol=1e-10)
    if rate == 0.8 and n_power_iter == 4:  # converged
        np.testing.assert_allclose(res.S, s[:k], rtol=1e-13)
        assert angle.max() < 1e-10
        assert res.errors[:, 0].max() < 1e-10


def test_default_stops_when_converged_and_tol_is_kept():
    a = _decaying(150, 60, 0.7, seed=1)
    s = np.linalg.svd(a, compute_uv=False)
    res = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 4)
    assert 2 <= res.passes < 8  # converged before the cap of 8
    np.testing.assert_allclose(res.S, s[:4], rtol=1e-12)
    assert np.all(res.errors[:, 0] / res.S <= 1e-6)
    # a slowly decaying spectrum needs more passes for the same tolerance
    b = _decaying(150, 60, 0.99, seed=1)
    slow = operator_svd(lambda w: b @ w, lambda t: b.T @ t, b.shape, 4, tol=1e-8, max_passes=5)
    assert slow.passes == 5 and res.stopped == "converged"
    tight = operator_svd(lambda w: b @ w, lambda t: b.T @ t, b.shape, 4, tol=1e-14, max_passes=3)
    assert tight.passes == 3 and tight.stopped == "max_passes"


def test_final_product_when_sketches_are_not_kept():
    a = _decaying(150, 80, 0.8, seed=2)
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    matmat, rmatmat, calls = _counted(a)
    with xsvd.set_options(krylov_sketch_bytes=0):
        res = operator_svd(matmat, rmatmat, a.shape, 3, n_power_iter=4)
    assert calls["matmat"] == res.reads == res.passes + 1 == 6
    assert calls["rmatmat"] == res.passes  # the final read needs A V only
    kept = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, n_power_iter=4)
    assert kept.reads == kept.passes == 5
    np.testing.assert_allclose(res.U, kept.U, atol=1e-12)
    np.testing.assert_allclose(np.abs(res.U), np.abs(u[:, :3]), atol=1e-10)
    np.testing.assert_allclose(res.S, s[:3], rtol=1e-13)


def test_one_pass_has_unknown_errors_and_low_rank_fills_with_zeros():
    a = _decaying(80, 30, 0.9, seed=4)
    one = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, n_power_iter=0)
    assert one.passes == 1 and np.all(np.isinf(one.errors[:, 0]))
    # the single-pass SVD of the main solver: Q^T A = X S V^T with Q = orth(A W), U = Q X
    np.testing.assert_allclose(a.T @ one.U, one.V * one.S, atol=1e-12)
    np.testing.assert_allclose(one.U.T @ one.U, np.eye(3), atol=1e-12)
    assert np.all(one.S <= np.linalg.svd(a, compute_uv=False)[:3] * (1 + 1e-12))
    rng = np.random.default_rng(0)
    low = rng.standard_normal((60, 2)) @ rng.standard_normal((2, 25))
    with pytest.warns(RuntimeWarning, match="numerical rank 2"):
        res = operator_svd(lambda w: low @ w, lambda t: low.T @ t, low.shape, 4, n_power_iter=3)
    s = np.linalg.svd(low, compute_uv=False)
    np.testing.assert_allclose(res.S[:2], s[:2], rtol=1e-12)
    assert np.all(res.S[2:] == 0)


def test_sign_rule_and_seed():
    a = _decaying(70, 50, 0.8, seed=5)
    res = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, n_power_iter=3, seed=1)
    other = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, n_power_iter=3, seed=2)
    assert np.all(res.V.max(axis=0) >= -res.V.min(axis=0))  # largest entry of V positive
    np.testing.assert_allclose(res.V, other.V, atol=1e-10)


def test_bad_arguments_say_what_to_do():
    a = np.ones((10, 5))
    mm, rm = (lambda w: a @ w), (lambda t: a.T @ t)
    with pytest.raises(ValueError, match="between 1 and 5"):
        operator_svd(mm, rm, a.shape, 6)
    with pytest.raises(ValueError, match="either n_power_iter"):
        operator_svd(mm, rm, a.shape, 2, n_power_iter=2, tol=1e-3)
    with pytest.raises(ValueError, match="pass tol too"):
        operator_svd(mm, rm, a.shape, 2, max_passes=3)
    with pytest.raises(ValueError, match=r"matmat returned shape \(5, 5\), expected \(10, 5\)"):
        operator_svd(lambda w: a.T @ a @ w, rm, (10, 5), 2, n_power_iter=1)


# ---------------------------------------------------------------- fused: both products per pass


def _both(a):
    calls = []

    def both(w, t):
        calls.append((w.shape[1], t.shape[1]))
        return a @ w, a.T @ t

    return both, calls


@pytest.mark.parametrize("shape", [(200, 90), (90, 200), (150, 150)])
@pytest.mark.parametrize("n_power_iter", [1, 3, 6])
@pytest.mark.parametrize("rate", [0.8, 0.97])
def test_fused_matches_numpy_and_estimates_bound_the_truth(shape, n_power_iter, rate):
    a = _decaying(*shape, rate, seed=shape[0] + 7 * n_power_iter)
    k = 6
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    both, calls = _both(a)
    res = fused_operator_svd(both, a.shape, k, n_power_iter=n_power_iter, seed=3)
    assert res.passes == res.reads == n_power_iter + 1 == len(calls)
    assert res.bounds
    s_err = np.abs(res.S - s[:k])
    assert np.all(res.errors[:, 0] >= s_err)
    assert np.all(res.errors[:, 1] >= _angles(res.U, u[:, :k]))
    assert np.all(res.errors[:, 1] >= _angles(res.V, vt[:k].T))
    # the relative residuals of both sides are below the estimate
    for side in (a @ res.V - res.U * res.S, a.T @ res.U - res.V * res.S):
        assert np.all(np.linalg.norm(side, axis=0) / res.S <= res.errors[:, 2] * (1 + 1e-8))
    np.testing.assert_allclose(res.V.T @ res.V, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(res.U.T @ res.U, np.eye(k), atol=1e-12)
    if rate == 0.8 and n_power_iter == 6:  # converged
        np.testing.assert_allclose(res.S, s[:k], rtol=1e-13)
        assert res.errors[:, 0].max() < 1e-10


def test_fused_beats_two_products_per_pass_at_equal_reads():
    """Per read of the data, the fused pass carries twice the Krylov columns: at 6 reads
    (3 passes of ``operator_svd``) it is far more accurate."""
    a = _decaying(300, 200, 0.95, seed=8)
    s = np.linalg.svd(a, compute_uv=False)[:5]
    both, _ = _both(a)
    fused = fused_operator_svd(both, a.shape, 5, n_power_iter=5, seed=1)
    old = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 5, n_power_iter=2, seed=1)
    err_fused, err_old = np.abs(fused.S - s).max(), np.abs(old.S - s).max()
    assert err_fused < 1e-3 * err_old


def test_fused_default_stops_when_converged_one_pass_and_low_rank():
    a = _decaying(150, 60, 0.7, seed=1)
    s = np.linalg.svd(a, compute_uv=False)
    both, calls = _both(a)
    res = fused_operator_svd(both, a.shape, 4)
    assert 2 <= res.passes == len(calls) < 8
    np.testing.assert_allclose(res.S, s[:4], rtol=1e-12)
    assert np.all(res.errors[:, 0] / res.S <= 1e-6) and np.all(res.errors[:, 2] <= 1e-6)
    b = _decaying(150, 60, 0.99, seed=1)
    slow = fused_operator_svd(_both(b)[0], b.shape, 4, tol=1e-8, max_passes=5)
    assert slow.passes == 5 and res.stopped == "converged"
    tight = fused_operator_svd(_both(b)[0], b.shape, 4, tol=1e-14, max_passes=3)
    assert tight.passes == 3 and tight.stopped == "max_passes"
    one = fused_operator_svd(_both(a)[0], a.shape, 3, n_power_iter=0)
    assert one.passes == 1 and np.all(np.isinf(one.errors[:, 0]))
    np.testing.assert_allclose(a @ one.V, one.U * one.S, atol=1e-12)
    rng = np.random.default_rng(0)
    low = rng.standard_normal((60, 2)) @ rng.standard_normal((2, 25))
    with pytest.warns(RuntimeWarning, match="numerical rank 2"):
        res = fused_operator_svd(_both(low)[0], low.shape, 4, n_power_iter=3)
    np.testing.assert_allclose(res.S[:2], np.linalg.svd(low, compute_uv=False)[:2], rtol=1e-12)
    assert np.all(res.S[2:] == 0)


def test_fused_small_side_fills_then_gets_no_columns():
    a = _decaying(8, 120, 0.9, seed=6)  # the left space (8) is full after the first block
    s = np.linalg.svd(a, compute_uv=False)
    both, calls = _both(a)
    res = fused_operator_svd(both, a.shape, 3, n_power_iter=3)
    assert calls[0] == (13, 8) and all(t == 0 for _, t in calls[1:])
    assert len(calls) == 2 and res.stopped == "space full"  # 13 + 8 columns span A^T's range
    np.testing.assert_allclose(res.S, s[:3], rtol=1e-12)
    with pytest.raises(ValueError, match=r"both\(W, T\)\[1\] returned shape"):
        fused_operator_svd(lambda w, t: (a @ w, t), a.shape, 2, n_power_iter=1)


def test_a_first_block_that_fills_the_space_is_exact_with_estimates():
    """k + p >= the short side: one pass spans it; the Ritz triplets are exact and their
    estimates say so (before: inf, and with sketches not kept one more product)."""
    a = _decaying(40, 12, 0.9, seed=7)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    matmat, rmatmat, calls = _counted(a)
    with xsvd.set_options(krylov_sketch_bytes=0):
        res = operator_svd(matmat, rmatmat, a.shape, 4, n_power_iter=3)
    assert res.passes == res.reads == calls["matmat"] == 1 and res.stopped == "space full"
    np.testing.assert_allclose(res.S, s[:4], rtol=1e-13)
    assert np.all(np.isfinite(res.errors)) and res.errors[:, 0].max() < 1e-12
    assert np.all(res.errors[:, 0] >= np.abs(res.S - s[:4]))
