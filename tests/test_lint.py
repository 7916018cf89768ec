"""The code follows the project's lint and format rules (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PATHS = ["xsvd", "tests", "benchmarks", "examples", "docs/conf.py"]


def _ruff():
    pytest.importorskip("ruff", reason="lint needs ruff (in the test extra)")
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("the ruff command is not on PATH")
    return exe


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(command):
    proc = subprocess.run(
        [_ruff(), *command, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
