"""How many times the compressed SVD reads the data, and what it keeps between reads.

- By default (neither ``n_power_iter`` nor ``tol``) the passes stop once the
  error estimates say every component has converged (``DEFAULT_TOL``), after
  ``DEFAULT_N_POWER_ITER + 1`` passes at the latest, without a warning; a
  fixed ``n_power_iter`` keeps its meaning; one lazy graph reads the fixed
  default.
- Block Krylov keeps every pass's stripe-side sketch only while that fits in
  ``xsvd.set_options(krylov_sketch_bytes=...)``; beyond it, it keeps the thin
  side only and reads the data once more for the stripe-side vectors: the same
  results, one more read, bounded memory.
"""

from __future__ import annotations

import tracemalloc
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from conftest import CountingArray, matrix_with_spectrum

import xsvd
from xsvd.core.options import DEFAULT_N_POWER_ITER, DEFAULT_TOL
from xsvd.linalg import exact_svd, randomized_svd

FAST = 2.0 ** -np.arange(40)  # converges in a few passes


def _host(d):
    from xsvd.core import backend as arrays

    return [arrays.to_numpy(x) for x in dask.compute(d.U, d.S, d.V)]


def _slow(m=300, n=200):
    """Noise of full rank: the estimates never reach DEFAULT_TOL in 8 passes."""
    return np.random.default_rng(3).standard_normal((m, n))


# ---------------------------------------------------------------- default stopping


def test_default_stops_when_converged(backend):
    a = matrix_with_spectrum(FAST, 300, 200, seed=1)
    d = randomized_svd(backend(a), 5, seed=0, compute=True)
    assert d.settings["passes"] < DEFAULT_N_POWER_ITER + 1
    assert d.settings["tol"] == DEFAULT_TOL
    assert d.settings["estimated_error"] <= DEFAULT_TOL
    U, S, V = _host(d)
    ref = exact_svd(a, 5)
    np.testing.assert_allclose(S, ref.S, rtol=1e-9)
    # vectors to about tol: what the estimates promised
    assert np.abs(np.abs(V.T @ ref.V) - np.eye(5)).max() < 10 * DEFAULT_TOL
    assert np.abs(np.abs(U.T @ ref.U) - np.eye(5)).max() < 10 * DEFAULT_TOL


def test_default_is_capped_at_the_fixed_default_without_a_warning(backend):
    a = backend(_slow())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = randomized_svd(a, 5, seed=0, compute=True)
    fixed = randomized_svd(a, 5, seed=0, compute=True, n_power_iter=DEFAULT_N_POWER_ITER)
    assert d.settings["passes"] == fixed.settings["passes"] == DEFAULT_N_POWER_ITER + 1
    assert d.settings["estimated_error"] > DEFAULT_TOL
    for x, y in zip(_host(d), _host(fixed), strict=True):
        np.testing.assert_array_equal(x, y)  # the same passes, the same final step


def test_an_explicit_tol_still_warns_when_not_reached():
    with pytest.warns(RuntimeWarning, match="was not reached"):
        randomized_svd(_slow(), 5, seed=0, tol=1e-9, max_passes=4)


@pytest.mark.parametrize("q", [0, 2])
def test_fixed_n_power_iter_keeps_its_meaning(q):
    a = matrix_with_spectrum(FAST, 300, 200, seed=1)
    d = randomized_svd(a, 5, seed=0, n_power_iter=q)
    assert d.settings["passes"] == q + 1
    assert "tol" not in d.settings and "estimated_error" not in d.settings


def test_one_lazy_graph_reads_the_fixed_default():
    src = CountingArray(_slow(400, 150))
    x = da.from_array(src, chunks=(100, 150), asarray=False)
    d = randomized_svd(x, 5, seed=0, compute=False)
    dask.compute(d.U, d.S, d.V)
    assert d.settings["passes"] == DEFAULT_N_POWER_ITER + 1
    assert set(src.reads.values()) == {DEFAULT_N_POWER_ITER + 1}


def test_converging_default_reads_each_chunk_once_per_pass():
    src = CountingArray(matrix_with_spectrum(FAST, 400, 100, seed=2))
    x = da.from_array(src, chunks=(100, 100), asarray=False)
    d = randomized_svd(x, 5, seed=0, compute=True)
    assert d.settings["passes"] < DEFAULT_N_POWER_ITER + 1
    assert set(src.reads.values()) == {d.settings["passes"]}


