"""The runnable examples and the documentation's code snippets keep working.

Every ``examples/*.py`` is run with ``--small`` in a fresh interpreter and must
exit with status 0 and print what it promises. The ``python`` code blocks of
every ``docs/*.md`` page are run top to bottom as one script, so a snippet
that no longer matches the API fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OPTIONAL_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# Text each example must print with --small (regular expressions).
EXPECTED = {
    "climate_eofs.py": [
        r"method='exact', k=5, samples=\{'time': 60\}",
        r"Explained variance",
        r"EOF 1: +\d+\.\d%",
        r"exactly the land cells: True",
        r"\|congruence\| of the EOF patterns",
        r"Projected new data: scores \{'time': 60, 'component': 5\}",
        r"k=3: RMS error 0\.[12]\d\d degC",
    ],
    "climate_sst.py": [
        r"SST anomalies \{'time': 50, 'latitude': 18, 'longitude': 30\}; 90 of 540 cells are land",
        r"EOF 1: +\d+\.\d+ ± +\d+\.\d+ degC\*\*2 +\(\d+\.\d% ± \d+\.\d%\)",
        r"NOT separated from the next",
        r"NaN exactly over land: True",
        r"differences from eofs: eigenvalues \de-1\d, PCs \de-1\d, correlation maps \de-1\d",
        r"Together: (\d+\.\d)% and \1% \(varimax keeps the sum\)",
        r"Wrote 3 figures to \S+: spectrum\.png, pcs\.png, eofs_correlation\.png",
    ],
    "genomics_pca.py": [
        r"<xsvd\.SVDResult \(lazy\): method='compressed', k=5",
        r"nothing was read yet",
        r"Computed in \d+\.\d\d s \(8 passes\)",
        r"PC1 +\d+\.\d\d%",
        r"POP0: PC1 ",
        r"POP2: PC1 ",
        r"Samples closest to their own population's mean: 100\.0%",
    ],
    "genomics_plink.py": [
        r"Wrote a PLINK 1 file set: \S+\.bed, \S+\.bim, \S+\.fam",
        r"missing calls: 3\.0%",
        r"open_plink: \(variants=4000, samples=200\), \d+ Dask chunk\(s\) of PackedGenotypes",
        r"coordinates: variants, chrom, position, .*family_id",
        r"patterson_scaling: kept \d{4} of 4000 variants",
        r"compressed SVD, k=10: \d+\.\d\d s \(\d+ passes\)",
        r"Eigenvalues \(PLINK 2's \.eigenval scale",
        r"PC1-PC2 plane: 100\.0% of samples in their own population",
        # plink2 is optional: either the comparison or the note that it is missing
        r"plink2 not found on PATH|plink2 --pca 10 meanimpute",
    ],
}


def _run(args, cwd, timeout=300):
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    missing = _MISSING.search(proc.stderr) if proc.returncode else None
    if missing and (missing.group(2) or missing.group(1).split(".")[0] in OPTIONAL_PACKAGES):
        # an optional package (an extra of xsvd) is not installed here
        pytest.skip(f"{Path(args[0]).name} needs {missing.group(1) or missing.group(2)}")
    return proc


#: How a missing optional package shows: Python's own error, or xsvd's that names the extra.
_MISSING = re.compile(
    r"ModuleNotFoundError: No module named '([\w.]+)'|(pip install \"xsvd\[\w+\]\")"
)


def test_every_example_has_expectations():
    assert EXAMPLES, "no examples found"
    assert {p.name for p in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_small(path, tmp_path):
    proc = _run([str(path), "--small"], cwd=tmp_path)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}"
    for pattern in EXPECTED.get(path.name, []):
        msg = f"{path.name}: no match for {pattern!r} in:\n{proc.stdout}"
        assert re.search(pattern, proc.stdout), msg


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_layout(path):
    source = path.read_text()
    assert source.lstrip().startswith('"""'), f"{path.name} needs a module docstring"
    assert "def main(argv=None)" in source
    assert '"--small"' in source
    assert 'if __name__ == "__main__":' in source


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


DOCS = [p for p in sorted((ROOT / "docs").glob("*.md")) if _python_blocks(p.read_text())]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_snippets_run(path, tmp_path):
    blocks = _python_blocks(path.read_text())
    script = tmp_path / f"{path.stem}_snippets.py"
    script.write_text("\n\n".join(blocks))
    proc = _run([str(script)], cwd=tmp_path)
    assert proc.returncode == 0, f"a snippet of {path.name} failed:\n{proc.stdout}\n{proc.stderr}"
