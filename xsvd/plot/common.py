"""What every plot shares: matplotlib on demand, labels of components and coordinates, checks.

The plots read a result only through its public interface: ``U``, ``S``,
``V``, ``explained_variance_ratio``, ``weights`` and ``layout.name`` (the
name of the decomposed data, for titles), so that an
:class:`~xsvd.SVDResult` and a :class:`~xsvd.rotation.RotatedResult` plot
alike.
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from ..core import backend
from ..labeled import units as _units
from ..labeled.layout import COMPONENT, component_labels

__all__ = [
    "DEFAULT_N_COMPONENTS",
    "MISSING_MPL",
    "check_component_label",
    "check_n",
    "component_label",
    "component_values",
    "coord_label",
    "date_ticks",
    "is_int",
    "legend_outside",
    "materialize",
    "name_of",
    "pyplot",
    "sig3",
    "single_sample_dim",
    "titled",
    "weights_of",
    "zero_line",
]

#: The error of a plot drawn without matplotlib.
MISSING_MPL = 'Plotting needs matplotlib: pip install "xsvd[plot]"'
#: Components drawn by default (``n=None``).
DEFAULT_N_COMPONENTS = 6


def pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(MISSING_MPL) from err
    return plt


# ------------------------------------------------------------------ data
def materialize(*arrays: xr.DataArray) -> tuple[xr.DataArray, ...]:
    """The arrays in memory as NumPy: lazy ones computed together, CuPy copied."""
    arrays = backend.compute(*arrays)
    return tuple(a.as_numpy() for a in arrays)


def weights_of(res) -> xr.DataArray | None:
    """The result's feature weights, labeled over the feature dims (None when unweighted)."""
    weights = res.weights
    return None if weights is None else _units.dequantify(weights)


def component_values(da: xr.DataArray) -> list:
    """The ``component`` labels of ``da`` as Python scalars (1, 2, ... without a coordinate)."""
    if COMPONENT in da.coords:
        return [v.item() if hasattr(v, "item") else v for v in da[COMPONENT].values]
    return [int(v) for v in component_labels(da.sizes[COMPONENT])]


# ---------------------------------------------------------------- labels
def _percent(ratio) -> str:
    """``0.6224 -> "62.2%"``, ``0.08 -> "8.00%"``, ``2.06e-5 -> "0.00206%"``."""
    return f"{sig3(100.0 * float(ratio))}%"


def sig3(v: float) -> str:
    """Three significant digits, trailing zeros kept (``8.00``, ``100``)."""
    return f"{v:#.3g}".rstrip(".")


def component_label(comp, ratio=None, *, prefix: str = "EOF ") -> str:
    """``"EOF 1 (62.2%)"``, ``"PC1 (10.2%)"``: a component's name and its share of the variance.

    ``prefix`` names the kind (``"EOF "`` for patterns, ``"PC "`` for time
    series, ``"PC"`` for PLINK-style score axes); ``comp`` is the component's
    label (counted from 1). Without ``ratio``: the name alone.
    """
    name = f"{prefix}{comp}"
    return name if ratio is None else f"{name} ({_percent(ratio)})"


def titled(what: str, res) -> str:
    """``what``, followed by ``" of <name>"`` when the decomposed data had a name."""
    name = getattr(getattr(res, "layout", None), "name", None)
    return what if name is None else f"{what} of {name}"


def name_of(da: xr.DataArray) -> str | None:
    """The ``long_name`` (or ``standard_name``, or name) of ``da``; None when it has none."""
    name = da.attrs.get("long_name") or da.attrs.get("standard_name") or da.name
    return None if name is None else str(name)


def coord_label(da: xr.DataArray) -> str:
    """An axis label for ``da``: its long name and, unless dimensionless, ``[units]``."""
    name = str(name_of(da))
    units = da.attrs.get("units")
    dimensionless = str(units).strip() in ("", "1", "dimensionless")
    return name if units is None or dimensionless else f"{name} [{units}]"


def date_ticks(axis, dates: bool = True) -> None:
    """Concise date tick labels ("2002", "Apr", "Jul") on a matplotlib axis of dates."""
    if not dates:
        return
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def legend_outside(ax, x: float, **kwargs):
    """A legend right of ``ax`` (its left edge at ``x`` in axes fractions): it covers no data."""
    return ax.legend(
        loc="upper left",
        bbox_to_anchor=(x, 1.0),
        borderaxespad=0.0,
        fontsize="small",
        frameon=False,
        **kwargs,
    )


def zero_line(ax) -> None:
    """A thin grey horizontal line at 0, behind the data and left out of legends."""
    ax.axhline(0.0, color="0.6", lw=0.6, zorder=0, label="_zero")


# ---------------------------------------------------------------- checks
def is_int(v) -> bool:
    """Whether ``v`` is an integer (booleans are not)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def check_n(n, k: int) -> int:
    """``n=`` of a plot: the number of leading components to draw, out of ``k``."""
    if n is None:
        return min(k, DEFAULT_N_COMPONENTS)
    if not is_int(n) or not 1 <= n <= k:
        raise ValueError(f"n must be an integer between 1 and {k} (the components), got {n!r}.")
    return int(n)


def check_component_label(name: str, c, labels: list) -> int:
    """The position of the component labeled ``c`` (counted from 1, as ``PC1``) among ``labels``."""
    if is_int(c) and int(c) in labels:
        return labels.index(int(c))
    first, last = labels[0], labels[-1]
    hint = " (components count from 1, as PC1 and EOF1)" if c == 0 else ""
    raise ValueError(
        f"{name} must be a component label between {first} and {last}{hint}, got {c!r}: "
        f"the labels of the result's `component` coordinate."
    )


def single_sample_dim(U: xr.DataArray, what: str):
    """The one sample dimension of ``U``; ValueError, starting with ``what``, for several."""
    sample_dims = [d for d in U.dims if d != COMPONENT]
    if len(sample_dims) != 1:
        raise ValueError(
            f"{what} and needs a single sample dimension, but U has {len(sample_dims)}: "
            f"{', '.join(map(repr, sample_dims))}. Stack them before decomposing, e.g. "
            f"da.stack(sample={tuple(sample_dims)!r}) with dim='sample', or plot res.U yourself."
        )
    return sample_dims[0]
