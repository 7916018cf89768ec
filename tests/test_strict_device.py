"""The device path, checked without a GPU on array-api-strict's second device.

``array_api_strict.Device("device1")`` refuses what breaks CuPy code: implicit
conversion to NumPy and mixing arrays of two devices in one operation. The
core runs on it the code it runs on CuPy (namespaces from the arrays, the
standard's functions), so these tests stand for a GPU in every run: results
stay on the device and equal NumPy's, and every move to the host goes through
``xsvd.core.backend.transfer``, which counts it.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from xsvd.core import backend
from xsvd.core.missing import missing_rule
from xsvd.core.options import CompressedOptions
from xsvd.core.randomized.executors import Eager
from xsvd.core.randomized.feature_stripes import FeatureStripes
from xsvd.core.randomized.plan import FEATURES, SAMPLES, Problem
from xsvd.core.randomized.sample_stripes import SampleStripes
from xsvd.core.randomized.small import finalize, krylov_finish, orth, orth_against
from xsvd.linalg import exact_svd, randomized_svd

xs = pytest.importorskip("array_api_strict")
DEVICE = xs.Device("device1")


def dev(a):
    return xs.asarray(np.asarray(a), device=DEVICE)


def on_device(x) -> bool:
    return backend.namespace(x) is xs and x.device == DEVICE


def host(x):
    return backend.to_numpy(x)


def _data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    m, n = shape
    s = 0.8 ** np.arange(min(m, n))
    u, _ = np.linalg.qr(rng.standard_normal((m, len(s))))
    v, _ = np.linalg.qr(rng.standard_normal((n, len(s))))
    return ((u * s) @ v.T * 10 + 3.0).astype(dtype)


def test_the_strict_device_refuses_what_a_gpu_refuses():
    a = dev(np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="device1"):
        np.asarray(a)
    with pytest.raises(ValueError, match="different devices"):
        a + xs.asarray(np.ones((3, 2)))
    assert backend.namespace(a) is xs and backend.api(a) is xs


def test_transfers_are_counted_in_one_place():
    backend.TRANSFERS.reset()
    a = backend.on_backend_of(np.arange(4.0), dev(np.ones(2)))
    assert on_device(a)
    np.testing.assert_array_equal(backend.to_numpy(a), np.arange(4.0))
    assert backend.TRANSFERS.log == [("to_device", 4), ("to_host", 4)]
    backend.to_numpy(np.ones(3))  # NumPy to NumPy: no move
    assert backend.TRANSFERS.count("to_host") == 1


# ------------------------------------------------------- per-chunk kernels


def _problem(a, stripes, **kw):
    m, n = a.shape
    return Problem(
        n_samples=m,
        n_features=n,
        k=3,
        width=6,
        n_power_iter=2,
        dtype=np.dtype(np.float64),
        options=CompressedOptions(n_power_iter=2).resolved(lazy=False),
        center=True,
        weights=kw.get("weights"),
        missing=missing_rule(np.float64, kw.get("missing", "error")),
        locate=None,
        stripes=stripes,
        sub_block=64 * 8,  # several sub-blocks per stripe
        watch_range=True,
    )


@pytest.mark.parametrize("stripes", [SAMPLES, FEATURES])
@pytest.mark.parametrize("missing", ["error", "mean"])
def test_stripe_kernels_run_on_the_device_and_equal_numpy(stripes, missing):
    a = _data((300, 40))
    if missing == "mean":
        a[np.random.default_rng(1).random(a.shape) < 0.05] = np.nan
    w = np.linspace(0.5, 2.0, 40)
    outs = []
    for put in (np.asarray, dev):
        x = put(a)
        pb = _problem(a, stripes, weights=put(w), missing=missing)
        ex = Eager(x, 0 if stripes == SAMPLES else 1, stripe=100 if stripes == SAMPLES else 15)
        side = (SampleStripes if stripes == SAMPLES else FeatureStripes)(ex, pb)
        fill = side.prepare()
        thin = pb.thin_length
        basis = orth(put(np.random.default_rng(0).standard_normal((thin, 6))))
        sketch, stats = side.read(basis, None, fill, True)
        again, _ = side.read(orth(sketch.cross), stats, fill, False)
        got = [sketch.cross, sketch.gram, again.cross, again.gram, *again.blocks]
        if put is dev:
            assert all(on_device(g) for g in got)
            got = [host(g) for g in got]
        outs.append(got)
    for x, y in zip(*outs, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-9)


def test_small_steps_run_on_the_device_and_equal_numpy():
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((50, 6))
    Z = rng.standard_normal((30, 6))
    V0 = np.linalg.qr(rng.standard_normal((30, 6)))[0]
    results = []
    for put in (np.asarray, dev):
        rot, thin, S = finalize(put(Z), put(Y.T @ Y), 3, np.float64)
        nxt = orth_against(put(Z), [put(V0)], 6)
        out = krylov_finish(None, [put(V0), nxt], [put(Z), put(Z[:, ::-1].copy())], 3, np.float64)
        got = [rot, thin, S, nxt, *out]
        if put is dev:
            assert all(on_device(g) for g in got)
            got = [host(g) for g in got]
        results.append(got)
    for x, y in zip(*results, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------- solvers


@pytest.mark.parametrize("shape", [(300, 40), (40, 300)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8])
def test_solvers_on_the_device_equal_numpy(shape, dtype):
    a = _data(shape, dtype)
    w = np.linspace(0.5, 2.0, shape[1])
    for solver, kw in [
        (randomized_svd, {"k": 4, "seed": 0, "weights": w}),
        (randomized_svd, {"k": 4, "seed": 1, "missing": "mean", "n_power_iter": 3}),
        (exact_svd, {"k": 4, "weights": w}),
    ]:
        want = solver(a, **kw)
        got = solver(dev(a), **kw)
        for name in ("U", "S", "V", "mean", "errors"):
            x, y = getattr(want, name), getattr(got, name)
            if x is None:
                continue
            assert on_device(y), name
            scale = float(np.abs(x).max()) or 1.0
            # equal to the rounding of the products (float32 for float32 and int8 data:
            # array-api-strict's float32 matmul may round unlike NumPy's BLAS)
            f32 = dtype == np.float32 or (dtype == np.int8 and solver is randomized_svd)
            tol = 2e-5 if f32 else 1e-9
            if name == "errors" and tol > 1e-9:  # estimates from float32 rounding: near
                np.testing.assert_allclose(host(y), x, rtol=0.1, err_msg=name)
                continue
            np.testing.assert_allclose(host(y), x, rtol=0, atol=tol * scale, err_msg=name)
        # sums of squares in float32 (float32 and int8 data): NumPy's einsum and the
        # standard's vecdot round differently
        f32 = dtype == np.float32 or (dtype == np.int8 and solver is randomized_svd)
        rtol = 1e-6 if f32 else 1e-12
        np.testing.assert_allclose(host(got.total_ss), want.total_ss, rtol=rtol)


def test_a_pass_moves_no_data_to_the_host():
    m, n, k, l = 400, 60, 4, 14
    a = dev(_data((m, n)))
    for orientation in (a, a.T):
        backend.TRANSFERS.reset()
        d = randomized_svd(orientation, k, seed=0, n_power_iter=3)
        passes = d.settings["passes"]
        assert passes == 4
        # feature-sized vectors on the first pass only (magnitudes, NaN counts), and the
        # small Krylov matrices (at most passes * l square); never a stripe or the data
        small = max(m, n, (passes * l) ** 2)
        assert backend.TRANSFERS.largest("to_host") <= small < m * n
        assert backend.TRANSFERS.count("to_host", larger_than=passes * l) <= 4
        assert backend.TRANSFERS.count("to_host") <= 4 * passes
        assert backend.TRANSFERS.largest("to_device") <= max(m, n) * l  # the test matrix


# -------------------------------------------------------------- labeled


def test_dataarray_on_the_device_gives_results_there():
    a = np.random.default_rng(0).standard_normal((60, 4, 5)) + 1.0
    dims = ("time", "lat", "lon")
    on_dev = xr.DataArray(dev(a), dims=dims)
    plain = xr.DataArray(a, dims=dims)
    for run in (lambda d: d.svd.exact(), lambda d: d.svd.compressed(3, seed=0)):
        got, want = run(on_dev), run(plain)
        assert on_device(got.V.data) and on_device(got.U.data) and on_device(got.S.data)
        back = got.as_numpy()
        for name in ("U", "S", "V"):
            np.testing.assert_allclose(
                getattr(back, name).values, getattr(want, name).values, atol=1e-10
            )


# ------------------------------ what tests/test_gpu.py checks on CuPy, on device1
# (Dask cannot take array-api-strict arrays as chunks, so the chunked and Zarr cases
# stay CuPy-only; `device="gpu"` means CuPy, so only the move to the host is here.)


def _on_device(obj):
    return obj.copy(data=dev(obj.values))


@pytest.fixture(scope="module")
def genotypes():
    import xsvd

    return xsvd.datasets.genotypes(n_variants=3_000, n_samples=200, seed=0)


def test_genotype_results_stay_on_the_device_and_match_numpy(genotypes):
    host_data = genotypes.astype("float32")
    kw = dict(k=5, dim="samples", center=True, seed=3, n_power_iter=3)
    got, want = _on_device(host_data).svd.compressed(**kw), host_data.svd.compressed(**kw)
    assert on_device(got.U.data) and on_device(got.V.data)
    back = got.as_numpy()
    assert isinstance(back.S.data, np.ndarray)
    # float32 products: equal to their rounding
    np.testing.assert_allclose(back.S.values, want.S.values, rtol=1e-5)
    np.testing.assert_allclose(back.V.values, want.V.values, atol=2e-5)
    np.testing.assert_allclose(back.U.values, want.U.values, atol=2e-5)


def test_packed_genotypes_on_the_device(genotypes):
    import xsvd

    packed = xsvd.pack_genotypes(genotypes)
    on_dev = packed.copy(data=packed.data.with_data(dev(packed.data.data)))
    kw = dict(k=4, dim="samples", center=True, seed=1, missing="mean")
    got, want = on_dev.svd.compressed(**kw), packed.svd.compressed(**kw)
    assert on_device(got.S.data) and on_device(got.V.data)
    np.testing.assert_allclose(got.as_numpy().S.values, want.S.values, rtol=1e-5)
    np.testing.assert_allclose(got.as_numpy().V.values, want.V.values, atol=2e-5)


def test_land_nan_weights_and_the_move_to_the_host():
    import xsvd

    sst = xsvd.datasets.climate_field(n_time=80, n_lat=10, n_lon=20)
    w = np.sqrt(np.cos(np.deg2rad(sst.lat)))
    on_dev = _on_device(sst)
    for run in (
        lambda d, **o: d.svd.exact(dim="time", center=True, k=4, weights=w, **o),
        lambda d, **o: d.svd.compressed(dim="time", center=True, k=4, weights=w, seed=0, **o),
    ):
        want = run(sst)
        got = run(on_dev)
        assert on_device(got.V.data)
        np.testing.assert_allclose(got.as_numpy().V.values, want.V.values, atol=1e-10)
        moved = run(on_dev, device="cpu")  # the data to the host first: NumPy results
        assert isinstance(moved.V.data, np.ndarray)
        np.testing.assert_allclose(moved.V.values, want.V.values, atol=1e-12)  # NaN alike


# ------------------------------------------------ elementwise sweeps per sub-block

ROWS, COLS, SUB_BLOCKS = 100, 20, 4  # sub-blocks of ROWS x COLS, SUB_BLOCKS per pass
_OPERATORS = ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__neg__")
_OPERATORS += ("__invert__", "__and__", "__or__", "__lt__", "__gt__", "__eq__", "__abs__")
#: not elementwise sweeps: products, views, writes into place, creation
_NOT_SWEEPS = {"matmul", "tensordot", "reshape", "concat", "asarray", "empty", "zeros", "ones"}


class _Sweeps:
    """Counts the functions and operators of the strict namespace that sweep a whole
    sub-block elementwise (a conversion only when the dtype changes)."""

    def __init__(self):
        self.count = 0
        self.shapes = {(ROWS, COLS), (COLS, ROWS)}

    def sub_block(self, *values) -> bool:
        return any(tuple(getattr(v, "shape", ()) or ()) in self.shapes for v in values)

    def namespace(self, ns):
        sweeps = self

        class Counting:
            def __getattr__(self, name):
                f = getattr(ns, name)
                if not callable(f) or name in _NOT_SWEEPS or isinstance(f, type):
                    return f

                def counted(*a, **k):
                    out = f(*a, **k)
                    same = name == "astype" and a[0].dtype == a[1]
                    # a gather reads only the columns it takes: a sweep when it takes all
                    args = (out,) if name == "take" else (*a, *k.values(), out)
                    if not same and sweeps.sub_block(*args):
                        sweeps.count += 1
                    return out

                return counted

        return Counting()


@pytest.fixture
def sweeps(monkeypatch):
    from xsvd.core.randomized import feature_stripes

    # views (no conversion) walk larger sub-blocks: the same sweeps, counted by shape here
    monkeypatch.setattr(feature_stripes, "VIEW_SUB_BLOCKS", 1)
    counter = _Sweeps()
    plain_api = backend.api
    monkeypatch.setattr(
        backend, "api", lambda x: counter.namespace(xs) if plain_api(x) is xs else plain_api(x)
    )
    array_type = type(dev(np.ones(1)))
    for op in _OPERATORS:
        method = getattr(array_type, op)

        def counted(self, *args, _method=method):
            out = _method(self, *args)
            if counter.sub_block(self, *args, out):
                counter.count += 1
            return out

        monkeypatch.setattr(array_type, op, counted)
    return counter


#: Sweeps of each sub-block, besides the products: on the first pass and on each later
#: one. The first pass finds NaN columns from the sums a product gives (a column holding
#: NaN sums to NaN), magnitudes from the sums of squares (their one sweep), so float data
#: take one sweep; land (features NaN at every sample) one more over stripes of samples
#: (zeroed; later passes gather the other features, a copy of them as the sweep), none
#: over stripes of features (left out of the products, never read again).
#: Later passes: the conversion (int8) and the centering of float32 products over
#: stripes of samples (float64 products, and any over stripes of features, center by a
#: rank-one correction), and with missing="mean" the mask and the fill.
SWEEPS = {
    ("samples", "float64"): (1, 0),
    ("samples", "float32"): (1, 1),
    ("samples", "land"): (2, 1),
    ("samples", "int8"): (2, 2),
    ("samples", "mean"): (4, 2),  # and 4 in the read of the means before the passes
    ("features", "float64"): (1, 0),
    ("features", "float32"): (1, 0),
    ("features", "land"): (1, 0),
    ("features", "int8"): (2, 1),
    ("features", "mean"): (6, 2),
}


@pytest.mark.filterwarnings("ignore:With krylov=False")
@pytest.mark.parametrize(("orientation", "kind"), list(SWEEPS))
def test_sweeps_of_each_sub_block_per_pass(sweeps, orientation, kind):
    import xsvd

    rng = np.random.default_rng(0)
    a = rng.standard_normal((SUB_BLOCKS * ROWS, COLS)) * 3
    kw = {"center": True, "seed": 0}
    if kind == "mean":  # every feature of every sub-block has some: no sweep is partial
        a[rng.random(a.shape) < 0.02] = np.nan
        a[np.arange(a.shape[0]), np.arange(a.shape[0]) % a.shape[1]] = np.nan
        kw["missing"] = "mean"
    if kind == "land":
        land = [3, 4, 5, 11, 150, 151, 152, 153, 154, 155]  # missing at every sample
        if orientation == "samples":
            a[:, land[:4]] = np.nan
            sweeps.shapes.add((ROWS, COLS - 4))  # the other features, gathered
        else:  # the samples are a's columns
            a[land, :] = np.nan
    a = a.astype(np.float64 if kind in ("mean", "land") else kind)
    x = dev(a if orientation == "samples" else a.T)
    counts = []
    with xsvd.set_options(gpu_sub_block_elements=ROWS * COLS):
        for q in (0, 1):
            sweeps.count = 0
            randomized_svd(x, 3, n_power_iter=q, n_oversamples=5, krylov=False, **kw)
            counts.append(sweeps.count / SUB_BLOCKS)
    first, later = SWEEPS[orientation, kind]
    prepass = 4 if (orientation, kind) == ("samples", "mean") else 0
    assert counts == [prepass + first, prepass + first + later]
    # the goal: at most two beyond the products (missing="mean" aside on the first pass)
    assert later <= 2 and (first <= 2 or kind == "mean")
