"""MCA's fused operator runs on the one block-Krylov loop (issue 29), and that loop says
"space full" where its Krylov space fills the matrix, whatever else it stops for."""

from __future__ import annotations

import numpy as np
import pytest

from xsvd.core.randomized import operator, solver
from xsvd.core.randomized.operator import fused_operator_svd, operator_svd
from xsvd.core.randomized.small import relative_errors
from xsvd.linalg import randomized_svd


def _decaying(m: int, n: int, rate: float, seed: int) -> np.ndarray:
    """An m x n matrix with singular values ``rate**j`` (random singular vectors)."""
    rng = np.random.default_rng(seed)
    r = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal((m, r)))
    v, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return (u * rate ** np.arange(r)) @ v.T


def _both(a):
    calls = []

    def both(w, t):
        calls.append((w.shape[1], t.shape[1]))
        return a @ w, a.T @ t

    return both, calls


def test_fused_passes_are_the_one_loops(monkeypatch):
    """Every call of ``both`` is a pass of :func:`.solver.solve`, one call a pass, within
    its estimates; exact once both halves' spaces are full."""
    a = _decaying(120, 70, 0.9, seed=2)
    s = np.linalg.svd(a, compute_uv=False)
    runs = []

    def counted(*args, **kwargs):
        runs.append(args[1])  # the problem
        return solver.solve(*args, **kwargs)

    monkeypatch.setattr(operator, "solve", counted)
    both, calls = _both(a)
    res = fused_operator_svd(both, a.shape, 4, n_power_iter=3, seed=0)
    assert len(runs) == 1 and runs[0].width == 4 + 10
    assert res.passes == res.reads == len(calls) == 4 and res.stopped == "n_power_iter"
    assert calls == [(14, 14)] * 4
    assert np.all(np.abs(res.S - s[:4]) <= res.errors[:, 0])
    full = fused_operator_svd(_both(a)[0], a.shape, 4, n_power_iter=7, seed=0)
    # right: 5 x 14 columns, the 70 features; left: 14 + 70 columns, the 6th pass
    assert full.passes == 6 and full.stopped == "space full"
    np.testing.assert_allclose(full.S, s[:4], rtol=1e-12)


def test_fused_converged_on_its_last_pass_says_so():
    """The stop test runs on the last allowed pass too (as for the stripes of the data): a
    fused operator whose estimates meet ``tol`` on its 8th pass stopped "converged" (its
    own loop said "max_passes"); the triplets, estimates and reads are the same."""
    a = _decaying(200, 90, 0.95, seed=295)
    both, calls = _both(a)
    res = fused_operator_svd(both, a.shape, 1, seed=11)
    assert res.passes == len(calls) == 8  # the most the default stop makes
    assert relative_errors(res.errors, res.S).max() <= 1e-6
    assert res.stopped == "converged"
    tight = fused_operator_svd(_both(a)[0], a.shape, 1, seed=11, tol=1e-12, max_passes=8)
    assert tight.passes == 8 and tight.stopped == "max_passes"
    np.testing.assert_array_equal(tight.S, res.S)


def test_operator_filling_its_space_says_space_full():
    """64 x 48, k + p = 13: the Krylov space (13 + 48 columns) fills the 48 features on the
    4th pass, which the stop test used to call "converged"."""
    a = _decaying(64, 48, 0.95, seed=3)
    res = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, seed=4)
    assert res.passes == 4 and res.stopped == "space full"
    np.testing.assert_allclose(res.S, np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-12)


@pytest.mark.parametrize("stop", [{}, {"tol": 1e-8}])
def test_compressed_filling_its_space_says_space_full(backend, stop):
    """60 x 20, k + p = 12: the Krylov space fills the thin side on the 2nd pass (stripes of
    samples: 20 features) or the 3rd (stripes of features: 12 + 20 of the 60 samples), where
    the Ritz triplets are exact; it stops there and says why."""
    a = _decaying(60, 20, 0.97, seed=1)
    d = randomized_svd(backend(a), 2, seed=0, compute=True, **stop)
    passes = 2 if d.settings["stripes"] == "samples" else 3
    assert d.settings["passes"] == passes and d.settings["stopped"] == "space full"
    S = backend.host(d.S)
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False)[:2], rtol=1e-12)
