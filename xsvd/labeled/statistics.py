"""The statistics that EOF papers report, from a result: one home for each.

:class:`~xsvd.SVDResult` (and :class:`~xsvd.rotation.RotatedResult`) forward
their methods here; these functions read only what a result holds:

- :func:`eigenvalues`: the variances of the components, ``S**2 / (n - ddof)``;
- :func:`pcs` and :func:`eofs`: principal components and EOFs with the
  scalings of the ``eofs`` package (``pcscaling`` / ``eofscaling`` 0, 1, 2,
  also by name);
- :func:`north_errors`: the typical errors of the eigenvalues of North et al.
  (1982);
- :func:`correlation_maps` and :func:`covariance_maps`: the PCs correlated
  with, or regressed on, a field at every grid point (eofs'
  ``eofsAsCorrelation`` / ``eofsAsCovariance``), lazily for Dask data;

Notation: ``n`` is the number of samples (the product of the sizes of the
sample dimensions), ``ddof`` the delta degrees of freedom (1 by default, as
in eofs and xeofs), ``lambda = S**2 / (n - ddof)`` the eigenvalues of the
(weighted) covariance matrix.

A result is read only through its public interface (:class:`ResultLike`):
``U``, ``V``, ``singular_values`` (plain ``S``), ``explained_variance_ratio``,
``unit_of(which)`` (pint units or None), ``units``, ``weights``,
``sample_dims``, ``feature_dims``, ``n_samples`` and ``input_attrs``.
:class:`~xsvd.SVDResult` and :class:`~xsvd.rotation.RotatedResult` both have
it, and get the methods of :class:`StatisticsMethods`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import xarray as xr

from ..core import backend
from . import moments
from . import units as _units
from .layout import COMPONENT, label_gap

__all__ = [
    "PC_SCALINGS",
    "EOF_SCALINGS",
    "eigenvalues",
    "pcs",
    "eofs",
    "north_errors",
    "correlation_maps",
    "covariance_maps",
    "ResultLike",
    "StatisticsMethods",
]

#: ``pcs(scaling=)``: name -> eofs' ``pcscaling`` code.
PC_SCALINGS = {"singular": 0, "unit": 1, "sqrt_eigenvalue": 2}
#: ``eofs(scaling=)``: name -> eofs' ``eofscaling`` code.
EOF_SCALINGS = {"none": 0, "inverse_sqrt_eigenvalue": 1, "sqrt_eigenvalue": 2}


# ------------------------------------------------------------------ checks
def _check_ddof(ddof, n: int) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, int | np.integer) or ddof < 0:
        raise ValueError(f"ddof must be a non-negative integer (usually 0 or 1), got {ddof!r}.")
    if ddof >= n:
        raise ValueError(
            f"ddof={ddof} leaves no degrees of freedom with {n} samples (the divisor is "
            f"n - ddof = {n - ddof}). Use ddof={'0 or 1' if n > 1 else '0'}."
        )
    return int(ddof)


def _scaling_code(scaling, names: dict, what: str, eofs_name: str) -> int:
    """eofs' integer code of a scaling given by name or by that code."""
    if isinstance(scaling, int | np.integer) and not isinstance(scaling, bool):
        if int(scaling) in names.values():
            return int(scaling)
    elif isinstance(scaling, str) and scaling in names:
        return names[scaling]
    choices = ", ".join(f"{name!r} ({code})" for name, code in names.items())
    raise ValueError(
        f"{what} scaling must be one of {choices}: a name or eofs' `{eofs_name}` code; "
        f"got {scaling!r}."
    )


