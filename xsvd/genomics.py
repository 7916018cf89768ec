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
- :func:`project_samples` projects new samples onto reference PCs, missing
  calls as the reference means, corrected for the shrinkage of projected
  scores (:func:`shrinkage_factors`, Lee, Zou & Wright 2010).
- :func:`write_plink_pca` and :func:`write_eigenvec` write the files of
  PLINK 2's ``--pca`` (``.eigenvec``, ``.eigenval``, ``.eigenvec.allele`` or
  ``.eigenvec.var``) and the frequencies PLINK 2 projects new samples with.
- :func:`tracy_widom` tests the eigenvalues as EIGENSOFT's ``twstats``.

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

from .core import backend
from .core.missing import GENOTYPES
from .core.packed import PackedGenotypes, pack

__all__ = [
    "open_plink",
    "write_plink",
    "pack_genotypes",
    "dosage",
    "patterson_scaling",
    "project_samples",
    "shrinkage_factors",
    "write_eigenvec",
    "write_plink_pca",
    "tracy_widom",
]

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
    if backend.is_dask(data):
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
    if backend.is_dask(data):
        xp = backend.namespace(data)
        meta = PackedGenotypes(xp.empty((0, 0), dtype=np.uint8), 0)
        packed = data.map_blocks(pack, dtype=np.float32, meta=meta)
    elif backend.is_packed(data):
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
    xp = backend.namespace(g)
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
    if backend.is_dask(a):
        import dask

        parts = [[dask.delayed(_block_sums)(b) for b in row] for row in a.to_delayed()]
        rows = dask.compute(parts)[0]
        sums = np.concatenate([sum(r[0] for r in row) for row in rows])
        counts = np.concatenate([sum(r[1] for r in row) for row in rows])
        return sums, counts
    return _block_sums(a)


def _block_sums(b):
    if backend.is_packed(b) and not b.transposed:
        s, _, c = b.called_stats()
        return backend.to_numpy(s), backend.to_numpy(c)
    xp = backend.namespace(b)
    x = b.astype(np.float64) if backend.is_packed(b) else xp.asarray(b, dtype=np.float64)
    ok = ~GENOTYPES.mask(xp, x)
    return (
        backend.to_numpy(xp.where(ok, x, 0).sum(axis=1)),
        backend.to_numpy(ok.sum(axis=1)),
    )


# ---------------------------------------------------------- projection of new samples


