"""Trust, round three (issue 31, items 2-4 and 8's advice) for MCA and extended EOF.

Each case against a dense NumPy truth computed here: the cross-covariance
``Bl^T Br / (n - 1)`` formed and decomposed by ``numpy.linalg.svd`` (MCA), the
lag-embedded matrix formed explicitly (extended EOF), on every backend:

- ``standardize=True`` with a constant feature whose value is not exact in
  binary (sea ice at -1.8): the feature is constant by the one rule of
  ``docs/input-rules.md`` (weight 0), and its correlation maps are NaN, as
  :func:`xsvd.correlation_maps` gives;
- ``inf`` anywhere is an :class:`xsvd.InfiniteValueError` naming the feature;
- data of extreme magnitude (float32 at 1e20 and 1e-25, near its largest value
  and subnormal, float64 at 1e200, 1e-170 and 1e+-150 in both fields): ``S``
  and the squared covariance fractions / variance ratios right;
- the advice for misaligned fields, followed as written, gives the MCA of the
  common samples on each field's full grid.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import xsvd

EPS64 = float(np.finfo(np.float64).eps)


def _rule_scale(a: np.ndarray) -> np.ndarray:
    """1 / std (ddof=0), 0 for a feature constant by the rule of docs/input-rules.md."""
    x = a.astype(np.float64)
    eps = float(np.finfo(a.dtype).eps) if a.dtype.kind == "f" else EPS64
    std, top = x.std(0), np.abs(x).max(0)
    varies = std > max(4 * eps, x.shape[0] * EPS64) * top
    return np.where(varies, 1 / np.where(varies, std, 1), 0.0)


def _mca_truth(left, right, *, standardize=False):
    """Singular values and squared covariance fractions of the formed cross-covariance."""
    bl, br = (a.astype(np.float64) - a.astype(np.float64).mean(0) for a in (left, right))
    if standardize:
        bl, br = bl * _rule_scale(left), br * _rule_scale(right)
    s = np.linalg.svd(bl.T @ br / (left.shape[0] - 1), compute_uv=False)
    return s, (s / np.linalg.norm(s)) ** 2


def _field(a, dim: str, backend):
    coords = {"time": np.arange(a.shape[0]), dim: np.arange(a.shape[1])}
    return xr.DataArray(backend(a), dims=("time", dim), coords=coords)


def _host(x) -> np.ndarray:
    from xsvd.core import backend as core_backend

    return np.asarray(core_backend.to_numpy(x.data), dtype=float)


def _coupled(seed, m, a, b):
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((m, 3)) * np.array([3.0, 1.5, 0.7])
    left = common @ rng.standard_normal((3, a)) + rng.standard_normal((m, a))
    right = common @ rng.standard_normal((3, b)) + rng.standard_normal((m, b))
    return left, right


def _solve(method):
    return {"method": method, **({"seed": 0} if method == "compressed" else {})}


# ------------------------------------------------ item 2: constant features, one rule


@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_mca_standardize_leaves_an_inexact_constant_out(backend, method):
    """Sea ice fixed at -1.8 (not exact in binary) in both fields, 333 x 8 and 333 x 5: it
    was weighted 1 / 1e-16 and turned rounding into the leading modes (S = [0.2928,
    0.2707] where the truth is [0.2894, 0.1732])."""
    left, right = _coupled(3, 333, 8, 5)
    left[:, 2], right[:, 4] = -1.8, -1.8
    want, frac = _mca_truth(left, right, standardize=True)
    res = xsvd.mca(
        _field(left, "x", backend), _field(right, "y", backend), 2, standardize=True,
        **_solve(method),
    )  # fmt: skip
    np.testing.assert_allclose(_host(res.S), want[:2], rtol=1e-8)
    np.testing.assert_allclose(_host(res.squared_covariance_fraction), frac[:2], rtol=1e-8)
    assert np.abs(_host(res.left_patterns)[:, 2]).max() < 1e-12  # weight 0: out of the solve
    # the constant features' correlation maps are NaN, as correlation_maps gives
    hom_l, hom_r = res.homogeneous_maps()
    het_l, het_r = res.heterogeneous_maps()
    for got, j in ((hom_l, 2), (het_l, 2), (hom_r, 4), (het_r, 4)):
        values = _host(got)
        assert np.isnan(values[:, j]).all(), values[:, j]
        assert np.isfinite(np.delete(values, j, axis=1)).all()


def test_mca_maps_of_a_constant_feature_are_nan_as_correlation_maps(backend):
    """Without standardize, too: the map of a constant is NaN, the others are the dense
    correlations of each field with the scores."""
    left, right = _coupled(4, 120, 6, 4)
    left[:, 1] = 0.1
    res = xsvd.mca(_field(left, "x", backend), _field(right, "y", backend), 2, seed=0)
    hom_l, _ = res.homogeneous_maps()
    scores = _host(res.left_scores)
    plain = xr.DataArray(left, dims=("time", "x"), coords={"time": np.arange(120)})
    eof_maps = xsvd.svd(plain, k=2, dim="time", center=True).correlation_maps(plain)
    got = _host(hom_l)
    assert np.isnan(got[:, 1]).all() and np.isnan(eof_maps.values[:, 1]).all()
    want = np.corrcoef(np.concatenate([scores, left], axis=1).T)[:2, 2:]
    np.testing.assert_allclose(np.delete(got, 1, axis=1), np.delete(want, 1, axis=1), atol=1e-10)


# ------------------------------------------------------------------ item 3: inf


@pytest.mark.parametrize("shape", [(30, 20, 10), (6, 3, 2), (5, 2, 2)])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_inf_is_refused_naming_the_feature(backend, shape, sign):
    """S = [0, 0] with finite patterns, or a LinAlgError on small fields, once; now the
    core's InfiniteValueError, naming the feature and the field."""
    m, a, b = shape
    left, right = _coupled(5, m, a, b)
    left[1, a - 1] = sign * np.inf
    fl, fr = _field(left, "x", backend), _field(right, "y", backend)
    for call in (
        lambda: xsvd.mca(fl, fr, 1, seed=0),
        lambda: xsvd.mca(fr, fl, 1, method="exact"),
        lambda: xsvd.extended_eof(fl, 1, embedding=2, seed=0),
        lambda: xsvd.extended_eof(fl, 1, embedding=2, method="exact"),
    ):
        with pytest.raises(xsvd.InfiniteValueError, match=rf"x={a - 1}|x\[{a - 1}\]"):
            call()


