"""Hilbert (complex) EOF: against xeofs' HilbertEOF, NumPy and Dask, every solver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.climate.hilbert import analytic_signal

da_mod = pytest.importorskip("dask.array")

K = 4


def _field(seed=0, m=90, ny=6, nx=8):
    """Two waves travelling along x (different speeds), noise, and one land cell."""
    rng = np.random.default_rng(seed)
    t, x = np.arange(m), np.linspace(0, 3, nx)
    amp = np.linspace(1, 2, ny)[None, :, None]
    X = (
        2 * amp * np.cos(0.3 * t[:, None, None] - x[None, None, :])
        + np.sin(0.11 * t[:, None, None] + 0.5 * x[None, None, :])
        + 0.3 * rng.standard_normal((m, ny, nx))
    )
    X[:, 0, 0] = np.nan
    coords = {"time": t, "y": np.arange(ny), "x": x}
    return xr.DataArray(X + 5.0, dims=("time", "y", "x"), coords=coords, name="f")


CASES = {
    "numpy-exact": (False, "exact", {}),
    "dask-exact": (True, "exact", {}),
    "numpy-compressed": (False, "compressed", {"n_power_iter": 10, "seed": 0}),
    "dask-compressed": (True, "compressed", {"n_power_iter": 10, "seed": 1}),
}


def _run(case, da, **kw):
    lazy, method, options = CASES[case]
    data = da.chunk({"time": 30, "x": 4}) if lazy else da
    return xsvd.hilbert_eof(data, K, padding="none", method=method, **options, **kw)


@pytest.fixture(scope="module")
def xeofs_model():
    pytest.importorskip("xeofs")
    from xeofs.single import HilbertEOF

    model = HilbertEOF(n_modes=K, padding="none", solver="full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(_field(), dim="time")
    return model


@pytest.mark.parametrize("case", list(CASES))
def test_matches_xeofs(case, xeofs_model):
    """Amplitudes, variance, singular values equal; phases up to one angle per component."""
    res = _run(case, _field())
    ref = xeofs_model
    np.testing.assert_allclose(res.S.values, ref.singular_values().values, rtol=1e-10)
    np.testing.assert_allclose(
        res.explained_variance_ratio.values, ref.explained_variance_ratio().values, atol=1e-12
    )
    np.testing.assert_allclose(
        res.eigenvalues().values, ref.explained_variance().values, rtol=1e-10
    )
    amp = ref.components_amplitude().transpose("mode", "y", "x").values
    assert np.isnan(res.components_amplitude().values[:, 0, 0]).all()  # land stays NaN
    np.testing.assert_allclose(res.components_amplitude().values, amp, atol=1e-10)
    s_amp = ref.scores_amplitude().transpose("time", "mode").values
    np.testing.assert_allclose(res.scores_amplitude().values, s_amp, atol=1e-10)
    np.testing.assert_allclose(
        res.scores_amplitude(normalized=False).values,
        ref.scores_amplitude(normalized=False).transpose("time", "mode").values,
        rtol=1e-9,
    )
    # xeofs = xsvd * exp(i theta_j): the phase differences are one constant per component
    C = ref.components().transpose("mode", "y", "x").values.reshape(K, -1)
    V = res.V.values.reshape(K, -1)
    ok = ~np.isnan(C[0])
    theta = np.angle((C[:, ok] * V[:, ok].conj()).sum(axis=1))
    dphase = ref.components_phase().transpose("mode", "y", "x").values.reshape(K, -1)[:, ok]
    dphase = dphase - res.components_phase().values.reshape(K, -1)[:, ok] - theta[:, None]
    assert np.abs(np.angle(np.exp(1j * dphase))).max() < 1e-9
    sphase = ref.scores_phase().transpose("time", "mode").values
    sphase = sphase - res.scores_phase().values - theta[None, :]
    assert np.abs(np.angle(np.exp(1j * sphase))).max() < 1e-9


@pytest.mark.parametrize("case", ["dask-exact", "numpy-compressed", "dask-compressed"])
def test_phase_convention_same_everywhere(case):
    """The largest-magnitude entry of each pattern is real positive, on every path alike."""
    da = _field(seed=3)
    ref = _run("numpy-exact", da)
    res = _run(case, da)
    V = res.V.values.reshape(K, -1)
    top = V[np.arange(K), np.nanargmax(np.abs(V), axis=1)]
    assert np.all(top.real > 0) and np.abs(top.imag).max() < 1e-12
    np.testing.assert_allclose(res.V.values, ref.V.values, atol=1e-9)
    np.testing.assert_allclose(res.U.values, ref.U.values, atol=1e-9)


@pytest.mark.parametrize("lazy", [False, True])
def test_all_components_reconstruct_the_anomalies(lazy):
    """Re(U S V^H) with every component is the centered weighted field (any padding), and
    reconstruct() undoes the weights and the mean: it gives back the data themselves."""
    da = _field(seed=1, m=40, ny=3, nx=4)
    w = xr.DataArray(np.linspace(0.5, 1.5, 3), dims="y")
    data = da.chunk({"x": 2}) if lazy else da
    res = xsvd.hilbert_eof(data, weights=w, method="exact")
    assert res.S.sizes["component"] == 11  # 12 cells, one of them land
    anomalies = (da - da.mean("time")) * w
    described = xr.dot(res.U * res.S, np.conj(res.V), dim="component").real
    np.testing.assert_allclose(described.transpose(*da.dims).values, anomalies.values, atol=1e-10)
    back = res.reconstruct()
    assert back.dims == da.dims
    np.testing.assert_allclose(back.values, da.values, atol=1e-10)  # land NaN in both
    two = res.reconstruct(2)  # fewer components: closer to the mean than the data are
    assert float(abs(two - da.mean("time")).sum()) < float(abs(da - da.mean("time")).sum())
    assert float(res.explained_variance_ratio.sum()) == pytest.approx(1.0, abs=1e-12)


def test_a_travelling_wave_is_one_component_with_a_phase_ramp():
    t, x = np.arange(128), np.linspace(0, 2 * np.pi, 50, endpoint=False)
    wave = np.cos(2 * np.pi * 8 * t[:, None] / 128 - x[None, :])
    res = xsvd.hilbert_eof(xr.DataArray(wave, dims=("time", "x")), k=2, padding="none")
    assert float(res.explained_variance_ratio[0]) == pytest.approx(1.0, abs=1e-12)
    phase = np.unwrap(res.components_phase().isel(component=0).values)
    np.testing.assert_allclose(np.diff(phase), x[1], atol=1e-10)  # the wave moves along +x
    np.testing.assert_allclose(res.components_amplitude().isel(component=0), 50**-0.5)


def test_analytic_signal_and_padding():
    t = np.arange(64)
    z = analytic_signal(np.cos(2 * np.pi * 4 * t / 64)[:, None], padding="none")
    np.testing.assert_allclose(z[:, 0], np.exp(2j * np.pi * 4 * t / 64), atol=1e-12)
    # a trend: the ends do not meet, the FFT sees a jump; padding tempers it. The truth is
    # the transform of a long record, away from its ends (up to a constant offset)
    t = np.arange(3000)
    full = 0.02 * t + np.cos(0.37 * t)
    truth = analytic_signal((full - full.mean())[:, None], padding="none")[:, 0].imag
    errors = {"none": [], "exp": []}
    for s0 in range(1000, 2000, 100):
        x = full[s0 : s0 + 100, None]
        for padding, errs in errors.items():
            z = analytic_signal(x - x.mean(), padding=padding)[:, 0]
            assert np.abs(z.real - (x - x.mean())[:, 0]).max() < 1e-12  # Re z = x always
            d = z.imag - truth[s0 : s0 + 100]
            d = d - d.mean()
            errs.append(np.sqrt(np.mean(d[:10] ** 2 + d[-10:] ** 2)))
    assert np.mean(errors["exp"]) < 0.6 * np.mean(errors["none"])


@pytest.mark.parametrize("lazy", [False, True])
def test_partly_missing_features_are_an_error(lazy):
    da = _field(m=30)
    da[3, 1, 1] = np.nan
    data = da.chunk({"x": 4}) if lazy else da
    with pytest.raises(xsvd.MissingValueError, match="interpolate_na"):
        xsvd.hilbert_eof(data, 2, method="exact")


def test_errors_say_what_to_do():
    da = _field(m=30)
    with pytest.raises(ValueError, match="one ordered sample dimension"):
        xsvd.hilbert_eof(da, 2, dim=("time", "y"))
    with pytest.raises(ValueError, match="pass `k=`"):
        xsvd.hilbert_eof(da, method="compressed")
    with pytest.raises(ValueError, match="padding"):
        xsvd.hilbert_eof(da, 2, padding="zero")
    with pytest.raises(ValueError, match="only apply to method='compressed'"):
        xsvd.hilbert_eof(da, 2, method="exact", seed=0)


def test_saved_and_reopened_with_every_part(tmp_path):
    """The saved form reads back (it was a Dataset nothing read): complex U and V,
    reconstruct() with the mean and weights undone."""
    w = xr.DataArray(np.linspace(0.5, 1.5, 6), dims="y")
    res = xsvd.hilbert_eof(_field(m=30), 2, weights=w)
    res.to_zarr(tmp_path / "h.zarr")
    back = xsvd.open_result(tmp_path / "h.zarr")
    assert type(back) is type(res) and back.V.dtype == np.complex128
    assert back.V.dims == ("component", "y", "x")
    for part in ("U", "S", "V"):
        xr.testing.assert_identical(getattr(back, part), getattr(res, part))
    xr.testing.assert_identical(back.reconstruct(), res.reconstruct())
    xr.testing.assert_identical(back.components_phase(), res.components_phase())
