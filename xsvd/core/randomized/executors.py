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
    One Dask graph for all passes (``compute=False``). Each pass after the
    first reads a copy of the input's graph bound to the previous pass's
    result and the kernel's other inputs (``dask.graph_manipulation.bind``),
    so chunks are read again instead of held, and only when the kernel that
    takes them can run. Dask cannot re-create every graph this way (a rechunk
    inside the input's own graph is shared between the copies), so for such
    inputs the scheduler may hold chunks until the last pass.
:class:`Stepwise`
    Dask, computed pass by pass (``compute=True``): a pass is one
    ``dask.compute`` of small results only, so every pass reads the chunks
    afresh whatever the input's graph, and nothing of the data outlives its
    pass. Runs the same on the threaded scheduler and dask.distributed. An
    optional ``progress`` object (with ``compute(obj, step)``) computes each
    pass while showing progress.

``Lazy`` and ``Stepwise`` build their Dask steps with one shared
:class:`_DaskSteps`, on Dask's public API only (``dask.array.blockwise`` and
``reduction``, ``dask.delayed``, ``dask.graph_manipulation.bind``); ``Eager``
and ``Stepwise`` run concrete steps with one shared :func:`_run_now`.
"""

from __future__ import annotations

import functools
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backend
from ..blas import SingleThreadedBlas, blas_single_thread


class Executor(ABC):
    """How the solver's steps run. See the module docstring.

    Attributes
    ----------
    axis : int
        The dimension the data are cut along (0: stripes of rows, 1: of columns).
    offsets, sizes : list of int
        Start and length of every stripe along ``axis``.
    xp : module
        The array module of the data's chunks (numpy, cupy, or another array-API namespace).
    like : array
        An array on the data's device (the data, or their chunks' meta), for moves there.
    data : array
        The data (NumPy, CuPy, packed or Dask), for :meth:`head`.
    concrete : bool
        What ``end_pass`` returns is computed (so the solver can look at it
        and decide what to do next); False for one lazy graph.
    """

    axis: int
    offsets: list[int]
    sizes: list[int]
    xp: Any
    like: Any
    concrete: bool = True

    @abstractmethod
    def share(self, value):
        """``value`` as many tasks should see it (put into a graph once)."""

    @abstractmethod
    def stripes(self, after=None):
        """The data's stripes for one pass, for ``map``; a lazy pass waits for ``after`` first."""

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

    def head(self, rows: int):
        """The data's first rows in memory, at most ``rows``; None for Dask data: a step
        taking them would read those chunks once more (dask puts a read of its own into
        each step that takes chunks), beside the pass that reads them anyway."""
        if backend.is_dask(self.data):
            return None
        return self.data[: min(rows, self.data.shape[0]), :]

    def split_first(self, stripes):
        """Stripes of rows (from :meth:`stripes`) as two: the first stripe, and the others;
        None where there is one stripe, or in memory."""
        return None

    def _meta(self, ndim: int, dtype):
        return self.xp.empty((0,) * ndim, dtype=dtype)


# ----------------------------------------------------------------------- eager


class Eager(Executor):
    """Everything computed at once on in-memory data.

    The data are one stripe, or (``threads > 1``) views of ``stripe`` rows or
    columns each, run on a small thread pool with one BLAS thread per kernel.
    """

    def __init__(self, a, axis: int, threads: int = 1, stripe: int | None = None):
        self.a = self.data = a
        self.axis = axis
        self.threads = threads
        self.xp = backend.namespace(a)
        self.like = a
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
            return [[self.a[o : o + s, :]] for o, s in zip(self.offsets, self.sizes, strict=True)]
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
        self.graph = _DaskSteps(a, axis, split_every)
        self.data = a
        self.axis, self.offsets, self.sizes = axis, self.graph.offsets, self.graph.sizes
        self.xp = backend.namespace(a)
        self.like = backend.chunk_type(a)

    def share(self, value):
        import dask

        if value is None or np.isscalar(value):
            return value
        return dask.delayed(value, pure=True)

    def stripes(self, after=None):
        return self.graph.stripes(after)

    def split_first(self, stripes):
        return self.graph.split_first(stripes)

    def map(self, fn, items, *args, nout: int = 1, per_stripe=()):
        return self.graph.map(fn, items, args, per_stripe, nout)

    def sum(self, parts):
        return self.graph.sum(parts)

    def call(self, fn, *args, nout: int | None = None):
        return _delayed_call(fn, args, nout)

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
        self.graph = _DaskSteps(a, axis, split_every)
        self.data = a
        self.axis, self.offsets, self.sizes = axis, self.graph.offsets, self.graph.sizes
        self.xp = backend.namespace(a)
        self.like = backend.chunk_type(a)
        self.progress = progress
        self.passes_done = 0

    def share(self, value):
        return value

    def stripes(self, after=None):
        return self.graph.stripes(None)  # computed pass by pass: a fresh read each time

    def split_first(self, stripes):
        return self.graph.split_first(stripes)

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
            return _delayed_call(fn, args, nout)
        return fn(*args)

    def end_pass(self, state):
        self.passes_done += 1
        if self.progress is not None:
            out = self.progress.compute(state, step=self.passes_done)
        else:
            (out,) = backend.compute(state)
        self.graph.arrays.clear()  # all computed: the pass's graph can go
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
    return backend.api(parts[0]).concat(parts, axis=0)


