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

import math
import operator
from typing import Any, Literal, overload

import numpy as np
import xarray as xr

__all__ = ["genotypes", "climate_field"]

# Fixed "continents" for climate_field: (centre lon, centre lat, half-width in
# lon, half-height in lat), all in degrees.  Together with the Antarctic cap
# below they cover about 29% of the cells of any regular grid (about 24% of the
# area).
_CONTINENTS: tuple[tuple[float, float, float, float], ...] = (
    (265.0, 45.0, 35.0, 22.0),  # North America
    (300.0, -15.0, 16.0, 28.0),  # South America
    (90.0, 50.0, 70.0, 22.0),  # Eurasia
    (20.0, 5.0, 22.0, 30.0),  # Africa
    (135.0, -25.0, 18.0, 11.0),  # Australia
    (318.0, 72.0, 14.0, 10.0),  # Greenland
)
_ANTARCTIC_EDGE = -72.0  # cells south of this latitude are land

# Elements per block when drawing genotypes (bounds temporary memory).
_GENOTYPE_BLOCK_ELEMENTS = 1 << 19


# --------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------


def _as_int(name: str, value: Any, minimum: int, hint: str) -> int:
    """Return ``value`` as a Python int, or raise a helpful error."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    try:
        ivalue = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {type(value).__name__} {value!r}"
        ) from None
    if ivalue < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {ivalue}; {hint}")
    return ivalue


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a real number, got the bool {value!r}")
    try:
        fvalue = float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a real number, got {type(value).__name__} {value!r}"
        ) from None
    if not math.isfinite(fvalue):
        raise ValueError(f"{name} must be a finite number, got {fvalue!r}")
    return fvalue


def _maybe_chunk(arr: xr.DataArray, chunks: int | dict | None, along: str) -> xr.DataArray:
    """Wrap ``arr`` (NumPy-backed) in a Dask array if ``chunks`` is given.

    An int is the chunk length along ``along``; a dict maps dimension names to
    anything ``dask.array.from_array`` accepts.  Dimensions not named are kept
    in one chunk.
    """
    if chunks is None:
        return arr
    if isinstance(chunks, dict):
        unknown = set(chunks) - set(arr.dims)
        if unknown:
            raise ValueError(
                f"chunks names dimension(s) {sorted(map(str, unknown))} that {arr.name!r} "
                f"does not have; use only {list(arr.dims)}"
            )
        spec = dict(chunks)
    else:
        n = _as_int(
            "chunks",
            chunks,
            1,
            f"give the number of {along} per chunk, a dict such as "
            f"{{{along!r}: 100}}, or None for a NumPy-backed result",
        )
        spec = {along: n}
    try:
        import dask.array as dsa
    except ImportError as err:  # pragma: no cover - dask is a dependency
        raise ImportError("chunks= needs dask; install 'dask[array]' or pass chunks=None") from err
    dask_chunks = tuple(spec.get(dim, -1) for dim in arr.dims)
    return arr.copy(data=dsa.from_array(arr.data, chunks=dask_chunks))


# --------------------------------------------------------------------------
# genotypes
# --------------------------------------------------------------------------


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
        "samples")`` and values 0, 1 or 2 (alternate allele dosage).
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
    n_variants = _as_int("n_variants", n_variants, 1, "ask for at least one variant")
    n_populations = _as_int(
        "n_populations", n_populations, 1, "use 1 for an unstructured population"
    )
    n_samples = _as_int(
        "n_samples",
        n_samples,
        n_populations,
        f"every one of the n_populations={n_populations} populations needs at least "
        "one sample; raise n_samples or lower n_populations",
    )
    fst = _as_float("fst", fst)
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
            "long_name": "alternate allele dosage",
            "description": (
                f"Synthetic diploid genotypes from the Balding-Nichols model with "
                f"fst={fst:g} and n_populations={n_populations} (seed={seed})."
            ),
        },
    )
    return _maybe_chunk(out, chunks, "variants")


# --------------------------------------------------------------------------
# climate_field
# --------------------------------------------------------------------------


def _land_mask(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Boolean (lat, lon) mask, True over land."""
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    land = la < _ANTARCTIC_EDGE
    for lon0, lat0, half_lon, half_lat in _CONTINENTS:
        dlon = (lo - lon0 + 180.0) % 360.0 - 180.0
        land |= (dlon / half_lon) ** 2 + ((la - lat0) / half_lat) ** 2 <= 1.0
    return land


