"""Peak memory of the analyses on the same lazy input: plain EOF, MCA, extended EOF.

    .venv/bin/python benchmarks/analyses_memory.py                 # two 3,000 x 90 x 140 fields
    .venv/bin/python benchmarks/analyses_memory.py --quick         # small smoke run
    .venv/bin/python benchmarks/analyses_memory.py --compare /tmp/xsvd-old   # also another tree
    .venv/bin/python benchmarks/analyses_memory.py --layouts time,space --cases eof,bootstrap

Writes two float64 Zarr stores (``--shape``, default 3,000 x 90 x 140: 0.30 GB
each as float64) per layout (``--layouts``: ``time``, chunks of ``--chunk`` time
steps holding every grid point, Dask stripes of samples; ``space``, chunks of
every time step and ``--rows`` latitudes, stripes of features) to a
temporary folder, opens them lazily (``xr.open_zarr``) and runs each analysis
in a **fresh Python process**, which reports its own peak resident set size
(``ru_maxrss``: the whole process, imports included) and its wall time:

- ``open``: imports and opening the stores only (the floor);
- ``eof``: ``xsvd.compressed(left, k, dim="time", center=True, seed=0)`` and its
  ``explained_variance_ratio``;
- ``mca``: ``xsvd.mca(left, right, k, seed=0)`` and its
  ``squared_covariance_fraction`` (``||C||_F^2``: one more read of each field);
- ``mca-decomposition``: the same without the fractions;
- ``extended``: ``xsvd.extended_eof(left, k, embedding=4, seed=0)`` and its
  ``explained_variance_ratio``;
- ``hilbert``: ``xsvd.hilbert_eof(left, k, method="compressed", seed=0)`` and its
  ``explained_variance_ratio``;
- ``bootstrap``: ``xsvd.bootstrap(left, k, n_replicates=10, seed=0)`` and its
  ``explained_variance_ratio`` and ``replicate_explained_variance_ratio``;
  ``bootstrap-100`` (only when named in ``--cases``): the same with the default
  100 replicates.

The table gives each run's largest difference in these numbers from the same case
and layout in the first tree (the same results?).

``--compare DIR`` runs the same in another source tree (e.g. ``git archive
HEAD~3 | tar -x -C DIR``) on the same stores, one after the other
(``--skip-this-tree``: only those). Results go to ``<out>/<name>.json`` and
``<out>/<name>.md`` (``--name``, default ``analyses-memory``). Goal (issue 29):
no analysis above the plain EOF's peak + 0.3 GB.
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

ROOT = HERE.parent
CASES = ("open", "eof", "mca", "mca-decomposition", "extended", "hilbert", "bootstrap")

# Run in a child process: prints one JSON line with time, peak RSS and the numbers.
CHILD = r"""
import json, resource, sys, time
case, left_path, right_path, k, tree = sys.argv[1:6]
k = int(k)
sys.path.insert(0, tree)
t0 = time.perf_counter()
import numpy as np, xarray as xr
import xsvd
left = xr.open_zarr(left_path)["field"]
right = xr.open_zarr(right_path)["field"]
out = []
if case == "eof":
    res = xsvd.compressed(left, k, dim="time", center=True, seed=0)
    out = res.explained_variance_ratio.values
elif case == "mca":
    res = xsvd.mca(left, right, k, dim="time", seed=0)
    out = res.squared_covariance_fraction.values
elif case == "mca-decomposition":
    res = xsvd.mca(left, right, k, dim="time", seed=0)
    out = res.singular_values.values
elif case == "extended":
    res = xsvd.extended_eof(left, k, embedding=4, tau=1, dim="time", seed=0)
    out = res.explained_variance_ratio.values
elif case == "hilbert":
    res = xsvd.hilbert_eof(left, k, dim="time", method="compressed", seed=0)
    out = res.explained_variance_ratio.values
