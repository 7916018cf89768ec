"""Bootstrap of the samples: stable and unstable components, exactness, reads, xeofs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

da_mod = pytest.importorskip("dask.array")


def _field(m=60, nf=80, seed=1, land=True):
    """Two well-separated components (variance 36 and 9) on unit noise."""
    rng = np.random.default_rng(seed)
    p1, p2 = rng.standard_normal(nf), rng.standard_normal(nf)
    X = (
        6 * np.outer(rng.standard_normal(m), p1)
        + 3 * np.outer(rng.standard_normal(m), p2)
        + rng.standard_normal((m, nf))
        + 10.0
    )
    if land:
        X[:, 5] = np.nan
    return xr.DataArray(X, dims=("time", "x"), coords={"time": np.arange(m)}, name="f")


def _data(da, lazy):
    return da.chunk({"time": 20, "x": 30}) if lazy else da


@pytest.mark.parametrize("lazy", [False, True])
def test_signal_components_are_stable_and_noise_is_not(lazy):
    boot = xsvd.bootstrap(_data(_field(m=100), lazy), 4, 20, dim="time", seed=0)
    median = boot.congruence.median("replicate").values
    assert median[0] > 0.9 and median[1] > 0.9
    assert boot.congruence.isel(component=slice(0, 2)).min() > 0.9
    assert median[3] < 0.6
    # the signal's intervals hold the data's ratio (the noise's are biased up: duplicated
    # samples leave fewer degrees of freedom, so the largest noise variances grow)
    ci = boot.explained_variance_ratio_ci.isel(component=slice(0, 2))
    original = boot.explained_variance_ratio.isel(component=slice(0, 2))
    assert (ci.sel(bound="lower") <= original).all() and (original <= ci.sel(bound="upper")).all()
    assert float(ci.isel(component=0, bound=1) - ci.isel(component=0, bound=0)) < 0.3
    assert np.isnan(boot.V.isel(x=5)).all() and not np.isnan(boot.V.isel(x=4)).any()


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("m", [40, 120])  # the Krylov space fills the samples / does not
def test_a_replicate_is_the_exact_svd_of_the_resampled_data(lazy, m):
    da = _field(m=m)
    w = xr.DataArray(np.linspace(0.5, 1.5, da.sizes["x"]), dims="x")
    boot = xsvd.bootstrap(_data(da, lazy), 3, 5, dim="time", seed=2, weights=w, keep_patterns=True)
    for r in (0, 4):
        counts = boot.counts.isel(replicate=r).values
        resampled = da.isel(time=np.repeat(np.arange(m), counts))
        ref = xsvd.exact(resampled, dim="time", center=True, weights=w)
        S = ref.S.values
        got = boot.replicate_singular_values.isel(replicate=r).values
        np.testing.assert_allclose(got[:2], S[:2], rtol=1e-8)
        ratio = boot.replicate_explained_variance_ratio.isel(replicate=r).values
        np.testing.assert_allclose(ratio[:2], ref.explained_variance_ratio.values[:2], atol=1e-10)
        V = boot.replicate_V.isel(replicate=r).fillna(0).values[:2]
        Vref = ref.V.fillna(0).values[:2]
        np.testing.assert_allclose(np.abs(V), np.abs(Vref), atol=1e-8)
    exact = xsvd.exact(da, dim="time", center=True, weights=w)
    np.testing.assert_allclose(boot.singular_values[:2], exact.S[:2], rtol=1e-10)
    np.testing.assert_allclose(boot.V.isel(component=0), exact.V.isel(component=0), atol=1e-8)


def test_numpy_and_dask_agree_and_batches_change_nothing():
    da = _field(m=50)
    one = xsvd.bootstrap(da, 3, 8, dim="time", seed=5, keep_patterns=True)
    lazy = xsvd.bootstrap(_data(da, True), 3, 8, dim="time", seed=5, keep_patterns=True)
    batched = xsvd.bootstrap(da, 3, 8, dim="time", seed=5, batch=3, keep_patterns=True)
    for other in (lazy, batched):
        for name in ("singular_values", "explained_variance_ratio", "congruence", "counts"):
            np.testing.assert_allclose(
                other.replicates[name], one.replicates[name], rtol=1e-9, atol=1e-12
            )
        np.testing.assert_allclose(
            other.replicate_V.fillna(0), one.replicate_V.fillna(0), atol=1e-8
        )


class _Counting:
    """An array source that counts the (non-empty) blocks read from it."""

    def __init__(self, values):
        self.values = values
        self.shape, self.dtype, self.ndim = values.shape, values.dtype, values.ndim
        self.reads = 0

    def __getitem__(self, key):
        out = self.values[key]
        if out.size:
            self.reads += 1
        return out


@pytest.mark.parametrize(
    ("n_power_iter", "batch", "reads"), [(2, None, 4), (4, None, 6), (1, 4, 9)]
)
def test_the_data_are_read_a_fixed_number_of_times(n_power_iter, batch, reads):
    """``n_power_iter + 2`` reads per batch, whatever the number of replicates."""
    source = _Counting(_field(m=100).values)
    arr = da_mod.from_array(source, chunks=(25, 20), asarray=False)
    blocks = arr.npartitions
    da = xr.DataArray(arr, dims=("time", "x"))
    boot = xsvd.bootstrap(da, 2, 10, dim="time", seed=0, n_power_iter=n_power_iter, batch=batch)
    assert boot.settings["reads"] == reads
    assert source.reads == reads * blocks


def test_matches_xeofs_bootstrapper_in_distribution():
    pytest.importorskip("xeofs")
    from xeofs.single import EOF
    from xeofs.validation import EOFBootstrapper

    da = _field(m=60, land=False)
    model = EOF(n_modes=4, solver="full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(da, dim="time")
        ref = EOFBootstrapper(n_bootstraps=20, seed=0)
        # its replicates use xeofs' default solver, a randomized SVD drawing from NumPy's global
        # generator (random_state=None): seeded here, then restored
        state = np.random.get_state()  # noqa: NPY002 (what xeofs reads)
        np.random.seed(0)  # noqa: NPY002
        try:
            ref.fit(model)
        finally:
            np.random.set_state(state)  # noqa: NPY002
    ratio = ref.explained_variance_ratio()
    congruence = abs((ref.components() * model.components()).sum("x"))
    boot = xsvd.bootstrap(da, 4, 20, dim="time", seed=1)
    ours = boot.replicate_explained_variance_ratio.median("replicate").values
    # medians of 20 resamples each: over xsvd's seeds 0-49 they were up to 0.039 from xeofs'
    # (seed=0), whose own medians spread 0.04 over its seeds 0-9 (0.03 failed 3 of the 50)
    np.testing.assert_allclose(ours[:2], ratio.median("n").values[:2], atol=0.05)
    assert (congruence.median("n").values[:2] > 0.99).all()
    assert (boot.congruence.median("replicate").values[:2] > 0.99).all()
    assert congruence.median("n").values[3] < 0.6
    assert boot.congruence.median("replicate").values[3] < 0.6
    # the same seed draws the same samples in xeofs 3.0.6: replicate by replicate
    same = xsvd.bootstrap(da, 4, 20, dim="time", seed=0)
    if abs(float(same.replicate_explained_variance_ratio[0, 0]) - float(ratio[0, 0])) < 1e-6:
        np.testing.assert_allclose(same.replicate_explained_variance_ratio, ratio, atol=1e-6)


def test_errors_say_what_was_wrong():
    da = _field(m=30)
    with pytest.raises(ValueError, match="n_replicates must be an integer"):
        xsvd.bootstrap(da, 2, 0, dim="time")
    with pytest.raises(ValueError, match="ci must be between"):
        xsvd.bootstrap(da, 2, 5, dim="time", ci=95)
    with pytest.raises(ValueError, match="k=90 is more"):
        xsvd.bootstrap(da, 90, 5, dim="time")
    bad = da.copy()
    bad[3, 2] = np.nan
    with pytest.raises(xsvd.MissingValueError, match="NaN at some but not all samples"):
        xsvd.bootstrap(bad, 2, 5, dim="time", seed=0)


# ------------------------------------------------- stopping as the core's solvers (issue 29)
def _slow(m=600, nf=200, seed=0):
    """Features of slowly decaying variance (1 / j): few passes leave the S off by percents."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, nf)) / np.sqrt(np.arange(1, nf + 1))
    X = X @ np.linalg.qr(rng.standard_normal((nf, nf)))[0]
    return xr.DataArray(X, dims=("time", "x"))


