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
        and ax.get_title().startswith("EOF ")
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
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4"]
    # one label per bar; the cumulative line starts on the first bar: its label is inside
    labels = [t for t in ax.texts if t.get_text()]
    assert len(labels) == K
    first = next(t for t in labels if t.get_text() == f"{heights[0]:#.3g}".rstrip("."))
    ax.figure.canvas.draw()
    top = ax.transData.transform((0, heights[0]))[1]
    assert first.get_window_extent().y1 < top
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
        assert title.startswith(f"EOF {i + 1} (") and "%" in title
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
    full = panels[0].collections[0].norm.vmax  # by default: nothing clipped
    assert full == pytest.approx(np.nanmax(np.abs(climate.V.values)))
    plt.close("all")
    fig = ResultPlotter(climate).components(robust=True)
    robust = map_panels(fig)[0].collections[0].norm.vmax
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


@pytest.fixture(scope="module")
def weighted(sst):
    """Area weights with a zero row (the northernmost latitude), as a user may give."""
    w = xsvd.coslat_weights(sst)
    w[-1] = 0.0
    return w, sst.svd(k=K, dim="time", center=True, weights=w)


def panel_values(ax, shape):
    arr = ax.collections[0].get_array()
    return np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan).reshape(shape)


def test_component_maps_unweighted(weighted, sst, tmp_path):
    w, res = weighted
    fig = ResultPlotter(res).components(n=2, unweighted=True)
    panels = map_panels(fig)
    assert len(panels) == 2
    shape = (sst.sizes["lat"], sst.sizes["lon"])
    for i, ax in enumerate(panels):
        plotted = panel_values(ax, shape)
        want = (res.V.isel(component=i) / w).values
        want[-1, :] = np.nan  # weight 0: NaN, not inf
        np.testing.assert_allclose(plotted, want, equal_nan=True)
        # V / w is V with the weights divided out: not the weighted V
        assert np.nanmax(np.abs(plotted - res.V.isel(component=i).values)) > 1e-3
        assert not np.isinf(plotted).any()
    assert "V / weights" in fig.get_suptitle()
    assert any(ax.get_ylabel() == "pattern (V / weights)" for ax in fig.axes)
    save(fig, tmp_path)


def test_plots_read_only_the_public_interface(weighted, sst):
    """A stand-in with only the documented attributes plots exactly like the result."""
    from types import SimpleNamespace

    _, res = weighted
    public = SimpleNamespace(
        U=res.U,
        S=res.S,
        V=res.V,
        explained_variance_ratio=res.explained_variance_ratio,
        weights=res.weights,
        layout=SimpleNamespace(name=res.layout.name),
    )
    shape = (sst.sizes["lat"], sst.sizes["lon"])
    got, want = (ResultPlotter(r).components(n=2, unweighted=True) for r in (public, res))
    assert got.get_suptitle() == want.get_suptitle() == "Leading components of sst (V / weights)"
    for a, b in zip(map_panels(got), map_panels(want), strict=True):
        assert a.get_title() == b.get_title()
        np.testing.assert_array_equal(panel_values(a, shape), panel_values(b, shape))
    got, want = (ResultPlotter(r).timeseries(n=2, scaling="singular") for r in (public, res))
    for a, b in zip(got.axes, want.axes, strict=True):
        np.testing.assert_array_equal(a.get_lines()[0].get_ydata(), b.get_lines()[0].get_ydata())
    assert ResultPlotter(public).scree().get_title() == "Explained variance of sst"
    ax = ResultPlotter(public).scores(1, 2, hue="month")
    assert ax.get_xlabel() == ResultPlotter(res).scores(1, 2).get_xlabel()


def test_unweighted_of_an_unweighted_result_is_v(climate, sst):
    fig = ResultPlotter(climate).components(n=1, unweighted=True)
    (ax,) = map_panels(fig)
    plotted = panel_values(ax, (sst.sizes["lat"], sst.sizes["lon"]))
    np.testing.assert_allclose(plotted, climate.V.isel(component=0).values, equal_nan=True)


