"""Shared fixtures and helpers for the xsvd tests."""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import dask
import numpy as np
import pytest


def random_orthonormal(rng, n: int, r: int) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return q


def matrix_with_spectrum(s, m: int, n: int, seed: int = 0) -> np.ndarray:
    """An m x n matrix whose singular values are exactly ``s``."""
    rng = np.random.default_rng(seed)
    r = len(s)
    return (random_orthonormal(rng, m, r) * np.asarray(s)) @ random_orthonormal(rng, n, r).T


def raising_scheduler(*args, **kwargs):
    raise AssertionError("dask computed something where nothing should be computed")


@contextmanager
def raise_if_dask_computes():
    """Fail if any dask computation runs inside the block."""
    with dask.config.set(scheduler=raising_scheduler):
        yield


class CountingArray:
    """An array-like for ``da.from_array`` that counts reads and live chunks.

    ``reads[key]`` counts how often each chunk was produced; ``max_live`` is
    the largest number of produced chunks alive at the same time.
    """

    def __init__(self, data: np.ndarray):
        self.data = data
        self.shape = data.shape
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.reads: dict = {}
        self.live = 0
        self.max_live = 0
        self._lock = threading.Lock()

    def _released(self):
        with self._lock:
            self.live -= 1

    def __getitem__(self, key):
        out = np.array(self.data[key])  # a fresh object per read
        if out.size == 0:  # dask asking for meta
            return out
        k = tuple((s.start, s.stop) for s in key)
        with self._lock:
            self.reads[k] = self.reads.get(k, 0) + 1
            self.live += 1
            self.max_live = max(self.max_live, self.live)
        weakref.finalize(out, self._released)
        return out


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
