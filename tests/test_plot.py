"""Plots of SVD results (xsvd.plot): types, contents, labels, errors, lazy inputs."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
import xarray as xr

matplotlib = pytest.importorskip("matplotlib", reason='needs matplotlib: pip install "xsvd[plot]"')
matplotlib.use("Agg")

import dask  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PathCollection, QuadMesh  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import xsvd  # noqa: E402
from xsvd.plot import ResultPlotter  # noqa: E402

K = 4


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def sst():
    return xsvd.datasets.climate_field(60, 18, 36)


@pytest.fixture(scope="module")
def climate(sst):
    return sst.svd(k=K, dim="time", center=True)


@pytest.fixture(scope="module")
def gt():
    return xsvd.datasets.genotypes(1_000, 90)


@pytest.fixture(scope="module")
def genotype(gt):
    return gt.svd(k=K, dim="samples", center=True)


@pytest.fixture(scope="module")
def zonal(sst):
    return sst.mean("lon").svd(k=3, dim="time", center=True)


def save(fig: Figure, tmp_path, name: str = "plot.png"):
    path = tmp_path / name
    fig.savefig(path, dpi=40)
    assert path.stat().st_size > 0
    return path


def percent_in(text: str) -> float:
    """The number in "... (12.3%)"."""
    (value,) = re.findall(r"\(([0-9.e+-]+)%\)", text)
    return float(value)


def labeled_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def map_panels(fig):
    """The visible map panels (the colorbar, also a QuadMesh, has no title)."""
    return [
        ax
        for ax in fig.axes
        if ax.get_visible()
        and ax.get_title().startswith("component")
        and any(isinstance(c, QuadMesh) for c in ax.collections)
    ]


# ------------------------------------------------------------------- scree
def test_scree_bars_line_labels(climate, tmp_path):
    ax = ResultPlotter(climate).scree()
    assert isinstance(ax, Axes)
    bars = ax.containers[0]
    assert len(bars) == K
    heights = [b.get_height() for b in bars]
    np.testing.assert_allclose(heights, 100 * climate.explained_variance_ratio.values)
    (line,) = labeled_lines(ax)
    assert line.get_label() == "cumulative"
    np.testing.assert_allclose(
        line.get_ydata(), 100 * np.cumsum(climate.explained_variance_ratio.values)
    )
    assert "%" in ax.get_ylabel()
    assert "component" in ax.get_xlabel()
    assert "variance" in ax.get_title().lower()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3"]
    save(ax.figure, tmp_path)


def test_scree_options_and_given_axes(climate, tmp_path):
    fig, given = plt.subplots()
    ax = ResultPlotter(climate).scree(ax=given, cumulative=False, log=True)
    assert ax is given
    assert labeled_lines(ax) == []
    assert ax.get_yscale() == "log"
    assert len(ax.containers[0]) == K
    save(fig, tmp_path)


# -------------------------------------------------------------- components
def test_component_maps(climate, tmp_path):
    fig = ResultPlotter(climate).components(n=3)
    assert isinstance(fig, Figure)
    panels = map_panels(fig)
    assert len(panels) == 3
    evr = climate.explained_variance_ratio.values
    for i, ax in enumerate(panels):
        title = ax.get_title()
        assert f"component {i}" in title and "%" in title
        assert percent_in(title) == pytest.approx(100 * evr[i], rel=5e-3)
    # one shared colorbar, symmetric around 0
    mesh = panels[0].collections[0]
    assert mesh.norm.vmin == pytest.approx(-mesh.norm.vmax)
    assert mesh.norm.vmax > 0
    assert any(ax.get_ylabel() == "pattern (V)" for ax in fig.axes if ax not in panels)
    assert fig.get_suptitle()
    save(fig, tmp_path)


def test_component_maps_keep_land_nan(climate):
    fig = ResultPlotter(climate).components(n=2, nan_color="0.5")
    land = np.isnan(climate.V.isel(component=0).values)
    assert land.any() and not land.all()
    for i, ax in enumerate(map_panels(fig)):
        arr = ax.collections[0].get_array()
        plotted = np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan).reshape(land.shape)
        np.testing.assert_array_equal(np.isnan(plotted), land)
        np.testing.assert_allclose(plotted[~land], climate.V.isel(component=i).values[~land])
        assert to_rgb(ax.get_facecolor()) == to_rgb("0.5")  # land shows as grey


def test_component_maps_default_n_wrap_and_limits(climate):
    fig = ResultPlotter(climate).components(col_wrap=2)
    panels = map_panels(fig)
    assert len(panels) == K  # all 4 (at most 6 by default)
    rows = {round(ax.get_position().y0, 3) for ax in panels}
    assert len(rows) == 2
    robust = panels[0].collections[0].norm.vmax
    plt.close("all")
    fig = ResultPlotter(climate).components(robust=False)
    full = map_panels(fig)[0].collections[0].norm.vmax
    assert full == pytest.approx(np.nanmax(np.abs(climate.V.values)))
    assert robust < full
    fig = ResultPlotter(climate).components(n=1, vmax=0.5)
    assert map_panels(fig)[0].collections[0].norm.vmin == -0.5


def test_component_lines(zonal, tmp_path):
    fig = ResultPlotter(zonal).components()
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    lines = labeled_lines(ax)
    assert len(lines) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        line.get_label() for line in lines
    ]
    assert all("%" in line.get_label() for line in lines)
    assert "latitude" in ax.get_xlabel()
    np.testing.assert_allclose(lines[1].get_ydata(), zonal.V.isel(component=1).values)
    np.testing.assert_array_equal(lines[0].get_xdata(), zonal.V.lat.values)
    save(fig, tmp_path)
    fig = ResultPlotter(zonal).components(n=2)
    assert len(labeled_lines(fig.axes[0])) == 2


def test_components_errors(climate):
    rng = np.random.default_rng(0)
    cube = xr.DataArray(rng.standard_normal((12, 3, 4, 2)), dims=("s", "x", "y", "z"))
    res = cube.svd(k=2, dim="s")
    with pytest.raises(ValueError, match="3 feature dimension.*[Ss]elect or reduce"):
        ResultPlotter(res).components()
    for bad in (0, K + 1, 1.5, True):
        with pytest.raises(ValueError, match="n must be an integer between 1 and 4"):
            ResultPlotter(climate).components(n=bad)


# ------------------------------------------------------------------ scores
def test_scores_by_population(genotype, gt, tmp_path):
    ax = ResultPlotter(genotype).scores(0, 1, hue="population")
    assert isinstance(ax, Axes)
    cols = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(cols) == 3
    assert sum(len(c.get_offsets()) for c in cols) == gt.sizes["samples"]
    colors = {to_rgb(c.get_facecolor()[0]) for c in cols}
    assert len(colors) == 3
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["POP0", "POP1", "POP2"]
    assert legend.get_title().get_text() == "population"
    # each population's points are the right samples
    pop1 = cols[1].get_offsets()
    mask = gt.population.values == "POP1"
    np.testing.assert_allclose(pop1[:, 0], genotype.U.isel(component=0).values[mask])
    np.testing.assert_allclose(pop1[:, 1], genotype.U.isel(component=1).values[mask])
    evr = genotype.explained_variance_ratio.values
    assert ax.get_xlabel().startswith("component 0 (")
    assert percent_in(ax.get_xlabel()) == pytest.approx(100 * evr[0], rel=5e-3)
    assert ax.get_ylabel().startswith("component 1 (") and "%" in ax.get_ylabel()
    # the legend sits outside the axes: it covers no point
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    save(fig, tmp_path)


def test_scores_numeric_and_time_hue(climate, sst, tmp_path):
    ax = ResultPlotter(climate).scores(1, 2, hue="month")
    (col,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(col.get_offsets()) == sst.sizes["time"]
    np.testing.assert_array_equal(col.get_array(), sst.month.values)
    assert len(ax.figure.axes) == 2  # a colorbar
    assert "month" in ax.figure.axes[1].get_ylabel()
    assert ax.get_xlabel().startswith("component 1 (")
    save(ax.figure, tmp_path)
    ax = ResultPlotter(climate).scores(hue="time")
    assert len(ax.figure.axes) == 2
    save(ax.figure, tmp_path, "time.png")


def test_scores_no_hue_and_forced_categories(climate, sst):
    ax = ResultPlotter(climate).scores()
    (col,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(col.get_offsets()) == sst.sizes["time"]
    assert ax.get_legend() is None
    ax = ResultPlotter(climate).scores(hue="month", categorical=True)
    assert len(ax.get_legend().get_texts()) == 12


def test_scores_errors(genotype, climate):
    p = ResultPlotter(genotype)
    with pytest.raises(ValueError, match="hue='pop'.*population"):
        p.scores(hue="pop")
    with pytest.raises(ValueError, match="x must be a component"):
        p.scores(x=K)
    with pytest.raises(ValueError, match="y must be a component"):
        p.scores(y=1.0)
    rng = np.random.default_rng(0)
    da = xr.DataArray(rng.standard_normal((4, 5, 6)), dims=("a", "b", "f"))
    res = da.svd(k=2, dim=("a", "b"))
    with pytest.raises(ValueError, match="single sample dimension.*'a', 'b'"):
        ResultPlotter(res).scores()
    with pytest.raises(ValueError, match="hue"):
        ResultPlotter(climate).scores(hue="lat")  # a feature coordinate


# ------------------------------------------------------------- lazy inputs
def test_lazy_result_computes_once_per_plot(genotype, gt):
    lazy = xsvd.datasets.genotypes(1_000, 90, chunks=250).svd(
        k=K, dim="samples", center=True, compute=False
    )
    calls = []

    def counting(dsk, keys, **kwargs):
        calls.append(keys)
        return dask.get(dsk, keys, **kwargs)

    p = ResultPlotter(lazy)
    with dask.config.set(scheduler=counting):
        ax = p.scores(hue="population")
        assert len(calls) == 1
        p.scree()
        assert len(calls) == 2
    pts = np.concatenate([c.get_offsets() for c in ax.collections[:3]])
    order = np.argsort(gt.population.values, kind="stable")
    expected = genotype.U.isel(component=[0, 1]).values[order]
    np.testing.assert_allclose(np.abs(pts), np.abs(expected), rtol=1e-4, atol=1e-6)


def test_lazy_maps(sst):
    lazy = sst.chunk({"time": 20}).svd(k=3, dim="time", center=True, compute=False)
    fig = ResultPlotter(lazy).components(n=2)
    assert len(map_panels(fig)) == 2


# ------------------------------------------------------------ environment
def test_no_global_state_changed(climate, genotype):
    before = dict(matplotlib.rcParams)
    backend = matplotlib.get_backend()
    ResultPlotter(climate).scree()
    ResultPlotter(climate).components(n=2)
    ResultPlotter(genotype).scores(hue="population")
    assert dict(matplotlib.rcParams) == before
    assert matplotlib.get_backend() == backend


def test_missing_matplotlib_message(climate, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "xsvd\[plot\]"'):
        ResultPlotter(climate).scree()
    with pytest.raises(ImportError, match="Plotting needs matplotlib"):
        ResultPlotter(climate).components()
