"""Documentation pages written as one Python session print what they show.

The ``pycon`` blocks (``>>>`` prompts) of every ``docs/*.md`` page that has
them are run top to bottom as one doctest, with ``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``, so a printed value that no longer matches what the
code prints fails here (``test_examples.py`` runs the pages' ``python``
blocks, which show no output). A page whose examples need an optional
package that is not installed (zarr, ...) is skipped, naming it.
"""

from __future__ import annotations

import doctest
import io
import re
from pathlib import Path

import pytest
from conftest import DocRunner as _Runner

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```pycon\n(.*?)^```", flags=re.S | re.M)


def _sessions(text: str) -> str:
    """The page with everything outside its ``pycon`` blocks blanked (line numbers kept)."""
    keep = [""] * (text.count("\n") + 1)
    for match in _BLOCK.finditer(text):
        first = text.count("\n", 0, match.start(1))
        for i, line in enumerate(match.group(1).split("\n")[:-1]):
            keep[first + i] = line
    return "\n".join(keep)


PAGES = [p for p in sorted(DOCS.glob("*.md")) if _BLOCK.search(p.read_text(encoding="utf-8"))]


def test_getting_started_is_a_session():
    assert DOCS / "getting-started.md" in PAGES


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_page_prints_what_it_shows(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    text = _sessions(path.read_text(encoding="utf-8"))
    test = doctest.DocTestParser().get_doctest(text, {}, path.name, str(path), 0)
    assert test.examples, f"{path.name} has no examples"
    runner = _Runner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=True)
    if runner.missing:
        pytest.skip(f"examples of {path.name} need: {runner.missing[0]}")
    assert runner.failures == 0, report.getvalue()


def test_getting_started_options_table_is_the_declared_one():
    """The options table is made from the declarations (issue 29): re-rendered, the page
    must not change, so a new option or default cannot be left out of the docs."""
    from xsvd.labeled.options_doc import TABLE_START, with_options_table

    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert page.count(TABLE_START) == 1
    assert with_options_table(page) == page, (
        "docs/getting-started.md's options table differs from the declarations; rewrite it "
        "with xsvd.labeled.options_doc.with_options_table"
    )
    # what it says of the defaults is what the solver does
    row = next(line for line in page.splitlines() if line.startswith("| `n_power_iter` |"))
    assert "`tol=1e-6`, 8 passes at most" in row and "`7`" not in row
    row = next(line for line in page.splitlines() if line.startswith("| `max_passes` |"))
    assert "8 for the default stop" in row
