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
from ..labeled.dims import SAMPLE_DIM_ATTR
from .tables import BIM_DTYPES, PlinkFileError, check_sample_ids, read_table, sex_codes

__all__ = [
    "open_plink",
    "write_plink",
    "PlinkFileError",
    "BED_CHUNK_BYTES",
    "BED_CHUNK_VARIANTS",
    "default_variant_chunk",
    "coord_text",
    "file_set_paths",
    "missing_file_set",
    "BED_SUFFIXES",
    "PGEN_SUFFIXES",
]

_BED_MAGIC = bytes([0x6C, 0x1B])
_BED_VARIANT_MAJOR = 0x01
#: default size of one chunk of packed bytes read from (or written to) a .bed file
BED_CHUNK_BYTES = 16 * 2**20
#: most variants in one default chunk: the solvers keep a few float64 values per
#: variant and sketch column for every chunk in flight (about 1.3 KB per variant at
#: k=10), more than the 2-bit genotypes of a few thousand samples
BED_CHUNK_VARIANTS = 4096

_BIM_COLUMNS = ("chrom", "variants", "cm", "position", "allele_1", "allele_2")
_FAM_COLUMNS = ("family_id", "samples", "father_id", "mother_id", "sex", "phenotype")


#: The files of a PLINK 1 and of a PLINK 2 file set, genotypes first.
BED_SUFFIXES = (".bed", ".bim", ".fam")
PGEN_SUFFIXES = (".pgen", ".pvar", ".psam")
_VCF_SUFFIXES = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")


def file_set_paths(path, suffixes: tuple[str, ...] = BED_SUFFIXES) -> tuple[Path, ...]:
    """The files of the PLINK file set that ``path`` names: its prefix + each of ``suffixes``.

    The one rule for file-set names, as PLINK's: a name ending in one of
    ``suffixes`` names that file of the set, and the suffix comes off; any
    other name is the whole prefix, dots and all. So ``cohort.pruned`` and
    ``cohort.pruned.bed`` both name ``cohort.pruned.bed``/``.bim``/``.fam``
    (never ``cohort.bed``, as ``Path.with_suffix`` would), and ``x.vcf``
    names ``x.vcf.bed``.

    Examples
    --------
    >>> [p.name for p in file_set_paths("data/cohort.pruned")]
    ['cohort.pruned.bed', 'cohort.pruned.bim', 'cohort.pruned.fam']
    >>> [p.name for p in file_set_paths("cohort.pruned.pvar", PGEN_SUFFIXES)]
    ['cohort.pruned.pgen', 'cohort.pruned.pvar', 'cohort.pruned.psam']
    """
    p = Path(os.fspath(path))
    prefix = p.name
    for suffix in suffixes:
        if prefix.endswith(suffix):
            prefix = prefix[: -len(suffix)]
            break
    return tuple(p.with_name(prefix + s) for s in suffixes)


def missing_file_set(path, suffixes: tuple[str, ...] = BED_SUFFIXES) -> PlinkFileError:
    """The error for a file set whose genotype file (``prefix + suffixes[0]``) is not there.

    It says which file was looked for and why (the name read as a prefix),
    and that a VCF file is converted first.
    """
    text = os.fspath(path)
    first = file_set_paths(path, suffixes)[0]
    message = f"No {suffixes[0]} file at {str(first)!r}."
    if not text.endswith(suffixes):
        message += (
            f" A name that does not end in {', '.join(suffixes[:-1])} or {suffixes[-1]} is the "
            f"prefix of the file set, dots and all, as in PLINK: {text!r} names {first.name}."
        )
    if text.lower().endswith(_VCF_SUFFIXES):
        make = "--make-bed" if suffixes[0] == ".bed" else "--make-pgen"
        message += (
            f" A VCF file is not read directly: convert it first with `plink2 --vcf {text} "
            f"{make} --out PREFIX` and pass PREFIX (or convert it to VCF-Zarr with bio2zarr's "
            "`vcf2zarr` and read it with `xsvd.dosage`)."
        )
    else:
        message += f" Pass the {suffixes[0]} path or its prefix."
    return PlinkFileError(message)