elif case in ("bootstrap", "bootstrap-100"):
    n = 10 if case == "bootstrap" else 100
    res = xsvd.bootstrap(left, k, n_replicates=n, dim="time", seed=0)
    ratios = res.replicate_explained_variance_ratio.values.ravel()
    out = np.r_[res.explained_variance_ratio.values, ratios]
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak_bytes": peak, "values": [float(v) for v in out]}))
"""


def _cut(n: int, step: int) -> tuple:
    return (step,) * (n // step) + ((n % step,) if n % step else ())


def write_store(path: Path, shape: tuple, chunk: int, seed: int, rows: int | None = None) -> None:
    """A float64 field (time, lat, lon) of 12 modes plus noise, written chunk by chunk:
    chunks of ``chunk`` time steps (every grid point), or with ``rows``, of every time
    step and ``rows`` latitudes."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    n, ny, nx = shape
    rng = np.random.default_rng(seed)
    patterns = rng.standard_normal((12, ny, nx))
    amplitudes = np.random.default_rng([seed, n]).standard_normal((n, 12)) * 0.8 ** np.arange(12)

    def block(block_info=None):
        (t0, t1), (y0, y1), _ = block_info[None]["array-location"]
        noise = np.random.default_rng([seed, t0, y0]).standard_normal((t1 - t0, y1 - y0, nx))
        modes = np.einsum("tm,mxy->txy", amplitudes[t0:t1], patterns[:, y0:y1])
        return modes + noise + 10.0

    chunks = (_cut(n, chunk), (ny,), (nx,)) if rows is None else ((n,), _cut(ny, rows), (nx,))
    x = da.map_blocks(block, chunks=chunks, dtype="float64")
    coords = {"time": np.arange(n), "lat": np.linspace(-89, 89, ny), "lon": np.arange(nx) * 2.0}
    da_ = xr.DataArray(x, dims=("time", "lat", "lon"), coords=coords, name="field")
    da_.to_dataset().to_zarr(path, mode="w")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--shape", default="3000x90x140", help="time x lat x lon of each field")
    p.add_argument("--chunk", type=int, default=100, help="time steps per Zarr chunk")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--rows", type=int, default=10, help="latitudes per chunk (layout space)")
    p.add_argument("--layouts", default="time", help="time (chunks of time steps), space")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--compare", type=Path, action="append", default=[], help="another tree")
    p.add_argument("--skip-this-tree", action="store_true", help="only the --compare trees")
    p.add_argument("--quick", action="store_true", help="small fields (smoke run)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--name", default="analyses-memory", help="name of the result files")
    args = p.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split("x"))
    if args.quick:
        shape = (300, 20, 30)
    trees = [] if args.skip_this_tree else [("this tree", ROOT)]
    trees += [(str(t), t.resolve()) for t in args.compare]
    tmp = Path(tempfile.mkdtemp(prefix="xsvd-analyses-memory-"))
    runs = []
    try:
        for layout in args.layouts.split(","):
            stores = []
            for seed, name in enumerate(("left", "right")):
                path = tmp / f"{layout}-{name}.zarr"
                t0 = time.perf_counter()
                rows = args.rows if layout == "space" else None
                write_store(path, shape, args.chunk, seed, rows)
                print(f"wrote {path.name} {shape} in {time.perf_counter() - t0:.0f} s", flush=True)
                stores.append(path)
            for label, tree in trees:
                for case in args.cases.split(","):
                    out = run_child(CHILD, case, *stores, args.k, tree)
                    out.update(case=case, tree=label, layout=layout)
                    runs.append(out)
                    print(json.dumps({k: v for k, v in out.items() if k != "values"}), flush=True)
            shutil.rmtree(tmp / f"{layout}-left.zarr", ignore_errors=True)
            shutil.rmtree(tmp / f"{layout}-right.zarr", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gb = shape[0] * shape[1] * shape[2] * 8 / 1e9
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": f"{os.cpu_count()} cores, {platform.platform()}",
        "config": dict(
            shape=shape, field_gb=round(gb, 3), chunk=args.chunk, rows=args.rows, k=args.k
        ),
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2))
    (args.out / f"{args.name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def markdown(report: dict) -> str:
    cfg = report["config"]
    lines = [
        "# Peak memory of the analyses on the same lazy input",
        "",
        f"- Date (UTC): {report['date']}",
        f"- Command: `{report['command']}`",
        f"- Machine: {report['machine']}",
        f"- Input: two float64 Zarr stores {cfg['shape']} ({cfg['field_gb']} GB each), "
        f"layout `time`: chunks of {cfg['chunk']} time steps (every grid point); `space`: "
        f"every time step, {cfg.get('rows')} latitudes; opened with `xr.open_zarr`; "
        f"k={cfg['k']}",
        "- Each run is a fresh process; peak = its maximum resident set size "
        "(`ru_maxrss`, imports included).",
        "",
        "| tree | layout | case | time s | peak RSS GB | over the plain EOF GB "
        "| goal (≤ EOF + 0.3 GB) | max difference from the first tree |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first = {}
    for r in report["runs"]:
        first.setdefault((r["case"], r.get("layout", "time")), r.get("values"))
    eof = {
        (r["tree"], r.get("layout", "time")): r.get("peak_bytes")
        for r in report["runs"]
        if r["case"] == "eof"
    }
    for r in report["runs"]:
        where = f"| {r['tree']} | {r.get('layout', 'time')} | {r['case']}"
        if "error" in r:
            lines.append(f"{where} | failed: {r['error']} | | | | |")
            continue
        base = eof.get((r["tree"], r.get("layout", "time")))
        over = (r["peak_bytes"] - base) / 1e9 if base else float("nan")
        goal = (
            "" if r["case"] in ("open", "eof") or not base else ("met" if over <= 0.3 else "MISSED")
        )
        ref, values = first.get((r["case"], r.get("layout", "time"))), r.get("values")
        same = (
            f"{max(abs(a - b) for a, b in zip(ref, values, strict=True)):.1e}"
            if ref and values and len(ref) == len(values)
            else ""
        )
        lines.append(
            f"{where} | {r['seconds']:.1f} | {r['peak_bytes'] / 1e9:.2f} | {over:+.2f} | {goal} "
            f"| {same} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
