"""GPU (CuPy) paths. Tests marked ``gpu`` skip without CuPy or a CUDA device.

The tests at the bottom run everywhere: they check what a machine without a
GPU must do (clear errors, nothing imported, the same random test matrix).
"""

from __future__ import annotations

import builtins
import sys

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.core import backend as _backend
from xsvd.core.packed import PackedGenotypes
from xsvd.labeled.preprocess import move_dataarray


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.fixture
def cp():
    import cupy

    return cupy


@pytest.fixture
def genotypes():
    return xsvd.datasets.genotypes(n_variants=6_000, n_samples=400, seed=0)


def _as_cupy(da_, cp):
    return da_.copy(data=cp.asarray(da_.values))


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("chunked", [False, True])
def test_cupy_results_stay_on_gpu_and_match_numpy(cp, genotypes, chunked):
    host = genotypes.astype("float32")
    dev = _as_cupy(host, cp)
    if chunked:
        host, dev = host.chunk(variants=1_500), dev.chunk(variants=1_500)
    kw = dict(k=5, dim="samples", center=True, seed=3, n_power_iter=3)
    r_host = host.svd.compressed(**kw)
    r_dev = dev.svd.compressed(**kw)
    assert isinstance(r_dev.U.data, cp.ndarray) and isinstance(r_dev.V.data, cp.ndarray)
    back = r_dev.as_numpy()
    assert isinstance(back.S.data, np.ndarray)
    # same test matrix on both backends: values agree to float32 rounding, signs exactly
    np.testing.assert_allclose(back.S.values, r_host.S.values, rtol=1e-4)
    np.testing.assert_allclose(back.V.values[:2], r_host.V.values[:2], atol=1e-4)
    np.testing.assert_allclose(back.U.values[:, :2], r_host.U.values[:, :2], atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
def test_exact_on_cupy_matches_lapack(cp):
    sst = xsvd.datasets.climate_field(n_time=80, n_lat=10, n_lon=20)
    r_host = sst.svd.exact(dim="time", center=True, k=4)
    r_dev = sst.svd.exact(dim="time", center=True, k=4, device="gpu")
    assert isinstance(r_dev.S.data, cp.ndarray)
    out = r_dev.as_numpy()
    np.testing.assert_allclose(out.S.values, r_host.S.values, rtol=1e-10)
    np.testing.assert_allclose(out.V.values, r_host.V.values, atol=1e-8)  # NaN at land alike


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
def test_device_option_moves_numpy_and_dask_input(cp, genotypes):
    host = genotypes.chunk(variants=2_000)
    res = host.svd.compressed(k=3, dim="samples", center=True, seed=0, device="gpu")
    assert isinstance(res.S.data, cp.ndarray)
    again = _as_cupy(genotypes, cp).svd.compressed(
        k=3, dim="samples", center=True, seed=0, device="cpu"
    )
    assert isinstance(again.S.data, np.ndarray)
    np.testing.assert_allclose(res.as_numpy().S.values, again.S.values, rtol=1e-4)
    assert isinstance(again.as_cupy().U.data, cp.ndarray)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
def test_packed_genotypes_on_gpu(cp, genotypes):
    packed = xsvd.pack_genotypes(genotypes)
    on_gpu = packed.copy(data=_backend.to_cupy(packed.data))
    assert isinstance(on_gpu.data, PackedGenotypes) and isinstance(on_gpu.data.data, cp.ndarray)
    kw = dict(k=4, dim="samples", center=True, seed=1, missing="mean")
    r_dev = on_gpu.svd.compressed(**kw)
    r_host = packed.svd.compressed(**kw)
    assert isinstance(r_dev.S.data, cp.ndarray)
    np.testing.assert_allclose(r_dev.as_numpy().S.values, r_host.S.values, rtol=1e-4)
    lazy = xsvd.pack_genotypes(genotypes.chunk(variants=2_000)).svd.compressed(**kw, device="gpu")
    np.testing.assert_allclose(lazy.as_numpy().S.values, r_host.S.values, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
def test_zarr_gpu_buffers_give_cupy_chunks(cp, genotypes, tmp_path):
    import zarr

    path = tmp_path / "gt.zarr"
    genotypes.to_dataset().to_zarr(path)
    with zarr.config.enable_gpu():
        gt = xsvd.open_zarr(path, "genotype")
        assert isinstance(gt.data._meta, cp.ndarray)
        assert isinstance(gt.data.blocks[0, 0].compute(), cp.ndarray)
        res = gt.svd.compressed(k=3, dim="samples", center=True, seed=0)
    assert isinstance(res.S.data, cp.ndarray)
    ref = genotypes.svd.compressed(k=3, dim="samples", center=True, seed=0)
    np.testing.assert_allclose(res.as_numpy().S.values, ref.S.values, rtol=1e-4)


# ------------------------------------------------------------- without a GPU


def test_test_matrix_is_backend_independent_and_gaussian():
    a = _backend.standard_normal(np, 7, (4_000, 25), np.float64)
    again = _backend.standard_normal(np, 7, (4_000, 25), np.float64)
    np.testing.assert_array_equal(a, again)
    assert abs(a.mean()) < 0.01 and abs(a.std() - 1) < 0.01
    assert abs(np.corrcoef(a[:, 0], a[:, 1])[0, 1]) < 0.05
    f32 = _backend.standard_normal(np, 7, (4_000, 25), np.float32)
    np.testing.assert_allclose(f32, a, rtol=1e-6, atol=1e-6)
    assert not np.array_equal(a, _backend.standard_normal(np, 8, (4_000, 25), np.float64))
    # NumPy's Generator on the host, whatever the backend (CuPy gets these numbers moved)
    np.testing.assert_array_equal(
        _backend.standard_normal(np, 0, (2, 3), np.float64),
        np.random.default_rng(0).standard_normal((2, 3)),
    )
    np.testing.assert_allclose(
        _backend.standard_normal(np, 0, (3,), np.float64),
        [0.12573022, -0.13210486, 0.64042265],
        rtol=1e-7,
    )


def test_asking_for_the_gpu_without_cupy_names_the_extra(monkeypatch, genotypes):
    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy" or name.startswith("cupy."):
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(ImportError, match=r'pip install "xsvd\[gpu\]"'):
        genotypes.svd.compressed(k=3, dim="samples", device="gpu")
    res = genotypes.svd.compressed(k=3, dim="samples", seed=0, device="cpu")
    with pytest.raises(ImportError, match=r'pip install "xsvd\[gpu\]"'):
        res.as_cupy()
    assert isinstance(res.as_numpy().U.data, np.ndarray)


def test_bad_device_is_a_clear_error(genotypes):
    with pytest.raises(ValueError, match=r"device must be 'gpu', 'cpu' or None"):
        genotypes.svd.compressed(k=3, dim="samples", device="tpu")


def test_importing_xsvd_does_not_import_cupy():
    import subprocess

    code = "import sys, xsvd; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_device_cpu_keeps_dask_lazy(genotypes):
    lazy = genotypes.chunk(variants=2_000)
    moved = move_dataarray(lazy, "cpu")
    assert moved is lazy  # already in host memory
    assert isinstance(_backend.to_host(lazy.data), da.Array)
    xr.testing.assert_identical(moved, lazy)


def test_gpu_benchmark_draws_valid_data_in_small_slices():
    """benchmarks/gpu.py's generators, run with NumPy standing in for CuPy: valid PLINK
    codes only (no missing calls), and draws of at most DRAW_VALUES values at once (the
    packed case drew a 16 GB temporary on the GPU machine)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu.py"
    spec = importlib.util.spec_from_file_location("gpu_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    class CountingNumpy:  # numpy, recording the size of every random draw
        def __init__(self):
            self.draws = []

        def __getattr__(self, name):
            return getattr(np, name)

        @property
        def random(self):
            outer = self

            class _Random:
                @staticmethod
                def default_rng(seed):
                    rng = np.random.default_rng(seed)

                    class _Rng:
                        @staticmethod
                        def integers(low, high, size, dtype):
                            outer.draws.append(int(np.prod(size)))
                            return rng.integers(low, high, size, dtype=dtype)

                    return _Rng()

            return _Random()

    fake = CountingNumpy()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench, "DRAW_VALUES", 4_000)
        packed = bench._random_packed(fake, 2_000, 37, seed=1)
        plain = bench._random_uint8(fake, 500, 30, seed=2)
    values = np.asarray(packed.unpack(np.float32))
    assert values.shape == (2_000, 37)
    assert set(np.unique(values)) == {0.0, 1.0, 2.0}  # no NaN: no missing code drawn
    assert set(np.unique(plain)) == {0, 1, 2}
    assert max(fake.draws) <= 4_000 and len(fake.draws) > 2


def test_zarr_gpu_buffers_leave_text_coordinates_on_the_host(genotypes, tmp_path, monkeypatch):
    """Under ``zarr.config.enable_gpu()`` text coordinates failed ("Unsupported dtype <U5",
    measured on an H100): CuPy cannot hold them. Imitated without a GPU by host buffers
    that refuse text, registered under a name with "gpu" in it (this module's)."""
    zarr = pytest.importorskip("zarr")
    from zarr.core.buffer import cpu

    class FakeGpuBuffer(cpu.NDBuffer):
        def __init__(self, array):
            if np.dtype(array.dtype).kind in "USO":
                raise ValueError(f"Unsupported dtype {array.dtype}")
            super().__init__(array)

    FakeGpuBuffer.__module__ = __name__  # "...test_gpu.FakeGpuBuffer": zarr_gpu_enabled()
    zarr.registry.register_ndbuffer(FakeGpuBuffer)
    qualified = f"{FakeGpuBuffer.__module__}.{FakeGpuBuffer.__qualname__}"
    path = tmp_path / "gt.zarr"
    genotypes.to_dataset().to_zarr(path)  # text sample names: <U5
    monkeypatch.setattr(_backend, "require_cupy", lambda why: np)  # NumPy stands in for CuPy
    with zarr.config.set({"ndbuffer": qualified}):
        from xsvd.io.zarr import zarr_gpu_enabled

        assert zarr_gpu_enabled()
        gt = xsvd.open_zarr(path, "genotype")
        values = gt.values
    assert gt.samples.dtype.kind == "U" and list(gt.samples.values) == list(
        genotypes.samples.values
    )
    np.testing.assert_array_equal(values, genotypes.values)