def test_stops_when_converged_and_says_why():
    """By default the passes stop when every replicate's estimates are below tol=1e-6 (was a
    fixed n_power_iter=4): fewer reads than 6 here, errors that bound the true ones."""
    da = _field(m=120, land=False)
    boot = xsvd.bootstrap(da, 2, 10, dim="time", seed=0)
    s = boot.settings
    assert s["stopped"] == "converged" and s["tol"] == 1e-6
    assert s["reads"] == s["passes"] + 1 < 6
    assert s["estimated_error"] <= 1e-6
    exact = xsvd.exact(da, dim="time", center=True).S.values[:2]
    errors = boot.errors
    assert "error_bounds" not in errors.attrs  # bounds, as for xsvd.compressed
    assert np.all(errors["S"].values >= np.abs(boot.S.values - exact))
    assert np.all(errors["S_relative"].values <= 1e-6)
    # the cap of the core: at most DEFAULT_N_POWER_ITER + 1 passes, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capped = xsvd.bootstrap(_slow(m=200, nf=150), 6, 3, dim="time", seed=0)
    assert capped.settings["passes"] <= 8
    assert capped.settings["stopped"] in ("max_passes", "converged")


def test_tol_and_max_passes_are_taken_as_by_compressed():
    da = _slow(m=300, nf=120)
    loose = xsvd.bootstrap(da, 3, 4, dim="time", seed=0, tol=1e-2)
    tight = xsvd.bootstrap(da, 3, 4, dim="time", seed=0, tol=1e-9, max_passes=30)
    assert loose.settings["passes"] < tight.settings["passes"]
    assert loose.settings["estimated_error"] <= 1e-2 and tight.settings["estimated_error"] <= 1e-9
    with pytest.warns(RuntimeWarning, match="tol=1e-12 was not reached in max_passes=2"):
        short = xsvd.bootstrap(da, 3, 4, dim="time", seed=0, tol=1e-12, max_passes=2)
    assert short.settings["stopped"] == "max_passes" and short.settings["reads"] == 3
    full = xsvd.bootstrap(_field(m=20, land=False), 2, 4, dim="time", seed=0, tol=1e-12)
    assert full.settings["stopped"] == "space full"  # 13 + 7 columns: the 20 samples
    assert full.errors["S_relative"].max() < 1e-12


