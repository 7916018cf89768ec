"""PLINK 1 file sets: read a ``.bed``/``.bim``/``.fam`` lazily (kept 2-bit packed), write one.

:func:`open_plink` gives a ``(variants, samples)`` DataArray whose Dask chunks
hold the file's own bytes (:class:`~xsvd.PackedGenotypes`) until xsvd
multiplies them; :func:`write_plink` writes one chunk at a time. The values
are counts of allele 1 (the ``.bim``'s fifth column), as PLINK 1.9 and
bed-reader report them, float32 with NaN for missing calls.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path

import numpy as np
import xarray as xr

from ..core import backend
from ..core.packed import PackedGenotypes, pack

__all__ = ["open_plink", "write_plink", "PlinkFileError", "BED_CHUNK_BYTES", "coord_text"]

_BED_MAGIC = bytes([0x6C, 0x1B])
_BED_VARIANT_MAJOR = 0x01
#: default size of one chunk of packed bytes read from (or written to) a .bed file
BED_CHUNK_BYTES = 16 * 2**20

_BIM_COLUMNS = ("chrom", "variants", "cm", "position", "allele_1", "allele_2")
_FAM_COLUMNS = ("family_id", "samples", "father_id", "mother_id", "sex", "phenotype")


class PlinkFileError(ValueError):
    """A PLINK file set that cannot be read as it is."""


def _bed_paths(path) -> tuple[Path, Path, Path]:
    p = Path(os.fspath(path))
    prefix = p.with_suffix("") if p.suffix in (".bed", ".bim", ".fam") else p
    return prefix.with_suffix(".bed"), prefix.with_suffix(".bim"), prefix.with_suffix(".fam")


def _read_table(path: Path, columns, kind: str):
    import pandas as pd

    if not path.exists():
        raise PlinkFileError(
            f"The {kind} file {str(path)!r} is missing. A PLINK 1 file set is three files "
            "with one prefix: .bed (genotypes), .bim (variants) and .fam (samples)."
        )
    try:
        table = pd.read_csv(path, sep=r"\s+", header=None, dtype=str, comment=None)
    except pd.errors.EmptyDataError:
        table = pd.DataFrame([[]] * 0, columns=range(len(columns)))
    if table.shape[1] != len(columns):
        raise PlinkFileError(
            f"{str(path)!r} has {table.shape[1]} columns; a {kind} file has "
            f"{len(columns)}: {', '.join(columns)}."
        )
    table.columns = list(columns)
    return table


def open_plink(path, *, chunks: int | None = None) -> xr.DataArray:
    """Open a PLINK 1 ``.bed`` file set as a lazy ``(variants, samples)`` DataArray.

    The genotypes stay 2-bit packed: each Dask chunk holds the file's bytes
    for a block of variants (a :class:`~xsvd.PackedGenotypes`), and
    xsvd's solvers unpack a small sub-block at a time inside the products.
    Anything else (``.values``, arithmetic, ``.mean()``) sees float32 values:
    the count of allele 1 (0, 1, 2) and NaN for missing calls.

    Parameters
    ----------
    path : str or path-like
        The ``.bed`` file, or the common prefix of ``.bed``, ``.bim`` and ``.fam``.
    chunks : int, optional
        Variants per chunk. Default: about 16 MiB of packed bytes per chunk.

    Returns
    -------
    xarray.DataArray
        Dims ``("variants", "samples")``; coordinates ``variants`` (variant ids),
        ``chrom``, ``position``, ``cm``, ``allele_1``, ``allele_2`` along
        variants and ``samples`` (individual ids), ``family_id``, ``father_id``,
        ``mother_id``, ``sex``, ``phenotype`` along samples.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=1_000, n_samples=50)
    >>> prefix = tempfile.mkdtemp() + "/toy"
    >>> xsvd.write_plink(gt, prefix)
    >>> bed = xsvd.open_plink(prefix + ".bed")
    >>> bed.dims, bed.shape, bed.dtype
    (('variants', 'samples'), (1000, 50), dtype('float32'))
    >>> bool((bed.values == gt.values).all())
    True
    """
    import dask.array as da

    bed, bim, fam = _bed_paths(path)
    if not bed.exists():
        raise PlinkFileError(f"No .bed file at {str(bed)!r}. Pass the .bed path or its prefix.")
    variants = _read_table(bim, _BIM_COLUMNS, ".bim")
    samples = _read_table(fam, _FAM_COLUMNS, ".fam")
    n_var, n_samp = len(variants), len(samples)
    row_bytes = (n_samp + 3) // 4
    with open(bed, "rb") as f:
        head = f.read(3)
    if len(head) < 3 or head[:2] != _BED_MAGIC:
        raise PlinkFileError(
            f"{str(bed)!r} is not a PLINK 1 .bed file (it does not start with the bytes "
            "6c 1b). Convert it with `plink2 --make-bed`."
        )
    if head[2] != _BED_VARIANT_MAJOR:
        raise PlinkFileError(
            f"{str(bed)!r} is in the old sample-major layout. Rewrite it variant-major "
            "with `plink --bfile PREFIX --make-bed --out NEW`."
        )
    expected = 3 + n_var * row_bytes
    size = bed.stat().st_size
    if size != expected:
        raise PlinkFileError(
            f"{str(bed)!r} has {size} bytes, but {n_var} variants (.bim) x {n_samp} samples "
            f"(.fam) need {expected}. The files do not belong together or the .bed is "
            "truncated."
        )
    step = chunks or max(1, BED_CHUNK_BYTES // max(row_bytes, 1))
    starts = list(range(0, n_var, step)) or [0]
    sizes = [min(step, n_var - s) for s in starts]
    name = f"open-plink-{_token(bed, size, step)}"
    where = str(bed.resolve())
    meta = PackedGenotypes(np.empty((0, 0), dtype=np.uint8), 0)
    arr = da.map_blocks(  # no input arrays: each block reads its own rows of the file
        _read_bed_block,
        where,
        step,
        n_var,
        row_bytes,
        n_samp,
        name=name,
        chunks=(tuple(sizes), (n_samp,)),
        dtype=np.float32,
        meta=meta,
    )
    coords = {
        "variants": ("variants", variants["variants"].to_numpy(dtype=str)),
        "chrom": ("variants", variants["chrom"].to_numpy(dtype=str)),
        "position": ("variants", variants["position"].to_numpy(dtype=np.int64)),
        "cm": ("variants", variants["cm"].to_numpy(dtype=np.float64)),
        "allele_1": ("variants", variants["allele_1"].to_numpy(dtype=str)),
        "allele_2": ("variants", variants["allele_2"].to_numpy(dtype=str)),
        "samples": ("samples", samples["samples"].to_numpy(dtype=str)),
    }
    for col in _FAM_COLUMNS:
        if col != "samples":
            values = samples[col].to_numpy(dtype=str)
            if col == "sex":
                values = _sex_codes(values)
            coords[col] = ("samples", values)
    attrs = {
        "source": str(bed),
        "values": "count of allele_1 (0, 1, 2); NaN = missing call",
    }
    return xr.DataArray(
        arr, dims=("variants", "samples"), coords=coords, name="genotype", attrs=attrs
    )


#: PLINK 2's sex codes: 1 or M = male, 2 or F = female; anything else is unknown (0).
_SEX_CODES = {"1": 1, "m": 1, "male": 1, "2": 2, "f": 2, "female": 2}


def _sex_codes(values) -> np.ndarray:
    """The ``.fam`` sex column as PLINK's codes 1 (male), 2 (female), 0 (unknown), int8."""
    return np.array([_SEX_CODES.get(str(v).strip().lower(), 0) for v in values], dtype=np.int8)