# ------------------------------------------------------------- item 4: magnitudes


@pytest.mark.parametrize(
    "dtype, scale_left, scale_right",
    [
        ("float32", 1e20, 1e20),  # S 1e40: beyond float32, once S = [0, 0]
        ("float32", 1e-25, 1e-25),  # once off by 1e9x
        ("float64", 1e200, 1.0),
        ("float64", 1e-170, 1.0),
        ("float32", 1e37, 1.0),  # near float32's largest: the products of the data overflow
        ("float32", 1e-40, 1.0),  # subnormal float32
        ("float64", 1e150, 1e150),  # ||C||_F**2 beyond float64: the fractions were 0
        ("float64", 1e-150, 1e-150),  # ... or inf
    ],
)
@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_mca_at_extreme_magnitudes(backend, dtype, scale_left, scale_right, method):
    left, right = _coupled(6, 90, 12, 9)
    want, frac = _mca_truth(left, right)
    res = xsvd.mca(
        _field((left * scale_left).astype(dtype), "x", backend),
        _field((right * scale_right).astype(dtype), "y", backend),
        2,
        **_solve(method),
    )
    rtol = 1e-5 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(_host(res.S) / scale_left / scale_right, want[:2], rtol=rtol)
    np.testing.assert_allclose(_host(res.squared_covariance_fraction), frac[:2], rtol=rtol)
    assert np.isfinite(_host(res.left_scores)).all()


def _embedded(x, L, tau):
    n = x.shape[0] - (L - 1) * tau
    e = np.concatenate([x[j * tau : j * tau + n] for j in range(L)], axis=1)
    return e - e.mean(0)