# ------------------------------------------------------------ eigenvalues
def eigenvalues(res, *, ddof: int = 1) -> xr.DataArray:
    """The variance of each component, ``S**2 / (n - ddof)``.

    The eigenvalues of the covariance matrix of the (centered, weighted)
    data, as eofs' ``Eof.eigenvalues()`` (``ddof=1``, its default) and
    xeofs' ``explained_variance()``. Pint-quantified data give them in the
    units of ``S**2``.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> res = sst.svd(k=3, dim="time", center=True)
    >>> lam = res.eigenvalues()
    >>> bool(abs(lam - res.S**2 / 47).max() < 1e-9)
    True
    """
    n = res.n_samples
    ddof = _check_ddof(ddof, n)
    s = res.singular_values
    with np.errstate(over="ignore"):
        square = s**2
    # beyond float64's range S**2 is inf though S**2 / (n - ddof) may not be
    root = moments.scalar_like(np.sqrt(n - ddof), s)
    out = (square / (n - ddof)).where(moments.elementwise("isfinite", square), (s / root) ** 2)
    out.name = "eigenvalues"
    out.attrs = {"long_name": f"eigenvalues (variance of each component, ddof={ddof})"}
    units = res.unit_of("variance")
    if units is None and "units" in res.singular_values.attrs:
        out.attrs["units"] = f"({res.singular_values.attrs['units']})**2"
    return _units.quantify(out, units)


def _sqrt_eigenvalues(res, ddof: int):
    """``sqrt(lambda)`` as plain numbers (a DataArray over component)."""
    s = res.singular_values
    return s / moments.scalar_like(np.sqrt(res.n_samples - ddof), s)


def pcs(res, *, scaling: str | int = "singular", ddof: int = 1) -> xr.DataArray:
    """The principal components (PCs), scaled as in the eofs package.

    Parameters
    ----------
    scaling : {"singular", "unit", "sqrt_eigenvalue"} or {0, 1, 2}
        The names or eofs' ``pcscaling`` codes:

        - ``"singular"`` (0, eofs' default): ``U * S``, the projections of the
          (centered, weighted) data on the EOFs; xeofs'
          ``scores(normalized=False)``. In the units of ``S``.
        - ``"unit"`` (1): unit variance (``ddof``), ``U * sqrt(n - ddof)``;
          dimensionless.
        - ``"sqrt_eigenvalue"`` (2): ``U * S * sqrt(lambda)``, in the units of
          ``lambda``.

        ``U`` itself (unit norm) is xeofs' ``scores(normalized=True)``.
    ddof : int, default 1
        Delta degrees of freedom of ``lambda = S**2 / (n - ddof)``.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> res = sst.svd(k=3, dim="time", center=True)
    >>> pc = res.pcs(scaling="unit")
    >>> pc.std("time", ddof=1).values.round(6)
    array([1., 1., 1.])
    """
    code = _scaling_code(scaling, PC_SCALINGS, "PC", "pcscaling")
    n = res.n_samples
    ddof = _check_ddof(ddof, n)
    if code == 0:
        factor, power = res.singular_values, 1
    elif code == 1:
        factor, power = xr.DataArray(np.sqrt(n - ddof)), 0
    else:
        factor, power = res.singular_values * _sqrt_eigenvalues(res, ddof), 2
    out = res.U * _backend_like(factor, res.U)
    out.name = "pcs"
    what = {0: "U * S", 1: "unit variance", 2: "U * S * sqrt(eigenvalue)"}[code]
    out.attrs = {"long_name": f"principal components ({what})"}
    return _with_units(out, res, power)