def test_component_maps_of_given_values(weighted, sst, tmp_path):
    _, res = weighted
    corr = xr.corr(sst - sst.mean("time"), res.U, dim="time").transpose("lat", "lon", ...)
    corr.name = "corr"
    corr.attrs = {"long_name": "correlation with the PC", "units": "1"}
    fig = res.plot.components(values=corr, n=3)
    panels = map_panels(fig)
    assert len(panels) == 3
    evr = res.explained_variance_ratio.values
    shape = (sst.sizes["lat"], sst.sizes["lon"])
    for i, ax in enumerate(panels):
        np.testing.assert_allclose(
            panel_values(ax, shape), corr.isel(component=i).values, equal_nan=True
        )
        assert percent_in(ax.get_title()) == pytest.approx(100 * evr[i], rel=5e-3)
    assert fig.get_suptitle() == "correlation with the PC"
    cbar = [ax for ax in fig.axes if ax not in panels]
    assert [ax.get_ylabel() for ax in cbar] == ["correlation with the PC"]  # units "1" left out
    mesh = panels[0].collections[0]
    assert mesh.norm.vmin == -mesh.norm.vmax and mesh.cmap.name == "RdBu_r"
    save(fig, tmp_path)
    # one-signed values: a sequential colormap from 0; units in the label
    r2 = (corr**2).rename("r2")
    r2.attrs = {"units": "percent"}
    fig = res.plot.components(values=r2)
    panels = map_panels(fig)
    assert len(panels) == K
    mesh = panels[0].collections[0]
    assert mesh.norm.vmin == 0 and mesh.cmap.name == "viridis"
    assert any(ax.get_ylabel() == "r2 [percent]" for ax in fig.axes)
    # components the result does not have get a title without a percentage
    more = xr.concat([corr, corr.isel(component=[0]).assign_coords(component=[9])], "component")
    titles = [ax.get_title() for ax in map_panels(res.plot.components(values=more, n=5))]
    assert titles[-1] == "EOF 9" and titles[0].startswith("EOF 1 (") and "%" in titles[0]


def test_component_values_errors(climate, sst):
    p = ResultPlotter(climate)
    with pytest.raises(ValueError, match="dimension 'component'.*xr.corr"):
        p.components(values=sst.isel(time=0))
    with pytest.raises(TypeError, match="xarray.DataArray"):
        p.components(values=climate.V.values)
    with pytest.raises(ValueError, match="unweighted=True"):
        p.components(values=climate.V, unweighted=True)
    with pytest.raises(ValueError, match="n must be an integer between 1 and 2"):
        p.components(values=climate.V.isel(component=[0, 1]), n=3)


@pytest.mark.parametrize(
    "n, shape", [(1, (1, 1)), (3, (1, 3)), (4, (2, 2)), (5, (2, 3)), (6, (2, 3))]
)
def test_map_grid_has_no_empty_panels(climate, sst, n, shape):
    res = sst.svd(k=6, dim="time", center=True) if n > K else climate
    fig = ResultPlotter(res).components(n=n)
    panels = map_panels(fig)
    assert len(panels) == n
    # every axes of the figure shows data: the panels and the one colorbar
    assert len(fig.axes) == n + 1
    for ax in fig.axes:
        assert ax.get_visible()
        assert any(isinstance(c, QuadMesh) for c in ax.collections) or ax.images
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels})
    cols = sorted({round(ax.get_position().x0, 3) for ax in panels})
    assert (len(rows), len(cols)) == shape
    # a panel with no panel below it shows its longitudes
    lowest = {}
    for ax in panels:
        x = round(ax.get_position().x0, 3)
        if x not in lowest or ax.get_position().y0 < lowest[x].get_position().y0:
            lowest[x] = ax
    for ax in lowest.values():
        assert "longitude" in ax.get_xlabel()
        assert any(t.get_visible() and t.get_text() for t in ax.get_xticklabels())


