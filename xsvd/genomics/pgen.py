"""PLINK 2 file sets: read a ``.pgen``/``.pvar``/``.psam`` lazily, 2-bit packed.

:func:`open_pgen` gives the same kind of ``(variants, samples)`` DataArray as
:func:`~xsvd.open_plink`: Dask chunks of :class:`~xsvd.PackedGenotypes`
(read with the ``pgenlib`` package, PLINK 2's own reader, and packed a
small block at a time), float32 counts of the ALT allele (``allele_1``)
with NaN for missing calls, the same coordinates, and the sample-dimension
attribute.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.packed import PackedGenotypes, pack
from ..labeled.dims import SAMPLE_DIM_ATTR
from .plink import PGEN_SUFFIXES, default_variant_chunk, file_set_paths, missing_file_set
from .tables import PlinkFileError, check_sample_ids, malformed_line, sex_codes

__all__ = ["open_pgen"]

#: genotypes read from the .pgen and packed at a time, inside one chunk (4 MiB as int8)
_READ_GENOTYPES = 1 << 22


def open_pgen(path, *, chunks: int | None = None) -> xr.DataArray:
    r"""Open a PLINK 2 ``.pgen`` file set as a lazy ``(variants, samples)`` DataArray.

    The DataArray :func:`~xsvd.open_plink` gives for a ``.bed``, for the
    ``.pgen``/``.pvar``/``.psam`` of PLINK 2 (``plink2 --make-pgen``): each
    Dask chunk holds a block of variants 2-bit packed (a
    :class:`~xsvd.PackedGenotypes`; 16 times smaller than float32), read
    with ``pgenlib`` (PLINK 2's reader; ``pip install "xsvd[genomics]"``)
    and packed a few MiB at a time. Values are float32 counts of the ALT
    allele (0, 1, 2; PLINK 2's ``--pca`` counts it too), NaN for missing
    calls: the hard calls (a variant stored as dosages reads as PLINK 2's
    hard calls of it). For a multi-allelic variant, the count of its first
    ALT allele. The ``.pgen`` of ``plink2 --bfile X --make-pgen`` reads as
    ``open_plink("X")``: same values, same coordinates.

    Parameters
    ----------
    path : str or path-like
        The ``.pgen`` file, or the common prefix of ``.pgen``, ``.pvar`` and
        ``.psam``: a name not ending in one of these is the whole prefix, dots
        and all, as in PLINK (``cohort.pruned`` reads ``cohort.pruned.pgen``).
    chunks : int, optional
        Variants per chunk. Default: as :func:`~xsvd.open_plink`, at most
        4,096 variants and 16 MiB of packed bytes per chunk
        (:func:`~xsvd.genomics.plink.default_variant_chunk`).

    Returns
    -------
    xarray.DataArray
        Dims ``("variants", "samples")``; coordinates ``variants`` (the
        ``.pvar``'s ID), ``chrom``, ``position``, ``cm`` (0 without a CM
        column), ``allele_1`` (ALT, the counted allele), ``allele_2`` (REF)
        along variants; ``samples`` (IID), ``family_id`` (FID; ``"0"``
        without one, as ``plink2 --make-bed`` writes it), ``father_id``,
        ``mother_id``, ``sex`` (1 male, 2 female, 0 unknown) and
        ``phenotype`` (the first phenotype column; ``"-9"`` when missing)
        along samples. The attribute ``xsvd_sample_dim`` is ``"samples"``.

    Examples
    --------
    A file set written with ``pgenlib`` (``plink2 --make-pgen`` writes the same):

    >>> import tempfile, numpy as np, pgenlib, xsvd
    >>> prefix = tempfile.mkdtemp() + "/toy"
    >>> calls = np.array([[0, 1, 2, -9], [2, 2, 1, 0]], dtype=np.int8)  # ALT counts; -9 missing
    >>> writer = pgenlib.PgenWriter(f"{prefix}.pgen".encode(), 4, 2, False)
    >>> writer.append_biallelic_batch(calls)
    >>> writer.close()
    >>> with open(f"{prefix}.pvar", "w") as f:
    ...     _ = f.write("#CHROM\tPOS\tID\tREF\tALT\n1\t100\trs1\tA\tG\n1\t200\trs2\tC\tT\n")
    >>> with open(f"{prefix}.psam", "w") as f:
    ...     _ = f.write("#IID\tSEX\n" + "".join(f"id{i}\t{1 + i % 2}\n" for i in range(4)))
    >>> gt = xsvd.open_pgen(prefix)
    >>> gt.values
    array([[ 0.,  1.,  2., nan],
           [ 2.,  2.,  1.,  0.]], dtype=float32)
    >>> gt.allele_1.values, gt.sex.values, gt.attrs["xsvd_sample_dim"]
    (array(['G', 'T'], dtype='<U1'), array([1, 2, 1, 2], dtype=int8), 'samples')
    """
    try:
        import pgenlib
    except ImportError as err:
        raise ImportError(
            'Reading .pgen files needs the pgenlib package: pip install "xsvd[genomics]" '
            "(or pip install pgenlib)."
        ) from err
    import dask.array as da

    pgen, pvar, psam = _pgen_paths(path)
    variants = _read_pvar(pvar)
    samples = _read_psam(psam)
    n_var, n_samp = len(variants["variants"]), len(samples["samples"])
    try:
        reader = pgenlib.PgenReader(os.fsencode(pgen), raw_sample_ct=n_samp)
    except RuntimeError as err:
        raise PlinkFileError(
            f"pgenlib cannot read {str(pgen)!r} with the {n_samp} samples of {psam.name}: "
            f"{err}. The files do not belong together, or the .pgen is damaged."
        ) from err
    try:
        held = reader.get_variant_ct()
        if 0 < held == n_var:  # a truncated file reads up to its last variant
            _read(reader, pgen, n_var - 1, n_var, np.empty((1, n_samp), dtype=np.int8))
    finally:
        reader.close()
    if held != n_var:
        raise PlinkFileError(
            f"{str(pgen)!r} holds {held} variants but {pvar.name} lists {n_var}. Use the "
            ".pvar and .psam written together with this .pgen (one prefix, one run)."
        )
    row_bytes = (n_samp + 3) // 4
    step = chunks or default_variant_chunk(row_bytes)
    starts = list(range(0, n_var, step)) or [0]
    sizes = [min(step, n_var - s) for s in starts]
    meta = PackedGenotypes(np.empty((0, 0), dtype=np.uint8), 0)
    arr = da.map_blocks(  # no input arrays: each block reads its own variants
        _read_pgen_block,
        str(pgen.resolve()),
        step,
        n_var,
        n_samp,
        name=f"open-pgen-{_token(pgen, step)}",
        chunks=(tuple(sizes), (n_samp,)),
        dtype=np.float32,
        meta=meta,
    )
    coords = {name: ("variants", values) for name, values in variants.items()}
    coords.update({name: ("samples", values) for name, values in samples.items()})
    attrs = {
        "source": str(pgen),
        "values": "count of allele_1 (ALT; 0, 1, 2); NaN = missing call",
        SAMPLE_DIM_ATTR: "samples",
    }
    return xr.DataArray(
        arr, dims=("variants", "samples"), coords=coords, name="genotype", attrs=attrs
    )


def _pgen_paths(path) -> tuple[Path, Path, Path]:
    p = Path(os.fspath(path))
    if p.name.endswith((".pvar.zst", ".pgen.zst")):
        raise PlinkFileError(
            f"{str(p)!r} is Zstandard-compressed; decompress it first (`zstd -d`), or "
            "rewrite the file set with `plink2 --pfile PREFIX vzs --make-pgen --out NEW`."
        )
    pgen, pvar, psam = file_set_paths(p, PGEN_SUFFIXES)
    if not pgen.exists():
        raise missing_file_set(path, PGEN_SUFFIXES)
    if not pvar.exists() and pvar.with_name(pvar.name + ".zst").exists():
        raise PlinkFileError(
            f"{pvar.name}.zst is Zstandard-compressed; decompress it (`zstd -d`) or rewrite "
            "the file set with `plink2 --pfile PREFIX vzs --make-pgen --out NEW`."
        )
    for f, kind in ((pvar, ".pvar (variants)"), (psam, ".psam (samples)")):
        if not f.exists():
            raise PlinkFileError(
                f"The {kind} file {str(f)!r} is missing. A PLINK 2 file set is three files "
                "with one prefix: .pgen (genotypes), .pvar (variants) and .psam (samples)."
            )
    return pgen, pvar, psam


def _header(path: Path) -> tuple[list[str] | None, int]:
    """The ``#``-header's column names (None without one) and the lines before the data."""
    skip = 0
    with open(path) as f:
        for line in f:
            if line.startswith("##"):
                skip += 1
                continue
            if line.startswith("#"):
                return line[1:].split(), skip + 1
            break
    return None, skip


def _table(path: Path, names: list[str], skip: int, wanted: list[str]):
    """The ``wanted`` columns, as text; a line with a field too few is an error naming it
    (the last column, read only as its length, is empty there)."""
    import pandas as pd

    last = names[-1]
    try:
        t = pd.read_csv(
            path, sep=r"\s+", header=None, names=names, usecols=list({*wanted, last}),
            skiprows=skip, dtype={c: str for c in wanted},
            converters={last: len} if last not in wanted else None,
            keep_default_na=False, comment=None,
        )  # fmt: skip
    except pd.errors.EmptyDataError:
        return pd.DataFrame({c: np.array([], dtype=str) for c in wanted})
    except ValueError as err:
        bad = malformed_line(path, len(names), path.suffix, " ".join(names), skip)
        text = f"{str(path)!r} cannot be read as a PLINK 2 table: {err}"
        raise (bad or PlinkFileError(text)) from err
    if ((t[last] == 0) | (t[last] == "")).any():
        raise malformed_line(path, len(names), path.suffix, " ".join(names), skip)
    return t[wanted]


def _read_pvar(path: Path) -> dict:
    """The ``.pvar``'s columns as :func:`~xsvd.open_plink`'s variant coordinates."""
    names, skip = _header(path)
    if names is None:  # no header line: the .bim's columns (with or without CM)
        width = _width(path, skip)
        names = ["CHROM", "ID", "CM", "POS", "ALT", "REF"] if width == 6 else []
        names = names or (["CHROM", "ID", "POS", "ALT", "REF"] if width == 5 else [])
        if not names:
            raise PlinkFileError(
                f"{str(path)!r} has no #CHROM header line and {width} columns; a .pvar "
                "without a header has the 5 or 6 columns of a .bim."
            )
    missing = [c for c in ("CHROM", "POS", "ID", "REF", "ALT") if c not in names]
    if missing:
        raise PlinkFileError(
            f"{str(path)!r} has no {', '.join(missing)} column(s); its header names {names}."
        )
    wanted = ["CHROM", "POS", "ID", "REF", "ALT"] + (["CM"] if "CM" in names else [])
    t = _table(path, names, skip, wanted)
    n = len(t)
    try:
        position = t["POS"].to_numpy(dtype=np.int64)
        cm = t["CM"].to_numpy(dtype=np.float64) if "CM" in t else np.zeros(n)
    except ValueError as err:
        raise PlinkFileError(f"{str(path)!r} has a POS or CM value that is not a number.") from err
    return {
        "variants": t["ID"].to_numpy(dtype=str),
        "chrom": t["CHROM"].to_numpy(dtype=str),
        "position": position,
        "cm": cm,
        "allele_1": t["ALT"].to_numpy(dtype=str),
        "allele_2": t["REF"].to_numpy(dtype=str),
    }


def _read_psam(path: Path) -> dict:
    """The ``.psam``'s columns as :func:`~xsvd.open_plink`'s sample coordinates."""
    names, skip = _header(path)
    if names is None:  # no header line: a .fam
        width = _width(path, skip)
        if width not in (5, 6):
            raise PlinkFileError(
                f"{str(path)!r} has no #FID/#IID header line and {width} columns; a .psam "
                "without a header has the columns of a .fam."
            )
        names = ["FID", "IID", "PAT", "MAT", "SEX", "PHENO1"][:width]
    if "IID" not in names:
        raise PlinkFileError(f"{str(path)!r} has no IID column; its header names {names}.")
    t = _table(path, names, skip, names)
    n = len(t)
    known = {"FID", "IID", "SID", "PAT", "MAT", "SEX"}
    phenotypes = [c for c in names if c not in known]

    def column(name, default):
        if name not in t:
            return np.full(n, default, dtype=object).astype(str)
        values = t[name].to_numpy(dtype=str)
        return np.where(np.isin(values, ("NA", "na", "nan", "")), default, values)

    sex = column("SEX", "0")
    check_sample_ids(path, column("FID", "0"), t["IID"].to_numpy(dtype=str), skip)
    return {
        "samples": t["IID"].to_numpy(dtype=str),
        "family_id": column("FID", "0"),
        "father_id": column("PAT", "0"),
        "mother_id": column("MAT", "0"),
        "sex": sex_codes(sex),
        "phenotype": column(phenotypes[0], "-9") if phenotypes else np.full(n, "-9"),
    }


def _width(path: Path, skip: int) -> int:
    with open(path) as f:
        for i, line in enumerate(f):
            if i >= skip and line.strip():
                return len(line.split())
    return 0


def _token(path: Path, step: int) -> str:
    from dask.base import tokenize

    st = path.stat()
    return tokenize(str(path.resolve()), st.st_size, st.st_mtime_ns, step)


def _read_pgen_block(path: str, step: int, n_var: int, n: int, block_id=None):
    """Block ``block_id`` of :func:`open_pgen`'s array: variants ``i * step`` on, packed."""
    import pgenlib

    start = block_id[0] * step
    count = min(step, n_var - start)
    out = np.empty((count, (n + 3) // 4), dtype=np.uint8)
    rows = max(1, _READ_GENOTYPES // max(n, 1))
    reader = pgenlib.PgenReader(os.fsencode(path), raw_sample_ct=n)
    try:
        buf = np.empty((min(rows, count), n), dtype=np.int8)
        for a in range(0, count, rows):
            b = min(a + rows, count)
            part = buf[: b - a]
            _read(reader, path, start + a, start + b, part)
            out[a:b] = pack(part).data
    finally:
        reader.close()
    return PackedGenotypes(out, n)


def _read(reader, path, start: int, stop: int, out) -> None:
    """ALT counts (-9 missing) of variants ``start:stop`` into ``out``; pgenlib's bare error
    codes become a :class:`PlinkFileError` that names the file."""
    try:
        reader.read_range(start, stop, out, allele_idx=1)
    except RuntimeError as err:
        where = f"variant {start}" if stop - start == 1 else f"variants {start}-{stop - 1}"
        raise PlinkFileError(
            f"{str(path)!r} cannot be read at {where} (pgenlib: {err}): "
            "the file is truncated or damaged. Copy or write it again (e.g. `plink2 --pfile "
            "PREFIX --make-pgen --out NEW` from a good copy)."
        ) from err