def shrinkage_factors(res) -> xr.DataArray:
    """How much projecting new samples shrinks each component's scores (Lee, Zou & Wright 2010).

    The PCs of ``n`` reference samples with ``p`` variants fit the reference
    samples' own noise; a new sample's projection onto them is shrunk
    towards 0, by an asymptotic factor that Lee, Zou & Wright (2010) derive
    for the spiked covariance model (a few population eigenvalues ``lambda``
    above a noise level ``sigma**2``, ``gamma = p / n``)::

        rho_k = (lambda_k - sigma**2) / (lambda_k - sigma**2 + gamma sigma**2)

    ``lambda_k`` is estimated from the sample eigenvalue ``d_k`` (the
    variance of component ``k`` of the reference samples) by inverting
    ``d = lambda (1 + gamma sigma**2 / (lambda - sigma**2))``, which holds
    for ``d`` above the noise edge ``sigma**2 (1 + sqrt(gamma))**2``; and
    ``sigma**2`` from the total variance less the components above that
    edge, ``(trace - sum lambda_k) / (p - m)``, the two estimated together
    (iterated to a fixed point). ``rho_k`` is the ratio of the expected
    spread (root mean square) of a new sample's score to a reference
    sample's; for components at or below the edge (noise) that ratio is
    ``sqrt(sigma**2 / d_k)``, which meets the formula above at the edge. A
    component counts as above the edge when it clears the 99th percentile
    of the largest noise eigenvalue's Tracy-Widom fluctuation (Johnstone
    2001), so that noise components are not taken for weak structure.

    The model assumes independent noise of one variance across variants:
    LD-prune the variants (as for the PCA itself). Dey & Lee (2019) extend
    it to correlated noise.

    Parameters
    ----------
    res : SVDResult
        A centered PCA of the reference samples, samples along ``U``.

    Returns
    -------
    xarray.DataArray
        Along ``component``: the factors ``rho_k`` (between 0 and 1 for the
        structure components); divide projected scores by them. Attributes:
        the noise variance (over the trace), ``gamma`` and the number of
        components above the noise edge.

    References
    ----------
    S. Lee, F. Zou and F. A. Wright, "Convergence and prediction of principal
    component scores in high-dimensional settings", Ann. Statist. 38 (2010)
    3605-3629. R. Dey and S. Lee, "Asymptotic properties of principal
    component analysis and shrinkage-bias adjustment under the generalized
    spiked population model", J. Multivariate Anal. 173 (2019) 145-164.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=200, fst=0.02)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> res = kept.svd.exact(k=4, dim="samples", center=True, weights=w)
    >>> xsvd.shrinkage_factors(res).values.round(2)
    array([0.74, 0.72, 0.24, 0.24])
    """
    k, n, p, ratios = _spectrum(res)
    dof = n - 1 if res.center else n
    if dof < 2 or p < k + 1:
        raise ValueError(
            f"Shrinkage factors need more samples and variants than components; the result "
            f"has {n} samples, {p} variants and {k} components."
        )
    gamma = p / dof
    # the largest noise eigenvalue is about sigma2 (1 + sqrt(gamma))**2, give or take its
    # Tracy-Widom fluctuation (Johnstone 2001); a spike must clear its 99th percentile
    root = np.sqrt(dof) + np.sqrt(p)
    spread = root * (1 / np.sqrt(dof) + 1 / np.sqrt(p)) ** (1 / 3)
    edge = (root**2 + _TW1_99 * spread) / dof
    d = ratios  # the sample eigenvalues, as fractions of the trace
    sigma2 = 1.0 / p
    lam = np.full(k, np.nan)
    spike = np.zeros(k, dtype=bool)
    for _ in range(200):
        spike = d > sigma2 * edge
        lam = np.where(spike, _population_eigenvalue(d, sigma2, gamma), np.nan)
        new = (1.0 - lam[spike].sum()) / (p - spike.sum())
        done = abs(new - sigma2) <= 1e-13 * sigma2
        sigma2 = new
        if done:
            break
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = np.where(
            spike,
            (lam - sigma2) / (lam - sigma2 + gamma * sigma2),
            np.sqrt(sigma2 / np.where(d > 0, d, 1.0)),
        )
    factors = np.where(d > 0, factors, 1.0)
    return xr.DataArray(
        factors,
        dims=("component",),
        coords={"component": res.S["component"].values},
        name="shrinkage",
        attrs={
            "long_name": "shrinkage of projected scores (Lee, Zou & Wright 2010)",
            "noise_variance_fraction": float(sigma2),
            "gamma": float(gamma),
            "n_spikes": int(spike.sum()),
        },
    )


#: The 99th percentile of the Tracy-Widom distribution of order 1 (Johnstone 2001, table 1).
_TW1_99 = 2.0234


def _population_eigenvalue(d, sigma2: float, gamma: float):
    """``lambda`` with ``d = lambda (1 + gamma sigma2 / (lambda - sigma2))`` (the larger root)."""
    b = d + sigma2 - gamma * sigma2
    disc = np.maximum(b * b - 4.0 * d * sigma2, 0.0)
    return (b + np.sqrt(disc)) / 2.0


