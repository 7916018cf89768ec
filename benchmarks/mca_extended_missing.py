"""Time of ``missing="mean"`` in ``xsvd.mca`` and ``xsvd.extended_eof``: a field with gaps
(1% of the samples of 10% of the features, and land) against the same field filled
beforehand (``da.fillna(da.mean("time"))``), NumPy in memory and Dask in stripes of
samples, the same seed and passes (``n_power_iter=4``); best of 3 calls each, in turn.

    .venv/bin/python benchmarks/mca_extended_missing.py

Prints, per analysis and backend: seconds filled beforehand, seconds with
``missing="mean"``, their ratio, and the largest relative difference of ``S``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import xarray as xr

import xsvd


def fields(t=2000, nl=10000, nr=3000, seed=0):
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((t, 5)) * [5.0, 3.0, 2.0, 1.0, 0.5]
    left = common @ rng.standard_normal((5, nl)) + rng.standard_normal((t, nl))
    right = common @ rng.standard_normal((5, nr)) + rng.standard_normal((t, nr))
    for x in (left, right):
        n = x.shape[1]
        gappy = rng.choice(n, n // 10, replace=False)
        rows = rng.integers(0, t, size=(t // 100, gappy.size))
        x[rows, gappy[None, :]] = np.nan
        x[:, rng.choice(n, n // 50, replace=False)] = np.nan  # land
    return (
        xr.DataArray(left, dims=("time", "p")),
        xr.DataArray(right, dims=("time", "q")),
    )


def interleaved(first, second, repeat=3):
    """Best seconds of each of two calls, run in turn (a busy machine slows both alike)."""
    times, out = ([], []), [None, None]
    for _ in range(repeat):
        for i, run in enumerate((first, second)):
            t = time.perf_counter()
            out[i] = run()
            times[i].append(time.perf_counter() - t)
    return min(times[0]), min(times[1]), out


def main() -> None:
    left, right = fields()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        filled = [x.fillna(x.mean("time")) for x in (left, right)]
    opts = dict(seed=0, n_power_iter=4)
    for backend in ("numpy", "dask"):

        def on(x, backend=backend):
            return x.chunk({"time": 250}) if backend == "dask" else x

        cases = {
            "mca": lambda fl, fr, **kw: xsvd.mca(on(fl), on(fr), 10, **opts, **kw),
            "extended_eof": lambda fl, fr, **kw: xsvd.extended_eof(
                on(fl), 10, embedding=4, **opts, **kw
            ),
        }
        for name, run in cases.items():
            t0, t1, (want, got) = interleaved(
                lambda run=run: run(*filled), lambda run=run: run(left, right, missing="mean")
            )
            diff = float(np.max(np.abs(got.S.values / want.S.values - 1)))
            print(
                f"{name:13s} {backend:6s} filled beforehand {t0:6.2f} s, missing='mean' "
                f"{t1:6.2f} s, ratio {t1 / t0:.2f}, S rel. diff {diff:.1e}"
            )


if __name__ == "__main__":
    main()
