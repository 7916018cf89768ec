"""Property test of the analyses: every one meets the input rules, against a dense truth.

Issue 31 asks that the property test draw offsets, constants, ``inf``,
magnitudes and weights for *every* analysis, not only the main ``svd``.
Hypothesis draws, for each analysis registered in :data:`ANALYSES`:

- the backend (NumPy, Dask in stripes of samples or of features, and
  array-api-strict's second device, a GPU's stand-in);
- the dtype (float32, float64), the shape (333 samples often: a mean of a
  constant -1.8 then rounds) and a magnitude per field, near one drawn per
  case (float32 1e-37 to 1e37, float64 1e-250 to 1e250, 1e+-125 for MCA,
  whose ``S`` is a product of two fields), an offset of the values from 0 (up
  to 1e4 times their spread for float64, 10 for float32);
- constant features whose value is not exact in binary (0.1, -1.8 times the
  magnitude), an ``inf`` or ``-inf`` somewhere (one case in eight), weights
  (none, random, random with a zero), ``center``, ``standardize`` where the
  analysis takes it, and the solver (exact, compressed).

Each run is compared with a dense NumPy truth computed here from the values
as stored (in float64): the matrix prepared by hand (centered, standardized
with the constant rule of ``docs/input-rules.md``, weighted) and decomposed by
``numpy.linalg.svd``; for MCA the cross-covariance ``Bl^T Br / (n - 1)``
formed explicitly, for extended EOF the lag-embedded matrix formed
explicitly. The leading singular values and their shares (explained variance
ratio, squared covariance fraction) must agree to the precision of the data's
dtype; an ``inf`` must raise :class:`xsvd.InfiniteValueError`.

Hilbert EOF (``padding="none"``) is compared with the complex SVD of
``scipy.signal.hilbert`` of the prepared field; the bootstrap with the spectrum
of the data and, inside its run, of its first replicate resampled explicitly
from its counts.

To add an analysis, register it with
:func:`register`: how many fields it takes, whether it takes
``standardize``, a ``run(case)`` that returns ``(S, shares)`` of the
leading ``case.k`` components as NumPy arrays, and a ``truth(case)`` that
returns all singular values and shares of the dense truth. The test picks it
up; its examples are drawn as for the others.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr
from conftest import Backend, strict_available

import xsvd
from xsvd.core import backend as core_backend

hypothesis = pytest.importorskip("hypothesis", reason="the property test needs hypothesis")
st = hypothesis.strategies

EPS64 = float(np.finfo(np.float64).eps)
#: log10 of the largest magnitudes drawn for each dtype (float64: over the number of fields
#: whose product ``S`` is, so that ``S`` itself is in float64's range)
MAGNITUDES = {"float32": 37, "float64": 250}
#: offsets from 0, in units of the values' spread
OFFSETS = {"float32": (0.0, 1.0, 10.0), "float64": (0.0, 1.0, 1e2, 1e4)}
#: constant features: values not exact in binary, times the field's magnitude
CONSTANTS = (0.1, -1.8)
BACKENDS = ["numpy", "dask-samples", "dask-features"] + (["strict"] if strict_available() else [])


@dataclass
class Case:
    """One drawn input: the fields as stored (NumPy, samples x features), how to decompose."""

    fields: list[np.ndarray]
    weights: list[np.ndarray | None]
    offsets: list[float]
    backend: Backend
    k: int
    center: bool
    standardize: bool
    method: str
    infinite: bool
    embedding: int = 1
    tau: int = 1

    @property
    def dtype(self) -> np.dtype:
        return self.fields[0].dtype

    def labeled(self, i: int) -> xr.DataArray:
        """Field ``i`` on the drawn backend, dims ``("time", f"f{i}")``."""
        a = self.fields[i]
        coords = {"time": np.arange(a.shape[0]), f"f{i}": np.arange(a.shape[1])}
        return xr.DataArray(self.backend(a), dims=("time", f"f{i}"), coords=coords)

    def weights_of(self, i: int) -> xr.DataArray | None:
        w = self.weights[i]
        return None if w is None else xr.DataArray(w, dims=(f"f{i}",))

    def solver(self) -> dict:
        return {"method": self.method, **({"seed": 0} if self.method == "compressed" else {})}


@dataclass(frozen=True)
class Analysis:
    n_fields: int
    standardize: bool
    run: Callable[[Case], tuple[np.ndarray, np.ndarray]]
    truth: Callable[[Case], tuple[np.ndarray, np.ndarray]]
    embeds: bool = False
    degree: int = 1  # the fields multiplied together in S (MCA: 2)
    compressed_only: bool = False  # no method= (the bootstrap)


#: Every analysis under test, by name (see the module docstring to add one).
ANALYSES: dict[str, Analysis] = {}


def register(name: str, **kwargs) -> None:
    ANALYSES[name] = Analysis(**kwargs)


def _host(x) -> np.ndarray:
    data = x.data if isinstance(x, xr.DataArray) else x
    return np.asarray(core_backend.to_numpy(data), dtype=np.float64)


# ------------------------------------------------------------------ the truths


def prepared(case: Case, i: int) -> np.ndarray:
    """Field ``i`` as the matrix it stands for: centered, standardized with constant
    features at weight 0 (docs/input-rules.md), weighted; float64."""
    x = case.fields[i].astype(np.float64)
    b = x - x.mean(0) if case.center else x.copy()
    scale = np.ones(x.shape[1]) if case.weights[i] is None else case.weights[i].copy()
    if case.standardize:
        eps = float(np.finfo(case.dtype).eps)
        top = np.abs(x).max(0)
        top = np.where(top > 0, top, 1.0)
        spread = (x / top).std(0)  # std / max|x|: in range at any magnitude
        varies = spread > max(4 * eps, x.shape[0] * EPS64)
        scale = np.where(varies, scale / np.where(varies, spread * top, 1.0), 0.0)
    return b * scale


def _spectrum(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.linalg.svd(matrix, compute_uv=False)
    top = s.max(initial=0.0)
    return s, (s / top) ** 2 / np.sum((s / top) ** 2) if top > 0 else s * np.nan


def _embedded(case: Case) -> np.ndarray:
    """The lag-embedded matrix, formed: rows ``[x_t, x_{t+tau}, ...]``, each column centered
    over its window, the weights the same at every lag."""
    x, L, tau = case.fields[0].astype(np.float64), case.embedding, case.tau
    n = x.shape[0] - (L - 1) * tau
    e = np.concatenate([x[j * tau : j * tau + n] for j in range(L)], axis=1)
    if case.center:
        e = e - e.mean(0)
    w = case.weights[0]
    return e if w is None else e * np.tile(w, L)


# ------------------------------------------------------------------ the analyses


def _run_svd(case: Case):
    res = case.labeled(0).svd(
        k=case.k,
        dim="time",
        center=case.center,
        standardize=case.standardize,
        weights=case.weights_of(0),
        **case.solver(),
    )
    return _host(res.singular_values), _host(res.explained_variance_ratio)


def _run_dataset(case: Case):
    ds = xr.Dataset({f"v{i}": case.labeled(i) for i in range(len(case.fields))})
    res = ds.svd(
        k=case.k,
        dim="time",
        center=case.center,
        standardize=case.standardize,
        weights={f"v{i}": case.weights_of(i) for i in range(len(case.fields))},
        **case.solver(),
    )
    return _host(res.singular_values), _host(res.explained_variance_ratio)


def _run_mca(case: Case):
    res = xsvd.mca(
        case.labeled(0),
        case.labeled(1),
        case.k,
        dim="time",
        weights_left=case.weights_of(0),
        weights_right=case.weights_of(1),
        center=case.center,
        standardize=case.standardize,
        **case.solver(),
    )
    return _host(res.singular_values), _host(res.squared_covariance_fraction)


def _truth_mca(case: Case):
    bl, br = prepared(case, 0), prepared(case, 1)
    # the cross-covariance formed, in units that keep it in float64's range
    sl, sr = (max(np.abs(b).max(), np.finfo(float).tiny) for b in (bl, br))
    s, shares = _spectrum((bl / sl).T @ (br / sr) / (bl.shape[0] - 1))
    return s * sl * sr, shares


def _run_extended(case: Case):
    res = xsvd.extended_eof(
        case.labeled(0),
        case.k,
        embedding=case.embedding,
        tau=case.tau,
        dim="time",
        weights=case.weights_of(0),
        center=case.center,
        **case.solver(),
    )
    return _host(res.singular_values), _host(res.explained_variance_ratio)


def _run_hilbert(case: Case):
    res = xsvd.hilbert_eof(
        case.labeled(0),
        case.k,
        dim="time",
        weights=case.weights_of(0),
        center=case.center,
        standardize=case.standardize,
        padding="none",  # the periodic transform: scipy.signal.hilbert's
        **case.solver(),
    )
    return _host(res.singular_values), _host(res.explained_variance_ratio)


def _truth_hilbert(case: Case):
    """The complex SVD of the analytic signal of the prepared field (centered, standardized,
    weighted before the transform), in units of its largest value."""
    from scipy import signal

    b = prepared(case, 0)
    top = max(np.abs(b).max(), np.finfo(float).tiny)
    s, shares = _spectrum(signal.hilbert(b / top, axis=0))
    return s * top, shares


def _run_bootstrap(case: Case):
    """The bootstrap's spectrum of the data (its replicate of counts 1) and, checked here,
    of its first resampled replicate against the explicit resampling of its counts."""
    da = case.labeled(0)
    res = xsvd.bootstrap(
        da, case.k, 2, dim="time", center=case.center, weights=case.weights_of(0), seed=0
    )
    counts = _host(res.counts).reshape(2, -1)[0].astype(int)
    resampled = Case(**{**case.__dict__, "fields": [np.repeat(case.fields[0], counts, axis=0)]})
    want, want_shares = _spectrum(prepared(resampled, 0))
    got = _host(res.replicate_singular_values)[0]
    np.testing.assert_allclose(got / want[0], want[: case.k] / want[0], atol=tolerance(case))
    got_shares = _host(res.replicate_explained_variance_ratio)[0]
    np.testing.assert_allclose(got_shares, want_shares[: case.k], atol=4 * tolerance(case))
    return _host(res.singular_values), _host(res.explained_variance_ratio)


register(
    "svd", n_fields=1, standardize=True, run=_run_svd, truth=lambda c: _spectrum(prepared(c, 0))
)
register("hilbert", n_fields=1, standardize=True, run=_run_hilbert, truth=_truth_hilbert)
register(
    "bootstrap",
    n_fields=1,
    standardize=False,
    run=_run_bootstrap,
    truth=lambda c: _spectrum(prepared(c, 0)),
    compressed_only=True,
)
register(
    "dataset",
    n_fields=2,
    standardize=True,
    run=_run_dataset,
    truth=lambda c: _spectrum(np.concatenate([prepared(c, 0), prepared(c, 1)], axis=1)),
)
register("mca", n_fields=2, standardize=True, run=_run_mca, truth=_truth_mca, degree=2)
register(
    "extended",
    n_fields=1,
    standardize=False,
    run=_run_extended,
    truth=lambda c: _spectrum(_embedded(c)),
    embeds=True,
)


# ------------------------------------------------------------------ the draws


def draw_case(draw, analysis: Analysis) -> Case:
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m = draw(st.integers(12, 40) | st.just(333))  # 333: a mean of -1.8s that rounds
    high = MAGNITUDES[dtype] // (analysis.degree if dtype == "float64" else 1)
    exponent = draw(st.integers(-high, high))  # the fields' magnitudes near it
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((m, 3)) * np.array([3.0, 1.5, 0.7])  # shared by the fields
    fields, weights, offsets = [], [], []
    for _ in range(analysis.n_fields):
        n = draw(st.integers(4, 9))
        x = common @ rng.standard_normal((3, n)) + 0.3 * rng.standard_normal((m, n))
        offset = draw(st.sampled_from(OFFSETS[dtype])) * x.std()
        x += offset
        for j in rng.permutation(n)[: draw(st.integers(0, 2))]:
            x[:, j] = draw(st.sampled_from(CONSTANTS))
        magnitude = 10.0 ** min(high, max(-high, exponent + draw(st.integers(-3, 3))))
        fields.append((x * magnitude).astype(dtype))
        offsets.append(offset / x.std())
        kind = draw(st.sampled_from(["none", "random", "zero"]))
        w = None if kind == "none" else rng.uniform(0.1, 10.0, n)
        if kind == "zero":
            w[rng.integers(n)] = 0.0
        weights.append(w)
    infinite = draw(st.integers(0, 7)) == 0
    if infinite:
        f = fields[draw(st.integers(0, len(fields) - 1))]
        f[rng.integers(m), rng.integers(f.shape[1])] = draw(st.sampled_from([np.inf, -np.inf]))
    embedding, tau = 1, 1
    if analysis.embeds:
        embedding, tau = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    return Case(
        fields=fields,
        weights=weights,
        offsets=offsets,
        backend=Backend(draw(st.sampled_from(BACKENDS))),
        k=2,
        center=draw(st.sampled_from([True, True, False])),
        standardize=analysis.standardize and draw(st.booleans()),
        method=draw(
            st.sampled_from(["compressed"] if analysis.compressed_only else ["exact", "compressed"])
        ),
        infinite=infinite,
        embedding=embedding,
        tau=tau,
    )


def tolerance(case: Case) -> float:
    """Agreement expected, relative to the largest singular value: the rounding of the
    stored values' dtype, times their offset from 0 (what centering cancels)."""
    eps = float(np.finfo(case.dtype).eps)
    rtol = 100 * eps * (1 + max(case.offsets)) * (1 + case.fields[0].shape[0] * EPS64 / eps)
    return max(rtol, 1e-7) if case.method == "compressed" else rtol


@pytest.mark.parametrize("name", sorted(ANALYSES))
@hypothesis.settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
)
@hypothesis.given(data=st.data())
def test_every_analysis_meets_the_input_rules(name, data):
    analysis = ANALYSES[name]
    case = draw_case(data.draw, analysis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # center=False on offset data warns; not checked here
        if case.infinite:
            with pytest.raises(xsvd.InfiniteValueError, match="infinite values"):
                analysis.run(case)
            return
        S, shares = analysis.run(case)
    want, want_shares = analysis.truth(case)
    k, rtol = case.k, tolerance(case)
    top = want[0]
    note = f"{name}: {case.dtype}, offsets {case.offsets}, {case.backend.name}, {case.method}"
    np.testing.assert_allclose(S / top, want[:k] / top, rtol=0, atol=rtol, err_msg=note)
    np.testing.assert_allclose(shares, want_shares[:k], rtol=0, atol=4 * rtol, err_msg=note)
