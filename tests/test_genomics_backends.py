"""Every public genomics function on every backend (issue 29).

NumPy, Dask cut along the variants and along the samples, array-api-strict's
second device (which refuses implicit conversion to NumPy and mixing devices,
as CuPy does) and, with a GPU, CuPy: each function gives NumPy's numbers
(1e-10; identical for counts, packed bytes and written files), returns its
arrays where the data live (on the device, or lazily for Dask), and moves
values to the host only through ``backend.transfer`` (counted), once per array
where a file needs them. ``tracy_widom`` of a device result is in
tests/test_genomics_device.py; ``open_plink`` and ``open_pgen`` read files into
host (Dask) arrays and take no data.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import on_strict_device

import xsvd
from xsvd.core import backend as xb

K = 4


def _on(backend, obj: xr.DataArray) -> xr.DataArray:
    return obj.copy(data=backend(np.asarray(obj.values)))


def _lives_on(backend, x) -> None:
    """``x`` is where ``backend`` puts data: lazy for Dask, on the device for the others."""
    if backend.lazy:
        assert xb.is_dask(x), type(x)
    elif backend.name == "strict":
        import array_api_strict

        assert xb.api(x) is array_api_strict and str(xb.device(x)) == str(
            array_api_strict.Device("device1")
        ), type(x)
    elif "cupy" in backend.name:
        assert xb.is_cupy(x), type(x)
    else:
        assert isinstance(x, np.ndarray), type(x)


def _close(got, want: np.ndarray) -> None:
    scale = float(np.nanmax(np.abs(want))) or 1.0
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * scale)


@pytest.fixture(scope="module")
def genotypes() -> xr.DataArray:
    """Float64 genotypes with 2% missing calls, a monomorphic variant and allele codes."""
    gt = xsvd.datasets.genotypes(n_variants=400, n_samples=60, n_populations=3, seed=3)
    values = gt.values.astype(np.float64)
    values[np.random.default_rng(0).random(values.shape) < 0.02] = np.nan
    values[5] = 0.0  # monomorphic: patterson_scaling drops it
    n = gt.sizes["variants"]
    return gt.copy(data=values).assign_coords(
        chrom=("variants", np.full(n, "1")),
        allele_1=("variants", np.where(np.arange(n) % 2 == 0, "A", "C")),
        allele_2=("variants", np.where(np.arange(n) % 2 == 0, "G", "T")),
    )


@pytest.fixture(scope="module")
def reference(genotypes):
    """The reference samples (every other one), scaled, their PCA on NumPy, and the new
    samples at the reference's variants, in another order, some with swapped alleles."""
    kept, w = xsvd.patterson_scaling(genotypes.isel(samples=slice(0, None, 2)))
    res = _pca(kept, w)
    new = genotypes.isel(samples=slice(1, None, 2)).sel(variants=kept.variants.values[::-1])
    swap = np.arange(new.sizes["variants"]) % 5 == 0
    new = new.copy(data=np.where(swap[:, None], 2 - new.values, new.values)).assign_coords(
        allele_1=("variants", np.where(swap, new.allele_2.values, new.allele_1.values)),
        allele_2=("variants", np.where(swap, new.allele_1.values, new.allele_2.values)),
    )
    return kept, w, res, new


def _pca(kept, w):
    return kept.svd.exact(k=K, dim="samples", center=True, weights=w, missing="mean")


def test_patterson_scaling(backend, genotypes):
    """It raised IndexError on the device (NumPy-style indexing with one index)."""
    kept, w = xsvd.patterson_scaling(genotypes)
    xb.TRANSFERS.reset()
    got, w_got = xsvd.patterson_scaling(_on(backend, genotypes))
    # the per-variant sums and counts come to the host, the data never do
    assert xb.TRANSFERS.largest("to_host") <= genotypes.sizes["variants"]
    _lives_on(backend, got.data)
    assert got.sizes == kept.sizes and got.attrs == kept.attrs
    np.testing.assert_array_equal(backend.host(got.data), kept.values)
    np.testing.assert_array_equal(got.variants.values, kept.variants.values)
    xr.testing.assert_identical(w_got, w)  # plain NumPy numbers, what weights= takes


def _calls_on(backend, calls: np.ndarray):
    """VCF-Zarr calls ``(variants, samples, ploidy)`` on ``backend`` (Dask: chunked along the
    variants for dask-samples, along the samples for dask-features)."""
    if backend.name == "strict":
        return on_strict_device(calls)
    if "cupy" in backend.name:
        import cupy

        calls = cupy.asarray(calls)
    if not backend.lazy:
        return calls
    import dask.array as da

    chunks = (7, -1, -1) if backend.name.endswith("samples") else (-1, 4, -1)
    return da.from_array(calls, chunks=chunks)


def test_dosage(backend):
    """It raised TypeError / AttributeError on the device (NumPy's methods)."""
    rng = np.random.default_rng(1)
    calls = rng.integers(-1, 3, size=(30, 11, 2)).astype(np.int8)  # -1 missing, 2 multi-allelic
    ds = xr.Dataset(
        {"call_genotype": (("variants", "samples", "ploidy"), calls)},
        coords={"variant_position": ("variants", np.arange(30) * 10)},
    )
    want = xsvd.dosage(ds)
    got = xsvd.dosage(ds.copy(data={"call_genotype": _calls_on(backend, calls)}))
    _lives_on(backend, got.data)
    assert got.dims == want.dims and xb.numpy_dtype(got.dtype) == np.float32
    np.testing.assert_array_equal(backend.host(got.data), want.values)
    np.testing.assert_array_equal(got.variant_position.values, want.variant_position.values)


