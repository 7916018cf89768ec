"""BLAS threads (issue 29): the small dense steps run on one BLAS thread, the products
with the data on all of them, and the threads are restored afterwards.

Deterministic: what threadpoolctl reports from inside the calls is recorded (a
patched ``numpy.linalg`` for the small factorizations, the data's sub-block
reader or the operator's products for the data); nothing is timed.
"""

from __future__ import annotations

import threading

import dask
import dask.array as da
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import xsvd
from xsvd.core import blas, exact_svd, randomized_svd
from xsvd.core.randomized import feature_stripes, sample_stripes
from xsvd.core.randomized.operator import fused_operator_svd, operator_svd

#: The BLAS threads every test starts from: more than one, whatever the machine's cores.
MANY = 3
FACTORIZATIONS = ("qr", "eigh", "eigvalsh", "svd")


def _threads() -> int:
    counts = {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}
    assert len(counts) == 1, counts
    return counts.pop()


@pytest.fixture(autouse=True)
def many_threads():
    if not any(d["user_api"] == "blas" for d in threadpool_info()):
        pytest.skip("threadpoolctl finds no BLAS library whose threads it could set")
    with threadpool_limits(MANY, user_api="blas"):
        if _threads() != MANY:
            pytest.skip(f"the BLAS does not take {MANY} threads")
        yield
        assert _threads() == MANY  # restored after the test's calls


@pytest.fixture
def seen(monkeypatch):
    """BLAS threads reported inside every NumPy factorization (``seen["small"]``) and at
    every sub-block of the data read for a product (``seen["data"]``)."""
    out = {"small": [], "data": []}
    for name in FACTORIZATIONS:
        monkeypatch.setattr(np.linalg, name, _recording(getattr(np.linalg, name), out["small"]))
    for module in (sample_stripes, feature_stripes):
        monkeypatch.setattr(module, "stripe_sub", _recording(module.stripe_sub, out["data"]))
    return out


def _recording(fn, threads: list):
    """``fn`` that first appends the BLAS threads of the moment to ``threads``."""

    def recorded(*args, **kwargs):
        threads.append(_threads())
        return fn(*args, **kwargs)

    return recorded


def _data(m: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, 12)) @ rng.standard_normal((12, n)) + 0.1 * rng.standard_normal(
        (m, n)
    )


@pytest.mark.parametrize("shape", [(300, 80), (80, 300)])  # stripes of samples, of features
@pytest.mark.parametrize("options", [{}, {"krylov": False, "n_power_iter": 3}, {"n_power_iter": 0}])
def test_compressed_svd_factors_on_one_thread_and_multiplies_on_all(seen, shape, options):
    d = randomized_svd(_data(*shape), 5, seed=0, **options)
    assert d.S.shape == (5,)
    assert seen["small"] and set(seen["small"]) == {1}
    assert seen["data"] and set(seen["data"]) == {MANY}
    assert _threads() == MANY


def test_compressed_svd_that_reads_again_and_dask(seen):
    a = _data(300, 80)
    with xsvd.set_options(krylov_sketch_bytes=0):  # the final step reads the data again
        randomized_svd(a, 5, seed=0)
    with dask.config.set(scheduler="synchronous"):
        x = da.from_array(a, chunks=(100, 80))
        randomized_svd(x, 5, seed=0, compute=True)
        randomized_svd(x, 5, seed=0, n_power_iter=2).S.compute()  # one lazy graph
    assert seen["small"] and set(seen["small"]) == {1}
    assert seen["data"] and set(seen["data"]) == {MANY}


def test_kernels_in_worker_threads_on_one_thread_and_restored_after(seen):
    """Stripes on a thread pool (large NumPy data) and Dask's threads: one BLAS thread per
    kernel, set in one worker thread and restored in another (threadpoolctl 3.8 drops the
    changes of a thread that does not control OpenBLAS: it stayed on one thread)."""
    a = _data(4000, 60)
    with xsvd.set_options(threaded_min_bytes=0, threaded_stripe_bytes=4000 * 60):
        randomized_svd(a, 5, seed=0)
    assert seen["data"] and set(seen["data"]) == {1}
    assert _threads() == MANY
    seen["data"].clear()
    with dask.config.set(scheduler="threads"):
        randomized_svd(da.from_array(a, chunks=(500, 60)), 5, seed=0, compute=True)
    assert seen["data"] and set(seen["data"]) == {1}
    assert _threads() == MANY