def open_plink(path, *, chunks: int | None = None) -> xr.DataArray:
    """Open a PLINK 1 ``.bed`` file set as a lazy ``(variants, samples)`` DataArray.

    The genotypes stay 2-bit packed: each Dask chunk holds the file's bytes
    for a block of variants (a :class:`~xsvd.PackedGenotypes`), and
    xsvd's solvers unpack a small sub-block at a time inside the products.
    Anything else (``.values``, arithmetic, ``.mean()``) sees float32 values:
    the count of allele 1 (0, 1, 2) and NaN for missing calls.

    The attribute ``xsvd_sample_dim`` (:data:`xsvd.labeled.dims.SAMPLE_DIM_ATTR`)
    names ``"samples"`` as the sample dimension, so ``bed.svd.compressed(k=10)``
    without ``dim=`` is a PCA of the samples (``U`` along ``samples``, ``V``
    along ``variants``), as with ``dim="samples"``; selections (``isel``,
    ``sel``) and :func:`patterson_scaling` keep it.

    The sizes of the three files are checked against each other: the
    ``.bed`` must hold ``3 + n_variants * ceil(n_samples / 4)`` bytes for
    the ``.bim``'s variants and the ``.fam``'s samples, and the unused
    2-bit slots at the end of each variant's last byte (present when the
    number of samples is not a multiple of 4) must be empty, as PLINK writes
    them. A ``.fam`` that lists more or fewer samples than the ``.bed`` was
    written for is a :class:`PlinkFileError` saying by how many, rather than
    genotypes read from the padding bits (or samples left unread).

    Parameters
    ----------
    path : str or path-like
        The ``.bed`` file, or the common prefix of ``.bed``, ``.bim`` and ``.fam``.
        A name not ending in one of these is the whole prefix, dots and all,
        as in PLINK (:func:`file_set_paths`): ``cohort.pruned`` reads
        ``cohort.pruned.bed``.
    chunks : int, optional
        Variants per chunk. Default: :func:`default_variant_chunk`, at most
        4,096 variants and at most 16 MiB of packed bytes.

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
    >>> bed.attrs["xsvd_sample_dim"]
    'samples'
    >>> bool((bed.values == gt.values).all())
    True
    """
    import dask.array as da

    bed, bim, fam = file_set_paths(path)
    if not bed.exists():
        raise missing_file_set(path)
    variants = read_table(bim, _BIM_COLUMNS, ".bim", BIM_DTYPES)
    samples = read_table(fam, _FAM_COLUMNS, ".fam")
    check_sample_ids(fam, samples["family_id"].to_numpy(str), samples["samples"].to_numpy(str))
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
    size = bed.stat().st_size
    check_bed_size(bed, size, n_var, n_samp, bim, fam)
    check_padding(bed, n_var, n_samp, fam)
    step = chunks or default_variant_chunk(row_bytes)
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
                values = sex_codes(values)
            coords[col] = ("samples", values)
    attrs = {
        "source": str(bed),
        "values": "count of allele_1 (0, 1, 2); NaN = missing call",
        SAMPLE_DIM_ATTR: "samples",
    }
    return xr.DataArray(
        arr, dims=("variants", "samples"), coords=coords, name="genotype", attrs=attrs
    )


