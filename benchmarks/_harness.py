"""Measurement machinery: tools, rows, timing, peak memory and chunk-read counting.

Everything here is independent of what is being decomposed: a *case* (see
``_cases.py``) hands over a list of :class:`Tool` objects and a reference
spectrum, and :func:`run_case` measures every tool, interleaving them, and
returns one :class:`Row` per tool.
"""

from __future__ import annotations

import ctypes
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

MB = 1024**2

#: Role of a tool in its case. "xsvd" is the row the peers are compared to.
SUBJECT = "xsvd"
PEER = "peer"
REFERENCE = "reference"


# --------------------------------------------------------------------------- data types


@dataclass
class Output:
    """What one run of a tool produced (computed, in memory)."""

    s: np.ndarray  #: top-k singular values, descending
    evr: np.ndarray | None = None  #: explained variance ratios, when the tool reports them
    info: dict = field(default_factory=dict)  #: extra facts (e.g. passes xsvd reports)


Wrap = Callable[[Any], Any]  # dask array -> dask array (identity, or the chunk counter)
ToolFn = Callable[[Wrap, int], Output]  # (wrap, seed) -> output


@dataclass
class Tool:
    """One contender in a case.

    ``fn(wrap, seed)`` runs the whole decomposition with that random seed and
    returns an :class:`Output`; it must pass its Dask input through ``wrap``
    (identity for timed runs, the chunk counter for the counting run). Tools
    on NumPy input ignore ``wrap`` and give their passes analytically
    (``passes``, ``passes_how``). ``seeded`` tools take part in the accuracy
    sweep over seeds (off for deterministic tools and for duplicates of
    another row's algorithm).
    """

    name: str
    fn: ToolFn
    role: str = PEER
    settings: dict = field(default_factory=dict)
    counted: bool = False  #: count chunk reads with a wrapped Dask input
    seeded: bool = True  #: include in the accuracy sweep over seeds
    passes: float | None = None  #: analytic passes (when not counted)
    passes_how: str = ""
    notes: str = ""


@dataclass
class Row:
    """The measurements of one (case, tool) pair; one line of the results table."""

    case: str
    tool: str
    role: str
    settings: dict
    notes: str = ""
    warmup_s: float | None = None  #: first run (excluded from the median)
    times_s: list[float] = field(default_factory=list)  #: timed runs
    median_s: float | None = None
    ratio: float | None = None  #: median_s / median_s of the case's xsvd row
    rss_before_mb: float | None = None  #: process RSS before the run (median over runs)
    peak_mb: float | None = None  #: max over timed runs of (peak RSS - RSS before)
    passes: float | None = None
    passes_how: str = ""
    chunk_reads: dict | None = None  #: counting run: total, chunks, min/max per chunk
    s: list[float] | None = None
    rel_err: list[float] | None = None  #: |s - s_ref| / s_ref per component
    max_rel_err: float | None = None
    evr_max_rel_err: float | None = None
    seed_max_rel_err: dict[str, float] | None = None  #: max rel err for each seed of the sweep
    seed_mean_max_rel_err: float | None = None  #: its mean over the seeds
    seed_worst_max_rel_err: float | None = None  #: its max over the seeds
    other_load: float | None = None  #: max over timed runs of other processes' CPU share
    info: dict = field(default_factory=dict)
    error: str | None = None  #: traceback when the tool failed


# --------------------------------------------------------------------------- memory


