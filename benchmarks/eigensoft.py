"""PCA of genotypes: xsvd against EIGENSOFT's ``smartpca`` on one ``.bed``, and both TW tables.

On one PLINK 1 file set (simulated Balding-Nichols genotypes written with
``xsvd.write_plink``, or any ``--bfile PREFIX``), times

- EIGENSOFT: ``smartpca`` with a parameter file naming the ``.bed/.bim/.fam``,
  ``numoutevec: K``, ``numoutlieriter: 0`` (no outlier removal) and
  ``numthreads: T``. It builds the n x n relationship matrix of the
  Patterson-normalized genotypes (missing calls 0 after centering, i.e. mean
  imputed), scales it to trace n - 1, takes all its eigenvalues and prints
  its Tracy-Widom table (``twstats``'s, with the effective number of markers
  estimated) in its log;
- xsvd ``exact``: ``open_plink`` -> ``patterson_scaling`` -> ``.svd.exact``
  without ``k`` (every eigenvalue, as smartpca) -> ``xsvd.tracy_widom``;
- xsvd ``compressed``: the same with ``.svd.compressed(k=K)`` (its
  defaults: block Krylov), the leading eigenvalues only.

Both scale the genotypes the same way up to a constant (smartpca divides by
``sqrt(p (1 - p))``, xsvd by ``sqrt(2 p (1 - p))``), so the eigenvalues are
put on smartpca's scale, ``(n - 1) * explained_variance_ratio`` (mean 1
over the n - 1 nonzero ones). The Tracy-Widom table is given three times:
from smartpca's log, from EIGENSOFT's ``twstats`` run on xsvd's eigenvalues,
and from ``xsvd.tracy_widom``. The number of significant PCs is the number
of leading components with p < 0.05.

Run: ``python benchmarks/eigensoft.py`` (defaults: 20,000 variants x 1,500
samples, 3 populations, K=10, 2 threads) or ``python benchmarks/eigensoft.py
--bfile PREFIX``; needs EIGENSOFT (Debian: ``apt-get install eigensoft``,
which puts the ``smartpca`` program in ``/usr/lib/eigensoft`` and a wrapper
script of the same name on PATH). Results go to
``benchmarks/results/eigensoft.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
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
#: Debian installs the smartpca program here and a Perl wrapper (other flags) on PATH.
SMARTPCA = ("/usr/lib/eigensoft/smartpca",)
ALPHA = 0.05


def smartpca_program() -> str | None:
    for path in SMARTPCA:
        if Path(path).exists():
            return path
    found = shutil.which("smartpca")
    if found and not Path(found).read_bytes()[:2] == b"#!":  # the program, not a script
        return found
    return None


def tw_rows(lines) -> np.ndarray:
    """(statistic, p-value, effective n) from twstats-style table lines (NA as NaN)."""
    return np.array(
        [[np.nan if t == "NA" else float(t) for t in line.split()[-3:]] for line in lines]
    )


def run_smartpca(program: str, prefix: Path, k: int, threads: int, out: Path) -> dict:
    par = Path(f"{out}.par")
    par.write_text(
        f"genotypename: {prefix}.bed\nsnpname: {prefix}.bim\nindivname: {prefix}.fam\n"
        f"evecoutname: {out}.evec\nevaloutname: {out}.eval\nnumoutevec: {k}\n"
        f"numoutlieriter: 0\nnumthreads: {threads}\n"
    )
    t0 = time.perf_counter()
    log = subprocess.run([program, "-p", str(par)], check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    lines = log.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Tracy-Widom"))
    table = []
    for line in lines[start + 2 :]:
        if not line.strip() or not line.split()[0].isdigit():
            break
        table.append(line)
    used = re.search(r"number of samples used: \d+ number of snps used: \d+", log.stdout)
    version = re.search(r"## smartpca version: (\S+)", log.stdout)
    return dict(
        seconds=seconds,
        peak_mb=peak_mb,
        eigenvalues=np.loadtxt(f"{out}.eval"),
        tw=tw_rows(table),
        used=used.group(0) if used else "?",
        version=version.group(1) if version else "?",
    )


def run_twstats(eigenvalues: np.ndarray, out: Path) -> np.ndarray:
    np.savetxt(f"{out}.eval", eigenvalues, fmt="%.17g")
    subprocess.run(
        ["twstats", "-i", f"{out}.eval", "-o", f"{out}.tw"], check=True, capture_output=True
    )
    return tw_rows(Path(f"{out}.tw").read_text().splitlines()[1:])


def run_xsvd(prefix: Path, k: int | None) -> dict:
    t0 = time.perf_counter()
    kept, w = xsvd.patterson_scaling(xsvd.open_plink(f"{prefix}.bed"))
    if k is None:
        res = kept.svd.exact(dim="samples", center=True, weights=w, missing="mean")
    else:
        res = kept.svd.compressed(
            k=k, dim="samples", center=True, weights=w, missing="mean", seed=0
        )
    evr = res.explained_variance_ratio.values
    seconds = time.perf_counter() - t0
    out = dict(seconds=seconds, eigenvalues=evr * (res.n_samples - 1), variants=kept.sizes)
    if k is None:
        t0 = time.perf_counter()
        tw = xsvd.tracy_widom(res)
        out["tw_seconds"] = time.perf_counter() - t0
        out["tw"] = np.column_stack([tw.statistic, tw.p_value, tw.effective_n])
    return out


def leading(p: np.ndarray) -> int:
    """The number of leading components with p < ALPHA."""
    return int(np.argmin(np.append(np.nan_to_num(p, nan=1.0) < ALPHA, False)))


def simulate(args, prefix: Path) -> None:
    gt = xsvd.datasets.genotypes(
        args.variants, args.samples, n_populations=args.populations, fst=args.fst, seed=11
    )
    if args.missing > 0:
        values = gt.values.astype(np.float32)
        values[np.random.default_rng(1).random(values.shape) < args.missing] = np.nan
        gt = gt.copy(data=values)
    # smartpca ignores SNPs on chromosome 0, the placeholder of a .bim without one
    n = gt.sizes["variants"]
    gt = gt.assign_coords(
        variants=[f"rs{i}" for i in range(n)],
        chrom=("variants", np.full(n, "1")),
        position=("variants", 1 + 1000 * np.arange(n)),
    )
    xsvd.write_plink(gt, prefix)


def simulate_stdpopsim(n_per_population: int, length: float, prefix: Path) -> str:
    """stdpopsim's ``OutOfAfrica_3G09`` (YRI, CEU, CHB) on the first ``length`` bases of
    chr22 at its mean recombination rate (seed 42): the biallelic SNPs of minor allele
    frequency >= 5%, with linkage disequilibrium, as a PLINK 1 file set."""
    try:
        import stdpopsim
    except ImportError:
        sys.exit("--stdpopsim needs stdpopsim and msprime: pip install stdpopsim msprime")
    import xarray as xr

    species = stdpopsim.get_species("HomSap")
    model = species.get_demographic_model("OutOfAfrica_3G09")
    contig = species.get_contig("chr22", right=length)
    n = n_per_population
    ts = stdpopsim.get_engine("msprime").simulate(
        model, contig, {"YRI": n, "CEU": n, "CHB": n}, seed=42
    )
    rows, positions = [], []
    for var in ts.variants():
        if len(var.alleles) != 2:  # biallelic only
            continue
        dosage = var.genotypes[0::2] + var.genotypes[1::2]
        if 0.05 <= dosage.mean() / 2 <= 0.95:
            rows.append(dosage.astype(np.uint8))
            positions.append(int(var.site.position) + 1)
    steps = np.arange(len(positions))  # strictly increasing: p_i = max(p_i, p_{i-1} + 1)
    positions = np.maximum.accumulate(np.asarray(positions) - steps) + steps
    first = ts.samples()[0::2]
    pops = [ts.population(ts.node(u).population).metadata["name"] for u in first]
    gt = xr.DataArray(
        np.array(rows),
        dims=("variants", "samples"),
        coords={
            "variants": [f"rs{i}" for i in range(len(rows))],
            "chrom": ("variants", np.full(len(rows), "22")),
            "position": ("variants", positions),
            "samples": [f"{p}_{i}" for i, p in enumerate(pops)],
        },
    )
    xsvd.write_plink(gt, prefix)
    return (
        f"stdpopsim OutOfAfrica_3G09, chr22 0-{length / 1e6:g} Mb, {n} each of YRI, CEU, "
        "CHB, biallelic SNPs with MAF >= 0.05"
    )


def ld_prune(prefix: Path, spec: str, threads: int, out: Path) -> Path:
    """``plink2 --indep-pairwise SPEC``, then the kept variants as a new file set."""
    common = ["plink2", "--bfile", str(prefix), "--threads", str(threads), "--out", str(out)]
    subprocess.run([*common, "--indep-pairwise", *spec.split()], check=True, capture_output=True)
    subprocess.run(
        [*common, "--extract", f"{out}.prune.in", "--make-bed"], check=True, capture_output=True
    )
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfile", type=Path, default=None, help="an existing PLINK 1 file set")
    ap.add_argument(
        "--stdpopsim",
        type=int,
        default=None,
        metavar="N",
        help="simulate N samples per population of stdpopsim's OutOfAfrica_3G09 (chr22)",
    )
    ap.add_argument("--length", type=float, default=20e6, help="bases of chr22 (--stdpopsim)")
    ap.add_argument(
        "--prune",
        default=None,
        help="LD-prune first: plink2 --indep-pairwise PRUNE, e.g. '50 5 0.2'",
    )
    ap.add_argument("--variants", type=int, default=20_000)
    ap.add_argument("--samples", type=int, default=1_500)
    ap.add_argument("--populations", type=int, default=3)
    ap.add_argument("--fst", type=float, default=0.01)
    ap.add_argument("--missing", type=float, default=0.0, help="share of missing calls")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "eigensoft")
    args = ap.parse_args(argv)
    program = smartpca_program()
    if program is None or shutil.which("twstats") is None:
        sys.exit("EIGENSOFT's smartpca/twstats are not installed (apt-get install eigensoft).")

    work = args.workdir or Path(tempfile.mkdtemp(prefix="xsvd-eigensoft-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.bfile is not None:
        prefix = args.bfile
        data = str(prefix)
    elif args.stdpopsim is not None:
        prefix = work / f"ooa-{args.stdpopsim}-{int(args.length)}"
        about = Path(f"{prefix}.about")
        if not about.exists():  # the simulation of an earlier run in the same workdir
            print("stdpopsim ...", flush=True)
            about.write_text(simulate_stdpopsim(args.stdpopsim, args.length, prefix))
        data = about.read_text()
    else:
        prefix = work / "data"
        simulate(args, prefix)
        data = (
            f"Balding-Nichols, {args.populations} populations, Fst {args.fst}, "
            f"{args.missing:.0%} missing"
        )
    if args.prune:
        if shutil.which("plink2") is None:
            sys.exit("--prune needs plink2 (apt-get install plink2).")
        prefix = ld_prune(prefix, args.prune, args.threads, work / "pruned")
        data += f", LD-pruned with plink2 --indep-pairwise {args.prune}"
    print(f"data: {data}; work in {work}", flush=True)

    print("smartpca ...", flush=True)
    sp = run_smartpca(program, prefix, args.k, args.threads, work / "smartpca")
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        print("xsvd exact ...", flush=True)
        ex = run_xsvd(prefix, None)
        print("xsvd compressed ...", flush=True)
        co = run_xsvd(prefix, args.k)
    tw_xsvd_eigs = run_twstats(ex["eigenvalues"], work / "xsvd")

    k = args.k
    n_var, n_samp = ex["variants"]["variants"], ex["variants"]["samples"]
    ev = {
        "smartpca": sp["eigenvalues"][:k],
        "xsvd exact": ex["eigenvalues"][:k],
        "xsvd compressed": co["eigenvalues"][:k],
    }
    rel = {
        name: float(np.max(np.abs(v - ev["smartpca"]) / ev["smartpca"])) for name, v in ev.items()
    }
    tables = {
        "smartpca (its log)": sp["tw"],
        "twstats on xsvd's eigenvalues": tw_xsvd_eigs,
        "xsvd.tracy_widom": ex["tw"],
    }
    m = min(len(t) for t in tables.values())
    p_diff = float(np.nanmax(np.abs(ex["tw"][:m, 1] - sp["tw"][:m, 1])))
    meta = dict(
        data=data,
        variants=int(n_var),
        samples=int(n_samp),
        k=k,
        threads=args.threads,
        smartpca=f"{program} (version {sp['version']})",
        smartpca_used=sp["used"],
        machine=f"{platform.processor() or platform.machine()}, {args.threads} threads",
        load_average=[round(x, 1) for x in os.getloadavg()],
        command=shlex.join(
            ["python", "benchmarks/eigensoft.py", *(sys.argv[1:] if argv is None else argv)]
        ),
    )
    results = dict(
        seconds={
            "smartpca": round(sp["seconds"], 3),
            "xsvd exact (all eigenvalues) + tracy_widom": round(
                ex["seconds"] + ex["tw_seconds"], 3
            ),
            f"xsvd compressed (k={k})": round(co["seconds"], 3),
        },
        smartpca_peak_rss_mb=round(sp["peak_mb"], 1),
        eigenvalues={name: [float(x) for x in v] for name, v in ev.items()},
        max_rel_diff_vs_smartpca=rel,
        tracy_widom={
            name: {
                "statistic": [float(x) for x in t[:k, 0]],
                "p_value": [float(x) for x in t[:k, 1]],
                "effective_n": [float(x) for x in t[:k, 2]],
                "significant_pcs": leading(t[:, 1]),
            }
            for name, t in tables.items()
        },
        max_abs_p_diff_xsvd_vs_smartpca=p_diff,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(dict(meta=meta, results=results), indent=2))

    lines = [
        f"PCA of {n_var:,} variants x {n_samp:,} samples ({data}), {args.threads} threads; "
        f"smartpca {sp['version']}; load average {meta['load_average'][0]} at the end.",
        f"Command: `{meta['command']}`",
        "",
        "| tool | seconds | speed-up vs smartpca |",
        "|---|---:|---:|",
    ]
    for name, s in results["seconds"].items():
        lines.append(f"| {name} | {s:.2f} | {sp['seconds'] / s:.1f}x |")
    lines += [
        "",
        f"smartpca's peak RSS: {sp['peak_mb']:.0f} MB.",
        "",
        "Eigenvalues on smartpca's scale (mean 1): max relative difference from smartpca's "
        + ", ".join(f"{n} {r:.1e}" for n, r in rel.items() if n != "smartpca")
        + " (smartpca prints 6 decimals).",
        "",
        "| PC | " + " | ".join(ev) + " |",
        "|---:|" + "---:|" * len(ev),
    ]
    for i in range(k):
        lines.append(f"| {i + 1} | " + " | ".join(f"{v[i]:.6f}" for v in ev.values()) + " |")
    lines += [
        "",
        "Tracy-Widom: statistic, p-value, effective number of markers (p < "
        f"{ALPHA}: significant); max |p(xsvd) - p(smartpca)| = {p_diff:.1e}.",
        "",
        "| PC | " + " | ".join(f"{n}: TW, p, n'" for n in tables) + " |",
        "|---:|" + "---|" * len(tables),
    ]
    for i in range(k):
        cells = [f"{t[i, 0]:.3f}, {t[i, 1]:.3g}, {t[i, 2]:.0f}" for t in tables.values()]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    lines.append(
        "| significant PCs | " + " | ".join(str(leading(t[:, 1])) for t in tables.values()) + " |"
    )
    table = "\n".join(lines) + "\n"
    Path(f"{args.out}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