def drawn_ratio(ax) -> float:
    """Width over height of the axes as drawn (after its fixed aspect, if any)."""
    ax.apply_aspect()
    box = ax.get_position()
    w, h = ax.figure.get_size_inches()
    return box.width * w / (box.height * h)


def test_lon_lat_maps_have_geographic_aspect(tmp_path):
    """A global 2-degree map is drawn 2:1 (it was about 2.9:1), longitude across."""
    field = xsvd.datasets.climate_field(24, 90, 180)  # 2-degree global grid
    res = field.transpose("time", "lon", "lat").svd(k=2, dim="time", center=True)
    fig = res.plot.components()
    for ax in map_panels(fig):
        assert drawn_ratio(ax) == pytest.approx(2.0, rel=0.02)
        assert ax.get_aspect() == pytest.approx(1.0)
        assert "longitude" in ax.get_xlabel() or not ax.get_xlabel()
        assert ax.get_xlim() == pytest.approx((0.0, 360.0))
    save(fig, tmp_path)
    # a band of mid latitudes: a degree of latitude 1 / cos(45) as tall as one of longitude
    band = field.sel(lat=slice(21, 69)).svd(k=1, dim="time", center=True)
    (ax,) = map_panels(band.plot.components())
    assert ax.get_aspect() == pytest.approx(1 / np.cos(np.deg2rad(45.0)))
    assert drawn_ratio(ax) == pytest.approx(360 / (50 * np.sqrt(2)), rel=0.02)
    # other dimensions keep the free aspect of xarray's plots
    plain = field.rename(lat="y", lon="x")
    plain = plain.assign_coords(y=plain.y.values, x=plain.x.values)  # no CF attributes
    plain = plain.svd(k=1, dim="time", center=True)
    (ax,) = map_panels(plain.plot.components())
    assert ax.get_aspect() == "auto"


def test_default_color_limits_keep_the_maximum():
    """robust=True clipped the strongest cells (the El Nino tongue); the default does not."""
    field = xsvd.datasets.climate_field(40, 18, 36)
    peak = xr.zeros_like(field.isel(time=0, drop=True))
    peak.loc[{"lat": field.lat[9], "lon": field.lon[24]}] = 1.0  # one strong cell
    t = np.sin(np.arange(40) / 3.0)
    spiked = field + 50.0 * xr.DataArray(t, dims="time") * peak
    res = spiked.svd(k=2, dim="time", center=True)
    fig = res.plot.components()
    vmax = np.nanmax(np.abs(res.V.values))
    for ax in map_panels(fig):
        norm = ax.collections[0].norm
        assert norm.vmax >= vmax * (1 - 1e-12) and norm.vmin <= -vmax * (1 - 1e-12)
    cbar = [ax for ax in fig.axes if ax not in map_panels(fig)][0]
    assert cbar.get_ylabel() == "pattern (V)"
    clipped = res.plot.components(robust=True)
    assert map_panels(clipped)[0].collections[0].norm.vmax < 0.5 * vmax


def test_projection_without_cartopy_says_what_to_install(climate, monkeypatch):
    monkeypatch.setitem(sys.modules, "cartopy", None)
    monkeypatch.setitem(sys.modules, "cartopy.crs", None)
    with pytest.raises(ImportError, match="pip install cartopy"):
        ResultPlotter(climate).components(n=2, projection=object())
    with pytest.raises(ImportError, match="pip install cartopy"):
        ResultPlotter(climate).components(n=2, coastlines=True)


