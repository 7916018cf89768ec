"""How far below the floor of the S-error estimates float32 products' true errors lie.

    .venv/bin/python benchmarks/float32_floor.py --part small         # about 15 minutes
    .venv/bin/python benchmarks/float32_floor.py --part extra --part genotypes
    .venv/bin/python benchmarks/float32_floor.py --part large         # 4,000 x 40,000
    .venv/bin/python benchmarks/float32_floor.py --merge a.json b.json  # one report

The compressed SVD's estimate of a singular value's error holds, besides the
convergence of the Ritz values, the rounding of the products
(``xsvd.core.randomized.small._estimates``: ``PRODUCT_ROUNDING eps s_1`` added
for float32 products). This sweep measures, for float32 products, the true
error of every component (``|S - S_exact|``, ``S_exact`` from
``numpy.linalg.svd`` of the float64 centered, weighted matrix of the same
float32 or uint8 data) and the estimate the same Ritz values give without any
floor (``ROUNDING`` and ``PRODUCT_ROUNDING`` set to 0 for one more call), and
reports the smallest constant that keeps every estimate at or above the truth
for candidate floors of the S error: ``c eps s_1`` or ``c eps s_1^2 / (2 s_j)``
(the floor before, with ``c = ROUNDING = 50``), replacing smaller estimates or
added to them. Every case runs in both stripe orientations (the other one as
Dask chunks). Writes ``--out`` ``.md`` and ``.json`` (default
``benchmarks/results/float32-floor``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import dask.array as da
import numpy as np

import xsvd
from xsvd.core.randomized import small
from xsvd.linalg import randomized_svd

HERE = Path(__file__).resolve().parent
EPS = float(np.finfo(np.float32).eps)

_seen: list = []
_original = small._estimates


def _recording(rho, lam, k, kk, dtype, shift, block, V, Z, *rest, **kw):
    """``small._estimates`` that records its inputs, its output and the unfloored output."""
    out = _original(rho, lam, k, kk, dtype, shift, block, V, Z, *rest, **kw)
    saved = small.ROUNDING, getattr(small, "PRODUCT_ROUNDING", 0.0)
    small.ROUNDING = small.PRODUCT_ROUNDING = 0.0
    try:
        raw = _original(rho, lam, k, kk, dtype, shift, block, V, Z, *rest, **kw)
    finally:
        small.ROUNDING, small.PRODUCT_ROUNDING = saved
    _seen.append(
        {"lam": np.ldexp(np.asarray(lam), -shift), "L": V.shape[0], "out": out, "raw": raw}
    )
    return out


def spectrum_matrix(s, m, n, seed):
    rng = np.random.default_rng(seed)
    r = len(s)
    left = np.linalg.qr(rng.standard_normal((m, r)))[0]
    right = np.linalg.qr(rng.standard_normal((n, r)))[0]
    return (left * np.asarray(s)) @ right.T


def base(kind, m, n, seed):
    """float64 data of spread about 1 (before any offset)."""
    r = min(m, n)
    j = np.arange(r)
    rng = np.random.default_rng(seed)
    if kind == "test":  # tests/test_float32_offset.py's spectrum
        s = np.r_[200.0, 150.0, 100.0, np.ones(max(r - 3, 0))][:r]
    elif kind == "flat":
        s = np.r_[np.linspace(10, 3, 10), np.ones(r - 10)]
    elif kind == "slow":
        s = 1 / np.sqrt(j + 1)
    elif kind == "fast":
        s = 0.7**j
    elif kind == "mp":  # Marchenko-Pastur bulk and a strong shared factor
        a = rng.standard_normal((m, n))
        a[:, :3] += 3 * rng.standard_normal((m, 1))
        return a
    elif kind == "lowrank":  # benchmarks/solver_stopping.py's
        u, v = rng.standard_normal((m, 3)), rng.standard_normal((3, n))
        return (u * [100.0, 50.0, 20.0]) @ v / np.sqrt(n) + 1e-3 * rng.standard_normal((m, n))
    else:
        raise ValueError(kind)
    if max(m, n) > 3000:  # cheaper: a few components and noise
        s = s[: min(r, 60)]
        a = spectrum_matrix(s, m, n, seed)
        return a + (s[-1] / np.sqrt(max(m, n))) * rng.standard_normal((m, n))
    return spectrum_matrix(s, m, n, seed)


def truth(a, center, weights, k):
    b = a.astype(np.float64)
    if center:
        b -= b.mean(axis=0)
    if weights is not None:
        b *= weights
    if b.shape[0] * b.shape[1] > 2e7:  # through the float64 Gram of the short side
        g = b @ b.T if b.shape[0] <= b.shape[1] else b.T @ b
        return np.sqrt(np.linalg.eigvalsh(g)[::-1][:k])
    return np.linalg.svd(b, compute_uv=False)[:k]


def measure(a, k, truth_s, **options):
    _seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = randomized_svd(a, k, seed=options.pop("seed", 0), compute=True, **options)
    rec = _seen[-1]
    r = rec["out"].shape[0]  # components above the rounding (the others are 0)
    S = np.asarray(d.S)[:r]
    est = np.asarray(d.errors)[:r, 0]
    assert np.allclose(rec["out"][:, 0], est, rtol=1e-12, atol=0), "recorded a different call"
    raw = rec["raw"][:, 0]
    truth_s = truth_s[:r]
    err = np.abs(S - truth_s)
    lam = rec["lam"]
    s1 = np.sqrt(lam[0])
    d_ = lam.shape[0]
    frob = np.sqrt(lam.sum())
    short = raw < err  # the floor is what keeps these above the truth
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(short, err, 0.0)
        c_lam = need / (EPS * s1**2 / (2 * S))
        c_s1 = need / (EPS * s1)
        c_rms = need / (EPS * np.sqrt(rec["L"]) * frob / np.sqrt(d_))
        ratio = est / err
    return {
        "passes": int(d.settings["passes"]),
        "stopped": d.settings["stopped"],
        "S": S.tolist(),
        "err": err.tolist(),
        "est": est.tolist(),
        "raw": raw.tolist(),
        "s1": float(s1),
        "frob": float(frob),
        "zero_components": k - r,
        "err_rel": (err / truth_s).tolist(),
        "est_over_err": ratio.tolist(),
        "raw_over_err": (raw / err).tolist(),
        "c_lam": float(np.max(c_lam)),
        "c_s1": float(np.max(c_s1)),
        "c_rms": float(np.max(c_rms)),
        "L": int(rec["L"]),
        "d": int(d_),
        "s1_over_frob": float(s1 / frob),
    }


SHAPES = {
    "small": [(240, 30), (30, 240), (1000, 400)],
    "big": [(2000, 8000), (8000, 2000)],
}


def cases(part: str):
    for m, n in SHAPES[part]:
        big = m * n > 1e6
        kinds = ["test", "flat", "slow", "fast", "mp", "lowrank"]
        kinds = ["test", "mp"] if big else kinds
        for kind in kinds:
            for seed in (0,) if big else (0, 1):
                a0 = base(kind, m, n, seed)
                spread = a0.std()
                rng = np.random.default_rng(seed + 100)
                for ratio in (0.0, 1e4, 1e6):
                    a = (a0 + ratio * spread * (1 + rng.random(n))).astype(np.float32)
                    yield f"{kind} {m}x{n} s{seed} off{ratio:g}", a, {"center": True}
                    if ratio == 0.0:
                        yield f"{kind} {m}x{n} s{seed} uncentered", a, {"center": False}
                        w = (0.5 + rng.random(n)).astype(np.float64)
                        yield f"{kind} {m}x{n} s{seed} weights", a, {"center": True, "weights": w}


def extra_cases():
    """Offsets below the reference's threshold (4 and 15 times each feature's spread:
    read without one), and uncentered data whose mean makes ``s_j / s_1`` down to 1e-4."""
    for kind in ("test", "mp", "lowrank", "flat"):
        for m, n in ((240, 30), (30, 240), (1000, 400)):
            a0 = base(kind, m, n, 0)
            for ratio in (4.0, 15.0):
                a = (a0 + ratio * a0.std(axis=0)).astype(np.float32)
                yield f"{kind} {m}x{n} col-off{ratio:g}", a, {"center": True}
            rng = np.random.default_rng(5)
            for ratio in (30.0, 300.0, 3000.0):
                a = (a0 + ratio * a0.std() * (1 + rng.random(n))).astype(np.float32)
                yield f"{kind} {m}x{n} uncentered off{ratio:g}", a, {"center": False}


def genotype_cases(quick: bool):
    sizes = [(600, 2000), (300, 8000)] if quick else [(600, 2000), (300, 8000), (2000, 20000)]
    for ns, nv in sizes:
        g = np.ascontiguousarray(xsvd.datasets.genotypes(n_variants=nv, n_samples=ns).values.T)
        yield f"uint8 {ns}x{nv}", g, {"center": True}
        yield f"uint8 {nv}x{ns}", np.ascontiguousarray(g.T), {"center": True}


def oriented(a, stripes):
    """``a`` itself (in memory, the thin side is the shorter one) or as Dask chunks that
    make the stripes hold the other side whole (the longer one is then the thin side)."""
    m, n = a.shape
    own = "samples" if n <= m else "features"
    if stripes == own:
        return a
    if stripes == "samples":  # every stripe holds all features
        return da.from_array(a, chunks=(max(m // 4, 1), n))
    return da.from_array(a, chunks=(m, max(n // 4, 1)))


def run_case(name, a, opts, k, rows, iters, seeds=(0, 1), given=None):
    t = truth(a, opts.get("center", False), opts.get("weights"), k) if given is None else given
    for stripes in ("samples", "features"):
        x = oriented(a, stripes)
        for q in iters:
            for seed in seeds:
                extra = {} if q is None else {"n_power_iter": q}
                r = measure(x, k, t, seed=seed, **opts, **extra)
                r.update(case=name, stripes=stripes, n_power_iter=q, seed=seed, k=k)
                r.update(dask=x is not a)
                rows.append(r)


def large_cases(rows, out, only=None):
    """4,000 x 40,000 float32 and its transpose (the offsets per feature, a column, in
    both): one spectrum, both stripe orientations. ``only``: these labels."""
    a = base("test", 4000, 40_000, 0)
    spread = a.std()
    for ratio in (0.0, 1e6):
        for label in ("4000x40000", "40000x4000"):
            name = f"test {label} off{ratio:g}"
            if only and name not in only:
                continue
            t0 = time.perf_counter()
            y = a if label == "4000x40000" else a.T
            rng = np.random.default_rng(7)
            y = np.ascontiguousarray(y + ratio * spread * (1 + rng.random(y.shape[1])), np.float32)
            t = truth(y, True, None, 5)
            run_case(name, y, {"center": True}, 5, rows, (None, 3), seeds=(0,), given=t)
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
            Path(out + ".json").write_text(json.dumps(rows))
            del y


def floored(r, c: float = small.PRODUCT_ROUNDING):
    """A run's unfloored estimates plus ``c eps s_1``, over the true errors."""
    err, raw = np.asarray(r["err"]), np.asarray(r["raw"])
    return (raw + c * EPS * r["s1"]) / err


