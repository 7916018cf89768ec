"""Genomics inputs and defaults that went wrong silently (issue 31, items 7 and 9).

The sample dimension asked of ``patterson_scaling`` (and of ``xsvd run --weights
patterson``) must be the samples; damaged or malformed PLINK files are errors that name
the file (and the line); ``tracy_widom`` refuses a count given as text.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.cli import main
from xsvd.genomics import PlinkFileError


@pytest.fixture
def bed_prefix(tmp_path):
    gt = xsvd.datasets.genotypes(n_variants=300, n_samples=40, seed=3)
    prefix = tmp_path / "toy"
    xsvd.write_plink(gt, prefix)
    return prefix


# ------------------------------------------------------------ item 3: the sample dimension


@pytest.mark.parametrize("source", ["bed", "memory", "plain names"])
def test_patterson_scaling_refuses_the_variants_as_samples(bed_prefix, source):
    gt = xsvd.open_plink(bed_prefix)
    if source == "memory":
        gt = gt.compute()
    elif source == "plain names":  # no sample-dimension attribute: the names say it
        gt = xr.DataArray(gt.values, dims=("variants", "samples"))
    with pytest.raises(ValueError, match=r"samples along 'samples'.*Pass `dim='samples'`"):
        xsvd.patterson_scaling(gt, dim="variants")
    kept, w = xsvd.patterson_scaling(gt, dim="samples")  # the right way still works
    assert w.dims == ("variants",)


def test_patterson_scaling_takes_other_names_when_nothing_says_otherwise():
    g = xsvd.datasets.genotypes(n_variants=100, n_samples=20, seed=1).values
    gt = xr.DataArray(g.T, dims=("ind", "site"))  # names xsvd does not know
    _, w = xsvd.patterson_scaling(gt, dim="ind")
    assert w.dims == ("site",) and w.sizes["site"] <= 100


def test_cli_refuses_patterson_weights_over_the_variants(bed_prefix, tmp_path, capsys):
    out = tmp_path / "o.zarr"
    argv = ["run", f"{bed_prefix}.bed", "--dim", "variants", "--k", "2", "--center"]
    assert main([*argv, "--weights", "patterson", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "allele frequencies are means over the samples" in err
    assert "--dim samples" in err or "dim='samples'" in err
    assert not out.exists()