def eofs(
    res, *, scaling: str | int = "none", ddof: int = 1, unweighted: bool = False
) -> xr.DataArray:
    """The EOFs (the patterns ``V``), scaled as in the eofs package.

    Parameters
    ----------
    scaling : {"none", "inverse_sqrt_eigenvalue", "sqrt_eigenvalue"} or {0, 1, 2}
        The names or eofs' ``eofscaling`` codes: ``"none"`` (0, the default)
        ``V`` itself, unit norm; ``"inverse_sqrt_eigenvalue"`` (1)
        ``V / sqrt(lambda)``; ``"sqrt_eigenvalue"`` (2) ``V * sqrt(lambda)``,
        in the units of ``S``. PCs with ``scaling="unit"`` times EOFs with
        ``"sqrt_eigenvalue"``, summed over the components, give back the
        (weighted) data.
    ddof : int, default 1
        Delta degrees of freedom of ``lambda = S**2 / (n - ddof)``.
    unweighted : bool, default False
        Divide the decomposition's weights back out (NaN at features of weight
        0). eofs returns the weighted EOFs (False); ``True`` gives the patterns
        on the data's grid, e.g. without the ``sqrt(cos(lat))`` area weights.
        The same as ``V`` for an unweighted result.

    Examples
    --------
    >>> import numpy as np, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> w = xsvd.coslat_weights(sst)
    >>> res = sst.svd(k=3, dim="time", center=True, weights=w)
    >>> eof = res.eofs(scaling="sqrt_eigenvalue", unweighted=True)
    >>> eof.dims
    ('component', 'lat', 'lon')
    """
    code = _scaling_code(scaling, EOF_SCALINGS, "EOF", "eofscaling")
    n = res.n_samples
    ddof = _check_ddof(ddof, n)
    V = res.V
    if code == 0:
        out, power = V, 0
    else:
        root = _sqrt_eigenvalues(res, ddof)
        if code == 1:
            root = 1.0 / moments.where_nan(root > 0, root)
        out, power = V * _backend_like(root, V), (-1 if code == 1 else 1)
    weight_units = None
    w = res.weights if unweighted else None
    if w is not None:
        out = out / _backend_like(w.where(w != 0), out)
        weight_units = _weight_units(res)
    out = out.transpose(COMPONENT, *res.feature_dims)
    out.name = "eofs"
    what = {0: "unit norm", 1: "V / sqrt(eigenvalue)", 2: "V * sqrt(eigenvalue)"}[code]
    weighted = "unweighted" if w is not None else "weighted"
    out.attrs = {"long_name": f"EOFs ({what}, {weighted})"}
    out = _with_units(out, res, power, divide=weight_units)
    return out


def north_errors(res, *, ddof: int = 1, ratio: bool = False) -> xr.DataArray:
    """Typical errors of the eigenvalues (North et al. 1982): ``lambda * sqrt(2 / n)``.

    Parameters
    ----------
    ddof : int, default 1
        Of the eigenvalues, ``lambda = S**2 / (n - ddof)``.
    ratio : bool, default False
        The errors of ``explained_variance_ratio`` instead (eofs'
        ``northTest(vfscaled=True)``): ``ratio * sqrt(2 / n)``.

    Notes
    -----
    The rule of thumb assumes the ``n`` samples are independent
    realizations; autocorrelated samples have fewer effective degrees of
    freedom and larger errors. Neighbouring eigenvalues whose error bars
    overlap belong to components that the data cannot tell apart (their
    patterns may mix).

    References
    ----------
    North, G. R., Bell, T. L., Cahalan, R. F. and Moeng, F. J. (1982).
    Sampling errors in the estimation of empirical orthogonal functions.
    *Monthly Weather Review* 110, 699-706.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> res = sst.svd(k=3, dim="time", center=True)
    >>> err = res.north_errors()
    >>> bool(abs(err - res.eigenvalues() * (2 / 48) ** 0.5).max() < 1e-9)
    True
    """
    n = res.n_samples
    ddof = _check_ddof(ddof, n)
    factor = moments.scalar_like(np.sqrt(2.0 / n), res.singular_values)
    if ratio:
        out = res.explained_variance_ratio * factor
        out.name = "north_errors"
        out.attrs = {"long_name": "typical error of the explained variance ratio", "units": "1"}
        return out
    lam = eigenvalues(res, ddof=ddof)
    out = lam * factor
    out.name = "north_errors"
    out.attrs = {**lam.attrs, "long_name": f"typical error of the eigenvalues (ddof={ddof})"}
    return out


