"""Float32 data far from zero (kelvin), centered, compressed (issue 31, item 1).

Temperatures stored in kelvin as float32 have means 1e4-1e6 times their spread.
Centering must not cancel in float32 products: over stripes of samples and of
features, the singular values must be those of ``numpy.linalg.svd`` of the
float64 centered matrix to float32's precision, the error estimates never below
the true errors, no larger than for the same data without the offset (so that
the adaptive default stops when it can), and within 100x of the true errors
(see :func:`test_float32_offset_estimates_within_100x`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import matrix_with_spectrum

from xsvd.linalg import randomized_svd

SPECTRUM = np.r_[200.0, 150.0, 100.0, np.full(27, 1.0)]
EPS32 = float(np.finfo(np.float32).eps)
#: The typical rounding error of a singular value from float32 products, in units of
#: ``eps s_1``: the median over the sweep of ``benchmarks/float32_floor.py`` was 0.05
#: (``benchmarks/results/float32-floor.md``); a true error below it is partly luck.
TYPICAL_ROUNDING = 0.05


def _field(seed: int, ratio: float, wide: bool, land: bool = False):
    """240 samples x 30 features (or its transpose), offsets ``ratio`` times the spread."""
    base = matrix_with_spectrum(SPECTRUM, 240, 30, seed=seed)
    base = base.T if wide else base
    rng = np.random.default_rng(seed)
    a = (base + ratio * base.std() * (1 + rng.random(base.shape[1]))).astype(np.float32)
    if land:
        a[:, [2, 5, 6]] = np.nan
    return a


def _truth(a, k: int = 3):
    B = a.astype(np.float64)
    B = B[:, ~np.isnan(B).any(axis=0)]
    B = B - B.mean(axis=0)
    return np.linalg.svd(B, compute_uv=False)[:k], (B**2).sum()


def _run(backend, a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        d = randomized_svd(backend(a), 3, center=True, seed=0, compute=True)
    S, errors, total = backend.host(d.S, d.errors, d.total_ss)
    return d, S, errors[:, 0], float(total)


@pytest.mark.parametrize("ratio", [1e4, 1e5, 1e6])
@pytest.mark.parametrize("wide", [False, True], ids=["tall", "wide"])
@pytest.mark.parametrize("seed", [0, 1])
def test_float32_offset_centered(backend, seed, wide, ratio):
    a = _field(seed, ratio, wide)
    S0, total0 = _truth(a)
    d, S, est, total = _run(backend, a)
    err = np.abs(S - S0)
    assert (est >= err).all(), (d.settings["stripes"], est / S0, err / S0)
    # no worse than the same data without the offset: float32 products' own floor
    _, _, plain, _ = _run(backend, _field(seed, 0.0, wide))
    assert (est <= 100 * np.maximum(err, plain)).all(), (est / S0, err / S0, plain / S0)
    np.testing.assert_allclose(S, S0, rtol=1e-5)
    np.testing.assert_allclose(total, total0, rtol=1e-5)


@pytest.mark.parametrize("wide", [False, True], ids=["tall", "wide"])
def test_float32_offset_with_land(backend, wide):
    """Features missing at every sample (land) keep their NaN; the others are right."""
    a = _field(0, 1e5, wide, land=True)
    S0, total0 = _truth(a)
    d, S, est, total = _run(backend, a)
    assert (est >= np.abs(S - S0)).all()
    np.testing.assert_allclose(S, S0, rtol=1e-5)
    np.testing.assert_allclose(total, total0, rtol=1e-5)
    V = backend.host(d.V)
    assert np.isnan(V[[2, 5, 6]]).all() and np.isfinite(np.delete(V, [2, 5, 6], 0)).all()


@pytest.mark.parametrize("wide", [False, True], ids=["tall", "wide"])
def test_float32_offset_estimates_within_100x(backend, wide):
    """The S-error estimates are within 100x of the true errors, counted two ways.

    Rounding errors are random: one component's true error may cancel to far
    below its typical size by luck, and no estimate can follow that. So every
    estimate is at most 100x the larger of its true error and the typical
    rounding error of a float32 singular value (``TYPICAL_ROUNDING eps s_1``,
    measured by ``benchmarks/float32_floor.py``); and the median of estimate /
    true error over the 3 components of 4 seeds and the offsets 1e4, 1e5 and 1e6
    (36 ratios) is at most 250. That median depends on the start block: with
    ``seed=0`` it is 85 and 95 (tall and wide) on NumPy, 18 to 114 on Dask, whose
    stripes round differently; over the start seeds 0 to 29 it ranged 75 to 206 on
    NumPy and 11 to 169 on Dask (150, the bound before, failed for 10 of those 180
    draws). Before the floor of float32 products was measured (``ROUNDING eps s_1^2 /
    (2 s_j)`` then) the median was 800 to 1,000 and the estimates up to 1,070x the
    typical rounding (now 80x).
    """
    ratios = []
    for ratio in (1e4, 1e5, 1e6):
        for seed in range(4):
            a = _field(seed, ratio, wide)
            S0, _ = _truth(a)
            d, S, est, _ = _run(backend, a)
            err = np.abs(S - S0)
            assert (est >= err).all(), (d.settings["stripes"], est / S0, err / S0)
            noise = TYPICAL_ROUNDING * EPS32 * S0[0]
            assert (est <= 100 * np.maximum(err, noise)).all(), (est / noise, err / noise)
            ratios.append(est / err)
    assert np.median(np.concatenate(ratios)) <= 250, np.round(np.concatenate(ratios))
