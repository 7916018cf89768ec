"""The documented import path of the EOF statistics: see :mod:`xsvd.climate.statistics`."""

from __future__ import annotations

from .climate.statistics import *  # noqa: F403
from .climate.statistics import __all__  # noqa: F401
