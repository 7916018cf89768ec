"""Float32 subnormal data on a device that flushes them to zero (issue 30, item 3).

CuPy compiles its kernels with ``-ftz=true`` and cuBLAS/cuSOLVER flush subnormal
float32 values to zero, so subnormal data gave S = 0 there. There is no GPU in CI:
:class:`Flushing` is a NumPy array that flushes float32 subnormal values in every
ufunc (arithmetic, products, reductions), conversion and factorization, as such a
device does, and ``backend.flushes_subnormals`` is told so. The magnitudes must then
come from the values' bits and the rescaling be done in float64 before the products.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import matrix_with_spectrum

from xsvd.core import backend
from xsvd.linalg import exact_svd, randomized_svd

TINY = np.finfo(np.float32).tiny


def _flush(x):
    if isinstance(x, np.ndarray) and x.dtype == np.float32:
        x = x.view(np.ndarray)
        return np.where(np.abs(x) < TINY, np.float32(0), x)
    return x.view(np.ndarray) if isinstance(x, np.ndarray) else x


def _on_device(result):
    """Results stay on the pretend device."""
    if isinstance(result, tuple):
        return (
            type(result)(*map(_on_device, result))
            if hasattr(result, "_fields")
            else tuple(map(_on_device, result))
        )
    if isinstance(result, np.ndarray) and not isinstance(result, Flushing):
        return result.view(Flushing)
    return result


class Flushing(np.ndarray):
    """NumPy data on a pretend device that flushes float32 subnormal values to zero."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [_flush(x) for x in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) for o in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(result, np.ndarray):
            return _flush(result).view(Flushing)
        return result

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.einsum, np.dot) or func.__module__.startswith("numpy.linalg"):
            args = tuple(_flush(x) for x in args)  # cuBLAS and cuSOLVER flush them too
        result = super().__array_function__(func, types, args, kwargs)
        return _on_device(result)

    def astype(self, dtype, *args, **kwargs):
        if np.dtype(dtype) == self.dtype:  # no conversion: a copy (or itself), bits kept
            return np.ndarray.astype(self, dtype, *args, **kwargs)
        out = np.ndarray.astype(_flush(self), dtype, *args, **kwargs)
        return _flush(out).view(Flushing)


@pytest.fixture(params=["memory", "dask"])
def on_device(request, flushing):
    """Data on the pretend device: in memory, or Dask chunks of it (stripes of samples)."""

    def put(a):
        x = flushing(a)
        if request.param == "memory":
            return x
        import dask.array as da

        return da.from_array(x, chunks=(max(1, a.shape[0] // 4), -1), asarray=False)

    return put


@pytest.fixture
def flushing(monkeypatch):
    flushes = lambda x: isinstance(x, Flushing) and x.dtype == np.float32  # noqa: E731
    monkeypatch.setattr(backend, "flushes_subnormals", flushes, raising=False)
    return lambda a: np.asarray(a).view(Flushing)


SPECTRUM = np.r_[200.0, 150.0, 100.0, np.full(27, 1.0)]


def _truth(a, weights=None, k=3):
    B = a.astype(np.float64)
    B = B - B.mean(axis=0)
    B = B if weights is None else B * weights
    e = np.frexp(np.abs(B).max())[1]
    return np.ldexp(np.linalg.svd(np.ldexp(B, -e), compute_uv=False)[:k], e)


def test_the_pretend_device_flushes(flushing):
    x = flushing(np.array([1e-42, 1.0], dtype=np.float32))
    assert np.asarray(x.astype(np.float64))[0] == 0  # as CuPy's conversion
    assert np.asarray(x * np.float32(2.0))[0] == 0  # and its arithmetic
    assert np.asarray(np.asarray(backend.float64_exact(x)))[0] == np.float64(np.float32(1e-42))


def test_bits_give_every_float32_value():
    values = np.array(
        [0.0, -0.0, 1e-45, -1e-45, 1e-42, -3e-39, TINY, -TINY, 1.5, -2e38, np.inf, -np.inf],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(backend.float64_from_bits(values), values.astype(np.float64))
    assert np.isnan(backend.float64_from_bits(np.array([np.nan], np.float32))).all()


def test_column_magnitudes_from_bits(flushing):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((50, 6)) * np.array([1e-42, 1e-39, 1, 1e30, 1e-44, 3])).astype(
        np.float32
    )
    a[3, 2], a[7, 5] = np.nan, -np.inf
    got = np.asarray(backend.column_magnitudes(flushing(a)))
    want = np.nanmax(np.abs(a.astype(np.float64)), axis=0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(240, 30), (30, 240)], ids=["samples", "features"])
def test_compressed_subnormal_float32_on_a_flushing_device(on_device, shape):
    base = matrix_with_spectrum(SPECTRUM, 240, 30, seed=0)
    a = ((base if shape == (240, 30) else base.T) * 1e-42).astype(np.float32)
    d = randomized_svd(on_device(a), 3, center=True, seed=0, compute=True)
    S0, S, errors = _truth(a), np.asarray(d.S), np.asarray(d.errors)
    np.testing.assert_allclose(S, S0, rtol=1e-4)
    assert (errors[:, 0] >= np.abs(S - S0)).all()


@pytest.mark.parametrize("weights", [None, np.full(30, 1e42)])
def test_exact_subnormal_float32_on_a_flushing_device(on_device, weights):
    a = (matrix_with_spectrum(SPECTRUM, 240, 30, seed=0) * 1e-41).astype(np.float32)
    S = np.asarray(exact_svd(on_device(a), 3, center=True, weights=weights, compute=True).S)
    np.testing.assert_allclose(S, _truth(a, weights), rtol=1e-3)
