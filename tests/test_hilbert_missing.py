"""hilbert_eof reads its data as the main svd does (issue 29): ``missing="mean"``
(and ``negative_missing``) and ``device=``.

With ``missing="mean"`` a gap (NaN at some samples of a feature) stands for the
feature's mean over the samples where it is present, before the transform: the
result is that of ``da.fillna(da.mean(dim))``, on NumPy, Dask in stripes of
samples and of features, and array-api-strict's second device, for both solvers,
with weights and ``standardize=True`` (the standard deviation of the present
values, the main svd's). The means are put in as each block is read: Dask data are
read as often as the filled field's.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray, on_strict_device, strict_available

import xsvd

K = 3


def _gappy(m: int = 96, n: int = 24, seed: int = 0) -> np.ndarray:
    """Two travelling waves, noise and a mean; scattered NaN (about 5 %) at some samples
    of some features, and one land feature (NaN at every sample)."""
    rng = np.random.default_rng(seed)
    t, x = np.arange(m)[:, None], np.linspace(0, 2 * np.pi, n)[None, :]
    a = (
        3.0 * np.cos(2 * np.pi * t / 17 - x)
        + 2.0 * np.cos(2 * np.pi * t / 7 - 2 * x + 1)
        + 0.3 * rng.standard_normal((m, n))
        + 10.0
    )
    a[rng.random((m, n)) < 0.05] = np.nan
    a[:, 3] = np.nan
    return a


def _labeled(data, n: int) -> xr.DataArray:
    return xr.DataArray(data, dims=("time", "x"), coords={"x": np.arange(n) * 0.5}, name="f")


def _parts(backend, res) -> dict:
    names = ("U", "S", "V", "total_variance", "explained_variance_ratio", "mean", "scale")
    parts = [res._parts[p].data for p in names if p in res._parts]
    return dict(zip(names, backend.host(*parts), strict=False))


@pytest.mark.parametrize("method", ["exact", "compressed"])
@pytest.mark.parametrize("standardize", [False, True])
def test_missing_mean_is_the_filled_field(backend, method, standardize):
    """hilbert_eof(gaps, missing='mean') == hilbert_eof(gaps.fillna(gaps.mean(dim))):
    S, U, V (phases fixed by xsvd's rule), the variance and the undone mean and scale."""
    a = _gappy()
    m, n = a.shape
    gaps = _labeled(a, n)
    filled = gaps.fillna(gaps.mean("time"))  # land stays NaN: its mean is NaN
    w = xr.DataArray(np.linspace(0.5, 1.5, n), dims="x", coords={"x": gaps.x})
    # standardize=True: over the standard deviation of the present values (the main svd's)
    w_filled = (w / gaps.std("time")).fillna(0.0) if standardize else w
    kw = dict(method=method, padding="exp", **({"seed": 0} if method == "compressed" else {}))
    got = xsvd.hilbert_eof(
        _labeled(backend(a), n), K, weights=w, standardize=standardize, missing="mean", **kw
    )
    want = xsvd.hilbert_eof(_labeled(backend(filled.values), n), K, weights=w_filled, **kw)
    assert got.settings["missing"] == "mean" and want.settings["missing"] == "error"
    got, want = _parts(backend, got), _parts(backend, want)
    assert set(got) == set(want)
    for name in want:
        scale = np.nanmax(np.abs(want[name]))
        np.testing.assert_allclose(got[name], want[name], rtol=1e-8, atol=1e-10 * scale)
    assert np.isnan(got["V"][:, 3]).all() and np.isfinite(np.delete(got["V"], 3, axis=1)).all()


def test_missing_mean_without_gaps_changes_nothing(backend):
    """A complete field (land only) gives the same numbers with missing='mean' as without."""
    a = _gappy()
    a = np.where(np.isnan(a) & ~np.isnan(a).all(axis=0), 10.0, a)
    da = _labeled(backend(a), a.shape[1])
    got = xsvd.hilbert_eof(da, K, method="compressed", seed=0, missing="mean")
    want = xsvd.hilbert_eof(da, K, method="compressed", seed=0)
    np.testing.assert_array_equal(*backend.host(got.S.data, want.S.data))
    np.testing.assert_array_equal(*backend.host(got.V.data, want.V.data))


def test_missing_error_keeps_the_error_and_offers_mean(backend):
    """missing='error' (default): gaps are still an error, naming the features and the
    reason, and the advice now offers missing='mean'."""
    a = _gappy()
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.hilbert_eof(_labeled(backend(a), a.shape[1]), K, padding="none")
    message = str(err.value)
    assert "the FFT would spread each gap over the whole series" in message
    assert "`missing='mean'`" in message and "interpolate_na" in message


def test_negative_missing_integer_codes_are_filled():
    """Integer data with missing='mean': negative codes are missing (negative_missing
    default), and the result is that of the float field with NaN there, filled; with
    negative_missing=False they are values."""
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 9, size=(64, 12))
    codes[rng.random(codes.shape) < 0.05] = -1
    as_nan = _labeled(np.where(codes < 0, np.nan, codes.astype(np.float64)), 12)
    filled = as_nan.fillna(as_nan.mean("time"))
    got = xsvd.hilbert_eof(_labeled(codes, 12), K, method="exact", missing="mean")
    want = xsvd.hilbert_eof(filled, K, method="exact")
    np.testing.assert_allclose(got.S, want.S, rtol=1e-10)
    np.testing.assert_allclose(got.V, want.V, rtol=1e-8, atol=1e-12)
    as_values = xsvd.hilbert_eof(
        _labeled(codes, 12), K, method="exact", missing="mean", negative_missing=False
    )
    plain = xsvd.hilbert_eof(_labeled(codes.astype(np.float64), 12), K, method="exact")
    np.testing.assert_allclose(as_values.S, plain.S, rtol=1e-12)


