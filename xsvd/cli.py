"""The ``xsvd`` command.

``xsvd demo`` runs a compressed SVD on each embedded dataset (a genotype
matrix with population structure, on Dask; a climate field with a land mask,
on NumPy) and prints what a user would want to see.

``xsvd run STORE --var NAME --dim DIM --k K --out OUT`` decomposes a variable
of a Zarr store (or netCDF file) and writes U, S and V with their labels to a
new Zarr store. Errors a user can cause end in one line that says what to do,
a non-zero exit status, and no partial output.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np


def _demo(args: argparse.Namespace) -> int:
    import xsvd
    from xsvd import datasets

    out = sys.stdout
    print(f"xsvd {xsvd.__version__} demo: compressed SVD of two embedded datasets\n", file=out)

    figures = {}

    # --- genomics: PCA of a genotype matrix, streamed with Dask ----------------
    gt = datasets.genotypes(
        args.variants, args.samples, n_populations=3, seed=args.seed, chunks=args.variants // 4
    )
    print("1. Genotypes (PCA of samples, centered per variant)", file=out)
    _describe_input(gt, out)
    t0 = time.perf_counter()
    res = gt.svd.compressed(k=args.k, dim="samples", center=True, seed=args.seed)
    dt = time.perf_counter() - t0
    _describe_result(res, dt, out)
    pcs = res.U.isel(component=[0, 1])
    means = pcs.groupby("population").mean()
    print("   mean of PC1, PC2 per population (populations separate):", file=out)
    for pop in means.population.values:
        v = means.sel(population=pop).values
        print(f"     {pop}: {v[0]:+.3f} {v[1]:+.3f}", file=out)
    figures["genotype-scores.png"] = lambda r=res: r.plot.scores(hue="population").figure

    # --- climate: EOFs of an SST-like field with land and area weights ----------
    sst, modes = datasets.climate_field(seed=args.seed, return_modes=True)
    print("\n2. Sea-surface temperature (EOFs over time, area-weighted, land masked)", file=out)
    _describe_input(sst, out)
    w = np.sqrt(np.cos(np.deg2rad(sst.lat)))
    t0 = time.perf_counter()
    res = sst.svd.compressed(k=args.k, dim="time", center=True, weights=w, seed=args.seed)
    dt = time.perf_counter() - t0
    _describe_result(res, dt, out)
    land = int(res.V.isel(component=0).isnull().sum())
    print(f"   land cells kept as NaN in V: {land} of {res.V.isel(component=0).size}", file=out)
    corr = []
    patterns = res.V / w  # V holds weighted patterns; undo the weights to compare
    for i in range(modes.sizes["mode"]):
        a = modes.patterns.isel(mode=i).values.ravel()
        b = patterns.isel(component=i).values.ravel()
        ok = ~np.isnan(a)
        corr.append(abs(np.corrcoef(a[ok], b[ok])[0, 1]))
    print(
        "   |correlation| of EOF patterns (V / weights) with the planted modes: "
        + " ".join(f"{c:.3f}" for c in corr),
        file=out,
    )
    figures["climate-scree.png"] = lambda r=res: r.plot.scree().figure
    figures["climate-components.png"] = lambda r=res: r.plot.components(n=4, col_wrap=2)
    _save_figures(figures, args.out, out)
    return 0


def _save_figures(figures: dict, folder: str, out) -> None:
    """Write the demo's plots as PNG files (when matplotlib is installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # the command only writes files
        import matplotlib.pyplot as plt
    except ImportError:
        print('\nPlots skipped: install matplotlib (pip install "xsvd[plot]").', file=out)
        return
    from pathlib import Path

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    print("\nPlots:", file=out)
    for name, draw in figures.items():
        fig = draw()
        fig.savefig(path / name, dpi=110, bbox_inches="tight")
        plt.close(fig)
        print(f"   {path / name}", file=out)


class UsageError(Exception):
    """A problem with the command's input, reported as one line."""


def _open(path: str, var: str | None):
    import os

    import xarray as xr

    import xsvd

    remote = "://" in path
    if not remote and not os.path.exists(path):
        raise UsageError(f"{path!r} does not exist; give the path of a Zarr store or netCDF file.")
    if path.rstrip("/").endswith(".zarr") or remote or os.path.isdir(path):
        return xsvd.open_zarr(path, var)
    try:
        ds = xr.open_dataset(path, chunks={})
    except Exception as exc:  # unknown format, missing netCDF engine, ...
        raise UsageError(
            f"could not open {path!r} as netCDF ({type(exc).__name__}: {exc}); give a Zarr store "
            "or a netCDF file (netCDF4 files need `pip install h5netcdf`)."
        ) from exc
    return ds[xsvd.io.pick_variable(ds, var, path)]


