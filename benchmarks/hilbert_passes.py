"""Passes and time of ``xsvd.hilbert_eof`` at the defaults and at ``tol=1e-7`` on the field
of ``benchmarks/hilbert.py`` (3,000 x 90 x 180, ``padding="none"``, k=10), one call each.

    .venv/bin/python benchmarks/hilbert_passes.py

Prints, per call: the options, seconds, passes, why they stopped, the estimated error.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import xarray as xr

import xsvd

sys.path.insert(0, str(Path(__file__).parent))
import hilbert as bench  # noqa: E402


def main() -> None:
    a = bench.block((3000, 90, 180), slice(None), slice(None))
    da = xr.DataArray(a, dims=("time", "lat", "lon"))
    for kw in ({}, {"tol": 1e-7, "max_passes": 40}):
        t = time.perf_counter()
        res = xsvd.hilbert_eof(da, 10, padding="none", **kw)
        s = res.settings
        print(kw, f"{time.perf_counter() - t:.2f} s", s["passes"], s["stopped"],
              f"{s.get('estimated_error'):.2g}")  # fmt: skip


if __name__ == "__main__":
    main()
