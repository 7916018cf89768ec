"""``missing="mean"``, ``negative_missing`` and ``device=`` in xsvd.mca and xsvd.extended_eof
(issue 29: the options behave as in the main svd, in every analysis, tested on each).

The acceptance test: with fields that hold NaN at some samples of some features and a
land feature NaN at every sample, ``analysis(gappy, missing="mean") == analysis(filled)``
with ``filled = gappy.fillna(gappy.mean(dim))`` (land stays NaN), on NumPy, Dask (stripes
of samples and of features) and array-api-strict's second device, compressed and exact:
``S``, patterns, scores, the squared covariance fractions and total norm (MCA), the
correlation maps (MCA), ``total_variance`` and its ratios (extended EOF). The missing
values are replaced inside the read kernels, never in a filled copy of the data.
``standardize=True`` divides by the standard deviation of the present values, as
:func:`xsvd.svd` (``labeled.preprocess.standardized_weights``) does.
"""

from __future__ import annotations

import inspect
import tracemalloc
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend as core_backend
from xsvd.labeled import preprocess

T, NL, NR, K = 40, 12, 9, 3
LAND = 4  # a left feature NaN at every sample
GAPS_LEFT = [(3, 0), (4, 0), (10, 2), (17, 5), (30, 5), (31, 5), (39, 11)]
GAPS_RIGHT = [(0, 1), (22, 6), (23, 6)]


def _matrices(seed=3, t=T, nl=NL, nr=NR):
    """Two coupled fields (samples x features) with means, gaps and land in the left."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((t, 3)) * np.array([3.0, 1.5, 0.7])
    left = common @ rng.standard_normal((3, nl)) + rng.standard_normal((t, nl)) + 4.0
    right = common @ rng.standard_normal((3, nr)) + rng.standard_normal((t, nr)) - 2.0
    left[:, LAND] = np.nan
    for i, j in GAPS_LEFT:
        left[i % t, j % nl] = np.nan
    for i, j in GAPS_RIGHT:
        right[i % t, j % nr] = np.nan
    return left, right


def _labeled(a, name: str, put=np.asarray):
    m, n = a.shape
    coords = {"time": np.arange(m), name: np.arange(n) * 2.0}
    return xr.DataArray(put(a), dims=("time", name), coords=coords)


def _filled(da: xr.DataArray) -> xr.DataArray:
    with _quiet():  # the land column's mean is NaN: it stays NaN
        return da.fillna(da.mean("time"))


@contextmanager
def _quiet():
    """Silence NumPy's 'mean of empty slice' for the land column."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _weights(n: int, name: str):
    return xr.DataArray(np.linspace(0.5, 1.5, n), dims=(name,), coords={name: np.arange(n) * 2.0})


def _memory(backend):
    if backend.name == "strict":
        import array_api_strict as xs

        return lambda x: core_backend.namespace(x) is xs and x.device == xs.Device("device1")
    if "cupy" in backend.name:
        return core_backend.is_cupy
    return lambda x: isinstance(x, np.ndarray)


def _same(got: xr.DataArray, want: xr.DataArray, where=None, tol=1e-9):
    if where is not None:
        assert where(got.data), (got.name, type(got.data))
    assert got.dims == want.dims
    back = core_backend.to_numpy(got.data)
    want = np.asarray(want.values)
    scale = float(np.nanmax(np.abs(want))) or 1.0
    np.testing.assert_array_equal(np.isnan(back), np.isnan(want), err_msg=str(got.name))
    np.testing.assert_allclose(back, want, rtol=0, atol=tol * scale, err_msg=str(got.name))


def _compare_mca(got, want, where=None):
    for name in ("left_patterns", "right_patterns", "left_scores", "right_scores", "S"):
        _same(getattr(got, name), getattr(want, name), where)
    _same(got.squared_covariance_fraction, want.squared_covariance_fraction, where)
    np.testing.assert_allclose(
        got.total_squared_covariance, want.total_squared_covariance, rtol=1e-9
    )
    for mine, ref in zip(
        (*got.homogeneous_maps(), *got.heterogeneous_maps()),
        (*want.homogeneous_maps(), *want.heterogeneous_maps()),
        strict=True,
    ):
        _same(mine, ref, where)


