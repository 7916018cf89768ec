"""Hilbert EOF of a field: xsvd.hilbert_eof (NumPy, Dask) against xeofs' HilbertEOF.

    .venv/bin/python benchmarks/hilbert.py                          # 3,000 x 90 x 180 (389 MB)
    .venv/bin/python benchmarks/hilbert.py --shape 600x30x60        # smaller
    .venv/bin/python benchmarks/hilbert.py --before /tmp/xsvd-old   # also an older xsvd tree

The field (float64, time x lat x lon): 12 waves travelling along the
longitudes (periods 9 to 160 samples, amplitudes 0.85**j, each with its own
latitude profile) plus white noise, and a box of land (NaN at every sample,
10% of the cells). The parent writes it once to a ``.npy`` file; every run is
a **fresh Python process** that loads it (NumPy runs) or builds the same
field lazily, chunk by chunk (Dask runs, nothing of it in memory), calls one
tool ``--repeat`` times, and reports the fastest call's wall time and its
peak resident memory (``VmHWM``; ``ru_maxrss`` would count the parent's
after ``exec``) above the process before the field was loaded: the field
itself (NumPy runs), the tool's arrays and the FFT's. The peak is given as a
multiple of the field's size (the goal of issue 29: at most 3x in memory).

Runs (``--runs``, all by default):

- ``xsvd``: ``xsvd.hilbert_eof(field, k)`` at the defaults (padding "exp");
- ``xsvd-none``: the same with ``padding="none"``, the problem xeofs solves;
- ``xsvd-tol``: ``padding="none"``, ``tol=--tol`` (default 1e-10), ``max_passes=40``
  (accuracy nearer xeofs'); ``xsvd-tol=1e-9``: the same at that ``tol``;
- ``dask-samples``: Dask chunks of 250 samples x every feature (read as they
  are), ``padding="none"``;
- ``dask-features``: Dask chunks of every sample x 10 latitudes (each made as
  such, no rechunk), ``padding="none"``;
- ``dask-exp``: ``dask-samples`` at the default padding ("exp");
- ``xeofs``: ``xeofs.single.HilbertEOF(n_modes=k, padding="none")`` at its
  default solver, fit and components;
- ``before``, ``before-exp``, ``before-dask``, ``before-dask-exp``: ``xsvd-none``,
  ``xsvd``, ``dask-samples``, ``dask-exp`` with the xsvd found at ``--before`` (a
  source tree, e.g. ``git archive <commit> | tar -x``).

Accuracy: the largest relative error of the ``k`` singular values and the
largest angle of the complex patterns (up to a phase), against
``xsvd.hilbert_eof(padding="none", tol=1e-13)`` run the same way (its
estimated error is printed), or with ``--reference exact`` against the dense
complex SVD (``method="exact"``, LAPACK: ~4 GB and 20+ minutes on 2 cores at
full size), which ``--reference-cache DIR`` keeps in ``DIR`` for later runs
(the field is the same for a shape). Not part of ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Samples per chunk of the lazy field (and of the ``dask-samples`` run).
CHUNK_SAMPLES = 250

CHILD = r"""
import json, os, sys, time
import numpy as np
run, path, k, shape, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
repeat, tol = int(sys.argv[6]), float(sys.argv[7])


def hwm():  # this process's peak resident memory (ru_maxrss counts the parent's after exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))

before = os.environ.get("HILBERT_BEFORE")
if before:
    sys.path.insert(0, before)
sys.path.insert(0, os.environ["HILBERT_BENCH"])
import warnings, xarray as xr, dask.array
import hilbert as bench
if run == "xeofs":
    from xeofs.single import HilbertEOF
else:
    import xsvd
warnings.simplefilter("ignore")
shape = tuple(int(v) for v in shape.split("x"))
base = hwm()  # imports done
if run.startswith("dask"):
    field = bench.lazy_field(shape, "features" if run == "dask-features" else "samples")
else:
    field = bench.labeled(np.load(os.path.join(path, "field.npy")), shape)
out, times = {}, []
for _ in range(repeat):
    t0 = time.perf_counter()
    if run == "xeofs":
        model = HilbertEOF(n_modes=k, padding="none")
        model.fit(field, dim="time")
        S = model.singular_values().values
        V = model.components().transpose("mode", "lat", "lon").values
    else:
        kw = {} if run in ("xsvd", "dask-exp") else {"padding": "none"}
        if run.startswith("xsvd-tol"):  # xsvd-tol, or xsvd-tol=1e-9
            tol = float(run.split("=")[1]) if "=" in run else tol
            kw.update(method="compressed", tol=tol, max_passes=40)
        if run == "reference":
            kw.update(method="compressed", tol=1e-13, max_passes=40, seed=0)
        if run == "reference-exact":
            kw.update(method="exact")
        res = xsvd.hilbert_eof(field, k, **kw)
        S, V = res.S.values, res.V.values
        out["settings"] = {key: str(v) for key, v in res.settings.items()}
        if "estimated_error" in res.settings:
            out["estimated_error"] = float(res.settings["estimated_error"])
    times.append(time.perf_counter() - t0)
