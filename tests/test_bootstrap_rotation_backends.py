"""The bootstrap and the rotation on every backend (issue 29).

NumPy, Dask (stripes of samples, rechunked lazily, and of features) and
array-api-strict's second device (a GPU's stand-in: it refuses implicit
conversion to NumPy and mixing devices), through the conftest ``backend``
fixture: the same numbers as NumPy's, every part of the result where the
data were, and only small arrays moved between host and device (counted by
``xsvd.core.backend.TRANSFERS``).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend as core_backend

M, NF = 40, 90  # samples, features (more features than samples + 2: see the transfers)


def _values(seed=1, land=True, m=M, amplitudes=(6, 3)):
    """Two strong components (variance 36 and 9) on unit noise, a feature of land (NaN)."""
    rng = np.random.default_rng(seed)
    X = (
        amplitudes[0] * np.outer(rng.standard_normal(m), rng.standard_normal(NF))
        + amplitudes[1] * np.outer(rng.standard_normal(m), rng.standard_normal(NF))
        + rng.standard_normal((m, NF))
        + 10.0
    )
    if land:
        X[:, 5] = np.nan
    return X


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(a.shape[0])}, name="f")


def _where_expected(x, backend) -> bool:
    """The array is in the memory the data were in (the device for "strict")."""
    if backend.name == "strict":
        import array_api_strict as xs

        return core_backend.namespace(x) is xs and x.device == xs.Device("device1")
    return isinstance(x, np.ndarray)  # NumPy data, and Dask results (computed)


def _same(got: xr.DataArray, want: xr.DataArray, backend, atol=1e-10):
    assert _where_expected(got.data, backend), (got.name, type(got.data))
    assert got.dims == want.dims
    values = core_backend.to_numpy(got.data)
    np.testing.assert_array_equal(np.isnan(values), np.isnan(want.values))
    scale = max(float(np.nanmax(np.abs(want.values))), 1.0)
    np.testing.assert_allclose(values, want.values, rtol=1e-10, atol=atol * scale)


BOOT_PARTS = (
    "U",
    "S",
    "V",
    "explained_variance_ratio",
    "replicate_singular_values",
    "replicate_explained_variance_ratio",
    "congruence",
    "counts",
    "explained_variance_ratio_ci",
    "congruence_ci",
    "replicate_V",
)


def _reads(backend, numpy_reads: int, batches: int = 1) -> int:
    """The reads on ``backend`` where NumPy made ``numpy_reads`` (a pass and the patterns,
    one read each, per batch): Dask stripes of samples read twice per pass."""
    return 2 * numpy_reads - batches if backend.name == "dask-samples" else numpy_reads


@pytest.mark.parametrize("batch", [None, 3])
def test_bootstrap_on_every_backend_equals_numpy(backend, batch):
    X = _values()
    w = xr.DataArray(np.linspace(0.5, 1.5, NF), dims="x")
    kw = dict(dim="time", seed=3, weights=w, keep_patterns=True, batch=batch)
    want = xsvd.bootstrap(_labeled(X), 3, 7, **kw)
    core_backend.TRANSFERS.reset()
    got = xsvd.bootstrap(_labeled(backend(X)), 3, 7, **kw)
    if backend.name == "strict":  # the data never left the device: per-feature counts
        assert core_backend.TRANSFERS.count("to_host") > 0  # (NaN, inf, magnitude) at most
        assert core_backend.TRANSFERS.largest("to_host") <= 3 * NF < M * NF
    for name in BOOT_PARTS:
        _same(getattr(got, name), getattr(want, name), backend)
    reached = got.settings.pop("estimated_error"), want.settings.pop("estimated_error")
    batches = -(-7 // (batch or 7))
    assert got.settings.pop("reads") == _reads(backend, want.settings.pop("reads"), batches)
    assert got.settings == want.settings
    np.testing.assert_allclose(*reached, rtol=1e-6)
    np.testing.assert_allclose(got.errors["S"], want.errors["S"], rtol=1e-6)
    assert np.isnan(core_backend.to_numpy(got.V.isel(x=5).data)).all()  # land stays NaN


def test_bootstrap_partial_nan_is_named_on_every_backend(backend):
    X = _values()
    X[3, 7] = np.nan
    named = r"NaN at some but not all samples of 1 feature\(s\): \(x\[7\]\)\. The bootstrap"
    with pytest.raises(xsvd.MissingValueError, match=named):
        xsvd.bootstrap(_labeled(backend(X)), 2, 3, dim="time", seed=0)


def test_bootstrap_default_stopping_on_every_backend(backend):
    """Converged (not the old fixed 4 iterations): the same passes and estimates as NumPy."""
    X = _values(land=False, m=120, amplitudes=(20, 10))
    want = xsvd.bootstrap(_labeled(X), 2, 5, dim="time", seed=0)
    got = xsvd.bootstrap(_labeled(backend(X)), 2, 5, dim="time", seed=0)
    assert got.settings["stopped"] == want.settings["stopped"] == "converged"
    assert got.settings["reads"] == _reads(backend, want.settings["reads"]) < 12
    assert want.settings["reads"] < 6
    exact = xsvd.exact(_labeled(X), dim="time", center=True).S.values[:2]
    err = got.errors
    assert np.all(np.isfinite(err["S"].values))
    assert np.all(err["S"].values >= np.abs(core_backend.to_numpy(got.S.data) - exact))


# ------------------------------------------------------------------ rotation
def _field_values():
    return xsvd.datasets.climate_field(n_time=48, n_lat=6, n_lon=12, seed=5)


def _on(backend, da: xr.DataArray) -> xr.DataArray:
    """``da`` (time, lat, lon) with its data on ``backend`` (as a time x features matrix)."""
    flat = da.values.reshape(da.sizes["time"], -1)
    return da.copy(data=core_backend.reshape(backend(flat), da.shape))


@pytest.fixture(params=["exact", "compressed"])
def solver(request):
    if request.param == "exact":
        return lambda da: xsvd.exact(da, k=5, dim="time", center=True)
    return lambda da: xsvd.compressed(da, 5, dim="time", center=True, seed=0, n_power_iter=6)


@pytest.mark.parametrize("method", ["varimax", "promax"])
def test_rotate_on_every_backend_equals_numpy(backend, solver, method):
    sst = _field_values()
    if backend.lazy:
        data = sst.chunk({"time": 12} if backend.name == "dask-samples" else {"lon": 4})
    else:
        data = _on(backend, sst)
    res = solver(data)
    got, want = res.rotate(3, method=method), solver(sst).rotate(3, method=method)
    for name in ("S", "V", "U", "rotation_matrix", "pc_correlation", "explained_variance_ratio"):
        part = getattr(got, name)
        part = part.compute() if backend.lazy else part
        _same(part, getattr(want, name), backend, atol=1e-9)
    assert got.settings == want.settings
    for stat in ("pcs", "eofs", "eigenvalues"):
        out = getattr(got, stat)()
        _same(out.compute() if backend.lazy else out, getattr(want, stat)(), backend, atol=1e-9)
    out = got.project(data)
    _same(out.compute() if backend.lazy else out, want.project(sst), backend, atol=1e-9)


def test_rotated_device_result_moves_only_small_arrays():
    """The varimax iterations run on the device: one number per iteration comes back."""
    pytest.importorskip("array_api_strict")
    from conftest import Backend

    sst = _field_values()
    res = xsvd.exact(_on(Backend("strict"), sst), k=5, dim="time", center=True)
    core_backend.TRANSFERS.reset()
    rot = res.rotate(4, method="promax")
    assert core_backend.TRANSFERS.largest("to_host") <= 1  # the criterion, total_ss
    assert rot.settings["iterations"] >= core_backend.TRANSFERS.count("to_host") - 2
    back = rot.as_numpy()
    assert isinstance(back.S.data, np.ndarray) and isinstance(back.rotation_matrix.data, np.ndarray)
    np.testing.assert_allclose(back.S.values, core_backend.to_numpy(rot.S.data))