def test_pack_genotypes(backend, genotypes):
    """It raised AttributeError 'astype' on the device."""
    gt = genotypes.astype(np.float32)
    want = xsvd.pack_genotypes(gt)
    data = _on(backend, gt)
    xb.TRANSFERS.reset()
    got = xsvd.pack_genotypes(data)
    assert xb.TRANSFERS.count("to_host") == 0  # packed where the data are
    assert xb.is_packed(got.data) and got.dims == gt.dims
    if not backend.lazy:  # the same bytes, on the data's device
        _lives_on(backend, got.data.data)
        np.testing.assert_array_equal(xb.to_numpy(got.data.data), want.data.data)
    else:
        assert xb.is_dask(got.data)
    np.testing.assert_array_equal(backend.host(got.data), gt.values)


@pytest.mark.parametrize("method", ["lzw", "oadp"])
def test_project_samples(backend, reference, method):
    """lzw raised TypeError on the device (host factors times device scores), oadp
    "Can't convert array on the device1 device to a NumPy array"."""
    kept, w, res, new = reference
    want = xsvd.project_samples(res, new, method=method)
    res_b, new_b = _pca(_on(backend, kept), w), _on(backend, new)
    xb.TRANSFERS.reset()
    got = xsvd.project_samples(res_b, new_b, method=method)
    assert xb.TRANSFERS.largest("to_host") < new.size // 4  # the data stay where they are
    _lives_on(backend, got.data)
    assert got.dims == want.dims and got.attrs == want.attrs
    _close(backend.host(got.data), want.values)
    np.testing.assert_array_equal(got.samples.values, want.samples.values)
    if method == "lzw":
        _close(got.shrinkage.values, want.shrinkage.values)


def test_shrinkage_factors_live_where_the_result_does(backend, reference):
    """On a device result they were NumPy: device scores could not be divided by them."""
    kept, w, res, new = reference
    want = xsvd.shrinkage_factors(res)
    res_b = _pca(_on(backend, kept), w)
    got = xsvd.shrinkage_factors(res_b)
    if backend.lazy:  # a Dask PCA's result is computed: NumPy
        assert isinstance(got.data, np.ndarray)
    else:
        _lives_on(backend, got.data)
    _close(backend.host(got.data), want.values)
    assert got.attrs.keys() == want.attrs.keys() and got.attrs["n_spikes"] == want.attrs["n_spikes"]
    # their use: dividing the plain projection of new samples on the same device
    plain = xsvd.project_samples(res_b, _on(backend, new), shrinkage=False)
    corrected = xsvd.project_samples(res_b, _on(backend, new), shrinkage=got)
    _close(backend.host((plain / got).data), backend.host(corrected.data))


@pytest.mark.parametrize("loadings", ["allele", "var"])
def test_write_plink_pca(backend, reference, tmp_path, loadings):
    """It raised "Can't convert array on the device1 device to a NumPy array"; the files of a
    result on any backend are those of the same result on the host, byte for byte."""
    kept, w, _, _ = reference
    kept_b = _on(backend, kept)
    res_b = _pca(kept_b, w)
    m = w.attrs["n_variants"]
    xb.TRANSFERS.reset()
    got = xsvd.write_plink_pca(
        res_b, tmp_path / "dev", n_variants=m, loadings=loadings, genotypes=kept_b
    )
    # one move per array (U, S, V, the mean, a few spectrum numbers, the call counts)
    assert xb.TRANSFERS.count("to_host") <= 8
    assert xb.TRANSFERS.largest("to_host") <= res_b.V.size
    want = xsvd.write_plink_pca(
        res_b.as_numpy(), tmp_path / "host", n_variants=m, loadings=loadings, genotypes=kept
    )
    assert [p.name.replace("dev", "host") for p in got] == [p.name for p in want]
    for a, b in zip(got, want, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_write_eigenvec(backend, reference, tmp_path):
    """It raised "Can't convert array on the device1 device to a NumPy array" for device
    scores (e.g. project_samples of device data); lazy scores are computed."""
    kept, w, _, new = reference
    scores = xsvd.project_samples(_pca(_on(backend, kept), w), _on(backend, new))
    _lives_on(backend, scores.data)
    xb.TRANSFERS.reset()
    got = xsvd.write_eigenvec(scores, tmp_path / "dev.eigenvec")
    assert xb.TRANSFERS.count("to_host") <= 1  # the scores, once (none from NumPy or Dask)
    host = scores.copy(data=backend.host(scores.data))
    want = xsvd.write_eigenvec(host, tmp_path / "host.eigenvec")
    assert got.read_bytes() == want.read_bytes()


def test_write_plink(backend, genotypes, tmp_path):
    """It raised IndexError on the device; the data come to the host once, whole."""
    xsvd.write_plink(genotypes, tmp_path / "host")
    xb.TRANSFERS.reset()
    xsvd.write_plink(_on(backend, genotypes), tmp_path / "dev")
    if backend.name == "strict":
        assert xb.TRANSFERS.count("to_host") == 1
    for suffix in (".bed", ".bim", ".fam"):
        got = (tmp_path / f"dev{suffix}").read_bytes()
        assert got == (tmp_path / f"host{suffix}").read_bytes(), suffix
    back = xsvd.open_plink(tmp_path / "dev")
    np.testing.assert_array_equal(back.values, genotypes.values)
