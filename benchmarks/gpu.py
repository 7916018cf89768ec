"""GPU benchmarks (issue 30): xsvd against torch.svd_lowrank and dask + CuPy, one process.

    python benchmarks/gpu.py                 # on a GPU machine: the issue's sizes
    python benchmarks/gpu.py --cases uint8 --uint8-rows 200000   # one case, smaller
    python benchmarks/gpu.py --cpu           # smoke run on NumPy, small sizes (times mean nothing)

Every case's data are made once, resident in GPU memory, and shared by both tools (torch sees
CuPy's memory through DLPack, dask wraps the CuPy array); k=10, p=10 oversamples; warm runs
(a warm-up first: CUDA libraries, kernels, memory pools), best of ``--repeat`` (3), the
device synchronized after each run.

* **float32**: ``A = U diag(s) V^T + noise`` of ``--float-rows`` x ``--cols`` (500,000 x 20,000:
  40 GB), a rank-10 signal (s from 5,000 down to 2,000; ``U``, ``V`` random with orthonormal
  columns) plus Gaussian noise of std ``--noise`` (1: its largest singular values are about
  850). xsvd ``DataArray.svd.compressed(k, n_power_iter=q, n_oversamples=p)`` against
  ``torch.svd_lowrank(A, q=k + p, niter=q)``, q=0 and q=2.
* **uint8**: ``randint(0, 3)`` of ``--uint8-rows`` x ``--cols`` (1,000,000 x 20,000: 20 GB),
  q=0: xsvd against dask ``svd_compressed`` on CuPy chunks of 20,000 x 5,000 (a CuPy-backed
  seed), threaded scheduler.
* **packed**: 2-bit packed genotypes (PLINK codes, no missing calls) of ``--packed-rows`` x
  ``--cols`` (10,000,000 x 20,000: 50 GB packed), q=0, xsvd alone (no peer holds them).

Accuracy: the largest relative error of the k singular values against a reference computed
here in float64 (each sub-block cast to float64): subspace iteration with 4k columns for
``--ref-iters`` (20) fused reads ``Z = A^T (A Q)``, then the singular values of ``A Q``; the
report gives the reference's own last change. None for packed.

Goals (issue 30, one H100 or H200, at the full sizes above): float32 q=2: xsvd at least as
fast as torch.svd_lowrank at better accuracy; uint8 q=0: at most 0.25 s and at least 3x
faster than dask + CuPy; packed q=0: at most 3 s. A run at other sizes reports the ratios and
says the goals are not judged.

Writes ``benchmarks/results/gpu.{md,json}`` (``--out``; ``--cpu``: the temporary folder).
Without CuPy or a CUDA device (and without ``--cpu``) it says so and exits 0: nothing to
measure. The recipe for the GPU machine (wheels, PYTHONPATH, pitfalls) is in
``../shared/gpu/README.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
COLS = 20_000
FULL = {"float32": 500_000, "uint8": 1_000_000, "packed": 10_000_000}
SMALL = {"float32": 3_000, "uint8": 4_000, "packed": 6_000, "cols": 400}
CASES = ("float32", "uint8", "packed")

#: values drawn at once: CuPy's ``integers(..., dtype=uint8)`` makes a 4-byte temporary
#: per value (a 16 GB temporary for 200,000 x 5,000 x 4 draws ran an H100 out of memory)
DRAW_VALUES = 1 << 26


def _timed(fn, repeat: int, sync) -> tuple[float, object]:
    """Best of ``repeat`` warm runs (after one warm-up), the device synchronized after each."""
    out = fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times), out


def host(a) -> np.ndarray:
    """A CuPy, NumPy or torch array as float64 NumPy."""
    if hasattr(a, "detach"):  # torch
        a = a.detach().cpu().numpy()
    elif hasattr(a, "get"):  # CuPy
        a = a.get()
    return np.asarray(a, dtype=np.float64)


# ----------------------------------------------------------------------------- data
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


def signal_values(rank: int = 10) -> np.ndarray:
    """The planted singular values of the float32 case: 5,000 down to 2,000."""
    return np.linspace(5_000.0, 2_000.0, rank)


def low_rank_float32(cp, rows: int, cols: int, noise: float, seed: int):
    """``U diag(s) V^T + noise * G`` in float32, drawn in slices of at most DRAW_VALUES values."""
    rng = cp.random.default_rng(seed)
    s = signal_values()
    r = s.size
    u_all, _ = cp.linalg.qr(rng.standard_normal((rows, r)))  # rows x 10, float64: small
    v, _ = cp.linalg.qr(rng.standard_normal((cols, r)))
    w = (v * cp.asarray(s)).T.astype(cp.float32)  # r x cols: diag(s) V^T
    x = cp.empty((rows, cols), dtype=cp.float32)
    step = max(1, DRAW_VALUES // cols)
    for a in range(0, rows, step):
        b = min(rows, a + step)
        x[a:b] = u_all[a:b].astype(cp.float32) @ w
        x[a:b] += cp.float32(noise) * rng.standard_normal((b - a, cols), dtype=cp.float32)
    return x


# ------------------------------------------------------------------------- reference
def reference_s(cp, x, k: int, iters: int, seed: int = 7) -> tuple[np.ndarray, float]:
    """The top-k singular values of ``x`` in float64 (subspace iteration, 4k columns, each
    sub-block cast to float64), and the largest relative change of the last iteration."""
    rows, cols = x.shape
    step = max(1, (1 << 27) // cols)
    q, _ = cp.linalg.qr(cp.random.default_rng(seed).standard_normal((cols, min(4 * k, cols))))

    def blocks():
        for a in range(0, rows, step):
            yield x[a : a + step].astype(cp.float64)

    def values(q):  # singular values of A Q (Rayleigh-Ritz on the span of Q), through its R
        r = cp.linalg.qr(cp.concatenate([b @ q for b in blocks()]), mode="r")
        return np.linalg.svd(host(r), compute_uv=False)[:k]

    s_old = values(q)
    change = float("nan")
    for i in range(iters):
        z = cp.zeros_like(q)
        for b in blocks():
            z += b.T @ (b @ q)
        q, _ = cp.linalg.qr(z)
        if i >= iters - 2:  # the last two: the values and their last change
            s = values(q)
            change, s_old = float(np.max(np.abs(s - s_old) / s)), s
    return s_old, change


def max_rel_err(s, ref: np.ndarray | None) -> float | None:
    if ref is None:
        return None
    return float(np.max(np.abs(host(s)[: ref.size] - ref) / ref))


# ------------------------------------------------------------------------------ tools
def xsvd_call(x, k: int, p: int, q: int):
    """xsvd on the resident array: a callable, and the call as text."""
    import xarray as xr

    import xsvd  # noqa: F401  (registers DataArray.svd)

    arr = xr.DataArray(x, dims=("samples", "variants"))
    kw = dict(dim="samples", n_power_iter=q, n_oversamples=p, seed=0)
    return (
        lambda: arr.svd.compressed(k, **kw),
        f"DataArray.svd.compressed({k}, n_power_iter={q}, n_oversamples={p})",
    )


def torch_call(x, k: int, p: int, q: int):
    """torch.svd_lowrank on the same memory (DLPack): a callable and its text, or None."""
    try:
        import torch
    except ImportError:
        return None, "torch not installed"
    a = torch.from_dlpack(x)
    torch.manual_seed(0)
    return (
        lambda: torch.svd_lowrank(a, q=k + p, niter=q)[1][:k],
        f"torch.svd_lowrank(A, q={k + p}, niter={q})",
    )


def dask_call(cp, x, k: int, p: int, q: int, chunks: tuple[int, int]):
    """dask svd_compressed on the array's chunks (CuPy-backed seed on a GPU), or None."""
    try:
        import dask
        import dask.array as da
    except ImportError:
        return None, "dask not installed"

    xd = da.from_array(x, chunks=chunks, asarray=False)

    def run():
        # a CuPy-backed seed: seed=0 would multiply a NumPy test matrix into CuPy chunks
        kw = {} if cp is np else {"RandomState": cp.random.RandomState}
        seed = da.random.RandomState(0, **kw)
        u, s, v = da.linalg.svd_compressed(
            xd, k=k, n_power_iter=q, n_oversamples=p, compute=True, seed=seed
        )
        return dask.compute(u, s, v, scheduler="threads")[1]  # all three, as the others

    return run, f"dask svd_compressed(k={k}, n_power_iter={q}, n_oversamples={p}), {chunks}"


