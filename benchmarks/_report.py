"""Machine description and the JSON / Markdown reports of a benchmark run."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import psutil
from _harness import SUBJECT, Row

PACKAGES = (
    "xsvd",
    "numpy",
    "scipy",
    "dask",
    "distributed",
    "xarray",
    "zarr",
    "scikit-learn",
    "xeofs",
    "psutil",
    "threadpoolctl",
)

TIMING_METHOD = (
    "wall time, median of the timed runs; one warm-up run per tool first, excluded from the "
    "median and reported separately. Tools alternate (order reversed every round). Peak "
    "memory: process RSS sampled every 5 ms in a background thread, max over the timed runs "
    "of (peak - RSS just before the run). Passes over the data: for Dask inputs counted in a "
    "separate, untimed run on the same input wrapped with a map_blocks layer that counts "
    "chunk productions (passes = chunk reads / chunks); for in-memory inputs analytic or as "
    "the library reports it. Accuracy: max over the top-k of |s - s_ref| / s_ref."
)


@dataclass
class CaseResult:
    """Everything reported about one case."""

    name: str
    description: str = ""
    reference_how: str = ""
    reference_s: list[float] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    goals: list[dict] = field(default_factory=list)
    error: str | None = None  #: set when the case could not be set up


# --------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _blas() -> list[dict]:
    from threadpoolctl import threadpool_info

    keep = ("user_api", "internal_api", "version", "num_threads", "architecture")
    return [{k: d.get(k) for k in keep} for d in threadpool_info()]


def _git(repo: Path) -> dict:
    """Commit of the source tree and whether it has uncommitted changes (read-only)."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError):
        return {}


def machine_info(repo: Path) -> dict:
    """CPU, memory, library versions, date and the exact command line of this run."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable, *sys.argv]),
        "cwd": os.getcwd(),
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": affinity,
        "ram_gb": round(psutil.virtual_memory().total / 1024**3, 1),
        "platform": platform.platform(),
        "versions": _versions(),
        "blas": _blas(),
        "git": _git(repo),
    }


# --------------------------------------------------------------------------- goals


def evaluate_goals(goals, rows: list[Row]) -> list[dict]:
    """Check each goal of a case against its rows."""
    by_name = {r.tool: r for r in rows}
    subject = next((r for r in rows if r.role == SUBJECT), None)
    out = []
    for g in goals:
        peer = by_name.get(g.peer)
        res = {"peer": g.peer, "min_ratio": g.min_ratio, "accuracy": g.accuracy}
        if subject is None or peer is None or subject.error or peer.error or peer.ratio is None:
            res["status"] = "not measured (a tool failed)"
            out.append(res)
            continue
        res["ratio"] = peer.ratio
        res["speed_met"] = peer.ratio >= g.min_ratio
        met = res["speed_met"]
        if g.accuracy:
            res["xsvd_max_rel_err"] = subject.max_rel_err
            res["peer_max_rel_err"] = peer.max_rel_err
            swept = subject.seed_mean_max_rel_err is not None
            swept = swept and peer.seed_mean_max_rel_err is not None
            if swept:
                # several random test matrices: compare the means, allowing for the
                # noise of a finite number of draws (two standard errors)
                xs = list(subject.seed_max_rel_err.values())
                ps = list(peer.seed_max_rel_err.values())
                res["accuracy_basis"] = f"mean over {len(xs)} seeds"
                res["xsvd_seed_mean"] = float(np.mean(xs))
                res["peer_seed_mean"] = float(np.mean(ps))
                res["noise_2se"] = 2.0 * float(np.hypot(_sem(xs), _sem(ps)))
                diff = res["xsvd_seed_mean"] - res["peer_seed_mean"]
                res["accuracy_verdict"] = (
                    "equal within noise"
                    if abs(diff) <= res["noise_2se"]
                    else ("xsvd better" if diff < 0 else "xsvd worse")
                )
                res["accuracy_met"] = diff <= res["noise_2se"]
            else:
                res["accuracy_basis"] = "the timed seed"
                res["accuracy_met"] = subject.max_rel_err <= peer.max_rel_err
            met = met and res["accuracy_met"]
        res["status"] = "met" if met else "MISSED"
        out.append(res)
    return out


def _sem(values: list[float]) -> float:
    """Standard error of the mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    return float(np.std(values, ddof=1) / np.sqrt(len(values)))


