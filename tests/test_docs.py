"""The Sphinx documentation builds without a single warning.

The site (``docs/``: the Markdown guides through myst-parser, the API
reference through autosummary, numpydoc and sphinx-autosummary-accessors) is
built with ``-W --keep-going``, as a user would build it, so a broken link
between pages, a docstring that numpydoc cannot parse or an API entry that no
longer imports fails here. The build runs on a copy of ``docs/`` so that the
generated autosummary stubs never land in the checkout. Nothing is executed
(the Python snippets of the pages are run by ``test_examples.py``) and nothing
is fetched from the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

for _name in ("sphinx", "furo", "numpydoc", "myst_parser", "sphinx_autosummary_accessors"):
    pytest.importorskip(_name, reason=f'building the docs needs {_name}: pip install -e ".[docs]"')

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build the HTML once for this module: (html folder, build output)."""
    tmp = tmp_path_factory.mktemp("docs")
    src = tmp / "src"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "generated"))
    html = tmp / "html"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path)  # the checkout's xsvd, for autodoc
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(src), str(html)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return html, proc


def test_build_has_no_warnings(built):
    _, proc = built
    assert proc.returncode == 0, (
        f"sphinx -W failed (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout[-3000:]}"
    )
    assert "WARNING" not in proc.stderr, proc.stderr


def test_every_page_is_built(built):
    html, proc = built
    assert proc.returncode == 0, proc.stderr
    pages = sorted(p.stem for p in DOCS.glob("*.md")) + ["api"]
    missing = [p for p in pages if not (html / f"{p}.html").is_file()]
    assert not missing, f"pages not built: {missing}"


def test_accessor_api_is_documented(built):
    html, proc = built
    assert proc.returncode == 0, proc.stderr
    gen = html / "generated"
    for name, signature in [
        ("xarray.DataArray.svd", "DataArray.svd"),
        ("xarray.DataArray.svd.exact", "DataArray.svd.exact"),
        ("xarray.DataArray.svd.compressed", "DataArray.svd.compressed"),
    ]:
        page = gen / f"{name}.html"
        assert page.is_file(), f"no API page for {name}"
        text = page.read_text(encoding="utf-8")
        assert f'id="{name}"' in text, f"{name} is not documented as an object on its page"
        assert signature in text
    api = (html / "api.html").read_text(encoding="utf-8")
    for name in ("xarray.DataArray.svd.compressed", "xsvd.svd", "xsvd.SVDResult"):
        assert f'href="generated/{name}.html"' in api, f"api.html does not link {name}"


def test_function_pages_have_numpydoc_sections(built):
    html, proc = built
    assert proc.returncode == 0, proc.stderr
    text = (html / "generated" / "xsvd.svd.html").read_text(encoding="utf-8")
    for section in ("Parameters", "Returns", "Examples"):
        assert f">{section}" in text, f"xsvd.svd's page has no {section} section"
    text = (html / "generated" / "xsvd.compressed.html").read_text(encoding="utf-8")
    assert ">Parameters" in text and "n_power_iter" in text
