"""xsvd.mca and xsvd.extended_eof on every backend, with the core's rules (issue 29).

On NumPy, Dask (stripes of samples and of features) and array-api-strict's
second device (a GPU's stand-in: it refuses implicit conversion to NumPy and
mixing devices), compressed and exact: the numbers equal NumPy's, the parts
live where the data live, and on the device only small matrices cross to the
host (counted by ``xsvd.core.backend.TRANSFERS``). Also: the core's NaN and
infinite-value checks (naming the feature), the compressed options declared
once with ``xsvd.compressed``'s defaults, and ``||C||_F^2`` of lazy fields
computed without holding the input.
"""

from __future__ import annotations

import inspect
import tracemalloc
from dataclasses import fields

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xsvd
import xsvd.climate.fields as fields_module
from xsvd.core import backend as core_backend
from xsvd.core.options import CompressedOptions

T, NL, NR, K = 80, 60, 45, 3
LAND = (7, 8)  # left features NaN at every sample


def _matrices(seed=0):
    """Two coupled fields (samples x features) with means, and land in the left one."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((T, 4)) * np.array([3.0, 2.0, 1.0, 0.5])
    left = common @ rng.standard_normal((4, NL)) + rng.standard_normal((T, NL)) + 5.0
    right = common @ rng.standard_normal((4, NR)) + rng.standard_normal((T, NR)) - 2.0
    left[:, list(LAND)] = np.nan
    return left, right


def _labeled(a, name: str, put=np.asarray):
    n = a.shape[1]
    coords = {"time": np.arange(T), name: np.arange(n) * 1.5}
    return xr.DataArray(put(a), dims=("time", name), coords=coords)


def _weights(n: int, name: str):
    w = np.linspace(0.5, 1.5, n)
    return xr.DataArray(w, dims=(name,), coords={name: np.arange(n) * 1.5})


def _memory(backend):
    """Whether an array lives where ``backend`` puts the data: host NumPy for NumPy and Dask
    (results are computed), the device otherwise."""
    if backend.name == "strict":
        import array_api_strict as xs

        return lambda x: core_backend.namespace(x) is xs and x.device == xs.Device("device1")
    if "cupy" in backend.name:
        return core_backend.is_cupy
    return lambda x: isinstance(x, np.ndarray)


def _host(x):
    return core_backend.to_numpy(x)


def _same(got: xr.DataArray, want: xr.DataArray, where, tol=1e-10):
    assert where(got.data), (got.name, type(got.data))
    assert got.dims == want.dims
    back = _host(got.data)
    scale = float(np.nanmax(np.abs(want.values))) or 1.0
    np.testing.assert_array_equal(np.isnan(back), np.isnan(want.values))
    np.testing.assert_allclose(back, want.values, rtol=0, atol=tol * scale, err_msg=got.name)


def _on_device(backend) -> bool:
    return backend.name == "strict" or backend.name == "cupy"


# ------------------------------------------------------------------ MCA


@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_mca_on_every_backend_equals_numpy(backend, method):
    left, right = _matrices()
    opts = dict(dim="time", method=method, weights_left=_weights(NL, "p"))
    if method == "compressed":
        opts.update(seed=0, n_power_iter=4)
    want = xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K, **opts)
    core_backend.TRANSFERS.reset()
    got = xsvd.mca(_labeled(left, "p", backend), _labeled(right, "q", backend), K, **opts)
    log = list(core_backend.TRANSFERS.log)
    where = _memory(backend)
    for name in ("left_patterns", "right_patterns", "left_scores", "right_scores", "S"):
        _same(getattr(got, name), getattr(want, name), where)
    _same(got.squared_covariance_fraction, want.squared_covariance_fraction, where)
    for mine, ref in zip(
        (*got.homogeneous_maps(), *got.heterogeneous_maps()),
        (*want.homogeneous_maps(), *want.heterogeneous_maps()),
        strict=True,
    ):
        _same(mine, ref, where)
    np.testing.assert_allclose(got.errors.S.values, want.errors.S.values, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got.total_squared_covariance, want.total_squared_covariance)
    if not _on_device(backend):
        assert log == []  # NumPy and Dask of NumPy: nothing moves
        return
    # only small matrices cross: features x (k + oversamples) at most, never a field
    small = max(NL, NR) * (K + 10)
    assert 0 < core_backend.TRANSFERS.largest("to_host") <= small < T * NR
    assert max(size for _, size in log) <= small
    passes = got.settings.get("passes", 0)
    # the statistics (two per field: the largest magnitudes' exponents, then the moments),
    # two products per pass, the total, S
    assert sum(1 for d, _ in log if d == "to_host") <= 4 + 2 * passes + 2


def test_mca_results_stay_on_the_device_when_derived():
    pytest.importorskip("array_api_strict")
    from conftest import Backend

    strict = Backend("strict")
    left, right = _matrices(1)
    got = xsvd.mca(_labeled(left, "p", strict), _labeled(right, "q", strict), K, seed=0)
    where = _memory(strict)
    assert where(got.explained_variance_ratio.data) and where(got.U.data)
    back = got.as_numpy()
    assert isinstance(back.S.data, np.ndarray) and isinstance(back.left_patterns.data, np.ndarray)
    with pytest.raises(ValueError, match="different memories"):
        xsvd.mca(_labeled(left, "p", strict), _labeled(right, "q"), K)


# --------------------------------------------------------------- extended


@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_extended_eof_on_every_backend_equals_numpy(backend, method):
    left, _ = _matrices(2)
    opts = dict(embedding=3, tau=2, dim="time", method=method, weights=_weights(NL, "p"))
    if method == "compressed":
        opts.update(seed=0, n_power_iter=4)
    want = xsvd.extended_eof(_labeled(left, "p"), K, **opts)
    core_backend.TRANSFERS.reset()
    got = xsvd.extended_eof(_labeled(left, "p", backend), K, **opts)
    log = list(core_backend.TRANSFERS.log)
    where = _memory(backend)
    for name in ("U", "S", "V", "scores", "explained_variance", "explained_variance_ratio"):
        _same(getattr(got, name), getattr(want, name), where)
    np.testing.assert_allclose(float(got.total_variance), float(want.total_variance), rtol=1e-12)
    if not _on_device(backend):
        assert log == []
        return
    # features x lags x (k + oversamples), samples x lags at most: never the field
    L, n = 3, NL - len(LAND)
    small = max(n * L * (K + 10), T * L)
    assert core_backend.TRANSFERS.largest("to_host") <= small
    assert max(size for _, size in log) <= small < T * NL * L


# ----------------------------------------------------- the core's checks


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_infinite_values_are_the_core_error_naming_the_feature(lazy):
    left, right = _matrices(3)
    bad = left.copy()
    bad[5, 20] = np.inf
    put = (lambda a: da.from_array(a, chunks=(20, -1))) if lazy else np.asarray
    good_l, good_r = _labeled(left, "p", put), _labeled(right, "q", put)
    where = "p=30.0"  # feature 20 of the left field
    with pytest.raises(xsvd.InfiniteValueError, match=rf"\({where}\) of the left field"):
        xsvd.mca(_labeled(bad, "p", put), good_r, K, seed=0)
    with pytest.raises(xsvd.InfiniteValueError, match=rf"\({where}\) of the right field"):
        xsvd.mca(good_r, _labeled(bad, "p", put), K, seed=0)
    for method in ("compressed", "exact"):
        with pytest.raises(xsvd.InfiniteValueError, match=rf"\({where}\) of the data"):
            xsvd.extended_eof(_labeled(-bad, "p", put), K, embedding=2, method=method)
    xsvd.mca(good_l, good_r, K, seed=0)  # finite: fine


def test_partial_nan_is_the_core_check_naming_the_feature():
    left, right = _matrices(4)
    left[3, 11] = np.nan
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K)
    # the core's message (xsvd.core.missing.check_nan_counts), naming feature 11 and the field
    assert str(err.value).startswith(
        "The data has NaN at some but not all samples of 1 feature(s): (p=16.5) of the left "
        "field. Features that are NaN at every sample (e.g. land in an ocean field) are handled"
    )
    assert "pass `missing='mean'`" in str(err.value)  # the analyses take it now
    with pytest.raises(xsvd.MissingValueError, match=r"\(p=16.5\) of the data"):
        xsvd.extended_eof(_labeled(left, "p"), K, embedding=2)


# ------------------------------------------------------------- options


@pytest.mark.parametrize("function", [xsvd.mca, xsvd.extended_eof])
def test_compressed_options_are_declared_once_with_the_same_defaults(function):
    params = inspect.signature(function).parameters
    for f in fields(CompressedOptions):
        assert params[f.name].default == f.default, f.name  # seed: None, as xsvd.compressed
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY


def _call(function, **kw):
    left, right = _matrices(5)
    if function is xsvd.mca:
        return xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), 2, **kw)
    return xsvd.extended_eof(_labeled(left, "p"), 2, embedding=2, **kw)


@pytest.mark.parametrize("function", [xsvd.mca, xsvd.extended_eof])
def test_options_that_do_not_apply_are_refused(function):
    name = function.__name__
    with pytest.raises(ValueError, match=rf"{name}\(\) always takes .* krylov=False"):
        _call(function, krylov=False)
    with pytest.raises(ValueError, match=rf"{name}\(\) computes its products .* dtype="):
        _call(function, dtype="float32")
    with pytest.raises(ValueError, match="n_power_iter, seed only apply to the compressed"):
        _call(function, method="exact", n_power_iter=2, seed=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_power_iters'"):
        _call(function, n_power_iters=2)
    _call(function, krylov=True, seed=0)  # what the solver does anyway


@pytest.mark.parametrize("function", [xsvd.mca, xsvd.extended_eof])
def test_seed_none_draws_afresh_and_a_seed_repeats(function):
    # one pass: the Ritz values of the random start block, which depend on the draw
    a, b = (_call(function, n_power_iter=0).singular_values.values for _ in range(2))
    assert not np.array_equal(a, b)
    c, d = (_call(function, n_power_iter=0, seed=7).singular_values.values for _ in range(2))
    np.testing.assert_array_equal(c, d)


# ---------------------------------------------- out of core: ||C||_F^2


def _traced_total(monkeypatch, n: int, a: int, b: int, rows: int):
    """Two lazy fields (n x a, n x b; a * b > n**2: the Gram route) in stripes of ``rows``
    samples, MCA's ``||C||_F^2`` computed one task at a time in blocks of 200 features, and
    its peak memory traced (NumPy reports its arrays to tracemalloc)."""
    rng = np.random.default_rng(6)
    left = rng.standard_normal((n, a)) + 3.0
    right = rng.standard_normal((n, b)) + left[:, :1] - 1.0
    lazy = [
        xr.DataArray(da.from_array(x, chunks=(rows, -1)), dims=("time", d))
        for x, d in ((left, "p"), (right, "q"))
    ]
    res = xsvd.mca(*lazy, K, seed=0, n_power_iter=1)
    monkeypatch.setattr(fields_module, "LAZY_BLOCK_VALUES", n * 200)
    tracemalloc.start()
    try:
        with dask.config.set(scheduler="synchronous"):
            total = res.total_squared_covariance
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return left, right, total, peak


def test_squared_covariance_fraction_of_lazy_fields_never_holds_a_field(monkeypatch):
    """Memory measured by tracemalloc (NumPy reports its arrays to it), one task at a time
    (no thread timing): a Gram matrix ``b @ b.T`` of stripes of samples holds every
    stripe until the last product; blocks of features read one at a time hold one."""
    n = 200
    left, right, total, peak = _traced_total(monkeypatch, n, 8000, 3000, rows=10)
    Bl = left - left.mean(axis=0)
    Br = right - right.mean(axis=0)
    want = ((Bl @ Bl.T) * (Br @ Br.T)).sum() / (n - 1) ** 2  # ||Bl^T Br||_F^2
    np.testing.assert_allclose(total, want, rtol=1e-12)
    # two n x n matrices, a block and a stripe, never a field (12.8 MB)
    assert peak < left.nbytes / 3, peak


@pytest.mark.parametrize("chunks", [(20, -1), (-1, 10)], ids=["samples", "features"])
def test_lazy_blocks_never_write_into_the_data(chunks):
    left, right = _matrices(7)
    before = [left.copy(), right.copy()]
    lazy = [
        _labeled(da.from_array(a, chunks=chunks), n)
        for a, n in zip((left, right), "pq", strict=True)
    ]
    res = xsvd.mca(*lazy, K, seed=0)
    ref = xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K, seed=0)
    np.testing.assert_allclose(
        res.squared_covariance_fraction, ref.squared_covariance_fraction, rtol=1e-12
    )
    for a, b in zip((left, right), before, strict=True):
        np.testing.assert_array_equal(a, b)


def test_squared_covariance_fraction_holds_one_gram_matrix(monkeypatch):
    """Issue 29: the fractions took MCA on lazy input past the plain EOF + 0.3 GB. The Gram
    route holds one n x n matrix, one block of features and panels of rows (it held a
    second n x n product per block, 2.4 n**2 floats here): traced, one task at a time."""
    n = 1000
    left, right, total, peak = _traced_total(monkeypatch, n, 1500, 1200, rows=50)
    Bl, Br = left - left.mean(axis=0), right - right.mean(axis=0)
    np.testing.assert_allclose(total, np.sum((Bl.T @ Br) ** 2) / (n - 1) ** 2, rtol=1e-12)
    assert peak < 1.9 * n * n * 8, peak / (n * n * 8)
