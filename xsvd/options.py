"""Tunable sizes, as ``xsvd.set_options``: re-exported from their home in the core.

The store (``OPTIONS``, :class:`set_options`, :func:`get_options`) is
:mod:`xsvd.core.config`, which the solvers read; it is the same object here,
so ``xsvd.options.OPTIONS`` and ``xsvd.set_options`` work as before.
"""

from __future__ import annotations

from .core.config import OPTIONS, get_options, set_options

__all__ = ["OPTIONS", "set_options", "get_options"]