# ------------------------------------------------------------------------------ cases
def measure(case: str, q: int, x, ref, args, sync, peer) -> dict:
    """xsvd and one peer (``(callable, text)`` or ``(None, why)``) on ``x``."""
    run, call = xsvd_call(x, args.k, args.p, q)
    t_x, res = _timed(run, args.repeat, sync)
    settings = getattr(res, "settings", {}) or {}
    row = dict(
        case=case,
        q=q,
        xsvd_call=call,
        xsvd_s=t_x,
        xsvd_err=max_rel_err(res.singular_values.data, ref),
        xsvd_passes=settings.get("passes"),
        peer_call=peer[1],
        peer_s=None,
        peer_err=None,
    )
    if peer[0] is not None:
        t_p, s_p = _timed(peer[0], args.repeat, sync)
        row.update(peer_s=t_p, peer_err=max_rel_err(s_p, ref))
    print(f"  {case} q={q}: xsvd {t_x:.4g} s, {call}; peer {row['peer_s']}, {peer[1]}", flush=True)
    return row


def free(cp) -> None:
    """Give the memory pools back before the next case (CuPy's, then torch's)."""
    if cp is np:
        return
    cp.get_default_memory_pool().free_all_blocks()
    try:
        import torch

        torch.cuda.empty_cache()
    except ImportError:
        pass


