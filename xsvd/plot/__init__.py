"""Plots of an :class:`~xsvd.SVDResult`: scree, component maps, PC time series, scores.

matplotlib is optional (``pip install "xsvd[plot]"``); it is imported only when
a plot is drawn. Nothing here selects a backend or changes ``rcParams``. Map
projections and coastlines need cartopy (``pip install cartopy``); cftime
dates are drawn as dates of their own calendar with nc-time-axis when it is
installed (``pip install nc-time-axis``), else as dates with the same year,
month and day. Components are named as papers and PLINK name them, from 1:
"EOF 1" over maps, "PC 1" over time series, "PC1" on score axes.

Every plot works on computed (NumPy) and lazy (Dask) results alike. For a lazy
result only what is drawn is computed, in one Dask computation per plot, e.g.
two columns of ``U`` and two explained-variance ratios for :meth:`ResultPlotter.scores`.
Each such computation runs the decomposition again: call ``res.compute()`` (or
``res.persist()``) once before drawing several plots of a large lazy result.

The drawing lives in modules by what they draw: :mod:`xsvd.plot.lines`
(scree, time series, patterns along one dimension), :mod:`xsvd.plot.maps`
(component maps), :mod:`xsvd.plot.scatter` (scores), sharing
:mod:`xsvd.plot.common`.

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
>>> ax = p.scores(1, 2, hue="month")    # doctest: +SKIP
"""

from __future__ import annotations

from .plotter import ResultPlotter

__all__ = ["ResultPlotter"]
