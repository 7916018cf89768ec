"""How stable is each EOF? A bootstrap of the samples that reads the data a few times in all.

Replicate ``c`` (sample ``i`` drawn ``c_i`` times) is the data times small
factors, ``B_c = diag(sqrt(c)) (A - 1 mu_c^T) diag(w)``, never a resampled copy:
:mod:`.resampling` runs block Krylov on every replicate in shared reads of the
data, through the core's stripes; this module checks the options and labels
the result.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from ..core import backend, fix_signs
from ..core.missing import missing_rule
from ..core.options import (
    CompressedOptions,
    check_flag,
    ordered_settings,
    split_options,
    takes_options,
)
from ..labeled import preprocess
from ..labeled.api import Reading, labeled_matrix, warn_uncentered
from ..labeled.base import Result, errors_part
from ..labeled.layout import COMPONENT
from ..labeled.units import describe as describe_units
from ..labeled.units import quantify
from .resampling import SPACE_FULL, Reads, worst
from .resampling import run_batch as _run_batch

__all__ = ["bootstrap", "BootstrapResult"]

REPLICATE = "replicate"
#: With a fixed ``n_power_iter``, a warning when an estimated relative error (of any
#: replicate's singular values or residuals) is above this: the replicates are not converged.
FIXED_PASSES_WARNING = 1e-2
#: ``batch`` by default: as many replicates as hold about this many bytes of Krylov spaces
#: (and of feature-sized sums over Dask stripes of samples) at once.
BATCH_BYTES = 2**27


def _check(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")


def _resolved(given: CompressedOptions) -> CompressedOptions:
    """The options resolved as :func:`xsvd.compressed` resolves them (their ``most_passes``:
    when to stop); the options that do not apply to the bootstrap are refused."""
    for name, low in (("n_power_iter", 0), ("n_oversamples", 0), ("max_passes", 1)):
        if getattr(given, name) is not None:
            _check(name, getattr(given, name), low)
    if given.dtype is not None and backend.numpy_dtype(given.dtype) != np.float64:
        raise ValueError(
            f"dtype={given.dtype!r} does not apply to the bootstrap: it multiplies in "
            "float64 (the replicates differ by little, which float32 would blur). "
            "Leave out dtype."
        )
    if given.krylov is False:
        raise ValueError(
            "krylov=False does not apply to the bootstrap: it always takes each replicate's "
            "components from the whole Krylov space (block Lanczos). Leave out krylov."
        )
    return given.resolved(lazy=False)


@takes_options(CompressedOptions, Reading)
def bootstrap(
    da: xr.DataArray,
    k: int,
    n_replicates: int = 100,
    *,
    dim: Hashable | Sequence[Hashable] | None = None,
    center: bool = True,
    weights: xr.DataArray | None = None,
    ci: float = 0.95,
    batch: int | None = None,
    keep_patterns: bool = False,
    **options,
) -> BootstrapResult:
    """Bootstrap of the samples: how stable each EOF's variance and pattern are.

    ``n_replicates`` replicates each draw the samples (``dim``) with replacement; each
    is decomposed (re-centered on its own mean, with the same weights) and
    compared with the decomposition of the data: its explained variance
    ratios and the congruence of its patterns with the original's. The
    replicates share every read of the data (see Notes).

    Parameters
    ----------
    da : xarray.DataArray
        NumPy-, Dask- or CuPy-backed data (or another array-API library's, on
        its device); NaN only in features NaN at every sample (land, left
        out: NaN in ``V``) unless ``missing="mean"``, no ``inf``
        (:class:`xsvd.InfiniteValueError` names where).
    k : int
        Components compared.
    n_replicates : int, default 100
        Replicates (was ``n`` before version 0.2).
    dim : hashable or sequence, optional
        Sample dimension(s), resampled; default as :func:`xsvd.svd`.
    center : bool, default True
        Remove each feature's mean (each replicate's own). False warns, as
        :func:`xsvd.svd` does, where the means carry most of the sum of squares.
    standardize : bool, default False
        Also divide each feature by its standard deviation over all the samples of
        the data (``ddof=0``, over the values present; constant features get weight
        0), as :func:`xsvd.svd`'s ``standardize``, folded into the weights (no
        standardized copy): the replicates resample the standardized data, the scale
        fixed, each re-centered on its own mean (xeofs' ``EOFBootstrapper`` of a
        standardized model). ``S`` loses the data's units; Dask data are read once
        more, first.
    weights : xarray.DataArray, optional
        Feature weights, e.g. :func:`xsvd.coslat_weights`.
    ci : float, default 0.95
        Level of the percentile intervals ``*_ci``.
    batch : int, optional
        At most this many replicates per set of reads; each batch reads the
        data ``passes + 1`` times. Memory holds about ``2 * batch * samples *
        (k + n_oversamples) * passes`` float64 numbers for the Krylov spaces
        (over Dask stripes of samples, also a few ``batch * features * (k +
        n_oversamples)``); by default as many as hold about 128 MiB (all the
        replicates of a small field).
    keep_patterns : bool, default False
        Also return every replicate's patterns (``replicate_V``), signs
        matched to the original's.
    n_power_iter, n_oversamples, seed, tol, max_passes
        As :func:`xsvd.compressed`, with the same defaults: by default the
        passes stop once every replicate's estimated relative errors (of its
        ``k`` singular values and its residuals) are below ``1e-6`` or at the
        precision of the float64 products (the core's stop rule), after 8
        passes at most (a replicate that has stopped is not multiplied
        again); ``tol`` (with ``max_passes``, default 20) asks for another
        tolerance, ``n_power_iter`` for ``n_power_iter + 1`` passes exactly
        (a warning says when they leave estimated errors above 1%).
        ``n_oversamples`` (default 10): extra columns per Krylov block;
        ``seed``: of the resampling and of the random start blocks.
    dtype, krylov
        Refused unless left out (or float64, True): the bootstrap always
        multiplies in float64 and uses block Krylov.
    missing : {"error", "mean"}
        As :func:`xsvd.svd`'s: ``"mean"`` stands each missing value for its
        feature's mean over all the samples of the data where it is present,
        as the data are read (no filled copy); the replicates resample those
        filled data. ``"error"`` (default): a feature with gaps is a
        :class:`xsvd.MissingValueError` naming it.
    negative_missing : bool, optional
        Whether negative values count as missing, as :func:`xsvd.svd`'s.
    device : {None, "gpu", "cpu"}
        Move the data first, as :func:`xsvd.svd` does; the result lives
        where the data are then.

    Returns
    -------
    BootstrapResult
        A result of the one family (:class:`xsvd.labeled.base.Result`):
        ``U, S, V`` and ``explained_variance_ratio`` of the data themselves
        (``errors``: their estimated errors); per replicate
        ``replicate_explained_variance_ratio``, ``replicate_singular_values``
        and ``congruence`` (dims ``replicate, component``) and ``counts``
        (how often each sample was drawn, dims ``replicate, *dim``);
        ``explained_variance_ratio_ci`` and ``congruence_ci`` (dims
        ``component, bound``: lower, upper percentiles); all of them together
        as the Dataset ``replicates``. Every part stays on the data's device.
        ``settings``: ``missing``, ``standardize``, ``reads`` (of the data, in all),
        ``passes`` (the most of any batch), ``stopped`` (why, as :func:`xsvd.compressed`
        says it: ``"converged"``, ``"precision of float64 products"``, ``"max_passes"``,
        ``"space full"`` or ``"n_power_iter"``) and ``estimated_error`` (the largest
        estimated relative error of any replicate).

    Notes
    -----
    Congruence is ``|v . v_c|`` (Tucker's congruence coefficient; both unit
    norm): 1 for a pattern the resampling does not change, near 0 for one
    it replaces. Components are compared by position: two components with
    near-equal variance may swap between replicates (North et al. 1982) and
    then show a low congruence, as they should.

    The data are read ``passes + 1`` times per batch whatever ``n_replicates``
    (9 at most by default), a stripe at a time as the core reads them (Dask:
    chunk after chunk, one ``dask.compute`` per read, nothing rechunked): a
    stripe of features (every sample) gives every replicate's products for a
    pass at once; Dask data chunked along the samples only take two reads per
    pass (``2 passes + 1``). Data of any magnitude: the first read measures
    them, and data whose float64 products would overflow or underflow are read
    again, rescaled by powers of two. With ``missing="mean"`` the first read
    finds the features' means; over Dask stripes of samples the first batch's
    first read is made again where some feature has gaps. xeofs' ``EOFBootstrapper`` fits one
    model per replicate instead (``n`` decompositions of a resampled copy).

    Examples
    --------
    >>> import xsvd
    >>> sst = xsvd.datasets.climate_field(n_time=60, n_lat=10, n_lon=20, seed=0)
    >>> boot = xsvd.bootstrap(sst, k=3, n_replicates=20, dim="time", seed=0)
    >>> dict(boot.congruence.sizes)
    {'replicate': 20, 'component': 3}
    >>> bool(boot.congruence.isel(component=0).median() > 0.9)
    True
    """
    given, reading = split_options(options, (CompressedOptions, Reading), "bootstrap")
    _check("k", k, 1)
    _check("n_replicates", n_replicates, 1)
    check_flag("center", center)
    check_flag("standardize", reading.standardize)
    n = n_replicates
    opts = _resolved(given)
    if batch is not None:
        _check("batch", batch, 1)
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, e.g. 0.95, got {ci!r}.")
    layout, da, a, w, units = labeled_matrix(da, dim, weights, reading.device)
    rule = missing_rule(a.dtype, reading.missing, reading.negative_missing)
    if reading.standardize:  # each feature over its standard deviation: folded into the weights
        w = preprocess.standardized_weights(
            a, w, missing=reading.missing, negative_missing=reading.negative_missing
        )
        units = preprocess.standardized_units(units, da)
    m, nf = a.shape
    if k > min(m, nf):
        raise ValueError(f"k={k} is more than the {min(m, nf)} components of a {m} x {nf} matrix.")
    rng = np.random.default_rng(opts.seed)
    draws = rng.integers(0, m, size=(n, m))
    counts = np.stack([np.ones(m), *(np.bincount(d, minlength=m) for d in draws)], axis=1)
    l = min(k + opts.n_oversamples, m)
    reader = Reads(a, w, layout.feature_locator(), rule)
    size = batch or max(1, BATCH_BYTES // reader.replicate_bytes(l, opts.most_passes) - 1)
    xp = reader.xp
    S, ratio, dots, Vs, batches = [], [], [], [], []
    for start in range(1, n + 1, size):
        # every batch decomposes the data too (column 0): the patterns to compare with
        C = np.concatenate([counts[:, :1], counts[:, start : start + size]], axis=1)
        blocks = rng.standard_normal((C.shape[1], m, l))
        out = _run_batch(reader, C, blocks, k, opts, center, keep_patterns)
        if start == 1:
            data, turn = out.data, 1.0
            if not center and m > 1:  # one sample: nothing to center
                warn_uncentered(data, svd=False)
        else:  # this batch's original may have other signs than the first's
            same = xp.sum(_zero_nan(data.V) * _zero_nan(out.V[0, ...]), axis=0)
            turn = _flips(same < 0)
        S.append(out.S[int(start > 1) :, ...])  # the data's own once
        ratio.append(out.ratio[int(start > 1) :, ...])
        dots.append(out.dots[1:, ...] * turn)
        if keep_patterns:
            Vs.append(out.V[1:, ...])  # its signs are matched to the first original later
        batches.append(out)
    S, ratio = xp.concat(S), xp.concat(ratio)
    ones = xp.ones((1, k), dtype=xp.float64, device=backend.device(S))
    dots = xp.concat([ones, *dots])
    settings = _settings(opts, batches, reader, reading.missing)
    settings.update(center=bool(center), standardize=reading.standardize, ci=ci)
    parts = dict(S=S, ratio=ratio, dots=dots, data=data, Vs=Vs)
    parts = _parts(layout, reader.put(counts), parts, ci)
    record = {"settings": settings, "method": "bootstrap", "units": describe_units(units)}
    return BootstrapResult(parts, record)


def _flips(negative):
    """-1.0 where ``negative``, else 1.0 (any array library)."""
    xp = backend.api(negative)
    return 1.0 - 2.0 * xp.astype(negative, xp.float64)


def _zero_nan(x):
    return backend.api(x).where(backend.api(x).isnan(x), 0.0, x)


def _settings(opts, batches: list, reader: Reads, missing) -> dict:
    """``settings`` of the result (JSON-able), with the warnings they call for."""
    passes = max(b.passes for b in batches)
    stopped = worst(b.stopped for b in batches)
    reached = max(b.reached for b in batches)
    settings = ordered_settings(
        n_power_iter=passes - 1,
        n_oversamples=opts.n_oversamples,
        seed=opts.seed,
        passes=passes,
        missing=missing,
        reads=reader.reads,
        stopped=stopped,
        **({"tol": opts.tol} if opts.converges else {}),
        **({"max_passes": opts.max_passes} if opts.max_passes is not None else {}),
        estimated_error=reached,
        **({} if all(b.bounds for b in batches) else {"error_bounds": False}),
    )
    if opts.converges and reached > opts.tol and not opts.default_stop:
        warnings.warn(
            f"tol={opts.tol:g} was not reached in max_passes={opts.max_passes} passes over "
            f"the data: the largest estimated relative error of a replicate is {reached:.3g}. "
            "Pass a larger max_passes, a larger n_oversamples (wider blocks converge faster), "
            "or accept the estimates (res.errors, res.settings['estimated_error']).",
            RuntimeWarning,
            stacklevel=3,
        )
    if not opts.converges and stopped != SPACE_FULL and reached > FIXED_PASSES_WARNING:
        warnings.warn(
            f"n_power_iter={opts.n_power_iter} leaves the replicates unconverged: the largest "
            f"estimated relative error of a singular value or residual is {reached:.3g} "
            "(res.errors for the data's components, res.settings['estimated_error']). Leave "
            "out n_power_iter (the passes then stop when converged) or pass a larger one.",
            RuntimeWarning,
            stacklevel=3,
        )
    return settings


def _quantiles(x, levels):
    """Per column of ``x`` (n x k, any array library), the percentiles ``levels``: (k, 2),
    linear between order statistics as :func:`numpy.quantile`'s default."""
    xp = backend.api(x)
    s = xp.sort(x, axis=0)
    n = s.shape[0]
    out = []
    for q in levels:
        h = (n - 1) * q
        lo = int(np.floor(h))
        t = h - lo
        a, b = s[lo, :], s[min(lo + 1, n - 1), :]
        out.append(b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t)
    return xp.stack(out, axis=1)


def _parts(layout, counts, parts: dict, ci) -> dict:
    """The result's parts, labeled (their coordinates merged as a Dataset's)."""
    S, dots, original = parts["S"], parts["dots"], parts["data"].V
    xp = backend.api(S)
    k = S.shape[1]
    n = S.shape[0] - 1
    comp = layout.component_coord(k)
    rep = {REPLICATE: np.arange(n)}
    pair = (REPLICATE, COMPONENT)
    ones = xp.ones((1, k), dtype=xp.float64, device=backend.device(S))
    sign, _ = fix_signs(ones, _zero_nan(original))  # xsvd's sign rule: the signs it gives
    V = layout.label_features(original * sign, "V", {"long_name": "patterns of the data"})
    U = layout.label_samples(parts["data"].U * sign, "U", {"long_name": "scores of the data"})
    lo, hi = (1 - ci) / 2, (1 + ci) / 2
    congruence = xp.abs(dots[1:, ...])

    def interval(x):
        return xr.DataArray(
            _quantiles(x, (lo, hi)),
            dims=(COMPONENT, "bound"),
            coords={**comp, "bound": ["lower", "upper"]},
        )

    sample_shape = layout.sample_shape
    sample_coords = {
        name: c for name, c in layout.coords.items() if set(c.dims) <= set(layout.sample_dims)
    }
    ratio = parts["ratio"]
    S0 = xr.DataArray(S[0, ...], dims=(COMPONENT,), coords=comp)
    data = {
        "replicate_explained_variance_ratio": (pair, ratio[1:, ...]),
        "replicate_singular_values": (pair, S[1:, ...]),
        "congruence": (pair, congruence),
        "counts": (
            (REPLICATE, *layout.sample_dims),
            xp.reshape(xp.astype(counts[:, 1:].T, xp.int64), (n, *sample_shape)),
        ),
        "explained_variance_ratio": xr.DataArray(
            ratio[0, ...],
            dims=(COMPONENT,),
            attrs={"long_name": "fraction of total variance explained", "units": "1"},
        ),
        "S": S0,
        "V": V,
        "U": U,
        "explained_variance_ratio_ci": interval(ratio[1:, ...]),
        "congruence_ci": interval(congruence),
        "errors": errors_part(S0, parts["data"].errors),
    }
    if parts["Vs"]:
        allV = xp.concat(parts["Vs"])  # replicates x features x k
        allV = allV * _flips(dots[1:, ...] < 0)[:, None, :] * sign
        data["replicate_V"] = (
            (REPLICATE, COMPONENT, *layout.feature_dims),
            xp.reshape(xp.permute_dims(allV, (0, 2, 1)), (n, k, *layout.feature_shape)),
        )
    coords = {**rep, **comp, **sample_coords}
    coords.update({c: v for c, v in V.coords.items() if c not in coords})
    coords.update({c: v for c, v in U.coords.items() if c not in coords})
    ds = xr.Dataset(data, coords=coords)
    return {"replicate_V": None, **{name: ds[name] for name in ds.data_vars}}


#: ``bootstrap``'s per-replicate parts: their names in :attr:`BootstrapResult.replicates`.
_REPLICATE_PARTS = {
    "replicate_explained_variance_ratio": "explained_variance_ratio",
    "replicate_singular_values": "singular_values",
    "congruence": "congruence",
    "counts": "counts",
    "explained_variance_ratio_ci": "explained_variance_ratio_ci",
    "congruence_ci": "congruence_ci",
    "replicate_V": "replicate_V",
}


class BootstrapResult(Result):
    """The result of :func:`xsvd.bootstrap`: the data's decomposition and its replicates.

    ``U, S, V = res``, ``singular_values`` and ``explained_variance_ratio`` are
    the decomposition of the data themselves (the first ``k`` components);
    the replicates are ``replicate_singular_values``,
    ``replicate_explained_variance_ratio`` and ``congruence`` (dims
    ``replicate, component``), ``counts`` (each replicate's draws),
    ``explained_variance_ratio_ci``, ``congruence_ci`` and, with
    ``keep_patterns=True``, ``replicate_V``; ``replicates`` is all of them as
    one Dataset. ``settings["reads"]`` counts the reads of the data;
    ``errors`` are the solver's estimates for the data's decomposition
    (``settings["error_bounds"]`` as for :func:`xsvd.compressed`).
    """

    RECONSTRUCT = "a bootstrap describes the spread of the components; use `xsvd.svd` to rebuild."
    PROJECT = (
        "a bootstrap describes the spread of the components; project with `xsvd.svd`'s result."
    )
    OPTIONAL_PARTS = ("replicate_V", "errors")

    def __repr__(self) -> str:
        return (
            f"<xsvd.BootstrapResult: {self.k} components, "
            f"{self._parts['congruence'].sizes[REPLICATE]} replicates, "
            f"reads={self.settings['reads']}>"
        )

    @property
    def U(self) -> xr.DataArray:
        return self._parts["U"]

    @property
    def V(self) -> xr.DataArray:
        return self._parts["V"]

    @property
    def explained_variance_ratio(self) -> xr.DataArray:
        return self._parts["explained_variance_ratio"]

    def _part(self, name: str) -> xr.DataArray:
        part = self._parts.get(name)
        if part is None:
            raise AttributeError(f"{name} is kept only with `bootstrap(..., keep_patterns=True)`.")
        return part

    replicate_explained_variance_ratio = property(
        lambda self: self._part("replicate_explained_variance_ratio"),
        doc="Each replicate's explained variance ratios (replicate x component).",
    )
    replicate_singular_values = property(
        lambda self: quantify(self._part("replicate_singular_values"), self.unit_of("singular")),
        doc="Each replicate's singular values (replicate x component), in the units of ``S``.",
    )
    congruence = property(
        lambda self: self._part("congruence"),
        doc="Congruence of each replicate's pattern with the data's, ``abs(v @ v_c)``.",
    )
    counts = property(
        lambda self: self._part("counts"), doc="How often each replicate drew each sample."
    )
    explained_variance_ratio_ci = property(
        lambda self: self._part("explained_variance_ratio_ci"),
        doc="Percentile intervals of the explained variance ratios (component x bound).",
    )
    congruence_ci = property(
        lambda self: self._part("congruence_ci"),
        doc="Percentile intervals of the congruences (component x bound).",
    )
    replicate_V = property(
        lambda self: self._part("replicate_V"),
        doc="Every replicate's patterns, signs matched to the data's (``keep_patterns=True``).",
    )

    @property
    def replicates(self) -> xr.Dataset:
        """The replicates' parts as one Dataset (as :func:`bootstrap` returned before 0.2)."""
        return xr.Dataset(
            {
                name: self._parts[part].rename(name)
                for part, name in _REPLICATE_PARTS.items()
                if self._parts.get(part) is not None
            }
        )
