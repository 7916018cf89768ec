"""Small decompositions beside a busy process: BLAS threads and oversubscription (issue 29).

    .venv/bin/python benchmarks/busy.py --label after
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/busy.py --label "before (abc1234)"

Two fields shaped like the eofs example fields (50 winters; SST 540 points
as 18 x 30, Z500 1,421 points as 29 x 49; synthetic, seeded: shared modes
plus noise) are decomposed with ``k=10`` at the default BLAS threads:

- ``xsvd.svd(sst, k=10, dim="time", center=True)`` (the default method,
  which picks the exact SVD at this shape);
- ``xsvd.compressed(sst, k=10, dim="time")``;
- ``xsvd.mca(sst, z500, 10, dim="time")``;
- ``xeofs.single.EOF(n_modes=10).fit(sst, dim="time")`` when xeofs is installed;
- unless ``--no-one-thread``, xsvd's three calls again with the whole call
  inside a one-thread BLAS limit (``ThreadpoolController().limit(limits=1,
  user_api="blas")``, the controller made once; what
  ``OPENBLAS_NUM_THREADS=1`` gives): what one BLAS thread achieves.

Each call is timed (best and median of ``--repeat``, 5) after one warm-up
run, (a) on the machine as it is ("quiet") and (b) beside busy processes:
``--busy-processes`` (1) subprocesses that multiply 1,000 x 1,000 NumPy
matrices in a loop, each on ``--busy-threads`` BLAS threads (default: every
core), started before and killed after. The ``other`` columns give the
share of the machine's CPU that other processes used during the timed runs
(``_harness.OtherLoad``): on a shared machine "quiet" is only as quiet as
that.

Prints a Markdown table and writes it, under ``## <label>``, into
``--out`` (``benchmarks/results/busy.md``); sections with other labels in
that file are kept, so the runs before and after a change stand side by
side. Run the "before" against a copy of the old code (``git worktree add
/tmp/old <commit>`` and ``PYTHONPATH=/tmp/old``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helper modules next to this file

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from _harness import OtherLoad  # noqa: E402
from _report import machine_info  # noqa: E402
from threadpoolctl import ThreadpoolController  # noqa: E402

import xsvd  # noqa: E402

TITLE = "# Small decompositions beside a busy process (issue 29)"

#: The busy process: NumPy matmuls in a loop until killed.
BUSY = (
    "import numpy as np\n"
    "a = np.random.default_rng(0).standard_normal((1000, 1000))\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    a = a @ a\n"
    "    a /= np.abs(a).max()\n"
)


def fields(n_time: int = 50, seed: int = 0):
    """SST-like (time, 18, 30) and Z500-like (time, 29, 49) fields sharing 6 modes."""
    rng = np.random.default_rng(seed)
    modes = rng.standard_normal((n_time, 6)) * (0.7 ** np.arange(6))
    out = []
    for name, (ny, nx) in (("sst", (18, 30)), ("z500", (29, 49))):
        patterns = rng.standard_normal((6, ny * nx))
        data = modes @ patterns + 0.5 * rng.standard_normal((n_time, ny * nx))
        coords = {"time": np.arange(n_time), "lat": np.linspace(-60, 60, ny)}
        coords["lon"] = np.linspace(0, 358, nx)
        da = xr.DataArray(data.reshape(n_time, ny, nx), dims=("time", "lat", "lon"))
        out.append(da.assign_coords(coords).rename(name))
    return out


def calls(sst, z500, one_thread: bool) -> list[tuple[str, object]]:
    """``(label, fn)`` of every timed call."""
    out = [
        (
            'xsvd.svd(sst, k=10, dim="time", center=True)',
            lambda: xsvd.svd(sst, k=10, dim="time", center=True),
        ),
        ('xsvd.compressed(sst, k=10, dim="time")', lambda: xsvd.compressed(sst, k=10, dim="time")),
        ('xsvd.mca(sst, z500, 10, dim="time")', lambda: xsvd.mca(sst, z500, 10, dim="time")),
    ]
    try:
        import xeofs
    except ImportError:
        pass
    else:
        out.append(
            (
                f'xeofs {xeofs.__version__} single.EOF(n_modes=10).fit(sst, dim="time")',
                lambda: xeofs.single.EOF(n_modes=10).fit(sst, dim="time"),
            )
        )
    if one_thread:
        out += [(f"{label}, 1 BLAS thread", _one_thread(fn)) for label, fn in out[:3]]
    return out


def _one_thread(fn):
    """``fn`` with BLAS limited to one thread (the controller made once: a fresh
    ``threadpool_limits`` inspects the loaded libraries, about 2.5 ms, every call)."""
    controller = ThreadpoolController()

    def run():
        with controller.limit(limits=1, user_api="blas"):
            return fn()

    return run


def best_of(fn, repeat: int) -> tuple[float, float, float]:
    """Best and median wall time of ``repeat`` runs after a warm-up, and others' CPU share
    meanwhile."""
    fn()
    times = []
    with OtherLoad() as load:
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), load.share


@contextlib.contextmanager
def busy_processes(count: int, threads: int):
    """``count`` subprocesses, each keeping ``threads`` cores busy with NumPy matmuls,
    while the block runs; killed after."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    env.pop("PYTHONPATH", None)
    procs = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True, env=env
                )
            )
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a busy process did not start")
        time.sleep(1.0)  # their threads running
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def table(rows: list[tuple]) -> str:
    """One line per call: best (and median) seconds quiet and busy, their ratio, others' load."""
    lines = [
        "| call | quiet best s (median) | busy best s (median) | busy / quiet (best) "
        "| other quiet | other busy |",
        "|---|---|---|---|---|---|",
    ]
    for label, quiet, q_med, q_load, busy, b_med, b_load in rows:
        lines.append(
            f"| `{label}` | {quiet:.4f} ({q_med:.4f}) | {busy:.4f} ({b_med:.4f}) | "
            f"{busy / quiet:.1f}x | {q_load:.0%} | {b_load:.0%} |"
        )
    return "\n".join(lines)


