"""Component maps: one panel per component, a shared colorbar, optional cartopy projections.

The drawing behind :meth:`ResultPlotter.components
<xsvd.plot.ResultPlotter.components>`: the patterns (or other maps per
component) are chosen and computed here, then drawn as maps for two feature
dimensions or as lines (:func:`xsvd.plot.lines.component_lines`) for one.
Cartopy is imported only when a projection or coastlines are asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from ..labeled import units as _units
from ..labeled.dims import latitude_rank
from ..labeled.layout import COMPONENT
from .common import (
    check_n,
    component_label,
    component_values,
    coord_label,
    is_int,
    materialize,
    name_of,
    pyplot,
    titled,
    weights_of,
)
from .lines import component_lines

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["components"]

_MISSING_CARTOPY = (
    "Map projections and coastlines need cartopy: pip install cartopy "
    "(or conda install -c conda-forge cartopy)"
)


def _cartopy_crs():
    """``cartopy.crs``, or an ImportError that says how to install it."""
    try:
        import cartopy.crs as ccrs
    except ImportError as err:
        raise ImportError(_MISSING_CARTOPY) from err
    return ccrs


# ------------------------------------------------------------ components
def components(
    res,
    n: int | None,
    *,
    unweighted: bool,
    values: xr.DataArray | None,
    projection: Any,
    coastlines: bool,
    col_wrap: int | None,
    cmap: Any,
    robust: bool,
    nan_color: Any,
    kwargs: dict,
) -> Figure:
    """Draw :meth:`ResultPlotter.components <xsvd.plot.ResultPlotter.components>` of ``res``."""
    if values is not None:
        if unweighted:
            raise ValueError(
                "values= plots the given maps instead of V; unweighted=True (V / weights) "
                "does not apply to them. Divide them yourself, or leave out one option."
            )
        data = _check_values(values)
        label = coord_label(data)
        title = name_of(data) or "Maps per component"
    else:
        data = res.V
        label = "pattern (V / weights)" if unweighted else "pattern (V)"
        title = titled("Leading components", res) + (" (V / weights)" if unweighted else "")
    feature_dims = [d for d in data.dims if d != COMPONENT]
    single = [d for d in feature_dims if data.sizes[d] == 1]  # one level: not drawn
    single = single if len(single) < len(feature_dims) else []
    feature_dims = [d for d in feature_dims if d not in single]
    if len(feature_dims) not in (1, 2):
        what = "values" if values is not None else "V"
        shown = ", ".join(map(repr, feature_dims)) or "none"
        raise ValueError(
            f"components() draws lines for one feature dimension and maps for two, "
            f"but {what} has {len(feature_dims)} feature dimension(s): {shown}. Select or "
            f"reduce the features first (e.g. decompose da.isel({feature_dims[0]}=0) or "
            f"da.mean({feature_dims[0]!r}) instead), or plot res.V yourself."
            if feature_dims
            else f"components() needs {what} to have at least one feature dimension; it has none."
        )
    n = check_n(n, data.sizes[COMPONENT])
    data = data.isel({COMPONENT: slice(0, n)})
    if unweighted:
        weights = weights_of(res)
        if weights is not None:
            data = data / weights.where(weights != 0)
    data = data.isel({d: 0 for d in single})
    data, evr = materialize(data, res.explained_variance_ratio)
    data = data.rename(None)
    ratios = dict(zip(component_values(evr), evr.values, strict=True))
    titles = [component_label(c, ratios.get(c)) for c in component_values(data)]
    if len(feature_dims) == 2:
        return _maps(
            data,
            titles,
            dict(label=label, title=title),
            dict(projection=projection, coastlines=coastlines),
            col_wrap,
            cmap,
            robust,
            nan_color,
            kwargs,
        )
    if projection is not None or coastlines:
        raise ValueError(
            "projection= and coastlines= draw maps, for two feature dimensions; these "
            f"patterns have one, {feature_dims[0]!r}, and are drawn as lines."
        )
    return component_lines(data, feature_dims[0], titles, label, title, kwargs)


def _check_values(values) -> xr.DataArray:
    """``values=`` of ``components()``: a DataArray over ``component`` (pint units off)."""
    if not isinstance(values, xr.DataArray):
        raise TypeError(
            "values must be an xarray.DataArray of maps with a 'component' dimension, e.g. "
            f"xr.corr(da, res.U, dim='time'); got {type(values).__name__}."
        )
    if COMPONENT not in values.dims:
        raise ValueError(
            f"values must have the dimension {COMPONENT!r} (one map per component) and the "
            f"feature dimensions, e.g. xr.corr(da, res.U, dim='time'); its dimensions are "
            f"{list(values.dims)}."
        )
    return _units.dequantify(values).transpose(COMPONENT, ...)


# ------------------------------------------------------------ color limits
def _finite(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return a[np.isfinite(a)]


def _color_limits(values: np.ndarray, robust: bool) -> tuple[float, float, bool]:
    """Default (vmin, vmax, two_signed): symmetric around 0 when the values take both signs."""
    a = _finite(values)
    if a.size == 0:
        return -1.0, 1.0, True
    magnitude = np.abs(a)
    lim = float(np.percentile(magnitude, 98.0) if robust else magnitude.max())
    if not lim > 0:
        lim = float(magnitude.max()) or 1.0
    if a.min() >= 0 and a.max() > 0:
        return 0.0, lim, False
    if a.max() <= 0 and a.min() < 0:
        return -lim, 0.0, False
    return -lim, lim, True


# -------------------------------------------------------------------- maps
def _maps(V, titles, text, geo, col_wrap, cmap, robust, nan_color, kwargs):
    pyplot()
    kwargs = dict(kwargs)
    n = V.sizes[COMPONENT]
    fdims = [d for d in V.dims if d != COMPONENT]
    subplot_kws = dict(kwargs.pop("subplot_kws", None) or {})
    projection = geo["projection"]
    if projection is not None or geo["coastlines"]:
        ccrs = _cartopy_crs()
        if projection is None:
            projection = subplot_kws.get("projection") or ccrs.PlateCarree()
        subplot_kws["projection"] = projection
    projection = subplot_kws.get("projection")
    geographic = projection is not None and _is_cartopy_crs(projection)
    if geographic:
        kwargs.setdefault("transform", _cartopy_crs().PlateCarree())
    if subplot_kws:
        kwargs["subplot_kws"] = subplot_kws
    lonlat = None if geographic else _lon_lat_dims(V, fdims)
    if lonlat is not None and "x" not in kwargs and "y" not in kwargs:
        kwargs["x"], kwargs["y"] = lonlat  # longitude across, latitude up
    xdim, ydim = kwargs.get("x", fdims[1]), kwargs.get("y", fdims[0])
    if {xdim, ydim} != set(fdims):
        xdim, ydim = fdims[1], fdims[0]
    geo_aspect = None
    if lonlat is not None and (xdim, ydim) == lonlat:
        geo_aspect = _geographic_aspect(V[ydim].values)

    vmin, vmax = kwargs.pop("vmin", None), kwargs.pop("vmax", None)
    if vmin is None and vmax is None:
        vmin, vmax, two_signed = _color_limits(V.values, robust)
    else:
        vmin = -abs(vmax) if vmin is None else vmin
        vmax = abs(vmin) if vmax is None else vmax
        two_signed = vmin < 0 < vmax
    kwargs["vmin"], kwargs["vmax"] = vmin, vmax
    if cmap is None:
        cmap = "RdBu_r" if two_signed else "viridis"

    if col_wrap is None:  # one row up to 3 maps, then about square (2 x 2 for 4, 3 x 2 for 6)
        col_wrap = n if n <= 3 else int(np.ceil(np.sqrt(n)))
    if not is_int(col_wrap) or col_wrap < 1:
        raise ValueError(f"col_wrap must be a positive integer (maps per row), got {col_wrap!r}.")
    ncol = min(n, col_wrap)
    nrow = -(-n // ncol)
    if "figsize" not in kwargs:
        size = kwargs.pop("size", 2.3)
        aspect = kwargs.pop(
            "aspect",
            _panel_aspect(V, (ydim, xdim), projection if geographic else None, geo_aspect),
        )
        kwargs["figsize"] = (ncol * size * aspect, nrow * size)
    add_colorbar = kwargs.pop("add_colorbar", True)
    cbar_kwargs = {"label": text["label"], **(kwargs.pop("cbar_kwargs", None) or {})}
    fg = V.plot(
        col=COMPONENT,
        col_wrap=col_wrap if n > col_wrap else None,
        cmap=cmap,
        add_colorbar=False,
        **kwargs,
    )
    fig = fg.fig
    panels = []
    for ax, names, title in zip(
        fg.axs.flat, fg.name_dicts.flat, titles + [None] * (fg.axs.size - n), strict=True
    ):
        if names is None:
            fig.delaxes(ax)  # an empty slot of the last row
            continue
        panels.append(ax)
        if geo_aspect is not None:
            ax.set_aspect(geo_aspect, adjustable="box")  # a degree north as long as one east
        ax.set_title(title, fontsize="medium")
        if nan_color is not None:
            ax.set_facecolor(nan_color)
        if geo["coastlines"]:
            ax.coastlines(linewidth=0.6, color="0.15")
    _label_bottom_panels(fg, fdims)
    right = 1.2 if add_colorbar else 0.0
    _add_margins(fig, top=0.4, right=right)
    if add_colorbar:
        _colorbar_right(fig, panels, V.values, cbar_kwargs)
    fig.suptitle(text["title"], y=1.0 - 0.08 / fig.get_figheight(), va="top")
    return fig


def _is_cartopy_crs(projection) -> bool:
    try:
        import cartopy.crs as ccrs
    except ImportError:
        return False
    return isinstance(projection, ccrs.CRS)


def _label_bottom_panels(fg, fdims) -> None:
    """Tick labels and x label on panels with no panel below (above removed slots)."""
    axs, names = fg.axs, fg.name_dicts
    nrow, ncol = axs.shape
    if nrow < 2:
        return
    xlabel = axs[-1, 0].get_xlabel()  # the first column's bottom slot is always a panel
    for j in range(ncol):
        if names[-1, j] is None and names[-2, j] is not None:
            ax = axs[-2, j]
            ax.xaxis.set_tick_params(which="both", labelbottom=True)
            ax.set_xlabel(xlabel)


def _add_margins(fig, *, top: float, right: float) -> None:
    """Grow the figure by empty space (inches) at the top and right, axes unchanged."""
    w, h = fig.get_size_inches()
    sx, sy = w / (w + right), h / (h + top)
    fig.set_size_inches(w + right, h + top)
    for ax in fig.axes:
        x0, y0, aw, ah = ax.get_position().bounds
        ax.set_position([x0 * sx, y0 * sy, aw * sx, ah * sy])


def _colorbar_right(fig, panels, values, cbar_kwargs) -> None:
    """One colorbar in the right margin, as tall as the panels."""
    mappable = panels[0].collections[-1]
    for ax in panels:
        ax.apply_aspect()  # fixed-aspect (map) axes shrink into their box
    boxes = [ax.get_position() for ax in panels]
    x1 = max(b.x1 for b in boxes)
    y0, y1 = min(b.y0 for b in boxes), max(b.y1 for b in boxes)
    w = fig.get_figwidth()
    cax = fig.add_axes([x1 + 0.2 / w, y0, 0.16 / w, y1 - y0])
    for key in ("fraction", "pad", "shrink", "aspect", "anchor", "panchor", "location"):
        cbar_kwargs.pop(key, None)
    if "extend" not in cbar_kwargs:
        finite = _finite(values)
        norm = mappable.norm
        low = finite.size and norm.vmin is not None and finite.min() < norm.vmin
        high = finite.size and norm.vmax is not None and finite.max() > norm.vmax
        cbar_kwargs["extend"] = {
            (True, True): "both",
            (True, False): "min",
            (False, True): "max",
        }.get((bool(low), bool(high)), "neither")
    fig.colorbar(mappable, cax=cax, **cbar_kwargs)


# ------------------------------------------------------------ panel aspect
def _panel_aspect(V, fdims, projection=None, geo_aspect=None) -> float:
    """Width over height of one map: from a global map projection's extent, else the coords.

    ``fdims`` are ``(y, x)``; ``geo_aspect``, where the map is drawn with a
    fixed aspect (longitude and latitude), the height of one y unit over one
    x unit.
    """
    if projection is not None and _spans_globe(V, fdims):
        (x0, x1), (y0, y1) = projection.x_limits, projection.y_limits
        aspect = (x1 - x0) / (y1 - y0) if y1 > y0 else 2.0
    else:
        ydim, xdim = fdims
        spans = []
        for d in (xdim, ydim):
            c = V[d].values if d in V.coords else None
            if c is not None and c.dtype.kind in "iuf" and c.size > 1:
                step = abs(float(c[-1] - c[0])) / (c.size - 1)
                spans.append(abs(float(c[-1] - c[0])) + step)
            else:
                spans.append(float(V.sizes[d]))
        aspect = spans[0] / spans[1] if spans[1] > 0 else 1.0
        if geo_aspect is not None:
            # a fixed-aspect map is about 0.6 of the panel's height (title and tick
            # labels take the rest), and the tick labels take a width of their own
            return float(np.clip(0.62 * aspect / geo_aspect + 0.3, 0.6, 2.5))
    aspect = float(np.clip(aspect, 0.6, 2.5))
    if projection is not None:
        # a map keeps its aspect, in a box less tall than the panel (the title above it)
        return aspect * 0.82
    return aspect * 1.1  # room for the tick labels


def _spans_globe(V, fdims) -> bool:
    """Whether the last feature coordinate (the longitude of a map) covers 300 degrees or more."""
    c = V[fdims[-1]].values if fdims[-1] in V.coords else None
    if c is None or c.dtype.kind not in "iuf" or c.size < 2:
        return False
    return float(np.nanmax(c) - np.nanmin(c)) >= 300.0


# ------------------------------------------------------ longitude, latitude
#: Names of longitude coordinates (lower case), beside CF's standard_name and units.
_LONGITUDE_NAMES = ("lon", "longitude", "lons", "nav_lon", "xlong")
_LONGITUDE_UNITS = ("degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese")


def _is_longitude(coord: xr.DataArray) -> bool:
    units = str(coord.attrs.get("units", "")).strip().lower()
    if coord.attrs.get("standard_name") == "longitude" or units in _LONGITUDE_UNITS:
        return True
    return str(coord.name).lower() in _LONGITUDE_NAMES


def _lon_lat_dims(V, fdims) -> tuple | None:
    """``(lon_dim, lat_dim)`` when the two map dims are longitude and latitude (1-D numeric
    coordinates, by CF's standard_name or units, or by name), else None."""
    found = {}
    for d in fdims:
        c = V[d] if d in V.coords else None
        if c is None or c.ndim != 1 or c.dtype.kind not in "iuf":
            return None
        if latitude_rank(c) and np.nanmax(np.abs(c.values)) <= 90.0:
            found.setdefault("lat", d)
        elif _is_longitude(c):
            found.setdefault("lon", d)
    if set(found) != {"lat", "lon"}:
        return None
    return found["lon"], found["lat"]


def _geographic_aspect(lat: np.ndarray) -> float:
    """``1 / cos(middle latitude)``: the height of a degree of latitude over one of longitude,
    as drawn (1 for a map centered on the equator, so a global map is 2:1)."""
    lat = np.asarray(lat, dtype=float)
    middle = 0.5 * (np.nanmin(lat) + np.nanmax(lat))
    return float(1.0 / np.cos(np.deg2rad(min(abs(middle), 60.0))))