def test_projection_and_coastlines_with_cartopy(weighted):
    ccrs = pytest.importorskip("cartopy.crs", reason="needs cartopy: pip install cartopy")
    from cartopy.mpl.feature_artist import FeatureArtist
    from cartopy.mpl.geoaxes import GeoAxes

    _, res = weighted
    proj = ccrs.Robinson(central_longitude=180)
    fig = res.plot.components(n=4, unweighted=True, projection=proj, coastlines=True)
    panels = map_panels(fig)
    assert len(panels) == 4 and len(fig.axes) == 5
    for ax in panels:
        assert isinstance(ax, GeoAxes) and ax.projection == proj
        mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
        # the data are longitude/latitude, moved onto the projection
        lonlat = np.array([[200.0, 30.0]])
        projected = proj.transform_point(200.0, 30.0, ccrs.PlateCarree())
        np.testing.assert_allclose(
            mesh.get_transform().transform(lonlat), ax.transData.transform([projected])
        )
        assert any(isinstance(a, FeatureArtist) for a in ax.artists + ax.collections)
    # coastlines alone: PlateCarree; subplot_kws pass through
    fig = res.plot.components(n=1, subplot_kws={"projection": ccrs.PlateCarree()})
    (ax,) = map_panels(fig)
    assert isinstance(ax, GeoAxes)


def test_projection_is_for_maps(zonal):
    with pytest.raises(ValueError, match="projection= and coastlines= draw maps"):
        ResultPlotter(zonal).components(coastlines=True)


# -------------------------------------------------------------- timeseries
def test_timeseries_panels(weighted, sst, tmp_path):
    _, res = weighted
    fig = ResultPlotter(res).timeseries()
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3
    evr = res.explained_variance_ratio.values
    n = res.U.sizes["time"]
    for i, ax in enumerate(fig.axes):
        (line,) = labeled_lines(ax)
        y = line.get_ydata()  # standardized by default: unit variance, not unit norm
        np.testing.assert_allclose(y, res.U.isel(component=i).values * np.sqrt(n - 1))
        assert np.std(y, ddof=1) == pytest.approx(1.0, rel=1e-10)
        np.testing.assert_array_equal(line.get_xdata(), sst.time.values)
        title = ax.get_title(loc="left")
        assert title.startswith(f"PC {i + 1} (")
        assert percent_in(title) == pytest.approx(100 * evr[i], rel=5e-3)
    assert fig.axes[-1].get_xlabel() == "time"
    assert fig.get_suptitle() == "Principal components of sst"
    assert fig.get_supylabel() == "PC (standardized)"
    fig = ResultPlotter(res).timeseries(n=1, scaling="U")  # unit-norm U, on request
    y = labeled_lines(fig.axes[0])[0].get_ydata()
    np.testing.assert_allclose(y, res.U.isel(component=0).values)
    assert np.sum(y**2) == pytest.approx(1.0) and "unit norm" in fig.axes[0].get_ylabel()
    save(fig, tmp_path)


def test_timeseries_scaling(weighted):
    _, res = weighted
    n = res.U.sizes["time"]
    fig = ResultPlotter(res).timeseries(n=2, scaling="unit")
    for i, ax in enumerate(fig.axes):
        y = labeled_lines(ax)[0].get_ydata()
        np.testing.assert_allclose(y, res.U.isel(component=i).values * np.sqrt(n - 1))
        assert np.std(y, ddof=1) == pytest.approx(1.0, rel=1e-10)  # centered data
    assert "standardized" in fig.get_supylabel()
    fig = ResultPlotter(res).timeseries(n=2, scaling="singular")
    for i, ax in enumerate(fig.axes):
        y = labeled_lines(ax)[0].get_ydata()
        want = res.U.isel(component=i).values * float(res.S[i])
        np.testing.assert_allclose(y, want)
    assert fig.get_supylabel() == "PC (U × S) [degC]"
    with pytest.raises(ValueError, match="scaling must be one of.*'unit'"):
        ResultPlotter(res).timeseries(scaling="std")


