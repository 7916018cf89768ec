"""Executors: run the solver's steps at once (NumPy/CuPy) or with Dask.

The randomized solver is written once against the small :class:`Executor`
interface:

- ``stripes(after)``: the data cut into *stripes* that each hold the whole
  thin dimension, each given as the list of its blocks along that dimension
  (kernels merge them a sub-block at a time, so no stripe-sized copy and no
  dask rechunk is ever made);
- ``map`` (a kernel on every stripe, or a function on every per-stripe
  result), ``sum`` (tree-add per-stripe results), ``call`` (small math on
  reduced results), ``share`` (a value many tasks use, put in once);
- ``end_pass`` at the end of each pass, with what the next pass needs;
- ``array``/``concat`` (turn results into arrays of the input's kind).

Three sibling implementations:

:class:`Eager`
    In-memory NumPy/CuPy: everything runs at once, the data are one stripe
    (or, for large NumPy data, views run on a small thread pool).
:class:`Lazy`
    One Dask graph for all passes (``compute=False``). Each pass reads a copy
    of the input's graph bound to the previous pass's result
    (``dask.graph_manipulation.bind``), so chunks are read again instead of
    held. Dask cannot re-create every graph this way (a rechunk inside the
    input's own graph is shared between the copies), so for such inputs the
    scheduler may hold chunks until the last pass.
:class:`Stepwise`
    Dask, computed pass by pass (``compute=True``): a pass is one
    ``dask.compute`` of small results only, so every pass reads the chunks
    afresh whatever the input's graph, and nothing of the data outlives its
    pass. Runs the same on the threaded scheduler and dask.distributed. An
    optional ``progress`` object (with ``compute(obj, step)``) computes each
    pass while showing progress.

``Lazy`` and ``Stepwise`` build their graph layers with one shared
:class:`_Graph`; ``Eager`` and ``Stepwise`` run concrete steps with one shared
:func:`_run_now`.
"""

from __future__ import annotations

import functools
import operator
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .. import backend
from ..blas import SingleThreadedBlas


class Executor(ABC):
    """How the solver's steps run. See the module docstring.

    Attributes
    ----------
    axis : int
        The dimension the data are cut along (0: stripes of rows, 1: of columns).
    offsets, sizes : list of int
        Start and length of every stripe along ``axis``.
    xp : module
        The array module of the data's chunks (numpy or cupy).
    concrete : bool
        What ``end_pass`` returns is computed (so the solver can look at it
        and decide what to do next); False for one lazy graph.
    """

    axis: int
    offsets: list[int]
    sizes: list[int]
    xp: Any
    concrete: bool = True

    @abstractmethod
    def share(self, value):
        """``value`` as many tasks should see it (put into a graph once)."""

    @abstractmethod
    def stripes(self, after=None) -> list:
        """The data's stripes for one pass; a lazy pass waits for ``after`` first."""

    @abstractmethod
    def map(self, fn, items, *args, nout: int = 1, per_stripe=()):
        """``fn(item, *per_stripe[i], *args)`` for every stripe or per-stripe result.

        Returns one list per output (the list itself when ``nout == 1``).
        """

    @abstractmethod
    def sum(self, parts):
        """The sum of per-stripe results (anything with ``+``, dataclasses included)."""

    @abstractmethod
    def call(self, fn, *args, nout: int | None = None):
        """``fn(*args)`` on reduced (small) results."""

    @abstractmethod
    def end_pass(self, state):
        """End a pass over the data: ``state`` is what the next pass needs."""

    @abstractmethod
    def array(self, value, shape: tuple, dtype):
        """A result as an array of the input's kind (lazy for ``Lazy``)."""

    @abstractmethod
    def concat(self, parts, shapes: list, dtype):
        """Per-stripe results joined along the cut dimension."""

    def _meta(self, ndim: int, dtype):
        return self.xp.empty((0,) * ndim, dtype=dtype)


# ----------------------------------------------------------------------- eager