# --------------------------------------------------------------------------- JSON


def _jsonable(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def write_json(path: Path, machine: dict, config: dict, cases: list[CaseResult]) -> None:
    doc = {
        "machine": machine,
        "config": config,
        "timing_method": TIMING_METHOD,
        "cases": [asdict(c) for c in cases],
    }
    path.write_text(json.dumps(doc, indent=2, default=_jsonable) + "\n")


# --------------------------------------------------------------------------- Markdown


def _f(value, fmt: str, none: str = "–") -> str:
    return none if value is None else format(value, fmt)


def _passes(row: Row) -> str:
    if row.passes is None:
        return "n/a"
    how = row.passes_how.split(" ", 1)[0] if row.passes_how else ""
    tag = {"counted": "counted", "reads": "reported", "products": "analytic"}.get(how, how)
    value = f"{row.passes:g}" if float(row.passes).is_integer() else f"{row.passes:.2f}"
    return f"{value} ({tag})" if tag else value


def results_table(cases: list[CaseResult]) -> str:
    """One Markdown table, one line per (case, tool)."""
    head = (
        "| case | tool | median s | warm-up s | time / xsvd | peak MB | RSS before MB "
        "| passes | max rel err σ | σ err over seeds: mean / worst | max rel err EVR "
        "| other load |"
    )
    lines = [head, _rule(head)]
    for case in cases:
        if case.error:
            lines.append(f"| {case.name} | (case failed to set up) |" + " |" * 10)
        for r in case.rows:
            if r.error and not r.times_s:
                lines.append(f"| {case.name} | {r.tool} | FAILED |" + " |" * 9)
                continue
            tool = f"**{r.tool}**" if r.role == SUBJECT else r.tool
            lines.append(
                f"| {case.name} | {tool} | {_f(r.median_s, '.2f')} | {_f(r.warmup_s, '.2f')} "
                f"| {_f(r.ratio, '.2f')}{'×' if r.ratio else ''} | {_f(r.peak_mb, ',.0f')} "
                f"| {_f(r.rss_before_mb, ',.0f')} | {_passes(r)} | {_f(r.max_rel_err, '.1e')} "
                f"| {_sweep(r)} | {_f(r.evr_max_rel_err, '.1e')} | {_f(r.other_load, '.0%')} |"
            )
    return "\n".join(lines)


def _sweep(row: Row) -> str:
    if row.seed_max_rel_err is None:
        return "–"
    n = len(row.seed_max_rel_err)
    return f"{row.seed_mean_max_rel_err:.1e} / {row.seed_worst_max_rel_err:.1e} ({n})"


def _rule(head: str) -> str:
    return "|" + "---|" * (head.count("|") - 1)


def _machine_md(m: dict) -> list[str]:
    v = m["versions"]
    blas = ", ".join(
        f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} threads)"
        for b in m["blas"]
        if b.get("user_api") == "blas"
    )
    git = m.get("git") or {}
    commit = git.get("commit", "?")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    return [
        f"- Date (UTC): {m['date_utc']}",
        f"- Command: `{m['command']}` (in `{m['cwd']}`)",
        f"- Machine: {m['cpu_model']}, {m['logical_cores']} logical cores "
        f"({m['physical_cores']} physical, {m['usable_cores']} usable), {m['ram_gb']} GiB RAM, "
        f"{m['platform']}",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- BLAS: {blas}",
        f"- xsvd source: commit {commit}",
    ]


