"""Every example in xsvd's docstrings runs and prints what it shows.

A module whose examples need an optional package that is not installed
(zarr, matplotlib, ...) is skipped, naming the package.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest
from conftest import DocRunner as _Runner

import xsvd

MODULES = sorted(m.name for m in pkgutil.walk_packages(xsvd.__path__, "xsvd."))


def test_every_module_is_checked():
    assert "xsvd.core.randomized.solver" in MODULES and "xsvd.labeled.result" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    module = importlib.import_module(name)
    runner = _Runner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    for test in tests:
        runner.run(test, out=report.write)
    if runner.missing:
        pytest.skip(f"examples of {name} need: {runner.missing[0]}")
    assert runner.failures == 0, report.getvalue()
