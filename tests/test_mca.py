"""xsvd.mca against xeofs' MCA (full solver, no PCA) and the formed cross-covariance."""

from __future__ import annotations

import dataclasses
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from conftest import CountingArray

import xsvd
import xsvd.climate.mca as mca_module

T = 48


def _fields(seed=0):
    rng = np.random.default_rng(seed)
    lat, lon = np.linspace(-40, 40, 5), np.arange(0.0, 60, 10)
    left = xr.DataArray(
        rng.standard_normal((T, 5, 6)) * rng.uniform(0.5, 3, (5, 6)) + 5,
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(T), "lat": lat, "lon": lon},
    )
    right = xr.DataArray(
        rng.standard_normal((T, 9)),
        dims=("time", "x"),
        coords={"time": np.arange(T), "x": np.arange(9)},
    )
    right = right + 0.5 * left.isel(lat=0).values[:, :1] * np.linspace(1, -1, 9)
    wl = xr.DataArray(rng.uniform(0.2, 1, (5, 6)), dims=("lat", "lon"), coords={"lat": lat})
    wr = xr.DataArray(rng.uniform(0.2, 1, 9), dims=("x",), coords={"x": right.x})
    return left, right, wl, wr


def _xeofs(left, right, wl, wr, k, standardize=False):
    pytest.importorskip("statsmodels")  # xeofs' MCA imports it
    from xeofs.cross import MCA

    model = MCA(n_modes=k, use_pca=False, solver="full", standardize=standardize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(left, right, dim="time", weights_X=wl, weights_Y=wr)
    return model


def _chunked(*das):
    return [da.chunk({"time": 13}) for da in das]


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("method", ["compressed", "exact"])
@pytest.mark.parametrize("standardize", [False, True])
def test_matches_xeofs(lazy, method, standardize):
    left, right, wl, wr = _fields()
    k = 3
    ref = _xeofs(left, right, wl, wr, k, standardize)
    data = _chunked(left, right) if lazy else (left, right)
    res = xsvd.mca(
        *data, k, dim="time", weights_left=wl, weights_right=wr, standardize=standardize,
        method=method, seed=0 if method == "compressed" else None,
    )  # fmt: skip
    np.testing.assert_allclose(res.singular_values, ref.data["singular_values"], rtol=1e-11)
    np.testing.assert_allclose(
        res.squared_covariance_fraction, ref.squared_covariance_fraction(), rtol=1e-10
    )
    cl, cr = (c.rename(mode="component") for c in ref.components())
    cl = cl.transpose("component", "lat", "lon").values
    sign = np.sign((res.left_patterns.values * cl).sum(axis=(1, 2)))
    assert np.all(np.abs(sign) == 1)
    np.testing.assert_allclose(res.left_patterns, sign[:, None, None] * cl, atol=1e-11)
    cr = cr.transpose("component", "x").values
    np.testing.assert_allclose(res.right_patterns, sign[:, None] * cr, atol=1e-11)
    sl, sr = (s.transpose("time", "mode").values * sign for s in ref.scores())
    np.testing.assert_allclose(res.left_scores, sl, atol=1e-10)
    np.testing.assert_allclose(res.right_scores, sr, atol=1e-10)
    (hl, hr), _ = ref.homogeneous_patterns()
    (el, er), _ = ref.heterogeneous_patterns()
    ours = (*res.homogeneous_maps(), *res.heterogeneous_maps())
    for mine, theirs in zip(ours, (hl, hr, el, er), strict=True):
        theirs = theirs.transpose("mode", ...).values
        flip = sign.reshape(-1, *[1] * (theirs.ndim - 1))
        np.testing.assert_allclose(mine.values, flip * theirs, atol=1e-11)
    if method == "compressed":
        assert res.errors.S_relative.max() < 1e-6


def test_compressed_estimates_bound_the_truth_and_fractions_by_both_routes():
    rng = np.random.default_rng(3)
    n, a, b = 60, 120, 100
    common = rng.standard_normal((n, 8)) * 0.8 ** np.arange(8)
    left = xr.DataArray(common @ rng.standard_normal((8, a)) + rng.standard_normal((n, a)) * 0.3,
                        dims=("time", "p"))  # fmt: skip
    right = xr.DataArray(common @ rng.standard_normal((8, b)) + rng.standard_normal((n, b)) * 0.3,
                         dims=("time", "q"))  # fmt: skip
    exact = xsvd.mca(left, right, 5, method="exact")
    for q in (1, 2, 4):
        res = xsvd.mca(left, right, 5, n_power_iter=q, n_oversamples=10, seed=0)
        assert res.settings["passes"] == q + 1
        err = np.abs(res.singular_values.values - exact.singular_values.values)
        assert np.all(res.errors.S.values >= err)
    np.testing.assert_allclose(res.singular_values, exact.singular_values, rtol=1e-12)
    # ||C||_F^2: from the Gram matrices (more features than samples) and from blocks of C
    Bl = left.values - left.values.mean(0)
    Br = right.values - right.values.mean(0)
    total = ((Bl.T @ Br / (n - 1)) ** 2).sum()
    np.testing.assert_allclose(res.total_squared_covariance, total, rtol=1e-12)
    few = xsvd.mca(left.isel(p=slice(0, 6)), right.isel(q=slice(0, 5)), 2, seed=0)
    Cs = Bl[:, :6].T @ Br[:, :5] / (n - 1)
    np.testing.assert_allclose(few.total_squared_covariance, (Cs**2).sum(), rtol=1e-12)
    lazy = xsvd.mca(left.chunk({"time": 20}), right.chunk({"q": 20}), 5, seed=0)
    np.testing.assert_allclose(lazy.total_squared_covariance, total, rtol=1e-12)


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_all_nan_features_stay_nan_and_partial_nan_is_an_error(lazy):
    left, right, _, _ = _fields(1)
    land = left.where(~((left.lat == 0) & (left.lon < 30)))  # 3 features NaN at every time
    data = _chunked(land, right) if lazy else (land, right)
    res = xsvd.mca(*data, 2, dim="time", seed=0)
    # the same as constant (zero) features, which add nothing to the cross-covariance
    ref = xsvd.mca(land.fillna(0.0), right, 2, dim="time", method="exact")
    assert int(res.left_patterns.isnull().sum()) == 2 * 3
    np.testing.assert_allclose(res.singular_values, ref.singular_values, rtol=1e-12)
    np.testing.assert_allclose(res.left_patterns.fillna(0.0), ref.left_patterns, atol=1e-12)
    hom_left, _ = res.homogeneous_maps()
    assert int(hom_left.isnull().sum()) == 2 * 3
    bad = left.copy()
    bad[3, 1, 1] = np.nan
    with pytest.raises(xsvd.MissingValueError, match=r"some but not all samples of 1 feature"):
        xsvd.mca(bad, right, 2, dim="time")


def test_inputs_untouched_and_bad_inputs_explained():
    left, right, _, _ = _fields(2)
    before = left.copy(deep=True)
    xsvd.mca(left, right, 2, dim="time", method="exact")
    xsvd.mca(left, right, 2, dim="time", seed=0)
    xr.testing.assert_identical(left, before)
    with pytest.raises(ValueError, match="share the sample dimension"):
        xsvd.mca(left, right.isel(time=slice(0, 40)), 2, dim="time")
    with pytest.raises(ValueError, match="different 'time' coordinates"):
        xsvd.mca(left, right.assign_coords(time=right.time + 1), 2, dim="time")
    with pytest.raises(ValueError, match="between 1 and 9"):
        xsvd.mca(left, right, 10, dim="time")
    with pytest.raises(ValueError, match="method must be one of"):
        xsvd.mca(left, right, 2, dim="time", method="full")


def test_component_coordinate_follows_the_layout():
    left, right, _, _ = _fields(4)
    res = xsvd.mca(left, right, 2, dim="time", seed=0)
    pattern = xsvd.svd(left, k=2, dim="time").V
    np.testing.assert_array_equal(res.left_patterns.component, pattern.component)
    np.testing.assert_array_equal(res.singular_values.component, pattern.component)


# ---------------------------------------------------------------- reads of the data


class _Reads:
    """A NumPy matrix that counts the share of its values read (1 = the whole matrix once):
    by slicing (rows or columns) or by a product with the whole of it (or of ``.T``)."""

    def __init__(self, a, reads=None):
        self.a, self.shape, self.dtype, self.ndim = a, a.shape, a.dtype, 2
        self.reads = reads if reads is not None else [0.0]

    @property
    def T(self):
        return _Reads(self.a.T, self.reads)

    def __getitem__(self, key):
        out = self.a[key]
        self.reads[0] += out.size / self.a.size
        return out

    def __matmul__(self, other):
        self.reads[0] += 1
        return self.a @ other


def _counted_fields(monkeypatch):
    """``mca`` with each field's data counted after its statistics (read once before)."""
    counted = []
    real = mca_module.prepare_field

    def prepare(*args, **kwargs):
        f = real(*args, **kwargs)
        f = dataclasses.replace(f, data=_Reads(np.asarray(f.data)))
        counted.append(f.data.reads)
        return f

    monkeypatch.setattr(mca_module, "prepare_field", prepare)
    return counted


@pytest.mark.parametrize("n_power_iter", [None, 3])
def test_each_pass_reads_each_field_once_numpy(monkeypatch, n_power_iter):
    left, right, _, _ = _known(0.9 ** np.arange(60))
    ref = xsvd.mca(left, right, 3, dim="time", method="exact")
    counted = _counted_fields(monkeypatch)
    # seeded: with a random start, 4 passes reach 1e-6 on this spectrum only mostly
    res = xsvd.mca(left, right, 3, dim="time", n_power_iter=n_power_iter, seed=0)
    passes = res.settings["passes"]
    assert passes >= 2 if n_power_iter is None else passes == n_power_iter + 1
    # a pass reads each field once (a block of samples of both at a time), the scores once
    assert [r[0] for r in counted] == pytest.approx([passes + 1, passes + 1])
    res.squared_covariance_fraction  # noqa: B018
    res.homogeneous_maps()
    res.heterogeneous_maps()  # the maps: one more read of each field for both kinds
    assert [r[0] for r in counted] == pytest.approx([passes + 3, passes + 3])
    err = np.abs(res.singular_values - ref.singular_values).values
    assert np.all(err <= res.errors.S.values) and err.max() < 1e-6


@pytest.mark.parametrize("n_power_iter", [None, 3])
def test_each_pass_reads_each_chunk_once_dask(n_power_iter):
    left, right, _, _ = _known(0.9 ** np.arange(60))
    sources = [CountingArray(np.ascontiguousarray(x.values)) for x in (left, right)]
    lazy = [
        x.copy(data=da.from_array(src, chunks=(40, -1)))
        for x, src in zip((left, right), sources, strict=True)
    ]
    res = xsvd.mca(*lazy, 3, dim="time", n_power_iter=n_power_iter, seed=0)
    passes = res.settings["passes"]
    assert passes >= 2 if n_power_iter is None else passes == n_power_iter + 1
    # every chunk of each field: the statistics, one read per pass, the scores
    for src in sources:
        assert len(src.reads) == 4
        assert set(src.reads.values()) == {passes + 2}
    ref = xsvd.mca(left, right, 3, dim="time", n_power_iter=n_power_iter, seed=0)
    np.testing.assert_allclose(res.singular_values, ref.singular_values, rtol=1e-12)
    np.testing.assert_allclose(res.left_patterns, ref.left_patterns, atol=1e-12)
    # one field in memory, the other lazy (chunked along the features only): the same
    mixed = xsvd.mca(left, right.chunk({"q": 20}), 3, dim="time", n_power_iter=n_power_iter, seed=0)
    np.testing.assert_allclose(mixed.right_patterns, ref.right_patterns, atol=1e-12)


def _known(spectrum, n=150, a=70, b=60, seed=0):
    """Two fields (with means) whose cross-covariance is ``P diag(spectrum) Q^T``, known."""
    rng = np.random.default_rng(seed)
    r = len(spectrum)
    Z = np.linalg.qr(rng.standard_normal((n, r + 1)))[0]
    Z = np.linalg.qr(Z - Z.mean(axis=0))[0][:, :r]  # orthonormal, centered columns
    P = np.linalg.qr(rng.standard_normal((a, r)))[0]
    Q = np.linalg.qr(rng.standard_normal((b, r)))[0]
    left = Z @ P.T + rng.uniform(-3, 3, a)
    right = (n - 1) * (Z * spectrum) @ Q.T + rng.uniform(-3, 3, b)
    das = (xr.DataArray(x, dims=("time", f)) for x, f in ((left, "p"), (right, "q")))
    return *das, P, Q


@pytest.mark.parametrize(
    "spectrum",
    [0.9 ** np.arange(60), 0.97 ** np.arange(60), np.r_[np.ones(3), 0.999 ** np.arange(57) * 0.9]],
    ids=["decay-0.9", "decay-0.97", "step-cluster"],
)
def test_estimates_never_below_the_true_errors_known_spectrum(spectrum):
    left, right, P, Q = _known(spectrum)
    k = 5
    for q in (None, 1, 2, 4, 7):
        res = xsvd.mca(left, right, k, n_power_iter=q, seed=0)
        S, e = res.singular_values.values, res.errors
        assert np.all(e.S.values >= np.abs(S - spectrum[:k]))
        for est, ref in ((res.left_patterns.values.T, P), (res.right_patterns.values.T, Q)):
            sign = np.sign((est * ref[:, :k]).sum(axis=0))
            angle = 2 * np.arcsin(
                np.minimum(1, np.linalg.norm(est - ref[:, :k] * sign, axis=0) / 2)
            )
            # a repeated singular value has no single vector: compare the estimates elsewhere
            single = (
                np.r_[np.diff(spectrum[: k + 1]) != 0] & np.r_[True, np.diff(spectrum[:k]) != 0]
            )
            assert np.all(e.angle.values[single] >= angle[single])
    if spectrum[1] < spectrum[0]:
        assert res.errors.S_relative.max() < 1e-6
