"""GPU benchmarks (issue 4, items 3 and 4): xsvd against dask + CuPy, one process.

Case "resident": ``randint(0, 3, (M, 20_000), uint8)`` in GPU memory
(M = 1,000,000: 20 GB), k=10, n_oversamples=10, no power iterations, warm.
xsvd (``DataArray.svd.compressed`` on the CuPy array) against
``dask.array.linalg.svd_compressed(..., compute=True)`` on CuPy chunks of
20,000 x 5,000 with the threaded scheduler, as in ../shared/gpu/README.md.
Accuracy: the largest relative error of the k singular values of each
against a reference run of xsvd with 4 power iterations and ``krylov=True``.

Case "packed": 2-bit packed genotypes (codes 0, 1, 2; PLINK's ``.bed`` code)
of M_packed x 20,000 in GPU memory (M_packed = 10,000,000: 50 GB packed,
200 GB as uint8), k=10, no power iterations, xsvd alone (dask + CuPy cannot
hold the uint8 matrix on one GPU).

Run on a GPU machine: ``python benchmarks/gpu.py`` (``--rows``/``--packed-rows``
to change sizes, ``--repeat`` for the number of timed warm runs). Writes
``benchmarks/results/gpu.{json,md}``. Exits with a message, not an error,
without CuPy or a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
COLS = 20_000


def _timed(fn, repeat: int, sync) -> tuple[float, object]:
    out = fn()  # warm-up: CUDA libraries, kernels, memory pool
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times), out


#: values drawn at once: CuPy's ``integers(..., dtype=uint8)`` makes a 4-byte temporary
#: per value (a 16 GB temporary for 200,000 x 5,000 x 4 draws ran an H100 out of memory)
DRAW_VALUES = 1 << 26


def _random_uint8(cp, rows: int, cols: int, seed: int):
    rng = cp.random.default_rng(seed)
    x = cp.empty((rows, cols), dtype=cp.uint8)
    step = max(1, DRAW_VALUES // cols)
    for a in range(0, rows, step):
        x[a : a + step] = rng.integers(0, 3, (min(step, rows - a), cols), dtype=cp.uint8)
    return x


def valid_byte_table() -> np.ndarray:
    """Byte -> byte: every 2-bit field 01 (PLINK's "missing") made 11, so a random byte
    holds four codes 00, 10 or 11 (values 2, 1, 0; probabilities 1/4, 1/4, 1/2)."""
    b = np.arange(256, dtype=np.uint8)
    out = b.copy()
    for shift in (0, 2, 4, 6):
        missing = ((b >> shift) & 3) == 1
        out[missing] |= np.uint8(3 << shift)
    return out


def _random_packed(cp, rows: int, cols: int, seed: int):
    """Packed genotypes without missing calls: random bytes through :func:`valid_byte_table`."""
    from xsvd.core.packed import PackedGenotypes

    rng = cp.random.default_rng(seed)
    table = cp.asarray(valid_byte_table())
    nbytes = (cols + 3) // 4
    data = cp.empty((rows, nbytes), dtype=cp.uint8)
    step = max(1, DRAW_VALUES // nbytes)
    for a in range(0, rows, step):
        r = min(step, rows - a)
        data[a : a + r] = cp.take(table, rng.integers(0, 256, (r, nbytes), dtype=cp.uint8))
    return PackedGenotypes(data, cols)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--packed-rows", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-packed", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "gpu")
    args = ap.parse_args(argv)
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as exc:  # no CuPy or no GPU: nothing to measure
        print(f"GPU benchmarks skipped: {exc}")
        return
    import dask
    import dask.array as da
    import xarray as xr

    import xsvd  # noqa: F401  (registers DataArray.svd)

    sync = cp.cuda.Device().synchronize
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    results = []

    x = _random_uint8(cp, args.rows, COLS, seed=0)
    arr = xr.DataArray(x, dims=("samples", "variants"))
    kw = dict(k=args.k, dim="samples", n_power_iter=0, n_oversamples=10, seed=0)
    t_xsvd, res = _timed(lambda: arr.svd.compressed(**kw), args.repeat, sync)
    ref = arr.svd.compressed(args.k, dim="samples", n_power_iter=4, krylov=True, seed=1)
    s_ref = cp.asnumpy(ref.S.data)

    xd = da.from_array(x, chunks=(20_000, 5_000), asarray=False)

    def peer():
        # a CuPy-backed seed: seed=0 would multiply a NumPy test matrix into CuPy chunks
        seed = da.random.RandomState(0, RandomState=cp.random.RandomState)
        u, s, v = da.linalg.svd_compressed(
            xd, k=args.k, n_power_iter=0, n_oversamples=10, compute=True, seed=seed
        )
        return dask.compute(u, s, v, scheduler="threads")

    t_dask, (_, s_dask, _) = _timed(peer, args.repeat, sync)
    err = lambda s: float(np.max(np.abs(cp.asnumpy(s) - s_ref) / s_ref))  # noqa: E731
    results.append(
        dict(
            case=f"resident uint8 {args.rows:,} x {COLS:,} ({x.nbytes / 1e9:.0f} GB), q=0",
            xsvd_s=round(t_xsvd, 4),
            dask_s=round(t_dask, 4),
            speedup=round(t_dask / t_xsvd, 2),
            xsvd_max_rel_err=err(res.S.data),
            dask_max_rel_err=err(s_dask),
        )
    )
    x = xd = arr = res = ref = None  # free the 20 GB before the packed case
    cp.get_default_memory_pool().free_all_blocks()

    if not args.skip_packed:
        packed = _random_packed(cp, args.packed_rows, COLS, seed=2)
        arr = xr.DataArray(packed, dims=("samples", "variants"))
        t_packed, res = _timed(lambda: arr.svd.compressed(**kw), args.repeat, sync)
        results.append(
            dict(
                case=f"packed 2-bit {args.packed_rows:,} x {COLS:,} "
                f"({packed.nbytes / 1e9:.0f} GB packed), q=0",
                xsvd_s=round(t_packed, 4),
                dask_s=None,
                speedup=None,
            )
        )

    meta = dict(device=device, k=args.k, repeat=args.repeat, command=" ".join(sys.argv))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, results=results), indent=2))
    lines = [
        f"{device}; best of {args.repeat} warm runs; k={args.k}.",
        "",
        "| case | xsvd (s) | dask + CuPy (s) | speed-up | max rel. err xsvd / dask |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        dask_s = "-" if r["dask_s"] is None else f"{r['dask_s']:.3f}"
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.1f}x"
        errs = (
            f"{r['xsvd_max_rel_err']:.1e} / {r['dask_max_rel_err']:.1e}"
            if "xsvd_max_rel_err" in r
            else "-"
        )
        lines.append(f"| {r['case']} | {r['xsvd_s']:.3f} | {dask_s} | {speed} | {errs} |")
    table = "\n".join(lines) + "\n"
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
