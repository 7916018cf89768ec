"""The files of PLINK 2's ``--pca``, and the frequencies PLINK 2 projects new samples with.

:func:`write_eigenvec` writes sample scores as a ``.eigenvec`` file;
:func:`write_plink_pca` writes a whole PCA: ``.eigenvec``, ``.eigenval``,
``.eigenvec.allele`` or ``.eigenvec.var``, and ``.afreq``. Every file set is
written whole or not at all. Files need host values: arrays on a device (or
lazy ones) come to the host once each, counted (:func:`~xsvd.genomics.results.host_values`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Hashable
from pathlib import Path

import numpy as np
import xarray as xr

from .plink import coord_text
from .results import host_values, spectrum, variant_dim
from .scaling import called_sums

__all__ = ["write_eigenvec", "write_plink_pca"]


def write_eigenvec(scores: xr.DataArray, path) -> Path:
    """Write sample scores as a PLINK 2 ``.eigenvec`` file (``#FID IID PC1 PC2 ...``).

    The file PLINK 2's ``--pca`` writes, which ``--covar`` reads (e.g. as
    covariates of ``--glm``): one line per sample, tab-separated, the family
    id from the coordinate ``family_id`` (as :func:`open_plink` reads it
    from the ``.fam``; the sample id when there is none, as
    :func:`write_plink` writes it), the sample id, and one column per
    component. Use it for ``res.U`` (what :func:`write_plink_pca` does) or
    for the scores of :func:`project_samples`, on any backend: lazy scores
    are computed, and scores on a device are copied to the host once.

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
    fid = coord_text(scores, "family_id", sdim, "") if "family_id" in scores.coords else iid
    _check_ids([fid, iid], ".eigenvec")
    values = np.asarray(host_values(scores), dtype=np.float64)
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
    genotypes: xr.DataArray | None = None,
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
      (``#CHROM ID REF ALT ALT_FREQS OBS_CT``, ``res.mean / 2``) that PLINK 2
      needs to standardize new samples as the reference was
      (``--read-freq``), as ``plink2 --freq`` writes them: ``OBS_CT`` is
      the number of allele observations, twice the number of called
      genotypes of the variant. Without missing calls that is twice the
      number of samples; for a PCA with ``missing="mean"`` pass the
      genotypes it was made from (``genotypes=``), whose calls are counted
      (one pass over them), else the column is left out, with a warning.

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
    placeholders of :func:`write_plink` otherwise. Variants with PLINK's missing
    id ``.`` (more than one) are written as ``CHROM:POS:REF:ALT``, with a
    warning: PLINK 2 refuses ids listed twice, and ``--set-missing-var-ids
    '@:#:$r:$a'`` gives the new samples' variants the same ids. Variants with a frequency
    of 0 or 1 (no information) are left out of the weights. No file is left
    half-written. A result on a device is read once per array (``U``, ``S``,
    ``V``, the mean), each copied to the host in one counted move.

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
    genotypes : xarray.DataArray, optional
        The genotypes the PCA was made from (e.g. ``kept`` of
        :func:`patterson_scaling`), dims ``(variants, samples)`` in either
        order: the ``.afreq``'s ``OBS_CT`` counts their calls (matched by
        variant id when both have ids). For a PCA with ``missing="mean"``
        the column is left out without them (a warning says so); otherwise
        ``OBS_CT`` is twice the number of samples.

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
    vdim = variant_dim(res)
    _, _, p, _ = spectrum(res)
    m = p if n_variants is None else n_variants
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < p:
        raise ValueError(
            f"n_variants must be an integer at least the number of variants of the PCA "
            f"({p}), got {n_variants!r}."
        )
    base = Path(os.fspath(prefix))
    files = {base.with_name(base.name + ".eigenvec"): _eigenvec_text(res.U)}
    S = np.asarray(host_values(res.S), dtype=np.float64)
    files[base.with_name(base.name + ".eigenval")] = "".join(_number(v) + "\n" for v in S**2 / m)
    if loadings is not None:
        if res.mean is None:
            raise ValueError(
                "Variant weights need a centered PCA (`center=True`): PLINK 2 centers new "
                "samples with the reference frequencies. Pass `loadings=None` to write only "
                "the .eigenvec and .eigenval files."
            )
        table = _loadings_table(res, vdim, m, _observations(res, vdim, genotypes))
        name = ".eigenvec.allele" if loadings == "allele" else ".eigenvec.var"
        text = _allele_text(table) if loadings == "allele" else _var_text(table)
        files[base.with_name(base.name + name)] = text
        files[base.with_name(base.name + ".afreq")] = _afreq_text(table)
    _write_files(files)
    return tuple(files)


