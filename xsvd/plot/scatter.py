"""The scatter of the samples' scores, colored by a coordinate: categories or a colormap.

The drawing behind :meth:`ResultPlotter.scores <xsvd.plot.ResultPlotter.scores>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..labeled.layout import COMPONENT
from .common import (
    check_component_label,
    component_label,
    component_values,
    coord_label,
    date_ticks,
    legend_outside,
    materialize,
    pyplot,
    single_sample_dim,
    titled,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["scores"]

_MAX_LEGEND_CATEGORIES = 20


def scores(
    res,
    x: int,
    y: int,
    *,
    hue: str | None,
    ax: Axes | None,
    categorical: bool | None,
    kwargs: dict,
) -> Axes:
    """Draw :meth:`ResultPlotter.scores <xsvd.plot.ResultPlotter.scores>` of ``res``."""
    plt = pyplot()
    U = res.U
    sdim = single_sample_dim(U, "scores() plots one point per sample")
    labels = component_values(U)
    ix = check_component_label("x", x, labels)
    iy = check_component_label("y", y, labels)
    if hue is not None:
        _check_hue(U, hue, sdim)
    idx = {COMPONENT: [ix, iy]}
    sel = U.isel(idx)
    sel = sel.drop_vars([c for c in sel.coords if c not in (hue, COMPONENT, sdim)])
    sel, evr = materialize(sel, res.explained_variance_ratio.isel(idx))
    sel = sel.transpose(sdim, COMPONENT)
    xs, ys = np.asarray(sel.values, dtype=float).T
    comp = component_values(sel)

    if ax is None:
        _, ax = plt.subplots(figsize=(5.6, 4.4), layout="constrained")
    kwargs.setdefault("s", 14 if xs.size > 300 else 24)
    kwargs.setdefault("alpha", 0.8)
    kwargs.setdefault("linewidths", 0)

    if hue is None:
        kwargs.setdefault("color", "C0")
        ax.scatter(xs, ys, **kwargs)
    else:
        coord = sel[hue]
        values = coord.values
        if categorical is None:
            categorical = _is_categorical(coord)
        if categorical:
            _scatter_categories(ax, xs, ys, values, coord_label(coord), kwargs)
        else:
            _scatter_numeric(ax, xs, ys, values, coord_label(coord), kwargs)

    ax.axhline(0.0, color="0.6", lw=0.6, zorder=0)
    ax.axvline(0.0, color="0.6", lw=0.6, zorder=0)
    ax.set_xlabel(component_label(comp[0], evr.values[0], prefix="PC"))
    ax.set_ylabel(component_label(comp[1], evr.values[1], prefix="PC"))
    ax.set_title(titled("Scores (U)", res))
    return ax


def _check_hue(U: xr.DataArray, hue, sdim) -> None:
    coords = [c for c in U.coords if c != COMPONENT and U[c].dims == (sdim,)]
    if not isinstance(hue, str) or hue not in coords:
        raise ValueError(
            f"hue={hue!r} is not a coordinate along the sample dimension {sdim!r} of U; "
            f"choose one of {coords}."
        )


def _is_categorical(coord: xr.DataArray) -> bool:
    import pandas as pd

    if isinstance(coord.dtype, pd.CategoricalDtype):
        return True
    return coord.dtype.kind in "OUSb"


def _category_colors(n: int) -> list:
    import matplotlib as mpl

    cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color", [])
    if n <= len(cycle):
        return list(cycle[:n])
    name = "tab10" if n <= 10 else "tab20" if n <= 20 else "turbo"
    cm = mpl.colormaps[name]
    if name == "turbo":
        return [cm(v) for v in np.linspace(0.05, 0.95, n)]
    return [cm(i) for i in range(n)]


def _scatter_categories(ax, xs, ys, values, label, kwargs) -> None:
    import pandas as pd

    codes, cats = pd.factorize(pd.Series(np.asarray(values, dtype=object)), sort=True)
    for key in ("cmap", "color", "c"):
        kwargs.pop(key, None)
    colors = _category_colors(len(cats))
    for i, cat in enumerate(cats):
        m = codes == i
        ax.scatter(xs[m], ys[m], color=colors[i], label=str(cat), **kwargs)
    if (codes < 0).any():  # missing values in hue
        m = codes < 0
        ax.scatter(xs[m], ys[m], color="0.6", label="(missing)", **kwargs)
    if 0 < len(cats) <= _MAX_LEGEND_CATEGORIES:
        leg = legend_outside(ax, 1.02, title=label, title_fontsize="small")
        for h in leg.legend_handles:
            h.set_alpha(1.0)


def _scatter_numeric(ax, xs, ys, values, label, kwargs) -> None:
    values = np.asarray(values)
    is_time = values.dtype.kind == "M"
    if is_time:
        from matplotlib.dates import date2num

        values = date2num(values)
    kwargs.pop("color", None)
    kwargs.setdefault("cmap", "viridis")
    sc = ax.scatter(xs, ys, c=np.asarray(values, dtype=float), **kwargs)
    cbar = ax.figure.colorbar(sc, ax=ax)
    cbar.set_label(label)
    if cbar.solids is not None:
        cbar.solids.set_alpha(1.0)
    date_ticks(cbar.ax.yaxis, is_time)
