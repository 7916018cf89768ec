"""MCA's fused pass against two products a pass, both on the one block-Krylov loop (issue 29).

    .venv/bin/python benchmarks/solver_fused.py                  # eofs example + lazy Dask pair
    .venv/bin/python benchmarks/solver_fused.py --shape 2000x45x90 --repeat 3

``xsvd.mca`` decomposes the cross-covariance ``C = Bl^T Br / (n - 1)`` with
:func:`~xsvd.core.randomized.operator.fused_operator_svd`: one call reads a
block of samples of both fields and gives ``C W`` and ``C^T T`` together
(two-sided block Lanczos, a side of :func:`~xsvd.core.randomized.solver.solve`).
With :func:`~xsvd.core.randomized.operator.operator_svd` (the same loop) a pass
is ``Y = C W`` then ``C^T Y``: two reads of each field. Both at their defaults
(stop when converged, at most 8 passes), timed (fastest of ``--repeat``), reads
of each field counted, the largest relative error of the ``k`` singular values
against a tight run. The machine may be shared: compare the two rows of one
table (ratios), not runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import xarray as xr

import xsvd
from xsvd.climate.fields import cross_products, prepare_field
from xsvd.core.randomized.operator import fused_operator_svd, operator_svd


def eofs_example():
    from eofs.examples import example_data_path

    with xr.open_dataset(example_data_path("sst_ndjfm_anom.nc")) as ds:
        sst = ds["sst"].load()
    with xr.open_dataset(example_data_path("hgt_djf.nc")) as ds:
        z = ds["z"].load().squeeze("pressure", drop=True)
    z = z.isel(time=np.isin(z.time.dt.year.values, sst.time.dt.year.values))
    z = z.assign_coords(time=sst.time.values)
    return "eofs example (SST x Z500, 50 winters)", sst, z


def lazy_pair(shape, store=None):
    """Two fields chunked along time; with ``store`` (a folder) written to Zarr there and
    opened lazily, so that every read is a read of the disk."""
    n, ny, nx = shape
    left = xsvd.datasets.climate_field(n, ny, nx, n_modes=12, seed=0)
    right = xsvd.datasets.climate_field(n, ny, nx, n_modes=12, seed=0, noise=0.0)
    right = right + 0.2 * np.random.default_rng(1).standard_normal(right.shape)
    chunks = {"time": max(1, n // 8)}
    left, right = left.rename("left").chunk(chunks), right.rename("right").chunk(chunks)
    if store is None:
        return f"lazy Dask pair {n} x {ny} x {nx}", left, right
    opened = []
    for da in (left, right):
        path = f"{store}/{da.name}.zarr"
        da.to_dataset().to_zarr(path, mode="w")
        opened.append(xr.open_zarr(path)[da.name])
    return f"Zarr pair {n} x {ny} x {nx} (read from disk)", *opened


def compare(label, left, right, k, repeat):
    fl = prepare_field(left, "time", xsvd.coslat_weights(left), center=True)
    fr = prepare_field(right, "time", xsvd.coslat_weights(right), center=True)
    n, scale = fl.shape[0], 1.0 / (fl.shape[0] - 1)
    reads = {"n": 0}

    def both(W, T):
        reads["n"] += 1
        CW, CtT = cross_products(fl, fr, W, T)
        return CW * scale, CtT * scale

    def matmat(W):
        reads["n"] += 1
        return fl.t_times(fr.times(W)) * scale

    def rmatmat(T):
        reads["n"] += 1
        return fr.t_times(fl.times(T)) * scale

    shape = (fl.shape[1], fr.shape[1])
    runs = {
        "fused (one read a pass)": lambda: fused_operator_svd(both, shape, k, seed=0),
        "two products (two reads a pass)": lambda: operator_svd(matmat, rmatmat, shape, k, seed=0),
    }
    ref = fused_operator_svd(both, shape, k, seed=1, tol=1e-12, max_passes=16).S
    print(f"\n{label}: C is {shape[0]} x {shape[1]}, n={n}, k={k}")
    print(f"{'loop':<33}{'time s':>9}{'passes':>8}{'reads':>7}{'max rel S err':>15}")
    for name, run in runs.items():
        best = np.inf
        for _ in range(repeat):
            reads["n"] = 0
            t0 = time.perf_counter()
            res = run()
            best = min(best, time.perf_counter() - t0)
        err = float(np.max(np.abs(res.S - ref) / ref))
        print(f"{name:<33}{best:>9.3f}{res.passes:>8}{reads['n']:>7}{err:>15.1e}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--shape", default="2000x45x90", help="time x lat x lon of the lazy pair")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", choices=["eofs", "lazy"], help="one of the two cases")
    p.add_argument("--zarr", help="a folder: the lazy pair is written there as Zarr and read")
    args = p.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.lower().split("x"))
    cases = {"eofs": eofs_example, "lazy": lambda: lazy_pair(shape, args.zarr)}
    for name, case in cases.items():
        if args.only in (None, name):
            compare(*case(), args.k, args.repeat)


if __name__ == "__main__":
    main()