def run_cases(cp, args, sync) -> tuple[list[dict], dict]:
    rows, refs = [], {}
    cols = args.cols
    if "float32" in args.cases:
        x = low_rank_float32(cp, args.float32_rows, cols, args.noise, seed=0)
        gb = x.nbytes / 1e9
        case = f"float32 {args.float32_rows:,} x {cols:,} ({gb:.3g} GB), rank 10 + noise"
        ref, refs[case] = reference_s(cp, x, args.k, args.ref_iters)
        for q in (0, 2):
            rows.append(measure(case, q, x, ref, args, sync, torch_call(x, args.k, args.p, q)))
        x = None
        free(cp)
    if "uint8" in args.cases:
        x = _random_uint8(cp, args.uint8_rows, cols, seed=0)
        case = f"uint8 {args.uint8_rows:,} x {cols:,} ({x.nbytes / 1e9:.3g} GB)"
        ref, refs[case] = reference_s(cp, x, args.k, args.ref_iters)
        chunks = (min(20_000, x.shape[0]), min(5_000, cols))
        rows.append(
            measure(case, 0, x, ref, args, sync, dask_call(cp, x, args.k, args.p, 0, chunks))
        )
        x = None
        free(cp)
    if "packed" in args.cases:
        x = _random_packed(cp, args.packed_rows, cols, seed=2)
        case = f"packed 2-bit {args.packed_rows:,} x {cols:,} ({x.nbytes / 1e9:.3g} GB packed)"
        rows.append(measure(case, 0, x, None, args, sync, (None, "none (no peer holds them)")))
        x = None
        free(cp)
    return rows, refs


def judge(row: dict, args) -> tuple[str, bool | None]:
    """The issue's goal for a row, and whether this run met it (None: not judged here)."""
    full = args.cols == COLS and not args.cpu
    kind = row["case"].split()[0]
    if kind == "float32" and row["q"] == 2:
        goal = "xsvd as fast as torch.svd_lowrank, more accurate"
        ok = None
        if row["peer_s"] is not None and row["xsvd_err"] is not None:
            ok = row["xsvd_s"] <= row["peer_s"] and row["xsvd_err"] < row["peer_err"]
        full = full and args.float32_rows == FULL["float32"]
    elif kind == "uint8":
        goal = "xsvd <= 0.25 s and >= 3x faster than dask + CuPy"
        ok = row["xsvd_s"] <= 0.25 and (row["peer_s"] or 0) >= 3 * row["xsvd_s"]
        full = full and args.uint8_rows == FULL["uint8"]
    elif kind == "packed":
        goal = "xsvd <= 3 s"
        ok = row["xsvd_s"] <= 3.0
        full = full and args.packed_rows == FULL["packed"]
    else:
        return "", None
    return goal, (ok if full else None)