def _bump(
    lat: np.ndarray, lon: np.ndarray, lat0: float, lon0: float, r_lat: float, r_lon: float
) -> np.ndarray:
    dlon = (lon - lon0 + 180.0) % 360.0 - 180.0
    return np.exp(-((dlon / r_lon) ** 2) - ((lat - lat0) / r_lat) ** 2)


def _raw_patterns(
    lat: np.ndarray, lon: np.ndarray, n_modes: int, rng: np.random.Generator
) -> np.ndarray:
    """Smooth, not yet orthogonal patterns, shape (n_modes, n_points).

    ``lat``/``lon`` are flat arrays of point coordinates in degrees.
    """
    phi = np.deg2rad(lat)
    lam = np.deg2rad(lon)
    x = np.cos(phi) * np.cos(lam)
    y = np.cos(phi) * np.sin(lam)
    z = np.sin(phi)
    fixed = []
    # 0: seasonal -- opposite sign in the two hemispheres, largest at
    #    mid-latitudes.
    x_pac = np.cos(phi) * np.cos(lam - np.deg2rad(200.0))
    fixed.append(z * (1.0 - 0.6 * z**2) * (1.0 + 0.3 * x_pac) + 0.25 * x_pac)
    # 1: ENSO-like -- equatorial eastern Pacific tongue with an opposite-sign
    #    "horseshoe" in the western Pacific.
    fixed.append(
        _bump(lat, lon, 0.0, 235.0, 18.0, 65.0)
        - 0.3 * _bump(lat, lon, 28.0, 170.0, 15.0, 35.0)
        - 0.3 * _bump(lat, lon, -28.0, 170.0, 15.0, 35.0)
        + 0.2 * (1.0 - z**2)
    )
    # 2: warming -- everywhere positive, stronger in the north.
    fixed.append(1.0 + 0.5 * z + 0.3 * z**2)
    patterns = fixed[:n_modes]
    if n_modes > len(fixed):
        # Random polynomials in (x, y, z) restricted to the sphere: smooth
        # everywhere, including the poles and across the dateline.
        degree = max(3, math.ceil(math.sqrt(n_modes + 1)))
        monomials = []
        weights = []
        for i in range(degree + 1):
            for j in range(degree + 1 - i):
                for k in range(degree + 1 - i - j):
                    monomials.append(x**i * y**j * z**k)
                    weights.append(1.0 / (1.0 + i + j + k))
        basis = np.array(monomials)
        coef = rng.standard_normal((n_modes - len(fixed), len(monomials))) * np.array(weights)
        patterns.extend(coef @ basis)
    return np.array(patterns).reshape(n_modes, lat.size)


