"""The linear-algebra core on plain NumPy and Dask arrays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
from conftest import CountingArray, matrix_with_spectrum, raise_if_dask_computes

import xsvd
from xsvd.linalg import Decomposition, MissingValueError, exact_svd, randomized_svd


def explicit(a, center=False, weights=None):
    """The matrix the solvers decompose, built the obvious way."""
    b = np.asarray(a, dtype=np.float64)
    b = np.where(np.isnan(b), 0.0, b)
    if center:
        b = b - b.mean(axis=0)
    if weights is not None:
        b = b * weights
    return b


def errors(a, d):
    """Spectral and Frobenius error of the rank-k approximation from ``d``."""
    rec = (np.asarray(d.U) * np.asarray(d.S)) @ np.asarray(d.V).T
    diff = a - rec
    return np.linalg.norm(diff, 2), np.linalg.norm(diff, "fro")


def optimal(s, k):
    s = np.asarray(s)
    return s[k], np.sqrt((s[k:] ** 2).sum())


def assert_orthonormal(x, tol=1e-10):
    x = np.asarray(x)
    assert np.abs(x.T @ x - np.eye(x.shape[1])).max() < tol


# ---------------------------------------------------------------- exact


@pytest.mark.parametrize("shape", [(60, 20), (20, 60)])
@pytest.mark.parametrize("center", [False, True])
def test_exact_matches_lapack(rng, shape, center, backend):
    a = rng.standard_normal(shape) + 2.0
    w = rng.uniform(0.5, 2.0, shape[1])
    b = explicit(a, center, w)
    u, s, vt = np.linalg.svd(b, full_matrices=False)
    d = exact_svd(backend(a), center=center, weights=w)
    U, S, V, tss = backend.host(d.U, d.S, d.V, d.total_ss)
    np.testing.assert_allclose(S, s, rtol=1e-12, atol=1e-12)
    # same subspaces and, with xsvd's sign rule applied, the same vectors
    np.testing.assert_allclose(np.abs(U.T @ u).diagonal(), 1, atol=1e-10)
    np.testing.assert_allclose((U * S) @ V.T, b, atol=1e-10)
    np.testing.assert_allclose(tss, (b**2).sum(), rtol=1e-12)


@pytest.mark.parametrize("chunks", [(10, 20), (60, 5), (7, 3)])
def test_exact_dask_any_chunking_matches_numpy(rng, chunks):
    a = rng.standard_normal((60, 20))
    ref = exact_svd(a, center=True)
    d = exact_svd(da.from_array(a, chunks=chunks), center=True)
    U, S, V = dask.compute(d.U, d.S, d.V)
    np.testing.assert_allclose(S, ref.S, rtol=1e-12)
    np.testing.assert_allclose(U, ref.U, atol=1e-10)
    np.testing.assert_allclose(V, ref.V, atol=1e-10)


def test_exact_dask_short_wide(rng):
    a = rng.standard_normal((15, 200))
    d = exact_svd(da.from_array(a, chunks=(5, 50)), k=4)
    np.testing.assert_allclose(d.S.compute(), np.linalg.svd(a, compute_uv=False)[:4], rtol=1e-12)


# ----------------------------------------------------------- compressed


SPECTRA = {
    "fast": 0.5 ** np.arange(60),  # sigma_11 / sigma_1 ~ 5e-4
    "slow": 1.0 / np.sqrt(np.arange(1, 61)),
    "flat_tail": np.r_[np.linspace(10, 3, 10), np.full(50, 1.0)],
}


@pytest.mark.parametrize("name", list(SPECTRA))
def test_compressed_is_near_optimal_with_defaults(name, backend):
    s = SPECTRA[name]
    a = matrix_with_spectrum(s, 400, 300, seed=1)
    k = 10
    d = randomized_svd(backend(a), k, seed=0)
    U, S, V = backend.host(d.U, d.S, d.V)
    spec, fro = errors(a, Decomposition(U, S, V, None, None, None, "", {}))
    spec_opt, fro_opt = optimal(s, k)
    assert fro <= 1.02 * fro_opt, (fro, fro_opt)
    assert spec <= 1.10 * spec_opt, (spec, spec_opt)
    np.testing.assert_allclose(S, s[:k], rtol=0.02 if name == "slow" else 1e-6)
    assert_orthonormal(U)
    assert_orthonormal(V)


def _unnormalized_power_svd(a, k, q, l, rng):
    """The textbook scheme without orthonormalizing: ``Q = orth((A A^T)^q A Omega)``."""
    Y = a @ rng.standard_normal((a.shape[1], l))
    for _ in range(q):
        Y = a @ (a.T @ Y)
    Q, _ = np.linalg.qr(Y)
    u, s, vt = np.linalg.svd(Q.T @ a, full_matrices=False)
    return (Q @ u)[:, :k], s[:k], vt[:k].T


def test_normalized_iterations_keep_the_fast_tail_that_unnormalized_ones_lose():
    s = 0.3 ** np.arange(60)  # sigma_11 / sigma_1 = 6e-6
    a = matrix_with_spectrum(s, 400, 300, seed=2)
    k, q = 10, 4
    x = da.from_array(a, chunks=(100, 300))
    d = randomized_svd(x, k, n_power_iter=q, seed=0)
    ours = np.linalg.norm(a - (d.U * d.S) @ d.V.T, 2).compute()
    assert ours <= 1.05 * s[k]
    # the same sketch width and iterations without normalization round the tail away
    u, sv, v = _unnormalized_power_svd(a, k, q, k + 10, np.random.default_rng(0))
    plain = np.linalg.norm(a - (u * sv) @ v.T, 2)
    assert plain > 10 * ours, (plain, ours)


@pytest.mark.parametrize("chunks", [(50, 80), (400, 20), (70, 30)])
@pytest.mark.parametrize("center", [False, True])
def test_compressed_centering_and_weights_match_explicit_matrix(rng, chunks, center):
    s = np.r_[10.0 * 0.7 ** np.arange(15), np.full(45, 1e-3)]
    a = matrix_with_spectrum(s, 400, 80, seed=3) + rng.uniform(0, 5, 80)  # large feature means
    w = rng.uniform(0.2, 3.0, 80)
    b = explicit(a, center, w)
    sb = np.linalg.svd(b, compute_uv=False)
    for x in (a, da.from_array(a, chunks=chunks)):
        d = randomized_svd(x, 6, center=center, weights=w, seed=0)
        U, S, V, mean, tss = dask.compute(d.U, d.S, d.V, d.mean, d.total_ss)
        np.testing.assert_allclose(S, sb[:6], rtol=1e-9)
        np.testing.assert_allclose(tss, (b**2).sum(), rtol=1e-8)
        if center:
            np.testing.assert_allclose(mean, a.mean(axis=0), rtol=1e-12)
        spec = np.linalg.norm(b - (U * S) @ V.T, 2)
        assert spec <= 1.01 * sb[6]


def test_numpy_and_dask_give_identical_results(rng):
    a = matrix_with_spectrum(np.linspace(5, 1, 50), 300, 120, seed=4)
    ref = randomized_svd(a, 5, seed=7, n_power_iter=1)
    # same orientation (sample stripes, features whole) as NumPy picks here
    d = randomized_svd(da.from_array(a, chunks=(64, 120)), 5, seed=7, n_power_iter=1)
    assert d.settings["stripes"] == ref.settings["stripes"] == "samples"
    U, S, V = dask.compute(d.U, d.S, d.V)
    np.testing.assert_allclose(S, ref.S, rtol=1e-12)
    np.testing.assert_allclose(U, ref.U, atol=1e-10)
    np.testing.assert_allclose(V, ref.V, atol=1e-10)


def test_signs_follow_the_rule_and_agree_across_layouts():
    a = matrix_with_spectrum(2.0 ** -np.arange(30), 200, 150, seed=5)
    fixed = {"n_power_iter": 7}  # to 1e-8: more than the default tol (1e-6) asks for
    results = [
        randomized_svd(a, 4, seed=0, **fixed),
        randomized_svd(da.from_array(a, chunks=(50, 150)), 4, seed=1, **fixed),  # sample stripes
        randomized_svd(da.from_array(a, chunks=(200, 40)), 4, seed=2, **fixed),  # feature stripes
        exact_svd(a, 4),
    ]
    Vs = [np.asarray(dask.compute(r.V)[0]) for r in results]
    Us = [np.asarray(dask.compute(r.U)[0]) for r in results]
    for V, U in zip(Vs, Us, strict=True):
        idx = np.abs(V).argmax(axis=0)
        assert (V[idx, np.arange(4)] > 0).all()  # the rule
        np.testing.assert_allclose(V, Vs[-1], atol=1e-8)
        np.testing.assert_allclose(U, Us[-1], atol=1e-8)


def test_seed_makes_results_reproducible(rng, backend):
    a = backend(rng.standard_normal((200, 100)))  # flat spectrum: results depend on the sketch
    r1 = randomized_svd(a, 5, seed=3, n_power_iter=0)
    r2 = randomized_svd(a, 5, seed=3, n_power_iter=0)
    r3 = randomized_svd(a, 5, seed=4, n_power_iter=0)
    np.testing.assert_array_equal(backend.host(r1.V), backend.host(r2.V))
    assert not np.allclose(backend.host(r1.S), backend.host(r3.S))


@pytest.mark.parametrize("compute", [False, True])
@pytest.mark.parametrize("q", [0, 1, 3])
@pytest.mark.parametrize("chunks", [(100, 150), (1000, 50), (250, 50)])
def test_each_chunk_is_read_q_plus_1_times(q, chunks, compute):
    data = np.random.default_rng(0).integers(0, 3, (1000, 150), dtype=np.uint8)
    src = CountingArray(data)
    x = da.from_array(src, chunks=chunks, asarray=False)
    d = randomized_svd(x, 5, n_power_iter=q, center=True, seed=0, compute=compute)
    dask.compute(d.U, d.S, d.V, d.mean, d.total_ss)
    assert len(src.reads) == x.npartitions
    assert set(src.reads.values()) == {q + 1}, src.reads
    # the other executor on the same chunks (same sketch orientation) agrees to rounding
    other = randomized_svd(
        da.from_array(data, chunks=chunks),
        5,
        n_power_iter=q,
        center=True,
        seed=0,
        compute=not compute,
    )
    np.testing.assert_allclose(np.asarray(d.S), dask.compute(other.S)[0], rtol=1e-6)


def test_computed_pass_by_pass_rereads_even_through_a_rechunk_in_the_input_graph():
    data = np.random.default_rng(0).integers(0, 3, (1200, 400), dtype=np.uint8)
    src = CountingArray(data)
    x = da.from_array(src, chunks=(100, 100), asarray=False).rechunk((300, -1))
    with dask.config.set(scheduler="sync"):  # deterministic order: no dependence on timing
        d = randomized_svd(x, 4, n_power_iter=2, seed=0, compute=True)
    assert isinstance(d.S, np.ndarray)
    assert set(src.reads.values()) == {3}
    # each rechunked stripe merges 3 x 4 source chunks: at most two stripes in flight
    assert len(src.reads) == 48 and src.max_live <= 24


@pytest.mark.parametrize("compute", [True, False], ids=["stepwise", "lazy"])
@pytest.mark.parametrize(
    "shape, chunks, stripes",
    [
        ((4000, 60), (100, 60), "samples"),
        ((4000, 60), (100, 20), "samples"),  # three blocks per stripe
        ((60, 4000), (60, 100), "features"),
        ((60, 4000), (20, 100), "features"),
    ],
)
def test_streaming_holds_few_chunks_at_once(shape, chunks, stripes, compute):
    # The synchronous scheduler runs the tasks one at a time in dask's own
    # order, so what is alive at once depends on the graph alone, not on
    # thread timing or machine load.
    data = np.random.default_rng(0).integers(0, 3, shape, dtype=np.uint8)
    src = CountingArray(data)
    x = da.from_array(src, chunks=chunks, asarray=False)  # 40 or 120 chunks
    with dask.config.set(scheduler="sync"):
        d = randomized_svd(x, 5, n_power_iter=2, seed=0, compute=compute)
        dask.compute(d.U, d.S, d.V)
    assert d.settings["stripes"] == stripes
    assert len(src.reads) == x.npartitions and set(src.reads.values()) == {3}  # re-read per pass
    per_stripe = x.numblocks[1 if stripes == "samples" else 0]
    # a stripe or two at a time, never the whole input
    assert src.max_live <= 2 * per_stripe < x.npartitions, src.max_live


def test_lazy_until_computed():
    x = da.from_array(np.random.default_rng(0).standard_normal((300, 40)), chunks=(50, 40))
    with raise_if_dask_computes():
        d = randomized_svd(x, 3, center=True, seed=0)
        e = exact_svd(x, 3, center=True)
    assert all(isinstance(v, da.Array) for v in (d.U, d.S, d.V, e.U, e.S, e.V))


def test_uint8_is_computed_in_float32_and_agrees_with_float64(backend):
    g = np.random.default_rng(0).integers(0, 3, (3000, 200), dtype=np.uint8)
    d32 = randomized_svd(backend(g), 5, center=True, seed=0)
    d64 = randomized_svd(backend(g.astype(np.float64)), 5, center=True, seed=0)
    assert d32.settings["dtype"] == "float32" and d64.settings["dtype"] == "float64"
    S32, V32, S64, V64 = backend.host(d32.S, d32.V, d64.S, d64.V)
    np.testing.assert_allclose(S32, S64, rtol=1e-5)
    np.testing.assert_allclose(np.abs(V32.T @ V64).diagonal(), 1, atol=1e-4)


def test_all_nan_features_are_kept_out_and_come_back_nan(rng, backend):
    a = matrix_with_spectrum(np.r_[8.0, 6, 4, 3, np.full(16, 0.1)], 100, 30, seed=6)
    a[:, [3, 17]] = np.nan
    b = explicit(a, center=True)
    s = np.linalg.svd(b, compute_uv=False)
    x = backend(a)
    for d in (randomized_svd(x, 4, center=True, seed=0), exact_svd(x, 4, center=True)):
        S, V, mask = backend.host(d.S, d.V, d.nan_features)
        np.testing.assert_allclose(S, s[:4], rtol=1e-8)
        assert np.isnan(V[[3, 17]]).all() and not np.isnan(np.delete(V, [3, 17], 0)).any()
        assert mask[[3, 17]].all() and mask.sum() == 2
    assert not np.isnan(a[:, 0]).any()  # input unchanged apart from what we set


@pytest.mark.parametrize("solver", ["exact", "compressed"])
def test_partial_nan_is_a_clear_error(solver, backend):
    a = np.random.default_rng(0).standard_normal((50, 12))
    a[7, 5] = np.nan
    x = backend(a)

    def run():
        if solver == "exact":
            d = exact_svd(x, 3, locate=lambda idx: f"features {idx.tolist()}")
        else:
            d = randomized_svd(x, 3, seed=0, locate=lambda idx: f"features {idx.tolist()}")
        backend.host(d.U, d.V)

    with pytest.raises(MissingValueError, match=r"features \[5\].*missing=.mean."):
        run()


def test_rank_deficient_data_warns_and_pads_with_zeros(backend):
    a = matrix_with_spectrum([3.0, 2.0], 50, 40, seed=7)
    with pytest.warns(RuntimeWarning, match="numerical rank 2"):
        d = randomized_svd(backend(a), 4, seed=0, compute=True)
    S = backend.host(d.S)
    np.testing.assert_allclose(S[:2], [3, 2], rtol=1e-10)
    np.testing.assert_array_equal(S[2:], 0)


@pytest.mark.parametrize("k", [0, 41, 2.5])
def test_bad_k_is_rejected(k):
    with pytest.raises((ValueError, TypeError), match="k"):
        randomized_svd(np.ones((50, 40)), k)


def test_core_never_imports_xarray_or_pint():
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys, types\n"
        "sys.modules['xarray'] = None; sys.modules['pint'] = None\n"
        f"pkg = types.ModuleType('xsvd'); pkg.__path__ = [{str(root / 'xsvd')!r}]\n"
        "sys.modules['xsvd'] = pkg\n"
        "import numpy as np, xsvd.linalg as L\n"
        "d = L.randomized_svd(np.eye(30)[:, :20], 3, seed=0)\n"
        "assert d.S.shape == (3,)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_chunk_size_warnings():
    x = da.zeros((4000, 300), chunks=(1000, 300), dtype=np.uint8)
    with xsvd.set_options(large_stripe_bytes=100_000):
        with pytest.warns(UserWarning, match="smaller chunks along that dimension"):
            randomized_svd(x, 2, seed=0)
    tiny = da.zeros((20_000, 10), chunks=(1, 10))
    with xsvd.set_options(large_stripe_bytes=2**40):
        with pytest.warns(UserWarning, match="scheduling will cost more"):
            randomized_svd(tiny, 2, seed=0)


@pytest.mark.parametrize("shape", [(3000, 200), (200, 3000)])
def test_large_numpy_input_runs_as_threaded_views_with_the_same_result(shape):
    from xsvd.core.randomized.plan import plan

    rng = np.random.default_rng(3)
    a = matrix_with_spectrum(np.r_[9.0, 6, 4, 2, np.full(40, 0.1)], *shape, seed=8)
    a = a + rng.uniform(0, 3, shape[1])
    a[:, 7] = np.nan
    w = rng.uniform(0.5, 2, shape[1])
    ref = randomized_svd(a, 4, center=True, weights=w, seed=0)
    # ~500-wide views
    with xsvd.set_options(threaded_min_bytes=0, threaded_stripe_bytes=8 * 500 * min(shape)):
        _, _, ex = plan(a, compute=True)
        assert ex.threads > 1 or (os.cpu_count() or 1) == 1
        assert len(ex.stripes()) == max(shape) // 500
        d = randomized_svd(a, 4, center=True, weights=w, seed=0)
    np.testing.assert_allclose(d.S, ref.S, rtol=1e-10)
    np.testing.assert_allclose(d.V, ref.V, atol=1e-10)
    np.testing.assert_allclose(d.mean, ref.mean, rtol=1e-12)
    assert np.isnan(d.V[7]).all()


@pytest.mark.parametrize("chunks", [None, (400, -1), (-1, 150)])
def test_krylov_is_more_accurate_on_a_slow_spectrum_with_the_same_reads(chunks):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2_000, 600))
    a[:, :3] += 5 * rng.standard_normal((2_000, 1))
    ref = np.linalg.svd(a - a.mean(axis=0), compute_uv=False)[:10]
    x = a if chunks is None else da.from_array(a, chunks=chunks)
    errs = {}
    for krylov in (False, True):
        d = randomized_svd(x, 10, center=True, n_power_iter=5, seed=0, krylov=krylov, compute=True)
        assert d.settings["passes"] == 6
        errs[krylov] = np.max(np.abs(np.asarray(d.S) - ref) / ref)
        U, V = np.asarray(d.U), np.asarray(d.V)
        np.testing.assert_allclose(U.T @ U, np.eye(10), atol=1e-6)
        np.testing.assert_allclose(V.T @ V, np.eye(10), atol=1e-6)
    assert errs[True] < errs[False] / 2.5
    if chunks is not None:  # one lazy graph gives the same numbers
        lazy = randomized_svd(x, 10, center=True, n_power_iter=5, seed=0, krylov=True)
        np.testing.assert_allclose(np.asarray(lazy.S.compute()), np.asarray(d.S), rtol=1e-6)
