"""Plots of an :class:`~xsvd.SVDResult`: scree, component patterns and sample scores.

matplotlib is optional (``pip install "xsvd[plot]"``); it is imported only when
a plot is drawn. Nothing here selects a backend or changes ``rcParams``.

Every plot works on computed (NumPy) and lazy (Dask) results alike. For a lazy
result only what is drawn is computed, in one Dask computation per plot, e.g.
two columns of ``U`` and two explained-variance ratios for :meth:`ResultPlotter.scores`.
Each such computation runs the decomposition again: call ``res.compute()`` (or
``res.persist()``) once before drawing several plots of a large lazy result.

Examples
--------
>>> import xsvd
>>> from xsvd.plot import ResultPlotter
>>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=18, n_lon=36)
>>> res = sst.svd(k=4, dim="time", center=True)
>>> p = ResultPlotter(res)
>>> ax = p.scree()                      # doctest: +SKIP
>>> fig = p.components(n=3)             # doctest: +SKIP
>>> ax = p.scores(0, 1, hue="month")    # doctest: +SKIP
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from . import _backend
from ._layout import COMPONENT

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ResultPlotter"]

_MISSING_MPL = 'Plotting needs matplotlib: pip install "xsvd[plot]"'
_MAX_LEGEND_CATEGORIES = 20
_DEFAULT_N_COMPONENTS = 6


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(_MISSING_MPL) from err
    return plt


class ResultPlotter:
    """Plots of one SVD result.

    Parameters
    ----------
    result : xsvd.SVDResult
        The decomposition to plot (computed or lazy). Only its ``U``, ``V``
        and ``explained_variance_ratio`` are used.

    Notes
    -----
    Components are named by their ``component`` coordinate (0, 1, ... for
    results from xsvd), the same values that select them, e.g.
    ``res.V.sel(component=0)``; ``x``, ``y`` and ``n`` count from 0 as well.

    Examples
    --------
    >>> import xsvd
    >>> from xsvd.plot import ResultPlotter
    >>> gt = xsvd.datasets.genotypes(2_000, 90)
    >>> res = gt.svd(k=5, dim="samples", center=True)
    >>> plotter = ResultPlotter(res)
    >>> ax = plotter.scores(0, 1, hue="population")  # doctest: +SKIP
    """

    def __init__(self, result: Any):
        self._res = result

    def __repr__(self) -> str:
        return f"<xsvd.plot.ResultPlotter of {self._res!r}>"

    # ----------------------------------------------------------------- scree
    def scree(self, ax: Axes | None = None, cumulative: bool = True, log: bool = False) -> Axes:
        """Bar chart of each component's share of the variance, in percent.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Axes to draw on; default a new figure.
        cumulative : bool, default True
            Also draw the cumulative share as a line with markers (same axis).
        log : bool, default False
            Logarithmic y axis, to see the tail of a fast-decaying spectrum.

        Returns
        -------
        matplotlib.axes.Axes
            One bar per component (in ``ax.containers[0]``) and, with
            ``cumulative=True``, one line labeled ``"cumulative"``.

        Notes
        -----
        The shares are ``res.explained_variance_ratio``: fractions of the total
        variance of the centered, weighted data. For a truncated SVD the
        cumulative line therefore ends below 100 %.

        Examples
        --------
        >>> import xsvd
        >>> from xsvd.plot import ResultPlotter
        >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=18, n_lon=36)
        >>> res = sst.svd(k=6, dim="time", center=True)
        >>> ax = ResultPlotter(res).scree(log=True)  # doctest: +SKIP
        >>> ax.figure.savefig("scree.png")  # doctest: +SKIP
        """
        plt = _pyplot()
        (evr,) = _materialize(self._res.explained_variance_ratio)
        pct = 100.0 * np.asarray(evr.values, dtype=float)
        comp = _component_values(evr)
        pos = np.arange(pct.size)
        if ax is None:
            width = max(4.5, min(10.0, 0.45 * pct.size + 3.0))
            _, ax = plt.subplots(figsize=(width, 3.6), layout="constrained")
        bars = ax.bar(pos, pct, width=0.7, color="C0", label="per component")
        if pct.size <= 12:
            ax.bar_label(bars, [_sig3(v) for v in pct], fontsize="x-small", padding=1)
        if cumulative:
            ax.plot(pos, np.cumsum(pct), color="C1", marker="o", ms=4, label="cumulative")
            ax.legend(loc="best", fontsize="small")
        if log:
            ax.set_yscale("log")
        else:
            top = 100.0 * 1.06 if cumulative and np.sum(pct) > 90.0 else None
            ax.set_ylim(0.0, top)
        _component_ticks(ax, pos, comp)
        ax.set_xlabel(COMPONENT)
        ax.set_ylabel("explained variance (%)")
        ax.set_title(_titled("Explained variance", self._res))
        return ax

    # ------------------------------------------------------------ components
    def components(
        self,
        n: int | None = None,
        *,
        col_wrap: int = 3,
        cmap: Any = "RdBu_r",
        robust: bool = True,
        nan_color: Any = "0.8",
        **kwargs,
    ) -> Figure:
        """The patterns ``V`` of the leading components: maps or lines.

        * **Two feature dimensions** (e.g. ``lat``, ``lon``): one map per
          component (``DataArray.plot`` with ``col="component"``, so a
          pcolormesh in an xarray FacetGrid), with one shared colorbar whose
          limits are symmetric around 0. Each panel is titled with the
          component and its explained variance in percent. Features that are
          NaN (land in an ocean field) stay NaN and show as ``nan_color``.
        * **One feature dimension**: one line per component on a single axes,
          against the feature coordinate, with a legend.
        * Three or more feature dimensions: ValueError; select or reduce the
          features first.

        Parameters
        ----------
        n : int, optional
            Plot components ``0 .. n-1``. Default: all computed components, at
            most 6.
        col_wrap : int, default 3
            Maps per row.
        cmap : str or matplotlib colormap, default "RdBu_r"
            Colormap of the maps (a diverging one suits the symmetric limits).
            Lines use the axes' color cycle.
        robust : bool, default True
            Maps: the color limits are ``±`` the 98th percentile of ``|V|``
            (over the plotted components) instead of its maximum, so that a
            few extreme cells do not wash out the maps; the colorbar then has
            arrow ends. Ignored for lines.
        nan_color : color, default "0.8" (light grey)
            Background of the maps, seen where ``V`` is NaN. ``None`` keeps
            the axes' own background.
        **kwargs
            Maps: passed to :meth:`xarray.DataArray.plot` (e.g. ``vmin`` and
            ``vmax``, which override the symmetric limits, ``size``,
            ``aspect``, ``x``, ``y``, ``cbar_kwargs``, ``subplot_kws``).
            Lines: ``ax`` (an Axes to draw on) and keywords for
            :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        matplotlib.figure.Figure
            Always a Figure. For maps it is the figure of the xarray FacetGrid:
            ``fig.axes`` holds the panels (row by row, unused slots hidden)
            and, last, the colorbar. For lines it is the figure of the one
            axes, ``fig.axes[0]``.

        Raises
        ------
        ValueError
            If ``V`` has no or three and more feature dimensions, or ``n`` is
            not between 1 and the number of components.

        Examples
        --------
        >>> import xsvd
        >>> from xsvd.plot import ResultPlotter
        >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=18, n_lon=36)
        >>> res = sst.svd(k=4, dim="time", center=True)
        >>> fig = ResultPlotter(res).components(n=3)  # doctest: +SKIP
        >>> fig.savefig("patterns.png")  # doctest: +SKIP

        Zonal means give one feature dimension, ``lat``, hence lines:

        >>> zonal = sst.mean("lon").svd(k=3, dim="time", center=True)
        >>> fig = ResultPlotter(zonal).components()  # doctest: +SKIP
        """
        V = self._res.V
        feature_dims = [d for d in V.dims if d != COMPONENT]
        if len(feature_dims) not in (1, 2):
            shown = ", ".join(map(repr, feature_dims)) or "none"
            raise ValueError(
                f"components() draws lines for one feature dimension and maps for two, "
                f"but V has {len(feature_dims)} feature dimension(s): {shown}. Select or "
                f"reduce the features first (e.g. decompose da.isel({feature_dims[0]}=0) or "
                f"da.mean({feature_dims[0]!r}) instead), or plot res.V yourself."
                if feature_dims
                else "components() needs V to have at least one feature dimension; it has none."
            )
        k = V.sizes[COMPONENT]
        n = _check_n(n, k)
        V, evr = _materialize(
            V.isel({COMPONENT: slice(0, n)}),
            self._res.explained_variance_ratio.isel({COMPONENT: slice(0, n)}),
        )
        titles = [
            _component_label(c, p) for c, p in zip(_component_values(V), evr.values, strict=True)
        ]
        if len(feature_dims) == 2:
            return _maps(V, titles, self._res, col_wrap, cmap, robust, nan_color, kwargs)
        return _lines(V, feature_dims[0], titles, self._res, kwargs)

    # ---------------------------------------------------------------- scores
    def scores(
        self,
        x: int = 0,
        y: int = 1,
        *,
        hue: str | None = None,
        ax: Axes | None = None,
        categorical: bool | None = None,
        **kwargs,
    ) -> Axes:
        """Scatter of the samples' scores ``U[:, x]`` against ``U[:, y]``.

        Parameters
        ----------
        x, y : int, default 0 and 1
            Components on the horizontal and vertical axis (positions along
            ``component``, counted from 0).
        hue : str, optional
            Name of a coordinate of ``U`` along the sample dimension (e.g.
            ``"population"``, or ``"month"`` / ``"time"`` for a field
            decomposed over time) that colors the points. Strings, booleans and
            pandas categoricals are categories: one color per category and a
            legend, placed outside the axes (right) so that it covers no
            points; more than 20 categories get colors but no legend. Numbers
            and datetimes get a colormap (``cmap=``, default "viridis") and a
            colorbar.
        ax : matplotlib.axes.Axes, optional
            Axes to draw on; default a new figure.
        categorical : bool, optional
            Force (True) or forbid (False) treating ``hue`` as categories,
            e.g. True for integer population codes. Default: by its dtype.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.scatter` (``s``, ``alpha``,
            ``marker``, ``cmap``, ...).

        Returns
        -------
        matplotlib.axes.Axes
            The scatter is one PathCollection per category (one in all without
            ``hue`` or with a numeric ``hue``), holding one point per sample.
            Axis labels read ``"component 0 (12.3%)"``.

        Raises
        ------
        ValueError
            If ``U`` has more than one sample dimension, ``x`` or ``y`` is not
            a component, or ``hue`` is not a coordinate along the samples.

        Examples
        --------
        >>> import xsvd
        >>> from xsvd.plot import ResultPlotter
        >>> gt = xsvd.datasets.genotypes(2_000, 90)
        >>> res = gt.svd(k=4, dim="samples", center=True)
        >>> ax = ResultPlotter(res).scores(0, 1, hue="population")  # doctest: +SKIP
        >>> ax.figure.savefig("pca.png", bbox_inches="tight")  # doctest: +SKIP
        """
        plt = _pyplot()
        U = self._res.U
        sample_dims = [d for d in U.dims if d != COMPONENT]
        if len(sample_dims) != 1:
            raise ValueError(
                f"scores() plots one point per sample and needs a single sample dimension, "
                f"but U has {len(sample_dims)}: {', '.join(map(repr, sample_dims))}. Stack "
                f"them before decomposing, e.g. da.stack(sample={tuple(sample_dims)!r}) "
                f"with dim='sample', or plot res.U yourself."
            )
        (sdim,) = sample_dims
        k = U.sizes[COMPONENT]
        ix = _check_component_index("x", x, k)
        iy = _check_component_index("y", y, k)
        if hue is not None:
            _check_hue(U, hue, sdim)
        idx = [ix, iy]
        sel = U.isel({COMPONENT: idx})
        keep = [hue] if hue is not None else []
        sel = sel.drop_vars([c for c in sel.coords if c not in (*keep, COMPONENT, sdim)])
        sel, evr = _materialize(sel, self._res.explained_variance_ratio.isel({COMPONENT: idx}))
        sel = sel.transpose(sdim, COMPONENT)
        xs = np.asarray(sel.values[:, 0], dtype=float)
        ys = np.asarray(sel.values[:, 1], dtype=float)
        comp = _component_values(sel)

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
                _scatter_categories(ax, xs, ys, values, _coord_label(coord), kwargs)
            else:
                _scatter_numeric(ax, xs, ys, values, _coord_label(coord), kwargs)

        ax.axhline(0.0, color="0.6", lw=0.6, zorder=0)
        ax.axvline(0.0, color="0.6", lw=0.6, zorder=0)
        ax.set_xlabel(_component_label(comp[0], evr.values[0]))
        ax.set_ylabel(_component_label(comp[1], evr.values[1]))
        ax.set_title(_titled("Scores (U)", self._res))
        return ax


# --------------------------------------------------------------------- helpers
def _materialize(*arrays: xr.DataArray) -> tuple[xr.DataArray, ...]:
    """The arrays in memory as NumPy: lazy ones computed together, CuPy copied."""
    arrays = _backend.compute(*arrays)
    return tuple(a.as_numpy() for a in arrays)


def _component_values(da: xr.DataArray) -> list:
    if COMPONENT in da.coords:
        return [v.item() if hasattr(v, "item") else v for v in da[COMPONENT].values]
    return list(range(da.sizes[COMPONENT]))


def _percent(ratio) -> str:
    """``0.6224 -> "62.2%"``, ``0.08 -> "8.00%"``, ``2.06e-5 -> "0.00206%"``."""
    return f"{_sig3(100.0 * float(ratio))}%"


def _sig3(v: float) -> str:
    """Three significant digits, trailing zeros kept (``8.00``, ``100``)."""
    return f"{v:#.3g}".rstrip(".")


def _component_label(comp, ratio) -> str:
    return f"{COMPONENT} {comp} ({_percent(ratio)})"


def _component_ticks(ax, pos, comp) -> None:
    if len(pos) <= 20:
        ax.set_xticks(pos, [str(c) for c in comp])
    else:
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _: str(comp[int(v)]) if 0 <= int(v) < len(comp) else "")
        )


def _data_name(res) -> str | None:
    name = getattr(getattr(res, "_layout", None), "name", None)
    return None if name is None else str(name)


def _titled(what: str, res) -> str:
    name = _data_name(res)
    return what if name is None else f"{what} of {name}"


def _coord_label(da: xr.DataArray) -> str:
    name = da.attrs.get("long_name") or da.attrs.get("standard_name") or str(da.name)
    units = da.attrs.get("units")
    return f"{name} [{units}]" if units else name


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _check_n(n, k: int) -> int:
    if n is None:
        return min(k, _DEFAULT_N_COMPONENTS)
    if not _is_int(n) or not 1 <= n <= k:
        raise ValueError(f"n must be an integer between 1 and {k} (the components), got {n!r}.")
    return int(n)


def _check_component_index(name: str, i, k: int) -> int:
    if not _is_int(i) or not -k <= i < k:
        raise ValueError(f"{name} must be a component position between 0 and {k - 1}, got {i!r}.")
    return int(i) % k


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
    kwargs.pop("cmap", None)
    kwargs.pop("color", None)
    kwargs.pop("c", None)
    colors = _category_colors(len(cats))
    for i, cat in enumerate(cats):
        m = codes == i
        ax.scatter(xs[m], ys[m], color=colors[i], label=str(cat), **kwargs)
    if (codes < 0).any():  # missing values in hue
        m = codes < 0
        ax.scatter(xs[m], ys[m], color="0.6", label="(missing)", **kwargs)
    if 0 < len(cats) <= _MAX_LEGEND_CATEGORIES:
        leg = ax.legend(
            title=label,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            fontsize="small",
            title_fontsize="small",
            frameon=False,
        )
        for h in leg.legend_handles:
            h.set_alpha(1.0)


def _scatter_numeric(ax, xs, ys, values, label, kwargs) -> None:
    values = np.asarray(values)
    is_time = values.dtype.kind == "M"
    if is_time:
        import matplotlib.dates as mdates

        c = mdates.date2num(values)
    else:
        c = np.asarray(values, dtype=float)
    kwargs.pop("color", None)
    kwargs.setdefault("cmap", "viridis")
    sc = ax.scatter(xs, ys, c=c, **kwargs)
    cbar = ax.figure.colorbar(sc, ax=ax)
    cbar.set_label(label)
    if cbar.solids is not None:
        cbar.solids.set_alpha(1.0)
    if is_time:
        import matplotlib.dates as mdates

        loc = mdates.AutoDateLocator()
        cbar.ax.yaxis.set_major_locator(loc)
        cbar.ax.yaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))


def _symmetric_limit(values: np.ndarray, robust: bool) -> float:
    a = np.abs(np.asarray(values, dtype=float))
    a = a[np.isfinite(a)]
    if a.size == 0:
        return 1.0
    lim = float(np.percentile(a, 98.0) if robust else a.max())
    if not lim > 0:
        lim = float(a.max()) or 1.0
    return lim


def _maps(V, titles, res, col_wrap, cmap, robust, nan_color, kwargs):
    _pyplot()
    kwargs = dict(kwargs)
    n = V.sizes[COMPONENT]
    fdims = [d for d in V.dims if d != COMPONENT]
    vmin, vmax = kwargs.pop("vmin", None), kwargs.pop("vmax", None)
    if vmin is None and vmax is None:
        vmax = _symmetric_limit(V.values, robust)
    kwargs["vmin"] = -abs(vmax) if vmin is None else vmin
    kwargs["vmax"] = abs(vmin) if vmax is None else vmax
    ncol = min(n, col_wrap)
    nrow = -(-n // ncol)
    if "figsize" not in kwargs:
        size = kwargs.pop("size", 2.3)
        aspect = kwargs.pop("aspect", _panel_aspect(V, fdims))
        kwargs["figsize"] = (ncol * size * aspect, nrow * size)
    add_colorbar = kwargs.pop("add_colorbar", True)
    cbar_kwargs = {"label": "pattern (V)", **(kwargs.pop("cbar_kwargs", None) or {})}
    fg = V.plot(
        col=COMPONENT,
        col_wrap=col_wrap if n > col_wrap else None,
        cmap=cmap,
        add_colorbar=False,
        **kwargs,
    )
    panels = []
    for ax, names, title in zip(
        fg.axs.flat, fg.name_dicts.flat, _pad(titles, fg.axs.size), strict=True
    ):
        if names is None:
            continue
        panels.append(ax)
        ax.set_title(title, fontsize="medium")
        if nan_color is not None:
            ax.set_facecolor(nan_color)
    fig = fg.fig
    right = 1.2 if add_colorbar else 0.0
    _add_margins(fig, top=0.4, right=right)
    if add_colorbar:
        _colorbar_right(fig, panels, V.values, cbar_kwargs)
    fig.suptitle(_titled("Leading components", res), y=1.0 - 0.08 / fig.get_figheight(), va="top")
    return fig


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
    boxes = [ax.get_position() for ax in panels]
    x1 = max(b.x1 for b in boxes)
    y0, y1 = min(b.y0 for b in boxes), max(b.y1 for b in boxes)
    w = fig.get_figwidth()
    cax = fig.add_axes([x1 + 0.2 / w, y0, 0.16 / w, y1 - y0])
    for key in ("fraction", "pad", "shrink", "aspect", "anchor", "panchor", "location"):
        cbar_kwargs.pop(key, None)
    if "extend" not in cbar_kwargs:
        finite = np.asarray(values, dtype=float)
        finite = finite[np.isfinite(finite)]
        norm = mappable.norm
        low = finite.size and norm.vmin is not None and finite.min() < norm.vmin
        high = finite.size and norm.vmax is not None and finite.max() > norm.vmax
        cbar_kwargs["extend"] = {
            (True, True): "both",
            (True, False): "min",
            (False, True): "max",
        }.get((bool(low), bool(high)), "neither")
    fig.colorbar(mappable, cax=cax, **cbar_kwargs)


def _pad(seq, n):
    seq = list(seq)
    return seq + [None] * (n - len(seq))


def _panel_aspect(V, fdims) -> float:
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
    return float(np.clip(aspect, 0.6, 2.5)) * 1.1  # room for the tick labels


def _lines(V, fdim, titles, res, kwargs):
    plt = _pyplot()
    kwargs = dict(kwargs)
    ax = kwargs.pop("ax", None)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    if fdim in V.coords:
        xvals = V[fdim].values
        xlabel = _coord_label(V[fdim])
    else:
        xvals = np.arange(V.sizes[fdim])
        xlabel = str(fdim)
    data = V.transpose(COMPONENT, fdim).values
    if xvals.size > 2_000:
        kwargs.setdefault("lw", 0.6)
    for row, title in zip(data, titles, strict=True):
        ax.plot(xvals, row, label=title, **kwargs)
    ax.axhline(0.0, color="0.6", lw=0.6, zorder=0, label="_zero")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pattern (V)")
    ax.set_title(_titled("Leading components", res))
    ax.legend(fontsize="small")
    return ax.figure
