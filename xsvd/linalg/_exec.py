"""Run the solver's passes eagerly (NumPy/CuPy) or as a Dask graph.

The randomized solver is written once against this small interface:
``stripes`` (the data cut into stripes that each hold the whole "thin"
dimension), ``map`` (call a kernel on every stripe), ``sum`` (add up the
per-stripe partial results), ``call`` (a small computation on reduced
results) and ``array``/``concat`` (turn results into arrays of the input's
kind). The eager executor does all of that at once; the lazy one builds a
Dask graph, so the same code runs on the threaded scheduler and under
``dask.distributed`` (no shared memory between tasks is assumed).

The lazy executor re-reads the input in every pass: each pass reads a fresh
copy of the input's graph that is bound to the previous pass's result
(``dask.graph_manipulation.bind``), so chunks are produced, used and
released pass by pass instead of being held in memory for later passes.
"""

from __future__ import annotations

import functools
import operator
import threading
from contextlib import contextmanager
from typing import Any

import numpy as np


class Eager:
    """Everything computed at once, the data held as one in-memory stripe."""

    lazy = False

    def __init__(self, a, axis: int):
        self.a = a
        self.axis = axis  # 0: stripes are row blocks; 1: column blocks
        self.sizes = [a.shape[axis]]
        self.offsets = [0]

    def put(self, obj):
        return obj

    def stripes(self, after=None) -> list:
        return [self.a]

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        out = []
        for i, s in enumerate(stripes):
            extra = tuple(p[i] for p in per_stripe)
            out.append(fn(s, *extra, *args))
        return _unzip(out, nout)

    def call(self, fn, *args, nout: int | None = None):
        return fn(*args)

    def sum(self, parts):
        return functools.reduce(operator.add, parts)

    def array(self, obj, shape, dtype, meta=None):
        return obj

    def concat(self, parts, shapes, dtype, axis: int, meta=None):
        if len(parts) == 1:
            return parts[0]
        from .._backend import namespace

        return namespace(parts[0]).concatenate(parts, axis=axis)


class Lazy:
    """A Dask graph: one task per stripe and pass, tree reductions, small tasks."""

    lazy = True

    def __init__(self, a, axis: int, split_every: int = 8):
        self.a = a
        self.axis = axis
        self.sizes = list(a.chunks[axis])
        self.offsets = list(np.cumsum([0, *self.sizes[:-1]]))
        self.split_every = split_every

    def put(self, obj):
        import dask

        if obj is None or np.isscalar(obj):
            return obj
        return dask.delayed(obj, pure=True)

    def stripes(self, after=None) -> list:
        x = self.a
        if after is not None:
            from dask.graph_manipulation import bind

            x = bind(x, after)
        return list(x.to_delayed(optimize_graph=False).ravel())

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        import dask

        f = dask.delayed(_SingleThreadedBlas(fn), nout=nout if nout > 1 else None, pure=True)
        out = []
        for i, s in enumerate(stripes):
            extra = tuple(p[i] for p in per_stripe)
            out.append(f(s, *extra, *args))
        return _unzip(out, nout)

    def call(self, fn, *args, nout: int | None = None):
        import dask

        return dask.delayed(fn, nout=nout, pure=True)(*args)

    def sum(self, parts):
        import dask

        parts = list(parts)
        add = dask.delayed(_sum_all, pure=True)
        while len(parts) > 1:
            parts = [
                add(*parts[i : i + self.split_every])
                for i in range(0, len(parts), self.split_every)
            ]
        return parts[0]

    def array(self, obj, shape, dtype, meta=None):
        import dask.array as da

        return da.from_delayed(obj, shape=shape, dtype=dtype, meta=meta)

    def concat(self, parts, shapes, dtype, axis: int, meta=None):
        import dask.array as da

        arrays = [
            da.from_delayed(p, shape=s, dtype=dtype, meta=meta)
            for p, s in zip(parts, shapes, strict=True)
        ]
        return arrays[0] if len(arrays) == 1 else da.concatenate(arrays, axis=axis)


def _sum_all(*parts: Any):
    return functools.reduce(operator.add, parts)


def _unzip(results: list, nout: int):
    """Per-stripe results -> one list per output (the list itself when nout == 1)."""
    if nout == 1:
        return results
    return [[r[j] for r in results] for j in range(nout)]


class _SingleThreadedBlas:
    """Run a kernel with BLAS limited to one thread when inside a worker thread.

    Dask already runs one kernel per core; letting every kernel also start a
    multi-threaded BLAS oversubscribes the cores (measured: 60% slower on 2
    cores). This mirrors what dask.distributed's nanny does with
    ``OMP_NUM_THREADS=1``. Kernels called from the main thread (synchronous
    scheduler) keep the full BLAS.
    """

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        with blas_single_thread():
            return self.fn(*args, **kwargs)

    def __reduce__(self):
        return (_SingleThreadedBlas, (self.fn,))


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None


@contextmanager
def blas_single_thread():
    """Process-wide, reference-counted one-thread BLAS limit for worker threads."""
    global _blas_users, _blas_limiter
    if threading.current_thread() is threading.main_thread():
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:  # pragma: no cover - threadpoolctl is a dependency
                _blas_limiter = None
            else:
                _blas_limiter = threadpool_limits(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