def run_child(code: str, *args) -> dict:
    """Run ``code`` in a fresh Python process (``python -c code args...``) and return the
    JSON object its last line of output prints, or ``{"error": <last line of stderr>}``:
    a peak memory measured there is that of the one run alone."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load_malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_free_memory() -> None:
    """Collect garbage and hand freed heap memory back to the OS (glibc).

    Without the trim, memory freed by an earlier run can stay resident and
    be reused by the next one, which then seems to need less than it does.
    """
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def rss_bytes() -> int:
    """Resident set size of this process."""
    return psutil.Process().memory_info().rss


class PeakRSS:
    """Sample this process's RSS in a background thread while the block runs.

    ``before`` is the RSS on entry (after freeing what can be freed), ``peak`` the
    largest sample (entry and exit included), ``above`` their difference.
    """

    def __init__(self, interval_s: float = 0.005):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.before = 0
        self.peak = 0

    def _sample(self) -> None:
        proc = psutil.Process()
        while not self._stop.wait(self.interval_s):
            rss = proc.memory_info().rss
            if rss > self.peak:
                self.peak = rss

    def __enter__(self) -> PeakRSS:
        release_free_memory()
        self.before = self.peak = rss_bytes()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def above(self) -> int:
        return self.peak - self.before


# --------------------------------------------------------------------------- contention


class OtherLoad:
    """CPU used by *other* processes (and stolen by the hypervisor) during a block.

    ``share`` = (busy CPU seconds of the whole machine - this process's CPU
    seconds) / (wall seconds x cores): 0 on an otherwise idle machine, 1 when
    something else kept every core busy. Timings taken with a high share are
    suspect.
    """

    def __enter__(self) -> OtherLoad:
        self._t0 = time.perf_counter()
        self._busy0 = self._busy()
        self._own0 = self._own()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._t0
        other = (self._busy() - self._busy0) - (self._own() - self._own0)
        self.share = max(0.0, other) / max(wall * (psutil.cpu_count() or 1), 1e-9)

    @staticmethod
    def _busy() -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)

    @staticmethod
    def _own() -> float:
        t = psutil.Process().cpu_times()
        return t.user + t.system


# --------------------------------------------------------------------------- passes


class ChunkCounter:
    """Counts how often each chunk of a Dask array is produced.

    ``wrap(x)`` returns ``x`` with a ``map_blocks`` layer that hands each
    block back unchanged and records its chunk location; every task that
    produces a chunk (each read from a store, each re-execution of a graph)
    is one count. Thread safe.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.counts: Counter = Counter()
        self.n_chunks = 0

    def _record(self, block, block_info=None):
        info = (block_info or {}).get(None)
        if info is not None:
            with self._lock:
                self.counts[tuple(info["chunk-location"])] += 1
        return block

    def wrap(self, x):
        """``x`` with every chunk production counted."""
        self.n_chunks = int(np.prod(x.numblocks))
        meta = np.empty((0,) * x.ndim, dtype=x.dtype)
        return x.map_blocks(
            self._record, dtype=x.dtype, meta=meta, name=f"count-chunks-{uuid.uuid4().hex}"
        )

    def summary(self) -> dict:
        """Total reads, number of chunks and reads per chunk (min, max)."""
        per_chunk = list(self.counts.values()) or [0]
        missing = self.n_chunks - len(self.counts)
        return {
            "total": int(sum(self.counts.values())),
            "chunks": self.n_chunks,
            "min_per_chunk": 0 if missing else int(min(per_chunk)),
            "max_per_chunk": int(max(per_chunk)),
        }


# --------------------------------------------------------------------------- accuracy


