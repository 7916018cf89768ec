"""The ``xsvd`` command.

``xsvd demo`` runs a compressed SVD on each embedded dataset (a genotype
matrix with population structure, on Dask; a climate field with a land mask,
on NumPy) and prints what a user would want to see.
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
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"xsvd: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
