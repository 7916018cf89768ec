"""The `xsvd` command."""

from __future__ import annotations

import re

from xsvd.cli import main


def test_demo_reports_shapes_method_variance_and_time(capsys):
    assert main(["demo", "--variants", "4000", "--samples", "120", "--k", "4"]) == 0
    out = capsys.readouterr().out
    assert out.count("method: compressed (k=4") == 2
    assert "U {'samples': 120, 'component': 4}" in out
    assert "V {'component': 4, 'lat': 36, 'lon': 72}" in out
    assert re.search(r"explained variance: \d+\.\d%", out)
    assert re.search(r"in \d+\.\d\d s", out)
    # the planted climate modes are found: correlations printed as 0.9xx or 1.000
    corr = re.search(r"planted modes: ([\d. ]+)", out).group(1).split()
    assert len(corr) == 3 and min(map(float, corr)) > 0.95


def test_bad_arguments_give_a_one_line_error(capsys):
    assert main(["demo", "--k", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xsvd: error:") and err.count("\n") == 1
