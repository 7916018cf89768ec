"""The documented import path of the EOF statistics: see :mod:`xsvd.labeled.statistics`."""

from __future__ import annotations

from .labeled.statistics import *  # noqa: F403
from .labeled.statistics import __all__  # noqa: F401