def _observations(res, vdim: Hashable, genotypes) -> np.ndarray | None:
    """PLINK's ``OBS_CT`` of each variant of ``res``: twice its number of called genotypes."""
    n_var = res.V.sizes[vdim]
    if genotypes is None:
        if res.settings.get("missing") == "mean":
            warnings.warn(
                "This PCA was made with missing='mean' (missing calls), so the .afreq file's "
                "OBS_CT (each variant's number of allele observations) is not known and the "
                "column is left out (PLINK 2 reads the file without it). Pass the genotypes "
                "the PCA was made from, e.g. `write_plink_pca(res, prefix, genotypes=kept)`, "
                "to write it.",
                UserWarning,
                stacklevel=3,
            )
            return None
        return np.full(n_var, 2 * int(res.n_samples), dtype=np.int64)
    if not isinstance(genotypes, xr.DataArray) or genotypes.ndim != 2 or vdim not in genotypes.dims:
        raise ValueError(
            f"genotypes must be a 2-D DataArray with the PCA's variant dimension {vdim!r} "
            "(the data the PCA was made from)."
        )
    by_id = vdim in genotypes.coords and vdim in res.V.coords
    if by_id:
        ids = res.V[vdim].values
        present = np.isin(ids, genotypes[vdim].values)
        if not present.all():
            shown = ", ".join(str(v) for v in ids[~present][:5])
            raise ValueError(
                f"{int((~present).sum())} variant(s) of the PCA are not in `genotypes` (e.g. "
                f"{shown}); pass the genotypes the PCA was made from."
            )
    elif genotypes.sizes[vdim] != n_var:
        raise ValueError(
            f"genotypes has {genotypes.sizes[vdim]} variants, the PCA {n_var}; pass the "
            "genotypes the PCA was made from."
        )
    sdim = next(d for d in genotypes.dims if d != vdim)
    # counted where the genotypes are (any device, Dask chunk by chunk), then picked by id
    # on the host: the data are never indexed
    counts = called_sums(genotypes.transpose(vdim, sdim).data)[1]
    if by_id:
        coords = {vdim: genotypes[vdim].values}
        counts = xr.DataArray(counts, dims=vdim, coords=coords).sel({vdim: ids}).values
    return 2 * counts


def _loadings_table(res, vdim: Hashable, m: int, obs: np.ndarray | None) -> dict:
    """Per variant: chrom, id, REF, ALT, ALT frequency, OBS_CT, and the ALT allele's weights."""
    V = res.V.transpose(vdim, "component")
    freq = np.asarray(host_values(res.mean.transpose(vdim)), dtype=np.float64) / 2
    if res.weights is not None:
        w = np.asarray(res.weights.transpose(vdim).values, dtype=np.float64)
    else:
        w = np.ones(freq.size)
    values = np.asarray(host_values(V), dtype=np.float64)
    keep = np.isfinite(freq) & (freq > 0) & (freq < 1) & np.isfinite(values).all(axis=1)
    # PLINK's variance-standardize divides by sqrt(2p(1-p)): fold the PCA's weights in
    scale = w * np.sqrt(np.where(keep, 2 * freq * (1 - freq), 0.0)) * np.sqrt(m) / 2
    n = V.sizes[vdim]
    ids = coord_text(V, vdim, vdim, ".") if vdim in V.coords else np.arange(n).astype(str)
    table = {
        "chrom": coord_text(V, "chrom", vdim, "0"),
        "id": ids,
        "ref": coord_text(V, "allele_2", vdim, "B"),
        "alt": coord_text(V, "allele_1", vdim, "A"),
        "freq": freq,
        "weights": values * scale[:, None],
    }
    if obs is not None:
        table["obs"] = obs
    _check_ids([table["chrom"], table["id"], table["ref"], table["alt"]], "variant")
    table = {key: col[keep] for key, col in table.items()}
    table["id"] = _unique_ids(table, coord_text(V, "position", vdim, "0")[keep])
    return table


def _unique_ids(t: dict, position: np.ndarray) -> np.ndarray:
    """Variant ids PLINK 2 can match: its missing id ``.`` becomes ``CHROM:POS:REF:ALT``
    (what ``--set-missing-var-ids @:#:$r:$a`` makes of it), with a warning saying to set
    the new samples' ids so; ids listed twice otherwise are a warning too."""
    ids = np.asarray(t["id"], dtype=object)
    missing = ids == "."
    if missing.sum() > 1:
        ids[missing] = [
            ":".join(v) for v in zip(t["chrom"][missing], position[missing], t["ref"][missing],
                                     t["alt"][missing], strict=True)
        ]  # fmt: skip
        warnings.warn(
            f"{int(missing.sum())} variants have PLINK's missing id '.', which PLINK 2's "
            "--read-freq and --score refuse when listed more than once: they are written as "
            "CHROM:POS:REF:ALT. Give the new samples' variants the same ids in the command "
            "that projects them: `plink2 --bfile NEW --set-missing-var-ids '@:#:$r:$a' "
            "--read-freq ... --score ...`.",
            UserWarning,
            stacklevel=4,
        )
    values, counts = np.unique(ids.astype(str), return_counts=True)
    if (counts > 1).any():
        shown = ", ".join(repr(str(v)) for v in values[counts > 1][:5])
        warnings.warn(
            f"{int((counts > 1).sum())} variant id(s) are listed more than once (e.g. "
            f"{shown}); PLINK 2's --read-freq and --score refuse such files. Give every "
            "variant its own id before the PCA, e.g. `plink2 --bfile X --set-all-var-ids "
            "'@:#:$r:$a' --make-bed --out Y` (for the new samples too).",
            UserWarning,
            stacklevel=4,
        )
    return ids.astype(str)


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
    if "obs" not in t:  # OBS_CT unknown: PLINK 2 reads the file without the column
        lines = ["#CHROM\tID\tREF\tALT\tALT_FREQS"]
        for c, i, r, a, p in zip(t["chrom"], t["id"], t["ref"], t["alt"], t["freq"], strict=True):
            lines.append("\t".join([c, i, r, a, _number(p)]))
        return "\n".join(lines) + "\n"
    lines = ["#CHROM\tID\tREF\tALT\tALT_FREQS\tOBS_CT"]
    rows = zip(t["chrom"], t["id"], t["ref"], t["alt"], t["freq"], t["obs"], strict=True)
    for c, i, r, a, p, obs in rows:
        lines.append("\t".join([c, i, r, a, _number(p), str(int(obs))]))
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
