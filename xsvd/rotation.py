"""The documented import path of EOF rotation: see :mod:`xsvd.climate.rotation`."""

from __future__ import annotations

from .climate.rotation import *  # noqa: F403
from .climate.rotation import __all__  # noqa: F401
