"""BLAS threads: one per kernel in worker threads, one for the small dense steps.

One process-wide, reference-counted limit (threadpoolctl, its controller
inspected once) serves two rules:

- *Worker threads* (:class:`SingleThreadedBlas`, :func:`blas_single_thread`):
  Dask already runs one kernel per core; letting every kernel also start a
  multi-threaded BLAS oversubscribes the cores (measured: 60% slower on 2
  cores). This mirrors what dask.distributed's nanny does with
  ``OMP_NUM_THREADS=1``. Kernels called from the main thread keep the full
  BLAS.
- *Small steps* (:func:`small_step`, :func:`small_blas`), in any thread: the
  QR, eigh and SVD of ``(k + p) x (k + p)`` or ``(thin length) x l``
  matrices, Gram matrices of sketches, the exact SVD of a small matrix. A
  multi-threaded BLAS gains nothing on them and, beside a busy process, loses
  much: each call waits for its threads to be scheduled (issue 29: the EOF
  of a 50 x 540 field took 0.59 s instead of 0.007 s, an MCA 8.9 s instead
  of 0.062 s). The products with the data keep every thread.

Setting the limit and restoring it costs about 17 us (the controller made
once; a fresh ``threadpool_limits`` costs about 0.3 ms), so it is set per
small step of a pass (a few per pass), never per product; nested uses only
count.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

import numpy as np

__all__ = [
    "SingleThreadedBlas",
    "blas_single_thread",
    "one_blas_thread",
    "SMALL_WORK",
    "blas_work",
    "small_blas",
    "small_step",
]


class SingleThreadedBlas:
    """Run a kernel with BLAS limited to one thread when inside a worker thread.

    Kernels called from the main thread (synchronous scheduler) keep the full
    BLAS. Picklable (for dask.distributed).
    """

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        with blas_single_thread():
            return self.fn(*args, **kwargs)

    def __reduce__(self):
        return (SingleThreadedBlas, (self.fn,))


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None
_blas_controller = None


@contextmanager
def one_blas_thread():
    """BLAS limited to one thread while the block runs, in whichever thread it runs.

    Process-wide (BLAS libraries have one thread count) and reference
    counted: the first user sets the limit, the last restores the threads
    there were; nested and concurrent uses cost a counter.
    """
    global _blas_users, _blas_limiter, _blas_controller
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:  # inspecting the loaded libraries is slow: once
                from threadpoolctl import ThreadpoolController

                _blas_controller = ThreadpoolController()
            _blas_limiter = _in_control(_blas_controller.limit, limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _in_control(_blas_limiter.restore_original_limits)
                _blas_limiter = None


def _in_control(change, **kwargs):
    """``change(**kwargs)`` (the limit, or its restore) made from this thread.

    threadpoolctl 3.8 lets one thread at a time change OpenBLAS's process-wide
    thread pool (the first to change it, until its ``with`` block ends); the
    changes of other threads are silently dropped. The limit here is counted
    across threads (the first user sets it, the last, maybe another thread,
    restores it), so each change takes control and hands it back at once.
    Without this, a limit set in one worker thread was never restored: BLAS
    stayed on one thread for the rest of the process.
    """
    from threadpoolctl import OpenBLASController

    release = getattr(OpenBLASController, "clear_controlling_thread", None)
    if release is None:  # threadpoolctl before 3.8: any thread changes the pool
        return change(**kwargs)
    release(force=True)
    try:
        return change(**kwargs)
    finally:
        release()


@contextmanager
def blas_single_thread():
    """One BLAS thread inside worker threads; the main thread keeps the full BLAS."""
    if threading.current_thread() is threading.main_thread():
        yield
        return
    with one_blas_thread():
        yield


#: Small steps whose largest NumPy matrix needs at most this much work (rows x
#: columns x the shorter of the two) run on one BLAS thread. Measured on 2
#: cores, one thread against two on an otherwise idle machine: the exact SVD
#: of 150 x 1,500 (3.4e7) 12% faster, of 200 x 2,000 (8e7) 7% slower, of
#: 300 x 3,000 (2.7e8) 7% slower; block Krylov's orthogonalization of a
#: 5,000 x 20 block against 120 columns (7e7) even. Beside a busy process one
#: thread was faster at every size.
SMALL_WORK = 2**27


def blas_work(*args) -> int | None:
    """The work of the largest NumPy matrix among ``args`` (None: no NumPy array).

    A list or tuple of 2-D blocks with the same number of rows counts as one
    matrix (the blocks side by side, as the solvers join a Krylov basis).
    Arrays of other libraries (CuPy: no host BLAS) are not counted.
    """
    shapes = []
    for arg in args:
        if isinstance(arg, np.ndarray):
            shapes.append(arg.shape)
        elif isinstance(arg, list | tuple):
            blocks = [b for b in arg if isinstance(b, np.ndarray)]
            if blocks and all(b.ndim == 2 and b.shape[0] == blocks[0].shape[0] for b in blocks):
                shapes.append((blocks[0].shape[0], sum(b.shape[1] for b in blocks)))
            else:
                shapes += [b.shape for b in blocks]
    if not shapes:
        return None
    return max(int(np.prod(s)) * (min(s) if len(s) == 2 else 1) for s in shapes)


@contextmanager
def small_blas(*arrays):
    """One BLAS thread while the block runs when ``arrays`` are small (see :data:`SMALL_WORK`).

    ``arrays``: the matrices the block factors or multiplies (NumPy arrays,
    or lists of blocks side by side); anything else is ignored.
    """
    work = blas_work(*arrays)
    if work is None or work > SMALL_WORK:
        yield
        return
    with one_blas_thread():
        yield


def small_step(fn):
    """Decorate a small dense step: it runs on one BLAS thread when its array arguments
    are small (:func:`small_blas`). Picklable by reference, as the function it wraps."""

    @functools.wraps(fn)
    def step(*args, **kwargs):
        with small_blas(*args):
            return fn(*args, **kwargs)

    return step