def _run_command(args: argparse.Namespace) -> int:
    import os

    import xsvd

    if os.path.exists(args.out) and not args.overwrite:
        raise UsageError(f"{args.out!r} already exists; choose another --out or add --overwrite.")
    data = _open(args.store, args.var)
    dims = [d for part in args.dim for d in part.split(",") if d]
    missing = [d for d in dims if d not in data.dims]
    if missing:
        raise UsageError(
            f"{missing[0]!r} is not a dimension of {data.name!r}; its dimensions are "
            f"{list(data.dims)}."
        )
    options = dict(dim=dims, center=args.center, progress=args.progress)
    if args.method != "exact":
        for name in ("n_power_iter", "seed"):
            if getattr(args, name) is not None:
                options[name] = getattr(args, name)
    t0 = time.perf_counter()
    res = xsvd.svd(data, args.k, method=args.method, **options)
    seconds = time.perf_counter() - t0
    res.to_zarr(args.out, mode="w" if args.overwrite else "w-")
    _describe_result(res, seconds, sys.stdout)
    print(f"   wrote U, S, V to {args.out} (reopen with xsvd.open_result)", file=sys.stdout)
    return 0


def _describe_input(da, out) -> None:
    backend = "dask" if da.chunks is not None else "numpy"
    shape = " x ".join(f"{d}={n}" for d, n in da.sizes.items())
    print(f"   input: {shape}, {da.dtype}, {backend}-backed, {da.nbytes / 2**20:.1f} MiB", file=out)


def _describe_result(res, seconds: float, out) -> None:
    U, S, V = res
    evr = res.explained_variance_ratio.values
    print(
        f"   method: {res.method} (k={S.size}, {res.settings.get('passes', 1)} passes over "
        f"the data, {res.settings.get('dtype', 'float64')} products) in {seconds:.2f} s",
        file=out,
    )
    print(f"   U {dict(U.sizes)}, S {dict(S.sizes)}, V {dict(V.sizes)}", file=out)
    head = " ".join(f"{100 * v:.1f}%" for v in evr[:5])
    print(
        f"   explained variance: {head}{' ...' if evr.size > 5 else ''} "
        f"(total of {evr.size}: {100 * evr.sum():.1f}%)",
        file=out,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xsvd", description="Labeled exact and randomized SVD for xarray."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a compressed SVD on the embedded datasets")
    demo.add_argument("--k", type=int, default=10, help="components (default 10)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--variants", type=int, default=40_000, help="genotype variants")
    demo.add_argument("--samples", type=int, default=600, help="genotype samples")
    demo.add_argument(
        "--out", default="xsvd-demo-output", help="folder for the PNG plots (default %(default)s)"
    )
    demo.set_defaults(func=_demo)

    run = sub.add_parser(
        "run",
        help="decompose a variable of a Zarr store or netCDF file",
        description="Decompose a variable of a Zarr store or netCDF file and write U, S, V "
        "(with coordinates and settings) to a new Zarr store.",
    )
    run.add_argument("store", help="Zarr store (path or URL) or netCDF file")
    run.add_argument("--var", help="variable to decompose (default: the only one)")
    run.add_argument(
        "--dim",
        action="append",
        required=True,
        help="sample dimension(s), the rows of the matrix; repeat or comma-separate",
    )
    run.add_argument("--k", type=int, help="number of components (required when compressed)")
    run.add_argument("--center", action="store_true", help="remove each feature's mean")
    run.add_argument("--method", choices=("auto", "exact", "compressed"), default="auto")
    run.add_argument("--n-power-iter", type=int, help="power iterations (compressed)")
    run.add_argument("--seed", type=int, help="random seed (compressed)")
    run.add_argument("--progress", action="store_true", help="show progress per pass")
    run.add_argument("--out", required=True, help="output Zarr store (must not exist)")
    run.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    run.set_defaults(func=_run_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ValueError, TypeError, OSError, ImportError) as exc:
        message = " ".join(str(exc).split())  # one line
        print(f"xsvd: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
