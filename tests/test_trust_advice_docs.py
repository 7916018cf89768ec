"""docs/input-rules.md states every rule for every analysis (issue 31).

Its "Every analysis" section has one subsection per analysis (single field, Dataset,
MCA, extended, Hilbert, bootstrap, rotation, genomics), each naming functions that
exist and stating the same eight rules in the same order; what it says of the
``center`` and ``standardize`` defaults is read from the functions' signatures.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import xsvd
from xsvd.climate import multivariate

PAGE = Path(__file__).resolve().parent.parent / "docs" / "input-rules.md"

#: Each analysis: a word of its heading, and the function whose defaults it states.
ANALYSES = {
    "Single field": xsvd.svd,
    "Dataset": multivariate.svd,
    "MCA": xsvd.mca,
    "Extended EOF": xsvd.extended_eof,
    "Hilbert EOF": xsvd.hilbert_eof,
    "Bootstrap": xsvd.bootstrap,
    "Rotation": xsvd.SVDResult.rotate,
    "Genomics": xsvd.patterson_scaling,
}
RULES = (
    "NaN, land",
    "inf",
    "Constant features",
    "Magnitudes",
    "Weights",
    "center, standardize",
    "Units",
    "k",
)


def _sections() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    every = text.split("\n## Every analysis\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### (.+)$", every, flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


def test_every_analysis_has_its_section_naming_real_functions():
    sections = _sections()
    for word in ANALYSES:
        (heading,) = [h for h in sections if h.startswith(word)]
        for name in re.findall(r"`([\w.]+)`", heading):  # e.g. `xsvd.mca`, `res.rotate`
            owner, *path = name.split(".")
            if owner in ("DataArray", "Dataset"):
                continue  # the accessors: xsvd.svd and multivariate.svd, checked below
            obj = {"xsvd": xsvd, "res": xsvd.SVDResult}.get(owner)
            assert obj is not None, f"{heading}: {name} names nothing"
            for part in path:
                obj = getattr(obj, part)
            assert callable(obj), name
    assert len(sections) == len(ANALYSES)


@pytest.mark.parametrize("word", ANALYSES)
def test_each_section_states_the_eight_rules_in_order(word):
    (body,) = [b for h, b in _sections().items() if h.startswith(word)]
    said = re.findall(r"^- \*\*(.+?)\*\*:", body, flags=re.M)
    assert tuple(said) == RULES, f"{word}: {said}"


@pytest.mark.parametrize("word", [w for w in ANALYSES if w not in ("Rotation", "Genomics")])
def test_the_defaults_stated_are_the_functions(word):
    (body,) = [b for h, b in _sections().items() if h.startswith(word)]
    line = body.split("- **center, standardize**:", 1)[1].split("\n- **", 1)[0]
    line = " ".join(line.split())
    params = inspect.signature(ANALYSES[word]).parameters
    center = params["center"].default
    if word in ("Dataset",):
        assert "as a single field" in line
        assert center is inspect.signature(xsvd.svd).parameters["center"].default
        return
    assert f"`center={center}` by default" in line, line
    if "standardize" in params:
        assert "no `standardize`" not in line
        assert f"`standardize={params['standardize'].default}`" in line, line
    else:
        assert "no `standardize`" in line, line
