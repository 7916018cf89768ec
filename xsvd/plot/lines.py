"""Line plots: the scree plot, PC time series, and the patterns of one feature dimension.

The drawing behind :meth:`ResultPlotter.scree <xsvd.plot.ResultPlotter.scree>`,
:meth:`~xsvd.plot.ResultPlotter.timeseries` and, for patterns along one feature
dimension, :meth:`~xsvd.plot.ResultPlotter.components`. The horizontal axis of
a time series is the sample coordinate; cftime dates are drawn with
nc-time-axis when it is installed, else as datetime64 (standard calendars) or
decimal years.
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

__all__ = ["SCALINGS", "component_lines", "scree", "timeseries"]

#: The ``scaling=`` options of :meth:`ResultPlotter.timeseries`.
SCALINGS = (None, "unit", "singular")
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
        ax.bar_label(
            bars,
            [t if b else "" for t, b in zip(labels, tall, strict=True)],
            fontsize="x-small",
            padding=-10,
            color="white",
        )
        ax.bar_label(
            bars,
            [t if not b else "" for t, b in zip(labels, tall, strict=True)],
            fontsize="x-small",
            padding=1,
        )
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
            f"scaling must be one of {list(SCALINGS)}, got {scaling!r}: None for U as it "
            "is, 'unit' for unit variance, 'singular' for U * S."
        )
    if ax is not None and not overlay and n > 1:
        raise ValueError(
            f"ax= takes one axes, but {n} components make {n} panels; pass overlay=True "
            "(or n=1) to draw on ax, or leave ax out for a new figure."
        )
    sel = U.isel({COMPONENT: slice(0, n)})
    sel = sel.drop_vars([c for c in sel.coords if c not in (COMPONENT, sdim)])
    idx = {COMPONENT: slice(0, n)}
    S = _units.dequantify(res.S)
    sel, evr, S = materialize(sel, res.explained_variance_ratio.isel(idx), S.isel(idx))
    sel = sel.transpose(COMPONENT, sdim)
    data = np.asarray(sel.values, dtype=float)
    if scaling == "unit":
        data = data * np.sqrt(max(sel.sizes[sdim] - 1, 1))
        ylabel = "PC (unit variance)"
    elif scaling == "singular":
        data = data * np.asarray(S.values, dtype=float)[:, None]
        units = S.attrs.get("units")
        ylabel = f"PC (U × S) [{units}]" if units else "PC (U × S)"
    else:
        ylabel = "PC (U)"
    x, xlabel = _sample_axis(sel, sdim)
    labels = [component_label(c, p) for c, p in zip(component_values(sel), evr.values, strict=True)]
    title = titled("Principal components", res)
    if len(x) > 2_000:
        kwargs.setdefault("lw", 0.7)

    if overlay or n == 1:
        if ax is None:
            _, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
        for row, label in zip(data, labels, strict=True):
            ax.plot(x, row, label=label, **kwargs)
        zero_line(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(  # outside, right: it covers no data
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0.0,
            fontsize="small",
            frameon=False,
        )
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
    axs[-1, 0].set_xlabel(xlabel)
    fig.supylabel(ylabel, fontsize="medium")
    fig.suptitle(title)
    return fig


def _sample_axis(U: xr.DataArray, sdim) -> tuple[np.ndarray, str]:
    """Horizontal positions and axis label for the samples of ``U``.

    The sample coordinate when it is numeric or a time (datetime64, or cftime
    dates: see :func:`_cftime_positions`), else the positions 0, 1, ...
    """
    if sdim in U.coords:
        coord = U[sdim]
        values = np.asarray(coord.values)
        if values.dtype.kind in "iufM":
            return values, coord_label(coord)
        if values.dtype.kind == "m":
            return values / np.timedelta64(1, "D"), f"{name_of(coord)} [days]"
        if values.dtype.kind == "O":
            converted = _cftime_positions(values)
            if converted is not None:
                x, note = converted
                return x, f"{coord_label(coord)} [{note}]" if note else coord_label(coord)
    return np.arange(U.sizes[sdim]), f"{sdim} (position)"


def _cftime_positions(values: np.ndarray) -> tuple[np.ndarray, str | None] | None:
    """cftime dates as something matplotlib draws, and a note for the axis label.

    With nc-time-axis installed the dates themselves (it teaches matplotlib
    every calendar); else datetime64 for the standard calendars, and decimal
    years (2000.5 is half way through the year 2000 of that calendar) for the
    others. None when ``values`` are not cftime dates.
    """
    first = values.flat[0] if values.size else None
    calendar = getattr(first, "calendar", None)
    if calendar is None or not hasattr(first, "year"):
        return None
    try:
        import nc_time_axis  # noqa: F401  (registers matplotlib's converter for cftime dates)

        return values, None
    except ImportError:
        pass
    if calendar in _STANDARD_CALENDARS:
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(xr.CFTimeIndex(values).to_datetimeindex().values), None
        except (ValueError, TypeError, OverflowError):  # dates out of datetime64's range
            pass
    years = []
    for d in values.flat:
        start = d.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        end = start.replace(year=d.year + 1)
        years.append(d.year + (d - start) / (end - start))
    return np.asarray(years, dtype=float), f"years, {calendar} calendar"


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
