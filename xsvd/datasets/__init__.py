"""Synthetic, embedded example data sets.

The generators in this module build small but realistic labeled arrays entirely
in memory, from a seed: no files, no network, no global state.  They are used
by the demo, the documentation and the test suite, and are handy for trying
out the ``.svd`` accessor.

* :func:`genotypes` -- a diploid genotype matrix (variants x samples) with
  population structure from the Balding--Nichols model.
* :func:`climate_field` -- a monthly sea-surface-temperature-like anomaly
  field (time x lat x lon) with a land mask and known, planted modes.

Both accept ``chunks=`` to return a Dask-backed array instead of a NumPy one;
the values do not depend on ``chunks``.
"""

from __future__ import annotations

from .climate import climate_field
from .genotypes import genotypes

__all__ = ["genotypes", "climate_field"]