def test_timeseries_overlay_and_given_axes(climate, genotype, gt, tmp_path):
    fig = ResultPlotter(climate).timeseries(n=K, overlay=True)
    (ax,) = fig.axes
    lines = labeled_lines(ax)
    assert len(lines) == K
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [line.get_label() for line in lines] and all("%" in t for t in texts)
    assert ax.get_ylabel() == "PC (standardized)" and ax.get_xlabel() == "time"
    assert texts[0].startswith("PC 1 (")
    fig.canvas.draw()  # the legend is outside the axes: it covers no line
    r = fig.canvas.get_renderer()
    assert ax.get_legend().get_window_extent(r).x0 >= ax.get_window_extent(r).x1
    save(fig, tmp_path)
    _, given = plt.subplots()
    assert ResultPlotter(climate).timeseries(n=1, ax=given) is given.figure
    # string sample labels: drawn against the sample positions
    fig = ResultPlotter(genotype).timeseries(n=2)
    np.testing.assert_array_equal(
        labeled_lines(fig.axes[0])[0].get_xdata(), np.arange(gt.sizes["samples"])
    )
    assert fig.axes[-1].get_xlabel() == "samples (position)"


def test_timeseries_errors(climate):
    p = ResultPlotter(climate)
    with pytest.raises(ValueError, match="n must be an integer between 1 and 4"):
        p.timeseries(n=5)
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="ax= takes one axes.*overlay=True"):
        p.timeseries(n=2, ax=ax)
    rng = np.random.default_rng(0)
    res = xr.DataArray(rng.standard_normal((4, 5, 6)), dims=("a", "b", "f")).svd(
        k=2, dim=("a", "b")
    )
    with pytest.raises(ValueError, match="single sample dimension.*'a', 'b'"):
        ResultPlotter(res).timeseries()


@pytest.fixture(params=["noleap", "360_day", "standard"])
def cftime_result(request, sst):
    pytest.importorskip("cftime", reason="cftime dates need cftime: pip install cftime")
    time = xr.date_range(
        "2000-01-01", periods=sst.sizes["time"], freq="MS", calendar=request.param, use_cftime=True
    )
    return request.param, sst.assign_coords(time=time).svd(k=2, dim="time", center=True)


def date_tick_labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


#: A tick label of a date axis: "2001", "Apr", "2001-04", "2001-04-01", a day "25", a time
#: "06:00" (never "2001.5").
DATE_TICK = re.compile(r"^(\d{4}(-\d{2}){0,2}|[A-Z][a-z]{2}|\d{2}|\d{2}:\d{2})$")


def test_timeseries_cftime_without_nc_time_axis(cftime_result, monkeypatch, tmp_path):
    calendar, res = cftime_result
    monkeypatch.setitem(sys.modules, "nc_time_axis", None)
    fig = ResultPlotter(res).timeseries(n=2)
    x = labeled_lines(fig.axes[0])[0].get_xdata()
    # dates with the same year, month and day, whatever the calendar
    np.testing.assert_array_equal(
        x[:2].astype("M8[D]"), np.array(["2000-01-01", "2000-02-01"], "M8[D]")
    )
    note = "" if calendar == "standard" else f" ({calendar} calendar)"
    assert fig.axes[-1].get_xlabel() == f"time{note}"
    labels = date_tick_labels(fig.axes[-1])  # dates, not decimal years ("2002.5")
    assert labels and all(DATE_TICK.match(t) for t in labels), labels
    fig.axes[-1].set_xlim(x[0], x[11])  # one year: months between the years
    labels = date_tick_labels(fig.axes[-1])
    assert all(DATE_TICK.match(t) for t in labels) and "Apr" in labels, labels
    save(fig, tmp_path)


def test_timeseries_cftime_days_a_standard_year_lacks(sst, monkeypatch):
    """360_day has February 30th: the dates keep their share of the year, in order."""
    pytest.importorskip("cftime", reason="cftime dates need cftime: pip install cftime")
    from xsvd.plot.lines import cftime_positions

    monkeypatch.setitem(sys.modules, "nc_time_axis", None)
    days = xr.date_range("2001-02-25", periods=10, freq="D", calendar="360_day", use_cftime=True)
    x, note, dates = cftime_positions(np.asarray(days))
    assert dates and note == "360_day calendar"
    assert (np.diff(x) > np.timedelta64(0)).all()  # Feb 29, Feb 30, Mar 1 in order
    # 54 days into the year of 360: 54.75 days into the year of 365, Feb 24 18:00
    assert abs(x[0] - np.datetime64("2001-02-25")) < np.timedelta64(1, "D")
    assert x[-1].astype("M8[M]") == np.datetime64("2001-03")
    field = sst.isel(time=slice(0, 10)).assign_coords(time=days)
    fig = ResultPlotter(field.svd(k=1, dim="time", center=True)).timeseries(n=1)
    labels = date_tick_labels(fig.axes[0])
    assert labels and all(DATE_TICK.match(t) for t in labels), labels


