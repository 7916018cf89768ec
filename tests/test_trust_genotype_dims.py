"""Genotype matrices laid out (variants, samples) are decomposed over the samples (issue 31, 9).

A uint8 Zarr store of calls written (variants, samples), as the genomics guide
lays it out, used to be decomposed over its first dimension (the variants)
without a word when ``dim`` was omitted: ``U`` over variants, a PCA of the
variants. Dimension names that say samples and variants now decide.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.labeled.dims import default_sample_dim


def _calls(dims, n_variants=300, n_samples=40, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 3, size=(n_variants, n_samples), dtype=np.uint8)
    if dims[0] not in ("variants", "snps", "markers", "loci", "variant"):
        values = values.T
    return xr.DataArray(values, dims=dims)


@pytest.mark.parametrize(
    "dims, expected",
    [
        (("variants", "samples"), "samples"),
        (("samples", "variants"), "samples"),
        (("snps", "individuals"), "individuals"),
        (("Markers", "Sample"), "Sample"),
        (("rows", "columns"), "rows"),  # other names: the first dimension, as before
    ],
)
def test_sample_dimension_from_the_names(dims, expected):
    assert default_sample_dim(_calls(dims)) == expected


def test_zarr_store_laid_out_variants_by_samples_is_a_pca_of_the_samples(tmp_path):
    calls = _calls(("variants", "samples")).chunk({"variants": 100})
    calls.to_dataset(name="calls").to_zarr(tmp_path / "calls.zarr")
    z = xsvd.open_zarr(tmp_path / "calls.zarr", "calls")
    res = z.svd.compressed(k=3, center=True, seed=0)
    assert res.U.dims == ("samples", "component")
    # the numbers are those of the samples x variants matrix, centered over samples
    a = calls.values.T.astype(np.float64)
    a -= a.mean(axis=0)
    s = np.linalg.svd(a, compute_uv=False)[:3]
    np.testing.assert_allclose(res.S.values, s, rtol=1e-4)


def test_the_attribute_and_dim_still_win():
    calls = _calls(("variants", "samples"))
    calls.attrs["xsvd_sample_dim"] = "variants"
    assert default_sample_dim(calls) == "variants"
    res = _calls(("variants", "samples")).svd.compressed(k=2, dim="variants", center=True, seed=0)
    assert res.U.dims == ("variants", "component")