def summary(rows):
    lines = [
        "| case | stripes | Dask | q | passes | max err/S | need add_s1 | est/err min "
        "| est/err median |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = floored(r)
        lines.append(
            f"| {r['case']} | {r['stripes']} | {r.get('dask', False)} | {r['n_power_iter']} "
            f"| {r['passes']} | {max(r['err_rel']):.1e} | {needs([r])['add_s1']:.3g} "
            f"| {q.min():.3g} | {np.median(q):.3g} |"
        )
    return lines


def needs(rows):
    """The constant of each candidate floor the estimates of ``rows`` needed."""
    out = {}
    for form in ("s1", "lam"):
        for mode in ("max", "add"):
            worst = 0.0
            for r in rows:
                err, raw, S = (np.asarray(r[x]) for x in ("err", "raw", "S"))
                scale = EPS * r["s1"] if form == "s1" else EPS * r["s1"] ** 2 / (2 * S)
                need = np.where(raw < err, err - (raw if mode == "add" else 0.0), 0.0) / scale
                worst = max(worst, float(need.max(initial=0.0)))
            out[f"{mode}_{form}"] = worst
    return out


def report(rows, command):
    worst = needs(rows)
    err, raw = (np.concatenate([r[x] for r in rows]) for x in ("err", "raw"))
    s1 = np.concatenate([[r["s1"]] * len(r["err"]) for r in rows])
    rounding = err[raw < 0.1 * err] / (EPS * s1[raw < 0.1 * err])
    before = np.concatenate(
        [np.asarray(r["err"]) * 0 + 25 * EPS * r["s1"] ** 2 / np.asarray(r["S"]) for r in rows]
    )
    before = np.maximum(before, raw) / err
    head = [
        f"# float32 products: the floor of the S-error estimates ({len(rows)} runs, "
        f"{err.size} components)",
        "",
        f"Command: `{command}`",
        "",
        "The smallest constant that keeps every estimate >= the true error (0 where the "
        "unfloored estimate is already above it), per form of the floor: `max_*`: the "
        "floor replaces smaller estimates; `add_*`: it is added to them; `*_s1`: `c eps "
        "s_1` in the S error; `*_lam`: `c eps s_1^2 / (2 s_j)` (before: `max_lam` with "
        "ROUNDING = 50): " + ", ".join(f"{c} = {v:.3g}" for c, v in worst.items()) + ".",
        "",
        f"Rounding-limited components (unfloored estimate < 0.1x the truth, {rounding.size}): "
        f"true error / (eps s_1) median {np.median(rounding):.3g}, 90th percentile "
        f"{np.percentile(rounding, 90):.3g}, max {rounding.max():.3g}.",
        "",
        f"Before (floor ROUNDING eps s_1^2 / (2 s_j)), estimate / true error: min "
        f"{before.min():.3g}, median {np.median(before):.3g}, 90th percentile "
        f"{np.percentile(before, 90):.3g}.",
        "",
    ]
    for c in (2.0, small.PRODUCT_ROUNDING, 5.0):
        q = np.concatenate([floored(r, c) for r in rows])
        head += [
            f"Unfloored estimate + {c:g} eps s_1 (PRODUCT_ROUNDING = {c:g}), over the true "
            f"error: min {q.min():.3g}, median {np.median(q):.3g}, 90th percentile "
            f"{np.percentile(q, 90):.3g}.",
            "",
        ]
    head += [
        "Per run (est: unfloored + PRODUCT_ROUNDING eps s_1; `need add_s1`: the constant "
        "this run needed; q: n_power_iter, None the default stop):",
        "",
    ]
    return "\n".join(head + summary(rows)) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--part", choices=["small", "big", "extra", "genotypes", "large"], action="append"
    )
    p.add_argument("--only", nargs="+", help="--part large: only these cases")
    p.add_argument("--merge", nargs="+", help="only write the report of these result files")
    p.add_argument("--out", default=str(HERE / "results" / "float32-floor"))
    args = p.parse_args(argv)
    command = "python benchmarks/float32_floor.py " + " ".join(argv or sys.argv[1:])
    if args.merge:
        rows = [r for f in args.merge for r in json.loads(Path(f).read_text())]
        Path(args.out + ".md").write_text(report(rows, command))
        Path(args.out + ".json").write_text(json.dumps(rows))
        return
    small._estimates = _recording
    rows: list = []
    t0 = time.perf_counter()
    parts = args.part or ["small"]
    for part in ("small", "big"):
        if part not in parts:
            continue
        for name, a, opts in cases(part):
            k = 3 if min(a.shape) <= 30 else 8
            run_case(name, a, opts, k, rows, (2, 7, None), seeds=(0,))
            worst = max(r["c_s1"] for r in rows[-6:])
            print(f"{name}: {time.perf_counter() - t0:.0f} s, c_s1 {worst:.3g}", flush=True)
            Path(args.out + ".json").write_text(json.dumps(rows))
    if "extra" in parts:
        for name, a, opts in extra_cases():
            k = 3 if min(a.shape) <= 30 else 8
            run_case(name, a, opts, k, rows, (2, None), seeds=(0,))
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
            Path(args.out + ".json").write_text(json.dumps(rows))
    if "genotypes" in parts:
        for name, g, opts in genotype_cases(False):
            run_case(name, g, opts, 5, rows, (2, None), seeds=(0,))
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
            Path(args.out + ".json").write_text(json.dumps(rows))
    if "large" in parts:
        large_cases(rows, args.out, args.only)
    Path(args.out + ".md").write_text(report(rows, command))
    Path(args.out + ".json").write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