# --------------------------------------------------------------------- maps
def correlation_maps(res, data: xr.DataArray) -> xr.DataArray:
    """Correlation of each PC with ``data`` at every feature (grid point).

    eofs' ``eofsAsCorrelation``: EOFs as correlation maps, between -1 and 1.
    Works with any field on the same samples (e.g. time steps), not only the
    decomposed one.

    Parameters
    ----------
    data : xarray.DataArray
        Has the result's sample dimension(s), matched by label (reordered or
        subset where the data have more labels); its other dimensions are
        those of the maps. NumPy, Dask (the maps are lazy), or quantified.

    Returns
    -------
    xarray.DataArray
        Dims ``("component", *other dims of data)``. NaN where the data are
        NaN at every sample (land) or constant; a feature with some missing
        samples is correlated over the samples where it is present.

    Examples
    --------
    >>> import numpy as np, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> w = xsvd.coslat_weights(sst)
    >>> res = sst.svd(k=3, dim="time", center=True, weights=w)
    >>> r = res.correlation_maps(sst)
    >>> r.dims, bool(abs(r).max() <= 1)
    (('component', 'lat', 'lon'), True)
    """
    x, units, name = _aligned_field(res, data)
    m = moments.moments(res.U, x, res.sample_dims, second=True)
    with np.errstate(invalid="ignore"):
        denom = moments.elementwise(
            "sqrt", moments.where_nan((m["xx"] > 0) & (m["pp"] > 0), m["xx"] * m["pp"])
        )
    out = moments.clip(m["xp"] / denom)
    out = out.transpose(COMPONENT, ...)
    out.name = "correlation_maps"
    out.attrs = {"long_name": f"correlation of {name} with the PCs", "units": "1"}
    return out


def covariance_maps(res, data: xr.DataArray, *, ddof: int = 1) -> xr.DataArray:
    """Covariance of each unit-variance PC with ``data`` at every feature.

    eofs' ``eofsAsCovariance`` (with ``pcscaling=1``): the EOFs as regression
    maps, in the data's units per standard deviation of the PC (the
    anomaly that goes with a PC of +1).

    Parameters
    ----------
    data : xarray.DataArray
        As for :func:`correlation_maps`. Its units (pint, or a ``units``
        attribute) are the maps' units.
    ddof : int, default 1
        Delta degrees of freedom, of the PCs' unit variance and of the
        covariance.

    Returns
    -------
    xarray.DataArray
        Dims ``("component", *other dims of data)``; NaN where the data are
        NaN at every sample.

    Examples
    --------
    >>> import numpy as np, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=48, n_lat=12, n_lon=24)
    >>> w = xsvd.coslat_weights(sst)
    >>> res = sst.svd(k=3, dim="time", center=True, weights=w)
    >>> cov = res.covariance_maps(sst)
    >>> eof = res.eofs(scaling="sqrt_eigenvalue", unweighted=True)  # the same, exact SVD
    >>> bool(abs(cov - eof).max() < 1e-9), cov.attrs["units"]
    (True, 'degC')
    """
    n = res.n_samples
    ddof = _check_ddof(ddof, n)
    x, units, name = _aligned_field(res, data)
    m = moments.moments(res.U, x, res.sample_dims, second=False)
    dof = moments.where_nan(m["count"] > ddof, m["count"] - ddof)
    out = m["xp"] * moments.scalar_like(np.sqrt(n - ddof), m["xp"]) / dof
    out = out.transpose(COMPONENT, ...)
    out.name = "covariance_maps"
    out.attrs = {"long_name": f"covariance of {name} with the unit-variance PCs"}
    if units is not None and units.singular is not None:
        return _units.quantify(out, units.singular)  # delta units for degC
    if "units" in data.attrs:
        out.attrs["units"] = data.attrs["units"]
    return out


