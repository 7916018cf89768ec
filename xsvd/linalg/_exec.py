"""Run the solver's passes eagerly (NumPy/CuPy) or with Dask.

The randomized solver is written once against this small interface:

- ``stripes(after)``: the data cut into *stripes* that each hold the whole
  thin dimension, each given as the list of its blocks along that dimension
  (kernels merge them a sub-block at a time, so no stripe-sized copy and no
  dask rechunk is ever made);
- ``map`` (a kernel on every stripe), ``sum`` (tree-add per-stripe partial
  results), ``call`` (small math on reduced results);
- ``checkpoint`` at the end of each pass (what the next pass needs);
- ``array``/``concat`` (turn results into arrays of the input's kind).

Three executors:

``Eager``
    In-memory NumPy/CuPy: everything runs at once, the data are one stripe.
``Lazy``
    One Dask graph for all passes (``compute=False``). Each pass reads a copy
    of the input's graph bound to the previous pass's result
    (``dask.graph_manipulation.bind``), so chunks are read again instead of
    held. Dask cannot re-create every graph this way (a rechunk inside the
    input's own graph is shared between the copies), so for such inputs the
    scheduler may hold chunks until the last pass.
``Stepwise``
    Dask, computed pass by pass (``compute=True``): a pass is one
    ``dask.compute`` of small results only, so every pass reads the chunks
    afresh whatever the input's graph, and nothing of the data outlives its
    pass. Runs the same on the threaded scheduler and dask.distributed. An
    optional ``progress`` object (with ``compute(obj, step)``) computes each
    pass while showing progress.
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
        return [[self.a]]

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        out = [fn(s, *(p[i] for p in per_stripe), *args) for i, s in enumerate(stripes)]
        return _unzip(out, nout)

    def call(self, fn, *args, nout: int | None = None):
        return fn(*args)

    def sum(self, parts):
        return functools.reduce(operator.add, parts)

    def checkpoint(self, obj):
        return obj

    def array(self, obj, shape, dtype, meta=None):
        return obj

    def concat(self, parts, shapes, dtype, axis: int, meta=None):
        if len(parts) == 1:
            return parts[0]
        from .._backend import namespace

        return namespace(parts[0]).concatenate(parts, axis=axis)


class Lazy:
    """All passes as one Dask graph: one task per stripe and pass, tree reductions."""

    lazy = True

    def __init__(self, a, axis: int, split_every: int = 8):
        self.a = a
        self.axis = axis
        self.sizes = list(a.chunks[axis])
        self.offsets = [int(o) for o in np.cumsum([0, *self.sizes[:-1]])]
        self.split_every = split_every

    def put(self, obj):
        import dask

        if obj is None or np.isscalar(obj):
            return obj
        return dask.delayed(obj, pure=True)

    def _blocks(self, x) -> list:
        blocks = x.to_delayed(optimize_graph=False)
        if self.axis == 1:
            blocks = blocks.T
        return [list(row) for row in blocks]

    def stripes(self, after=None) -> list:
        x = self.a
        if after is not None:
            from dask.graph_manipulation import bind

            x = bind(x, after)
        return self._blocks(x)

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        import dask

        f = dask.delayed(_SingleThreadedBlas(fn), nout=nout if nout > 1 else None, pure=True)
        out = [f(s, *(p[i] for p in per_stripe), *args) for i, s in enumerate(stripes)]
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

    def checkpoint(self, obj):
        return obj

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


class Stepwise(Lazy):
    """Dask computed pass by pass; small math on concrete results runs eagerly."""

    def __init__(self, a, axis: int, split_every: int = 8, progress=None):
        super().__init__(a, axis, split_every)
        self.progress = progress
        self.passes_done = 0

    def put(self, obj):
        return obj

    def stripes(self, after=None) -> list:
        return self._blocks(self.a)  # a fresh read of every chunk in each pass

    def call(self, fn, *args, nout: int | None = None):
        import dask

        if any(dask.is_dask_collection(a) for a in args):
            return super().call(fn, *args, nout=nout)
        return fn(*args)

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        import dask

        if any(dask.is_dask_collection(b) for s in stripes for b in s):
            return super().map(fn, stripes, *args, nout=nout, per_stripe=per_stripe)
        return Eager.map(self, fn, stripes, *args, nout=nout, per_stripe=per_stripe)

    def sum(self, parts):
        import dask

        if any(dask.is_dask_collection(p) for p in parts):
            return super().sum(parts)
        return functools.reduce(operator.add, parts)

    def checkpoint(self, obj):
        import dask

        self.passes_done += 1
        if self.progress is not None:
            return self.progress.compute(obj, step=self.passes_done)
        (out,) = dask.compute(obj)
        return out

    def array(self, obj, shape, dtype, meta=None):
        return obj

    def concat(self, parts, shapes, dtype, axis: int, meta=None):
        return Eager.concat(self, parts, shapes, dtype, axis, meta)


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
