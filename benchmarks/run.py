"""Run the xsvd benchmark suite: xsvd and its peers side by side, in one process.

    /work/venv/bin/python benchmarks/run.py                 # everything, full size
    /work/venv/bin/python benchmarks/run.py --quick         # smoke run, small sizes
    /work/venv/bin/python benchmarks/run.py --cases genotype,numpy --repeat 5

Writes ``<out>/latest.json`` and ``<out>/latest.md`` and prints the table.
See ``benchmarks/README.md`` for what each case measures and how to read it.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import traceback
import warnings
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helper modules next to this file

import dask  # noqa: E402
from _cases import CASES, Config  # noqa: E402
from _harness import run_case  # noqa: E402
from _report import CaseResult, evaluate_goals, machine_info, write_json, write_markdown  # noqa: E402

T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress line with the elapsed time."""
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", flush=True)


def _shape(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.lower().replace("×", "x").split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 1200x90x180, got {text!r}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    d = Config()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--cases",
        default=",".join(CASES),
        help=f"comma-separated subset of {','.join(CASES)} (default: all)",
    )
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run, < 1 min)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per tool (default 3)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    p.add_argument("--k", type=int, default=d.k, help="components (default %(default)s)")
    p.add_argument("--n-power-iter", type=int, default=d.n_power_iter, help="q (default 2)")
    p.add_argument("--n-oversamples", type=int, default=d.n_oversamples, help="p (default 10)")
    p.add_argument(
        "--genotype-shape",
        type=_shape,
        default=None,
        help=f"variants x samples of the genotype/numpy cases (default "
        f"{d.n_variants}x{d.n_samples})",
    )
    p.add_argument("--chunk-variants", type=int, default=None, help=f"default {d.chunk_variants}")
    p.add_argument(
        "--zarr-variants",
        type=int,
        default=None,
        help=f"variants of the Zarr case (samples as above; default {d.zarr_variants})",
    )
    p.add_argument(
        "--zarr-dir", default=None, help="where to create the temporary store (default: $TMPDIR)"
    )
    p.add_argument("--keep-zarr", action="store_true", help="do not delete the store")
    p.add_argument(
        "--climate-shape",
        type=_shape,
        default=None,
        help="time x lat x lon (default 3000x90x180)",
    )
    p.add_argument(
        "--climate-modes", type=int, default=d.climate_modes, help="planted modes (default 3)"
    )
    p.add_argument(
        "--accuracy-seeds",
        type=int,
        default=d.accuracy_seeds,
        help="seeds per randomized tool in the untimed accuracy sweep\n"
        "(default %(default)s; 1 = only the seed of the timed runs)",
    )
    p.add_argument(
        "--no-dask-lazy",
        action="store_true",
        help="skip the svd_compressed(compute=False) rows",
    )
    args = p.parse_args(argv)
    unknown = set(args.cases.split(",")) - set(CASES)
    if unknown:
        p.error(f"unknown case(s) {sorted(unknown)}; choose from {list(CASES)}")
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    if args.accuracy_seeds < 1:
        p.error("--accuracy-seeds must be >= 1")
    return args


def make_config(args: argparse.Namespace) -> Config:
    """Defaults, then --quick sizes, then explicit size options."""
    cfg = Config(
        k=args.k,
        n_power_iter=args.n_power_iter,
        n_oversamples=args.n_oversamples,
        zarr_dir=args.zarr_dir,
        keep_zarr=args.keep_zarr,
        climate_modes=args.climate_modes,
        dask_lazy_rows=not args.no_dask_lazy,
        accuracy_seeds=args.accuracy_seeds,
    )
    if args.quick:
        cfg = cfg.quick()
    changes = {}
    if args.genotype_shape:
        changes["n_variants"], changes["n_samples"] = args.genotype_shape
    if args.chunk_variants:
        changes["chunk_variants"] = args.chunk_variants
    if args.zarr_variants:
        changes["zarr_variants"] = args.zarr_variants
    if args.climate_shape:
        changes["climate_shape"] = args.climate_shape
    return Config(**{**asdict(cfg), **changes})


def run_one(name: str, cfg: Config, repeat: int) -> CaseResult:
    """Set up one case, measure it, tear it down; a setup failure is recorded, not raised."""
    log(f"case {name}: setting up")
    result = CaseResult(name=name)
    try:
        case = CASES[name](cfg, log)
    except Exception:
        result.error = traceback.format_exc()
        log(f"case {name}: setup FAILED\n{result.error}")
        return result
    try:
        result.description = case.description
        result.reference_how = case.reference_how
        result.reference_s = [float(v) for v in case.reference_s]
        result.meta = case.meta
        log(f"case {name}: {case.description}")
        result.rows = run_case(
            name,
            case.tools,
            case.reference_s,
            case.reference_evr,
            repeat,
            seed=cfg.seed,
            accuracy_seeds=cfg.accuracy_seeds,
            log=log,
        )
        result.goals = evaluate_goals(case.goals, result.rows)
    finally:
        case.close()
        del case
        gc.collect()
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = make_config(args)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = machine_info(HERE.parent)
    # One scheduler for every Dask computation of every tool: threads, one per core.
    dask.config.set(scheduler="threads", num_workers=machine["usable_cores"] or None)
    warnings.filterwarnings("ignore", category=FutureWarning)
    log(f"config: {cfg}")
    results = [run_one(name, cfg, args.repeat) for name in args.cases.split(",")]
    config = dict(asdict(cfg), repeat=args.repeat, quick=args.quick, scheduler="threads")
    write_json(args.out / "latest.json", machine, config, results)
    table = write_markdown(args.out / "latest.md", machine, config, results)
    print()
    print(table)
    print()
    log(f"wrote {args.out / 'latest.json'} and {args.out / 'latest.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
