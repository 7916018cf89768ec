"""PCA of genotypes: xsvd against PLINK 2's ``--pca``, same files, same threads: time and memory.

Writes synthetic genotypes (Balding-Nichols, 3 populations) as a PLINK 1
``.bed`` file set (and, with ``--zarr``, a Zarr copy, uint8), then runs each
tool **in a process of its own** and reports its wall time and its peak
resident memory (``ru_maxrss`` of that process, from ``os.wait4`` in a small
launcher, as ``/usr/bin/time`` measures it):

- PLINK 2: ``plink2 --bfile data --pca approx K --threads T`` (randomized) and,
  with ``--plink-exact``, ``plink2 --bfile data --pca K --threads T`` (exact:
  the relationship matrix, then its eigenvectors);
- xsvd on the ``.bed``: ``open_plink`` -> ``patterson_scaling`` ->
  ``.svd.compressed(k, center=True, weights=w, missing="mean")`` with its
  default settings (block Krylov, 8 passes), on a threaded Dask scheduler with
  T workers, at ``open_plink``'s default chunks;
- xsvd, ``open_plink`` -> ``patterson_scaling`` alone (no PCA);
- xsvd on the Zarr copy (``--zarr``): ``open_zarr`` -> the same PCA;
- xsvd's imports alone (python, numpy, pandas, xarray, dask, xsvd): the
  baseline that "above imports" subtracts, measured, not assumed.

Both sides do the same standardization (centering by 2p, scaling by
1/sqrt(2p(1-p)), monomorphic variants dropped) and report eigenvalues the
same way (S**2 / number of variants given). Accuracy is the largest relative
error of the K eigenvalues against an exact reference: the eigenvalues of the
standardized genetic relationship matrix, accumulated in float64 from the
in-memory genotypes (not timed).

Run: ``python benchmarks/plink.py`` (defaults: 100,000 variants x 5,000
samples, K=10, 2 threads); ``python benchmarks/plink.py --variants 164685
--samples 1800 --plink-exact`` is the size of issue 23's stdpopsim set. Needs
``plink2`` on PATH (Debian: ``apt-get install plink2``). Results go to
``benchmarks/results/plink.{json,md}`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MB = 2**20


# ------------------------------------------------------------ one process per tool


#: Runs its arguments as a child and reports the child's own peak RSS. A process
#: started straight from this (large) one would count this one's memory too: Linux
#: carries the memory of a process over ``exec`` into ``ru_maxrss``, so the child
#: is forked from a small Python that has imported nothing (~10 MiB), as
#: ``/usr/bin/time`` does.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\nPEAK_RSS_KIB {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd`` to its end: its wall seconds, peak RSS (MiB, ``ru_maxrss``) and stdout."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *cmd], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    kib = int(proc.stderr.rsplit("PEAK_RSS_KIB", 1)[1].split()[0])
    return seconds, kib / 1024, proc.stdout


def worker(args) -> None:
    """``--worker NAME``: one tool's work in this process; prints a JSON line."""
    import dask
    import dask.array  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import xarray  # noqa: F401

    import xsvd

    if args.worker == "imports":
        print(json.dumps({}))
        return
    t0 = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        if args.worker == "zarr":
            gt = xsvd.open_zarr(args.data, "genotype")
        else:
            gt = xsvd.open_plink(args.data)
        kept, w = xsvd.patterson_scaling(gt)
        if args.worker == "scaling":
            print(json.dumps({"seconds": time.perf_counter() - t0}))
            return
        res = kept.svd.compressed(
            k=args.k,
            dim="samples",  # the default for open_plink's data; given for older xsvd
            center=True,
            weights=w,
            missing="mean",
            n_power_iter=args.q,
            seed=0,
        )
        ev = res.S.values**2 / w.attrs["n_variants"]
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - t0,
                "eigenvalues": [float(x) for x in ev],
                "passes": res.settings.get("passes"),
                "estimated_error": float(2 * res.errors["S_relative"].max()),
                "chunks": int(gt.data.chunks[0][0]),
            }
        )
    )


