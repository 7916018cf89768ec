"""Synthetic genotypes: a Balding--Nichols matrix (variants x samples) with population structure."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..labeled.dims import SAMPLE_DIM_ATTR
from .checks import as_float, as_int, maybe_chunk

__all__ = ["genotypes"]

# Elements per block when drawing genotypes (bounds temporary memory).
_GENOTYPE_BLOCK_ELEMENTS = 1 << 19


def genotypes(
    n_variants: int = 20_000,
    n_samples: int = 600,
    *,
    n_populations: int = 3,
    fst: float = 0.1,
    seed: int | None = 0,
    chunks: int | dict | None = None,
) -> xr.DataArray:
    """Diploid genotypes with population structure (Balding--Nichols model).

    For every variant an ancestral allele frequency ``p`` is drawn from
    ``Uniform(0.05, 0.95)``; each population then gets its own frequency from
    ``Beta(p (1 - F) / F, (1 - p) (1 - F) / F)`` with ``F = fst``, so that the
    frequencies have mean ``p`` and variance ``F p (1 - p)`` across
    populations.  A sample's genotype at a variant is ``Binomial(2, f)`` with
    ``f`` the frequency in the sample's population (drawn as the sum of two
    independent allele draws).

    Parameters
    ----------
    n_variants : int, default 20_000
        Number of variants (rows), >= 1.
    n_samples : int, default 600
        Number of diploid samples (columns), >= ``n_populations``.
    n_populations : int, default 3
        Number of populations, >= 1.
    fst : float, default 0.1
        Balding--Nichols ``F`` (the expected fixation index), strictly
        between 0 and 1.  Larger values give more differentiated populations.
    seed : int or None, default 0
        Seed for :func:`numpy.random.default_rng`.  The same seed and sizes
        always give the same array; ``None`` gives fresh entropy.
    chunks : int, dict or None, default None
        ``None`` returns a NumPy-backed array.  An int returns a Dask-backed
        array with that many variants per chunk and all samples in one chunk;
        a dict such as ``{"variants": 5000}`` gives the chunk size per
        dimension (dimensions not named stay in one chunk).  The values are the
        same as with ``chunks=None``.

    Returns
    -------
    xarray.DataArray
        ``uint8`` array named ``"genotype"`` with dims ``("variants",
        "samples")`` and values 0, 1 or 2 (alternate allele dosage); its
        ``xsvd_sample_dim`` attribute says ``"samples"``, as from
        :func:`xsvd.open_plink`, so ``.svd`` takes the samples as its samples
        when ``dim`` is left out.
        Coordinates: ``variants`` (int64 positions ``0 .. n_variants - 1``),
        ``samples`` (strings ``"S0000"``, ``"S0001"``, ...; zero-padded to at
        least 4 digits) and the non-dimension coordinate ``population`` on
        ``samples`` (strings ``"POP0"``, ``"POP1"``, ...).

    Notes
    -----
    Samples are assigned to populations in contiguous blocks, in order: the
    first block of samples is ``POP0``, the next ``POP1``, and so on.  Block
    sizes differ by at most one; when ``n_samples`` is not a multiple of
    ``n_populations`` the first populations get the extra sample (like
    :func:`numpy.array_split`).

    Genotypes are drawn in blocks of variants, so peak memory stays close to
    the size of the ``uint8`` result.  Variants that happen to be monomorphic
    in the sample are kept (they are rare for the default sizes); drop them
    before standardising if that matters.

    Examples
    --------
    >>> from xsvd.datasets import genotypes
    >>> g = genotypes(2_000, 90, n_populations=3, seed=1)
    >>> g.dims, g.shape, g.dtype
    (('variants', 'samples'), (2000, 90), dtype('uint8'))
    >>> g.samples.values[:2].tolist(), g.population.values[[0, 30, 60]].tolist()
    (['S0000', 'S0001'], ['POP0', 'POP1', 'POP2'])
    >>> sorted(np.unique(g.values).tolist())
    [0, 1, 2]
    """
    n_variants = as_int("n_variants", n_variants, 1, "ask for at least one variant")
    n_populations = as_int(
        "n_populations", n_populations, 1, "use 1 for an unstructured population"
    )
    n_samples = as_int(
        "n_samples",
        n_samples,
        n_populations,
        f"every one of the n_populations={n_populations} populations needs at least "
        "one sample; raise n_samples or lower n_populations",
    )
    fst = as_float("fst", fst)
    if not 0.0 < fst < 1.0:
        raise ValueError(
            f"fst must be strictly between 0 and 1, got {fst}; typical values are "
            "0.01-0.2 (e.g. 0.1)"
        )

    rng = np.random.default_rng(seed)

    # Population of each sample: contiguous, near-equal blocks.
    sizes = np.full(n_populations, n_samples // n_populations)
    sizes[: n_samples % n_populations] += 1
    pop_of_sample = np.repeat(np.arange(n_populations), sizes)

    # Allele frequencies: ancestral, then per population (Balding-Nichols).
    ancestral = rng.uniform(0.05, 0.95, size=n_variants)
    scale = (1.0 - fst) / fst
    a = (ancestral * scale)[:, None]
    b = ((1.0 - ancestral) * scale)[:, None]
    pop_freq = rng.beta(a, b, size=(n_variants, n_populations)).astype(np.float32)

    # Genotypes, one block of variants at a time.
    data = np.empty((n_variants, n_samples), dtype=np.uint8)
    block = max(1, _GENOTYPE_BLOCK_ELEMENTS // n_samples)
    for start in range(0, n_variants, block):
        stop = min(start + block, n_variants)
        freq = pop_freq[start:stop][:, pop_of_sample]
        first = rng.random(freq.shape, dtype=np.float32) < freq
        second = rng.random(freq.shape, dtype=np.float32) < freq
        np.add(first, second, out=data[start:stop], dtype=np.uint8)

    width = max(4, len(str(n_samples - 1)))
    pop_width = len(str(n_populations - 1))
    sample_names = np.array([f"S{i:0{width}d}" for i in range(n_samples)])
    pop_names = np.array([f"POP{k:0{pop_width}d}" for k in range(n_populations)])

    out = xr.DataArray(
        data,
        dims=("variants", "samples"),
        coords={
            "variants": ("variants", np.arange(n_variants, dtype=np.int64)),
            "samples": ("samples", sample_names),
            "population": ("samples", pop_names[pop_of_sample]),
        },
        name="genotype",
        attrs={
            SAMPLE_DIM_ATTR: "samples",  # as open_plink: the accessor's default dim
            "long_name": "alternate allele dosage",
            "description": (
                f"Synthetic diploid genotypes from the Balding-Nichols model with "
                f"fst={fst:g} and n_populations={n_populations} (seed={seed})."
            ),
        },
    )
    return maybe_chunk(out, chunks, "variants")
