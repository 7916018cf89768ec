"""Property test: any input gives the SVD of the matrix it stands for, or a documented error.

Hypothesis draws shapes, dtypes (uint8, int64, float16/32/64), magnitudes,
NaN patterns, chunkings (NumPy or Dask), size-1 feature dimensions, weights,
centering, ``standardize``, the solver and ``missing=``. The magnitudes are
one of

- one magnitude for the whole matrix, over what the dtype holds (float32
  1e-37 to 1e37, float64 1e-300 to 1e300);
- a magnitude per feature spanning the dtype's range within one matrix
  (float32 1e-30 to 1e30, float64 1e-150 to 1e150, int64 1 to 1e17);
- subnormal features (float64 ~1e-310, float32 ~1e-42, float16 ~1e-6),
  some or all of them;

with constant features whose value is not exact in binary (0.1, -1.8 times
the feature's magnitude), and weights that are none, random, ``1 /
magnitude`` (balancing the features), or invalid (a negative weight, NaN).
The compressed solver runs with a sketch as wide as the matrix (exact up to
rounding) or a narrow one (few oversamples and passes: approximate).

Every run is checked against ``numpy.linalg.svd`` of the same matrix
prepared by hand in float64 (missing values filled or zeroed by the
documented rule, centered, standardized with rounding-noise-constant
features at weight 0, weighted):

- the singular values agree to the precision of the products' dtype (a
  narrow sketch: to within its own error estimates), and
  ``explained_variance_ratio`` and ``total_variance`` agree where float64
  holds them;
- the compressed solver's error estimates (``res.errors``: ``S`` and the
  vectors' ``angle``) are never below the true error, unless the result
  flags that they are not bounds;
- the labels keep every dimension of the input (size 1 included);

or xsvd raised one of its documented exceptions with a message naming the
cause (invalid weights: a ``ValueError`` naming the coordinate; a narrow
sketch may be refused with a ``ValueError`` naming ``n_oversamples`` or
``n_power_iter``). The examples are derandomized (the same every run) and bounded so the
suite stays fast; the issue's own cases are explicit examples.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

hypothesis = pytest.importorskip("hypothesis", reason="the property test needs hypothesis")
st = hypothesis.strategies

#: log10 of one magnitude for the whole matrix (what the dtype holds, to its edge)
WHOLE = {
    "uint8": (0, 2),
    "int64": (0, 17),
    "float16": (-3, 3),
    "float32": (-37, 37),
    "float64": (-300, 300),
}
#: log10 of per-feature magnitudes spanning the dtype's range within one matrix
SPREAD = {"int64": (0, 17), "float16": (-3, 3), "float32": (-30, 30), "float64": (-150, 150)}
#: log10 of a subnormal magnitude of each floating dtype
SUBNORMAL = {"float16": -6, "float32": -42, "float64": -310}
#: constant features: values not exact in binary, times the feature's magnitude
CONSTANTS = (0.1, -1.8)
#: a standard deviation at most this fraction of the feature's largest value is
#: rounding noise (a constant feature); the draws vary genuine features by far more
#: (1e-4 at least), constant ones by rounding only (1e-15), so any threshold between
#: the two gives the same prepared matrix
CONSTANT_RTOL = 1e-10
EPS64 = float(np.finfo(np.float64).eps)


def build(
    m,
    n,
    dtype,
    scales,
    seed,
    *,
    spectrum="lowrank",
    rank=None,
    const=(),
    nan="none",
    center=True,
    standardize=False,
    weighting=None,
    method="exact",
    sketch=None,
    missing="error",
    k=None,
    chunks=None,
    level=False,
):
    """One case: the data, and how to decompose them.

    ``scales``: log10 of each feature's magnitude (a vector of ``n``); ``const``:
    ``(feature, value)`` pairs made constant at ``value`` times their magnitude;
    ``spectrum``: "lowrank" (``rank`` plus noise), "geometric" or "gap" (at ``k``).
    """
    k = min(m, n) if k is None else k
    rng = np.random.default_rng(seed)
    r = min(m, n)
    if spectrum == "lowrank":  # rank `rank`, plus noise
        rank = r if rank is None else rank
        base = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
        base += 0.1 * rng.standard_normal((m, n))
    else:  # 0.8**j; or 1/(1+j) with a tiny gap (1e-3) after the k-th, or a cluster there
        j = np.arange(r)
        s = 0.8**j if spectrum == "geometric" else 1 / (1 + j)
        if spectrum == "gap":
            s[k:] = s[k - 1] * (1 - 1e-3) / np.sqrt(1 + j[k:] - k)
        elif spectrum == "cluster":  # 16 singular values within 1e-3 below the k-th, then less
            c = min(16, r - k)
            s[k : k + c] = s[k - 1] * (1 - 1e-3 * rng.random(c))
            s[k + c :] = s[k - 1] / 2 / np.sqrt(1 + j[k + c :] - k - c)
            s = np.sort(s)[::-1]
        s = s * np.sqrt(m * n / np.sum(s**2))  # entries of magnitude 1
        q1, q2 = (np.linalg.qr(rng.standard_normal((d, r)))[0] for d in (m, n))
        base = (q1 * s) @ q2.T
    mags = 10.0 ** np.asarray(scales, dtype=np.float64)
    for j, value in const:
        base[:, j] = value
    base *= mags
    if dtype == "uint8":
        a = np.clip(np.abs(base), 0, 255).astype(np.uint8)
    elif dtype == "int64":
        a = base.astype(np.int64)
    else:
        with np.errstate(over="ignore"):
            a = base.astype(dtype)
    if nan == "features":
        a[:, rng.random(n) < 0.3] = np.nan
    elif nan == "scattered":
        a[rng.random((m, n)) < 0.1] = np.nan
    if weighting == "random":
        weights = rng.uniform(0.1, 10.0, n)
    elif weighting == "balance":  # 1 / magnitude, as far as float64 holds it
        with np.errstate(over="ignore", divide="ignore"):
            weights = np.minimum(1.0 / mags, 1e300)
    elif weighting in ("negative", "nan"):
        weights = rng.uniform(0.1, 10.0, n)
        weights[rng.integers(n)] = -0.5 if weighting == "negative" else np.nan
    else:
        weights = None
    return dict(
        a=a,
        center=center,
        standardize=standardize,
        weights=weights,
        method=method,
        sketch=sketch,
        missing=missing,
        k=k,
        chunks=chunks,
        level=level,
    )


@st.composite
def cases(draw):
    m = draw(st.integers(2, 36))
    n = draw(st.integers(2, 28))
    dtype = draw(st.sampled_from(list(WHOLE)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed + 1)
    kinds = ["whole"] + (["spread"] if dtype in SPREAD else [])
    kinds += ["subnormal"] if dtype in SUBNORMAL else []
    kind = draw(st.sampled_from(kinds))
    if kind == "whole":
        scales = np.full(n, draw(st.integers(*WHOLE[dtype])), dtype=float)
    elif kind == "spread":  # the whole range within one matrix, its ends included
        lo, hi = SPREAD[dtype]
        scales = rng.uniform(lo, hi, n)
        scales[rng.permutation(n)[:2]] = (lo, hi)
    else:  # some or all features subnormal, the others of magnitude 1
        scales = np.where(rng.random(n) < draw(st.sampled_from([0.3, 1.0])), SUBNORMAL[dtype], 0.0)
    standardize = draw(st.booleans())
    n_const = draw(st.integers(0, 2))
    const = [(int(j), draw(st.sampled_from(CONSTANTS))) for j in rng.permutation(n)[:n_const]]
    floating = dtype not in ("uint8", "int64")
    weightings = [None, "random", "negative", "nan"] + ([] if standardize else ["balance"] * 3)
    method = draw(st.sampled_from(["exact", "compressed"]))
    sketch = None
    if method == "compressed" and draw(st.booleans()):
        sketch = dict(
            n_oversamples=draw(st.sampled_from([0, 1, 3, 5, 10])),
            n_power_iter=draw(st.sampled_from([0, 1, 2, 3, 4])),
            krylov=draw(st.booleans()),
        )
    return build(
        m,
        n,
        dtype,
        scales,
        seed,
        spectrum=draw(st.sampled_from(["lowrank", "lowrank", "geometric", "gap", "cluster"])),
        rank=draw(st.integers(1, min(m, n))),
        const=const,
        nan=draw(st.sampled_from(["none", "features", "scattered"])) if floating else "none",
        center=draw(st.booleans()),
        standardize=standardize,
        weighting=draw(st.sampled_from(weightings)),
        method=method,
        sketch=sketch,
        missing=draw(st.sampled_from(["error", "mean"])),
        k=draw(st.integers(1, min(m, n))),
        chunks=draw(st.sampled_from([None, "samples", "features", "both"])),
        level=draw(st.booleans()),
    )


def prepared(a, case):
    """The matrix xsvd decomposes, by hand (float64), or the error it must raise."""
    w = case["weights"]
    if w is not None and not (np.isfinite(w) & (w >= 0)).all():  # naming the coordinate
        j = int(np.flatnonzero(~(np.isfinite(w) & (w >= 0)))[0])
        return None, (ValueError, rf"weight.*\bf={j}\b")
    b = a.astype(np.float64)
    if np.isinf(b).any():
        return None, (xsvd.InfiniteValueError, r"feature")
    mask = np.isnan(b)
    if case["missing"] == "mean" and a.dtype.kind == "i":
        mask |= b < 0
    all_missing = mask.all(axis=0)
    partial = mask.any(axis=0) & ~all_missing
    present = np.where(mask, np.nan, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # statistics of all-missing columns
        fill = np.where(all_missing, 0.0, np.nanmean(present, axis=0))
        size = np.nanmax(np.abs(present), axis=0)
        scale = np.where(size > 0, size, 1.0)  # clear of overflow and underflow
        std = scale * np.nanstd(present / scale, axis=0)
    if case["standardize"]:  # a standard deviation at rounding level is zero: weight 0
        genuine = np.isfinite(std) & (std > CONSTANT_RTOL * size)
        with np.errstate(divide="ignore", over="ignore"):
            inv = np.where(genuine, 1.0 / np.where(genuine, std, 1.0), 0.0)
        if not np.isfinite(inv).all():  # subnormal deviations: 1 / std beyond float64
            return None, (ValueError, r"standardize=True.*standard deviation")
        w = inv if w is None else w * inv
    if case["missing"] == "error" and partial.any():
        return None, (xsvd.MissingValueError, r"feature")
    b = np.where(mask, fill, b)
    b[:, all_missing] = 0.0
    if case["center"]:
        b = b - b.mean(axis=0)
        b[:, all_missing] = 0.0
    if w is not None:
        b = b * w
    return b, None


def product_eps(a, method) -> float:
    if method == "exact":
        return np.finfo(np.float32 if a.dtype == np.float32 else np.float64).eps
    return np.finfo(np.float64 if a.dtype == np.float64 else np.float32).eps


def labeled(case) -> xr.DataArray:
    a = case["a"]
    m, n = a.shape
    da = xr.DataArray(a, dims=("s", "f"), coords={"f": np.arange(n)})
    if case["level"]:  # a size-1 feature dimension, as a single pressure level
        da = da.expand_dims(level=[850.0], axis=2)
    if case["chunks"] is not None:
        da = da.chunk(
            {
                "samples": {"s": max(1, m // 3)},
                "features": {"f": max(1, n // 3)},
                "both": {"s": max(1, m // 2), "f": max(1, n // 2)},
            }[case["chunks"]]
        )
    return da


def flagged_not_bounds(res) -> bool:
    """Whether the result says its error estimates are not bounds (issue 20, item 10)."""
    flagged = res.settings.get("error_bounds", True) is False
    assert flagged == (res.errors.attrs.get("error_bounds", 1) == 0), "flags disagree"
    return flagged


def angles(X, X_true) -> np.ndarray:
    c = np.sum(X * X_true, axis=0)
    return np.arcsin(np.clip(np.linalg.norm(X - X_true * np.sign(c), axis=0) / 2, 0, 1)) * 2


def check_estimates(res, s_all, u, vt, eps):
    """The compressed solver's estimates bound the true errors of S and of the vectors."""
    S = res.S.values
    k = S.size
    s = s_all[:k]
    est_s, est_a = res.errors["S"].values, res.errors["angle"].values
    # the rank cut: components below sqrt(max(eps, 50 eps64)) s_0 come back as zero
    kept = S > 0
    cut = 2 * np.sqrt(max(eps, 50 * EPS64)) * s[0]
    assert (s[~kept] <= cut).all(), ("a component above rounding was dropped", s, S)
    slack = 100 * EPS64 * s[0]  # the reference's own rounding (float64)
    true_s = np.abs(S - s)
    below = kept & (true_s > est_s + slack)
    assert not below.any(), ("S estimate below the true error", true_s, est_s)
    # vectors: where the reference's are determined (a gap far above its rounding)
    ext = np.r_[np.inf, s_all, 0.0]
    gap = np.minimum(ext[:k] - ext[1 : k + 1], ext[1 : k + 1] - ext[2 : k + 2])
    sure = kept & (gap > 1e6 * slack)
    allow = slack / np.where(sure, gap, 1.0)
    V = np.nan_to_num(res.V.values.reshape(k, -1).T)
    for name, X, T in (("U", res.U.values, u[:, :k]), ("V", V, vt[:k].T)):
        true_a = angles(X, T)
        below = sure & (true_a > est_a + allow)
        assert not below.any(), (f"angle estimate of {name} below the true angle", true_a, est_a)


