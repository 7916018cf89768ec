"""The ``xsvd`` command.

``xsvd demo`` runs a compressed SVD on each embedded dataset (a genotype
matrix with population structure, on Dask; a climate field with a land mask,
on NumPy) and prints what a user would want to see.

``xsvd run STORE --var NAME --dim DIM --k K --out OUT`` decomposes a variable
of a Zarr store (or netCDF file) and writes U, S and V with their labels to a
new Zarr store; ``--weights coslat`` weights gridded data by area (EOFs),
``--missing mean`` fills missing values with their feature's mean. Errors a
user can cause end in one line that says what to do, a non-zero exit status,
and no partial output.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

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
    w = xsvd.coslat_weights(sst, dim="time")
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
    figures["climate-components.png"] = lambda r=res: r.plot.components(n=4, unweighted=True)
    figures["climate-timeseries.png"] = lambda r=res: r.plot.timeseries(n=3, scaling="unit")
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


class _Input:
    """The variable to decompose, and the other variables of its store (for --weights)."""

    def __init__(self, path: str, var: str | None):
        import os

        import xarray as xr

        import xsvd

        self.path = path
        remote = "://" in path
        if not remote and not os.path.exists(path):
            raise UsageError(
                f"{path!r} does not exist; give the path of a Zarr store or netCDF file."
            )
        self.zarr = path.rstrip("/").endswith(".zarr") or remote or os.path.isdir(path)
        if self.zarr:
            self.data = xsvd.open_zarr(path, var)
            return
        try:
            self.dataset = xr.open_dataset(path, chunks={})
        except Exception as exc:  # unknown format, missing netCDF engine, ...
            raise UsageError(
                f"could not open {path!r} as netCDF ({type(exc).__name__}: {exc}); give a Zarr "
                "store or a netCDF file (netCDF4 files need `pip install h5netcdf`)."
            ) from exc
        self.data = self.dataset[xsvd.io.pick_variable(self.dataset, var, path)]

    def variable(self, name: str):
        """A coordinate of the data, or another variable of the store, by name."""
        import xsvd

        if name in self.data.coords:
            return self.data.coords[name]
        if not self.zarr:
            if name in self.dataset.variables:
                return self.dataset[name]
            held = list(self.dataset.variables)
        else:
            try:
                return xsvd.open_zarr(self.path, name, missing_chunks="ignore")
            except ValueError:
                import xarray as xr

                held = list(xr.open_zarr(self.path).variables)
        raise UsageError(
            f"--weights {name!r} is neither 'coslat' nor a variable or coordinate of "
            f"{self.path!r}, which holds {held}."
        )


def _weights(source: _Input, spec: str | None, sample_dims: list[str]) -> tuple[Any, str]:
    """The weights that ``--weights`` names, and a few words that say what they are."""
    if spec is None:
        return None, "none"
    if spec == "coslat":
        from xsvd.climate.weights import coslat_weights, latitude_rank

        data = source.data
        if not any(c.dims and latitude_rank(c) for c in data.coords.values()):
            raise UsageError(  # the command has no lat= to name one: say what it looks for
                f"--weights coslat needs a latitude coordinate (named lat or latitude, or with "
                f"standard_name 'latitude' or units 'degrees_north'), but {data.name!r} has the "
                f"coordinates {list(data.coords)}. Add one to the input, or give --weights VAR "
                "with a variable of weights."
            )
        try:
            w = coslat_weights(data, dim=sample_dims)
        except ValueError as exc:  # along the sample dims, or not in degrees
            raise UsageError(
                f"--weights coslat: {exc} Or give --weights VAR with a variable of weights."
            ) from exc
        return w, f"{w.attrs['long_name']} (area weights for EOFs)"
    return source.variable(spec), f"variable {spec!r}, as given"


def _run_command(args: argparse.Namespace) -> int:
    import os

    import xsvd

    if os.path.exists(args.out) and not args.overwrite:
        raise UsageError(f"{args.out!r} already exists; choose another --out or add --overwrite.")
    source = _Input(args.store, args.var)
    data = source.data
    dims = [d for part in args.dim for d in part.split(",") if d]
    missing = [d for d in dims if d not in data.dims]
    if missing:
        raise UsageError(
            f"{missing[0]!r} is not a dimension of {data.name!r}; its dimensions are "
            f"{list(data.dims)}."
        )
    if args.method == "compressed" and args.k is None:
        raise UsageError("--method compressed needs --k, the number of components to compute.")
    weights, weights_text = _weights(source, args.weights, dims)
    options = dict(
        dim=dims, center=args.center, progress=args.progress, weights=weights, missing=args.missing
    )
    if args.method != "exact":
        for name in ("n_power_iter", "seed"):
            if getattr(args, name) is not None:
                options[name] = getattr(args, name)
    t0 = time.perf_counter()
    res = xsvd.svd(data, args.k, method=args.method, **options)
    seconds = time.perf_counter() - t0
    res.to_zarr(args.out, mode="w" if args.overwrite else "w-")
    _describe_result(res, seconds, sys.stdout)
    if weights is not None:
        print(f"   weights: {weights_text}", file=sys.stdout)
    print(f"   wrote U, S, V to {args.out} (reopen with xsvd.open_result)", file=sys.stdout)
    return 0


def _describe_input(da, out) -> None:
    backend = "dask" if da.chunks is not None else "numpy"
    shape = " x ".join(f"{d}={n}" for d, n in da.sizes.items())
    print(f"   input: {shape}, {da.dtype}, {backend}-backed, {da.nbytes / 2**20:.1f} MiB", file=out)


def _describe_result(res, seconds: float, out) -> None:
    U, S, V = res
    evr = res.explained_variance_ratio.values
    passes = res.settings.get("passes", 1)
    print(
        f"   method: {res.method} (k={S.size}, {_plural(passes, 'pass', 'passes')} over "
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


def _plural(n: int, one: str, many: str) -> str:
    """``"1 pass"``, ``"2 passes"``."""
    return f"{n} {one if n == 1 else many}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xsvd", description="Labeled exact and randomized SVD for xarray."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run}")
    demo = sub.add_parser(
        "demo",
        help="run a compressed SVD on the embedded example data and save plots",
        description="Run a compressed SVD on the two embedded example data sets (genotypes "
        "with population structure, on Dask; a climate field with land, on NumPy), print "
        "what was found and save the plots as PNG files.",
    )
    demo.add_argument("--k", type=int, default=10, help="components (default %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    demo.add_argument(
        "--variants", type=int, default=40_000, help="genotype variants (default %(default)s)"
    )
    demo.add_argument(
        "--samples", type=int, default=600, help="genotype samples (default %(default)s)"
    )
    demo.add_argument(
        "--out", default="xsvd-demo-output", help="folder for the PNG plots (default %(default)s)"
    )
    demo.set_defaults(func=_demo)

    run = sub.add_parser(
        "run",
        help="decompose a variable of a Zarr store or netCDF file",
        description="Decompose a variable of a Zarr store or netCDF file and write U, S, V "
        "(with coordinates and settings) to a new Zarr store. Example, EOFs of a gridded "
        "field: xsvd run sst.zarr --var sst --dim time --k 10 --center --weights coslat "
        "--out eofs.zarr",
    )
    run.add_argument("store", help="Zarr store (path or URL) or netCDF file")
    run.add_argument("--var", metavar="NAME", help="variable to decompose (default: the only one)")
    run.add_argument(
        "--dim",
        action="append",
        required=True,
        help="sample dimension(s), the rows of the matrix (e.g. time); repeat or comma-separate",
    )
    run.add_argument(
        "--k",
        type=int,
        help="number of components (needed with --method compressed; default: all, by the "
        "exact SVD)",
    )
    run.add_argument("--center", action="store_true", help="remove each feature's mean")
    run.add_argument(
        "--weights",
        metavar="{coslat,VAR}",
        help="multiply each feature by a weight: 'coslat' for sqrt(cos(latitude)) from the "
        "data's latitude coordinate (the square root, so that the covariance is weighted "
        "by cos(latitude), the area of a grid cell: the usual weighting for EOFs of gridded "
        "data), or the name of a variable or coordinate of the input holding the weights, "
        "used as they are (for cell areas, give their square roots)",
    )
    run.add_argument(
        "--missing",
        choices=("error", "mean"),
        default="error",
        help="what to do with missing values (NaN): 'error' stops at a feature missing at "
        "some samples (features missing at every sample, such as land, are always left "
        "out); 'mean' stands each one for its feature's mean (in integer data negative "
        "codes count as missing too, as for genotype calls) (default %(default)s)",
    )
    run.add_argument(
        "--method",
        choices=("auto", "exact", "compressed"),
        default="auto",
        help="exact SVD, compressed (randomized) SVD of k components, or auto: chosen by the "
        "shape (default %(default)s)",
    )
    run.add_argument("--n-power-iter", type=int, metavar="Q", help="power iterations (compressed)")
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
        if args.command == "run":  # the command's spelling of the API's advice
            message = message.replace("`missing='mean'`", "`--missing mean`")
            message = message.replace("missing='mean'", "--missing mean")
        print(f"xsvd: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