def test_few_fixed_passes_say_so():
    """Issue 31, item 5: n_power_iter=0 gave S 4x too small with no estimate and no warning,
    n_power_iter=1 percents off; now the estimates bound the errors and a warning says so."""
    da = _slow()
    exact = xsvd.exact(da, dim="time", center=True).S.values[:3]
    with pytest.warns(RuntimeWarning, match="n_power_iter=0 leaves the replicates unconverged"):
        zero = xsvd.bootstrap(da, 3, 5, dim="time", seed=0, n_power_iter=0)
    assert np.abs(zero.S.values - exact).max() > 0.5 * exact[0]  # wrong, and it says so:
    assert np.isinf(zero.errors["S"].values).all() and np.isinf(zero.settings["estimated_error"])
    with pytest.warns(RuntimeWarning, match="n_power_iter=1 leaves the replicates unconverged"):
        one = xsvd.bootstrap(da, 3, 5, dim="time", seed=0, n_power_iter=1)
    true = np.abs(one.S.values - exact)
    assert true.max() > 0.01 * exact[2]  # percents off
    assert np.all(one.errors["S"].values >= true)
    assert one.settings["stopped"] == "n_power_iter" and one.settings["passes"] == 2


def test_options_are_declared_once():
    import inspect

    from xsvd.core.options import CompressedOptions

    params = inspect.signature(xsvd.bootstrap).parameters
    for name in ("n_power_iter", "n_oversamples", "seed", "tol", "max_passes"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].default == getattr(CompressedOptions(), name)
    assert params["seed"].default is None and params["n_power_iter"].default is None
    da = _field(m=30)
    with pytest.raises(ValueError, match="dtype='float32' does not apply to the bootstrap"):
        xsvd.bootstrap(da, 2, 3, dim="time", dtype="float32")
    with pytest.raises(ValueError, match="krylov=False does not apply to the bootstrap"):
        xsvd.bootstrap(da, 2, 3, dim="time", krylov=False)
    with pytest.raises(ValueError, match="either n_power_iter .* or tol"):
        xsvd.bootstrap(da, 2, 3, dim="time", n_power_iter=2, tol=1e-3)
    with pytest.raises(ValueError, match="max_passes bounds the passes that tol asks for"):
        xsvd.bootstrap(da, 2, 3, dim="time", max_passes=3)
    with pytest.raises(ValueError, match="n_power_iter must be an integer >= 0, got True"):
        xsvd.bootstrap(da, 2, 3, dim="time", n_power_iter=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_iter'"):
        xsvd.bootstrap(da, 2, 3, dim="time", n_iter=3)


def test_error_bounds_as_the_core_decides():
    """Fewer than 10 oversamples: rough estimates, not bounds (as xsvd.compressed says);
    a Krylov space that fills the samples is exact whatever the oversamples."""
    da = _field(m=80, land=False)
    rough = xsvd.bootstrap(da, 2, 3, dim="time", seed=0, n_oversamples=4)
    assert rough.settings["error_bounds"] is False and rough.errors.attrs["error_bounds"] == 0
    few = xsvd.bootstrap(_field(m=12, land=False), 3, 3, dim="time", seed=0, n_oversamples=4)
    assert few.settings["stopped"] == "space full" and few.settings["passes"] == 2
    assert "error_bounds" not in few.settings and "error_bounds" not in few.errors.attrs
