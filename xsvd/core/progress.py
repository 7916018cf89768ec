"""Progress display for long computations.

With a ``dask.distributed`` client: distributed's own progress bar on the
futures. With the local schedulers: ``dask.diagnostics.ProgressBar``. The
solver reports its passes ("pass 2/5"), so a bar is shown per pass.
"""

from __future__ import annotations

import sys
from typing import Any


def _client():
    """The default dask.distributed client, if distributed is loaded and one exists."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        return None


class Progress:
    """Computes Dask collections while showing progress; one call per pass."""

    def __init__(self, total_passes: int | None = None, stream=None):
        self.total = total_passes
        self.stream = stream if stream is not None else sys.stdout

    def label(self, step: int | None) -> str:
        if step is None:
            return "xsvd"
        total = f"/{self.total}" if self.total else ""
        return f"xsvd: pass {step}{total}"

    def compute(self, obj: Any, step: int | None = None):
        """``dask.compute(obj)`` with a progress display; returns the computed ``obj``."""
        import dask

        print(self.label(step), file=self.stream, flush=True)
        client = _client()
        if client is not None:
            from distributed import progress

            future = client.compute(dask.delayed(obj))  # one future for the whole structure
            progress(future, notebook=False)
            print(file=self.stream, flush=True)
            return future.result()
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=self.stream):
            (out,) = dask.compute(obj)
        return out
