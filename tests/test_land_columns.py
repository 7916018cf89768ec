"""Features missing at every sample (land) and other non-finite columns in the kernels.

The first pass finds NaN and inf columns from the column sums that a product gives
anyway, and looks only at those; later passes leave land out of the products (views of
the runs of ocean columns, or one gathered block when land is scattered), so it is
never read again. Checked against the exact SVD of the ocean-only matrix, on NumPy and
on Dask in both stripe orientations.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import xsvd
from xsvd.core.missing import InfiniteValueError, MissingValueError
from xsvd.core.randomized.solver import randomized_svd
from xsvd.core.randomized.stripe import add_product_without, clean_runs, t_product_without


def _field(m=120, n=700, seed=0, land="runs"):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, 6)) @ rng.standard_normal((6, n)) * 3
    a += 0.1 * rng.standard_normal((m, n))
    if land == "runs":  # continents: long runs of features
        nan = np.zeros(n, bool)
        nan[40:190] = nan[400:420] = nan[650:] = True
    else:  # scattered single features (dead stations)
        nan = rng.random(n) < 0.3
    a[:, nan] = np.nan
    return a, nan


def _exact(a, nan, k):
    ocean = a[:, ~nan]
    ocean = ocean - ocean.mean(axis=0)
    u, s, vt = np.linalg.svd(ocean, full_matrices=False)
    return s[:k], vt[:k]


def _inputs(a):
    m, n = a.shape
    return {
        "numpy": a,
        "dask features": da.from_array(a, chunks=(m, 160)),
        "dask samples": da.from_array(a, chunks=(40, n)),
    }


@pytest.mark.parametrize("land", ["runs", "scattered"])
@pytest.mark.parametrize("kind", ["numpy", "dask features", "dask samples"])
def test_land_left_out_agrees_with_the_ocean_only_svd(land, kind):
    a, nan = _field(land=land)
    s, vt = _exact(a, nan, 4)
    with xsvd.set_options(sub_block_elements=120 * 64):  # several sub-blocks per stripe
        d = randomized_svd(_inputs(a)[kind], 4, n_power_iter=4, center=True, seed=0)
    S, V = (np.asarray(x) for x in da.compute(d.S, d.V))
    np.testing.assert_allclose(S, s, rtol=1e-10)
    assert np.isnan(V[nan, :]).all()
    np.testing.assert_allclose(np.abs(V[~nan, :]), np.abs(vt.T), atol=1e-8)


def test_a_partly_missing_feature_is_named_among_land():
    a, nan = _field()
    a[7, 333] = np.nan  # one value of an ocean feature, in a later sub-block
    for x in _inputs(a).values():
        with xsvd.set_options(sub_block_elements=120 * 64):
            with pytest.raises(MissingValueError, match=r"1 feature\(s\): feature index 333\b"):
                d = randomized_svd(x, 3, n_power_iter=1, center=True, seed=0)
                da.compute(d.S)


def test_an_infinite_value_is_named_among_land():
    a, nan = _field()
    a[5, 222] = np.inf
    for x in _inputs(a).values():
        with pytest.raises(InfiniteValueError, match=r"feature index 222\b"):
            d = randomized_svd(x, 3, n_power_iter=1, center=True, seed=0)
            da.compute(d.S)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_magnitudes_beyond_the_squares_range_with_land(scale):
    # the sums of squares overflow (or underflow): magnitudes are measured exactly there,
    # the data rescaled, and the result is the scaled result
    a, nan = _field()
    s, _ = _exact(a, nan, 3)
    for x in _inputs(a * scale).values():
        d = randomized_svd(x, 3, n_power_iter=4, center=True, seed=0, compute=True)
        np.testing.assert_allclose(np.asarray(d.S) / scale, s, rtol=1e-9)


@pytest.mark.parametrize("rate", [0.002, 0.2])  # few features flagged, or most
def test_mean_fill_of_flagged_features(rate):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((150, 5)) @ rng.standard_normal((5, 400)) + np.linspace(0, 3, 400)
    a += 0.01 * rng.standard_normal(a.shape)
    a[rng.random(a.shape) < rate] = np.nan
    filled = np.where(np.isnan(a), np.nanmean(a, axis=0), a)
    want = np.linalg.svd(filled - filled.mean(axis=0), compute_uv=False)[:4]
    for x in (a, da.from_array(a, chunks=(150, 100))):  # stripes of features
        with xsvd.set_options(sub_block_elements=150 * 64):
            d = randomized_svd(x, 4, n_power_iter=5, center=True, missing="mean", seed=0)
        np.testing.assert_allclose(np.asarray(da.compute(d.S)[0]), want, rtol=1e-10)


def test_products_without_skipped_columns():
    rng = np.random.default_rng(1)
    sub = rng.standard_normal((30, 50))
    w, t = rng.standard_normal((30, 4)), rng.standard_normal((50, 4))
    for skip in (np.arange(50) % 7 == 0, (np.arange(50) > 10) & (np.arange(50) < 30)):
        bad = sub.copy()
        bad[:, skip] = np.nan  # never read
        clean = np.where(skip, 0.0, sub)
        acc = np.ones((30, 4))
        add_product_without(acc, bad, t, skip)
        np.testing.assert_allclose(acc, 1 + clean @ t, atol=1e-12)
        np.testing.assert_allclose(t_product_without(bad, w, skip), clean.T @ w, atol=1e-12)
    assert clean_runs(np.array([True, False, False, True, False])) == [(1, 3), (4, 5)]


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_later_passes_center_without_cancellation(offset):
    # stripes of samples in float64: a mean that is small next to the spread is taken off
    # by a rank-one correction (no sweep); a large one is subtracted from each sub-block,
    # where the correction would cancel (it lost 15x accuracy at a mean of 1e6 x spread)
    rng = np.random.default_rng(0)
    m, n = 2000, 300
    a = rng.standard_normal((m, 5)) @ rng.standard_normal((5, n))
    a += 0.01 * rng.standard_normal((m, n)) + offset * (1 + rng.random(n))
    c = a - a.mean(axis=0)
    s = np.linalg.svd(c, compute_uv=False)[:8]
    d = randomized_svd(a, 8, n_power_iter=6, center=True, seed=0)
    assert np.max(np.abs(np.asarray(d.S) - s) / s) < 1e-2
    assert np.max(np.abs(np.asarray(d.S[:5]) - s[:5]) / s[:5]) < 1e-9