def _aligned_field(res, data) -> tuple[xr.DataArray, Any, str]:
    """``data`` as plain float numbers aligned with ``U`` by label; its units and name."""
    if not isinstance(data, xr.DataArray):
        raise TypeError(
            f"data must be an xarray.DataArray with the sample dimension(s) "
            f"{res.sample_dims} of the decomposition, got {type(data).__name__}."
        )
    plain, _, units = _units.strip(data, None)
    name = "the data" if data.name is None else str(data.name)
    U = res.U
    for d in res.sample_dims:
        if d not in plain.dims:
            raise ValueError(
                f"The data have no dimension {d!r}; they need the sample dimension(s) "
                f"{res.sample_dims} of the decomposition (dims: {plain.dims})."
            )
        if d in U.indexes and d in plain.indexes and not plain.indexes[d].equals(U.indexes[d]):
            want, have = U.indexes[d], plain.indexes[d]
            gap = label_gap(want, have)
            if gap is not None:
                lacking, shown = gap
                raise ValueError(
                    f"The data's {d!r} labels do not cover the decomposition's: "
                    f"{len(lacking)} of its {len(want)} labels are missing (e.g. {shown}). "
                    "Give data over every sample of the decomposition, or decompose the "
                    f"samples the data cover, e.g. `da.sel({d}=data[{d!r}]).svd(...)` with "
                    "the same options."
                )
            plain = _select_labels(plain, d, want)
        elif plain.sizes[d] != U.sizes[d]:
            raise ValueError(
                f"The data have {plain.sizes[d]} samples along {d!r}, the decomposition "
                f"{U.sizes[d]}. Select the samples it took, by position (without labels on "
                f"both along {d!r} there is nothing to match), e.g. "
                f"`data.isel({d}=slice(0, {U.sizes[d]}))` for the first {U.sizes[d]}."
            )
    if COMPONENT in plain.dims:
        raise ValueError(
            f"The data have a dimension named {COMPONENT!r}, the name of the maps' "
            f"components. Rename it first, e.g. `data.rename({{{COMPONENT!r}: 'mode'}})`."
        )
    dtype = backend.numpy_dtype(plain.dtype)
    if dtype.kind not in "fiub":
        raise TypeError(f"The data must be numeric, got dtype {plain.dtype}.")
    plain = (
        plain.copy(data=backend.astype(plain.data, np.float64)) if dtype != np.float64 else plain
    )
    return plain, units, name


def _select_labels(x: xr.DataArray, dim, labels) -> xr.DataArray:
    """``x`` at ``labels`` along ``dim`` (all present, once), on the data's device.

    xarray's ``reindex`` for NumPy and Dask data; for data on a device (CuPy, or another
    array library, whose arrays take only index arrays of their own) the positions are found
    on the host from the coordinates and taken on the device, so the data never leave it.
    """
    if backend.is_dask(x.data) or backend.namespace(x.data) is np:
        return x.reindex({dim: labels})
    positions = x.indexes[dim].get_indexer(labels)
    where = backend.transfer(positions, x.data)  # one index per sample, to the device
    data = backend.api(x.data).take(x.data, where, axis=x.get_axis_num(dim))
    coords = x.coords.to_dataset().isel({dim: positions}).coords
    return xr.DataArray(data, dims=x.dims, coords=coords, name=x.name, attrs=x.attrs)


# ------------------------------------------------------------------ units
def _with_units(out: xr.DataArray, res, power: int, *, divide=None) -> xr.DataArray:
    """Put ``units(S)**power`` (over ``divide``) on a plain result; attrs for plain data."""
    s_units = res.unit_of("singular")
    if s_units is None:
        text = res.singular_values.attrs.get("units")
        if text is not None and power != 0 and divide is None:
            out.attrs["units"] = text if power == 1 else f"({text})**{power}"
        return out
    units = s_units**power  # dimensionless for power 0
    if divide is not None:
        units = units / divide
    if units.dimensionless:  # e.g. unit-variance PCs: leave plain
        return out
    return _units.quantify(out, units)


