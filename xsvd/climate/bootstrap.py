"""How stable is each EOF? A bootstrap of the samples that reads the data a few times in all.

A bootstrap replicate draws the ``m`` samples with replacement. Drawing
sample ``i`` ``c_i`` times is the same as giving it the integer weight
``c_i``: the replicate's covariance is that of

    B_c = diag(sqrt(c)) (A - 1 mu_c^T) diag(w),    mu_c = A^T c / m,

whose right singular vectors and singular values are those of the
explicitly resampled (and re-centered, weighted) data. So no resampled copy
is made, and every replicate's matrix is the data times small factors: one
read of a block of features gives every replicate's products at once.

The algorithm: block Krylov (block Lanczos with full reorthogonalization,
as :mod:`xsvd.core.randomized.small`) on each replicate's ``B_c B_c^T``
(samples x samples), all replicates in the same reads. The data are cut in
blocks of features holding every sample (Dask: the sample dimension in one
chunk, lazily), so each block applies every ``B_c B_c^T`` on its own:
``X_j^T [T_1 .. T_B]`` and then ``X_j (D_j^2 ...)`` from one read of the
block. After ``n_power_iter + 1`` such reads, Rayleigh-Ritz gives each
replicate's ``k`` leading singular values and sample-side vectors; one more
read gives the patterns ``B_c^T u / s`` and their congruence with the
original's. In all ``n_power_iter + 2`` reads of the data, for all
replicates together (times the number of batches with ``batch=``). Every
small step is float64.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from ..core import MissingValueError, backend, fix_signs
from ..core.randomized.small import hstack, orth, orth_against, ritz
from ..labeled.api import labeled_matrix
from ..labeled.base import Result
from ..labeled.layout import COMPONENT

__all__ = ["bootstrap", "BootstrapResult", "DEFAULT_BOOTSTRAP_POWER_ITER"]

#: Krylov iterations (reads of the data, less two) by default.
DEFAULT_BOOTSTRAP_POWER_ITER = 4
#: NumPy data are multiplied in blocks of features holding about this many intermediates.
_BLOCK_VALUES = 2**22
REPLICATE = "replicate"


def _block(x, w, center: bool):
    """A block of every sample x some features in float64: ``(x, w, all-NaN mask)``."""
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    dead = nan.all(axis=0)
    if (nan.any(axis=0) & ~dead).any():
        raise MissingValueError(
            f"{int((nan.any(axis=0) & ~dead).sum())} feature(s) are NaN at some samples but "
            "not all: the bootstrap needs complete features (NaN at every sample, e.g. land, "
            "is fine). Fill them first (e.g. `da.interpolate_na(dim)`) or drop them."
        )
    x = np.where(dead, 0.0, x)
    if center:  # the full sample's mean: replicate means are then small corrections
        x = x - x.mean(axis=0)
    w = np.ones(x.shape[1]) if w is None else np.asarray(w, dtype=np.float64).reshape(-1)
    return x, np.where(dead, 0.0, w), dead


def _apply(x, w, counts, T, center: bool):
    """One block's share of ``B_c B_c^T T_c`` for every replicate, and of ``||B_c||_F^2``.

    ``counts`` (m x B), ``T`` (B x m x l). Returns a flat vector: the (B, m, l)
    products, then the B sums of squares.
    """
    x, w, _ = _block(x, w, center)
    m = x.shape[0]
    B, _, l = T.shape
    s = np.sqrt(counts)  # m x B
    mu = x.T @ counts / m if center else np.zeros((x.shape[1], B))  # features x B
    ST = s.T[:, :, None] * T  # B x m x l
    Y = (x.T @ ST.transpose(1, 0, 2).reshape(m, B * l)).reshape(-1, B, l)
    Y = w[:, None, None] * (Y - mu[:, :, None] * ST.sum(axis=1)[None])
    DY = w[:, None, None] * Y
    out = (x @ DY.reshape(-1, B * l)).reshape(m, B, l).transpose(1, 0, 2)
    out = s.T[:, :, None] * (out - np.einsum("fb,fbl->bl", mu, DY)[:, None, :])
    w2 = w[:, None] ** 2
    ss = ((x**2).T @ counts * w2).sum(axis=0) - m * (mu**2 * w2).sum(axis=0)
    return np.concatenate([out.ravel(), ss])


def _patterns(x, w, counts, U, S, center: bool, keep: bool):
    """One block's patterns ``B_c^T u / s`` and their dot products with the original's.

    Returns ``(dots (B, k), V)`` with ``V`` (B or 1, features, k): every
    replicate's (``keep``) or the original's; NaN where the data are all NaN.
    """
    x, w, dead = _block(x, w, center)
    m = x.shape[0]
    B, _, k = U.shape
    s = np.sqrt(counts)
    mu = x.T @ counts / m if center else np.zeros((x.shape[1], B))
    SU = s.T[:, :, None] * U
    V = (x.T @ SU.transpose(1, 0, 2).reshape(m, B * k)).reshape(-1, B, k)
    V = w[:, None, None] * (V - mu[:, :, None] * SU.sum(axis=1)[None])
    with np.errstate(divide="ignore", invalid="ignore"):
        V = np.where(S[None] > 0, V / S[None], 0.0).transpose(1, 0, 2)  # B x f x k
    dots = np.einsum("fk,bfk->bk", V[0], V)
    V = V if keep else V[:1]
    V[:, dead] = np.nan
    return dots, V


class _Reader:
    """Runs a per-block function over blocks of features that hold every sample.

    One call of :meth:`sum` or :meth:`gather` is one read of the data (one
    ``dask.compute`` for Dask data).
    """

    def __init__(self, a, w, width: int):
        self.a, self.w = a, w
        self.reads = 0
        if backend.is_dask(a):
            self.a = a.rechunk({0: -1}) if len(a.chunks[0]) > 1 else a
            edges = np.cumsum((0, *self.a.chunks[1]))
            self.blocks = list(self.a.to_delayed().ravel())
        else:
            step = max(64, _BLOCK_VALUES // max(width, 1))
            edges = np.r_[np.arange(0, a.shape[1], step), a.shape[1]]
            self.blocks = [a[:, i:j] for i, j in zip(edges[:-1], edges[1:], strict=True)]
        self.weights = [
            None if w is None else w[i:j] for i, j in zip(edges[:-1], edges[1:], strict=True)
        ]

    def _parts(self, fn, *args):
        if backend.is_dask(self.a):
            from dask import delayed

            fn = delayed(fn, pure=True)
        return [fn(b, w, *args) for b, w in zip(self.blocks, self.weights, strict=True)]

    def sum(self, fn, *args):
        parts = self._parts(fn, *args)
        self.reads += 1
        if not backend.is_dask(self.a):
            return sum(parts[1:], parts[0])
        import dask
        from dask import delayed

        while len(parts) > 1:  # a tree: few partial sums in memory at once
            pairs = [delayed(np.add)(p, q) for p, q in zip(parts[::2], parts[1::2], strict=False)]
            parts = pairs + (parts[-1:] if len(parts) % 2 else [])
        return dask.compute(parts[0])[0]

    def gather(self, fn, *args):
        parts = self._parts(fn, *args)
        self.reads += 1
        if backend.is_dask(self.a):
            import dask

            parts = dask.compute(*parts)
        return list(parts)


def _check(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")


def bootstrap(
    da: xr.DataArray,
    k: int,
    n_replicates: int = 100,
    *,
    dim: Hashable | Sequence[Hashable] | None = None,
    seed: int | None = None,
    center: bool = True,
    weights: xr.DataArray | None = None,
    n_power_iter: int = DEFAULT_BOOTSTRAP_POWER_ITER,
    n_oversamples: int = 10,
    ci: float = 0.95,
    batch: int | None = None,
    keep_patterns: bool = False,
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
        NumPy- or Dask-backed data; NaN only in features NaN at every sample.
    k : int
        Components compared.
    n_replicates : int, default 100
        Replicates (was ``n`` before version 0.2).
    dim : hashable or sequence, optional
        Sample dimension(s), resampled; default as :func:`xsvd.svd`.
    seed : int, optional
        Seed of the resampling and of the random start blocks.
    center : bool, default True
        Remove each feature's mean (each replicate's own).
    weights : xarray.DataArray, optional
        Feature weights, e.g. :func:`xsvd.coslat_weights`.
    n_power_iter : int, default 4
        Krylov iterations: ``n_power_iter + 1`` reads build each replicate's
        Krylov space of ``(n_power_iter + 1) * (k + n_oversamples)``
        dimensions (exact when that covers the samples).
    n_oversamples : int, default 10
        Extra columns per block.
    ci : float, default 0.95
        Level of the percentile intervals ``*_ci``.
    batch : int, optional
        At most this many replicates per set of reads (default: all); each
        batch reads the data ``n_power_iter + 2`` times. Memory holds about
        ``batch * samples * (k + n_oversamples) * (n_power_iter + 2)``
        float64 numbers for the Krylov spaces.
    keep_patterns : bool, default False
        Also return every replicate's patterns (``replicate_V``), signs
        matched to the original's.

    Returns
    -------
    BootstrapResult
        A result of the one family (:class:`xsvd.labeled.base.Result`):
        ``U, S, V`` and ``explained_variance_ratio`` of the data themselves;
        per replicate ``replicate_explained_variance_ratio``,
        ``replicate_singular_values`` and ``congruence`` (dims ``replicate,
        component``) and ``counts`` (how often each sample was drawn, dims
        ``replicate, *dim``); ``explained_variance_ratio_ci`` and
        ``congruence_ci`` (dims ``component, bound``: lower, upper
        percentiles); all of them together as the Dataset ``replicates``.
        ``settings["reads"]``: the reads of the data made.

    Notes
    -----
    Congruence is ``|v . v_c|`` (Tucker's congruence coefficient; both unit
    norm): 1 for a pattern the resampling does not change, near 0 for one
    it replaces. Components are compared by position: two components with
    near-equal variance may swap between replicates (North et al. 1982) and
    then show a low congruence, as they should.

    The data are read ``n_power_iter + 2`` times per batch whatever ``n``
    (6 by default): each read multiplies a block of features (holding every
    sample; Dask data get the sample dimension in one chunk, lazily) with
    every replicate's current block. xeofs' ``EOFBootstrapper`` fits one
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
    _check("k", k, 1)
    _check("n_replicates", n_replicates, 1)
    n = n_replicates
    _check("n_power_iter", n_power_iter, 0)
    _check("n_oversamples", n_oversamples, 0)
    if batch is not None:
        _check("batch", batch, 1)
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, e.g. 0.95, got {ci!r}.")
    layout, da, a, w, _ = labeled_matrix(da, dim, weights)
    m, nf = a.shape
    if k > min(m, nf):
        raise ValueError(f"k={k} is more than the {min(m, nf)} components of a {m} x {nf} matrix.")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, m, size=(n, m))
    counts = np.stack([np.ones(m), *(np.bincount(d, minlength=m) for d in draws)], axis=1)
    l = min(k + n_oversamples, m)
    size = n if batch is None else batch
    reader = _Reader(a, w, (min(size, n) + 1) * l)
    S, ss, dots, Vs, U0 = [], [], [], [], None
    for start in range(1, n + 1, size):
        # every batch decomposes the data too (column 0): the patterns to compare with
        C = np.concatenate([counts[:, :1], counts[:, start : start + size]], axis=1)
        out = _batch(reader, C, k, l, n_power_iter, center, rng, keep_patterns)
        if start == 1:
            S.append(out[0][:1])
            ss.append(out[1][:1])
            original, U0 = out[2][0], out[4]
            turn = np.ones(k)
        else:  # this batch's original may have other signs than the first's
            turn = np.where(
                np.einsum("fk,fk->k", *map(np.nan_to_num, (original, out[2][0]))) < 0, -1.0, 1.0
            )
        S.append(out[0][1:])
        ss.append(out[1][1:])
        dots.append(out[3][1:] * turn)
        if keep_patterns:
            Vs.append(out[2][1:])  # its signs are matched to the first original later
    S, ss = np.concatenate(S), np.concatenate(ss)
    dots = np.concatenate([np.ones((1, k)), *dots])
    ratio = np.where(ss[:, None] > 0, S**2 / np.where(ss > 0, ss, 1)[:, None], 0.0)
    ds = _dataset(layout, counts, S, ratio, dots, original, Vs, ci, seed, reader.reads, locals())
    return BootstrapResult.from_replicates(ds)


def _batch(reader, C, k, l, q, center, rng, keep):
    """One batch of replicates: ``(S (B, k), ||B_c||^2 (B,), V, dots (B, k), U of the
    data (m, k))``."""
    m, B = C.shape
    T = orth(rng.standard_normal((B, m, l)))
    bases, crosses, ss = [], [], None
    for step in range(q + 1):
        flat = reader.sum(_apply, C, T, center)
        size = B * m * T.shape[2]
        Z, ss = flat[:size].reshape(T.shape), flat[size:]
        bases.append(T)
        crosses.append(Z)
        room = m - sum(x.shape[2] for x in bases)  # dimensions the Krylov space lacks
        if step == q or room <= 0:
            break
        T = np.stack([orth_against(Z[b], [x[b] for x in bases], min(l, room)) for b in range(B)])
    U = np.empty((B, m, k))
    S = np.empty((B, k))
    for b in range(B):
        K = hstack([x[b] for x in bases])
        lam, X = ritz(K, hstack([z[b] for z in crosses]))
        U[b] = K @ X[:, :k]
        S[b] = np.sqrt(lam[:k])
    parts = reader.gather(_patterns, C, U, S, center, keep)
    dots = sum(p[0] for p in parts)
    V = np.concatenate([p[1] for p in parts], axis=1)  # (B or 1) x features x k
    return S, ss, V, dots, U[0]


def _dataset(layout, counts, S, ratio, dots, original, Vs, ci, seed, reads, opts) -> xr.Dataset:
    k = S.shape[1]
    n = S.shape[0] - 1
    comp = layout.component_coord(k)
    rep = {REPLICATE: np.arange(n)}
    pair = (REPLICATE, COMPONENT)
    V0 = np.nan_to_num(original)
    _, fixed = fix_signs(np.zeros((1, k)), V0)  # xsvd's sign rule for the original patterns
    sign = np.where(np.all(fixed == V0, axis=0), 1.0, -1.0)
    V = layout.label_features(original * sign, "V", {"long_name": "patterns of the data"})
    U = layout.label_samples(opts["U0"] * sign, "U", {"long_name": "scores of the data"})
    lo, hi = (1 - ci) / 2, (1 + ci) / 2
    congruence = np.abs(dots[1:])

    def interval(x):
        return xr.DataArray(
            np.quantile(x, [lo, hi], axis=0).T,
            dims=(COMPONENT, "bound"),
            coords={**comp, "bound": ["lower", "upper"]},
        )

    sample_shape = layout.sample_shape
    sample_coords = {
        name: c for name, c in layout.coords.items() if set(c.dims) <= set(layout.sample_dims)
    }
    data = {
        "explained_variance_ratio": (pair, ratio[1:]),
        "singular_values": (pair, S[1:]),
        "congruence": (pair, congruence),
        "counts": (
            (REPLICATE, *layout.sample_dims),
            counts[:, 1:].T.reshape(n, *sample_shape).astype(np.int64),
        ),
        "original_explained_variance_ratio": ((COMPONENT,), ratio[0]),
        "original_singular_values": ((COMPONENT,), S[0]),
        "V": V,
        "U": U,
        "explained_variance_ratio_ci": interval(ratio[1:]),
        "congruence_ci": interval(congruence),
    }
    if Vs:
        allV = np.concatenate(Vs)  # replicates x features x k
        allV = allV * np.where(dots[1:] < 0, -1.0, 1.0)[:, None, :] * sign
        data["replicate_V"] = (
            (REPLICATE, COMPONENT, *layout.feature_dims),
            allV.transpose(0, 2, 1).reshape(n, k, *layout.feature_shape),
        )
    coords = {**rep, **comp, **sample_coords}
    coords.update({c: v for c, v in V.coords.items() if c not in coords})
    coords.update({c: v for c, v in U.coords.items() if c not in coords})
    attrs = {
        "n_power_iter": opts["n_power_iter"],
        "n_oversamples": opts["n_oversamples"],
        "seed": "None" if seed is None else seed,
        "ci": ci,
        "center": int(opts["center"]),
        "reads": reads,
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)


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
    one Dataset. ``settings["reads"]`` counts the reads of the data. The
    errors of the data's decomposition are not estimated (NaN).
    """

    RECONSTRUCT = "a bootstrap describes the spread of the components; use `xsvd.svd` to rebuild."
    PROJECT = (
        "a bootstrap describes the spread of the components; project with `xsvd.svd`'s result."
    )
    OPTIONAL_PARTS = ("replicate_V",)

    def __init__(self, parts: dict, record: dict):
        self._parts = dict(parts)
        self._record = dict(record)
        self.settings = dict(record["settings"])
        self.method = "bootstrap"

    @classmethod
    def from_replicates(cls, ds: xr.Dataset) -> BootstrapResult:
        """The result of the Dataset that :func:`bootstrap` assembles."""
        parts = {"S": ds["original_singular_values"].rename("S"), "U": ds["U"], "V": ds["V"]}
        parts["explained_variance_ratio"] = (
            ds["original_explained_variance_ratio"]
            .rename("explained_variance_ratio")
            .assign_attrs(long_name="fraction of total variance explained", units="1")
        )
        for part, name in _REPLICATE_PARTS.items():
            parts[part] = ds[name].rename(part) if name in ds else None
        settings = {key: (None if v == "None" else v) for key, v in ds.attrs.items()}
        settings["center"] = bool(settings["center"])
        return cls(parts, {"settings": settings})

    @classmethod
    def from_state(cls, parts: dict, record: dict) -> BootstrapResult:
        return cls(parts, record)

    def state(self) -> tuple[dict, dict]:
        return dict(self._parts), dict(self._record)

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
    def singular_values(self) -> xr.DataArray:
        return self._parts["S"]

    S = singular_values

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
        lambda self: self._part("replicate_singular_values"),
        doc="Each replicate's singular values (replicate x component).",
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
