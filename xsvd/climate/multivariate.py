"""Multivariate (combined) EOF: one SVD of several fields at once (``Dataset.svd``).

Every data variable of a Dataset (or every DataArray of a mapping) is read as
its own (samples x features) matrix by its own :class:`~xsvd.labeled.layout.Layout`
(features: its dims other than the sample dims, so the variables' grids may
differ); the matrices are put side by side along one feature axis (lazily for
Dask) and solved by the labeled pipeline (:func:`xsvd.labeled.api.solve_matrix`),
as eofs' ``MultivariateEof`` does. :class:`~xsvd.climate.stacked.Stacked`
records where each variable's columns are and takes results apart again;
:class:`~xsvd.climate.multivariate_result.MultivariateResult` gives them back
per variable (``V``, ``mean``, ``reconstruct()`` as Datasets).

Weights are per variable (a dict or a Dataset of them, each over that
variable's feature dims); ``standardize=True`` divides every feature by its
standard deviation; ``equal_variance=True`` then scales each variable to the
same total (weighted) variance, a factor per variable folded into the
weights, so ``reconstruct()`` and ``project()`` undo and apply it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from ..core import MissingValueError
from ..core.options import (
    CompressedOptions,
    Preprocessing,
    check_flag,
    split_options,
    takes_options,
)
from ..labeled import api, preprocess
from ..labeled import units as _units
from .multivariate_result import MultivariateResult
from .stacked import Stacked, as_variables

__all__ = ["svd", "exact", "compressed", "Multivariate", "Stacked", "MultivariateResult"]


@dataclass(frozen=True, kw_only=True)
class Multivariate:
    """The Dataset path's own option (the others are the DataArray path's).

    Attributes
    ----------
    equal_variance : bool
        Scale each variable so that its total (weighted) variance, the sum of
        its features' variances over the samples (``ddof=0``, after weights
        and ``standardize``), is 1 before the SVD.
    """

    equal_variance: bool = False

    def __post_init__(self) -> None:
        check_flag("equal_variance", self.equal_variance)


_ANY = (api.Labeling, Multivariate, Preprocessing, CompressedOptions)
_EXACT = (api.Labeling, Multivariate, Preprocessing)


@takes_options(*_ANY)
def svd(data, k: int | None = None, *, method: str = "auto", **options) -> MultivariateResult:
    """Multivariate (combined) SVD of the data variables of a Dataset, solver chosen by shape.

    Each data variable's dims other than ``dim`` are its features; the
    variables' feature matrices are put side by side and decomposed together
    (eofs' ``MultivariateEof``), so one ``U`` (the PCs) goes with a pattern
    per variable in ``V``.

    Parameters
    ----------
    data : xarray.Dataset or mapping of str to xarray.DataArray
        The fields, NumPy- or Dask-backed, each with the sample dimension(s).
        In a Dataset the variables share their sample coordinates; a mapping
        (``{"sst": sst, "slp": slp}``) is checked for it. Variables may have
        different grids (feature dims); in a mapping, feature dims of the
        same name must have the same coordinates.
    k : int, optional
        Number of components; required when the compressed solver runs.
    dim : str or sequence of str, optional
        Sample dimension(s). Default: each variable's default (see
        :func:`xsvd.svd`), which must be the same for all.
    weights : dict, xarray.Dataset or xarray.DataArray, optional
        Per-variable weights: ``{name: DataArray}`` or a Dataset with
        variables of those names, each broadcast over that variable's
        feature dims (e.g. ``xsvd.coslat_weights(ds["sst"])``); every
        variable needs an entry (``None`` or 1: not weighted), else a
        ``ValueError`` names the one left out. A single DataArray weights
        every variable. Finite and >= 0.
    equal_variance : bool, default False
        Scale each variable to a total (weighted) variance of 1 before the
        SVD (``ddof=0``, over the values present, after ``weights`` and
        ``standardize``), so a field with large values does not dominate.
        The factors are ``res.scales``; ``reconstruct()`` and ``project()``
        undo and apply them. Dask data are read once more (not with
        ``standardize=True``, whose read gives them).
    method, center, standardize, missing, negative_missing, device, compute, progress
        As for :func:`xsvd.svd`, applied to every variable. Values to subtract
        (``center=``) are given per variable as ``weights`` are: a Dataset or a
        dict with an entry for every variable (each a DataArray over that
        variable's feature dims), or one DataArray for every variable.
    n_power_iter, n_oversamples, seed, dtype, krylov, tol, max_passes
        Compressed solver only; see :func:`xsvd.compressed`.

    Returns
    -------
    MultivariateResult
        Unpacks as ``U, S, V``, ``V`` a Dataset of per-variable patterns.

    Examples
    --------
    >>> import xarray as xr, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> ds = xr.Dataset({"sst": sst, "sst_coarse": sst.coarsen(lat=2, lon=2).mean()
    ...     .rename(lat="lat2", lon="lon2")})
    >>> res = ds.svd(k=3, dim="time", center=True, equal_variance=True)
    >>> res.U.dims, res.V["sst_coarse"].dims
    (('time', 'component'), ('component', 'lat2', 'lon2'))
    """
    if method not in ("auto", "exact", "compressed"):
        raise ValueError(f"method must be 'auto', 'exact' or 'compressed', got {method!r}.")
    return _run(data, k, method, split_options(options, _ANY, "svd"))


@takes_options(*_EXACT)
def exact(data, *, k: int | None = None, **options) -> MultivariateResult:
    """Exact multivariate SVD, optionally truncated to ``k``; see :func:`svd`.

    Examples
    --------
    >>> import xarray as xr, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=30, n_lat=6, n_lon=12)
    >>> res = xr.Dataset({"a": sst, "b": 2 * sst}).svd.exact(dim="time", center=True)
    >>> res.S.sizes["component"]
    30
    """
    options = (*split_options(options, _EXACT, "exact"), CompressedOptions())
    return _run(data, k, "exact", options)


@takes_options(*_ANY)
def compressed(data, k: int, **options) -> MultivariateResult:
    """Randomized rank-``k`` multivariate SVD; see :func:`svd` and :func:`xsvd.compressed`.

    Examples
    --------
    >>> import xarray as xr, xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> res = xr.Dataset({"a": sst, "b": sst**2}).svd.compressed(2, dim="time", seed=0)
    >>> res.method
    'compressed'
    """
    return _run(data, k, "compressed", split_options(options, _ANY, "compressed"))


def _run(data, k, method: str, options: tuple) -> MultivariateResult:
    """validate -> stack each variable -> weights -> standardize -> equal variance -> solve."""
    labeling, multi, read, given = options
    data, quantities = _units_off(data)
    stack = Stacked.from_data(data, labeling.dim)
    variables = {
        name: preprocess.move_dataarray(var, labeling.device)
        for name, var in stack.variables(data).items()
    }
    a = stack.to_matrix(variables)
    if read.given:  # values to subtract, per variable: one vector over the columns
        read = replace(read, center=stack.center_values(read.center))
    user = stack.weights_vector(labeling.weights)
    w = user
    if labeling.standardize:
        w = preprocess.standardized_weights(
            a, user, missing=read.missing, negative_missing=read.negative_missing
        )
    scales = None
    if multi.equal_variance:
        scales = stack.equal_variance_scales(a, user, w if labeling.standardize else None, read)
        w = (np.ones(stack.n_features) if w is None else w) * stack.per_feature(scales)
    try:
        res = api.solve_matrix(
            stack.layout,
            a,
            k,
            method,
            (replace(labeling, weights=None), read, given),
            weights=w,
            locate=stack.locate,
        )
    except MissingValueError as err:
        hint = stack.gap_hint(variables)
        if hint is None:
            raise
        raise MissingValueError(f"{err} {hint}").with_traceback(err.__traceback__) from None
    scaled = labeling.standardize or multi.equal_variance
    return MultivariateResult(res, stack, scales=scales, units=quantities, scaled=scaled)


def _units_off(data):
    """``(data, units)``: pint-quantified variables as their magnitudes with a ``units``
    attribute (kept on their mean and reconstruction), and each one's pint units."""
    variables = as_variables(data)
    quantities = {n: v.data.units for n, v in variables.items() if _units.is_quantity(v.data)}
    if not quantities:
        return data, None
    plain = {n: _units.dequantify(v) if n in quantities else v for n, v in variables.items()}
    if isinstance(data, xr.Dataset):
        return data.assign(plain), quantities
    return plain, quantities
