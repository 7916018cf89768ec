"""Genomics functions on a device result (array-api-strict's device1 stands for a GPU):
they read a result's numbers through the array API, bringing only a few to the host."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import on_strict_device, strict_available

import xsvd
from xsvd.core import backend

pytestmark = pytest.mark.skipif(not strict_available(), reason="needs array-api-strict")


def test_tracy_widom_of_a_device_result_equals_numpys():
    """It raised "Implicit conversion to a NumPy array is not allowed" on CuPy results."""
    pytest.importorskip("scipy")
    gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=120, n_populations=3)
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd.exact(dim="samples", center=True, weights=w)
    on_device = kept.copy(data=on_strict_device(kept.values.astype(np.float64)))
    res_d = on_device.svd.exact(dim="samples", center=True, weights=w)
    tw = xsvd.tracy_widom(res)
    backend.TRANSFERS.reset()
    tw_d = xsvd.tracy_widom(res_d)
    assert backend.TRANSFERS.count("to_host", larger_than=res.k) == 0  # no data-sized move
    np.testing.assert_allclose(tw_d.statistic.values, tw.statistic.values, rtol=1e-9)
    np.testing.assert_allclose(tw_d.p_value.values[:4], tw.p_value.values[:4], rtol=1e-6)