def _token(path: Path, size: int, step: int) -> str:
    from dask.base import tokenize

    return tokenize(str(path.resolve()), size, path.stat().st_mtime_ns, step)


def _read_bed_block(path: str, step: int, n_var: int, row_bytes: int, n: int, block_id=None):
    """Block ``block_id`` of :func:`open_plink`'s array: variants ``i * step`` on, packed."""
    start = block_id[0] * step
    return _read_bed_rows(path, start, min(step, n_var - start), row_bytes, n)


def _read_bed_rows(path: str, start: int, count: int, row_bytes: int, n: int):
    """Packed bytes of variants ``start:start+count`` of a variant-major .bed file."""
    with open(path, "rb") as f:
        f.seek(3 + start * row_bytes)
        data = np.fromfile(f, dtype=np.uint8, count=count * row_bytes)
    if data.size != count * row_bytes:
        raise PlinkFileError(f"{path!r} ended early at variants {start}-{start + count}.")
    return PackedGenotypes(data.reshape(count, row_bytes), n)


def write_plink(gt: xr.DataArray, path, *, dim: Hashable = "samples") -> None:
    """Write allele counts (0, 1, 2; NaN or negative = missing) as a PLINK 1 file set.

    ``gt`` is written one Dask chunk (or, in memory, ~16 MiB of variants) at a
    time, so larger-than-memory data can be written. The ``.bim`` and
    ``.fam`` columns come from the coordinates :func:`open_plink` creates
    (``chrom``, ``position``, ``allele_1``, ... ) where present, with PLINK's
    placeholders otherwise. Nothing is left behind if writing fails.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D, dims ``(variants, dim)`` in either order; values count allele 1.
    path : str or path-like
        The ``.bed`` path or the prefix of the three files.
    dim : str
        The sample dimension.
    """
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"write_plink needs a 2-D DataArray with a {dim!r} dimension (pass `dim=` to "
            "name the sample dimension)."
        )
    vdim = next(d for d in gt.dims if d != dim)
    gt = gt.transpose(vdim, dim)
    bed, bim, fam = _bed_paths(path)
    n_var, n_samp = gt.shape
    data = gt.data
    if backend.is_dask(data):
        bounds = np.cumsum([0, *data.chunks[0]])
    else:
        row = max(1, BED_CHUNK_BYTES // max(n_samp, 1))
        bounds = [*range(0, n_var, row), n_var]
    written = []
    try:
        with open(bed, "wb") as f:
            written.append(bed)
            f.write(_BED_MAGIC + bytes([_BED_VARIANT_MAJOR]))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                block = data[a:b]
                if backend.is_dask(block):
                    block = block.compute()
                if backend.is_packed(block):
                    block = block.unpack()
                f.write(backend.to_numpy(pack(backend.to_numpy(block)).data).tobytes())
        _write_table(bim, _bim_table(gt, vdim), written)
        _write_table(fam, _fam_table(gt, dim), written)
    except BaseException:
        for p in written:
            p.unlink(missing_ok=True)
        raise


def coord_text(gt, name, dim, default):
    """The coordinate ``name`` along ``dim`` as text, or ``default`` repeated when absent."""
    if name in gt.coords and gt[name].dims == (dim,):
        return np.asarray(gt[name].values).astype(str)
    return np.full(gt.sizes[dim], default, dtype=object).astype(str)


def _bim_table(gt, vdim):
    n = gt.sizes[vdim]
    ids = (
        coord_text(gt, vdim, vdim, ".")
        if vdim in gt.coords
        else np.array([f"v{i}" for i in range(n)])
    )
    pos = coord_text(gt, "position", vdim, "0")
    return [
        coord_text(gt, "chrom", vdim, "0"),
        ids,
        coord_text(gt, "cm", vdim, "0"),
        pos,
        coord_text(gt, "allele_1", vdim, "A"),
        coord_text(gt, "allele_2", vdim, "B"),
    ]


def _fam_table(gt, dim):
    n = gt.sizes[dim]
    ids = (
        coord_text(gt, dim, dim, "") if dim in gt.coords else np.array([f"s{i}" for i in range(n)])
    )
    return [
        coord_text(gt, "family_id", dim, "0") if "family_id" in gt.coords else ids,
        ids,
        coord_text(gt, "father_id", dim, "0"),
        coord_text(gt, "mother_id", dim, "0"),
        coord_text(gt, "sex", dim, "0"),
        coord_text(gt, "phenotype", dim, "-9"),
    ]


def _write_table(path: Path, columns, written: list) -> None:
    for c in columns:
        if any(any(ch.isspace() for ch in str(v)) for v in c[:1000]):
            raise ValueError(
                f"PLINK files cannot hold identifiers with spaces; found one for {path.suffix}."
            )
    written.append(path)
    with open(path, "w") as f:
        for row in zip(*columns, strict=True):
            f.write("\t".join(row) + "\n")
