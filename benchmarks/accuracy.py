"""Accuracy per pass over the data: xsvd (each option), dask ``svd_compressed``, scikit-learn.

The data are ``benchmarks/plink.py``'s: synthetic genotypes (Balding-Nichols,
3 populations, seed 11), Patterson-standardized (centered by ``2p``, divided
by ``sqrt(2p(1-p))``, monomorphic variants dropped), held in memory as one
float32 (samples x variants) matrix so that every solver sees the same
numbers. Eigenvalues are ``S**2 / n_variants`` (PLINK 2's scale); the
reference is the eigenvalues of the float64 genetic relationship matrix.

For each solver and each number of passes, the largest relative error of the
``k`` eigenvalues, and for xsvd its own estimate of that error
(``2 * res.errors["S_relative"]``, the largest over components).

- xsvd: ``compressed(k, n_power_iter=q)`` reads the data ``q + 1`` times;
  block Krylov (``krylov=True``, the default) with ``n_oversamples`` 10 and 30,
  and subspace iteration (``krylov=False``).
- dask ``svd_compressed(k, n_power_iter=q)`` and scikit-learn
  ``randomized_svd(k, n_iter=q)``: normalized power iterations, ``2q + 2``
  products with the data (each a pass over it), 10 oversamples.

Run: ``python benchmarks/accuracy.py`` (100,000 x 5,000 like plink.py; a few
minutes on 2 cores; ``--variants 20000 --samples 2000`` for a quick look).
Writes ``benchmarks/results/accuracy.{json,md}`` and the plot
``docs/_static/accuracy-per-pass.png``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import xarray as xr

import xsvd

HERE = Path(__file__).resolve().parent
PLOT = HERE.parent / "docs" / "_static" / "accuracy-per-pass.png"


def standardized(gt: np.ndarray) -> np.ndarray:
    """Patterson-standardized genotypes, samples x kept variants, float32."""
    p = gt.mean(axis=1, dtype=np.float64) / 2
    keep = (p > 0) & (p < 1)
    g, p = gt[keep], p[keep][:, None]
    x = (g - 2 * p) / np.sqrt(2 * p * (1 - p))
    return np.ascontiguousarray(x.T, dtype=np.float32)


def exact_eigenvalues(x: np.ndarray, k: int, n_variants: int) -> np.ndarray:
    grm = np.zeros((x.shape[0], x.shape[0]))
    for a in range(0, x.shape[1], 10_000):
        b = x[:, a : a + 10_000].astype(np.float64)
        grm += b @ b.T
    return np.linalg.eigvalsh(grm)[::-1][:k] / n_variants


def xsvd_run(x: xr.DataArray, k: int, q: int, **options):
    res = x.svd.compressed(k=k, dim="samples", n_power_iter=q, seed=0, **options)
    estimate = float(2 * res.errors["S_relative"].max())  # of S**2, to first order
    return res.S.values, res.settings["passes"], estimate


def dask_run(x: da.Array, k: int, q: int):
    _, s, _ = da.linalg.svd_compressed(x, k, n_power_iter=q, n_oversamples=10, seed=0)
    return np.asarray(s.compute()), 2 * q + 2, None


def sklearn_run(x: np.ndarray, k: int, q: int):
    from sklearn.utils.extmath import randomized_svd

    _, s, _ = randomized_svd(x, k, n_oversamples=10, n_iter=q, random_state=0)
    return s, 2 * q + 2, None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=5_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--max-passes", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None, help="a .npy of the genotypes to reuse")
    ap.add_argument(
        "--reference", type=Path, default=None, help="a .npy of the exact eigenvalues to reuse"
    )
    ap.add_argument("--out", type=Path, default=HERE / "results" / "accuracy")
    ap.add_argument("--plot", type=Path, default=PLOT)
    args = ap.parse_args(argv)

    if args.cache is not None and args.cache.exists():
        gt = np.load(args.cache)
    else:
        gt = xsvd.datasets.genotypes(args.variants, args.samples, n_populations=3, seed=11).values
        if args.cache is not None:
            np.save(args.cache, gt)
    n_variants = gt.shape[0]
    x = standardized(gt)
    del gt
    print(f"data: {x.shape[0]} samples x {x.shape[1]} variants (standardized, float32)", flush=True)
    if args.reference is not None and args.reference.exists():
        exact = np.load(args.reference)
    else:
        t0 = time.perf_counter()
        exact = exact_eigenvalues(x, args.k, n_variants)
        print(f"exact reference in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.reference is not None:
            np.save(args.reference, exact)

    labeled = xr.DataArray(x, dims=("samples", "variants"))
    chunked = da.from_array(x, chunks=(x.shape[0], 10_000))
    one_read, two_reads = (lambda q: q + 1), (lambda q: 2 * q + 2)  # passes for q iterations
    solvers = {
        "xsvd block Krylov (default, p=10)": (lambda q: xsvd_run(labeled, args.k, q), one_read),
        "xsvd block Krylov, p=30": (
            lambda q: xsvd_run(labeled, args.k, q, n_oversamples=30),
            one_read,
        ),
        "xsvd subspace iteration (krylov=False)": (
            lambda q: xsvd_run(labeled, args.k, q, krylov=False),
            one_read,
        ),
        "dask svd_compressed": (lambda q: dask_run(chunked, args.k, q), two_reads),
        "scikit-learn randomized_svd": (lambda q: sklearn_run(x, args.k, q), two_reads),
    }
    curves, failures = {}, {}
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        for name, (run, passes_of) in solvers.items():
            points = []
            for q in range(0, args.max_passes):
                if passes_of(q) > args.max_passes:
                    break
                t0 = time.perf_counter()
                try:
                    s, passes, estimate = run(q)
                except Exception as e:  # a peer that fails (e.g. overflow): say so, go on
                    print(f"{name}: {passes_of(q)} passes failed: {e!r}", flush=True)
                    failures.setdefault(name, []).append(f"{passes_of(q)} passes: {e!r}")
                    continue
                seconds = time.perf_counter() - t0
                ev = s**2 / n_variants
                rel = np.abs(ev - exact) / exact
                point = dict(
                    passes=int(passes),
                    q=q,
                    max_rel_err=float(rel.max()),
                    max_rel_err_top2=float(rel[:2].max()),
                    estimate=estimate,
                    seconds=round(seconds, 2),
                )
                points.append(point)
                est = "" if estimate is None else f", estimated {estimate:.2e}"
                print(f"{name}: {passes} passes, max rel. err {rel.max():.2e}{est}", flush=True)
            curves[name] = points

    meta = dict(
        variants=args.variants,
        samples=args.samples,
        kept_variants=int(x.shape[1]),
        k=args.k,
        threads=args.threads,
        exact=[float(v) for v in exact],
        failures=failures,
        machine=f"{platform.processor() or platform.machine()}, {args.threads} threads",
        versions=dict(xsvd=xsvd.__version__, dask=dask.__version__, numpy=np.__version__),
        command="python benchmarks/accuracy.py " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, curves=curves), indent=2))
    args.out.with_suffix(".md").write_text(_table(meta, curves))
    _plot(meta, curves, args.plot)
    print(_table(meta, curves))


def _table(meta: dict, curves: dict) -> str:
    fails = meta.get("failures", {})
    failed = {int(f.split()[0]) for fs in fails.values() for f in fs}
    passes = sorted({p["passes"] for points in curves.values() for p in points} | failed)
    lines = [
        f"Largest relative error of the {meta['k']} eigenvalues, by passes over the data "
        f"({meta['variants']:,} variants x {meta['samples']:,} samples; "
        f"`{meta['command'].strip()}`).",
        "",
        "| solver | " + " | ".join(str(p) for p in passes) + " |",
        "|---|" + "---:|" * len(passes),
    ]
    for name, points in curves.items():
        by = {p["passes"]: p for p in points}
        cells = [
            f"{by[p]['max_rel_err']:.1e}"
            if p in by
            else ("fails" if any(f.startswith(f"{p} passes") for f in fails.get(name, [])) else "")
            for p in passes
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        if any(p["estimate"] is not None for p in points):
            cells = [
                f"{by[p]['estimate']:.1e}" if p in by and by[p]["estimate"] is not None else ""
                for p in passes
            ]
            lines.append("| ↳ its own estimate | " + " | ".join(cells) + " |")
    for name, fs in fails.items():
        lines.append(f"\n{name} failed at: " + "; ".join(fs))
    return "\n".join(lines) + "\n"


def _plot(meta: dict, curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    styles = ["o-", "s-", "^-", "x--", "d--"]
    for (name, points), style in zip(curves.items(), styles, strict=False):
        xs = [p["passes"] for p in points]
        line = ax.semilogy(xs, [p["max_rel_err"] for p in points], style, label=name)[0]
        if any(p["estimate"] is not None for p in points) and "default" in name:
            ax.semilogy(
                xs,
                [p["estimate"] for p in points],
                ":",
                color=line.get_color(),
                label="  its error estimate (res.errors)",
            )
    ax.axhline(1e-3, color="0.5", lw=0.8)
    ax.text(1.2, 1.15e-3, "1e-3", color="0.4", fontsize=8)
    ax.set_xlabel("passes over the data")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"largest relative error of the {meta['k']} eigenvalues")
    ax.set_title(
        f"Genotype PCA, {meta['variants']:,} variants x {meta['samples']:,} samples, k={meta['k']}",
        fontsize=10,
    )
    ax.set_xlim(0.5, max(p["passes"] for pts in curves.values() for p in pts) + 0.5)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