def default_variant_chunk(row_bytes: int) -> int:
    """Variants per default chunk of packed genotypes with ``row_bytes`` bytes per variant.

    At most :data:`BED_CHUNK_VARIANTS` variants and :data:`BED_CHUNK_BYTES`
    bytes, at least one variant. Memory sets it: a chunk in flight costs its
    packed bytes and, in the solvers, about 1.3 KB per variant at k=10
    (16 MiB chunks of 1,800 samples, 37,000 variants each, raised the peak
    of a PCA of 164,685 variants by 60-100 MiB over 4,096-variant chunks).
    """
    return int(max(1, min(BED_CHUNK_VARIANTS, BED_CHUNK_BYTES // max(int(row_bytes), 1))))


def check_bed_size(bed: Path, size: int, n_var: int, n_samp: int, bim: Path, fam: Path) -> None:
    """Raise a :class:`PlinkFileError` unless the ``.bed`` holds exactly the ``.bim`` x ``.fam``.

    A variant-major ``.bed`` is 3 bytes of header and one row of
    ``ceil(n_samples / 4)`` bytes per variant. When the size is off, the
    message says which file's count explains it, and by how much.
    """
    row_bytes = (n_samp + 3) // 4
    expected = 3 + n_var * row_bytes
    if size == expected:
        return
    body = size - 3
    message = (
        f"{str(bed)!r} has {size:,} bytes, but the {n_var:,} variants of {bim.name} and the "
        f"{n_samp:,} samples of {fam.name} need 3 + {n_var:,} x {row_bytes:,} = {expected:,} "
        f"(a header, then {row_bytes:,} bytes per variant: 4 samples a byte)."
    )
    causes = []
    if row_bytes and body % row_bytes == 0:
        held = body // row_bytes
        diff = n_var - held
        causes.append(
            f"for {n_samp:,} samples the .bed holds {held:,} variants, so {bim.name} lists "
            f"{abs(diff):,} {'more' if diff > 0 else 'fewer'} variant(s) than the .bed holds"
        )
    if n_var and body % n_var == 0 and body // n_var != row_bytes:
        per = body // n_var
        low, high = max(1, 4 * per - 3), 4 * per
        diff = n_samp - high if n_samp > high else n_samp - low
        causes.append(
            f"for {n_var:,} variants each .bed row has {per:,} bytes, room for {low:,} to "
            f"{high:,} samples, so {fam.name} lists at least {abs(diff):,} "
            f"{'more' if diff > 0 else 'fewer'} sample(s) than the .bed holds"
        )
    if len(causes) > 1:
        message += " Either " + "; or ".join(causes) + "."
    elif causes:
        message += " " + causes[0][0].upper() + causes[0][1:] + "."
    else:
        message += f" Neither count alone explains the {size - expected:+,} bytes."
    raise PlinkFileError(
        message + " The files do not belong together or the .bed is truncated: use the .bim "
        "and .fam written together with this .bed (one prefix, one run)."
    )


#: Variants whose last byte :func:`check_padding` looks at (evenly spaced over the file).
PADDING_CHECK_ROWS = 4096
#: A trailing sample homozygous for allele 1 at every variant checked, which a real
#: sample would be with less than this probability, is taken for padding.
PADDING_EVIDENCE = 1e-12


def check_padding(bed: Path, n_var: int, n_samp: int, fam: Path) -> None:
    """Raise a :class:`PlinkFileError` when the ``.fam`` lists more or fewer samples than the .bed.

    A ``.bed`` row has room for a multiple of 4 samples; a ``.fam`` off by
    up to 3 samples gives the same file size, so :func:`check_bed_size`
    cannot see it. PLINK writes the unused 2-bit slots at the end of each
    row as ``00``. So, over up to :data:`PADDING_CHECK_ROWS` variants spread
    evenly over the file:

    - a non-empty slot after the ``.fam``'s last sample means the ``.bed``
      holds more samples than the ``.fam`` lists;
    - trailing ``.fam`` samples whose slots are ``00`` (homozygous for
      allele 1) at every variant checked are padding when a real sample
      would be so with probability below :data:`PADDING_EVIDENCE`, reckoned
      from how often the other samples of those bytes are ``00`` at each
      variant: the ``.fam`` lists more samples than the ``.bed`` holds.
    """
    row_bytes = (n_samp + 3) // 4
    if n_var == 0 or row_bytes == 0:
        return
    used = n_samp - 4 * (row_bytes - 1)  # slots of the last byte that hold samples: 1-4
    rows = np.unique(np.linspace(0, n_var - 1, min(n_var, PADDING_CHECK_ROWS)).astype(np.int64))
    width = min(row_bytes, 64)  # the last bytes of each row: up to 256 samples to compare with
    tail = np.empty((len(rows), width), dtype=np.uint8)
    with open(bed, "rb") as f:  # read, not mapped: a mapping would count the pages around
        for i, r in enumerate(rows):  # each in the process's memory
            f.seek(3 + int(r) * row_bytes + row_bytes - width)
            tail[i] = np.frombuffer(f.read(width), dtype=np.uint8)
    codes = (tail[:, :, None] >> (2 * np.arange(4, dtype=np.uint8))) & 3  # (rows, width, 4)
    codes = codes.reshape(len(rows), 4 * width)[:, : 4 * width - (4 - used)]
    if used < 4:
        filled = (tail[:, -1, None] >> (2 * np.arange(used, 4, dtype=np.uint8))) & 3
        if filled.any():
            more = int(np.flatnonzero(filled.any(axis=0)).max()) + 1
            hit = int(filled.any(axis=1).sum())
            raise PlinkFileError(
                f"{fam.name} lists {n_samp:,} samples, but the .bed holds at least "
                f"{n_samp + more:,}: the unused slots after sample {n_samp:,} at the end of "
                f"each variant, which PLINK leaves empty, hold calls at {hit:,} of the "
                f"{len(rows):,} variants checked. {fam.name} lacks at least {more} sample(s), "
                f"or belongs to another .bed; use the .fam written together with {bed.name}."
            )
    # trailing samples that are 00 at every variant checked (as padding would be)
    zero = codes == 0
    trailing = 0
    while trailing < min(used - 1, 3) and zero[:, -1 - trailing].all():
        trailing += 1
    if not trailing or codes.shape[1] <= trailing:
        return
    others = zero[:, : codes.shape[1] - trailing]
    q = (others.sum(axis=1) + 1) / (others.shape[1] + 2)  # a real sample's chance of 00
    if float(np.log(q).sum()) >= np.log(PADDING_EVIDENCE):
        return
    raise PlinkFileError(
        f"{fam.name} lists {n_samp:,} samples, but the .bed seems to hold only "
        f"{n_samp - trailing:,}: the last {trailing} sample(s) of {fam.name} read as "
        f"homozygous for allele 1 at all {len(rows):,} variants checked, which is what the "
        f"empty padding at the end of each .bed row reads as (a real sample would be so "
        f"with probability below {PADDING_EVIDENCE:g}, given the other samples). "
        f"{fam.name} lists {trailing} sample(s) more than the .bed holds, or belongs to "
        f"another .bed; use the .fam written together with {bed.name}."
    )


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
    A file is written from host memory: data on a device (CuPy, any
    array-API library) are copied to the host once, in one counted move
    (Dask chunks of CuPy: one move per chunk).

    Parameters
    ----------
    gt : xarray.DataArray
        2-D, dims ``(variants, dim)`` in either order; values count allele 1.
    path : str or path-like
        The ``.bed`` path or the prefix of the three files (dots and all, as
        in PLINK: ``cohort.subset`` writes ``cohort.subset.bed``/``.bim``/``.fam``).
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
    bed, bim, fam = file_set_paths(path)
    n_var, n_samp = gt.shape
    data = backend.to_host(gt.data)  # a device's values come over once (Dask: per chunk)
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
                block = data[a:b, :]
                if backend.is_dask(block):
                    block = block.compute()
                if backend.is_packed(block):
                    block = block.unpack()
                f.write(pack(np.asarray(block)).data.tobytes())
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