def check_labels(res, da, center):
    """Every dimension of the input, size 1 included, in U, V, mean and reconstruct()."""
    features = tuple(d for d in da.dims if d != "s")
    dims = {"U": res.U.dims, "V": res.V.dims, "reconstruct()": set(res.reconstruct().dims)}
    if center:
        dims["mean"] = res.mean.dims
    want = {
        "U": ("s", "component"),
        "V": ("component", *features),
        "reconstruct()": set(da.dims),
        "mean": features,
    }
    assert all(dims[x] == want[x] for x in dims), ("dimensions lost", dims, da.dims)


ISSUE_CASES = [  # issue 20's reports, as explicit examples
    # 1: a constant feature not exact in binary under standardize (sea ice at -1.8)
    build(200, 6, "float64", np.zeros(6), 1, const=[(3, -1.8)], standardize=True, k=3),
    build(200, 6, "float64", np.zeros(6), 1, const=[(3, -1.8)], standardize=True, chunks="both"),
    build(
        200,
        6,
        "float64",
        np.zeros(6),
        2,
        const=[(0, 0.1)],
        standardize=True,
        method="compressed",
        k=3,
    ),
    # 2: features of very different magnitude balanced by weights, compressed
    build(40, 6, "float32", [-20, 20] * 3, 3, weighting="balance", method="compressed", k=3),
    build(40, 6, "float64", [-150, 150] * 3, 3, weighting="balance", method="compressed", k=3),
    # 3: float32 singular values above float32's maximum; float64 near 1e300, 1e-300
    build(30, 20, "float32", np.full(20, 37), 4, center=False, k=3),
    build(30, 20, "float64", np.full(20, 300), 4, k=3, method="compressed"),
    build(30, 20, "float64", np.full(20, -300), 4, k=3),
    # 4: subnormal data, compressed
    build(30, 8, "float64", np.full(8, -310), 5, method="compressed", k=3),
    build(30, 8, "float32", np.full(8, -42), 5, method="compressed", k=3, chunks="samples"),
    # 2 and 4: subnormal float32 features balanced by weights beyond float32 (1e42), exact
    build(30, 8, "float32", np.full(8, -42), 9, weighting="balance", k=3),
    # 8: a negative weight
    build(20, 5, "float64", np.zeros(5), 6, weighting="negative"),
    # 9: a size-1 feature dimension
    build(20, 5, "float64", np.zeros(5), 7, level=True, chunks="features"),
    # 10: no oversamples, one power iteration: a geometric spectrum, a tiny gap at k
    *(
        build(
            36,
            28,
            "float64",
            np.zeros(28),
            seed,
            spectrum=spectrum,
            center=False,
            method="compressed",
            k=3,
            sketch=dict(n_oversamples=0, n_power_iter=1, krylov=True),
        )
        for spectrum in ("geometric", "gap")
        for seed in (0, 1)
    ),
    # 10: the default oversampling, 4 passes (the first extrapolated), 16 singular values
    # within 1e-3 just below the k-th
    *(
        build(
            90,
            80,
            "float64",
            np.zeros(80),
            seed,
            spectrum="cluster",
            center=False,
            method="compressed",
            k=1,
            sketch=dict(n_oversamples=10, n_power_iter=3, krylov=True),
        )
        for seed in (0, 1)
    ),
]


