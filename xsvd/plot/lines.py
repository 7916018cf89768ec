"""Line plots: the scree plot, PC time series, and the patterns of one feature dimension.

The drawing behind :meth:`ResultPlotter.scree <xsvd.plot.ResultPlotter.scree>`,
:meth:`~xsvd.plot.ResultPlotter.timeseries` and, for patterns along one feature
dimension, :meth:`~xsvd.plot.ResultPlotter.components`. The horizontal axis of
a time series is the sample coordinate; cftime dates are drawn with
nc-time-axis when it is installed, else as dates (datetime64) of the same
year, month and day, with matplotlib's date ticks, in any calendar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..labeled import units as _units
from ..labeled.layout import COMPONENT
from .common import (
    check_n,
    component_label,
    component_values,
    coord_label,
    date_ticks,
    legend_outside,
    materialize,
    name_of,
    pyplot,
    sig3,
    single_sample_dim,
    titled,
    zero_line,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SCALINGS", "cftime_positions", "component_lines", "scree", "timeseries"]

#: The ``scaling=`` options of :meth:`ResultPlotter.timeseries` (None: the same as "U").
SCALINGS = ("unit", "U", "singular", None)
_STANDARD_CALENDARS = ("standard", "gregorian", "proleptic_gregorian")


# ----------------------------------------------------------------- scree
def scree(res, ax: Axes | None, cumulative: bool, log: bool) -> Axes:
    """Draw :meth:`ResultPlotter.scree <xsvd.plot.ResultPlotter.scree>` of ``res``."""
    plt = pyplot()
    (evr,) = materialize(res.explained_variance_ratio)
    pct = 100.0 * np.asarray(evr.values, dtype=float)
    comp = component_values(evr)
    pos = np.arange(pct.size)
    if ax is None:
        width = max(4.5, min(10.0, 0.45 * pct.size + 3.0))
        _, ax = plt.subplots(figsize=(width, 3.6), layout="constrained")
    bars = ax.bar(pos, pct, width=0.7, color="C0", label="per component")
    if cumulative:
        ax.plot(pos, np.cumsum(pct), color="C1", marker="o", ms=4, label="cumulative")
        ax.legend(loc="best", fontsize="small")
    if log:
        ax.set_yscale("log")
    else:
        top = 100.0 * 1.06 if cumulative and np.sum(pct) > 90.0 else None
        ax.set_ylim(0.0, top)
    if pct.size <= 12:
        labels = [sig3(v) for v in pct]
        # the cumulative line starts on top of the first bar: label tall bars inside
        ax.get_ylim()  # the autoscaled limits, before they are used
        to_axes = ax.transScale + ax.transLimits  # data -> fraction of the axes height
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 on a log axis
            height = to_axes.transform(np.column_stack([pos, pct]))[:, 1]
        tall = (height >= 0.1) & cumulative
        for inside, style in ((True, dict(padding=-10, color="white")), (False, dict(padding=1))):
            shown = [t if b == inside else "" for t, b in zip(labels, tall, strict=True)]
            ax.bar_label(bars, shown, fontsize="x-small", **style)
    _component_ticks(ax, pos, comp)
    ax.set_xlabel(COMPONENT)
    ax.set_ylabel("explained variance (%)")
    ax.set_title(titled("Explained variance", res))
    return ax


def _component_ticks(ax, pos, comp) -> None:
    if len(pos) <= 20:
        ax.set_xticks(pos, [str(c) for c in comp])
    else:
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _: str(comp[int(v)]) if 0 <= int(v) < len(comp) else "")
        )


# ------------------------------------------------------------ timeseries
def timeseries(
    res,
    n: int,
    *,
    scaling: str | None,
    overlay: bool,
    sharey: bool,
    ax: Axes | None,
    kwargs: dict,
) -> Figure:
    """Draw :meth:`ResultPlotter.timeseries <xsvd.plot.ResultPlotter.timeseries>` of ``res``."""
    plt = pyplot()
    U = res.U
    sdim = single_sample_dim(U, "timeseries() plots each component along one sample dimension")
    n = check_n(n, U.sizes[COMPONENT])
    if scaling not in SCALINGS:
        raise ValueError(
            f"scaling must be one of {list(SCALINGS[:3])}, got {scaling!r}: 'unit' for "
            "standardized PCs (unit variance, the default), 'U' for U as it is (unit norm), "
            "'singular' for U * S."
        )
    if ax is not None and not overlay and n > 1:
        raise ValueError(
            f"ax= takes one axes, but {n} components make {n} panels; pass overlay=True "
            "(or n=1) to draw on ax, or leave ax out for a new figure."
        )
    idx = {COMPONENT: slice(0, n)}
    sel = U.isel(idx)
    sel = sel.drop_vars([c for c in sel.coords if c not in (COMPONENT, sdim)])
    S = _units.dequantify(res.S)
    sel, evr, S = materialize(sel, res.explained_variance_ratio.isel(idx), S.isel(idx))
    sel = sel.transpose(COMPONENT, sdim)
    data = np.asarray(sel.values, dtype=float)
    if scaling == "unit":
        data = data * np.sqrt(max(sel.sizes[sdim] - 1, 1))
        ylabel = "PC (standardized)"
    elif scaling == "singular":
        data = data * np.asarray(S.values, dtype=float)[:, None]
        units = S.attrs.get("units")
        ylabel = f"PC (U × S) [{units}]" if units else "PC (U × S)"
    else:
        ylabel = "PC (U, unit norm)"
    x, xlabel, dates = _sample_axis(sel, sdim)
    comps = component_values(sel)
    labels = [component_label(c, p, prefix="PC ") for c, p in zip(comps, evr.values, strict=True)]
    title = titled("Principal components", res)
    if len(x) > 2_000:
        kwargs.setdefault("lw", 0.7)

    if overlay or n == 1:
        if ax is None:
            _, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
        for row, label in zip(data, labels, strict=True):
            ax.plot(x, row, label=label, **kwargs)
        zero_line(ax)
        date_ticks(ax.xaxis, dates)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        legend_outside(ax, 1.01)
        return ax.figure

    fig, axs = plt.subplots(
        n,
        1,
        sharex=True,
        sharey=sharey,
        squeeze=False,
        figsize=(7.5, 0.9 + 1.45 * n),
        layout="constrained",
    )
    for i, (panel, row, label) in enumerate(zip(axs[:, 0], data, labels, strict=True)):
        panel.plot(x, row, label=label, **{"color": f"C{i}", **kwargs})
        zero_line(panel)
        panel.set_title(label, loc="left", fontsize="medium")
    date_ticks(axs[-1, 0].xaxis, dates)
    axs[-1, 0].set_xlabel(xlabel)
    fig.supylabel(ylabel, fontsize="medium")
    fig.suptitle(title)
    return fig


def _sample_axis(U: xr.DataArray, sdim) -> tuple[np.ndarray, str, bool]:
    """Horizontal positions, axis label, and whether they are dates, for the samples of ``U``.

    The sample coordinate when it is numeric or a time (datetime64, or cftime
    dates: see :func:`cftime_positions`), else the positions 0, 1, ...
    """
    if sdim in U.coords:
        coord = U[sdim]
        values = np.asarray(coord.values)
        if values.dtype.kind in "iufM":
            return values, coord_label(coord), values.dtype.kind == "M"
        if values.dtype.kind == "m":
            return values / np.timedelta64(1, "D"), f"{name_of(coord)} [days]", False
        if values.dtype.kind == "O":
            converted = cftime_positions(values)
            if converted is not None:
                x, note, dates = converted
                label = f"{coord_label(coord)} ({note})" if note else coord_label(coord)
                return x, label, dates
    return np.arange(U.sizes[sdim]), f"{sdim} (position)", False


def cftime_positions(values: np.ndarray) -> tuple[np.ndarray, str | None, bool] | None:
    """cftime dates as something matplotlib draws as dates, a note for the label, and whether
    the positions are datetime64 (to be given date ticks here).

    With nc-time-axis installed, the dates themselves (it teaches matplotlib
    every calendar, ticks included). Else datetime64 dates: of the same year,
    month, day and time where every date exists in the standard calendar (all
    of ``noleap``, ``365_day``, ``julian`` but its extra leap days, monthly
    ``360_day`` data), else at the same fraction of the same year (``360_day``
    has February 30th); decimal years (2000.5 is half way through 2000) only
    for years outside 1 to 9999. None when ``values`` are not cftime dates.
    """
    first = values.flat[0] if values.size else None
    calendar = getattr(first, "calendar", None)
    if calendar is None or not hasattr(first, "year"):
        return None
    note = None if calendar in _STANDARD_CALENDARS else f"{calendar} calendar"
    try:
        import nc_time_axis  # noqa: F401  (registers matplotlib's converter for cftime dates)

        return values, note, False
    except ImportError:
        pass
    dates = list(values.flat)
    if all(1 <= d.year <= 9999 for d in dates):
        return np.asarray(_as_datetime64(dates)).reshape(values.shape), note, True
    return np.asarray([_decimal_year(d) for d in dates], dtype=float), f"years, {calendar}", False


def _as_datetime64(dates: list) -> list:
    """cftime dates as datetime64[us]: the same fields where all exist, else the same share
    of the same year (monotonic either way)."""
    from datetime import datetime, timedelta

    def fields(d):
        return datetime(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond)

    try:
        out = [fields(d) for d in dates]
    except ValueError:  # e.g. February 30th of the 360_day calendar
        out = []
        for d in dates:
            year = datetime(d.year, 1, 1)
            length = (datetime(d.year + 1, 1, 1) if d.year < 9999 else year + timedelta(365)) - year
            out.append(year + (_decimal_year(d) - d.year) * length)
    return [np.datetime64(v, "us") for v in out]


def _decimal_year(d) -> float:
    """``2000.5`` half way through the year 2000 of ``d``'s calendar."""
    start = d.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=d.year + 1)
    return d.year + (d - start) / (end - start)


# ------------------------------------------------- patterns along one dim
def component_lines(V, fdim, titles, label, title, kwargs) -> Figure:
    """One line per component of ``V`` against its one feature dimension ``fdim``."""
    plt = pyplot()
    kwargs = dict(kwargs)
    ax = kwargs.pop("ax", None)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    if fdim in V.coords:
        xvals = V[fdim].values
        xlabel = coord_label(V[fdim])
    else:
        xvals = np.arange(V.sizes[fdim])
        xlabel = str(fdim)
    data = V.transpose(COMPONENT, fdim).values
    if xvals.size > 2_000:
        kwargs.setdefault("lw", 0.6)
    for row, name in zip(data, titles, strict=True):
        ax.plot(xvals, row, label=name, **kwargs)
    zero_line(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax.figure
