"""First pass vs a later pass of the compressed SVD, in the same run (issue 30, item 1).

The first pass also finds the NaN columns, the sums of squares and the magnitudes
of the features; the goal is that it costs at most 1.5x a later pass. Each pass
is timed by wrapping the solver's ``_one_pass`` (NumPy: the kernels run at once;
Dask, ``compute=True``: the pass's one compute is in it). The fastest of
``--repeat`` runs of each pass is reported.

Usage::

    python benchmarks/first_pass.py [--mb 300] [--repeat 3] [--dask] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from xsvd.core.randomized import solver
from xsvd.linalg import randomized_svd

TIMES: list[float] = []


def _timed(fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        TIMES.append(time.perf_counter() - t0)
        return out

    return wrapper


def _data(dtype: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        return rng.integers(0, 3, shape, dtype=np.uint8)
    out = np.empty(shape, dtype=np.float32)
    for i in range(0, shape[0], 1000):  # in slices: no float64 copy of the whole
        out[i : i + 1000] = rng.standard_normal((min(1000, shape[0] - i), shape[1]))
    return out


def _passes(a, dask: bool, repeat: int, q: int = 2):
    """Fastest first-pass and later-pass times (s) over ``repeat`` runs, and the stripes."""
    first, later, stripes = [], [], None
    for _ in range(repeat):
        TIMES.clear()
        x = a
        if dask:
            import dask.array as da

            axis = 0 if a.shape[0] >= a.shape[1] else 1
            chunks = (a.shape[0] // 8, -1) if axis == 0 else (-1, a.shape[1] // 8)
            x = da.from_array(a, chunks=chunks)
        d = randomized_svd(x, 10, n_power_iter=q, center=True, seed=0, compute=True)
        stripes = d.settings["stripes"]
        times = TIMES[-(q + 1) :]  # the last q + 1 passes (a rescaled first pass aside)
        first.append(times[0])
        later.append(min(times[1:]))
    return min(first), min(later), stripes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="size of each matrix (MB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dask", action="store_true", help="also Dask, compute=True")
    parser.add_argument("--out", default=None, help="append the table to this file")
    args = parser.parse_args(argv)
    solver._one_pass = _timed(solver._one_pass)
    rows = []
    for dtype in ("uint8", "float32"):
        values = args.mb * 2**20 // np.dtype(dtype).itemsize
        short = int(np.sqrt(values / 3))
        for shape in ((3 * short, short), (short, 3 * short)):
            a = _data(dtype, shape)
            for dask in (False, True) if args.dask else (False,):
                f, later, stripes = _passes(a, dask, args.repeat)
                kind = "dask" if dask else "numpy"
                rows.append((dtype, f"{shape[0]} x {shape[1]}", stripes, kind, f, later))
            del a
    flags = f"--mb {args.mb} --repeat {args.repeat}{' --dask' if args.dask else ''}"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"`python benchmarks/first_pass.py {flags}` on {platform.node()} "
        f"({platform.machine()}, {os.cpu_count()} cores, shared), {when}; fastest of "
        f"{args.repeat}; k=10, q=2, center=True",
        "",
        "| data | shape | stripes | backend | first pass (s) | later pass (s) | first / later |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for dtype, shape, stripes, kind, f, later in rows:
        lines.append(
            f"| {dtype} | {shape} | {stripes} | {kind} | {f:.3f} | {later:.3f} | {f / later:.2f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n\n")


if __name__ == "__main__":
    main()