class Eager(Executor):
    """Everything computed at once on in-memory data.

    The data are one stripe, or (``threads > 1``) views of ``stripe`` rows or
    columns each, run on a small thread pool with one BLAS thread per kernel.
    """

    def __init__(self, a, axis: int, threads: int = 1, stripe: int | None = None):
        self.a = a
        self.axis = axis
        self.threads = threads
        self.xp = backend.namespace(a)
        length = a.shape[axis]
        step = length if stripe is None else stripe
        self.offsets = list(range(0, length, step))
        self.sizes = [min(step, length - o) for o in self.offsets]

    def share(self, value):
        return value

    def stripes(self, after=None) -> list:
        if len(self.offsets) == 1:
            return [[self.a]]
        if self.axis == 0:
            return [[self.a[o : o + s]] for o, s in zip(self.offsets, self.sizes, strict=True)]
        return [[self.a[:, o : o + s]] for o, s in zip(self.offsets, self.sizes, strict=True)]

    def map(self, fn, items, *args, nout: int = 1, per_stripe=()):
        return _run_now(fn, items, args, per_stripe, nout, self.threads)

    def sum(self, parts):
        return _sum_all(*parts)

    def call(self, fn, *args, nout: int | None = None):
        return fn(*args)

    def end_pass(self, state):
        return state

    def array(self, value, shape, dtype):
        return value

    def concat(self, parts, shapes, dtype):
        return _concat_now(parts)


# ------------------------------------------------------------------------ dask


class Lazy(Executor):
    """All passes as one Dask graph: one task per stripe and pass, tree reductions."""

    concrete = False

    def __init__(self, a, axis: int, split_every: int = 8):
        self.graph = _Graph(a, axis, split_every)
        self.axis, self.offsets, self.sizes = axis, self.graph.offsets, self.graph.sizes
        self.xp = backend.namespace(a)

    def share(self, value):
        import dask

        if value is None or np.isscalar(value):
            return value
        return dask.delayed(value, pure=True)

    def stripes(self, after=None) -> list:
        return self.graph.stripes(after)

    def map(self, fn, items, *args, nout: int = 1, per_stripe=()):
        return self.graph.map(fn, items, args, per_stripe, nout)

    def sum(self, parts):
        return self.graph.sum(parts)

    def call(self, fn, *args, nout: int | None = None):
        import dask

        return dask.delayed(fn, nout=nout, pure=True)(*args)

    def end_pass(self, state):
        return state

    def array(self, value, shape, dtype):
        import dask.array as da

        return da.from_delayed(value, shape=shape, dtype=dtype, meta=self._meta(len(shape), dtype))

    def concat(self, parts, shapes, dtype):
        return self.graph.concat(parts, shapes, dtype, self._meta(len(shapes[0]), dtype))


class Stepwise(Executor):
    """Dask computed pass by pass; small math on concrete results runs at once.

    Steps that touch the data (or lazy results) are graph layers, as in
    :class:`Lazy`; ``end_pass`` computes the pass's small results, and what
    follows on them runs immediately, as in :class:`Eager`.
    """

    def __init__(self, a, axis: int, split_every: int = 8, progress=None):
        self.graph = _Graph(a, axis, split_every)
        self.axis, self.offsets, self.sizes = axis, self.graph.offsets, self.graph.sizes
        self.xp = backend.namespace(a)
        self.progress = progress
        self.passes_done = 0

    def share(self, value):
        return value

    def stripes(self, after=None) -> list:
        return self.graph.stripes(None)  # computed pass by pass: a fresh read each time

    def map(self, fn, items, *args, nout: int = 1, per_stripe=()):
        if isinstance(items, _Stripes) or backend.holds_lazy((items, args, per_stripe)):
            return self.graph.map(fn, items, args, per_stripe, nout)
        return _run_now(fn, items, args, per_stripe, nout, threads=1)

    def sum(self, parts):
        if backend.holds_lazy(parts):
            return self.graph.sum(parts)
        return _sum_all(*parts)

    def call(self, fn, *args, nout: int | None = None):
        if backend.holds_lazy(args):
            import dask

            return dask.delayed(fn, nout=nout, pure=True)(*args)
        return fn(*args)

    def end_pass(self, state):
        self.passes_done += 1
        if self.progress is not None:
            return self.progress.compute(state, step=self.passes_done)
        (out,) = backend.compute(state)
        return out

    def array(self, value, shape, dtype):
        return value

    def concat(self, parts, shapes, dtype):
        return _concat_now(parts)


# ------------------------------------------------------------- shared pieces


def _run_now(fn, items, args, per_stripe, nout: int, threads: int):
    """``fn`` on every item now, on a small thread pool when ``threads > 1``."""
    calls = [(item, *(p[i] for p in per_stripe), *args) for i, item in enumerate(items)]
    if threads > 1 and len(calls) > 1:
        from concurrent.futures import ThreadPoolExecutor

        kernel = SingleThreadedBlas(fn)
        with ThreadPoolExecutor(min(threads, len(calls))) as pool:
            out = list(pool.map(lambda c: kernel(*c), calls))
    else:
        out = [fn(*c) for c in calls]
    return _unzip(out, nout)


def _concat_now(parts):
    if len(parts) == 1:
        return parts[0]
    return backend.namespace(parts[0]).concatenate(parts, axis=0)


