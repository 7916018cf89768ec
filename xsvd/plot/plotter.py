"""The :class:`ResultPlotter` of a result (``res.plot``): one thin method per kind of plot.

The methods hold the documentation and forward to the module that checks
the arguments and draws: :mod:`xsvd.plot.lines` (scree, time series),
:mod:`xsvd.plot.maps` (components), :mod:`xsvd.plot.scatter` (scores).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import xarray as xr

from . import lines, maps, scatter

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ResultPlotter"]


class ResultPlotter:
    """Plots of one SVD result.

    Parameters
    ----------
    result : xsvd.SVDResult or xsvd.rotation.RotatedResult
        The decomposition to plot (computed or lazy). Its ``U``, ``S``,
        ``V``, ``explained_variance_ratio``, ``weights`` and
        ``layout.name`` are used.

    Notes
    -----
    Components are named by their ``component`` coordinate, which counts
    from 1 as papers and PLINK do (EOF 1, PC1): the same values that select
    them, e.g. ``res.V.sel(component=1)``, and that ``x`` and ``y`` of
    :meth:`scores` take. ``n`` is a number of leading components.

    Examples
    --------
    >>> import xsvd
    >>> from xsvd.plot import ResultPlotter
    >>> gt = xsvd.datasets.genotypes(2_000, 90)
    >>> res = gt.svd(k=5, dim="samples", center=True)
    >>> plotter = ResultPlotter(res)
    >>> ax = plotter.scores(1, 2, hue="population")  # doctest: +SKIP
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
        return lines.scree(self._res, ax, cumulative, log)

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
        robust: bool = False,
        nan_color: Any = "0.8",
        **kwargs,
    ) -> Figure:
        """The patterns ``V`` of the leading components (or other maps): maps or lines.

        * **Two feature dimensions** (e.g. ``lat``, ``lon``): one map per
          component (``DataArray.plot`` with ``col="component"``, so a
          pcolormesh in an xarray FacetGrid), with one shared colorbar. Each
          panel is titled with the component and its explained variance in
          percent (``"EOF 1 (62.2%)"``). Maps over longitude and latitude
          (found by CF's ``standard_name`` or ``units``, or by name) have
          longitude across and a fixed aspect, ``1 / cos`` of the middle
          latitude (a global map is twice as wide as high). Features that
          are NaN (land in an ocean field) stay NaN and show as
          ``nan_color``. The grid has no empty panels where it can
          (2 x 2 for 4 maps, 3 x 2 for 6); panels left over are removed.
        * **One feature dimension**: one line per component on a single axes,
          against the feature coordinate, with a legend.
        * Three or more feature dimensions: ValueError; select or reduce the
          features first.

        Parameters
        ----------
        n : int, optional
            Plot the ``n`` leading components (EOF 1 to EOF n). Default: all
            computed components (or all in ``values``), at most 6.
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
        robust : bool, default False
            Maps: the color limits are ``±`` the largest absolute value (over
            the plotted components), so no value is clipped (the maximum of a
            pattern, such as the El Niño tongue, keeps its color). True: ``±``
            the 98th percentile instead, so that a few extreme cells do not
            wash out the maps; the colorbar then has arrow ends. Ignored for
            lines.
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

        >>> w = xsvd.coslat_weights(sst)  # sqrt(cos(lat))
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
        return maps.components(
            self._res,
            n,
            unweighted=unweighted,
            values=values,
            projection=projection,
            coastlines=coastlines,
            col_wrap=col_wrap,
            cmap=cmap,
            robust=robust,
            nan_color=nan_color,
            kwargs=kwargs,
        )

    # ------------------------------------------------------------ timeseries
    def timeseries(
        self,
        n: int = 3,
        *,
        scaling: str | None = "unit",
        overlay: bool = False,
        sharey: bool = True,
        ax: Axes | None = None,
        **kwargs,
    ) -> Figure:
        """The leading principal components against the sample coordinate, standardized.

        One panel per component, stacked with a shared horizontal axis (or
        all on one axes with ``overlay=True``), each labeled with its
        component and explained variance in percent (``"PC 1 (62.2%)"``). By
        default the PCs are standardized (unit variance), as papers show them;
        ``scaling="U"`` draws the unit-norm columns of ``U``. The horizontal
        axis is the coordinate of the sample dimension (e.g. ``time``:
        datetimes, and cftime dates of any calendar, ``noleap`` and
        ``360_day`` included, drawn with nc-time-axis when it is installed,
        else as dates with date ticks: "2002", "Apr", "Jul"), or the position
        along it when it has no numeric or time coordinate.

        Parameters
        ----------
        n : int, default 3
            Plot the ``n`` leading components (PC 1 to PC n).
        scaling : {"unit", "U", "singular"}, default "unit"
            ``"unit"``: standardized PCs, ``U * sqrt(n_samples - 1)``, of unit
            variance (``ddof=1``) for centered data (eofs' ``pcscaling=1``,
            ``res.pcs(scaling="unit")``). ``"U"`` (or None, which meant it
            before): ``U`` as it is, unit-norm columns. ``"singular"``:
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
        >>> fig = ResultPlotter(res).timeseries(n=3)  # doctest: +SKIP
        >>> fig.savefig("pcs.png")  # doctest: +SKIP
        """
        return lines.timeseries(
            self._res, n, scaling=scaling, overlay=overlay, sharey=sharey, ax=ax, kwargs=kwargs
        )

    # ---------------------------------------------------------------- scores
    def scores(
        self,
        x: int = 1,
        y: int = 2,
        *,
        hue: str | None = None,
        ax: Axes | None = None,
        categorical: bool | None = None,
        **kwargs,
    ) -> Axes:
        """Scatter of the samples' scores ``U[:, x]`` against ``U[:, y]``.

        Parameters
        ----------
        x, y : int, default 1 and 2
            Components on the horizontal and vertical axis, by their label
            in the ``component`` coordinate, counted from 1: ``scores(1, 2)``
            is PC1 against PC2.
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
            Axis labels read ``"PC1 (12.3%)"``, as PLINK-style plots do.

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
        >>> ax = ResultPlotter(res).scores(1, 2, hue="population")  # doctest: +SKIP
        >>> ax.figure.savefig("pca.png", bbox_inches="tight")  # doctest: +SKIP
        """
        return scatter.scores(
            self._res, x, y, hue=hue, ax=ax, categorical=categorical, kwargs=kwargs
        )
