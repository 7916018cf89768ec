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
    """Everything computed at once on in-memory data.

    The data are one stripe, or (``threads > 1``) views of ``stripe`` rows or
    columns each, run on a small thread pool with one BLAS thread per kernel.
    """

    def __init__(self, a, axis: int, threads: int = 1, stripe: int | None = None):
        self.a = a
        self.axis = axis  # 0: stripes are row blocks; 1: column blocks
        self.threads = threads
        length = a.shape[axis]
        step = length if stripe is None else stripe
        self.offsets = list(range(0, length, step))
        self.sizes = [min(step, length - o) for o in self.offsets]

    def put(self, obj):
        return obj

    def stripes(self, after=None) -> list:
        if len(self.offsets) == 1:
            return [[self.a]]
        if self.axis == 0:
            return [[self.a[o : o + s]] for o, s in zip(self.offsets, self.sizes, strict=True)]
        return [[self.a[:, o : o + s]] for o, s in zip(self.offsets, self.sizes, strict=True)]

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        calls = [(s, *(p[i] for p in per_stripe), *args) for i, s in enumerate(stripes)]
        if self.threads > 1 and len(calls) > 1:
            from concurrent.futures import ThreadPoolExecutor

            kernel = _SingleThreadedBlas(fn)
            with ThreadPoolExecutor(min(self.threads, len(calls))) as pool:
                out = list(pool.map(lambda c: kernel(*c), calls))
        else:
            out = [fn(*c) for c in calls]
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


class _Stripes(list):
    """Stripes of a Dask array: per stripe, the keys of its blocks; plus the array."""

    def __init__(self, keys, collection):
        super().__init__(keys)
        self.collection = collection


class Lazy:
    """All passes as one Dask graph: one task per stripe and pass, tree reductions.

    Graph layers are built directly (one layer per step, O(number of chunks)),
    not through one ``dask.delayed`` call per stripe, which would re-optimize
    the whole input graph for every stripe.
    """

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

    def _stripes_of(self, x) -> _Stripes:
        nb0, nb1 = x.numblocks
        if self.axis == 0:
            keys = [[(x.name, i, j) for j in range(nb1)] for i in range(nb0)]
        else:
            keys = [[(x.name, i, j) for i in range(nb0)] for j in range(nb1)]
        return _Stripes(keys, x)

    def stripes(self, after=None) -> list:
        x = self.a
        if after is not None:
            from dask.graph_manipulation import bind

            x = bind(x, after)
        return self._stripes_of(x)

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        """``fn`` on every stripe (blocks of the data) or every per-stripe result."""
        from dask.base import tokenize

        if isinstance(stripes, _Stripes):  # blocks of the data: a list of keys each
            items = [list(keys) for keys in stripes]
            sources = [stripes.collection]
        else:  # per-stripe results of an earlier step (Delayed)
            items = [d.key for d in stripes]
            sources = list(stripes)
        token = tokenize(fn.__name__, items, args, per_stripe)
        name = f"xsvd-{fn.__name__.strip('_')}-{token}"
        kernel = _SingleThreadedBlas(fn)
        refs = [_ref(a) for a in args]
        dsk = {}
        for i, item in enumerate(items):
            extra = [p[i] for p in per_stripe]
            dsk[(name, i)] = (kernel, item, *extra, *refs)
            for j in range(nout if nout > 1 else 0):
                dsk[(f"{name}-{j}", i)] = (operator.getitem, (name, i), j)
        graph = _graph(name, dsk, [*sources, *args])
        n = len(items)
        if nout == 1:
            return [_delayed((name, i), graph, name) for i in range(n)]
        return [[_delayed((f"{name}-{j}", i), graph, name) for i in range(n)] for j in range(nout)]

    def call(self, fn, *args, nout: int | None = None):
        import dask

        return dask.delayed(fn, nout=nout, pure=True)(*args)

    def sum(self, parts):
        from dask.base import tokenize

        parts = list(parts)
        if len(parts) == 1:
            return parts[0]
        name = f"xsvd-sum-{tokenize([p.key for p in parts])}"
        dsk = {}
        level = [p.key for p in parts]
        depth = 0
        while len(level) > 1:
            nxt = []
            for g in range(0, len(level), self.split_every):
                key = (name, depth, g // self.split_every)
                dsk[key] = (_sum_all, *level[g : g + self.split_every])
                nxt.append(key)
            level, depth = nxt, depth + 1
        return _delayed(level[0], _graph(name, dsk, parts), name)

    def checkpoint(self, obj):
        return obj

    def array(self, obj, shape, dtype, meta=None):
        import dask.array as da

        return da.from_delayed(obj, shape=shape, dtype=dtype, meta=meta)

    def concat(self, parts, shapes, dtype, axis: int, meta=None):
        import dask.array as da
        from dask.base import tokenize

        if len(parts) == 1:
            return da.from_delayed(parts[0], shape=shapes[0], dtype=dtype, meta=meta)
        name = f"xsvd-concat-{tokenize([p.key for p in parts])}"
        ndim = len(shapes[0])
        dsk = {}
        for i, p in enumerate(parts):
            index = tuple(i if d == axis else 0 for d in range(ndim))
            dsk[(name, *index)] = p.key
        chunks = tuple(
            tuple(s[d] for s in shapes) if d == axis else (shapes[0][d],) for d in range(ndim)
        )
        return da.Array(_graph(name, dsk, parts), name, chunks, dtype=dtype, meta=meta)


def _ref(arg):
    """A task argument: the key of a Delayed, the value itself otherwise."""
    from dask.delayed import Delayed

    return arg.key if isinstance(arg, Delayed) else arg


def _graph(name: str, dsk: dict, dependencies: list):
    """A HighLevelGraph of layer ``dsk`` on top of the graphs of ``dependencies``."""
    import dask
    from dask.highlevelgraph import HighLevelGraph

    seen, deps = set(), []
    for d in dependencies:
        if dask.is_dask_collection(d) and id(d.__dask_graph__()) not in seen:
            seen.add(id(d.__dask_graph__()))
            deps.append(d)
    return HighLevelGraph.from_collections(name, dsk, dependencies=deps)


def _delayed(key, graph, layer: str):
    from dask.delayed import Delayed

    return Delayed(key, graph, layer=layer)


class Stepwise(Lazy):
    """Dask computed pass by pass; small math on concrete results runs eagerly."""

    threads = 1  # for the eager small steps (Eager.map)

    def __init__(self, a, axis: int, split_every: int = 8, progress=None):
        super().__init__(a, axis, split_every)
        self.progress = progress
        self.passes_done = 0

    def put(self, obj):
        return obj

    def stripes(self, after=None) -> list:
        return self._stripes_of(self.a)  # computed pass by pass: a fresh read each time

    def call(self, fn, *args, nout: int | None = None):
        import dask

        if any(dask.is_dask_collection(a) for a in args):
            return super().call(fn, *args, nout=nout)
        return fn(*args)

    def map(self, fn, stripes, *args, nout: int, per_stripe=()):
        import dask

        lazy = isinstance(stripes, _Stripes) or any(dask.is_dask_collection(s) for s in stripes)
        if lazy:
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
_blas_controller = None


@contextmanager
def blas_single_thread():
    """Process-wide, reference-counted one-thread BLAS limit for worker threads."""
    global _blas_users, _blas_limiter, _blas_controller
    if threading.current_thread() is threading.main_thread():
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:  # inspecting the loaded libraries is slow: once
                from threadpoolctl import ThreadpoolController

                _blas_controller = ThreadpoolController()
            _blas_limiter = _blas_controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
