"""A synthetic monthly SST-like anomaly field (time x lat x lon) with land and planted modes."""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
import xarray as xr

from .checks import as_float, as_int, maybe_chunk

__all__ = ["climate_field"]

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


def _land_mask(la: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Boolean (lat, lon) mask, True over land, of the latitude and longitude of each cell."""
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
        The land mask and the first three modes do not depend on it.
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
        Only if ``return_modes`` is true, with the coordinate ``mode``
        counted from 1 (as the ``component`` of results).  Variables:

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
    n_time = as_int("n_time", n_time, 1, "ask for at least one month")
    n_lat = as_int("n_lat", n_lat, 1, "ask for at least one latitude band")
    n_lon = as_int("n_lon", n_lon, 1, "ask for at least one longitude band")
    n_modes = as_int("n_modes", n_modes, 0, "use 0 for pure noise")
    noise = as_float("noise", noise)
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
    lat2d, lon2d = np.meshgrid(lat, lon, indexing="ij")
    ocean = ~_land_mask(lat2d, lon2d).ravel()
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
    field = maybe_chunk(field, chunks, "time")
    if not return_modes:
        return field

    patterns = np.full((n_modes, n_lat * n_lon), np.nan)
    patterns[:, ocean] = patterns_o
    mode = np.arange(1, n_modes + 1, dtype=np.int64)  # mode 1, 2, ...: as components count
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