def report(rows: list[dict], refs: dict, meta: dict, args) -> str:
    def num(v, fmt):
        return "–" if v is None else format(v, fmt)

    lines = [
        "# xsvd on the GPU against torch.svd_lowrank and dask + CuPy (issue 30)",
        "",
        *[f"- {key}: {val}" for key, val in meta.items()],
        "",
        "| data (resident) | q | xsvd s | passes | peer s | peer / xsvd | xsvd error | "
        "peer error | goal (issue 30) | met |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = None if r["peer_s"] is None else r["peer_s"] / r["xsvd_s"]
        goal, ok = judge(r, args)
        met = {True: "yes", False: "**no**", None: "–" if not goal else "not judged"}[ok]
        lines.append(
            f"| {r['case']} | {r['q']} | {r['xsvd_s']:.4g} | {num(r['xsvd_passes'], 'd')} | "
            f"{num(r['peer_s'], '.4g')} | {num(ratio, '.2f')}{'×' if ratio else ''} | "
            f"{num(r['xsvd_err'], '.1e')} | {num(r['peer_err'], '.1e')} | {goal or '–'} | {met} |"
        )
    lines += [
        "",
        f"Times: best of {args.repeat} warm runs, seconds, device synchronized. Errors: the "
        "largest relative error of the k singular values against a float64 subspace-iteration "
        "reference (its last relative change: "
        + ", ".join(f"{c.split(' (')[0]}: {num(v, '.1e')}" for c, v in refs.items())
        + "). 'not judged': the goals are for the full sizes on one H100 or H200.",
        "",
        "Calls:",
        "",
    ]
    seen = set()
    for r in rows:
        for call in (r["xsvd_call"], r["peer_call"]):
            if call not in seen:
                seen.add(call)
                lines.append(f"- `{call}`")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES)
    )
    ap.add_argument("--cols", type=int, default=None, help=f"features (default {COLS:,})")
    for kind, rows in FULL.items():
        ap.add_argument(f"--{kind}-rows", type=int, default=None, help=f"default {rows:,}")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--p", type=int, default=10, help="oversamples")
    ap.add_argument("--noise", type=float, default=1.0, help="float32 case: noise std")
    ap.add_argument("--ref-iters", type=int, default=20, help="reference: subspace iterations")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--skip-packed", action="store_true", help="same as leaving packed out of --cases"
    )
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="smoke run on NumPy at small sizes (no GPU needed; times mean nothing)",
    )
    ap.add_argument("--out", type=Path, default=None, help="path prefix of the .md and .json")
    args = ap.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if args.skip_packed and "packed" in args.cases:
        args.cases.remove("packed")
    unknown = set(args.cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    sizes = SMALL if args.cpu else {**FULL, "cols": COLS}
    args.cols = args.cols or sizes["cols"]
    for kind in FULL:
        attr = f"{kind}_rows"
        setattr(args, attr, getattr(args, attr) or sizes[kind])
    if args.cpu:
        cp, sync, device = (
            np,
            lambda: None,
            "CPU (NumPy; a smoke run of the script: times mean nothing)",
        )
        out = args.out or Path(tempfile.gettempdir()) / "xsvd-gpu-smoke"
    else:
        try:
            import cupy as cp

            if cp.cuda.runtime.getDeviceCount() < 1:
                raise RuntimeError("CuPy finds no CUDA device")
        except Exception as exc:  # no CuPy, no driver or no GPU: nothing to measure
            print(
                f"benchmarks/gpu.py: nothing measured, no GPU here ({type(exc).__name__}: {exc}). "
                "Run it on a GPU machine (recipe: ../shared/gpu/README.md), or pass --cpu for a "
                "smoke run of the script on NumPy."
            )
            return 0
        sync = cp.cuda.Device().synchronize
        device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        out = args.out or HERE / "results" / "gpu"
    # uncentered on purpose (as the peers): xsvd's note that the mean dominates is not news here
    warnings.filterwarnings("ignore", message="center=False")
    t0 = time.perf_counter()
    rows, refs = run_cases(cp, args, sync)
    meta = {
        "date (UTC)": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": device,
        "command": " ".join(sys.argv),
        "k, p": f"{args.k}, {args.p}",
        "wall time": f"{time.perf_counter() - t0:.0f} s (data, references and runs)",
    }
    text = report(rows, refs, meta, args)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    doc = {"meta": meta, "references_last_change": refs, "rows": rows}
    doc["goals"] = [dict(zip(("goal", "met"), judge(r, args), strict=True)) for r in rows]
    out.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    print(text)
    print(f"written: {out.with_suffix('.md')}, {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
