"""One pipeline behind every entry point: validate -> layout -> units off -> solve -> labels.

``xsvd.svd``, ``xsvd.exact``, ``xsvd.compressed`` and the ``DataArray.svd``
accessor all end up in :func:`_run`.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import Literal

import xarray as xr

from ..core import MissingValueError, backend, exact_svd, randomized_svd
from ..core.common import EXACT_K_SHARE
from ..core.options import (
    CompressedOptions,
    Preprocessing,
    as_kwargs,
    check_flag,
    split_options,
    takes_options,
)
from . import preprocess
from . import units as _units
from .dims import nan_hint
from .layout import Layout
from .result import SVDResult

__all__ = [
    "svd",
    "exact",
    "compressed",
    "choose_method",
    "Labeling",
    "solve_matrix",
    "labeled_matrix",
    "Reading",
]

Dims = Hashable | Sequence[Hashable] | None
Method = Literal["auto", "exact", "compressed"]
Missing = Literal["error", "mean"]
Device = Literal["gpu", "cpu"] | None


@dataclass(frozen=True, kw_only=True)
class Labeling:
    """The labeled API's own options (see :func:`svd` for each); declared once.

    With :class:`~xsvd.core.options.Preprocessing` and
    :class:`~xsvd.core.options.CompressedOptions` these are every option of
    :func:`svd`, :func:`exact` and :func:`compressed`, whose signatures are
    made from them.
    """

    dim: Dims = None
    standardize: bool = False
    weights: xr.DataArray | None = None
    device: Device = None
    compute: bool = True
    progress: bool = False

    def __post_init__(self) -> None:
        for name in ("compute", "progress", "standardize"):
            check_flag(name, getattr(self, name))

    def settings(self) -> dict:
        """The part of ``settings`` these options make."""
        return {"standardize": True} if self.standardize else {}


def _taken(cls: type, *names: str) -> list:
    """The fields ``names`` of the options class ``cls``, as ``make_dataclass`` takes them."""
    return [(f.name, f.type, field(default=f.default)) for f in fields(cls) if f.name in names]


#: How the analyses (:func:`xsvd.mca`, :func:`xsvd.extended_eof`, :func:`xsvd.hilbert_eof`,
#: :func:`xsvd.bootstrap`) read and prepare their data beside their own options:
#: ``missing`` and ``negative_missing`` as :class:`~xsvd.core.options.Preprocessing`
#: declares them for :func:`svd`, ``device`` and ``standardize`` as :class:`Labeling`
#: does; taken from those declarations, not written again
#: (``takes_options(CompressedOptions, Reading)`` puts them in a signature).
Reading = make_dataclass(
    "Reading",
    _taken(Preprocessing, "missing", "negative_missing")
    + _taken(Labeling, "device", "standardize"),
    frozen=True,
    kw_only=True,
)
Reading.__module__ = __name__


#: The options of each entry point, in the order the options objects are built.
_EXACT = (Labeling, Preprocessing)
_ANY = (Labeling, Preprocessing, CompressedOptions)

#: ``method="auto"`` uses the exact SVD when the shorter side of the
#: (samples x features) matrix has at most this many entries.
EXACT_MAX_SHORT_SIDE = 1_000


def choose_method(n_samples: int, n_features: int, k: int | None) -> str:
    """The solver ``method="auto"`` picks for a matrix of this shape.

    - ``"exact"`` when the matrix is small or tall-and-skinny: its shorter side
      has at most ``EXACT_MAX_SHORT_SIDE`` (1,000) entries, or ``k`` asks for a
      large share of it (``k >= short side / 4``), where a randomized sketch saves
      little;
    - ``"compressed"`` otherwise, i.e. when both dimensions are large; ``k`` is
      then required.

    Examples
    --------
    >>> choose_method(10_000, 200, None)
    'exact'
    >>> choose_method(100_000, 5_000, 10)
    'compressed'
    """
    short = min(n_samples, n_features)
    if short <= EXACT_MAX_SHORT_SIDE:
        return "exact"
    if k is None:
        raise ValueError(
            f"Both sides of this {n_samples} x {n_features} (samples x features) matrix "
            "are large, so xsvd uses the compressed (randomized) SVD, which needs the "
            "number of components: pass `k=` (e.g. `da.svd(k=10)`), or ask for "
            "`method='exact'` (slow and memory-hungry at this size)."
        )
    if EXACT_K_SHARE * k >= short:
        return "exact"
    return "compressed"


@takes_options(*_ANY)
def svd(
    obj: xr.DataArray,
    k: int | None = None,
    *,
    method: Method = "auto",
    **options,
) -> SVDResult:
    """Singular value decomposition of a labeled array, solver chosen by shape.

    The DataArray is read as a matrix whose rows are the sample dimension(s)
    ``dim`` and whose columns are all the other (feature) dimensions.

    Parameters
    ----------
    obj : xarray.DataArray
        NumPy-, CuPy- or Dask-backed data, optionally quantified with pint
        (``S``, ``mean`` and ``reconstruct()`` then carry units).
    k : int, optional
        Number of components. Required when the compressed solver runs.
    dim : str or sequence of str, optional
        Sample dimension(s), the rows of the matrix. Default: the first
        dimension, only where that is unambiguous: 2-D data with no
        time-like dimension elsewhere, or data whose first dimension is
        their only time-like one (dates, or named ``time``); anything else,
        e.g. ``(lat, lon, time)``, is a ``ValueError`` naming the ``dim=`` to
        pass. Every dimension is kept, size 1 included: ``U``, ``V``,
        ``mean`` and ``reconstruct()`` carry the input's dimension names.
    method : {"auto", "exact", "compressed"}
        Solver; ``"auto"`` follows :func:`choose_method`.
    center : bool or xarray.DataArray
        Remove each feature's mean over ``dim`` first (True), or the values
        given (a DataArray over the feature dimensions, e.g.
        ``2 * w.allele_frequency``). Given values are matched to the features
        by label as ``weights`` are and must be finite numbers: allele
        frequencies of the founders or of a reference panel (as PLINK 2's
        ``--pca`` centers), a climatology of another period. They are not
        read from the data; ``res.mean`` is them and
        ``res.settings["center"]`` is ``"given"``. With ``missing="mean"``
        missing values stand for them.
    standardize : bool
        Also divide each feature by its standard deviation over ``dim``
        (``ddof=0``, over the values present), so that every feature has
        unit variance: EOFs of the correlation matrix (xeofs'
        ``standardize=True``). The standard deviations are folded into the
        weights (``res.settings["standardize"]`` is True): ``reconstruct()``
        and ``project()`` undo and apply them, and ``S`` loses the data's
        units. Constant features get weight 0: those whose standard
        deviation is at rounding level, at most ``max(4 * eps, n * eps64)``
        times their largest absolute value (``eps``: the machine epsilon of
        the data's float type, float64's ``eps64`` for integers; ``n``: the
        samples where the feature is present). Dask data are read once
        more, before the decomposition (also with ``compute=False``).
    weights : xarray.DataArray, optional
        Broadcast against the feature dimensions; multiplies the (centered)
        data, e.g. ``xsvd.coslat_weights(da)`` (``sqrt(cos(lat))``) for area weighting.
        Finite and >= 0 (0 leaves a feature out), else a ``ValueError`` that
        names where they are not. Quantified weights multiply their units
        into ``S``.
    missing : {"error", "mean"}
        Missing values other than whole-NaN features (land): ``"error"``
        (default) raises an error that names them; ``"mean"`` stands each
        missing value for its feature's mean over the samples where it is
        present, inside the products (no filled copy of the data), or for
        the ``center=`` values given. With ``center`` they then contribute
        zero: mean imputation, as PLINK 2's ``--pca meanimpute`` and sgkit's
        ``mean_impute`` do.
        Missing values are NaN and, in integer data, negative values
        (PLINK's and sgkit's codes for missing calls, e.g. -1).
    negative_missing : bool, optional
        Whether negative values count as missing. Default (None): yes in
        integer data with ``missing="mean"``, no in floating-point data
        (anomalies are negative half the time). ``True`` asks for it in
        floating-point data too (e.g. genotype codes stored as floats).
    device : {None, "gpu", "cpu"}
        Move the data before solving: ``"gpu"`` to CuPy (Dask chunks are
        moved one by one, lazily), ``"cpu"`` to NumPy; None (default) leaves
        it where it is. Results stay on the device that computed them; see
        :meth:`SVDResult.as_numpy` and :meth:`SVDResult.as_cupy`. The GPU
        needs ``pip install "xsvd[gpu]"`` (CuPy and cupy-xarray).
    compute : bool
        True (default): return computed results. False: Dask inputs give lazy
        results (nothing is computed until asked).
    progress : bool
        Show progress while computing Dask data: a progress bar per pass over
        the data with the local schedulers, distributed's progress bar with a
        ``dask.distributed`` client.
    n_power_iter, n_oversamples, seed, dtype, krylov, tol, max_passes
        Compressed solver only; see :func:`compressed`.

    Returns
    -------
    SVDResult
        Unpacks as ``U, S, V``.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> res = xsvd.svd(sst, k=3, dim="time", center=True)
    >>> res.method, res.U.dims, res.V.dims
    ('exact', ('time', 'component'), ('component', 'lat', 'lon'))
    """
    if method not in ("auto", "exact", "compressed"):
        raise ValueError(f"method must be 'auto', 'exact' or 'compressed', got {method!r}.")
    return _run(obj, k, method, split_options(options, _ANY, "svd"))


@takes_options(*_EXACT)
def exact(
    obj: xr.DataArray,
    *,
    k: int | None = None,
    **options,
) -> SVDResult:
    """Exact SVD (LAPACK in memory, tall-skinny QR for Dask), optionally truncated to ``k``.

    See :func:`svd` for the parameters.

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=12, n_lon=24)
    >>> U, S, V = xsvd.exact(sst, dim="time")
    >>> S.sizes["component"]
    60
    """
    return _run(obj, k, "exact", (*split_options(options, _EXACT, "exact"), CompressedOptions()))


@takes_options(*_ANY)
def compressed(
    obj: xr.DataArray,
    k: int,
    **options,
) -> SVDResult:
    """Rank-``k`` randomized SVD that reads the data until it has converged (8 times at most).

    Parameters
    ----------
    k : int
        Number of components.
    n_power_iter : int, optional
        A fixed number of iterations after the first pass; each is one more
        read of the data. By default none is fixed: the passes stop as soon
        as every component's estimated errors (``res.errors``) are below
        ``1e-6`` (relative), after 8 reads at most, without a warning when
        that cap is reached (``res.settings`` has ``passes`` and the
        ``estimated_error`` reached). Lazy results (Dask, ``compute=False``)
        read the data 8 times.
    n_oversamples : int, default 10
        Extra columns of the random sketch.
    tol : float, optional
        Instead of a fixed ``n_power_iter``: keep reading the data until the
        estimated relative error of every singular value and the relative
        residual of every component (``res.errors``) are below ``tol``, e.g.
        ``1e-3``, or ``max_passes`` is reached, which warns (the default
        stopping is ``tol=1e-6`` capped at 8 passes, without the warning).
        ``res.settings["passes"]`` says how many passes it took.
    max_passes : int, default 20
        With ``tol``: the most reads of the data.
    seed : int, optional
        Seed of the Gaussian test matrix, for reproducible results.
    dtype : {None, "float32", "float64"}
        Precision of the products with the data. Default: float64 data in
        float64; integer and float32 data in float32.
    krylov : bool, default True
        Take the components from the span of every pass's sketch (block
        Krylov, Musco & Musco 2015; the default) rather than the last one
        (``False``: subspace iteration): the same reads of the data and a
        little more small math, much more accurate singular values where the
        spectrum decays slowly (the noise components of genotype data, say).
    obj, dim, center, standardize, weights, missing, negative_missing, device, compute, progress
        See :func:`svd`.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=200)
    >>> U, S, V = xsvd.compressed(gt, k=5, dim="samples", center=True, seed=0)
    >>> U.dims, V.dims
    (('samples', 'component'), ('component', 'variants'))
    """
    return _run(obj, k, "compressed", split_options(options, _ANY, "compressed"))


def labeled_matrix(obj: xr.DataArray, dim, weights=None, device=None) -> tuple:
    """validate -> layout -> units off -> device -> matrix -> weights, as every entry point
    reads a DataArray (also :mod:`xsvd.climate`'s analyses).

    Returns ``(layout, obj, a, w, units)``: the layout, the DataArray without
    units (and on ``device``), its (samples x features) matrix, the feature
    weights as a vector (or None) and the units taken off (or None).
    """
    layout = Layout.from_dataarray(obj, dim)
    # units off: pint-quantified data and weights become their magnitudes
    obj, weights, units = _units.strip(obj, weights)
    if units is not None and units.coords:  # coordinates were quantified too
        layout = Layout.from_dataarray(obj, dim)
    obj = preprocess.move_dataarray(obj, device)
    backend.compute_dtype(obj.dtype)  # raises a clear error for non-numeric data
    a = layout.to_matrix(obj)
    w = preprocess.weights_vector(layout, weights)
    return layout, obj, a, w, units


def _run(obj, k, method: str, options: tuple) -> SVDResult:
    """validate -> layout -> units off -> device -> matrix -> weights -> solve -> labels."""
    labeling, read, given = options
    layout, obj, a, w, units = labeled_matrix(obj, labeling.dim, labeling.weights, labeling.device)
    if labeling.standardize:  # each feature over its standard deviation: folded into the weights
        w = preprocess.standardized_weights(
            a, w, missing=read.missing, negative_missing=read.negative_missing
        )
        units = preprocess.standardized_units(units, obj)
    return solve_matrix(layout, a, k, method, options, weights=w, units=units)


def solve_matrix(
    layout: Layout, a, k, method: str, options: tuple, *, weights=None, units=None, locate=None
) -> SVDResult:
    """Solve the (samples x features) matrix ``a`` of ``layout``: the end of every entry point.

    ``options`` are the ``(Labeling, Preprocessing, CompressedOptions)``
    objects; ``weights`` the feature weights as a vector, standardization
    already folded in; ``locate`` names features in errors (default:
    ``layout.feature_locator()``). Used by :func:`svd` and by the Dataset
    path (:mod:`xsvd.climate.multivariate`), which stacks several variables.
    """
    labeling, read, given = options
    if read.given:  # values to subtract: matched to the features by label, checked
        read = replace(read, center=preprocess.center_vector(layout, read.center))
    w = weights
    m, n = a.shape
    if method == "auto":
        method = choose_method(m, n, k)
    run = dict(
        weights=w,
        locate=layout.feature_locator() if locate is None else locate,
        compute=labeling.compute,
        progress=labeling.progress,
        **as_kwargs(read),
    )
    if method == "exact":
        given_names = given.given()
        if given_names:
            verb, pron = ("applies", "it") if len(given_names) == 1 else ("apply", "them")
            raise ValueError(
                f"{', '.join(given_names)} only {verb} to the compressed SVD, but the exact SVD "
                f"was chosen. Drop {pron} or pass `method='compressed'`."
            )
        d = _hinted(layout, exact_svd, a, k, **run)
    else:
        d = _hinted(layout, randomized_svd, a, k, **run, **as_kwargs(given))
    if labeling.settings():
        d = replace(d, settings={**d.settings, **labeling.settings()})
    if not read.centers and m > 1 and not d.lazy_parts():  # one sample: nothing to center
        warn_uncentered(d)
    return SVDResult(d, layout, weights=w, units=units)


#: ``center=False`` warns where the features' means carry more than this share of the
#: sum of squares (:meth:`xsvd.core.Decomposition.mean_share`).
UNCENTERED_SHARE = 0.5
_PACKAGE = str(Path(__file__).resolve().parents[1])


def warn_uncentered(d, *, svd: bool = True) -> None:
    """Warn when an uncentered decomposition is mostly the features' means (from ``U``, ``S``).

    ``svd``: for :func:`xsvd.svd` (``center=False`` its default; results with
    ``eigenvalues()`` and ``north_errors()``); False for the analyses that center by
    default. Not on lazy results (``compute=False``), whose ``U`` is not known yet.
    """
    share = d.mean_share()
    if share > UNCENTERED_SHARE:
        frame, level = inspect.currentframe(), 1  # the warning points at the user's frame
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
            frame, level = frame.f_back, level + 1
        said = "center=False (xsvd's default; eofs and xeofs center)" if svd else "center=False"
        also = (
            ", and eigenvalues() and north_errors() are not variances"
            if svd
            else " (center=True, the default, removes them)"
        )
        warnings.warn(
            f"{said}, and the features' means carry {share:.0%} of the sum of squares: the "
            "first component is mostly the mean (its PC nearly constant), "
            "explained_variance_ratio is a share of the sum of squares, not of the "
            f"variance{also}. For EOFs or a PCA of anomalies, pass center=True (or decompose "
            "anomalies, e.g. `da - da.mean('time')`). To decompose the values about 0 on "
            "purpose, silence this: `warnings.filterwarnings('ignore', 'center=False')`.",
            UserWarning,
            stacklevel=level,
        )


def _hinted(layout: Layout, solver, a, *args, **kwargs):
    """``solver(a, ...)``, with advice added to a NaN error when the dims look swapped.

    Only where the error is raised here (eager results); a lazy result's
    error at compute time has no such advice.
    """
    try:
        return solver(a, *args, **kwargs)
    except MissingValueError as err:
        hint = nan_hint(layout, a)
        if hint is None:
            raise
        message = str(err)
        head, sep, rest = message.partition(" Features that are NaN at every sample")
        message = f"{head} {hint}{sep}{rest}" if sep else f"{message} {hint}"
        raise MissingValueError(message).with_traceback(err.__traceback__) from None
