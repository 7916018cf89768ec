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


# ------------------------------------------------------------ the options table


def test_options_table_has_a_row_per_option_of_xsvd_svd():
    from xsvd.labeled.options_doc import options_table

    rows = options_table().splitlines()[2:]
    names = [row.split("`")[1] for row in rows]
    assert names == list(inspect.signature(xsvd.svd).parameters)[1:]
    by_name = dict(zip(names, rows, strict=True))
    assert '| `"error"` |' in by_name["missing"] and "| `False` |" in by_name["center"]
    assert "compressed only:" in by_name["seed"] and "compressed only" not in by_name["center"]
    assert "| `10` |" in by_name["n_oversamples"]  # what the solver fills in for None


def test_options_table_follows_the_declarations():
    """A new option, or a new default, changes the table: it is made, not written."""
    from dataclasses import dataclass

    from xsvd.core.options import takes_options
    from xsvd.labeled.options_doc import NONE_MEANS, options_table

    @dataclass(frozen=True, kw_only=True)
    class Extra:
        flavour: str = "plain"
        scale: int | None = None

    @takes_options(Extra)
    def fit(obj, **options):
        """Fit.

        Parameters
        ----------
        obj : object
            Data.
        flavour : str
            How it tastes. Mild.
        scale : int, optional
            How large it is, e.g. 3. Default: the data's own.
        """

    with pytest.raises(KeyError, match="say what scale=None means"):
        options_table(fit)
    NONE_MEANS["scale"] = "the data's own"
    try:
        table = options_table(fit)
    finally:
        del NONE_MEANS["scale"]
    assert table.splitlines()[2:] == [
        '| `flavour` | `"plain"` | How it tastes. Mild. |',
        "| `scale` | the data's own | How large it is, e.g. 3. |",
    ]


def test_with_options_table_needs_the_markers():
    from xsvd.labeled.options_doc import TABLE_END, TABLE_START, with_options_table

    with pytest.raises(ValueError, match="markers"):
        with_options_table("# a page\n")
    page = f"intro\n{TABLE_START}\nold\n{TABLE_END}\nrest\n"
    out = with_options_table(page)
    assert out.startswith(f"intro\n{TABLE_START}\n| option |")
    assert out.endswith(f"{TABLE_END}\nrest\n")
    assert with_options_table(out) == out


def test_the_documented_default_stop_is_the_solvers():
    """The table says: no fixed n_power_iter, tol=1e-6, 8 passes at most (flat spectrum)."""
    from xsvd.labeled.options_doc import options_table

    sst = xsvd.datasets.climate_field(seed=0)  # 240 x 36 x 72, as in getting-started.md
    res = sst.svd.compressed(5, dim="time", center=True, seed=0)  # noise: does not converge
    assert res.settings["tol"] == 1e-6 and res.settings["passes"] == 8
    assert res.settings["estimated_error"] > 1e-6
    row = next(r for r in options_table().splitlines() if r.startswith("| `n_power_iter`"))
    assert f"`tol={res.settings['tol']:g}`".replace("e-0", "e-") in row
    assert f"{res.settings['passes']} passes at most" in row
