"""The bootstrap reads through the core (issues 29 and 31): infinite values, magnitudes of
any size, and Dask chunks read one at a time in either orientation.

Every number is checked against a dense NumPy truth: the SVD of the explicitly
resampled (and re-centered) data of each replicate.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray

import xsvd
from xsvd.core import backend as core_backend

M, NF, K, N = 40, 30, 2, 3


def _values(seed=0, land=True):
    """Two clear components (variances 400 and 100) on small noise, one feature of land."""
    rng = np.random.default_rng(seed)
    X = (
        20 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + 10 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + 0.5 * rng.standard_normal((M, NF))
        + 3.0
    )
    if land:
        X[:, 4] = np.nan
    return X


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(a.shape[0])})


def _truth(X, counts, center=True, weights=None):
    """Singular values and explained variance ratios of each replicate, by explicit
    resampling: dense NumPy in float64, land left out."""
    X = np.asarray(X, dtype=np.float64)
    ocean = ~np.isnan(X).all(axis=0)
    S, ratio = [], []
    for c in counts:
        R = X[np.repeat(np.arange(X.shape[0]), c)][:, ocean]
        if center:
            R = R - R.mean(axis=0)
        if weights is not None:
            R = R * weights[ocean]
        s = np.linalg.svd(R, compute_uv=False)
        S.append(s[:K])
        top = s[0]  # variance ratios from the scaled values: in range at any magnitude
        ratio.append((s[:K] / top) ** 2 / ((s / top) ** 2).sum())
    return np.array(S), np.array(ratio)


def _check(got, X, rtol, center=True, weights=None):
    counts = core_backend.to_numpy(got.counts.data).reshape(N, M)
    want_S, want_ratio = _truth(X, np.r_[np.ones((1, M), int), counts], center, weights)
    S = core_backend.to_numpy(got.S.data)
    rep_S = core_backend.to_numpy(got.replicate_singular_values.data)
    np.testing.assert_allclose(np.r_[S[None, :], rep_S], want_S, rtol=rtol)
    ratio = core_backend.to_numpy(got.explained_variance_ratio.data)
    rep_ratio = core_backend.to_numpy(got.replicate_explained_variance_ratio.data)
    np.testing.assert_allclose(np.r_[ratio[None, :], rep_ratio], want_ratio, rtol=rtol)


def test_infinite_values_are_named_on_every_backend(backend):
    """Issue 31, item 3: an inf gave all-NaN results (or LinAlgError) without naming it."""
    X = _values()
    X[3, 7] = np.inf
    X[9, 12] = -np.inf
    with pytest.raises(xsvd.InfiniteValueError, match=r"2 feature\(s\): \(x\[7\]\), \(x\[12\]\)"):
        xsvd.bootstrap(_labeled(backend(X)), K, N, dim="time", seed=0)


@pytest.mark.parametrize(
    ("scale", "dtype"),
    [(1e170, np.float64), (1e-170, np.float64), (1e20, np.float32), (1e-25, np.float32)],
)
def test_magnitudes_of_any_size_on_every_backend(backend, scale, dtype):
    """Issue 31, item 4: at 1e+-170 the bootstrap gave S = 0 and NaN ratios (or
    LinAlgError); now as at 1, against explicit resampling, weights too."""
    X = (_values() * scale).astype(dtype)
    w = np.linspace(0.5, 2.0, NF)
    got = xsvd.bootstrap(
        _labeled(backend(X)), K, N, dim="time", seed=1, weights=xr.DataArray(w, dims="x")
    )
    _check(got, X, 1e-6, weights=w)
    V = core_backend.to_numpy(got.V.transpose("x", "component").data)
    assert np.isnan(V[4]).all() and np.isfinite(np.delete(V, 4, axis=0)).all()


@pytest.mark.filterwarnings("ignore:center=False")  # uncentered on purpose: the mean's share
@pytest.mark.parametrize("center", [True, False])
def test_stripes_of_samples_and_of_features_agree_with_the_truth(backend, center):
    """Both orientations (two reads per pass over stripes of samples, one over stripes of
    features) give the replicates of explicit resampling, centered or not."""
    X = _values() + 1e4  # a large offset: centering must not cancel
    got = xsvd.bootstrap(_labeled(backend(X)), K, N, dim="time", seed=2, center=center)
    _check(got, X, 1e-7, center=center)


@pytest.mark.parametrize("chunks", [(5, NF), (M, 6)])
def test_dask_chunks_are_read_one_at_a_time(chunks):
    """Issue 29: Dask data chunked along the samples were rechunked to every sample in one
    chunk (the whole field alive at once: 1.75 GB for a 0.30 GB field); now each chunk is
    read, multiplied and let go, in either orientation."""
    import dask
    import dask.array as da

    source = CountingArray(_values())
    arr = da.from_array(source, chunks=chunks, asarray=False)
    with dask.config.set(scheduler="synchronous"):
        got = xsvd.bootstrap(_labeled(arr), K, N, dim="time", seed=0)
    assert source.max_live <= 2 < arr.npartitions
    _check(got, source.data, 1e-7)


def test_default_batches_bound_the_krylov_spaces(monkeypatch):
    """Without ``batch``, as many replicates per batch as fit ``BATCH_BYTES`` (100
    replicates of a large field held 2 * 101 x samples x 20 x 9 float64 numbers at once);
    the replicates are the same either way."""
    import xsvd.climate.bootstrap as boot

    X = _values()
    whole = xsvd.bootstrap(_labeled(X), K, N, dim="time", seed=3, n_power_iter=3)
    monkeypatch.setattr(boot, "BATCH_BYTES", 3 * 8 * 12 * 2 * 4 * M)  # 3 replicates of 12
    split = xsvd.bootstrap(_labeled(X), K, N, dim="time", seed=3, n_power_iter=3)
    assert whole.settings["reads"] == 5 and split.settings["reads"] == 10  # 2 batches
    _check(split, X, 1e-7)
    np.testing.assert_allclose(split.congruence, whole.congruence, atol=1e-8)