def section(label: str, machine: dict, args, rows) -> str:
    blas = ", ".join(
        f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} threads)"
        for b in machine["blas"]
        if b.get("user_api") == "blas"
    )
    source = Path(xsvd.__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return "\n".join(
        [
            f"## {label}",
            "",
            f"- Date (UTC): {machine['date_utc']}",
            f"- Command: `{machine['command']}` (in `{machine['cwd']}`, "
            f"PYTHONPATH={os.environ.get('PYTHONPATH', '')!r})",
            f"- xsvd source: `{source}`, commit {commit or '?'}",
            f"- Machine: {machine['cpu_model']}, {machine['logical_cores']} logical cores "
            f"({machine['usable_cores']} usable), {machine['ram_gb']} GiB RAM",
            f"- BLAS: {blas}; busy: {args.busy_processes} process(es) of matmuls on "
            f"{args.busy_threads} BLAS threads each; "
            f"best (median) of {args.repeat} after a warm-up",
            "",
            table(rows),
            "",
        ]
    )


def write(path: Path, label: str, text: str) -> None:
    """Put ``text`` as the section ``## label`` of ``path``, keeping the other sections."""
    about = (__doc__ or "").split("\n\n", 1)[-1]  # the docstring below its title line
    old = path.read_text() if path.exists() else f"{TITLE}\n\n{about}\n"
    parts = re.split(r"(?m)^(?=## )", old)
    head, sections = parts[0], parts[1:]
    sections = [s for s in sections if s.splitlines()[0] != f"## {label}"]
    path.write_text(
        head.rstrip("\n") + "\n\n" + "".join(s.rstrip("\n") + "\n\n" for s in sections) + text
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--label", default="run", help="section heading in the results file")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy-threads", type=int, default=os.cpu_count() or 2)
    p.add_argument("--busy-processes", type=int, default=1)
    p.add_argument("--no-one-thread", dest="one_thread", action="store_false")
    p.add_argument("--out", type=Path, default=HERE / "results" / "busy.md")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")  # rank and advice warnings of the tiny problem
    machine = machine_info(HERE.parent)
    sst, z500 = fields()
    todo = calls(sst, z500, args.one_thread)
    quiet = {}
    for label, fn in todo:
        quiet[label] = best_of(fn, args.repeat)
        print(f"quiet {label}: {quiet[label][0]:.4f} s", flush=True)
    busy = {}
    with busy_processes(args.busy_processes, args.busy_threads):
        for label, fn in todo:
            busy[label] = best_of(fn, args.repeat)
            print(f"busy  {label}: {busy[label][0]:.4f} s", flush=True)
    rows = [(label, *quiet[label], *busy[label]) for label, _ in todo]
    text = section(args.label, machine, args, rows)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write(args.out, args.label, text)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