@pytest.mark.parametrize(
    "dtype, scale",
    [
        ("float64", 1e170),
        ("float64", 1e-170),
        ("float32", 1e20),
        ("float32", 1e-25),
        ("float32", 1e37),
        ("float32", 1e-40),
    ],
)
@pytest.mark.parametrize("method", ["compressed", "exact"])
def test_extended_eof_at_extreme_magnitudes(backend, dtype, scale, method):
    """S = 0 and ratios 0 or NaN at 1e+-170 once: the lagged sums of squares overflowed."""
    x, _ = _coupled(7, 70, 6, 1)
    s = np.linalg.svd(_embedded(x, 3, 2), compute_uv=False)
    res = xsvd.extended_eof(
        _field((x * scale).astype(dtype), "x", backend), 3, embedding=3, tau=2, **_solve(method)
    )
    rtol = 1e-5 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(_host(res.S) / scale, s[:3], rtol=rtol)
    np.testing.assert_allclose(
        _host(res.explained_variance_ratio), s[:3] ** 2 / np.sum(s**2), rtol=rtol
    )


# ------------------------------------------------- item 8: the advice, followed


def test_misaligned_fields_advice_aligns_the_samples_only():
    """The advice was `xr.align(left, right, join='inner')`, which also intersects lat/lon
    of two grids that share dim names (a 1-degree field cut to the 2-degree points)."""
    rng = np.random.default_rng(8)
    fine = xr.DataArray(
        rng.standard_normal((40, 5, 6)),
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(40), "lat": np.arange(5.0), "lon": np.arange(6.0)},
    )
    coarse = xr.DataArray(
        rng.standard_normal((30, 3, 3)) + fine.values[5:35, ::2, ::2],
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(5, 35), "lat": np.arange(0.0, 5, 2), "lon": np.arange(0.0, 6, 2)},
    )
    common = slice(5, 35)
    want = xsvd.mca(fine.isel(time=common), coarse, 2, method="exact")
    shifted = coarse.isel(time=slice(0, 30)).assign_coords(time=np.arange(10, 40))
    for left, right in ((fine, coarse), (fine.isel(time=slice(0, 30)), shifted)):
        with pytest.raises(ValueError, match="xr.align") as err:
            xsvd.mca(left, right, 2, method="exact")
        advice = re.search(r"`(left, right = xr\.align\(.*?\))`", str(err.value)).group(1)
        scope = {"xr": xr, "left": left, "right": right}
        exec(advice, scope)  # the advice, as written
        assert scope["left"].sizes["lat"] == 5 and scope["right"].sizes["lat"] == 3
        got = xsvd.mca(scope["left"], scope["right"], 2, method="exact")
        if left is fine:
            np.testing.assert_allclose(got.S.values, want.S.values, rtol=1e-12)
        else:
            times = np.arange(10, 30)
            ref = xsvd.mca(fine.sel(time=times), shifted.sel(time=times), 2, method="exact")
            np.testing.assert_allclose(got.S.values, ref.S.values, rtol=1e-12)


@pytest.mark.parametrize("bad", [True, 2.0, "3"])
def test_k_and_embedding_refuse_booleans_and_non_integers(bad):
    """Issue 31, item 7: ``k=True`` (or ``embedding=True``) ran with k = 1; now a TypeError."""
    rng = np.random.default_rng(0)
    a = xr.DataArray(rng.standard_normal((40, 6)), dims=("time", "x"))
    b = xr.DataArray(rng.standard_normal((40, 5)), dims=("time", "y"))
    with pytest.raises(TypeError, match="positive integer"):
        xsvd.mca(a, b, bad, dim="time")
    with pytest.raises(TypeError, match="k must be a positive integer"):
        xsvd.extended_eof(a, bad, embedding=3, dim="time")
    with pytest.raises(TypeError, match="embedding must be a positive integer"):
        xsvd.extended_eof(a, 2, embedding=bad, dim="time")
