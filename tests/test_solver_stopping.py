"""When the one block-Krylov loop stops, and what ``settings["stopped"]`` says (issue 30).

Float32 products cannot estimate errors below about 1e-5 (the rounding floor of the
estimates, :func:`xsvd.core.randomized.small.precision_floor`), while the default tol is
1e-6: the default stop also ends the passes once every estimate is at that floor, when
further passes cannot change the answer at the precision of the products. An explicit
``tol`` keeps its meaning.
"""

from __future__ import annotations

import numpy as np
import pytest

from xsvd.core.options import DEFAULT_N_POWER_ITER, DEFAULT_TOL, CompressedOptions
from xsvd.core.randomized.operator import fused_operator_svd, operator_svd
from xsvd.linalg import randomized_svd


def _low_rank_float32(m=300, n=1500, noise=1e-3, seed=0):
    """Rank 3 plus small noise, float32, and its singular values in float64 (dense SVD)."""
    rng = np.random.default_rng(seed)
    u, v = rng.standard_normal((m, 3)), rng.standard_normal((3, n))
    a = ((u * [100.0, 50.0, 20.0]) @ v / np.sqrt(n) + noise * rng.standard_normal((m, n))).astype(
        np.float32
    )
    return a, np.linalg.svd(a.astype(np.float64), compute_uv=False)


def _true_error(d, backend, s):
    S = backend.host(d.S)
    return float(np.max(np.abs(S - s[: S.size]) / s[: S.size]))


def test_float32_default_stops_at_the_precision_of_its_products(backend):
    a, s = _low_rank_float32()
    x = backend(a)
    d = randomized_svd(x, 3, seed=0, compute=True)
    full = randomized_svd(x, 3, seed=0, compute=True, n_power_iter=DEFAULT_N_POWER_ITER)
    assert d.settings["dtype"] == "float32"
    assert d.settings["passes"] <= 3 < full.settings["passes"] == DEFAULT_N_POWER_ITER + 1
    assert d.settings["stopped"] == "precision of float32 products"
    assert full.settings["stopped"] == "n_power_iter"
    assert d.settings["estimated_error"] > DEFAULT_TOL  # float32 cannot show 1e-6
    # the same answer as 8 passes, against the float64 dense SVD
    early, late = _true_error(d, backend, s), _true_error(full, backend, s)
    assert early < 1e-7 and early <= 2 * late + 1e-12
    U, V = backend.host(d.U), backend.host(full.U)
    assert np.abs(np.abs(np.sum(U * V, axis=0)) - 1).max() < 1e-5


def test_components_below_float32_rounding_do_not_keep_the_default_reading(backend):
    """k above the numerical rank in float32: the last components are 0 (below the rounding
    of the products); they cannot converge, and no longer make the default read 8 times."""
    a, s = _low_rank_float32(noise=1e-5)
    with pytest.warns(RuntimeWarning, match="numerical rank 3"):
        d = randomized_svd(backend(a), 5, seed=0, compute=True)
    assert d.settings["passes"] <= 3
    assert d.settings["stopped"] == "precision of float32 products"
    S = backend.host(d.S)
    np.testing.assert_allclose(S[:3], s[:3], rtol=1e-6)
    assert np.all(S[3:] == 0)


def test_explicit_tol_keeps_its_meaning_on_float32():
    a, _ = _low_rank_float32()
    with pytest.warns(RuntimeWarning, match="float32 products cannot estimate below"):
        d = randomized_svd(a, 3, seed=0, tol=1e-6, max_passes=5)
    assert d.settings["passes"] == 5 and d.settings["stopped"] == "max_passes"
    loose = randomized_svd(a, 3, seed=0, tol=1e-3)
    assert loose.settings["stopped"] == "converged" and loose.settings["passes"] == 2


def test_float64_default_still_stops_by_tol():
    a, s = _low_rank_float32()
    d = randomized_svd(a.astype(np.float64), 3, seed=0)
    assert d.settings["stopped"] == "converged"
    assert d.settings["estimated_error"] <= DEFAULT_TOL
    np.testing.assert_allclose(d.S, s[:3], rtol=1e-12)


def test_operator_default_stops_at_the_precision_of_its_products():
    a, s = _low_rank_float32()
    res = operator_svd(lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, dtype=np.float32)
    assert res.passes <= 3
    np.testing.assert_allclose(res.S, s[:3], rtol=1e-6)
    fused = fused_operator_svd(lambda w, t: (a @ w, a.T @ t), a.shape, 3, dtype=np.float32)
    assert fused.passes <= 4
    np.testing.assert_allclose(fused.S, s[:3], rtol=1e-6)
    # an explicit tol keeps its meaning: every pass allowed
    kept = operator_svd(
        lambda w: a @ w, lambda t: a.T @ t, a.shape, 3, dtype=np.float32, tol=1e-9, max_passes=5
    )
    assert kept.passes == 5


@pytest.mark.parametrize("name", ["n_power_iter", "max_passes", "n_oversamples"])
@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_booleans_are_not_counts(name, value):
    given = {name: value, **({"tol": 1e-3} if name == "max_passes" else {})}
    with pytest.raises(TypeError, match=rf"{name} must be an integer >= \d, got {value!r}"):
        CompressedOptions(**given).resolved(lazy=False)
    a = np.random.default_rng(0).standard_normal((30, 10))
    with pytest.raises(TypeError, match=rf"{name} must be an integer"):
        randomized_svd(a, 2, **given)