class _Stripes:
    """A Dask array's stripes for one pass: the array and its ``blockwise`` index.

    ``"st"``: stripe ``s`` of rows holds the blocks ``t`` along the columns;
    ``"ts"``: stripe ``s`` of columns holds the blocks ``t`` along the rows.
    """

    def __init__(self, x, index: str, after=None):
        self.x = x
        self.index = index
        self.after = after


class _DaskSteps:
    """The solver's steps as Dask collections, O(number of chunks) tasks each.

    A per-stripe result is a 1-D Dask array of objects with one block per
    stripe (what the kernel returned, never concatenated), handed out as a
    plain list of ``Delayed`` (``Array.to_delayed``) that the solver passes
    around and ``dask.compute`` computes. The array behind each list handed
    out is kept by name, so a later step takes it whole, as one ``blockwise``
    layer. (One ``dask.delayed`` call per stripe instead would merge the graph
    so far into every call: O(chunks^2) to build.)
    """

    def __init__(self, a, axis: int, split_every: int):
        self.a = a
        self.axis = axis
        self.sizes = [int(s) for s in a.chunks[axis]]
        self.offsets = [int(o) for o in np.cumsum([0, *self.sizes[:-1]])]
        self.split_every = split_every
        self.arrays: dict = {}  # name -> the object array behind a list handed out

    def stripes(self, after=None) -> _Stripes:
        return _Stripes(self.a, "st" if self.axis == 0 else "ts", after)

    def split_first(self, stripes: _Stripes):
        """The first stripe of rows and the others, each read by the steps that take it
        alone (slices at chunk boundaries: no read of their own)."""
        if self.axis != 0 or len(self.sizes) < 2:
            return None
        x, first = stripes.x, self.sizes[0]
        return (
            _Stripes(x[:first], stripes.index, stripes.after),
            _Stripes(x[first:], stripes.index, stripes.after),
        )

    def map(self, fn, items, args, per_stripe, nout: int):
        """``fn`` on every stripe (its blocks, as a list) or per-stripe result: one layer."""
        import dask.array as da

        if isinstance(items, _Stripes) and items.after is not None:
            from dask.graph_manipulation import bind

            # a new copy of the input's graph, read once all else the kernel needs is there
            lazy = [a for a in (items.after, *args) if backend.is_lazy(a)]
            items = _Stripes(bind(items.x, lazy), items.index)
        inputs = [self.per_stripe(items), *(self.per_stripe(p) for p in per_stripe)]
        out = da.blockwise(
            _Kernel(fn, tuple(boxed for _, _, boxed in inputs)),
            "s",
            *(v for arr, index, _ in inputs for v in (arr, index)),
            *(v for a in args for v in (a, None)),  # Delayed arguments become dependencies
            token=f"xsvd-{fn.__name__.strip('_')}",
            concatenate=False,  # a stripe's blocks as a list: no stripe-sized copy
            align_arrays=False,  # never rechunk
            dtype=object,
            meta=_OBJECTS,
        )
        if nout == 1:
            return self.hand_out(out)
        return [
            self.hand_out(
                da.blockwise(
                    operator.getitem,
                    "s",
                    out,
                    "s",
                    j,
                    None,
                    name=f"{out.name}-{j}",
                    dtype=object,
                    meta=_OBJECTS,
                )
            )
            for j in range(nout)
        ]

    def sum(self, parts):
        """A tree of additions, ``split_every`` consecutive parts per task."""
        import dask.array as da

        parts = list(parts)
        if len(parts) == 1:
            return parts[0]
        total = da.reduction(
            self.objects(parts),
            _same_block,
            _add_blocks,
            combine=_add_blocks,
            axis=0,
            keepdims=True,
            dtype=object,
            split_every=self.split_every,
            concatenate=False,
            meta=_OBJECTS,
            name="xsvd-sum",
        )
        (out,) = self.hand_out(total)
        return out

    def concat(self, parts, shapes, dtype, meta):
        """Per-stripe results as one Dask array along the first dimension."""
        import dask.array as da

        rest = "abcdefgh"[: len(shapes[0]) - 1]
        return da.blockwise(
            _same_block,
            "s" + rest,
            self.objects(parts),
            "s",
            new_axes={c: shapes[0][d + 1] for d, c in enumerate(rest)},
            adjust_chunks={"s": tuple(s[0] for s in shapes)},
            token="xsvd-concat",
            dtype=dtype,
            meta=meta,
        )

    def hand_out(self, arr) -> list:
        """The blocks of an object array as a list of ``Delayed``; the array kept by name."""
        self.arrays[arr.name] = arr
        return arr.to_delayed(optimize_graph=False).tolist()

    def per_stripe(self, values):
        """``(array, blockwise index, boxed)`` for stripes or a per-stripe list.

        Concrete values come ``boxed`` in one-element object arrays (``da.from_array``).
        """
        import dask
        import dask.array as da

        if isinstance(values, _Stripes):
            return values.x, values.index, False
        if not backend.holds_lazy(values):
            boxes = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):
                boxes[i] = v
            return da.from_array(boxes, chunks=1), "s", True
        from dask.delayed import Delayed

        keys = [v.key if isinstance(v, Delayed) else None for v in values]
        arr = self.arrays.get(keys[0][0]) if isinstance(keys[0], tuple) else None
        if arr is None or keys != arr.__dask_keys__():  # Delayed from elsewhere
            arr = da.concatenate(
                [
                    da.from_delayed(dask.delayed(v), shape=(1,), dtype=object, meta=_OBJECTS)
                    for v in values
                ]
            )
        return arr, "s", False

    def objects(self, values):
        """A per-stripe list as an object array, values unboxed."""
        arr, _, boxed = self.per_stripe(values)
        return self.objects(self.map(_same_block, values, (), (), 1)) if boxed else arr