def _spectrum(res):
    """``(k, n_samples, n_features, S**2 / ||B||**2)`` of a result, plain numbers."""
    from .labeled.result import SVDResult

    if not isinstance(res, SVDResult):
        raise TypeError(f"Expected an xsvd.SVDResult, got {type(res).__name__}.")
    ratios = np.asarray(res.explained_variance_ratio.values, dtype=np.float64)
    k = ratios.size
    n = int(res.U.size // k)
    first = res.V.isel(component=0)
    p = int(np.isfinite(np.asarray(first.values)).sum())
    return k, n, p, ratios


def project_samples(
    res,
    gt: xr.DataArray,
    *,
    dim: Hashable = "samples",
    shrinkage: bool | np.ndarray | xr.DataArray = True,
) -> xr.DataArray:
    """Scores of new samples on the PCs of reference samples, corrected for shrinkage.

    The new samples' genotypes are centered and weighted as the reference's
    were (``res.project``), with each missing call standing for the
    reference mean of its variant (``missing="mean"``: it adds nothing),
    which is what PLINK 2's ``--score ... no-mean-imputation
    variance-standardize`` sums with the reference allele frequencies
    (``--read-freq``; see :func:`write_plink_pca`). The scores are on the
    scale of ``res.U`` (PLINK 2's ``.eigenvec``), so that reference and new
    samples can be plotted together.

    Projected scores are shrunk towards 0 compared with the reference
    samples' (Lee, Zou & Wright 2010): ``shrinkage=True`` divides each
    component by the asymptotic factor of :func:`shrinkage_factors`, so
    that new samples spread as the reference samples of their population
    do.

    Variants are matched by id (the ``variants`` coordinate) when both have
    ids, in the reference's order; where ``allele_1`` and ``allele_2`` of
    the new data are those of the reference swapped, the counts are
    flipped (``2 - x``). Other allele mismatches are an error.

    Parameters
    ----------
    res : SVDResult
        A centered PCA of the reference samples (``dim`` along ``U``), e.g.
        with :func:`patterson_scaling`'s weights.
    gt : xarray.DataArray
        The new samples' allele counts (of ``allele_1``), dims
        ``(variants, dim)`` in either order; NumPy, Dask or packed
        (:func:`open_plink`). NaN or negative codes are missing calls.
    dim : str
        The sample dimension of ``gt``.
    shrinkage : bool or array
        True: divide by :func:`shrinkage_factors` of ``res``; False: the
        plain projection; or the factors to divide by, one per component.

    Returns
    -------
    xarray.DataArray
        ``(dim, "component")``, with ``gt``'s sample coordinates and the
        factors used as the coordinate ``shrinkage`` (1 when not corrected).

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=300, fst=0.02)
    >>> ref, new = gt.isel(samples=slice(0, None, 2)), gt.isel(samples=slice(1, None, 2))
    >>> kept, w = xsvd.patterson_scaling(ref)
    >>> res = kept.svd.exact(k=2, dim="samples", center=True, weights=w)
    >>> scores = xsvd.project_samples(res, new.sel(variants=kept.variants))
    >>> scores.sizes
    Frozen({'samples': 150, 'component': 2})
    >>> scores.shrinkage.values.round(2)
    array([0.67, 0.64])
    """
    if not res.center:
        raise ValueError(
            "project_samples needs a centered PCA (`center=True`): new samples are centered "
            "with the reference means, which also stand for their missing calls."
        )
    if not isinstance(gt, xr.DataArray) or gt.ndim != 2 or dim not in gt.dims:
        raise ValueError(
            f"project_samples needs a 2-D DataArray with a {dim!r} dimension (pass `dim=` to "
            "name the sample dimension of the new data)."
        )
    vdim = _feature_dim(res)
    if vdim not in gt.dims:
        raise ValueError(
            f"The new data have dims {gt.dims}; the reference PCA's variants are along "
            f"{vdim!r}. Rename the variant dimension of the new data to {vdim!r}."
        )
    gt = _match_variants(res, gt, vdim)
    k = res.S.sizes["component"]
    if shrinkage is True:
        factors = shrinkage_factors(res).values
    elif shrinkage is False or shrinkage is None:
        factors = np.ones(k)
    else:
        factors = np.asarray(shrinkage, dtype=np.float64).reshape(-1)
        if factors.size != k or not np.all(np.isfinite(factors) & (factors > 0)):
            raise ValueError(
                f"shrinkage must be True, False or {k} positive factors (one per component), "
                f"got {shrinkage!r}."
            )
    if backend.is_packed(gt.data) and not backend.is_dask(gt.data):
        gt = gt.copy(data=_as_dask(gt.data))  # projected a block of variants at a time
    scores = res.project(gt, missing="mean") / xr.DataArray(factors, dims=("component",))
    scores = scores.assign_coords(shrinkage=("component", factors))
    scores.name = "scores"
    scores.attrs = {"long_name": "projected principal component scores (scale of U)"}
    return scores


def _as_dask(packed):
    """In-memory packed genotypes as one Dask array of packed blocks (rows of ~16 MiB)."""
    import dask.array as da

    rows = max(1, _BED_CHUNK_BYTES // max(packed.data.shape[1], 1))
    return da.from_array(packed, chunks=(rows, -1), asarray=False, meta=packed[:0, :0])


def _feature_dim(res) -> Hashable:
    dims = [d for d in res.V.dims if d != "component"]
    if len(dims) != 1:
        raise ValueError(
            f"Expected a PCA with one variant dimension; the result's features are {dims}."
        )
    return dims[0]


def _match_variants(res, gt: xr.DataArray, vdim: Hashable) -> xr.DataArray:
    """``gt`` with the reference's variants, in its order, allele-swapped ones flipped."""
    ref = res.V
    if vdim in ref.coords and vdim in gt.coords:
        ids = ref[vdim].values
        if gt.sizes[vdim] != ids.size or not np.array_equal(gt[vdim].values, ids):
            import pandas as pd

            have = pd.Index(gt[vdim].values)
            absent = ~np.isin(ids, have)
            if absent.any():
                shown = ", ".join(str(v) for v in ids[absent][:5])
                raise ValueError(
                    f"{int(absent.sum())} variant(s) of the reference PCA are not in the new "
                    f"data (e.g. {shown}). Project on the variants both have: run the PCA on "
                    "them, e.g. `kept.sel(variants=common)`."
                )
            if not have.is_unique:
                raise ValueError(
                    "The new data have duplicate variant ids; drop the duplicates first."
                )
            gt = gt.sel({vdim: ids})
    alleles = ("allele_1", "allele_2")
    if not all(a in ref.coords and a in gt.coords for a in alleles):
        return gt
    r1, r2 = (np.asarray(ref[a].values).astype(str) for a in alleles)
    n1, n2 = (np.asarray(gt[a].values).astype(str) for a in alleles)
    same = (r1 == n1) & (r2 == n2)
    swapped = (r1 == n2) & (r2 == n1) & ~same
    bad = ~(same | swapped)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        shown = ", ".join(f"{ref[vdim].values[j]} ({r1[j]}/{r2[j]} vs {n1[j]}/{n2[j]})" for j in i)
        raise ValueError(
            f"{int(bad.sum())} variant(s) have other alleles in the new data than in the "
            f"reference (allele_1/allele_2): {shown}. Drop them from both, or fix the "
            "allele codes (e.g. strand flips)."
        )
    if swapped.any():
        flip = xr.DataArray(swapped, dims=(vdim,))
        called = gt.where(gt >= 0)  # negative codes are missing calls: NaN
        gt = xr.where(flip, 2 - called, called, keep_attrs=True)
        gt = gt.assign_coords(allele_1=(vdim, r1), allele_2=(vdim, r2))
    return gt


# ------------------------------------------------------------- PLINK 2 PCA files


def write_eigenvec(scores: xr.DataArray, path) -> Path:
    """Write sample scores as a PLINK 2 ``.eigenvec`` file (``#FID IID PC1 PC2 ...``).

    The file PLINK 2's ``--pca`` writes, which ``--covar`` reads (e.g. as
    covariates of ``--glm``): one line per sample, tab-separated, the family
    id from the coordinate ``family_id`` (as :func:`open_plink` reads it
    from the ``.fam``; the sample id when there is none, as
    :func:`write_plink` writes it), the sample id, and one column per
    component. Use it for ``res.U`` (what :func:`write_plink_pca` does) or
    for the scores of :func:`project_samples`.

    Parameters
    ----------
    scores : xarray.DataArray
        Dims ``(sample_dim, "component")`` in either order; the sample
        dimension's coordinate holds the sample ids.
    path : str or path-like
        The file to write (replaced atomically: no partial file is left).

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=500, n_samples=20)
    >>> res = gt.svd.exact(k=2, dim="samples", center=True)
    >>> path = xsvd.write_eigenvec(res.U, tempfile.mkdtemp() + "/pca.eigenvec")
    >>> path.read_text().splitlines()[0].split()
    ['#FID', 'IID', 'PC1', 'PC2']
    """
    path = Path(os.fspath(path))
    _write_files({path: _eigenvec_text(scores)})
    return path


def _eigenvec_text(scores: xr.DataArray) -> str:
    if not isinstance(scores, xr.DataArray) or scores.ndim != 2 or "component" not in scores.dims:
        raise ValueError(
            "Expected scores with dims (samples, 'component'), e.g. `res.U` or the result "
            "of `xsvd.project_samples`."
        )
    sdim = next(d for d in scores.dims if d != "component")
    if sdim not in scores.coords:
        raise ValueError(
            f"The scores have no sample ids: give {sdim!r} a coordinate, e.g. "
            f"`scores.assign_coords({sdim}=ids)`."
        )
    scores = scores.transpose(sdim, "component")
    iid = np.asarray(scores[sdim].values).astype(str)
    fid = _coord(scores, "family_id", sdim, "") if "family_id" in scores.coords else iid
    _check_ids([fid, iid], ".eigenvec")
    values = np.asarray(scores.values, dtype=np.float64)
    head = "\t".join(["#FID", "IID", *(f"PC{i + 1}" for i in range(values.shape[1]))])
    lines = [head]
    for f, i, row in zip(fid, iid, values, strict=True):
        lines.append("\t".join([f, i, *(_number(v) for v in row)]))
    return "\n".join(lines) + "\n"


def write_plink_pca(
    res,
    prefix,
    *,
    n_variants: int | None = None,
    loadings: str | None = "allele",
) -> tuple[Path, ...]:
    """Write a PCA as the files of PLINK 2's ``--pca``, and the frequencies to project with.

    - ``prefix.eigenvec``: the samples' PCs, ``res.U`` (see
      :func:`write_eigenvec`); ``--covar`` reads it.
    - ``prefix.eigenval``: one eigenvalue a line, ``S**2 / n_variants``
      (PLINK 2's scale: the eigenvalues of the relationship matrix).
    - ``loadings="allele"``: ``prefix.eigenvec.allele``, as ``--pca
      allele-wts`` writes it: ``#CHROM ID REF ALT A1 PC1 ...``, two lines a
      variant (its REF and ALT allele, the weights of opposite sign), the
      weight of the counted allele (``allele_1``, PLINK 2's ALT) being
      ``V * sqrt(n_variants) / 2`` for :func:`patterson_scaling`'s weights.
      ``loadings="var"``: ``prefix.eigenvec.var``, as ``--pca
      biallelic-var-wts`` writes it: ``#CHROM ID MAJ NONMAJ PC1 ...``, one
      line a variant with twice the major allele's weight. None: neither.
    - with loadings, ``prefix.afreq``: the reference allele frequencies
      (``#CHROM ID REF ALT ALT_FREQS``, ``res.mean / 2``) that PLINK 2 needs
      to standardize new samples as the reference was (``--read-freq``).

    New samples are then projected by PLINK 2 with::

        plink2 --bfile new --read-freq prefix.afreq \\
               --score prefix.eigenvec.allele 2 5 header-read no-mean-imputation \\
                       variance-standardize cols=+scoresums --score-col-nums 6-15

    and ``PCk_SUM / (n_variants * sqrt(eigenvalue_k))`` is the score that
    ``xsvd.project_samples(..., shrinkage=False)`` gives: in both, a
    missing call adds nothing to the sum, as if it were the reference mean.
    (Use the ``_SUM`` columns: the ``_AVG`` ones divide by each sample's own
    count of calls.) For ``.eigenvec.var``: ``--score prefix.eigenvec.var 2
    3 header-read ... --score-col-nums 5-14``. The weights fold in the PCA's
    own weights, so that PLINK's ``variance-standardize`` reproduces any
    weighting.

    The variant columns come from the coordinates :func:`open_plink` makes
    (``chrom``, ``allele_1``, ``allele_2``) where present, with the
    placeholders of :func:`write_plink` otherwise. Variants with a frequency
    of 0 or 1 (no information) are left out of the weights. No file is left
    half-written.

    Parameters
    ----------
    res : SVDResult
        A PCA of allele counts (0, 1, 2) with the samples along ``U`` and one
        variant dimension; centered for the loadings.
    prefix : str or path-like
        The common prefix of the files.
    n_variants : int, optional
        The number of variants the eigenvalues and weights are scaled by.
        PLINK 2 counts every variant it was given, monomorphic ones
        included: pass ``w.attrs["n_variants"]`` of
        :func:`patterson_scaling`. Default: the variants of ``res``.
    loadings : {"allele", "var", None}
        Which variant weights to write.

    Returns
    -------
    tuple of pathlib.Path
        The files written.

    Examples
    --------
    >>> import tempfile, xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=1_000, n_samples=50)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> res = kept.svd.exact(k=3, dim="samples", center=True, weights=w)
    >>> files = xsvd.write_plink_pca(res, tempfile.mkdtemp() + "/ref", n_variants=1_000)
    >>> [f.name for f in files]
    ['ref.eigenvec', 'ref.eigenval', 'ref.eigenvec.allele', 'ref.afreq']
    """
    if loadings not in ("allele", "var", None):
        raise ValueError(f"loadings must be 'allele', 'var' or None, got {loadings!r}.")
    vdim = _feature_dim(res)
    _, _, p, _ = _spectrum(res)
    m = p if n_variants is None else n_variants
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < p:
        raise ValueError(
            f"n_variants must be an integer at least the number of variants of the PCA "
            f"({p}), got {n_variants!r}."
        )
    base = Path(os.fspath(prefix))
    files = {base.with_name(base.name + ".eigenvec"): _eigenvec_text(res.U)}
    S = np.asarray(res.S.values, dtype=np.float64)
    files[base.with_name(base.name + ".eigenval")] = "".join(_number(v) + "\n" for v in S**2 / m)
    if loadings is not None:
        if res.mean is None:
            raise ValueError(
                "Variant weights need a centered PCA (`center=True`): PLINK 2 centers new "
                "samples with the reference frequencies. Pass `loadings=None` to write only "
                "the .eigenvec and .eigenval files."
            )
        table = _loadings_table(res, vdim, m)
        name = ".eigenvec.allele" if loadings == "allele" else ".eigenvec.var"
        text = _allele_text(table) if loadings == "allele" else _var_text(table)
        files[base.with_name(base.name + name)] = text
        files[base.with_name(base.name + ".afreq")] = _afreq_text(table)
    _write_files(files)
    return tuple(files)


def _loadings_table(res, vdim: Hashable, m: int) -> dict:
    """Per variant: chrom, id, REF, ALT, ALT frequency, and the ALT allele's weights."""
    V = res.V.transpose(vdim, "component")
    freq = np.asarray(res.mean.transpose(vdim).values, dtype=np.float64) / 2
    ds = res.to_dataset()
    if "weights" in ds:
        w = np.asarray(ds["weights"].transpose(vdim).values, dtype=np.float64)
    else:
        w = np.ones(freq.size)
    values = np.asarray(V.values, dtype=np.float64)
    keep = np.isfinite(freq) & (freq > 0) & (freq < 1) & np.isfinite(values).all(axis=1)
    # PLINK's variance-standardize divides by sqrt(2p(1-p)): fold the PCA's weights in
    scale = w * np.sqrt(np.where(keep, 2 * freq * (1 - freq), 0.0)) * np.sqrt(m) / 2
    n = V.sizes[vdim]
    ids = _coord(V, vdim, vdim, ".") if vdim in V.coords else np.arange(n).astype(str)
    table = {
        "chrom": _coord(V, "chrom", vdim, "0"),
        "id": ids,
        "ref": _coord(V, "allele_2", vdim, "B"),
        "alt": _coord(V, "allele_1", vdim, "A"),
        "freq": freq,
        "weights": values * scale[:, None],
    }
    _check_ids([table["chrom"], table["id"], table["ref"], table["alt"]], "variant")
    return {key: col[keep] for key, col in table.items()}


def _allele_text(t: dict) -> str:
    k = t["weights"].shape[1]
    lines = ["\t".join(["#CHROM", "ID", "REF", "ALT", "A1", *(f"PC{i + 1}" for i in range(k))])]
    for c, i, r, a, wts in zip(t["chrom"], t["id"], t["ref"], t["alt"], t["weights"], strict=True):
        lines.append("\t".join([c, i, r, a, r, *(_number(-v) for v in wts)]))
        lines.append("\t".join([c, i, r, a, a, *(_number(v) for v in wts)]))
    return "\n".join(lines) + "\n"


def _var_text(t: dict) -> str:
    k = t["weights"].shape[1]
    lines = ["\t".join(["#CHROM", "ID", "MAJ", "NONMAJ", *(f"PC{i + 1}" for i in range(k))])]
    rows = zip(t["chrom"], t["id"], t["ref"], t["alt"], t["freq"], t["weights"], strict=True)
    for c, i, r, a, p, wts in rows:
        major_alt = p > 0.5  # the counted allele (ALT) is the major one
        maj, non = (a, r) if major_alt else (r, a)
        sign = 2.0 if major_alt else -2.0
        lines.append("\t".join([c, i, maj, non, *(_number(sign * v) for v in wts)]))
    return "\n".join(lines) + "\n"


def _afreq_text(t: dict) -> str:
    lines = ["#CHROM\tID\tREF\tALT\tALT_FREQS"]
    for c, i, r, a, p in zip(t["chrom"], t["id"], t["ref"], t["alt"], t["freq"], strict=True):
        lines.append("\t".join([c, i, r, a, _number(p)]))
    return "\n".join(lines) + "\n"


def _number(v: float) -> str:
    return "NA" if not np.isfinite(v) else f"{v:.9g}"


def _check_ids(columns, kind: str) -> None:
    for c in columns:
        if any(not str(v) or any(ch.isspace() for ch in str(v)) for v in c):
            raise ValueError(
                f"PLINK files cannot hold empty identifiers or identifiers with spaces; "
                f"found one in a {kind} column."
            )


def _write_files(files: dict) -> None:
    """Write every ``{path: text}`` or none: each to a temporary name, then renamed."""
    temps = []
    try:
        for path, text in files.items():
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temps.append(tmp)
            tmp.write_text(text)
        for tmp, path in zip(temps, files, strict=True):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


# -------------------------------------------------------------------- Tracy-Widom


def tracy_widom(
    eigenvalues,
    *,
    n_variants: float | None = None,
    min_remaining: int = 10,
) -> xr.Dataset:
    """Tracy-Widom significance of each eigenvalue, as EIGENSOFT's ``twstats`` computes it.

    Patterson, Price & Reich (2006) test whether component ``i`` is
    structure or noise by comparing its eigenvalue, among the eigenvalues
    from ``i`` on, with the largest eigenvalue of a Wishart matrix of pure
    noise: normalized to mean 1 and multiplied by the effective number of
    markers ``n'``, centered and scaled with Johnstone's (2001) ``mu`` and
    ``sigma``, it follows the Tracy-Widom law of order 1 under the null
    (its distribution function computed as the Fredholm determinant of the
    Airy kernel, discretized as Bornemann 2010 does). The test runs
    down the components (each one among those that follow it), so the
    number of significant leading components estimates how many PCs carry
    population structure.

    ``n'`` is estimated from the spread of the eigenvalues as ``twstats``
    does, ``n' = m (m + 2) / (sum(e**2) - m)`` for the ``m`` eigenvalues
    ``e`` normalized to mean 1 (the paper's formula,
    ``(m + 1) m**2 / ((m - 1) sum(e**2) - m**2)``, differs only in terms of
    lower order), which needs all of them: a result that holds every component (e.g.
    ``exact`` without ``k``), or the full list. For a result with only the
    leading components, pass ``n_variants``: the number of (unlinked)
    variants, as ``twstats -n`` does; the remaining eigenvalues' sum comes
    from ``res.total_variance``. LD between variants makes ``n'`` smaller
    than the count, and the test too liberal with a count: LD-prune first.

    Parameters
    ----------
    eigenvalues : SVDResult or array-like
        A PCA result (its ``S**2``; any scale, the test is scale-free), or
        all the eigenvalues of one, on any common scale (e.g. every line of
        a ``.eigenval`` file of all components, or EIGENSOFT's ``.eval``).
        Values at most 1e-8 of the mean count as zero (a centered PCA
        leaves one) and are not tested.
    n_variants : float, optional
        A fixed effective number of markers instead of the estimate.
        Needed for a result with only the leading components.
    min_remaining : int, default 10
        No test (NaN) with fewer eigenvalues left, as ``twstats``.

    Returns
    -------
    xarray.Dataset
        Along ``component``: ``statistic`` (the TW statistic), ``p_value``
        and ``effective_n`` (``n'``).

    References
    ----------
    N. Patterson, A. L. Price and D. Reich, "Population structure and
    eigenanalysis", PLoS Genet. 2 (2006) e190. I. M. Johnstone, "On the
    distribution of the largest eigenvalue in principal components
    analysis", Ann. Statist. 29 (2001) 295-327. F. Bornemann, "On the
    numerical evaluation of distributions in random matrix theory: a
    review", Markov Process. Related Fields 16 (2010) 803-866. Needs SciPy
    (``pip install scipy``) for the Airy function.

    Examples
    --------
    >>> import xsvd
    >>> gt = xsvd.datasets.genotypes(n_variants=2_000, n_samples=120, n_populations=3)
    >>> kept, w = xsvd.patterson_scaling(gt)
    >>> res = kept.svd.exact(dim="samples", center=True, weights=w)
    >>> tw = xsvd.tracy_widom(res)
    >>> (tw.p_value.values[:4] < 1e-6).tolist()
    [True, True, False, False]
    """
    from . import _tracy_widom
    from .labeled.result import SVDResult

    if n_variants is not None and not (np.isscalar(n_variants) and n_variants > 1):
        raise ValueError(f"n_variants must be a number above 1, got {n_variants!r}.")
    if isinstance(min_remaining, bool) or not isinstance(min_remaining, int | np.integer):
        raise ValueError(f"min_remaining must be an integer, got {min_remaining!r}.")
    if isinstance(eigenvalues, SVDResult):
        k, n, p, lam = _spectrum(eigenvalues)
        rank = min(n - 1 if eigenvalues.center else n, p)
        positive = int((lam > 1e-8 * 1.0 / max(rank, 1)).sum())
        coords = {"component": eigenvalues.S["component"].values}
        if k >= rank:  # every eigenvalue: n' can be estimated
            rank = min(rank, positive)
            lam = lam[:rank]
            coords = {"component": coords["component"][:rank]}
            sums = (float(lam.sum()), float((lam**2).sum()))
        elif n_variants is None:
            raise ValueError(
                f"The result holds {k} of its {rank} eigenvalues; estimating the effective "
                "number of markers needs them all. Pass `n_variants=` (the number of "
                "LD-pruned variants, as `twstats -n`), or decompose with `exact(...)` "
                "without `k`."
            )
        else:
            sums = (1.0, None)  # explained variance ratios: they sum to 1
    else:
        lam = np.asarray(getattr(eigenvalues, "values", eigenvalues), dtype=np.float64)
        if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)):
            raise ValueError("Expected a result or a 1-D array of finite eigenvalues.")
        lam = np.sort(lam)[::-1]
        lam = lam[lam > 1e-8 * max(lam.mean(), 0.0)]
        if lam.size == 0:
            raise ValueError("The eigenvalues are all zero (or negative): nothing to test.")
        rank = lam.size
        coords = {"component": np.arange(rank)}
        sums = (float(lam.sum()), float((lam**2).sum()))
    stat, p_value, n_eff = _tracy_widom.twstats(
        lam,
        n_total=rank,
        total=sums[0],
        total_squares=sums[1],
        n_markers=n_variants,
        min_remaining=int(min_remaining),
    )
    dims = ("component",)
    return xr.Dataset(
        {
            "statistic": (dims, stat, {"long_name": "Tracy-Widom statistic"}),
            "p_value": (dims, p_value, {"long_name": "p-value (TW1 upper tail)"}),
            "effective_n": (dims, n_eff, {"long_name": "effective number of markers n'"}),
        },
        coords=coords,
        attrs={"n_eigenvalues": int(rank)},
    )