@pytest.mark.parametrize("chunks", [(24, -1), (-1, 8)])
def test_missing_mean_reads_dask_data_as_often_as_the_filled_field(chunks):
    """The means are put in as each chunk is read: a pass reads every chunk once, as for
    the filled field (the statistics' read fills its whole series itself)."""
    import dask.array as dsa

    a = _gappy()
    filled = _labeled(a, a.shape[1])
    filled = filled.fillna(filled.mean("time")).values
    reads = []
    for data, options in ((a, {"missing": "mean"}), (filled, {})):
        counted = CountingArray(data)
        da = _labeled(dsa.from_array(counted, chunks=chunks), a.shape[1])
        res = xsvd.hilbert_eof(da, K, method="compressed", seed=0, n_power_iter=2, **options)
        reads.append(sorted(counted.reads.values()))
        assert res.settings["passes"] == 3
    assert reads[0] == reads[1]


@pytest.mark.skipif(not strict_available(), reason="needs array-api-strict")
def test_device_cpu_moves_device_data_to_the_host():
    """device='cpu' on array-api-strict device1 input: NumPy results, those of the NumPy run."""
    a = _gappy()
    n = a.shape[1]
    host = xsvd.hilbert_eof(_labeled(a, n), K, method="compressed", seed=0, missing="mean")
    res = xsvd.hilbert_eof(
        _labeled(on_strict_device(a), n),
        K,
        method="compressed",
        seed=0,
        missing="mean",
        device="cpu",
    )
    for part in (res.U, res.S, res.V, res._parts["mean"]):
        assert isinstance(part.data, np.ndarray)
    np.testing.assert_allclose(res.S, host.S, rtol=1e-12)
    np.testing.assert_allclose(res.V, host.V, rtol=1e-10, atol=1e-13)


def test_device_gpu_without_cupy_is_a_clear_error():
    """device='gpu' without CuPy (or without a GPU): the core's error, naming what is needed."""
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match="needs CuPy"):
        xsvd.hilbert_eof(_labeled(_gappy(), 24), K, device="gpu")


def test_signature_and_help_list_the_reading_options():
    """inspect.signature (so help()) lists missing, negative_missing and device, keyword-only,
    with the main svd's defaults; the docstring says what they do."""
    params = inspect.signature(xsvd.hilbert_eof).parameters
    assert params["missing"].default == "error"
    assert params["negative_missing"].default is None
    assert params["device"].default is None
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in ("missing", "device"))
    doc = xsvd.hilbert_eof.__doc__
    assert "missing, negative_missing, device" in doc and 'missing="mean"' in doc
    with pytest.raises(TypeError, match="unexpected keyword argument 'missin'"):
        xsvd.hilbert_eof(_labeled(_gappy(), 24), K, missin="mean")
    with pytest.raises(ValueError, match="missing must be one of"):
        xsvd.hilbert_eof(_labeled(_gappy(), 24), K, missing="zero")


@pytest.mark.parametrize("layout", ["numpy", "dask-samples", "dask-features"])
def test_blocks_without_gaps_are_read_as_they_are(layout, monkeypatch):
    """The products fill only blocks that hold a feature with gaps: with the gaps in the
    first features, the other blocks (NumPy) and chunks (Dask) are never looked at for
    missing values."""
    import dask.array as dsa

    from xsvd.climate import analytic, analytic_field

    a = _gappy(seed=3)
    a[:, 8:] = np.where(np.isnan(a[:, 8:]), 10.0, a[:, 8:])  # gaps in features 0 to 7 only
    monkeypatch.setattr(analytic_field, "BLOCK_VALUES", a.shape[0] * 8)  # blocks of 8
    filled = []

    def counting(xp, x, *args, **kwargs):
        filled.append(x.shape[1])
        return fill_missing(xp, x, *args, **kwargs)

    fill_missing = analytic.fill_missing
    monkeypatch.setattr(analytic, "fill_missing", counting)
    data = {
        "numpy": a,
        "dask-samples": dsa.from_array(a, chunks=(24, 8)),
        "dask-features": dsa.from_array(a, chunks=(-1, 8)),
    }[layout]
    got = xsvd.hilbert_eof(
        _labeled(data, 24), K, method="compressed", seed=0, n_power_iter=1, missing="mean"
    )
    gaps = _labeled(a, 24)
    want = xsvd.hilbert_eof(
        gaps.fillna(gaps.mean("time")), K, method="compressed", seed=0, n_power_iter=1
    )
    np.testing.assert_allclose(got.S, want.S, rtol=1e-10)
    # the features with gaps are in the first block (8 kept) or chunk (8 columns, 7 kept)
    assert filled and set(filled) <= {7, 8}
    assert got.settings["passes"] == 2  # 2 products each (the samples are the more)
    assert len(filled) == 4 * (4 if layout == "dask-samples" else 1)  # of 12, 48, 12 blocks