def relative_errors(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``|values - reference| / |reference|`` over the reference's length."""
    values = np.asarray(values, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    k = len(reference)
    if len(values) < k:
        raise ValueError(f"got {len(values)} values, need {k}")
    return np.abs(values[:k] - reference) / np.abs(reference)


# --------------------------------------------------------------------------- running


def _identity(x):
    return x


@dataclass
class _Measurement:
    seconds: float
    rss_before: int
    peak_above: int
    other_load: float
    output: Output


def measure(tool: Tool, seed: int, wrap: Wrap = _identity) -> _Measurement:
    """Run ``tool`` once: wall time, RSS before, peak RSS above it, others' CPU share."""
    with PeakRSS() as mem, OtherLoad() as load:
        t0 = time.perf_counter()
        out = tool.fn(wrap, seed)
        seconds = time.perf_counter() - t0
    return _Measurement(seconds, mem.before, mem.above, load.share, out)


def _failure(row: Row, when: str) -> None:
    row.error = f"{when}:\n{traceback.format_exc()}"
    gc.collect()


def run_case(
    case_name: str,
    tools: list[Tool],
    reference_s: np.ndarray,
    reference_evr: np.ndarray | None,
    repeat: int,
    seed: int = 0,
    accuracy_seeds: int = 1,
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Measure every tool of a case: one warm-up round, ``repeat`` timed rounds.

    Tools run interleaved, in reversed order every other round, so that drift
    (thermal, caches, memory fragmentation) affects them alike; every timed
    run uses ``seed``. A tool that raises is recorded with its traceback and
    left out of later rounds; the others go on. Afterwards, untimed: each
    counted tool runs once more on a counting wrapper of its input, and, when
    ``accuracy_seeds`` > 1, each seeded tool runs with ``accuracy_seeds - 1``
    further seeds so that its accuracy is known over several random test
    matrices, not just one.
    """
    rows = {t.name: _new_row(case_name, t) for t in tools}
    for rnd in range(repeat + 1):
        order = tools if rnd % 2 == 0 else tools[::-1]
        for tool in order:
            row = rows[tool.name]
            if row.error is not None:
                continue
            label = "warm-up" if rnd == 0 else f"run {rnd}/{repeat}"
            try:
                m = measure(tool, seed)
            except Exception:
                _failure(row, label)
                log(f"  {tool.name}: FAILED ({label})")
                continue
            _record(row, m, warmup=rnd == 0, reference_s=reference_s, reference_evr=reference_evr)
            log(
                f"  {tool.name:<28} {label:<9} {m.seconds:8.2f} s  "
                f"peak +{m.peak_above / MB:7.0f} MB  max rel err {row.max_rel_err:.2e}  "
                f"other load {m.other_load:.0%}"
            )
            del m
            gc.collect()
    for tool in tools:
        row = rows[tool.name]
        if tool.counted and row.error is None:
            _count_passes(row, tool, seed, log)
    if accuracy_seeds > 1:
        seeds = [seed + i for i in range(1, accuracy_seeds)]
        for tool in tools:
            row = rows[tool.name]
            if tool.seeded and row.error is None:
                _seed_sweep(row, tool, seed, seeds, reference_s, log)
    for row in rows.values():
        _summarize(row)
    _ratios(list(rows.values()))
    return list(rows.values())


def _new_row(case_name: str, tool: Tool) -> Row:
    return Row(
        case=case_name,
        tool=tool.name,
        role=tool.role,
        settings=dict(tool.settings),
        notes=tool.notes,
        passes=tool.passes,
        passes_how=tool.passes_how,
    )


def _record(row: Row, m: _Measurement, *, warmup: bool, reference_s, reference_evr) -> None:
    """Store one run's numbers; accuracy comes from the latest run's output."""
    if warmup:
        row.warmup_s = m.seconds
    else:
        row.times_s.append(m.seconds)
        row.info.setdefault("rss_before_all_mb", []).append(m.rss_before / MB)
        row.info.setdefault("peak_all_mb", []).append(m.peak_above / MB)
        row.info.setdefault("other_load_all", []).append(m.other_load)
    out = m.output
    err = relative_errors(out.s, reference_s)
    row.s = [float(v) for v in np.asarray(out.s)[: len(reference_s)]]
    row.rel_err = [float(v) for v in err]
    row.max_rel_err = float(err.max())
    if out.evr is not None and reference_evr is not None:
        row.evr_max_rel_err = float(relative_errors(out.evr, reference_evr).max())
    row.info.update(out.info)
    reported = out.info.get("xsvd_passes_reported")
    if row.passes is None and reported is not None:  # stopping when converged: as reported
        row.passes = float(reported)
        row.passes_how = row.passes_how or "reads of the matrix, as xsvd reports"


def _count_passes(row: Row, tool: Tool, seed: int, log: Callable[[str], None]) -> None:
    """One extra, untimed run on a counting wrapper: passes = chunk reads / chunks."""
    counter = ChunkCounter()
    try:
        tool.fn(counter.wrap, seed)
    except Exception:
        _failure(row, "counting run")
        log(f"  {tool.name}: FAILED (counting run)")
        return
    summary = counter.summary()
    row.chunk_reads = summary
    row.passes = summary["total"] / summary["chunks"] if summary["chunks"] else None
    row.passes_how = "counted (chunk reads / chunks)"
    log(f"  {tool.name:<28} counting  {row.passes} passes  {summary}")
    gc.collect()


def _seed_sweep(row: Row, tool: Tool, seed: int, seeds: list[int], reference_s, log) -> None:
    """Max relative error for more seeds (untimed); the timed runs give ``seed``'s."""
    errs = {str(seed): row.max_rel_err}
    for s in seeds:
        try:
            out = tool.fn(_identity, s)
        except Exception:
            _failure(row, f"accuracy run, seed {s}")
            log(f"  {tool.name}: FAILED (seed {s})")
            return
        errs[str(s)] = float(relative_errors(out.s, reference_s).max())
        del out
        gc.collect()
    values = list(errs.values())
    row.seed_max_rel_err = errs
    row.seed_mean_max_rel_err = float(np.mean(values))
    row.seed_worst_max_rel_err = float(np.max(values))
    log(
        f"  {tool.name:<28} seeds     max rel err mean {row.seed_mean_max_rel_err:.2e}, "
        f"worst {row.seed_worst_max_rel_err:.2e} over {len(values)} seeds"
    )


def _summarize(row: Row) -> None:
    if row.times_s:
        row.median_s = statistics.median(row.times_s)
        row.rss_before_mb = statistics.median(row.info["rss_before_all_mb"])
        row.peak_mb = max(row.info["peak_all_mb"])
        row.other_load = max(row.info["other_load_all"])


def _ratios(rows: list[Row]) -> None:
    """``ratio`` = row time / time of the case's xsvd row (peer/xsvd: > 1 means xsvd faster)."""
    subject = next((r for r in rows if r.role == SUBJECT and r.median_s), None)
    if subject is None:
        return
    for r in rows:
        if r.median_s:
            r.ratio = r.median_s / subject.median_s
