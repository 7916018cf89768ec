"""One base for every result: the interface each analysis shares, and one hook to differ by.

Every analysis (the SVD itself, multivariate, MCA, extended and Hilbert EOF,
bootstrap, rotation) returns a subclass of :class:`Result`, so a user who
knows one knows them all:

==========================  ===================================================
member                      meaning
==========================  ===================================================
``U, S, V = res``           the decomposition (or its documented two-sided
                            analogue: MCA's left and right patterns)
``S``                       singular values, pint-quantified where the data were
``singular_values``         ``S`` as plain numbers
``explained_variance_ratio``  each component's share (MCA: of the squared
                            covariance); ``0 / 0`` is NaN
``errors``                  estimated errors per component (a Dataset)
``method``, ``settings``    which solver ran, with which options
``compute()``/``persist()``  computed copies of lazy results
``as_numpy()``/``as_cupy()``  copies in host or GPU memory
``plot``                    plots (:class:`xsvd.plot.ResultPlotter`)
``to_dataset()``,           the saved form; :func:`xsvd.open_result` gives the
``to_zarr(path)``           same class back with the same numbers, coordinates
                            and units
``reconstruct(k)``,         where defined, undoing weights and mean; elsewhere
``project(data)``           an error that says why
==========================  ===================================================

A subclass says what it is made of through one hook, :meth:`Result.state`
(its labeled parts and a JSON-able record) and its inverse
:meth:`Result.from_state`; the base derives copies (computed, persisted,
moved between memories) and the saved form (:mod:`xsvd.io.parts`) from them.
:class:`~xsvd.SVDResult` keeps its own saved form (format 5) and lazy
machinery, and overrides those members.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import xarray as xr

from ..core import backend
from ..core.common import variance_ratio
from . import units
from .layout import COMPONENT

__all__ = ["Result", "RESULT_CLASSES", "errors_dataset", "ERROR_COLUMNS", "component_array"]

#: Every result class by name, for :func:`xsvd.open_result` (filled as classes are defined).
RESULT_CLASSES: dict[str, type[Result]] = {}
#: The columns of the error estimates: of ``S``, of the vectors (an angle), the residual.
ERROR_COLUMNS = ("S", "angle", "residual")
#: The dimension of the error estimates' columns in a result's parts.
ESTIMATE = "estimate"


class Result:
    """The interface every xsvd result has (see the module's table).

    Subclasses define :meth:`state` and :meth:`from_state` (or override the
    members that use them), ``singular_values``, ``explained_variance_ratio``
    and ``U``/``S``/``V``; where ``reconstruct`` or ``project`` is not
    defined, ``RECONSTRUCT`` / ``PROJECT`` say why.
    """

    #: Why :meth:`reconstruct` is not defined for this kind of result (None: it is).
    RECONSTRUCT: ClassVar[str | None] = None
    #: Why :meth:`project` is not defined for this kind of result (None: it is).
    PROJECT: ClassVar[str | None] = None
    #: Parts whose coordinates are their own (another grid with the same dim names):
    #: name -> group; saved with the group's prefix so that they never clash.
    GROUPS: ClassVar[dict[str, str]] = {}

    method: str
    settings: dict

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        RESULT_CLASSES[cls.__name__] = cls

    # ---------------------------------------------------------------- hook
    def __init__(self, parts: dict[str, Any], record: dict):
        """A result made of labeled ``parts`` (plain numbers: units are in the record) and
        a JSON-able ``record`` (``settings``, ``method`` and, for quantified data,
        ``units`` as :func:`xsvd.labeled.units.describe` writes them)."""
        self._parts = dict(parts)
        self._record = dict(record)
        self.settings = dict(record["settings"])
        self.method = record.get("method", self.settings.get("method"))

    def state(self) -> tuple[dict[str, Any], dict]:
        """``(parts, record)``: the labeled parts (DataArrays, or nested results) and a
        JSON-able record (settings, method, sizes, units) from which :meth:`from_state`
        rebuilds this result."""
        return dict(self._parts), dict(self._record)

    @classmethod
    def from_state(cls, parts: dict[str, Any], record: dict) -> Result:
        """The result that :meth:`state` described."""
        return cls(parts, record)

    # ------------------------------------------------------------- units
    @property
    def units(self) -> units.Units | None:
        """The pint units of the decomposed data (:class:`xsvd.labeled.units.Units`), or
        None for plain data."""
        return units.restore(self.__dict__.get("_record", {}).get("units"))

    def unit_of(self, which: str):
        """Pint units of ``"data"``, ``"singular"`` or ``"variance"``; None when plain."""
        found = self.units
        return None if found is None else getattr(found, which)

    @property
    def S(self) -> xr.DataArray:
        """The singular values, pint-quantified where the data were (plain:
        :attr:`singular_values`)."""
        if "_S_labeled" in self.__dict__:  # a result that labels its S when it is made
            return self.__dict__["_S_labeled"]
        return units.quantify(self.singular_values, self.unit_of("singular"))

    @S.setter
    def S(self, value: xr.DataArray) -> None:
        self.__dict__["_S_labeled"] = value

    def group_of(self, part: str) -> str:
        """The coordinate group of a part (``""``: the result's own coordinates)."""
        return self.GROUPS.get(part, "")

    def _again(self, parts: dict[str, Any], record: dict) -> Result:
        """This kind of result made of other parts (a computed or moved copy); subclasses
        that hold more than their parts (e.g. the input, for later reads) pass it on."""
        return type(self).from_state(parts, record)

    # ------------------------------------------------------------ protocol
    def __iter__(self):
        return iter((self.U, self.S, self.V))

    def __len__(self) -> int:
        return 3

    @property
    def k(self) -> int:
        """The number of components."""
        return int(self.singular_values.sizes[COMPONENT])

    @property
    def singular_values(self) -> xr.DataArray:
        """``S`` as plain numbers (never pint-quantified)."""
        return self._parts["S"]

    def error_values(self):
        """The estimated errors as a (k x 3) NumPy array (columns ``ERROR_COLUMNS``), or
        None where they are not known (a result made of parts: its ``errors`` part)."""
        return errors_from_part(self.__dict__.get("_parts", {}).get("errors"))

    @property
    def errors(self) -> xr.Dataset:
        """Estimated errors per component, labeled like ``S``: ``S`` (absolute),
        ``S_relative``, ``angle`` (radians, of the singular vectors) and ``residual``
        (relative); zero for an exact solver, NaN where not known.
        ``attrs["error_bounds"]`` is 0 where they are rough estimates, not bounds (see
        :attr:`xsvd.SVDResult.errors`)."""
        return errors_dataset(self.singular_values, self.error_values(), self.settings)

    # ------------------------------------------------------------ copies
    def _rebuilt(self, convert) -> Result:
        """The same result with every part converted by ``convert(DataArray)`` (nested
        results by the same method of theirs, named by ``convert.__name__``)."""
        parts, record = self.state()
        out = {}
        for name, part in parts.items():
            if isinstance(part, Result):
                out[name] = getattr(part, convert.__name__)()
            else:
                out[name] = None if part is None else convert(part)
        return self._again(out, record)

    def compute(self, **kwargs) -> Result:
        """A computed copy (every lazy part in one Dask computation)."""
        parts, record = self.state()
        lazy = {n: p for n, p in parts.items() if isinstance(p, xr.DataArray) and p.chunks}
        nested = {n: p.compute(**kwargs) for n, p in parts.items() if isinstance(p, Result)}
        if not lazy and all(nested[n] is parts[n] for n in nested):
            return self
        done = dict(zip(lazy, backend.compute(*lazy.values(), **kwargs), strict=True))
        return self._again({**parts, **done, **nested}, record)

    def persist(self, **kwargs) -> Result:
        """A copy whose lazy parts are computed and kept in (cluster) memory."""
        parts, record = self.state()
        lazy = {n: p for n, p in parts.items() if isinstance(p, xr.DataArray) and p.chunks}
        nested = {n: p.persist(**kwargs) for n, p in parts.items() if isinstance(p, Result)}
        kept = dict(zip(lazy, backend.persist(*lazy.values(), **kwargs), strict=True))
        return self._again({**parts, **kept, **nested}, record)

    def as_numpy(self) -> Result:
        """A copy in host memory (NumPy; lazy parts: Dask arrays of NumPy chunks)."""

        def as_numpy(x):
            return x.copy(data=backend.move(x.data, "cpu"))

        return self._rebuilt(as_numpy)

    def as_cupy(self) -> Result:
        """A copy on the GPU (CuPy; lazy parts: Dask arrays of CuPy chunks).

        Needs CuPy (``pip install "xsvd[gpu]"``) and a CUDA device.
        """

        def as_cupy(x):
            return x.copy(data=backend.move(x.data, "gpu"))

        return self._rebuilt(as_cupy)

    # ------------------------------------------------------------- plots
    @property
    def plot(self):
        """Plots of this result: ``res.plot.scree()``, ``.components()``, ``.scores()``.

        Needs matplotlib (``pip install "xsvd[plot]"``); see :class:`xsvd.plot.ResultPlotter`.
        """
        from ..plot import ResultPlotter

        return ResultPlotter(self.as_numpy())

    # ------------------------------------------------------- saved form
    def to_dataset(self) -> xr.Dataset:
        """Everything that restores this result, as one Dataset (computed, host memory).

        Reopen with :meth:`from_dataset`, or :func:`xsvd.open_result` for a
        saved store or file (:mod:`xsvd.io.parts` describes the form).
        """
        from ..io import results

        return results.result_to_dataset(self)

    def to_zarr(self, path, *, mode: str = "w-") -> None:
        """Save this result as a Zarr store; reopen with :func:`xsvd.open_result`.

        A lazy result is computed first. Local writes are atomic (a failure
        leaves no partial store); an existing store is replaced only with
        ``mode="w"``, and only when it is an xsvd result (or an empty folder):
        anything else at ``path`` is refused, never deleted
        (:func:`xsvd.io.write_store`). Needs ``pip install "xsvd[io]"``.
        """
        from ..io import results

        results.write_result(self, path, mode=mode)

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> Result:
        """The result saved in ``ds`` by :meth:`to_dataset` (loaded into memory), of the
        class that saved it."""
        from ..io import results

        return results.result_from_dataset(ds)

    # --------------------------------------------------- rebuild, project
    def reconstruct(self, k: int | None = None):
        """The rank-``k`` approximation of the data, labeled like the input (weights and
        mean undone), where this kind of result defines one."""
        raise ValueError(f"{type(self).__name__}.reconstruct() is not defined: {self.RECONSTRUCT}")

    def project(self, other, **kwargs):
        """Scores of new data on these components, where this kind of result defines them."""
        raise ValueError(f"{type(self).__name__}.project() is not defined: {self.PROJECT}")

    def _check_k(self, k) -> int:
        """``k`` of :meth:`reconstruct`: all components by default, else 1 to all."""
        kmax = self.k
        if k is None:
            return kmax
        if isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise TypeError(
                f"k must be an integer between 1 and {kmax} (the number of components to "
                f"use), got {k!r} ({type(k).__name__}); omit it for all {kmax}."
            )
        if not 1 <= k <= kmax:
            raise ValueError(f"k must be an integer between 1 and {kmax}, got {k!r}.")
        return int(k)


def component_array(values, name: str, attrs: dict | None = None, *, like=None) -> xr.DataArray:
    """``values`` (one per component) on the ``component`` coordinate (counting from 1),
    or that of ``like``."""
    values = np.asarray(backend.to_numpy(values))
    if like is not None:
        coords = {COMPONENT: like[COMPONENT].values[: values.shape[0]]}
    else:
        coords = {COMPONENT: np.arange(1, values.shape[0] + 1)}
    return xr.DataArray(values, dims=(COMPONENT,), coords=coords, name=name, attrs=attrs or {})


def ratio(S, total) -> np.ndarray:
    """Each component's share ``S**2 / total`` (``0 / 0``: NaN), as every result gives it."""
    S = np.asarray(backend.to_numpy(S), dtype=np.float64)
    total = np.asarray(backend.to_numpy(total), dtype=np.float64)
    return np.asarray(variance_ratio(S, total, np.sqrt(total)), dtype=np.float64)


def errors_dataset(S: xr.DataArray, errors, settings: dict) -> xr.Dataset:
    """The error estimates ``errors`` (k x 3 or None: unknown) of the plain singular values
    ``S``, as :attr:`Result.errors` gives them."""
    k = S.sizes[COMPONENT]
    e = np.full((k, 3), np.nan) if errors is None else np.asarray(backend.to_numpy(errors), float)
    dims, coords = (COMPONENT,), {COMPONENT: S[COMPONENT].values}
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = e[:, 0] / np.asarray(backend.to_numpy(S.data), dtype=float)
    s_attrs = {"long_name": "estimated error of the singular values"}
    if "units" in S.attrs:
        s_attrs["units"] = S.attrs["units"]
    data = {
        "S": (dims, e[:, 0], s_attrs),
        "S_relative": (dims, relative, {"long_name": "estimated relative error of S"}),
        "angle": (
            dims,
            e[:, 1],
            {"long_name": "bound on the angle of the singular vectors", "units": "radian"},
        ),
        "residual": (dims, e[:, 2], {"long_name": "relative residual ||B^T u - s v|| / s"}),
    }
    bounds = settings.get("error_bounds", True) and errors is not None
    return xr.Dataset(data, coords=coords, attrs={} if bounds else {"error_bounds": 0})


def errors_part(S: xr.DataArray, errors) -> xr.DataArray | None:
    """The error estimates as a part (component x estimate), for :meth:`Result.state`."""
    if errors is None:
        return None
    return xr.DataArray(
        np.asarray(backend.to_numpy(errors), dtype=np.float64),
        dims=(COMPONENT, ESTIMATE),
        coords={COMPONENT: S[COMPONENT].values, ESTIMATE: list(ERROR_COLUMNS)},
        name="errors",
    )


def errors_from_part(part: xr.DataArray | None):
    """The (k x 3) array of :func:`errors_part`, or None."""
    return None if part is None else np.asarray(part.transpose(COMPONENT, ESTIMATE).values)