def _present_std_weights(a: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """The weights standardize=True makes with missing='mean': the main svd's
    (standardized_weights, over the present values), checked against nanstd here."""
    with _quiet():
        std = np.nanstd(a, axis=0)
        mine = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    main = preprocess.standardized_weights(a, None, missing="mean")
    np.testing.assert_allclose(main[np.isfinite(std)], mine[np.isfinite(std)], rtol=1e-12)
    out = np.where(np.isfinite(std), mine, 0.0)
    return out if w is None else out * w


# ------------------------------------------------------------------ MCA


@pytest.mark.parametrize("method", ["compressed", "exact"])
@pytest.mark.parametrize("weighted", ["plain", "weights+standardize"])
def test_mca_missing_mean_equals_the_filled_fields(backend, method, weighted):
    left, right = _matrices()
    opts = {"method": method, "dim": "time"}
    if method == "compressed":
        opts["seed"] = 0
    mine, ref = dict(opts), dict(opts)
    if weighted != "plain":
        wl, wr = _weights(NL, "p"), _weights(NR, "q")
        mine.update(weights_left=wl, weights_right=wr, standardize=True)
        # the filled fields with the weights standardize makes (the present values' std)
        ref.update(
            weights_left=wl * _present_std_weights(left, None),
            weights_right=wr * _present_std_weights(right, None),
        )
    gl, gr = _labeled(left, "p", backend), _labeled(right, "q", backend)
    got = xsvd.mca(gl, gr, K, missing="mean", **mine)
    want = xsvd.mca(_filled(_labeled(left, "p")), _filled(_labeled(right, "q")), K, **ref)
    assert np.isnan(want.left_patterns.values[:, LAND]).all()  # land stays out
    _compare_mca(got, want, _memory(backend))
    assert got.settings["missing"] == "mean"
    assert want.settings["missing"] == "error"


def test_mca_total_norm_of_fields_wider_than_their_samples(backend):
    """||C||_F from the Gram matrices of blocks of features (C larger than n**2): the
    blocks are the filled fields'."""
    t, nl, nr = 12, 20, 15
    left, right = _matrices(seed=5, t=t, nl=nl, nr=nr)
    gl, gr = _labeled(left, "p", backend), _labeled(right, "q", backend)
    got = xsvd.mca(gl, gr, 2, missing="mean", seed=0)
    want = xsvd.mca(_filled(_labeled(left, "p")), _filled(_labeled(right, "q")), 2, seed=0)
    np.testing.assert_allclose(
        got.total_squared_covariance, want.total_squared_covariance, rtol=1e-9
    )
    _same(got.squared_covariance_fraction, want.squared_covariance_fraction, _memory(backend))


def test_filled_sub_blocks_share_one_buffer_per_read(backend, monkeypatch):
    """Sub-blocks of 64 samples (the last shorter), each filled into the one buffer of the
    read (NumPy) while the one before is let go: the results are still the filled data's,
    in both memory orders of the data (a field made by an index along the features is in
    Fortran order)."""
    import xsvd.climate.fields as fields_module

    monkeypatch.setattr(fields_module, "ROW_BLOCK_VALUES", 1)
    left, right = _matrices(seed=4, t=300)
    left = np.asfortranarray(left)
    gl, gr = _labeled(left, "p", backend), _labeled(right, "q", backend)
    got = xsvd.mca(gl, gr, K, missing="mean", seed=0)
    want = xsvd.mca(_filled(_labeled(left, "p")), _filled(_labeled(right, "q")), K, seed=0)
    _compare_mca(got, want, _memory(backend))
    got = xsvd.extended_eof(gl, K, embedding=3, missing="mean", method="exact")
    want = xsvd.extended_eof(_filled(_labeled(left, "p")), K, embedding=3, method="exact")
    for name in ("S", "patterns"):
        _same(getattr(got, name), getattr(want, name), _memory(backend))


def test_mca_without_gaps_is_unchanged_by_missing_mean(backend):
    """Nothing partly missing: nothing is replaced, the results are the same numbers."""
    left, right = _matrices()
    left = left[:, ~np.isnan(left).any(axis=0)]
    right = right[:, ~np.isnan(right).any(axis=0)]
    gl, gr = _labeled(left, "p", backend), _labeled(right, "q", backend)
    a = xsvd.mca(gl, gr, K, seed=0)
    b = xsvd.mca(gl, gr, K, seed=0, missing="mean")
    for name in ("S", "left_patterns", "right_scores"):
        np.testing.assert_array_equal(
            core_backend.to_numpy(getattr(a, name).data),
            core_backend.to_numpy(getattr(b, name).data),
        )


def test_mca_missing_error_still_refuses_gaps_and_advises_mean():
    left, right = _matrices()
    with pytest.raises(xsvd.MissingValueError, match="of the left field") as err:
        xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K)
    assert "missing='mean'" in str(err.value)
    with pytest.raises(ValueError, match="missing='mean'"):
        xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K, negative_missing=True)
    with pytest.raises(ValueError, match="missing must be one of"):
        xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K, missing="zero")


