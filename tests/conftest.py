"""Shared fixtures and helpers for the xsvd tests.

``backend``: a fixture that runs a test on every array backend the core
supports (NumPy; Dask cut into stripes of samples or of features; CuPy and
Dask of CuPy chunks, which skip without CuPy and a CUDA device).

``XSVD_TEST_WITHOUT=pkg1,pkg2`` hides installed optional packages from the
tests (as if they were not installed), to check that the tests needing them
skip with a reason instead of failing (``test_optional_dependencies.py``).
"""

from __future__ import annotations

import doctest
import os
import sys
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

#: The packages of xsvd's extras (import names): tests needing one skip without it.
OPTIONAL_PACKAGES = (
    "zarr",
    "fsspec",
    "aiohttp",
    "requests",
    "pint",
    "pint_xarray",
    "matplotlib",
    "distributed",
    "bed_reader",
    "sphinx",
    "hypothesis",
    "cupy",
    "cupy_xarray",
    "cartopy",
    "eofs",
    "xeofs",
    "cftime",
    "h5netcdf",
    "h5py",
    "netCDF4",
    "nc_time_axis",
)

for _name in filter(None, os.environ.get("XSVD_TEST_WITHOUT", "").split(",")):
    sys.modules[_name] = None  # `import _name` now raises ImportError

import dask  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


def gpu_available() -> bool:
    """True when CuPy is installed and sees a CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


_GPU = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a GPU")]


def strict_available() -> bool:
    """True when array-api-strict (the strict second device the GPU path is tested on) is
    installed (with NumPy 1, once its move between devices is mended: :func:`pytest_configure`)."""
    try:
        import array_api_strict  # noqa: F401
    except ImportError:
        return False
    return True


def _mend_strict_to_device() -> None:
    """Make array-api-strict's ``Array.to_device`` work with NumPy 1 (the minimum-versions run).

    Up to at least 2.6.1 it copies with ``np.asarray(a, copy=True)``, a keyword that NumPy
    1.26 lacks (``TypeError: asarray() got an unexpected keyword argument 'copy'``), so no
    array could leave device1 there. Its own ``asarray(x, device=, copy=True)`` makes the
    same copy onto the other device and works with NumPy 1 and 2: ``to_device`` is pointed
    at it, for the tests only, and only where NumPy is older than 2.
    """
    if int(np.__version__.split(".")[0]) >= 2 or not strict_available():
        return
    import array_api_strict

    def to_device(self, device, /, stream=None):
        if stream is not None:
            raise ValueError("The stream argument to to_device() is not supported")
        if device == self.device:
            return self
        if not isinstance(device, array_api_strict.Device):
            raise ValueError(f"Unsupported device {device!r}")
        return array_api_strict.asarray(self, device=device, copy=True)

    type(array_api_strict.asarray(0.0)).to_device = to_device  # its (unexported) Array


def pytest_configure(config):
    _mend_strict_to_device()


#: array-api-strict's second device: it refuses implicit conversion to NumPy and mixing
#: devices, as CuPy does, so the device path is checked on every run without a GPU.
_STRICT = [pytest.mark.skipif(not strict_available(), reason="needs array-api-strict")]


def strict_device():
    import array_api_strict

    return array_api_strict.Device("device1")


def on_strict_device(a):
    """A NumPy array put on array-api-strict's second device."""
    import array_api_strict

    return array_api_strict.asarray(np.asarray(a), device=strict_device())


@dataclass(frozen=True)
class Backend:
    """Puts a NumPy test matrix on one backend and brings results back to NumPy."""

    name: str

    @property
    def lazy(self) -> bool:
        return self.name.startswith("dask")

    def __call__(self, a: np.ndarray):
        if self.name == "strict":
            return on_strict_device(a)
        if "cupy" in self.name:
            import cupy

            a = cupy.asarray(a)
        if not self.lazy:
            return a
        import dask.array as da

        m, n = a.shape
        if self.name.endswith("features"):  # stripes of features: every sample in each chunk
            chunks = (-1, max(1, -(-n // 3)))
        else:  # stripes of samples
            chunks = (max(1, -(-m // 4)), -1)
        return da.from_array(a, chunks=chunks)

    def host(self, *xs):
        """NumPy copies of ``xs`` (computed together when lazy); one array for one argument."""
        out = [None if x is None else _to_numpy(x) for x in dask.compute(*xs)]
        return out[0] if len(out) == 1 else out


def _to_numpy(x):
    from xsvd.core import backend

    return backend.to_numpy(x)


BACKENDS = [
    "numpy",
    "dask-samples",
    "dask-features",
    pytest.param("strict", marks=_STRICT),
    pytest.param("cupy", marks=_GPU),
    pytest.param("dask-cupy", marks=_GPU),
]


@pytest.fixture(params=BACKENDS)
def backend(request) -> Backend:
    """Each core test once per backend (CuPy ones skip without a GPU; "strict" is
    array-api-strict's second device, which stands for one in every run)."""
    return Backend(request.param)


def random_orthonormal(rng, n: int, r: int) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return q


def matrix_with_spectrum(s, m: int, n: int, seed: int = 0) -> np.ndarray:
    """An m x n matrix whose singular values are exactly ``s``."""
    rng = np.random.default_rng(seed)
    r = len(s)
    return (random_orthonormal(rng, m, r) * np.asarray(s)) @ random_orthonormal(rng, n, r).T


def raising_scheduler(*args, **kwargs):
    raise AssertionError("dask computed something where nothing should be computed")


@contextmanager
def raise_if_dask_computes():
    """Fail if any dask computation runs inside the block."""
    with dask.config.set(scheduler=raising_scheduler):
        yield


class CountingArray:
    """An array-like for ``da.from_array`` that counts reads and live chunks.

    ``reads[key]`` counts how often each chunk was produced; ``max_live`` is
    the largest number of produced chunks alive at the same time.
    """

    def __init__(self, data: np.ndarray):
        self.data = data
        self.shape = data.shape
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.reads: dict = {}
        self.live = 0
        self.max_live = 0
        self._lock = threading.Lock()

    def _released(self):
        with self._lock:
            self.live -= 1

    def __getitem__(self, key):
        out = np.array(self.data[key])  # a fresh object per read
        if out.size == 0:  # dask asking for meta
            return out
        k = tuple((s.start, s.stop) for s in key)
        with self._lock:
            self.reads[k] = self.reads.get(k, 0) + 1
            self.live += 1
            self.max_live = max(self.max_live, self.live)
        weakref.finalize(out, self._released)
        return out


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


class DocRunner(doctest.DocTestRunner):
    """Records ImportErrors (a missing optional package) instead of reporting them."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.missing: list[str] = []

    def report_unexpected_exception(self, out, test, example, exc_info):
        if issubclass(exc_info[0], ImportError):
            self.missing.append(str(exc_info[1]))
            return
        super().report_unexpected_exception(out, test, example, exc_info)
