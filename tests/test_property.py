"""Property test: any input gives the SVD of the matrix it stands for, or a documented error.

Hypothesis draws shapes, dtypes (uint8, int64, float16/32/64), magnitudes
(1e-30 to 1e30 where the dtype holds them), NaN patterns, chunkings,
weights, centering, the solver and ``missing=``. Every run is checked against
``numpy.linalg.svd`` of the same matrix prepared by hand in float64 (missing
values filled or zeroed by the documented rule, centered, weighted): the
singular values agree to the precision of the products' dtype, or xsvd
raised one of its documented exceptions with a message naming the cause.
The examples are derandomized (the same every run) and bounded so the suite
stays fast.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

hypothesis = pytest.importorskip("hypothesis", reason="the property test needs hypothesis")
st = hypothesis.strategies

#: log10 of the magnitudes drawn per dtype (what the dtype holds without overflow)
EXPONENTS = {
    "uint8": (0, 2),
    "int64": (0, 17),
    "float16": (-3, 3),
    "float32": (-30, 30),
    "float64": (-30, 30),
}


@st.composite
def cases(draw):
    m = draw(st.integers(2, 36))
    n = draw(st.integers(2, 28))
    dtype = draw(st.sampled_from(list(EXPONENTS)))
    exponent = draw(st.integers(*EXPONENTS[dtype]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    rank = draw(st.integers(1, min(m, n)))
    base = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    base += 0.1 * rng.standard_normal((m, n))
    base *= 10.0**exponent
    if dtype == "uint8":
        a = np.clip(np.abs(base), 0, 255).astype(np.uint8)
    elif dtype == "int64":
        a = base.astype(np.int64)
    else:
        with np.errstate(over="ignore"):
            a = base.astype(dtype)
    nan = (
        "none"
        if dtype in ("uint8", "int64")
        else draw(st.sampled_from(["none", "features", "scattered"]))
    )
    if nan == "features":
        a[:, rng.random(n) < 0.3] = np.nan
    elif nan == "scattered":
        a[rng.random((m, n)) < 0.1] = np.nan
    return dict(
        a=a,
        center=draw(st.booleans()),
        weights=rng.uniform(0.1, 10.0, n) if draw(st.booleans()) else None,
        method=draw(st.sampled_from(["exact", "compressed"])),
        missing=draw(st.sampled_from(["error", "mean"])),
        k=draw(st.integers(1, min(m, n))),
        chunks=draw(st.sampled_from([None, "samples", "features", "both"])),
    )


def prepared(a, center, weights, missing):
    """The matrix xsvd decomposes, by hand (float64), and whether it is an error."""
    b = a.astype(np.float64)
    if np.isinf(b).any():
        return None, xsvd.InfiniteValueError
    mask = np.isnan(b)
    if missing == "mean" and a.dtype.kind == "i":
        mask |= b < 0
    all_missing = mask.all(axis=0)
    partial = mask.any(axis=0) & ~all_missing
    if missing == "error" and partial.any():
        return None, xsvd.MissingValueError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an all-missing column
        fill = np.where(all_missing, 0.0, np.nanmean(np.where(mask, np.nan, b), axis=0))
    b = np.where(mask, fill, b)
    b[:, all_missing] = 0.0
    if center:
        b = b - b.mean(axis=0)
        b[:, all_missing] = 0.0
    if weights is not None:
        b = b * weights
    return b, None


def product_eps(a, method) -> float:
    if method == "exact":
        return np.finfo(np.float32 if a.dtype == np.float32 else np.float64).eps
    return np.finfo(np.float64 if a.dtype == np.float64 else np.float32).eps


@hypothesis.settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
)
@hypothesis.given(cases())
def test_any_input_gives_the_svd_or_a_documented_error(case):
    a, k, method = case["a"], case["k"], case["method"]
    m, n = a.shape
    da = xr.DataArray(a, dims=("s", "f"), coords={"f": np.arange(n)})
    if case["chunks"] is not None:
        da = da.chunk(
            {
                "samples": {"s": max(1, m // 3)},
                "features": {"f": max(1, n // 3)},
                "both": {"s": max(1, m // 2), "f": max(1, n // 2)},
            }[case["chunks"]]
        )
    w = None if case["weights"] is None else xr.DataArray(case["weights"], dims="f")
    b, error = prepared(a, case["center"], case["weights"], case["missing"])
    kw = dict(dim="s", center=case["center"], weights=w, missing=case["missing"])
    if method == "compressed":  # a sketch as wide as the matrix: exact up to rounding
        kw.update(method="compressed", n_oversamples=min(m, n), seed=0)
    else:
        kw.update(method="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "numerical rank" of low-rank draws
        if error is not None:
            with pytest.raises(error, match=r"feature"):
                xsvd.svd(da, k, **kw)
            return
        res = xsvd.svd(da, k, **kw)
    s = np.linalg.svd(b, compute_uv=False)[:k]
    S = res.S.values
    assert np.isfinite(S).all() and np.isfinite(res.U.values).all()
    # rounding in the products' dtype; the Gram step keeps sqrt(eps) of sigma_1
    tol = 50 * np.sqrt(product_eps(a, method)) * max(s[0], np.finfo(float).tiny)
    np.testing.assert_allclose(S, s, rtol=0, atol=tol)
    if s[0] > 0 and method == "exact":
        np.testing.assert_allclose(S[:1], s[:1], rtol=1e-3)