def test_labeled_default_converges_and_says_so():
    field = xsvd.datasets.climate_field(n_time=120, n_lat=10, n_lon=20)
    res = field.svd.compressed(k=3, dim="time", center=True, seed=0)
    assert res.settings["passes"] < DEFAULT_N_POWER_ITER + 1
    assert res.settings["estimated_error"] <= DEFAULT_TOL
    ref = field.svd.exact(dim="time", center=True)
    np.testing.assert_allclose(res.S.values, ref.S.values[:3], rtol=1e-6)


def test_krylov_false_still_warns_about_its_estimates():
    with pytest.warns(RuntimeWarning, match="not upper"):
        randomized_svd(_slow(), 5, seed=0, krylov=False)


# ---------------------------------------------------------------- re-read for memory


def _both(a, **kw):
    keep = randomized_svd(a, 6, seed=0, compute=True, **kw)
    with xsvd.set_options(krylov_sketch_bytes=0):
        again = randomized_svd(a, 6, seed=0, compute=True, **kw)
    return keep, again


@pytest.mark.parametrize(
    "kw",
    [
        {"n_power_iter": 3},
        {"n_power_iter": 3, "center": True},
        {"center": True},  # converging
        {"tol": 1e-8, "center": True},
    ],
)
def test_reread_gives_the_same_results_with_one_more_read(backend, kw):
    rng = np.random.default_rng(4)
    a = _slow(300, 200) + 5.0 + 0.1 * rng.standard_normal(200)  # offsets: centering matters
    keep, again = _both(backend(a), weights=np.linspace(0.5, 2, 200), **kw)
    assert again.settings["passes"] == keep.settings["passes"] + 1
    for x, y in zip(_host(keep), _host(again), strict=True):
        np.testing.assert_allclose(y, x, atol=1e-9 * float(_host(keep)[1][0]) + 1e-12)
    U = _host(again)[0]
    np.testing.assert_allclose(U.T @ U, np.eye(6), atol=1e-10)
    np.testing.assert_allclose(
        backend.host(again.errors), backend.host(keep.errors), rtol=0.05, atol=1e-8
    )


def test_reread_with_missing_values_and_uint8_genotypes():
    rng = np.random.default_rng(5)
    g = rng.integers(0, 3, (150, 400), dtype=np.int8)
    g[rng.random(g.shape) < 0.02] = -1
    x = da.from_array(g, chunks=(150, 100))  # stripes of features, the long side
    keep, again = _both(x, n_power_iter=4, center=True, missing="mean")
    assert again.settings["passes"] == keep.settings["passes"] + 1
    for a, b in zip(_host(keep), _host(again), strict=True):
        np.testing.assert_allclose(b, a, atol=1e-5)  # float32 products


@pytest.mark.parametrize("compute", [False, True])
def test_reread_reads_each_chunk_q_plus_2_times(compute):
    src = CountingArray(np.random.default_rng(0).integers(0, 3, (1000, 150), dtype=np.uint8))
    x = da.from_array(src, chunks=(250, 150), asarray=False)
    with xsvd.set_options(krylov_sketch_bytes=0):
        d = randomized_svd(x, 5, n_power_iter=3, center=True, seed=0, compute=compute)
        dask.compute(d.U, d.S, d.V)
    assert set(src.reads.values()) == {5}
    assert d.settings["passes"] == 5


def test_reread_holds_about_one_sketch_not_one_per_pass():
    # 160 samples x 40,000 features, stripes of features: kept, the sketches of 8 passes
    # hold 8 x 40,000 x 20 float32 = 24 MiB; re-read, none beyond the last pass's
    a = np.random.default_rng(6).standard_normal((160, 40_000)).astype(np.float32)

    def peak(budget):
        with xsvd.set_options(krylov_sketch_bytes=budget):
            tracemalloc.start()
            d = randomized_svd(a, 10, n_power_iter=7, seed=0)
            _, top = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        return top, d

    kept, d1 = peak(2**40)
    lean, d2 = peak(0)
    assert d1.settings["stripes"] == "features"
    assert d2.settings["passes"] == d1.settings["passes"] + 1 == 9
    assert kept - lean > 15 * 2**20, (kept / 2**20, lean / 2**20)
    np.testing.assert_allclose(d2.S, d1.S, rtol=1e-6)
