"""Genotype inputs: PLINK ``.bed`` files, VCF-Zarr (sgkit) datasets, 2-bit packing.

- :func:`open_plink` reads a PLINK 1 ``.bed``/``.bim``/``.fam`` file set as a
  lazy ``(variants, samples)`` DataArray whose Dask chunks stay 2-bit packed
  (the file's own bytes) until xsvd multiplies them, a small block at a time.
- :func:`write_plink` writes one, chunk by chunk.
- :func:`pack_genotypes` packs 0/1/2 genotypes already in memory (NumPy,
  CuPy or Dask chunks), four to a byte.
- :func:`dosage` turns a VCF-Zarr / sgkit ``call_genotype`` into allele
  dosages, lazily, with missing calls as NaN.
- :func:`patterson_scaling` gives the per-variant scaling of PLINK 2's
  ``--pca`` (Patterson, Price & Reich 2006).

Values are counts of one allele (0, 1, 2) as float32 with NaN for missing
calls; for ``.bed`` files, counts of allele 1 (the ``.bim``'s fifth column),
as PLINK 1.9 and bed-reader report them.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path

import numpy as np
import xarray as xr

from . import _backend
from ._missing import GENOTYPES
from ._packed import PackedGenotypes, pack

__all__ = ["open_plink", "write_plink", "pack_genotypes", "dosage", "patterson_scaling"]

_BED_MAGIC = bytes([0x6C, 0x1B])
_BED_VARIANT_MAJOR = 0x01
#: default size of one chunk of packed bytes read from a .bed file
_BED_CHUNK_BYTES = 16 * 2**20

_BIM_COLUMNS = ("chrom", "variants", "cm", "position", "allele_1", "allele_2")
_FAM_COLUMNS = ("family_id", "samples", "father_id", "mother_id", "sex", "phenotype")


class PlinkFileError(ValueError):
    """A PLINK file set that cannot be read as it is."""


# --------------------------------------------------------------------------- PLINK


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
    from dask.highlevelgraph import HighLevelGraph

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
    step = chunks or max(1, _BED_CHUNK_BYTES // max(row_bytes, 1))
    starts = list(range(0, n_var, step)) or [0]
    sizes = [min(step, n_var - s) for s in starts]
    name = f"open-plink-{_token(bed, size, step)}"
    where = str(bed.resolve())
    dsk = {
        (name, i, 0): (_read_bed_rows, where, s, c, row_bytes, n_samp)
        for i, (s, c) in enumerate(zip(starts, sizes, strict=True))
    }
    meta = PackedGenotypes(np.empty((0, 0), dtype=np.uint8), 0)
    arr = da.Array(
        HighLevelGraph.from_collections(name, dsk, dependencies=()),
        name,
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
    if _backend.is_dask(data):
        bounds = np.cumsum([0, *data.chunks[0]])
    else:
        row = max(1, _BED_CHUNK_BYTES // max(n_samp, 1))
        bounds = [*range(0, n_var, row), n_var]
    written = []
    try:
        with open(bed, "wb") as f:
            written.append(bed)
            f.write(_BED_MAGIC + bytes([_BED_VARIANT_MAJOR]))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                block = data[a:b]
                if _backend.is_dask(block):
                    block = block.compute()
                if _backend.is_packed(block):
                    block = block.unpack()
                f.write(_backend.to_numpy(pack(_backend.to_numpy(block)).data).tobytes())
        _write_table(bim, _bim_table(gt, vdim), written)
        _write_table(fam, _fam_table(gt, dim), written)
    except BaseException:
        for p in written:
            p.unlink(missing_ok=True)
        raise


def _coord(gt, name, dim, default):
    if name in gt.coords and gt[name].dims == (dim,):
        return np.asarray(gt[name].values).astype(str)
    return np.full(gt.sizes[dim], default, dtype=object).astype(str)


def _bim_table(gt, vdim):
    n = gt.sizes[vdim]
    ids = (
        _coord(gt, vdim, vdim, ".") if vdim in gt.coords else np.array([f"v{i}" for i in range(n)])
    )
    pos = _coord(gt, "position", vdim, "0")
    return [
        _coord(gt, "chrom", vdim, "0"),
        ids,
        _coord(gt, "cm", vdim, "0"),
        pos,
        _coord(gt, "allele_1", vdim, "A"),
        _coord(gt, "allele_2", vdim, "B"),
    ]


def _fam_table(gt, dim):
    n = gt.sizes[dim]
    ids = _coord(gt, dim, dim, "") if dim in gt.coords else np.array([f"s{i}" for i in range(n)])
    return [
        _coord(gt, "family_id", dim, "0") if "family_id" in gt.coords else ids,
        ids,
        _coord(gt, "father_id", dim, "0"),
        _coord(gt, "mother_id", dim, "0"),
        _coord(gt, "sex", dim, "0"),
        _coord(gt, "phenotype", dim, "-9"),
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


# ------------------------------------------------------------------------ packing


def pack_genotypes(gt: xr.DataArray, *, dim: Hashable = "samples") -> xr.DataArray:
    """Hold 0/1/2 genotypes four to a byte (in host or GPU memory, or per Dask chunk).

    The result has the same dims, coordinates and float32 values (NaN for
    missing) but takes a sixteenth of float32's memory (a quarter of
    uint8's); xsvd's solvers unpack it a small block at a time inside the
    products. Dask chunks are packed one by one (lazily), CuPy data stay on
    the GPU.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D; values 0, 1, 2, with NaN or negative values for missing calls.
    dim : str
        The dimension packed along (the samples, as in a ``.bed`` file).

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=1_000, n_samples=200)
    >>> packed = xsvd.pack_genotypes(gt)
    >>> packed.data.nbytes, gt.data.nbytes
    (50000, 200000)
    """
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"pack_genotypes needs a 2-D DataArray with a {dim!r} dimension; pass `dim=` "
            "to name the dimension to pack along."
        )
    order = gt.dims
    other = next(d for d in order if d != dim)
    t = gt.transpose(other, dim)
    data = t.data
    if _backend.is_dask(data):
        xp = _backend.namespace(data)
        meta = PackedGenotypes(xp.empty((0, 0), dtype=np.uint8), 0)
        packed = data.map_blocks(pack, dtype=np.float32, meta=meta)
    elif _backend.is_packed(data):
        packed = data
    else:
        packed = pack(data)
    out = t.copy(data=packed)
    return out.transpose(*order)


# ------------------------------------------------------------------------- VCF-Zarr


def dosage(ds: xr.Dataset, *, genotype: str = "call_genotype") -> xr.DataArray:
    """Alternate-allele dosage ``(variants, samples)`` of a VCF-Zarr / sgkit dataset.

    The number of non-reference alleles of each call in ``call_genotype``
    (allele indices, 0 = reference; any other index counts once, so
    multi-allelic sites give 0-2 as well), computed lazily chunk by chunk; a
    call with any allele missing (negative index, as sgkit and bio2zarr write
    them) is NaN, which
    ``missing="mean"`` then handles. 1-D per-variant and per-sample variables
    (``variant_position``, ``variant_contig``, ``sample_id``, ...) become
    coordinates; ``sample_id`` labels the samples.

    Examples
    --------
    >>> import numpy as np, xarray as xr, xsvd
    >>> calls = np.array([[[0, 1], [1, 1]], [[0, 0], [-1, 0]]], dtype="int8")
    >>> ds = xr.Dataset({"call_genotype": (("variants", "samples", "ploidy"), calls)})
    >>> xsvd.dosage(ds).values
    array([[ 1.,  2.],
           [ 0., nan]], dtype=float32)
    """
    if genotype not in ds:
        raise KeyError(
            f"The dataset has no {genotype!r} variable (it has {list(ds.data_vars)}). "
            "Pass the genotype call variable as `genotype=`."
        )
    g = ds[genotype]
    if "ploidy" not in g.dims:
        raise ValueError(f"{genotype!r} has dims {g.dims}; expected a 'ploidy' dimension.")
    if g.chunks is not None and len(g.chunksizes["ploidy"]) > 1:
        g = g.chunk(ploidy=-1)
    out = xr.apply_ufunc(
        _dosage_block,
        g,
        input_core_dims=[["ploidy"]],
        dask="parallelized",
        output_dtypes=[np.float32],
    )
    coords = {}
    for name, var in ds.variables.items():
        if name in out.coords or var.ndim != 1 or var.dims[0] not in out.dims:
            continue
        if var.dtype.kind in "biufUSOM":
            coords[name] = var
    out = out.assign_coords(coords)
    if "sample_id" in out.coords and "samples" not in out.indexes:
        out = out.assign_coords(samples=out["sample_id"].values)
    return out.rename("dosage").transpose("variants", "samples", ...)


def _dosage_block(g):
    xp = _backend.namespace(g)
    missing = GENOTYPES.mask(xp, g).any(axis=-1)  # an allele index < 0 is a missing call
    # count of non-reference alleles (0/2 at a multi-allelic site counts 1, as in sgkit)
    out = (g > 0).sum(axis=-1, dtype=np.int16).astype(np.float32)
    return xp.where(missing, xp.float32(np.nan), out)


# ------------------------------------------------------------------- standardizing


def patterson_scaling(
    gt: xr.DataArray, *, dim: Hashable = "samples"
) -> tuple[xr.DataArray, xr.DataArray]:
    """PLINK 2's per-variant scaling for PCA (Patterson, Price & Reich 2006).

    Each variant ``j`` with allele frequency ``p_j`` (its mean count / 2 over
    the samples with a call) enters the PCA as ``(x - 2 p_j) / sqrt(2 p_j
    (1 - p_j))``; monomorphic variants (``p_j`` = 0 or 1, or no calls) carry no
    information and are dropped. The frequencies take one pass over the data
    (on packed data, counted on the bytes).

    Returns the polymorphic variants and their weights, to be used as::

        gt, w = xsvd.patterson_scaling(gt)
        res = gt.svd.compressed(k=10, dim="samples", center=True, weights=w,
                                missing="mean", krylov=True)
        eigenvalues = res.S**2 / w.attrs["n_variants"]   # PLINK 2's .eigenval

    Centering with ``center=True`` removes ``2 p_j`` (the mean over called
    samples, which ``missing="mean"`` also uses for missing calls), and the
    weights divide by ``sqrt(2 p_j (1 - p_j))``. ``res.U`` are the samples'
    principal components (PLINK 2's ``.eigenvec`` up to sign). ``krylov=True``
    keeps the noise eigenvalues (components 3 and up of a few populations)
    accurate, as PLINK 2's ``--pca approx`` does with its own block Krylov
    method. Missing calls: ``missing="mean"`` is PLINK 2's ``--pca
    meanimpute`` (and ``--pca approx``); plain ``--pca`` corrects the
    relationship matrix for missingness instead. sgkit's ``PattersonScaler``
    divides by ``sqrt(p (1 - p))``, so its singular values are ``sqrt(2)``
    times these; U, V and explained-variance ratios are the same.

    Parameters
    ----------
    gt : xarray.DataArray
        2-D allele counts, dims ``(variants, dim)`` in either order.
    dim : str
        The sample dimension.

    Returns
    -------
    (xarray.DataArray, xarray.DataArray)
        ``gt`` without its monomorphic variants, and the weights along the
        variants (with ``allele_frequency`` as a coordinate).

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=100)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> kept.sizes["variants"] <= 2_000, w.dims
    (True, ('variants',))
    """
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"patterson_scaling needs a 2-D DataArray with a {dim!r} dimension (pass "
            "`dim=` to name the sample dimension)."
        )
    vdim = next(d for d in gt.dims if d != dim)
    sums, counts = _called_sums(gt.transpose(vdim, dim).data)
    p = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0) / 2
    keep = (counts > 0) & (p > 0) & (p < 1)
    w = np.zeros_like(p)
    w[keep] = 1.0 / np.sqrt(2 * p[keep] * (1 - p[keep]))
    weights = xr.DataArray(
        w,
        dims=(vdim,),
        coords={**{k: v for k, v in gt.coords.items() if v.dims == (vdim,)}},
        name="patterson_weight",
        # PLINK 2 divides S**2 by every variant it was given, monomorphic ones included
        attrs={"long_name": "1 / sqrt(2 p (1 - p))", "n_variants": int(gt.sizes[vdim])},
    ).assign_coords(allele_frequency=(vdim, p))
    idx = np.flatnonzero(keep)
    if idx.size == gt.sizes[vdim]:
        return gt, weights
    return gt.isel({vdim: idx}), weights.isel({vdim: idx})


def _called_sums(a):
    """Per-row sum and count of the called (non-missing) values of a 2-D array."""
    if _backend.is_dask(a):
        import dask

        parts = [[dask.delayed(_block_sums)(b) for b in row] for row in a.to_delayed()]
        rows = dask.compute(parts)[0]
        sums = np.concatenate([sum(r[0] for r in row) for row in rows])
        counts = np.concatenate([sum(r[1] for r in row) for row in rows])
        return sums, counts
    return _block_sums(a)


def _block_sums(b):
    if _backend.is_packed(b) and not b.transposed:
        s, _, c = b.called_stats()
        return _backend.to_numpy(s), _backend.to_numpy(c)
    xp = _backend.namespace(b)
    x = b.astype(np.float64) if _backend.is_packed(b) else xp.asarray(b, dtype=np.float64)
    ok = ~GENOTYPES.mask(xp, x)
    return (
        _backend.to_numpy(xp.where(ok, x, 0).sum(axis=1)),
        _backend.to_numpy(ok.sum(axis=1)),
    )