def _with_examples(test):
    for case in ISSUE_CASES:
        test = hypothesis.example(case)(test)
    return test


@hypothesis.settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
)
@hypothesis.given(cases())
@_with_examples
def test_any_input_gives_the_svd_or_a_documented_error(case):
    a, k, method = case["a"], case["k"], case["method"]
    m, n = a.shape
    da = labeled(case)
    w = None if case["weights"] is None else xr.DataArray(case["weights"], dims="f")
    b, error = prepared(a, case)
    kw = dict(
        dim="s",
        center=case["center"],
        standardize=case["standardize"],
        weights=w,
        missing=case["missing"],
    )
    narrow = case["sketch"] is not None
    if method == "compressed":  # by default a sketch as wide as the matrix: exact to rounding
        kw.update(method="compressed", seed=0)
        kw.update(case["sketch"] if narrow else dict(n_oversamples=min(m, n)))
    else:
        kw.update(method="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "numerical rank" of low-rank draws
        if error is not None:
            with pytest.raises(error[0], match=error[1]):
                xsvd.svd(da, k, **kw)
            return
        try:
            res = xsvd.svd(da, k, **kw)
        except ValueError as err:  # a sketch too narrow for its estimates may be refused
            if narrow and re.search(r"n_oversamples|n_power_iter", str(err)):
                return
            raise
        check_labels(res, da, case["center"])
    u, s_all, vt = np.linalg.svd(b, full_matrices=False)
    s = s_all[:k]
    S = res.S.values
    eps = product_eps(a, method)
    assert np.isfinite(S).all() and np.isfinite(res.U.values).all(), ("not finite", S)
    # rounding in the products' dtype; the Gram step keeps sqrt(eps) of sigma_1
    tol = 50 * np.sqrt(eps) * max(s[0], np.finfo(float).tiny)
    if not narrow:  # a narrow sketch is approximate: within its own estimates, below
        np.testing.assert_allclose(S, s, rtol=0, atol=tol)
        if s[0] > 0 and method == "exact":
            np.testing.assert_allclose(S[:1], s[:1], rtol=1e-3)
    # shares of the total variance, and the total where float64 holds it
    top = np.abs(b).max()
    if top > 0:
        fro = top * np.linalg.norm(b / top)  # ||B||_F without overflow or underflow
        ratio = res.explained_variance_ratio.values
        assert np.isfinite(ratio).all(), ratio
        if not narrow:
            np.testing.assert_allclose(ratio, (s / fro) ** 2, rtol=0, atol=3 * tol / fro + 1e-12)
        if np.sqrt(np.finfo(float).tiny) < fro < np.sqrt(np.finfo(float).max):
            total = float(res.total_variance.values)
            np.testing.assert_allclose(total, fro**2, rtol=max(1e-3, 1e4 * eps))
    if method == "compressed" and s[0] > 0 and not flagged_not_bounds(res):
        check_estimates(res, s_all, u, vt, eps)