_OBJECTS = np.empty((0,), dtype=object)  # the meta of arrays of per-stripe results


@dataclass(frozen=True)
class _Kernel:
    """``fn(item, *per_stripe, *args)`` on one stripe, one BLAS thread in worker threads.

    ``boxed``: which of ``item, *per_stripe`` come in one-element object arrays.
    """

    fn: Callable
    boxed: tuple

    def __call__(self, *values):
        n = len(self.boxed)
        inputs = [v[0] if boxed else v for v, boxed in zip(values[:n], self.boxed, strict=True)]
        with blas_single_thread():
            return self.fn(*inputs, *values[n:])


def _delayed_call(fn, args, nout: int | None):
    """``fn(*args)`` as a ``dask.delayed`` call."""
    import dask

    return dask.delayed(fn, nout=nout, pure=True)(*map(_one_argument, args))


def _one_argument(arg):
    """A list or tuple holding Delayed as one Delayed (``dask.delayed`` would
    otherwise materialize and cull the whole graph for it)."""
    if type(arg) in (list, tuple) and backend.holds_lazy(arg):
        import dask

        gather = _listed if type(arg) is list else _tupled
        return dask.delayed(gather, pure=True)(*map(_one_argument, arg))
    return arg


def _listed(*items) -> list:
    return list(items)


def _tupled(*items) -> tuple:
    return items


def _same_block(block, axis=None, keepdims=None):
    return block


def _add_blocks(parts: list, axis=None, keepdims=None):
    return _sum_all(*parts)


def _sum_all(*parts: Any):
    return functools.reduce(operator.add, parts)


def _unzip(results: list, nout: int):
    """Per-stripe results -> one list per output (the list itself when nout == 1)."""
    if nout == 1:
        return results
    return [[r[j] for r in results] for j in range(nout)]
