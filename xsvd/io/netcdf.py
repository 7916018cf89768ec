"""Local netCDF files (netCDF-3 and netCDF-4): recognise one, read it into memory."""

from __future__ import annotations

import os

import xarray as xr

from .errors import StoreReadError

__all__ = ["is_netcdf", "read_netcdf"]

#: The first bytes of netCDF files: classic, 64-bit offset and CDF-5; netCDF-4 (HDF5).
NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def is_netcdf(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local netCDF file (netCDF-3 or netCDF-4), by its first bytes."""
    text = os.fspath(path)
    if "://" in text or not os.path.isfile(text):
        return False
    try:
        with open(text, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head.startswith(NETCDF_MAGIC)


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """Read a local netCDF file into memory as a Dataset, or raise :class:`StoreReadError`.

    xarray picks the engine: scipy reads netCDF-3, netCDF4 or h5netcdf
    (whichever is installed) netCDF-4. The file is closed when this returns.
    """
    text = os.fspath(path)
    try:
        with xr.open_dataset(text) as ds:
            return ds.load()
    except Exception as exc:
        hint = ""
        with open(text, "rb") as f:
            if f.read(4) == b"\x89HDF":
                hint = " Reading netCDF-4 files needs h5netcdf or netCDF4: pip install h5netcdf."
        raise StoreReadError(
            f"Could not read the netCDF file {text!r}: {type(exc).__name__}: {exc}. The file "
            f"may be truncated or corrupt (write it again), or not readable here.{hint}"
        ) from exc
