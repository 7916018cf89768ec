"""Tests that need an optional package skip, with a reason, where it is not installed.

Runs the test files that use optional packages once more in a subprocess
with those packages hidden (``XSVD_TEST_WITHOUT``, see ``conftest.py``): the
run must pass, every skip naming what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import OPTIONAL_PACKAGES

HERE = Path(__file__).resolve().parent

FILES = [
    "test_io.py",
    "test_cli.py",
    "test_genomics.py",
    "test_units.py",
    "test_plot.py",
    "test_distributed.py",
    "test_docs.py",
    "test_doctests.py",
    "test_property.py",
    "test_statistics.py",
    "test_rotation.py",
    "test_saving.py",
    "test_genomics_outputs.py",
    "test_trust_io.py",
]


def test_tests_skip_with_a_reason_without_optional_packages(tmp_path):
    env = dict(os.environ, XSVD_TEST_WITHOUT=",".join(OPTIONAL_PACKAGES))
    # hypothesis's pytest plugin imports hypothesis: off, as if it were not installed
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    cmd += ["-p", "no:hypothesispytest"]
    proc = subprocess.run(
        [*cmd, *(str(HERE / f) for f in FILES)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skips, out[-3000:]
    for needed in ("zarr", "bed-reader", "matplotlib", "pint", "distributed", "hypothesis"):
        assert any(needed in line for line in skips), (needed, skips)
