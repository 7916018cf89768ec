"""Options declared once (issue 29): the accessors, the docs' options table and the
CLI's flags are made from the options classes, so none of them can drift."""

from __future__ import annotations

import inspect
import pydoc
from dataclasses import fields

import pytest
import xarray as xr

import xsvd
from xsvd.climate import multivariate
from xsvd.core.options import CompressedOptions, Preprocessing
from xsvd.labeled.api import Labeling

DA = xr.DataArray([[1.0]])
DS = xr.Dataset({"a": DA})


def _described(sig: inspect.Signature) -> list[tuple]:
    return [(p.name, p.default, p.kind) for p in sig.parameters.values()]


@pytest.mark.parametrize(
    "method, function",
    [
        (DA.svd.compressed, xsvd.compressed),
        (DA.svd.exact, xsvd.exact),
        (DA.svd, xsvd.svd),
        (DA.svd.__call__, xsvd.svd),
        (DS.svd.compressed, multivariate.compressed),
        (DS.svd.exact, multivariate.exact),
        (DS.svd, multivariate.svd),
    ],
)
def test_accessors_have_the_signature_and_docstring_of_their_function(method, function):
    want = inspect.signature(function)
    got = inspect.signature(method)
    assert _described(got) == _described(want)[1:]  # less the data argument
    assert got.return_annotation == want.return_annotation
    call = method if inspect.ismethod(method) else method.__call__
    assert call.__doc__ == function.__doc__  # not a line that points to it


def test_accessor_signature_lists_every_declared_option():
    params = inspect.signature(DA.svd.compressed).parameters
    for cls in (Labeling, Preprocessing, CompressedOptions):
        for f in fields(cls):
            assert params[f.name].default == f.default
            assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(DA.svd.exact).parameters)[0] == "k"
    assert "n_power_iter" not in inspect.signature(DA.svd.exact).parameters


def test_help_of_the_accessor_methods_shows_the_options():
    text = pydoc.render_doc(DA.svd.compressed, renderer=pydoc.plaintext)
    assert "n_oversamples" in text and "tol" in text and "max_passes=None" in text
    assert "Number of components." in text  # the docstring of xsvd.compressed
    text = pydoc.render_doc(DA.svd, renderer=pydoc.plaintext)  # the accessor and its methods
    assert "__call__(self, k: 'int | None' = None, *, method" in text
    assert "exact(self, *, k: 'int | None' = None, dim=None" in text
    text = pydoc.render_doc(DS.svd.compressed, renderer=pydoc.plaintext)
    assert "equal_variance=False" in text and "n_power_iter=None" in text


def test_accessors_still_forward_and_refuse_unknown_options():
    sst = xsvd.datasets.climate_field(n_time=30, n_lat=6, n_lon=12, seed=1)
    got = sst.svd.compressed(3, dim="time", center=True, seed=0)
    want = xsvd.compressed(sst, 3, dim="time", center=True, seed=0)
    xr.testing.assert_allclose(got.S, want.S)
    assert sst.svd(3, dim="time").method == "exact"
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_power_iters'"):
        sst.svd.compressed(3, dim="time", n_power_iters=2)
    with pytest.raises(TypeError):
        sst.svd.exact(3)  # k is keyword-only for the exact SVD, as in xsvd.exact