def test_exact_svd_of_a_small_matrix_on_one_thread_of_a_large_one_on_all(seen, monkeypatch):
    a = _data(50, 540)
    small = exact_svd(a, 10)
    assert seen["small"] == [1]
    monkeypatch.setattr(blas, "SMALL_WORK", 50 * 540 * 50 - 1)  # the same matrix "large"
    large = exact_svd(a, 10)
    assert seen["small"] == [1, MANY]
    np.testing.assert_allclose(small.S, large.S, rtol=1e-13)
    # the randomized solver's steps as well: all threads where they are not small, but
    # the Rayleigh-Ritz eigh of the (passes x width)^2 matrix always on one (hundreds of
    # columns: beside a busy process all threads took 20x longer)
    seen["small"].clear()
    monkeypatch.setattr(blas, "SMALL_WORK", 0)
    randomized_svd(a, 5, seed=0)
    assert seen["small"] and MANY in set(seen["small"])
    assert set(seen["small"]) <= {1, MANY}


@pytest.mark.parametrize("sketch_bytes", [None, 0])  # sketches kept, or U from one more product
@pytest.mark.parametrize("stop", [{}, {"n_power_iter": 0}, {"n_power_iter": 3}])
def test_operator_solvers_factor_on_one_thread_and_multiply_on_all(seen, sketch_bytes, stop):
    a = _data(200, 70)
    products = []

    def matmat(w):
        products.append(_threads())
        return a @ w

    def rmatmat(t):
        products.append(_threads())
        return a.T @ t

    def both(w, t):
        products.append(_threads())
        return a @ w, a.T @ t

    size = {} if sketch_bytes is None else {"krylov_sketch_bytes": sketch_bytes}
    with xsvd.set_options(**size):
        res = operator_svd(matmat, rmatmat, a.shape, 5, **stop)
        fused = fused_operator_svd(both, a.shape, 5, **stop)
    assert res.S.shape == fused.S.shape == (5,)
    assert seen["small"] and set(seen["small"]) == {1}
    assert products and set(products) == {MANY}
    assert _threads() == MANY


def test_threads_restored_when_a_small_step_raises(monkeypatch):
    def broken(*args, **kwargs):
        assert _threads() == 1
        raise np.linalg.LinAlgError("broken on purpose")

    monkeypatch.setattr(np.linalg, "qr", broken)
    with pytest.raises(np.linalg.LinAlgError, match="on purpose"):
        randomized_svd(_data(300, 80), 5, seed=0)
    assert _threads() == MANY


def test_the_limit_nests_and_counts_its_users():
    with blas.one_blas_thread():
        with blas.one_blas_thread():
            assert _threads() == 1
        assert _threads() == 1  # the outer block still holds it
        with blas.blas_single_thread():  # the main thread: changes nothing
            assert _threads() == 1
    assert _threads() == MANY
    with blas.blas_single_thread():
        assert _threads() == MANY  # the main thread keeps the full BLAS
    inside = []

    def worker():
        with blas.blas_single_thread():
            inside.append(_threads())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert inside == [1] and _threads() == MANY


def test_small_blas_counts_only_numpy_matrices():
    rows = np.zeros((1000, 20))
    assert blas.blas_work(rows) == 1000 * 20 * 20
    assert blas.blas_work([rows, rows], np.zeros(7)) == 1000 * 40 * 40  # blocks side by side
    assert blas.blas_work(None, 3, "text") is None  # nothing for the host BLAS
    with blas.small_blas(None):
        assert _threads() == MANY
    with blas.small_blas(rows):
        assert _threads() == 1
    with blas.small_blas(np.zeros((2000, 3000))):  # the work of a data matrix
        assert _threads() == MANY