seconds = min(times)
peak = hwm()
np.save(os.path.join(path, name + "-S.npy"), np.asarray(S))
np.save(os.path.join(path, name + "-V.npy"), np.asarray(V).reshape(k, -1))
out.update(seconds=seconds, peak_bytes=peak - base)
print(json.dumps(out))
"""

RUNS = (
    "xsvd",
    "xsvd-none",
    "xsvd-tol",
    "dask-samples",
    "dask-features",
    "dask-exp",
    "xeofs",
    "before",
    "before-exp",
    "before-dask",
    "before-dask-exp",
)


def _waves(shape: tuple[int, int, int]):
    """The waves' parameters: (period, wavenumber, amplitude, latitude profile) each."""
    n, ny, nx = shape
    rng = np.random.default_rng(7)
    lat = np.linspace(-1, 1, ny)
    out = []
    for j in range(12):
        period = 9 + 151 * (j / 11) ** 1.5
        profile = np.exp(-((lat - rng.uniform(-0.8, 0.8)) ** 2) / 0.3)
        out.append((period, 1 + j % 4, 0.85**j, profile, rng.uniform(0, 2 * np.pi)))
    return out


def block(shape: tuple[int, int, int], rows: slice, lats: slice) -> np.ndarray:
    """Samples ``rows`` of latitudes ``lats`` of the field (float64, land NaN): the same
    numbers whether made whole or a chunk at a time (the noise is drawn per block of
    ``CHUNK_SAMPLES`` samples and per latitude)."""
    n, ny, nx = shape
    start, stop, _ = rows.indices(n)
    lat0, lat1, _ = lats.indices(ny)
    t = np.arange(start, stop)[:, None, None]
    lon = np.linspace(0, 2 * np.pi, nx, endpoint=False)[None, None, :]
    out = np.zeros((stop - start, lat1 - lat0, nx))
    for period, kappa, amp, profile, phase in _waves(shape):
        wave = np.cos(2 * np.pi * t / period - kappa * lon + phase)
        out += amp * profile[None, lat0:lat1, None] * wave
    for c in range(start // CHUNK_SAMPLES, -(-stop // CHUNK_SAMPLES)):
        lo, hi = max(start, c * CHUNK_SAMPLES), min(stop, (c + 1) * CHUNK_SAMPLES)
        for j in range(lat0, lat1):
            noise = np.random.default_rng([11, c, j]).standard_normal((CHUNK_SAMPLES, nx))
            part = noise[lo - c * CHUNK_SAMPLES : hi - c * CHUNK_SAMPLES]
            out[lo - start : hi - start, j - lat0] += 0.5 * part
    land = np.zeros((ny, nx), dtype=bool)
    land[ny // 3 : ny // 3 + max(1, ny // 5), nx // 4 : nx // 4 + max(1, nx // 2)] = True
    out[:, land[lat0:lat1]] = np.nan
    return out


def labeled(values, shape: tuple[int, int, int]):
    import xarray as xr

    n, ny, nx = shape
    coords = {
        "time": np.arange(n),
        "lat": np.linspace(-89, 89, ny),
        "lon": np.linspace(0, 358, nx),
    }
    return xr.DataArray(values, dims=("time", "lat", "lon"), coords=coords, name="field")


def lazy_field(shape: tuple[int, int, int], along: str = "samples"):
    """The field as Dask chunks made when read: ``CHUNK_SAMPLES`` samples x everything
    (``along="samples"``), or every sample x 10 latitudes (``"features"``)."""
    import dask.array as da

    n, ny, nx = shape
    step = (CHUNK_SAMPLES, ny) if along == "samples" else (n, 10)
    sizes = (n, ny)
    chunks = [
        tuple(min(s, size - i) for i in range(0, size, s))
        for s, size in zip(step, sizes, strict=True)
    ]

    def make(block_id=None):
        i, j = block_id[0] * step[0], block_id[1] * step[1]
        return block(shape, slice(i, i + step[0]), slice(j, j + step[1]))

    lazy = da.map_blocks(make, dtype=np.float64, chunks=(*chunks, (nx,)))
    return labeled(lazy, shape)


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles between complex row vectors up to a phase (NaN entries left out)."""
    ok = ~np.isnan(b[0])
    a, b = a[:, ok], b[:, ok]
    inner = (b.conj() * a).sum(axis=1)
    a = a * (np.abs(inner) / np.where(inner == 0, 1, inner))[:, None]
    return 2 * np.arcsin(np.minimum(1, np.linalg.norm(a - b, axis=1) / 2))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--shape", default="3000x90x180", help="time x lat x lon")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--runs", default=",".join(RUNS[:7]), help=f"comma-separated of {RUNS}")
    p.add_argument(
        "--before", default=None, help="an older xsvd source tree (adds the before runs)"
    )
    p.add_argument("--repeat", type=int, default=2, help="calls per run (the fastest is kept)")
    p.add_argument("--timeout", type=float, default=2400, help="seconds per run")
    p.add_argument("--tol", type=float, default=1e-10, help="tol of the xsvd-tol run")
    p.add_argument("--reference", choices=("tol", "exact"), default="tol",
                   help="xsvd at tol=1e-13, or the dense complex SVD")  # fmt: skip
    p.add_argument("--reference-cache", default=None,
                   help="a folder that keeps the exact reference (reused when there)")  # fmt: skip
    args = p.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.lower().split("x"))
    runs = [r for r in args.runs.split(",") if r]
    if args.before and not any(r.startswith("before") for r in runs):
        runs += ["before", "before-exp", "before-dask", "before-dask-exp"]
    k = args.k
    field_bytes = int(np.prod(shape)) * 8
    print(f"field {shape} float64 ({field_bytes / 1e6:.0f} MB), k={k}, "
          f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "field.npy"), block(shape, slice(None), slice(None)))
        results = {}
        cache = Path(args.reference_cache) if args.reference_cache else None
        first = "reference" if args.reference == "tol" else "reference-exact"
        if cache and first == "reference-exact" and (cache / "reference-S.npy").exists():
            for part in ("S", "V"):
                np.save(os.path.join(tmp, f"reference-{part}.npy"),
                        np.load(cache / f"reference-{part}.npy"))  # fmt: skip
            results["reference"] = {"seconds": float("nan"), "cached": str(cache)}
            first = None
        for run in [first, *runs] if first else runs:
            if run not in (*RUNS, "reference", "reference-exact") and not run.startswith(
                "xsvd-tol="
            ):
                raise SystemExit(f"unknown run {run!r}: pick from {RUNS} or xsvd-tol=<tol>")
            env = dict(os.environ, HILBERT_BENCH=str(HERE), PYTHONPATH=str(ROOT))
            if run.startswith("before"):
                env["HILBERT_BEFORE"] = str(Path(args.before).resolve())
                env["PYTHONPATH"] = env["HILBERT_BEFORE"]
            before = {"before": "xsvd-none", "before-exp": "xsvd", "before-dask": "dask-samples"}
            todo = {**before, "before-dask-exp": "dask-exp"}.get(run, run)
            repeat = 1 if run.startswith("reference") else args.repeat
            name = "reference" if run.startswith("reference") else run
            cmd = [sys.executable, "-c", CHILD, todo, tmp, str(k), args.shape, name, str(repeat),
                   str(args.tol)]  # fmt: skip
            try:
                done = subprocess.run(
                    cmd, env=env, capture_output=True, text=True, timeout=args.timeout
                )
            except subprocess.TimeoutExpired:
                results[name] = {"error": f"over {args.timeout:.0f} s"}
                print(f"{run}: over {args.timeout:.0f} s", flush=True)
                continue
            if done.returncode:
                results[name] = {"error": done.stderr.strip().splitlines()[-1]}
                print(f"{run}: failed: {results[name]['error']}", flush=True)
                continue
            out = json.loads(done.stdout.strip().splitlines()[-1])
            results[name] = out
            if run == "reference-exact" and cache:
                cache.mkdir(parents=True, exist_ok=True)
                for part in ("S", "V"):
                    np.save(cache / f"reference-{part}.npy",
                            np.load(os.path.join(tmp, f"reference-{part}.npy")))  # fmt: skip
            print(f"{run}: {out['seconds']:.1f} s, peak {out['peak_bytes'] / field_bytes:.2f}x",
                  flush=True)  # fmt: skip
        s_ref = np.load(os.path.join(tmp, "reference-S.npy"))
        v_ref = np.load(os.path.join(tmp, "reference-V.npy"))
        ref = results["reference"]
        if args.reference == "exact":
            print(f"reference: the dense complex SVD (method='exact'), "
                  f"{ref.get('cached') or format(ref['seconds'], '.1f') + ' s'}")  # fmt: skip
        else:
            print(f"reference: xsvd padding='none', tol=1e-13: {ref['seconds']:.1f} s, estimated "
                  f"relative error {ref.get('estimated_error', float('nan')):.1e}")  # fmt: skip
        print(f"{'run':<16}{'time s':>9}{'peak GB':>9}{'x field':>9}{'max rel S err':>15}"
              f"{'max angle':>11}  passes")  # fmt: skip
        for run in runs:
            out = results.get(run, {})
            if "error" in out:
                print(f"{run:<16}  {out['error']}")
                continue
            S = np.load(os.path.join(tmp, f"{run}-S.npy"))
            V = np.load(os.path.join(tmp, f"{run}-V.npy"))
            if run in ("xsvd", "dask-exp", "before-exp", "before-dask-exp"):  # another taper
                err, ang = float("nan"), float("nan")
            else:
                err = float(np.max(np.abs(S - s_ref) / s_ref))
                ang = float(_angles(V, v_ref).max())
            passes = out.get("settings", {}).get("passes", "")
            peak = out["peak_bytes"]
            print(f"{run:<16}{out['seconds']:>9.1f}{peak / 1e9:>9.2f}{peak / field_bytes:>9.2f}"
                  f"{err:>15.1e}{ang:>11.1e}  {passes}")  # fmt: skip


if __name__ == "__main__":
    main()