def test_mca_negative_codes_of_integer_fields_are_missing():
    """Integer data with missing='mean': negative codes stand for the feature's mean (as the
    main svd's rule); float data the same with negative_missing=True."""
    rng = np.random.default_rng(7)
    left = rng.integers(0, 3, size=(T, NL)).astype(np.int64)
    right = rng.integers(0, 3, size=(T, NR)).astype(np.int64) + left[:, :1]
    left[[2, 9, 20], 3] = -1
    right[[5], 0] = -9
    as_nan = [np.where(x < 0, np.nan, x.astype(float)) for x in (left, right)]
    filled = (_filled(_labeled(x, n)) for x, n in zip(as_nan, "pq", strict=True))
    want = xsvd.mca(*filled, K, seed=0)
    got = xsvd.mca(_labeled(left, "p"), _labeled(right, "q"), K, missing="mean", seed=0)
    _compare_mca(got, want)
    floats = [x.astype(float) for x in (left, right)]
    got = xsvd.mca(
        *(_labeled(x, n) for x, n in zip(floats, "pq", strict=True)),
        K,
        missing="mean",
        negative_missing=True,
        seed=0,
    )
    _compare_mca(got, want)


# ------------------------------------------------------------------ extended EOF


@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_extended_eof_missing_mean_equals_the_filled_field(backend, method):
    """The lagged copies of the filled field are the lags of the filled field."""
    left, _ = _matrices()
    opts = {"embedding": 3, "tau": 2, "method": method, "weights": _weights(NL, "p")}
    if method == "compressed":
        opts["seed"] = 0
    got = xsvd.extended_eof(_labeled(left, "p", backend), K, missing="mean", **opts)
    want = xsvd.extended_eof(_filled(_labeled(left, "p")), K, **opts)
    where = _memory(backend)
    for name in ("S", "U", "patterns", "explained_variance_ratio"):
        _same(getattr(got, name), getattr(want, name), where)
    np.testing.assert_allclose(float(got.total_variance), float(want.total_variance), rtol=1e-12)
    assert np.isnan(want.patterns.values[:, :, LAND]).all()
    assert got.settings["missing"] == "mean"


def test_extended_eof_without_gaps_is_unchanged_by_missing_mean(backend):
    left, _ = _matrices()
    x = _labeled(left[:, ~np.isnan(left).any(axis=0)], "p", backend)
    a = xsvd.extended_eof(x, K, embedding=3, seed=0)
    b = xsvd.extended_eof(x, K, embedding=3, seed=0, missing="mean")
    for name in ("S", "patterns"):
        np.testing.assert_array_equal(
            core_backend.to_numpy(getattr(a, name).data),
            core_backend.to_numpy(getattr(b, name).data),
        )


def test_extended_eof_integer_codes_and_error_advice():
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, size=(T, NL)).astype(np.int32)
    x[[1, 2, 30], 6] = -1
    want = xsvd.extended_eof(
        _filled(_labeled(np.where(x < 0, np.nan, x.astype(float)), "p")), K, embedding=2, seed=0
    )
    got = xsvd.extended_eof(_labeled(x, "p"), K, embedding=2, seed=0, missing="mean")
    for name in ("S", "patterns"):
        _same(getattr(got, name), getattr(want, name))
    left, _ = _matrices()
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.extended_eof(_labeled(left, "p"), K, embedding=2)
    assert "missing='mean'" in str(err.value)


def test_uncentered_analyses_fill_at_the_means_too(backend):
    """center=False: the gaps still stand for their features' means (not 0), as the filled
    fields' values; the uncentered warning is the filled fields' too."""
    left, right = _matrices()
    gl, gr = _labeled(left, "p", backend), _labeled(right, "q", backend)
    fl, fr = _filled(_labeled(left, "p")), _filled(_labeled(right, "q"))
    with pytest.warns(UserWarning, match="center=False") as said:
        got = xsvd.mca(gl, gr, K, center=False, missing="mean", seed=0)
    with pytest.warns(UserWarning, match="center=False") as ref:
        want = xsvd.mca(fl, fr, K, center=False, seed=0)
    assert str(said[0].message) == str(ref[0].message)
    _compare_mca(got, want, _memory(backend))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = xsvd.extended_eof(gl, K, embedding=3, center=False, missing="mean", seed=0)
        want = xsvd.extended_eof(fl, K, embedding=3, center=False, seed=0)
    for name in ("S", "patterns", "explained_variance_ratio"):
        _same(getattr(got, name), getattr(want, name), _memory(backend))