def _raw_series(n_time: int, n_modes: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth, not yet orthogonal time series, shape (n_time, n_modes)."""
    t = np.arange(n_time, dtype=np.float64)
    fixed = [
        np.cos(2.0 * np.pi * (t - 7.0) / 12.0),  # seasonal cycle, peak in August
        np.sin(2.0 * np.pi * t / 60.0 + 0.5),  # ~5-year oscillation
        t / max(n_time - 1, 1),  # linear trend
    ]
    series = fixed[:n_modes]
    for _ in range(n_modes - len(fixed)):
        periods = rng.uniform(8.0, 120.0, size=4)
        phases = rng.uniform(0.0, 2.0 * np.pi, size=4)
        amps = rng.uniform(0.5, 1.0, size=4)
        series.append((amps * np.sin(2.0 * np.pi * t[:, None] / periods + phases)).sum(axis=1))
    return np.array(series).reshape(n_modes, n_time).T


def _orthonormal_columns(mat: np.ndarray, what: str, fix: str) -> np.ndarray:
    """QR with positive diagonal; raise if the columns are (nearly) dependent."""
    if mat.shape[1] == 0:
        return mat.copy()
    q, r = np.linalg.qr(mat)
    diag = np.diag(r)
    norms = np.linalg.norm(mat, axis=0)
    if np.any(np.abs(diag) <= 1e-8 * np.maximum(norms, np.finfo(float).tiny)):
        raise ValueError(f"the planted {what} are not linearly independent; {fix}")
    return q * np.sign(diag)


@overload
def climate_field(
    n_time: int = ...,
    n_lat: int = ...,
    n_lon: int = ...,
    *,
    n_modes: int = ...,
    noise: float = ...,
    seed: int | None = ...,
    chunks: int | dict | None = ...,
    return_modes: Literal[False] = ...,
) -> xr.DataArray: ...


@overload
def climate_field(
    n_time: int = ...,
    n_lat: int = ...,
    n_lon: int = ...,
    *,
    n_modes: int = ...,
    noise: float = ...,
    seed: int | None = ...,
    chunks: int | dict | None = ...,
    return_modes: Literal[True],
) -> tuple[xr.DataArray, xr.Dataset]: ...


def climate_field(
    n_time: int = 240,
    n_lat: int = 36,
    n_lon: int = 72,
    *,
    n_modes: int = 3,
    noise: float = 0.2,
    seed: int | None = 0,
    chunks: int | dict | None = None,
    return_modes: bool = False,
) -> xr.DataArray | tuple[xr.DataArray, xr.Dataset]:
    """Monthly sea-surface-temperature-like anomalies with planted modes.

    The field is a sum of ``n_modes`` known space-time modes plus white noise,
    on a regular global grid with a fixed land mask::

        sst(t, lat, lon) = sum_k amplitude[k] * series[t, k] * patterns[k, lat, lon]
                           + noise * N(0, 1)

    over ocean cells, and NaN over land at every time step.

    * Mode 0: seasonal cycle (12-month period) with a pattern of opposite
      sign in the two hemispheres; amplitude 3.
    * Mode 1: an ENSO-like ~5-year (60-month) oscillation centred on the
      equatorial eastern Pacific; amplitude 2.
    * Mode 2: a linear trend with a broad warming pattern; amplitude 1.2.
    * Modes 3 and up: random smooth patterns (low-order polynomials on the
      sphere) and random smooth series (sums of sinusoids with periods of
      8-120 months); amplitudes ``1.2 * 0.75 ** (k - 2)``.

    Patterns are orthonormal over the ocean cells under area weighting and
    series are zero-mean, unit-variance and mutually orthogonal (see
    *Returns*), so the noise-free field's area-weighted SVD is exactly the
    planted modes, with singular values proportional to the amplitudes.

    Parameters
    ----------
    n_time : int, default 240
        Number of months, starting January 2000, >= 1.
    n_lat, n_lon : int, default 36, 72
        Number of grid cells in latitude and longitude (>= 1); the defaults
        give a 5-degree grid.
    n_modes : int, default 3
        Number of planted modes, >= 0.  Must be smaller than ``n_time`` and
        at most the number of ocean cells.
    noise : float, default 0.2
        Standard deviation (degC) of the i.i.d. Gaussian noise added at ocean
        cells, >= 0.
    seed : int or None, default 0
        Seed for :func:`numpy.random.default_rng` (random modes and noise).
        The land mask and modes 0-2 do not depend on it.
    chunks : int, dict or None, default None
        ``None`` returns a NumPy-backed array.  An int returns a Dask-backed
        array with that many time steps per chunk and each of lat and lon in
        one chunk; a dict such as ``{"time": 60, "lat": 18}`` gives the chunk
        size per dimension (dimensions not named stay in one chunk).  The
        values are the same as with ``chunks=None``.
    return_modes : bool, default False
        Also return the planted modes.

    Returns
    -------
    field : xarray.DataArray
        ``float64`` array named ``"sst"`` with dims ``("time", "lat", "lon")``
        and attrs ``units="degC"`` and ``long_name``.  Coordinates: ``time``
        (monthly ``datetime64[ns]`` from 2000-01-01), ``lat`` (cell centres,
        ``-90 + d/2 .. 90 - d/2``, degrees_north), ``lon`` (cell centres,
        ``d/2 .. 360 - d/2``, degrees_east) and the non-dimension coordinate
        ``month`` (1-12) on ``time``.  Land cells (about 29% of the cells) are
        NaN at every time step; ocean cells are never NaN.
    modes : xarray.Dataset
        Only if ``return_modes`` is true.  Variables:

        * ``patterns (mode, lat, lon)``: NaN over land.  Orthonormal under the
          normalised area weights ``w = cos(lat) / sum_ocean(cos(lat))``:
          ``sum_ocean(w * patterns[j] * patterns[k]) == (j == k)``, i.e. each
          pattern has unit area-weighted root mean square.
        * ``series (time, mode)``: zero mean and **unit variance** (population
          variance, ``ddof=0``) and mutually orthogonal.
        * ``amplitude (mode)``: ``[3, 2, 1.2, 0.9, ...]``, in degC; it is the
          area-weighted RMS of each mode's contribution.

        In the area-weighted SVD of the noise-free field (ocean cells times
        ``sqrt(cos(lat))``), singular value ``k`` is
        ``amplitude[k] * sqrt(n_time * sum_ocean(cos(lat)))``.

    Examples
    --------
    >>> from xsvd.datasets import climate_field
    >>> sst, modes = climate_field(120, 18, 36, seed=1, return_modes=True)
    >>> sst.dims, sst.shape, sst.attrs["units"]
    (('time', 'lat', 'lon'), (120, 18, 36), 'degC')
    >>> str(sst.time.values[0])[:10], sst.month.values[:3].tolist()
    ('2000-01-01', [1, 2, 3])
    >>> land = sst.isnull().all("time")
    >>> bool((sst.isnull() == land).all())
    True
    >>> modes.amplitude.values.tolist()
    [3.0, 2.0, 1.2]
    """
    n_time = _as_int("n_time", n_time, 1, "ask for at least one month")
    n_lat = _as_int("n_lat", n_lat, 1, "ask for at least one latitude band")
    n_lon = _as_int("n_lon", n_lon, 1, "ask for at least one longitude band")
    n_modes = _as_int("n_modes", n_modes, 0, "use 0 for pure noise")
    noise = _as_float("noise", noise)
    if noise < 0.0:
        raise ValueError(f"noise must be >= 0 (a standard deviation in degC), got {noise}")
    if n_modes > 0 and n_modes >= n_time:
        raise ValueError(
            f"n_modes={n_modes} must be smaller than n_time={n_time}: each planted mode "
            "needs its own zero-mean time series; lower n_modes or raise n_time"
        )

    dlat = 180.0 / n_lat
    dlon = 360.0 / n_lon
    lat = -90.0 + dlat / 2.0 + dlat * np.arange(n_lat)
    lon = dlon / 2.0 + dlon * np.arange(n_lon)
    land = _land_mask(lat, lon)
    ocean = ~land.ravel()
    n_ocean = int(ocean.sum())
    if n_ocean == 0:
        raise ValueError(f"the {n_lat} x {n_lon} grid has no ocean cells; raise n_lat and n_lon")
    if n_modes > n_ocean:
        raise ValueError(
            f"n_modes={n_modes} exceeds the {n_ocean} ocean cells of the {n_lat} x {n_lon} "
            "grid; lower n_modes or use a finer grid"
        )

    rng_patterns, rng_series, rng_noise = np.random.default_rng(seed).spawn(3)

    # Patterns, orthonormal over the ocean under w = cos(lat) / sum(cos(lat)).
    lat2d, lon2d = np.meshgrid(lat, lon, indexing="ij")
    lat_o = lat2d.ravel()[ocean]
    lon_o = lon2d.ravel()[ocean]
    coslat = np.cos(np.deg2rad(lat_o))
    sqrt_w = np.sqrt(coslat / coslat.sum())
    raw = _raw_patterns(lat_o, lon_o, n_modes, rng_patterns)
    q = _orthonormal_columns(
        (raw * sqrt_w).T,
        "spatial patterns",
        "the grid is too coarse for this many modes; lower n_modes or raise n_lat/n_lon",
    )
    patterns_o = (q / sqrt_w[:, None]).T  # (n_modes, n_ocean)

    # Series: zero-mean, orthogonal, unit variance (ddof=0).
    raw_series = _raw_series(n_time, n_modes, rng_series)
    raw_series = raw_series - raw_series.mean(axis=0)
    series = _orthonormal_columns(
        raw_series,
        "time series",
        "the record is too short for this many modes; raise n_time or lower n_modes",
    ) * np.sqrt(n_time)

    amplitude = np.array([3.0, 2.0, 1.2] + [1.2 * 0.75 ** (k - 2) for k in range(3, n_modes)])
    amplitude = amplitude[:n_modes]

    values = (series * amplitude) @ patterns_o
    if noise > 0.0:
        values += noise * rng_noise.standard_normal((n_time, n_ocean))
    data = np.full((n_time, n_lat * n_lon), np.nan)
    data[:, ocean] = values
    data = data.reshape(n_time, n_lat, n_lon)

    time = (np.datetime64("2000-01", "M") + np.arange(n_time)).astype("datetime64[ns]")
    month = (np.datetime64("2000-01", "M") + np.arange(n_time)).astype(np.int64) % 12 + 1
    coords = {
        "time": ("time", time, {"standard_name": "time", "long_name": "time"}),
        "lat": (
            "lat",
            lat,
            {"units": "degrees_north", "standard_name": "latitude", "long_name": "latitude"},
        ),
        "lon": (
            "lon",
            lon,
            {"units": "degrees_east", "standard_name": "longitude", "long_name": "longitude"},
        ),
        "month": ("time", month, {"long_name": "calendar month"}),
    }
    field = xr.DataArray(
        data,
        dims=("time", "lat", "lon"),
        coords=coords,
        name="sst",
        attrs={
            "units": "degC",
            "long_name": "sea surface temperature anomaly",
            "description": (
                f"Synthetic monthly SST-like anomalies: {n_modes} planted mode(s) plus "
                f"Gaussian noise of std {noise:g} degC over the ocean; NaN over land "
                f"(seed={seed})."
            ),
        },
    )
    field = _maybe_chunk(field, chunks, "time")
    if not return_modes:
        return field

    patterns = np.full((n_modes, n_lat * n_lon), np.nan)
    patterns[:, ocean] = patterns_o
    mode = np.arange(n_modes, dtype=np.int64)
    modes = xr.Dataset(
        {
            "patterns": (
                ("mode", "lat", "lon"),
                patterns.reshape(n_modes, n_lat, n_lon),
                {
                    "long_name": "planted spatial pattern",
                    "normalization": (
                        "orthonormal over ocean cells under weights "
                        "cos(lat) / sum_ocean(cos(lat)) (unit area-weighted RMS)"
                    ),
                },
            ),
            "series": (
                ("time", "mode"),
                series,
                {
                    "long_name": "planted time series",
                    "normalization": "zero mean, unit variance (ddof=0), mutually orthogonal",
                },
            ),
            "amplitude": (
                ("mode",),
                amplitude,
                {"long_name": "mode amplitude", "units": "degC"},
            ),
        },
        coords={"mode": ("mode", mode), **coords},
        attrs={
            "description": (
                "Planted modes of climate_field: "
                "sst = sum_k amplitude[k] * series[:, k] * patterns[k] + noise."
            )
        },
    )
    return field, modes