class _Stripes(list):
    """Stripes of a Dask array: per stripe, the keys of its blocks; plus the array."""

    def __init__(self, keys, collection):
        super().__init__(keys)
        self.collection = collection


class _Graph:
    """Dask graph layers for the solver, built directly (O(number of chunks) per step).

    Not through one ``dask.delayed`` call per stripe, which would re-optimize
    the whole input graph for every stripe.
    """

    def __init__(self, a, axis: int, split_every: int):
        self.a = a
        self.axis = axis
        self.sizes = list(a.chunks[axis])
        self.offsets = [int(o) for o in np.cumsum([0, *self.sizes[:-1]])]
        self.split_every = split_every

    def stripes(self, after=None) -> _Stripes:
        x = self.a
        if after is not None:
            from dask.graph_manipulation import bind

            x = bind(x, after)
        nb0, nb1 = x.numblocks
        if self.axis == 0:
            keys = [[(x.name, i, j) for j in range(nb1)] for i in range(nb0)]
        else:
            keys = [[(x.name, i, j) for i in range(nb0)] for j in range(nb1)]
        return _Stripes(keys, x)

    def map(self, fn, items, args, per_stripe, nout: int):
        """A layer with ``fn`` on every stripe (blocks of the data) or per-stripe result."""
        from dask.base import tokenize

        if isinstance(items, _Stripes):  # blocks of the data: a list of keys each
            refs_in = [list(keys) for keys in items]
            sources = [items.collection]
        else:  # per-stripe results of an earlier step (Delayed)
            refs_in = [d.key for d in items]
            sources = list(items)
        token = tokenize(fn.__name__, refs_in, args, per_stripe)
        name = f"xsvd-{fn.__name__.strip('_')}-{token}"
        kernel = SingleThreadedBlas(fn)
        refs = [_ref(a) for a in args]
        dsk = {}
        for i, item in enumerate(refs_in):
            extra = [_ref(p[i]) for p in per_stripe]
            dsk[(name, i)] = (kernel, item, *extra, *refs)
            for j in range(nout if nout > 1 else 0):
                dsk[(f"{name}-{j}", i)] = (operator.getitem, (name, i), j)
        lazy_args = [a for a in (*args, *(v for p in per_stripe for v in p)) if backend.is_lazy(a)]
        graph = _layer(name, dsk, [*sources, *lazy_args])
        n = len(refs_in)
        if nout == 1:
            return [_delayed((name, i), graph, name) for i in range(n)]
        return [[_delayed((f"{name}-{j}", i), graph, name) for i in range(n)] for j in range(nout)]

    def sum(self, parts):
        """A tree of additions, ``split_every`` parts per task."""
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
        return _delayed(level[0], _layer(name, dsk, parts), name)

    def concat(self, parts, shapes, dtype, meta):
        """Per-stripe Delayed results as one Dask array along the first dimension."""
        import dask.array as da
        from dask.base import tokenize

        if len(parts) == 1:
            return da.from_delayed(parts[0], shape=shapes[0], dtype=dtype, meta=meta)
        name = f"xsvd-concat-{tokenize([p.key for p in parts])}"
        ndim = len(shapes[0])
        dsk = {(name, i, *(0,) * (ndim - 1)): p.key for i, p in enumerate(parts)}
        chunks = (tuple(s[0] for s in shapes), *((shapes[0][d],) for d in range(1, ndim)))
        return da.Array(_layer(name, dsk, parts), name, chunks, dtype=dtype, meta=meta)


def _ref(arg):
    """A task argument: the key of a Delayed, the value itself otherwise."""
    return arg.key if backend.is_lazy(arg) else arg


def _layer(name: str, dsk: dict, dependencies: list):
    """A HighLevelGraph of layer ``dsk`` on top of the graphs of ``dependencies``."""
    from dask.highlevelgraph import HighLevelGraph

    seen, deps = set(), []
    for d in dependencies:
        if backend.is_lazy(d) and id(d.__dask_graph__()) not in seen:
            seen.add(id(d.__dask_graph__()))
            deps.append(d)
    return HighLevelGraph.from_collections(name, dsk, dependencies=deps)


def _delayed(key, graph, layer: str):
    from dask.delayed import Delayed

    return Delayed(key, graph, layer=layer)


def _sum_all(*parts: Any):
    return functools.reduce(operator.add, parts)


def _unzip(results: list, nout: int):
    """Per-stripe results -> one list per output (the list itself when nout == 1)."""
    if nout == 1:
        return results
    return [[r[j] for r in results] for j in range(nout)]