def _case_md(case: CaseResult) -> list[str]:
    out = [f"### {case.name}", "", case.description or "", ""]
    if case.error:
        return out + ["Case failed to set up:", "", "```", case.error.strip(), "```", ""]
    ref = ", ".join(f"{v:.6g}" for v in case.reference_s)
    extra = case.meta.get("reference_s")
    out.append(
        f"- Reference: {case.reference_how}"
        + (f" ({extra:.1f} s)" if extra is not None else "")
        + f"; s = [{ref}]"
    )
    if "write_s" in case.meta:
        out.append(f"- Store written in {case.meta['write_s']:.1f} s (setup, not timed)")
    for r in case.rows:
        bits = [f"settings {r.settings}"]
        if r.passes_how:
            bits.append(f"passes: {r.passes_how}")
        if r.chunk_reads:
            bits.append(f"chunk reads {r.chunk_reads}")
        if r.notes:
            bits.append(r.notes)
        if r.times_s:
            bits.append("runs " + ", ".join(f"{t:.2f}" for t in r.times_s) + " s")
        out.append(f"- {r.tool}: " + "; ".join(bits))
    for r in case.rows:
        if r.error:
            out += ["", f"{r.tool} failed:", "", "```", r.error.strip(), "```"]
    return out + [""]


def _goals_md(cases: list[CaseResult]) -> list[str]:
    out = []
    for case in cases:
        for g in case.goals:
            if "ratio" not in g:
                out.append(f"- {case.name}: vs {g['peer']}: {g['status']}")
                continue
            line = (
                f"- {case.name}: {g['peer']} / xsvd time = {g['ratio']:.2f}× "
                f"(goal ≥ {g['min_ratio']:g}×: {'met' if g['speed_met'] else 'MISSED'})"
            )
            if g["accuracy"]:
                line += (
                    f"; max rel err σ, timed seed: xsvd {g['xsvd_max_rel_err']:.2e} vs peer "
                    f"{g['peer_max_rel_err']:.2e}"
                )
                if "xsvd_seed_mean" in g:
                    line += (
                        f"; {g['accuracy_basis']}: xsvd {g['xsvd_seed_mean']:.2e} vs peer "
                        f"{g['peer_seed_mean']:.2e} (2 s.e. of the difference "
                        f"{g['noise_2se']:.1e}: {g['accuracy_verdict']})"
                    )
                line += (
                    f" (goal xsvd ≤ peer, on {g['accuracy_basis']}: "
                    f"{'met' if g['accuracy_met'] else 'MISSED'})"
                )
            out.append(line + f" → **{g['status']}**")
    return out or ["- (no goals for the cases run)"]


def write_markdown(path: Path, machine: dict, config: dict, cases: list[CaseResult]) -> str:
    """Write the report and return the results table (for printing)."""
    table = results_table(cases)
    lines = [
        "# xsvd benchmark results",
        "",
        *_machine_md(machine),
        f"- Config: {config}",
        "",
        "## Results",
        "",
        table,
        "",
        "`time / xsvd` is each tool's median time over xsvd's in the same case "
        "(> 1: xsvd is faster). Peak MB is above the RSS before the run. "
        "Bold: the xsvd row the ratios refer to. `max rel err σ` is from the timed runs' "
        "seed; the next column is the same error over several seeds (untimed runs; "
        "deterministic tools and exact duplicates of another row are not swept). "
        "`other load` is the largest share of the machine's CPU that other processes "
        "(or the hypervisor) used during a timed run of that row: timings with a high "
        "share were taken under contention.",
        "",
        f"Method: {TIMING_METHOD}",
        "",
        "## Goals",
        "",
        *_goals_md(cases),
        "",
        "## Cases",
        "",
    ]
    for case in cases:
        lines += _case_md(case)
    path.write_text("\n".join(lines).rstrip() + "\n")
    return table