def run_xsvd(name: str, data: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", name, "--data", str(data)]
    cmd += ["--k", str(args.k), "--threads", str(args.threads)]
    if args.q is not None:
        cmd += ["--q", str(args.q)]
    seconds, peak, stdout = run_measured(cmd)
    return dict(json.loads(stdout.strip().splitlines()[-1]), process_seconds=seconds, peak=peak)


def run_plink(prefix: Path, k: int, threads: int, out: Path, exact: bool) -> dict:
    cmd = ["plink2", "--bfile", str(prefix), "--pca"]
    cmd += [str(k)] if exact else ["approx", str(k)]
    cmd += ["--threads", str(threads), "--out", str(out)]
    seconds, peak, _ = run_measured(cmd)
    return dict(
        seconds=seconds,
        process_seconds=seconds,
        peak=peak,
        eigenvalues=[float(x) for x in np.loadtxt(f"{out}.eigenval")],
    )


# ------------------------------------------------------------------- reference


def exact_eigenvalues(gt, k: int) -> np.ndarray:
    """Top-k eigenvalues of the Patterson-standardized GRM (float64, all variants counted)."""
    n_var, n_samp = gt.shape
    grm = np.zeros((n_samp, n_samp))
    step = 5_000
    for a in range(0, n_var, step):
        g = np.asarray(gt[a : a + step].values, dtype=np.float64)
        p = g.mean(axis=1) / 2
        sel = (p > 0) & (p < 1)
        pp = p[sel][:, None]
        x = (g[sel] - 2 * pp) / np.sqrt(2 * pp * (1 - pp))
        grm += x.T @ x
    ev = np.linalg.eigvalsh(grm)[::-1][:k]
    return ev / n_var


# ------------------------------------------------------------------------ main


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=5_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--q", type=int, default=None, help="xsvd n_power_iter (default: xsvd's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plink-exact", action="store_true", help="also time plink2 --pca (exact)")
    ap.add_argument("--no-approx", action="store_true", help="skip plink2 --pca approx")
    ap.add_argument("--zarr", action="store_true", help="also run xsvd on a Zarr (uint8) copy")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "plink")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker(args)
        return
    if shutil.which("plink2") is None:
        sys.exit("plink2 is not on PATH (Debian/Ubuntu: apt-get install plink2).")

    import xsvd

    work = args.workdir or Path(tempfile.mkdtemp(prefix="xsvd-plink-"))
    work.mkdir(parents=True, exist_ok=True)
    prefix = work / f"data-{args.variants}x{args.samples}"
    gt = xsvd.datasets.genotypes(
        args.variants, args.samples, n_populations=3, seed=11, chunks=20_000
    )
    if not Path(f"{prefix}.bed").exists():
        xsvd.write_plink(gt, prefix)
    store = work / f"data-{args.variants}x{args.samples}.zarr"
    if args.zarr and not store.exists():
        chunk = max(1, (16 * MB) // args.samples)
        gt.astype("uint8").chunk(variants=chunk).to_dataset().to_zarr(store, mode="w")
    print(f"data: {args.variants} variants x {args.samples} samples in {work}", flush=True)

    cached = work / f"exact-{args.variants}x{args.samples}-k{args.k}.npy"
    if cached.exists():  # the reference of an earlier run on the same data
        exact = np.load(cached)
    else:
        print("exact reference ...", flush=True)
        exact = exact_eigenvalues(gt, args.k)
        np.save(cached, exact)
    del gt

    rows = {}
    print("xsvd imports ...", flush=True)
    rows["xsvd imports only (python, numpy, pandas, xarray, dask, xsvd)"] = run_xsvd(
        "imports", prefix, args
    )
    base = next(iter(rows.values()))["peak"]
    print("xsvd open_plink + patterson_scaling ...", flush=True)
    rows["xsvd open_plink + patterson_scaling (no PCA)"] = run_xsvd(
        "scaling", Path(f"{prefix}.bed"), args
    )
    print("xsvd on the .bed ...", flush=True)
    rows["xsvd open_plink + patterson_scaling + PCA"] = run_xsvd("bed", Path(f"{prefix}.bed"), args)
    if args.zarr:
        print("xsvd on the Zarr copy ...", flush=True)
        rows["xsvd open_zarr (Zarr, uint8) + PCA"] = run_xsvd("zarr", store, args)
    if args.plink_exact:
        print("plink2 --pca (exact) ...", flush=True)
        rows["PLINK 2 --pca (exact)"] = run_plink(
            prefix, args.k, args.threads, work / "plink-exact", exact=True
        )
    if not args.no_approx:
        print("plink2 --pca approx ...", flush=True)
        rows["PLINK 2 --pca approx"] = run_plink(
            prefix, args.k, args.threads, work / "plink-approx", exact=False
        )
    version = subprocess.run(["plink2", "--version"], capture_output=True, text=True).stdout
    version = version.strip()

    plink_exact = rows.get("PLINK 2 --pca (exact)", {}).get("peak")
    results = []
    for name, r in rows.items():
        ev = np.asarray(r.get("eigenvalues", []))
        rel = np.abs(ev - exact) / exact if ev.size else None
        xsvd_row = name.startswith("xsvd") and "imports" not in name
        results.append(
            dict(
                tool=name,
                seconds=round(r.get("seconds", r["process_seconds"]), 2),
                process_seconds=round(r["process_seconds"], 2),
                peak_rss_mb=round(r["peak"], 1),
                above_imports_mb=round(r["peak"] - base, 1) if xsvd_row else None,
                max_rel_err_all=None if rel is None else float(rel.max()),
                max_rel_err_top2=None if rel is None else float(rel[:2].max()),
                eigenvalues=[float(x) for x in ev],
                passes=r.get("passes"),
                estimated_error=r.get("estimated_error"),
                chunk_variants=r.get("chunks"),
            )
        )
    meta = dict(
        variants=args.variants,
        samples=args.samples,
        k=args.k,
        q=args.q,
        threads=args.threads,
        plink2=version,
        machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{args.threads} threads",
        exact=[float(x) for x in exact],
        imports_peak_mb=round(base, 1),
        plink_exact_peak_mb=None if plink_exact is None else round(plink_exact, 1),
        command="python benchmarks/plink.py " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, results=results), indent=2))
    table = markdown(meta, results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


def markdown(meta: dict, results: list[dict]) -> str:
    settings = "defaults" if meta["q"] is None else f"n_power_iter={meta['q']}"
    lines = [
        f"PCA of {meta['variants']:,} variants x {meta['samples']:,} samples, k={meta['k']}, "
        f"{meta['threads']} threads ({meta['plink2']}; xsvd {settings}); {meta['machine']}.",
        f"Command: `{meta['command']}`. Each tool runs in a process of its own; peak RSS is "
        "its `ru_maxrss` (MiB); 'above imports' subtracts the measured peak of a process "
        f"that only imports xsvd and its stack ({meta['imports_peak_mb']:.0f} MiB).",
        "",
        "| tool | passes | seconds | peak RSS MiB | above imports MiB "
        "| max rel. error, all k eigenvalues | xsvd's own estimate of it "
        "| max rel. error, top 2 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def num(x, fmt):
        return "" if x is None else format(x, fmt)

    for r in results:
        lines.append(
            f"| {r['tool']} | {r['passes'] or ''} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} "
            f"| {num(r['above_imports_mb'], '.0f')} | {num(r['max_rel_err_all'], '.2e')} "
            f"| {num(r['estimated_error'], '.2e')} | {num(r['max_rel_err_top2'], '.2e')} |"
        )
    if meta["plink_exact_peak_mb"]:
        pca = next(r for r in results if r["tool"] == "xsvd open_plink + patterson_scaling + PCA")
        ratio = pca["above_imports_mb"] / meta["plink_exact_peak_mb"]
        lines += [
            "",
            f"xsvd's pipeline above its imports: {pca['above_imports_mb']:.0f} MiB = "
            f"{ratio:.2f}x PLINK 2 exact's peak ({meta['plink_exact_peak_mb']:.0f} MiB); "
            f"goal (issue 23): at most 2x: {'met' if ratio <= 2 else 'NOT met'}.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
