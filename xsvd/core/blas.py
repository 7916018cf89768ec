"""One BLAS thread per kernel inside worker threads (no oversubscription)."""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager


class SingleThreadedBlas:
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
        return (SingleThreadedBlas, (self.fn,))


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
