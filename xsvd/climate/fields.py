"""One field as the (samples x features) matrix of a matrix-free method, never copied.

:func:`prepare_field` reads a field once for its feature statistics (NaN
count, mean, standard deviation) and returns a :class:`Field` whose products
with small matrices (:meth:`Field.times`, :meth:`Field.t_times`) apply
centering and weights as rank-one and diagonal corrections: the data are
never centered, weighted or filled in memory. :func:`cross_products` gives
both products of two fields' cross matrix ``Bl^T Br`` with one read of each
field (a block of samples of both at a time). Features that are NaN at every
sample (land in an ocean field) are left out and come back as NaN; a NaN at
some samples only is a :class:`~xsvd.MissingValueError`. Dask data are read
once per product (each returns a computed NumPy array). Used by
:func:`xsvd.mca` and :func:`xsvd.extended_eof`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core import backend
from ..core.missing import MissingValueError
from ..labeled.layout import Layout
from ..labeled.preprocess import weights_vector

__all__ = [
    "Field",
    "prepare_field",
    "product",
    "cross_products",
]

#: Columns per block when a NumPy field is worked on a block at a time (~32 MiB of float64).
BLOCK_VALUES = 1 << 22
#: Values of each field per block of samples in :func:`cross_products` (~32 MiB of float64;
#: measured on 2 cores, 2 x 3,000 x 16,200: 4 MiB blocks took 1.3x as long, 0.5 MiB 2.4x).
ROW_BLOCK_VALUES = 1 << 22


@dataclass(frozen=True)
class Field:
    """A field's matrix ``X`` (samples x kept features) and ``B = (X - 1 mu^T) diag(d)``.

    ``mean`` is ``mu`` (zeros without centering), ``scale`` the diagonal
    ``d`` (weights, over the standard deviations with ``standardize``),
    ``std`` the features' standard deviations (``ddof=0``, for correlations),
    ``kept`` which features of the layout are in ``data``.
    """

    layout: Layout
    data: Any
    kept: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    std: np.ndarray
    dtype: Any

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.data.shape)

    def times(self, W) -> np.ndarray:
        """``B W`` (samples x l), one read: ``X (d W) - 1 (mu^T d W)``."""
        dW = W * self.scale[:, None]
        return product(self.data, dW.astype(self.dtype, copy=False)) - self.mean @ dW

    def t_times(self, T, *, weighted: bool = True) -> np.ndarray:
        """``B^T T`` (kept features x l), one read: ``d (X^T T - mu 1^T T)``.

        ``weighted=False``: ``(X - 1 mu^T)^T T``, without ``d``.
        """
        T = np.asarray(T, dtype=np.float64)
        out = product(self.data.T, T.astype(self.dtype, copy=False))
        out -= self.mean[:, None] * T.sum(axis=0)[None, :]
        return out * self.scale[:, None] if weighted else out

    def blocks(self, *, weighted: bool = True):
        """``(columns, B[:, columns])`` in float64, a block of columns at a time (NumPy);
        ``weighted=False``: of ``X - 1 mu^T``."""
        m, n = self.shape
        step = max(1, BLOCK_VALUES // max(m, 1))
        for j in range(0, n, step):
            cols = slice(j, min(n, j + step))
            block = np.array(self.data[:, cols], dtype=np.float64)  # a copy
            block -= self.mean[cols]
            yield cols, (block * self.scale[cols] if weighted else block)

    def centered(self):
        """``B`` as a lazy Dask array (Dask data only)."""
        x = self.data.astype(np.float64)
        return (x - self.mean[None, :]) * self.scale[None, :]

    def full(self, values, fill=np.nan) -> np.ndarray:
        """Kept-feature rows (kept x k) back on every feature of the layout, ``fill`` elsewhere."""
        values = np.asarray(values)
        out = np.full((self.kept.size, *values.shape[1:]), fill, dtype=np.float64)
        out[self.kept] = values
        return out

    def correlations(self, scores) -> np.ndarray:
        """Correlation of every kept feature with every column of ``scores`` (one read)."""
        s = np.asarray(scores, dtype=np.float64)
        s = s - s.mean(axis=0)
        cov = self.t_times(s, weighted=False)
        norm = np.sqrt((s**2).sum(axis=0))[None, :] * (self.std * np.sqrt(self.shape[0]))[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norm > 0, cov / np.where(norm > 0, norm, 1), np.nan)


def product(x, M) -> np.ndarray:
    """``x @ M`` as a float64 NumPy array; a Dask ``x`` is read once (computed here)."""
    if backend.is_dask(x):
        (out,) = backend.compute(x @ M)
        return np.asarray(backend.to_numpy(out), dtype=np.float64)
    return np.asarray(backend.to_numpy(x @ M), dtype=np.float64)


def cross_products(fl: Field, fr: Field, W, T) -> tuple[np.ndarray, np.ndarray]:
    """``(Bl^T (Br W), Br^T (Bl T))`` in float64, reading each field once.

    The fields share the samples: per block of samples ``i``, ``Br_i W`` and
    ``Bl_i T`` are formed and at once multiplied back, ``Bl_i^T (Br_i W)`` and
    ``Br_i^T (Bl_i T)``, so each block of each field is read once for both
    products (NumPy: blocks of ``ROW_BLOCK_VALUES`` values per field; Dask:
    one graph for both, so each chunk of each field is produced once; chunks
    along the samples keep it streaming, a field stored in one chunk along
    the samples is held until the other's products are done). Centering and
    weights are the rank-one and diagonal corrections of :meth:`Field.times`
    and :meth:`Field.t_times`. ``W`` (right features x a) and ``T`` (left
    features x b) may have no columns.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> left = xr.DataArray(rng.standard_normal((30, 4)), dims=("time", "x"))
    >>> right = xr.DataArray(rng.standard_normal((30, 3)), dims=("time", "y"))
    >>> fl, fr = prepare_field(left, "time"), prepare_field(right, "time")
    >>> CW, CtT = cross_products(fl, fr, np.eye(3), np.eye(4))
    >>> Bl, Br = left.values - left.values.mean(0), right.values - right.values.mean(0)
    >>> bool(np.allclose(CW, Bl.T @ Br) and np.allclose(CtT, Br.T @ Bl))
    True
    """
    W, T = np.asarray(W, dtype=np.float64), np.asarray(T, dtype=np.float64)
    dW, dT = W * fr.scale[:, None], T * fl.scale[:, None]
    cW, cT = fr.mean @ dW, fl.mean @ dT  # the rank-one parts of Br W and Bl T
    dWc, dTc = dW.astype(fr.dtype, copy=False), dT.astype(fl.dtype, copy=False)
    if backend.is_dask(fl.data) or backend.is_dask(fr.data):
        gl, sr, gr, sl = _lazy_cross(fl, fr, dWc, cW, dTc, cT)
    else:
        gl, gr = np.zeros((fl.shape[1], W.shape[1])), np.zeros((fr.shape[1], T.shape[1]))
        sr, sl = np.zeros(W.shape[1]), np.zeros(T.shape[1])
        m = fl.shape[0]
        step = max(1, ROW_BLOCK_VALUES // max(fl.shape[1], fr.shape[1], 1))
        for r in range(0, m, step):
            xl, xr_ = fl.data[r : r + step], fr.data[r : r + step]
            if W.shape[1]:
                yr = np.asarray(backend.to_numpy(xr_ @ dWc), dtype=np.float64) - cW
                gl += backend.to_numpy(xl.T @ yr.astype(fl.dtype, copy=False))
                sr += yr.sum(axis=0)
            if T.shape[1]:
                yl = np.asarray(backend.to_numpy(xl @ dTc), dtype=np.float64) - cT
                gr += backend.to_numpy(xr_.T @ yl.astype(fr.dtype, copy=False))
                sl += yl.sum(axis=0)
    CW = (gl - fl.mean[:, None] * sr[None, :]) * fl.scale[:, None]
    CtT = (gr - fr.mean[:, None] * sl[None, :]) * fr.scale[:, None]
    return CW, CtT


def _lazy_cross(fl: Field, fr: Field, dWc, cW, dTc, cT):
    """The sums of :func:`cross_products` from one Dask graph: ``(Xl^T Yr, 1^T Yr, Xr^T Yl,
    1^T Yl)`` with ``Yr = Xr dW - 1 cW^T`` and ``Yl = Xl dT - 1 cT^T``."""
    import dask.array as da

    rows = next(f.data.chunks[0] for f in (fl, fr) if backend.is_dask(f.data))
    xl, xr_ = (
        f.data if backend.is_dask(f.data) else da.from_array(f.data, chunks=(rows, -1))
        for f in (fl, fr)
    )
    out = []
    for x, other, d, c, dtype in ((xr_, xl, dWc, cW, fl.dtype), (xl, xr_, dTc, cT, fr.dtype)):
        if d.shape[1] == 0:
            out += [np.zeros((other.shape[1], 0)), np.zeros(0)]
            continue
        y = (x @ d).astype(np.float64) - c[None, :]
        out += [other.T @ y.astype(dtype), y.sum(axis=0)]
    parts = backend.compute(*out)
    return tuple(np.asarray(backend.to_numpy(p), dtype=np.float64) for p in parts)


def prepare_field(
    obj: xr.DataArray,
    dim,
    weights=None,
    *,
    center: bool = True,
    standardize: bool = False,
    what: str = "data",
) -> Field:
    """The :class:`Field` of ``obj``: one read for NaN counts, means and standard deviations."""
    layout = Layout.from_dataarray(obj, dim)
    a = layout.to_matrix(obj)
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise TypeError(f"The {what} must be real numbers, got dtype {a.dtype}.")
    w = weights_vector(layout, weights)
    nans, mean, var = _moments(a)
    m = a.shape[0]
    partial = (nans > 0) & (nans < m)
    if partial.any():
        where = layout.feature_locator()(np.flatnonzero(partial))
        raise MissingValueError(
            f"The {what} have NaN at some but not all samples of {int(partial.sum())} "
            f"feature(s): {where}. Features that are NaN at every sample are left out; fill "
            "the others first (e.g. `da.interpolate_na(dim)`) or drop them (`da.dropna(...)`)."
        )
    kept = nans == 0
    if not kept.any():
        raise ValueError(f"The {what} are NaN everywhere: no feature to decompose.")
    std = np.sqrt(var[kept])
    scale = np.ones(int(kept.sum())) if w is None else w[kept]
    if standardize:
        with np.errstate(divide="ignore"):
            scale = np.where(std > 0, scale / np.where(std > 0, std, 1), 0.0)
    data = a if kept.all() else a[:, np.flatnonzero(kept)]
    dtype = np.float32 if a.dtype == np.float32 else np.float64
    mean = mean[kept] if center else np.zeros(int(kept.sum()))
    return Field(layout, data, kept, mean, scale, std, dtype)


def _moments(a):
    """Per feature: NaN count, mean and variance (``ddof=0``) of the present values."""
    if backend.is_dask(a):
        import dask.array as da

        x = a.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            parts = backend.compute(
                da.isnan(x).sum(axis=0), da.nanmean(x, axis=0), da.nanvar(x, axis=0)
            )
        return tuple(np.asarray(p) for p in parts)
    m, n = a.shape
    nans, mean, var = np.empty(n), np.empty(n), np.empty(n)
    step = max(1, BLOCK_VALUES // max(m, 1))
    for j in range(0, n, step):
        x = np.asarray(a[:, j : j + step], dtype=np.float64)
        nans[j : j + step] = np.isnan(x).sum(axis=0)
        present = nans[j : j + step] < m
        mu = np.zeros(x.shape[1])
        mu[present] = np.nanmean(x[:, present], axis=0)
        mean[j : j + step] = np.where(present, mu, np.nan)
        v = np.zeros(x.shape[1])
        v[present] = np.nanvar(x[:, present], axis=0)
        var[j : j + step] = np.where(present, v, np.nan)
    return nans, mean, var