def test_timeseries_cftime_with_nc_time_axis(cftime_result, tmp_path):
    pytest.importorskip("nc_time_axis", reason="needs nc-time-axis: pip install nc-time-axis")
    _, res = cftime_result
    fig = ResultPlotter(res).timeseries(n=2, overlay=True)
    x = labeled_lines(fig.axes[0])[0].get_xdata()
    assert list(x) == list(res.U.time.values)
    labels = date_tick_labels(fig.axes[0])
    assert labels and all(DATE_TICK.match(t) for t in labels), labels
    save(fig, tmp_path)


# ------------------------------------------------------------------ scores
def test_scores_by_population(genotype, gt, tmp_path):
    ax = ResultPlotter(genotype).scores(1, 2, hue="population")
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
    assert ax.get_xlabel().startswith("PC1 (")  # as PLINK and papers name them
    assert percent_in(ax.get_xlabel()) == pytest.approx(100 * evr[0], rel=5e-3)
    assert ax.get_ylabel().startswith("PC2 (") and "%" in ax.get_ylabel()
    # the legend sits outside the axes: it covers no point
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    save(fig, tmp_path)


def test_scores_numeric_and_time_hue(climate, sst, tmp_path):
    ax = ResultPlotter(climate).scores(2, 3, hue="month")
    (col,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(col.get_offsets()) == sst.sizes["time"]
    np.testing.assert_array_equal(col.get_array(), sst.month.values)
    assert len(ax.figure.axes) == 2  # a colorbar
    assert "month" in ax.figure.axes[1].get_ylabel()
    assert ax.get_xlabel().startswith("PC2 (")
    np.testing.assert_allclose(col.get_offsets()[:, 1], climate.U.isel(component=2).values)
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
    with pytest.raises(ValueError, match="x must be a component label between 1 and 4"):
        p.scores(x=K + 1)
    with pytest.raises(ValueError, match="y must be a component.*got 1.0"):
        p.scores(y=1.0)
    with pytest.raises(ValueError, match="components count from 1"):
        p.scores(0, 1)
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


def test_lazy_maps_and_timeseries(sst):
    lazy = sst.chunk({"time": 20}).svd(k=3, dim="time", center=True, compute=False)
    fig = ResultPlotter(lazy).components(n=2)
    assert len(map_panels(fig)) == 2
    calls = []

    def counting(dsk, keys, **kwargs):
        calls.append(keys)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=counting):
        fig = ResultPlotter(lazy).timeseries(n=2, scaling="singular")
    assert len(calls) == 1 and len(fig.axes) == 2


# ------------------------------------------------------------ environment
def test_no_global_state_changed(climate, genotype):
    before = dict(matplotlib.rcParams)
    backend = matplotlib.get_backend()
    ResultPlotter(climate).scree()
    ResultPlotter(climate).components(n=2)
    ResultPlotter(genotype).scores(hue="population")
    ResultPlotter(climate).timeseries(n=2)
    assert dict(matplotlib.rcParams) == before
    assert matplotlib.get_backend() == backend


def test_missing_matplotlib_message(climate, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "xsvd\[plot\]"'):
        ResultPlotter(climate).scree()
    with pytest.raises(ImportError, match="Plotting needs matplotlib"):
        ResultPlotter(climate).components()
    with pytest.raises(ImportError, match="Plotting needs matplotlib"):
        ResultPlotter(climate).timeseries()
