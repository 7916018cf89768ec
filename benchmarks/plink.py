"""PCA of genotypes: xsvd against PLINK 2's ``--pca approx``, same data, same threads.

Writes synthetic genotypes (Balding-Nichols, 3 populations) as a PLINK 1
``.bed`` file set and as a Zarr copy (uint8), then times

- PLINK 2: ``plink2 --bfile data --pca approx K --threads T`` (its own file
  reading, allele frequencies, Patterson scaling and randomized PCA);
- xsvd on the same ``.bed``: ``open_plink`` -> ``patterson_scaling`` ->
  ``.svd.compressed(k, missing="mean")`` with its default settings (block
  Krylov, 8 passes), on a threaded Dask scheduler with T workers;
- xsvd on the Zarr copy: ``open_zarr`` -> the same.

Both sides do the same standardization (centering by 2p, scaling by
1/sqrt(2p(1-p)), monomorphic variants dropped) and report eigenvalues the
same way (S**2 / number of variants given). Accuracy is the largest relative
error of the K eigenvalues against an exact reference: the eigenvalues of the
standardized genetic relationship matrix, accumulated in float64 from the
in-memory genotypes (not timed).

Run: ``python benchmarks/plink.py`` (defaults: 100,000 variants x 5,000
samples, K=10, 2 threads); needs ``plink2`` on PATH (Debian: ``apt-get
install plink2``). Results go to ``benchmarks/results/plink.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dask
import numpy as np

import xsvd

HERE = Path(__file__).resolve().parent


def exact_eigenvalues(gt, k: int) -> np.ndarray:
    """Top-k eigenvalues of the Patterson-standardized GRM (float64, all variants counted)."""
    g = np.asarray(gt.values)
    n_var, n_samp = g.shape
    p = g.mean(axis=1, dtype=np.float64) / 2
    keep = (p > 0) & (p < 1)
    grm = np.zeros((n_samp, n_samp))
    step = 5_000
    for a in range(0, n_var, step):
        sel = keep[a : a + step]
        pp = p[a : a + step][sel][:, None]
        x = (g[a : a + step][sel] - 2 * pp) / np.sqrt(2 * pp * (1 - pp))
        grm += x.T @ x
    ev = np.linalg.eigvalsh(grm)[::-1][:k]
    return ev / n_var


def run_plink(prefix: Path, k: int, threads: int, out: Path) -> tuple[float, np.ndarray, str]:
    cmd = [
        "plink2",
        "--bfile",
        str(prefix),
        "--pca",
        "approx",
        str(k),
        "--threads",
        str(threads),
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    version = subprocess.run(["plink2", "--version"], capture_output=True, text=True).stdout
    return seconds, np.loadtxt(f"{out}.eigenval"), version.strip()


def run_xsvd(gt, k: int, q: int | None) -> tuple[float, np.ndarray, dict]:
    t0 = time.perf_counter()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd.compressed(
        k=k, dim="samples", center=True, weights=w, missing="mean", n_power_iter=q, seed=0
    )
    seconds = time.perf_counter() - t0
    settings = dict(res.settings, estimated_error=float(2 * res.errors["S_relative"].max()))
    return seconds, res.S.values**2 / w.attrs["n_variants"], settings


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=5_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--q", type=int, default=None, help="xsvd n_power_iter (default: xsvd's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "plink")
    args = ap.parse_args(argv)
    if shutil.which("plink2") is None:
        sys.exit("plink2 is not on PATH (Debian/Ubuntu: apt-get install plink2).")

    work = args.workdir or Path(tempfile.mkdtemp(prefix="xsvd-plink-"))
    work.mkdir(parents=True, exist_ok=True)
    gt = xsvd.datasets.genotypes(args.variants, args.samples, n_populations=3, seed=11)
    prefix = work / "data"
    xsvd.write_plink(gt, prefix)
    store = work / "data.zarr"
    gt.chunk(variants=max(1, (16 * 2**20) // args.samples)).to_dataset().to_zarr(store, mode="w")
    print(f"data: {args.variants} variants x {args.samples} samples in {work}", flush=True)

    cached = work / f"exact-{args.variants}x{args.samples}-k{args.k}.npy"
    if cached.exists():  # the reference of an earlier run on the same data
        exact = np.load(cached)
    else:
        print("exact reference ...", flush=True)
        exact = exact_eigenvalues(gt, args.k)
        np.save(cached, exact)

    rows = []
    print("plink2 --pca approx ...", flush=True)
    t_plink, ev_plink, version = run_plink(prefix, args.k, args.threads, work / "plink")
    rows.append(("PLINK 2 --pca approx (.bed)", t_plink, ev_plink, {}))
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        print("xsvd on the .bed ...", flush=True)
        t, ev, settings = run_xsvd(xsvd.open_plink(f"{prefix}.bed"), args.k, args.q)
        rows.append(("xsvd open_plink (.bed)", t, ev, settings))
        print("xsvd on the Zarr copy ...", flush=True)
        t, ev, settings = run_xsvd(xsvd.open_zarr(store, "genotype"), args.k, args.q)
        rows.append(("xsvd open_zarr (Zarr, uint8)", t, ev, settings))

    results = []
    for name, seconds, ev, settings in rows:
        rel = np.abs(ev - exact) / exact
        results.append(
            dict(
                tool=name,
                seconds=round(seconds, 3),
                speedup_vs_plink=round(t_plink / seconds, 2),
                max_rel_err_all=float(rel.max()),
                max_rel_err_top2=float(rel[:2].max()),
                eigenvalues=[float(x) for x in ev],
                passes=settings.get("passes"),
                estimated_error=settings.get("estimated_error"),
            )
        )
    meta = dict(
        variants=args.variants,
        samples=args.samples,
        k=args.k,
        q=args.q,
        threads=args.threads,
        plink2=version,
        machine=f"{platform.processor() or platform.machine()}, {args.threads} threads",
        exact=[float(x) for x in exact],
        command="python benchmarks/plink.py " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, results=results), indent=2))
    lines = [
        f"PCA of {args.variants:,} variants x {args.samples:,} samples, k={args.k}, "
        f"{args.threads} threads ({version}; xsvd "
        f"{'defaults' if args.q is None else f'n_power_iter={args.q}'}).",
        "",
        "| tool | passes | seconds | speed-up vs PLINK 2 | max rel. error, all k eigenvalues "
        "| xsvd's own estimate of it | max rel. error, top 2 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        est = r["estimated_error"]
        lines.append(
            f"| {r['tool']} | {r['passes'] or ''} | {r['seconds']:.2f} "
            f"| {r['speedup_vs_plink']:.1f}x | {r['max_rel_err_all']:.2e} "
            f"| {'' if est is None else f'{est:.2e}'} | {r['max_rel_err_top2']:.2e} |"
        )
    table = "\n".join(lines) + "\n"
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