# ------------------------------------------------------------------ device= and signatures


@pytest.mark.parametrize("analysis", ["mca", "extended_eof"])
def test_device_cpu_brings_device_input_to_the_host(analysis):
    """device='cpu' on array-api-strict's device1 input: NumPy results, equal to NumPy's."""
    pytest.importorskip("array_api_strict")
    from conftest import on_strict_device

    left, right = _matrices()
    if analysis == "mca":

        def run(put, **kw):
            l_, r_ = _labeled(left, "p", put), _labeled(right, "q", put)
            return xsvd.mca(l_, r_, K, seed=0, missing="mean", **kw)

        names = ("S", "left_patterns", "right_scores")
    else:

        def run(put, **kw):
            return xsvd.extended_eof(
                _labeled(left, "p", put), K, embedding=2, seed=0, missing="mean", **kw
            )

        names = ("S", "patterns", "U")
    got = run(on_strict_device, device="cpu")
    want = run(np.asarray)
    for name in names:
        part = getattr(got, name)
        assert isinstance(part.data, np.ndarray), (name, type(part.data))
        _same(part, getattr(want, name))


@pytest.mark.parametrize("analysis", ["mca", "extended_eof"])
def test_device_gpu_without_cupy_says_so(analysis):
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    left, right = _matrices()
    gl, gr = _labeled(left, "p"), _labeled(right, "q")
    run = {
        "mca": lambda: xsvd.mca(gl, gr, K, device="gpu", missing="mean"),
        "extended_eof": lambda: xsvd.extended_eof(gl, K, embedding=2, device="gpu"),
    }[analysis]
    with pytest.raises(ImportError, match="xsvd\\[gpu\\]"):
        run()
    with pytest.raises(ValueError, match="device must be"):
        xsvd.mca(gl, gr, K, device="tpu", missing="mean")


@pytest.mark.parametrize("fn", [xsvd.mca, xsvd.extended_eof])
def test_signature_and_help_list_missing_and_device(fn):
    params = inspect.signature(fn).parameters
    for name, default in (("missing", "error"), ("negative_missing", None), ("device", None)):
        assert params[name].default == default
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert f"{name} :" in fn.__doc__


# ------------------------------------------------------------------ memory


def _traced(run, *fields):
    """Peak memory (tracemalloc: NumPy reports its arrays to it) of ``run`` on lazy copies of
    ``fields`` in stripes of 10 samples, one task at a time (no thread timing)."""
    import dask
    import dask.array as da

    lazy = [
        xr.DataArray(da.from_array(x, chunks=(10, -1)), dims=("time", d))
        for x, d in zip(fields, "pq", strict=False)
    ]
    tracemalloc.start()
    try:
        with dask.config.set(scheduler="synchronous"):
            res = run(*lazy)
        return res, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("analysis", ["mca", "extended_eof"])
def test_lazy_gappy_fields_are_filled_a_stripe_at_a_time(analysis):
    """Lazy fields with gaps (3.2 MB on the left) take no more memory with missing='mean'
    than the same fields filled beforehand: the gaps are replaced a sub-block at a time,
    never in a filled copy; and the data are left as they were (the NaN still there)."""
    left, right = _matrices(seed=9, t=100, nl=4000, nr=100)
    before = left.copy()
    filled = [_filled(_labeled(x, d)).values for x, d in ((left, "p"), (right, "q"))]
    if analysis == "mca":

        def run(*fields, **kw):
            return xsvd.mca(*fields, 2, seed=0, n_power_iter=1, **kw)

    else:

        def run(field, *_, **kw):
            return xsvd.extended_eof(field, 2, embedding=2, seed=0, **kw)

    _traced(run, *filled)  # a first call takes more either way (imports, caches)
    want, baseline = _traced(run, *filled)
    got, peak = _traced(lambda *f: run(*f, missing="mean"), left, right)
    np.testing.assert_array_equal(left, before)  # no write into the data
    np.testing.assert_allclose(got.S.values, want.S.values, rtol=1e-8)
    assert peak < baseline + left.nbytes / 4, (peak, baseline)  # a filled copy: + 3.2 MB
