"""Peak memory of a compressed SVD streamed from Zarr stores of two sizes.

    /work/venv/bin/python benchmarks/memory.py                  # 2 GB and 4 GB stores
    /work/venv/bin/python benchmarks/memory.py --quick          # small smoke run

Writes uint8 genotype stores of ``--rows`` x ``--width`` (default 200,000 and
400,000 x 10,000: 2 GB and 4 GB as uint8; chunks 20,000 x 10,000) to a
temporary folder, then decomposes each (k=10, q=2) in a **fresh Python
process per run**, with xsvd (``xsvd.open_zarr`` then ``.svd.compressed``)
and with ``dask.array.linalg.svd_compressed(da.from_zarr(...),
compute=True)``, both on dask's threaded scheduler. Each process reports its
own peak resident set size (``ru_maxrss``: the whole process, imports
included) and its wall time. Results go to ``<out>/memory.json`` and
``<out>/memory.md``.

Goals (issue 5): xsvd on the 4 GB store under 2 GB peak, and at most 25% more
than on the 2 GB store of the same width.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helper modules next to this file
from _harness import run_child  # noqa: E402

# Run in a child process: prints one JSON line with time, peak RSS and singular values.
CHILD = r"""
import json, resource, sys, time
import numpy as np
tool, path, k, q = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
if tool == "xsvd":
    import xsvd
    gt = xsvd.open_zarr(path, "genotype")
    res = gt.svd.compressed(k=k, dim="samples", n_power_iter=q, seed=0)
    s = res.S.values
elif tool == "dask":
    import dask.array as da
    x = da.from_zarr(path, component="genotype")
    u, s, v = da.linalg.svd_compressed(x, k, n_power_iter=q, seed=0, compute=True)
    s = s.compute()
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak_bytes": peak, "s": [float(v) for v in s]}))
"""


def write_store(path: Path, rows: int, width: int, chunk_rows: int) -> None:
    """A uint8 0/1/2 genotype store written chunk by chunk (never whole in memory)."""
    import dask.array as da
    import xarray as xr

    x = da.random.default_rng(0).integers(
        0, 3, size=(rows, width), chunks=(chunk_rows, width), dtype="uint8"
    )
    xr.DataArray(x, dims=("variants", "samples"), name="genotype").to_dataset().to_zarr(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", default="200000,400000", help="rows of each store (comma-separated)")
    p.add_argument("--width", type=int, default=10_000)
    p.add_argument("--chunk-rows", type=int, default=20_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--n-power-iter", type=int, default=2)
    p.add_argument("--tools", default="xsvd,dask")
    p.add_argument("--quick", action="store_true", help="small stores (smoke run)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    rows = [int(r) for r in args.rows.split(",")]
    width, chunk = args.width, args.chunk_rows
    if args.quick:
        rows, width, chunk = [20_000, 40_000], 1_000, 2_000
    tools = args.tools.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="xsvd-memory-"))
    runs = []
    try:
        for r in rows:
            store = tmp / f"gt-{r}.zarr"
            t0 = time.perf_counter()
            write_store(store, r, width, chunk)
            print(f"wrote {store.name} ({r} x {width} uint8) in {time.perf_counter() - t0:.0f} s")
            for tool in tools:
                out = run_child(CHILD, tool, store, args.k, args.n_power_iter)
                out.update(tool=tool, rows=r, width=width, gb=r * width / 1e9)
                runs.append(out)
                print(json.dumps({k: v for k, v in out.items() if k != "s"}), flush=True)
            shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": f"{os.cpu_count()} cores, {platform.platform()}",
        "config": dict(rows=rows, width=width, chunk_rows=chunk, k=args.k, q=args.n_power_iter),
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory.json").write_text(json.dumps(report, indent=2))
    (args.out / "memory.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def markdown(report: dict) -> str:
    lines = [
        "# Peak memory: compressed SVD streamed from Zarr",
        "",
        f"- Date (UTC): {report['date']}",
        f"- Command: `{report['command']}`",
        f"- Machine: {report['machine']}",
        f"- Config: {report['config']}",
        "- Each run is a fresh process; peak = its maximum resident set size "
        "(`ru_maxrss`, imports included).",
        "",
        "| store | tool | time s | peak RSS GB | time / xsvd |",
        "|---|---|---|---|---|",
    ]
    by = {(r["rows"], r["tool"]): r for r in report["runs"]}
    for r in report["runs"]:
        base = by.get((r["rows"], "xsvd"), {})
        store = f"{r['rows']:,} x {r['width']:,} ({r['gb']:.1f} GB)"
        if "error" in r:
            lines.append(f"| {store} | {r['tool']} | failed: {r['error']} | | |")
            continue
        ratio = r["seconds"] / base["seconds"] if "seconds" in base else float("nan")
        lines.append(
            f"| {store} | {r['tool']} | {r['seconds']:.1f} | {r['peak_bytes'] / 1e9:.2f} "
            f"| {ratio:.2f}× |"
        )
    xs = [r for r in report["runs"] if r["tool"] == "xsvd" and "peak_bytes" in r]
    if len(xs) >= 2:
        small, large = min(xs, key=lambda r: r["rows"]), max(xs, key=lambda r: r["rows"])
        growth = large["peak_bytes"] / small["peak_bytes"] - 1
        lines += [
            "",
            "## Goals",
            "",
            f"- xsvd peak on the {large['gb']:.1f} GB store: {large['peak_bytes'] / 1e9:.2f} GB "
            f"(goal < 2 GB: {'met' if large['peak_bytes'] < 2e9 else 'MISSED'})",
            f"- growth from the {small['gb']:.1f} GB store: {100 * growth:+.0f}% "
            f"(goal ≤ +25%: {'met' if growth <= 0.25 else 'MISSED'})",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
