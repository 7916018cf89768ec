"""Plots of an :class:`~xsvd.SVDResult`: scree, component maps, PC time series, scores.

matplotlib is optional (``pip install "xsvd[plot]"``); it is imported only when
a plot is drawn. Nothing here selects a backend or changes ``rcParams``. Map
projections and coastlines need cartopy (``pip install cartopy``), and cftime
dates are drawn as dates of their own calendar with nc-time-axis when it is
installed (``pip install nc-time-axis``).

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
>>> fig = p.timeseries(n=3)             # doctest: +SKIP
>>> ax = p.scores(0, 1, hue="month")    # doctest: +SKIP
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from .core import backend
from .labeled import units as _units
from .labeled.layout import COMPONENT

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ResultPlotter"]

_MISSING_MPL = 'Plotting needs matplotlib: pip install "xsvd[plot]"'
_MAX_LEGEND_CATEGORIES = 20
_DEFAULT_N_COMPONENTS = 6
#: The ``scaling=`` options of :meth:`ResultPlotter.timeseries`.
_SCALINGS = (None, "unit", "singular")
_MISSING_CARTOPY = (
    "Map projections and coastlines need cartopy: pip install cartopy "
    "(or conda install -c conda-forge cartopy)"
)
_STANDARD_CALENDARS = ("standard", "gregorian", "proleptic_gregorian")


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(_MISSING_MPL) from err
    return plt


def _cartopy_crs():
    """``cartopy.crs``, or an ImportError that says how to install it."""
    try:
        import cartopy.crs as ccrs
    except ImportError as err:
        raise ImportError(_MISSING_CARTOPY) from err
    return ccrs


class ResultPlotter:
    """Plots of one SVD result.

    Parameters
    ----------
    result : xsvd.SVDResult
        The decomposition to plot (computed or lazy). Its ``U``, ``S``,
        ``V``, ``explained_variance_ratio`` and weights are used.

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
        if cumulative:
            ax.plot(pos, np.cumsum(pct), color="C1", marker="o", ms=4, label="cumulative")
            ax.legend(loc="best", fontsize="small")
        if log:
            ax.set_yscale("log")
        else:
            top = 100.0 * 1.06 if cumulative and np.sum(pct) > 90.0 else None
            ax.set_ylim(0.0, top)
        if pct.size <= 12:
            labels = [_sig3(v) for v in pct]
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
        ax.set_title(_titled("Explained variance", self._res))
        return ax

    # ------------------------------------------------------------ components
    def components(
        self,
        n: int | None = None,
        *,
        unweighted: bool = False,
        values: xr.DataArray | None = None,
        projection: Any = None,
        coastlines: bool = False,
        col_wrap: int | None = None,
        cmap: Any = None,
        robust: bool = True,
        nan_color: Any = "0.8",
        **kwargs,
    ) -> Figure:
        """The patterns ``V`` of the leading components (or other maps): maps or lines.

        * **Two feature dimensions** (e.g. ``lat``, ``lon``): one map per
          component (``DataArray.plot`` with ``col="component"``, so a
          pcolormesh in an xarray FacetGrid), with one shared colorbar. Each
          panel is titled with the component and its explained variance in
          percent. Features that are NaN (land in an ocean field) stay NaN and
          show as ``nan_color``. The grid has no empty panels where it can
          (2 x 2 for 4 maps, 3 x 2 for 6); panels left over are removed.
        * **One feature dimension**: one line per component on a single axes,
          against the feature coordinate, with a legend.
        * Three or more feature dimensions: ValueError; select or reduce the
          features first.

        Parameters
        ----------
        n : int, optional
            Plot components ``0 .. n-1``. Default: all computed components (or
            all in ``values``), at most 6.
        unweighted : bool, default False
            Plot ``V / weights``, the patterns on the data's grid with the
            weights of the decomposition divided out (e.g. EOFs without the
            ``sqrt(cos(lat))`` area weighting), instead of the weighted ``V``.
            Features of weight 0 are NaN. For an unweighted result this is
            ``V`` itself.
        values : xarray.DataArray, optional
            Maps to plot instead of ``V``, with the dimension ``component``
            and the feature dimensions: e.g. the correlation of the data with
            each principal component, computed elsewhere. The colorbar and
            figure title are taken from its ``long_name`` (or ``name``) and
            ``units``; each panel is titled with its component and, where the
            result has that component, its explained variance.
        projection : cartopy.crs.Projection, optional
            Draw the maps on this map projection (e.g.
            ``cartopy.crs.Robinson(central_longitude=180)``); the data are
            taken as longitude/latitude (``transform=cartopy.crs.PlateCarree()``
            unless ``transform=`` is given). Needs cartopy
            (``pip install cartopy``).
        coastlines : bool, default False
            Draw coastlines on each map (cartopy's Natural Earth coastlines,
            which cartopy downloads once). Without ``projection`` the maps use
            ``cartopy.crs.PlateCarree()``. Needs cartopy.
        col_wrap : int, optional
            Maps per row. Default: all in one row for up to 3 maps, else
            ``ceil(sqrt(n))`` (2 for 4 maps, 3 for 5 to 9).
        cmap : str or matplotlib colormap, optional
            Colormap of the maps. Default: "RdBu_r" with limits symmetric
            around 0 when the values take both signs (as patterns do),
            "viridis" from 0 when they take one. Lines use the axes' color
            cycle.
        robust : bool, default True
            Maps: the color limits are ``±`` the 98th percentile of the
            absolute values (over the plotted components) instead of their
            maximum, so that a few extreme cells do not wash out the maps; the
            colorbar then has arrow ends. Ignored for lines.
        nan_color : color, default "0.8" (light grey)
            Background of the maps, seen where the values are NaN. ``None``
            keeps the axes' own background.
        **kwargs
            Maps: passed to :meth:`xarray.DataArray.plot` (e.g. ``vmin`` and
            ``vmax``, which override the default limits, ``size``,
            ``aspect``, ``figsize``, ``x``, ``y``, ``cbar_kwargs``,
            ``transform``, and ``subplot_kws``, a dict passed on to
            :func:`matplotlib.pyplot.subplots` for every panel, which can
            also hold the ``projection``).
            Lines: ``ax`` (an Axes to draw on) and keywords for
            :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        matplotlib.figure.Figure
            Always a Figure. For maps it is the figure of the xarray FacetGrid:
            ``fig.axes`` holds the panels (row by row) and, last, the
            colorbar. For lines it is the figure of the one axes,
            ``fig.axes[0]``.

        Raises
        ------
        ValueError
            If the maps have no or three and more feature dimensions, ``n`` is
            not between 1 and the number of components, ``values`` has no
            ``component`` dimension, or both ``values`` and ``unweighted``
            are given.
        ImportError
            If ``projection`` or ``coastlines`` is given and cartopy is not
            installed.

        Examples
        --------
        >>> import xsvd
        >>> from xsvd.plot import ResultPlotter
        >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=18, n_lon=36)
        >>> res = sst.svd(k=4, dim="time", center=True)
        >>> fig = ResultPlotter(res).components(n=4)  # doctest: +SKIP
        >>> fig.savefig("patterns.png")  # doctest: +SKIP

        The patterns on the grid, without the area weights, on a map
        projection with coastlines (needs cartopy):

        >>> import numpy as np
        >>> w = np.sqrt(np.cos(np.deg2rad(sst.lat)))
        >>> res = sst.svd(k=4, dim="time", center=True, weights=w)
        >>> import cartopy.crs as ccrs  # doctest: +SKIP
        >>> fig = res.plot.components(
        ...     n=4, unweighted=True, projection=ccrs.Robinson(), coastlines=True
        ... )  # doctest: +SKIP

        Any maps per component, e.g. the correlation of the data with each PC:

        >>> import xarray as xr
        >>> corr = xr.corr(sst, res.U, dim="time")
        >>> corr.attrs = {"long_name": "correlation with the PC", "units": "1"}
        >>> fig = res.plot.components(values=corr)  # doctest: +SKIP

        Zonal means give one feature dimension, ``lat``, hence lines:

        >>> zonal = sst.mean("lon").svd(k=3, dim="time", center=True)
        >>> fig = ResultPlotter(zonal).components()  # doctest: +SKIP
        """
        res = self._res
        if values is not None:
            if unweighted:
                raise ValueError(
                    "values= plots the given maps instead of V; unweighted=True (V / weights) "
                    "does not apply to them. Divide them yourself, or leave out one option."
                )
            data = _check_values(values)
            label = _coord_label(data)
            title = _name_of(data) or "Maps per component"
        else:
            data = res.V
            label = "pattern (V / weights)" if unweighted else "pattern (V)"
            title = _titled("Leading components", res) + (" (V / weights)" if unweighted else "")
        feature_dims = [d for d in data.dims if d != COMPONENT]
        if len(feature_dims) not in (1, 2):
            what = "values" if values is not None else "V"
            shown = ", ".join(map(repr, feature_dims)) or "none"
            raise ValueError(
                f"components() draws lines for one feature dimension and maps for two, "
                f"but {what} has {len(feature_dims)} feature dimension(s): {shown}. Select or "
                f"reduce the features first (e.g. decompose da.isel({feature_dims[0]}=0) or "
                f"da.mean({feature_dims[0]!r}) instead), or plot res.V yourself."
                if feature_dims
                else f"components() needs {what} to have at least one feature dimension; "
                "it has none."
            )
        n = _check_n(n, data.sizes[COMPONENT])
        data = data.isel({COMPONENT: slice(0, n)})
        if unweighted:
            weights = _weights_of(res)
            if weights is not None:
                data = data / weights.where(weights != 0)
        data, evr = _materialize(data, res.explained_variance_ratio)
        data = data.rename(None)
        ratios = dict(zip(_component_values(evr), evr.values, strict=True))
        titles = [
            _component_label(c, ratios[c]) if c in ratios else f"{COMPONENT} {c}"
            for c in _component_values(data)
        ]
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
        return _lines(data, feature_dims[0], titles, label, title, kwargs)

    # ------------------------------------------------------------ timeseries
    def timeseries(
        self,
        n: int = 3,
        *,
        scaling: str | None = None,
        overlay: bool = False,
        sharey: bool = True,
        ax: Axes | None = None,
        **kwargs,
    ) -> Figure:
        """The leading principal components (columns of ``U``) against the sample coordinate.

        One panel per component, stacked with a shared horizontal axis (or
        all on one axes with ``overlay=True``), each labeled with its
        component and explained variance in percent. The horizontal axis is
        the coordinate of the sample dimension (e.g. ``time``: datetimes, and
        cftime dates of any calendar, drawn with nc-time-axis when it is
        installed, else as real dates for the standard calendars and as
        decimal years for the others), or the position along it when it has
        no numeric or time coordinate.

        Parameters
        ----------
        n : int, default 3
            Plot components ``0 .. n-1``.
        scaling : {None, "unit", "singular"}, default None
            None: ``U`` as it is (unit-norm columns). ``"unit"``: unit
            variance, ``U * sqrt(n_samples - 1)`` (the standardized PCs of
            centered data, as eofs' ``pcscaling=1``). ``"singular"``:
            ``U * S``, the PCs in the units of the (weighted) data.
        overlay : bool, default False
            All components on one axes, with a legend, instead of one panel
            each.
        sharey : bool, default True
            Panels share one vertical scale (ignored with ``overlay``).
        ax : matplotlib.axes.Axes, optional
            Axes to draw on, with ``overlay=True`` or ``n=1``; default a new
            figure.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot` (``lw``, ``color``,
            ``marker``, ...).

        Returns
        -------
        matplotlib.figure.Figure
            Its axes hold one line each (one per component), in component
            order; with ``overlay=True`` one axes with all lines and a legend.

        Raises
        ------
        ValueError
            If ``U`` has more than one sample dimension, ``n`` is not between
            1 and the number of components, ``scaling`` is unknown, or ``ax``
            is given for several panels.

        Examples
        --------
        >>> import xsvd
        >>> from xsvd.plot import ResultPlotter
        >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=18, n_lon=36)
        >>> res = sst.svd(k=4, dim="time", center=True)
        >>> fig = ResultPlotter(res).timeseries(n=3, scaling="unit")  # doctest: +SKIP
        >>> fig.savefig("pcs.png")  # doctest: +SKIP
        """
        plt = _pyplot()
        res = self._res
        U = res.U
        sdim = _single_sample_dim(U, "timeseries() plots each component along one sample dimension")
        n = _check_n(n, U.sizes[COMPONENT])
        if scaling not in _SCALINGS:
            raise ValueError(
                f"scaling must be one of {list(_SCALINGS)}, got {scaling!r}: None for U as it "
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
        sel, evr, S = _materialize(sel, res.explained_variance_ratio.isel(idx), S.isel(idx))
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
        labels = [
            _component_label(c, p) for c, p in zip(_component_values(sel), evr.values, strict=True)
        ]
        title = _titled("Principal components", res)
        if len(x) > 2_000:
            kwargs.setdefault("lw", 0.7)

        if overlay or n == 1:
            if ax is None:
                _, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
            for row, label in zip(data, labels, strict=True):
                ax.plot(x, row, label=label, **kwargs)
            _zero_line(ax)
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
            _zero_line(panel)
            panel.set_title(label, loc="left", fontsize="medium")
        axs[-1, 0].set_xlabel(xlabel)
        fig.supylabel(ylabel, fontsize="medium")
        fig.suptitle(title)
        return fig

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
        sdim = _single_sample_dim(U, "scores() plots one point per sample")
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
    arrays = backend.compute(*arrays)
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
    dimensionless = str(units).strip() in ("", "1", "dimensionless")
    return name if units is None or dimensionless else f"{name} [{units}]"


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


def _single_sample_dim(U: xr.DataArray, what: str):
    sample_dims = [d for d in U.dims if d != COMPONENT]
    if len(sample_dims) != 1:
        raise ValueError(
            f"{what} and needs a single sample dimension, but U has {len(sample_dims)}: "
            f"{', '.join(map(repr, sample_dims))}. Stack them before decomposing, e.g. "
            f"da.stack(sample={tuple(sample_dims)!r}) with dim='sample', or plot res.U yourself."
        )
    return sample_dims[0]


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


def _name_of(da: xr.DataArray) -> str | None:
    name = da.attrs.get("long_name") or da.attrs.get("standard_name") or da.name
    return None if name is None else str(name)


def _weights_of(res) -> xr.DataArray | None:
    """The result's feature weights, labeled over the feature dims (None when unweighted)."""
    weights = getattr(res, "weights", None)
    if isinstance(weights, xr.DataArray):
        return _units.dequantify(weights)
    raw = getattr(res, "_weights", None)
    if raw is None:
        return None
    return res._layout.label_feature_vector(backend.to_numpy(raw), "weights")


def _zero_line(ax) -> None:
    ax.axhline(0.0, color="0.6", lw=0.6, zorder=0, label="_zero")


def _sample_axis(U: xr.DataArray, sdim) -> tuple[np.ndarray, str]:
    """Horizontal positions and axis label for the samples of ``U``.

    The sample coordinate when it is numeric or a time (datetime64, or cftime
    dates: see :func:`_cftime_positions`), else the positions 0, 1, ...
    """
    if sdim in U.coords:
        coord = U[sdim]
        values = np.asarray(coord.values)
        if values.dtype.kind in "iufM":
            return values, _coord_label(coord)
        if values.dtype.kind == "m":
            return values / np.timedelta64(1, "D"), f"{_name_of(coord)} [days]"
        if values.dtype.kind == "O":
            converted = _cftime_positions(values)
            if converted is not None:
                x, note = converted
                return x, f"{_coord_label(coord)} [{note}]" if note else _coord_label(coord)
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


def _color_limits(values: np.ndarray, robust: bool) -> tuple[float, float, bool]:
    """Default (vmin, vmax, two_signed): symmetric around 0 when the values take both signs."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    lim = _symmetric_limit(a, robust)
    if a.size and a.min() >= 0 and a.max() > 0:
        return 0.0, lim, False
    if a.size and a.max() <= 0 and a.min() < 0:
        return -lim, 0.0, False
    return -lim, lim, True


def _auto_col_wrap(n: int) -> int:
    """Maps per row: one row up to 3, then about square (2 x 2 for 4, 3 x 2 for 6)."""
    return n if n <= 3 else int(np.ceil(np.sqrt(n)))


def _maps(V, titles, text, geo, col_wrap, cmap, robust, nan_color, kwargs):
    _pyplot()
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

    if col_wrap is None:
        col_wrap = _auto_col_wrap(n)
    if not _is_int(col_wrap) or col_wrap < 1:
        raise ValueError(f"col_wrap must be a positive integer (maps per row), got {col_wrap!r}.")
    ncol = min(n, col_wrap)
    nrow = -(-n // ncol)
    if "figsize" not in kwargs:
        size = kwargs.pop("size", 2.3)
        aspect = kwargs.pop("aspect", _panel_aspect(V, fdims, projection if geographic else None))
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
        fg.axs.flat, fg.name_dicts.flat, _pad(titles, fg.axs.size), strict=True
    ):
        if names is None:
            fig.delaxes(ax)  # an empty slot of the last row
            continue
        panels.append(ax)
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


def _panel_aspect(V, fdims, projection=None) -> float:
    """Width over height of one map: from a global map projection's extent, else the coords."""
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


def _lines(V, fdim, titles, label, title, kwargs):
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
    for row, name in zip(data, titles, strict=True):
        ax.plot(xvals, row, label=name, **kwargs)
    _zero_line(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax.figure