def _weight_units(res):
    """Pint units of the weights (None when plain), from the units of ``S`` and of the data."""
    units = res.units
    if units is None or units.singular is None:
        return None
    return units.singular / _units.data_delta(units, res.input_attrs)


def _backend_like(small: xr.DataArray, like: xr.DataArray) -> xr.DataArray:
    """A small NumPy DataArray moved to the memory of ``like`` (CuPy when it is)."""
    if backend.namespace(like.data) is np or backend.namespace(small.data) is not np:
        return small
    if backend.is_dask(small.data):
        return small
    return small.copy(data=backend.on_backend_of(small.data, like.data))


# ---------------------------------------------------------- the interface
@runtime_checkable
class ResultLike(Protocol):
    """What these functions (and rotation and the plots) read of a result.

    :class:`~xsvd.SVDResult` and :class:`~xsvd.rotation.RotatedResult` have it.
    """

    U: xr.DataArray
    V: xr.DataArray
    S: xr.DataArray
    settings: dict

    @property
    def singular_values(self) -> xr.DataArray: ...

    @property
    def explained_variance_ratio(self) -> xr.DataArray: ...

    @property
    def weights(self) -> xr.DataArray | None: ...

    @property
    def units(self) -> _units.Units | None: ...

    @property
    def sample_dims(self) -> tuple: ...

    @property
    def feature_dims(self) -> tuple: ...

    @property
    def n_samples(self) -> int: ...

    @property
    def input_attrs(self) -> dict: ...

    def unit_of(self, which: str) -> Any: ...


class StatisticsMethods:
    """The statistics as methods, for every :class:`ResultLike` (one home for the forwards)."""

    def eigenvalues(self: ResultLike, *, ddof: int = 1) -> xr.DataArray:
        """The variance of each component, ``S**2 / (n_samples - ddof)``.

        eofs' ``eigenvalues()`` and xeofs' ``explained_variance()`` (both
        ``ddof=1``); see :func:`xsvd.statistics.eigenvalues`.
        """
        return eigenvalues(self, ddof=ddof)

    def pcs(self: ResultLike, *, scaling: str | int = "singular", ddof: int = 1) -> xr.DataArray:
        """The PCs: ``"singular"`` (0) ``U * S``, ``"unit"`` (1) unit variance,
        ``"sqrt_eigenvalue"`` (2); eofs' ``pcs(pcscaling=)``.

        See :func:`xsvd.statistics.pcs`.
        """
        return pcs(self, scaling=scaling, ddof=ddof)

    def eofs(
        self: ResultLike, *, scaling: str | int = "none", ddof: int = 1, unweighted: bool = False
    ) -> xr.DataArray:
        """The EOFs: ``"none"`` (0) ``V``, ``"inverse_sqrt_eigenvalue"`` (1),
        ``"sqrt_eigenvalue"`` (2); eofs' ``eofs(eofscaling=)``.

        ``unweighted=True`` divides the weights out. See
        :func:`xsvd.statistics.eofs`.
        """
        return eofs(self, scaling=scaling, ddof=ddof, unweighted=unweighted)

    def correlation_maps(self: ResultLike, data: xr.DataArray) -> xr.DataArray:
        """Correlation of each PC with ``data`` at every feature (eofs' ``eofsAsCorrelation``).

        ``data``: the decomposed field or another one with the same samples,
        matched by label. See :func:`xsvd.statistics.correlation_maps`.
        """
        return correlation_maps(self, data)

    def covariance_maps(self: ResultLike, data: xr.DataArray, *, ddof: int = 1) -> xr.DataArray:
        """Covariance of each unit-variance PC with ``data`` (eofs' ``eofsAsCovariance``).

        In the data's units per standard deviation of the PC. See
        :func:`xsvd.statistics.covariance_maps`.
        """
        return covariance_maps(self, data, ddof=ddof)
