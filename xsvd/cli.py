"""The ``xsvd`` command.

``xsvd demo`` runs a compressed SVD on each embedded dataset (a genotype
matrix with population structure, on Dask; a climate field with a land mask,
on NumPy) and prints what a user would want to see.

``xsvd run STORE --var NAME --dim DIM --k K --out OUT`` decomposes a variable
of a Zarr store (or netCDF file), or the genotypes of a PLINK file set
(``.bed`` or ``.pgen``), and writes U, S and V with their labels to a new Zarr
store, or a netCDF file when ``OUT`` ends in ``.nc``; ``--weights coslat``
weights gridded data by area (EOFs), ``--weights patterson`` scales genotypes
as PLINK 2's PCA does, ``--missing mean`` fills missing values with their
feature's mean. Errors a user can cause end in one line that says what to do,
in the command's words (``--k``, not ``k=``), a non-zero exit status, and no
partial output.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .labeled.options_doc import Option, described_options, plain_text


def _demo(args: argparse.Namespace) -> int:
    import xsvd
    from xsvd import datasets

    print(f"xsvd {xsvd.__version__} demo: compressed SVD of two embedded datasets\n")

    figures = {}

    # --- genomics: PCA of a genotype matrix, streamed with Dask ----------------
    gt = datasets.genotypes(
        args.variants, args.samples, n_populations=3, seed=args.seed, chunks=args.variants // 4
    )
    print("1. Genotypes (PCA of samples, centered per variant)")
    _describe_input(gt)
    t0 = time.perf_counter()
    res = gt.svd.compressed(k=args.k, dim="samples", center=True, seed=args.seed)
    dt = time.perf_counter() - t0
    _describe_result(res, dt)
    pcs = res.U.isel(component=[0, 1])
    means = pcs.groupby("population").mean()
    print("   mean of PC1, PC2 per population (populations separate):")
    for pop in means.population.values:
        v = means.sel(population=pop).values
        print(f"     {pop}: {v[0]:+.3f} {v[1]:+.3f}")
    figures["genotype-scores.png"] = lambda r=res: r.plot.scores(hue="population").figure

    # --- climate: EOFs of an SST-like field with land and area weights ----------
    sst, modes = datasets.climate_field(seed=args.seed, return_modes=True)
    print("\n2. Sea-surface temperature (EOFs over time, area-weighted, land masked)")
    _describe_input(sst)
    w = xsvd.coslat_weights(sst, dim="time")
    t0 = time.perf_counter()
    res = sst.svd.compressed(k=args.k, dim="time", center=True, weights=w, seed=args.seed)
    dt = time.perf_counter() - t0
    _describe_result(res, dt)
    land = int(res.V.isel(component=0).isnull().sum())
    print(f"   land cells kept as NaN in V: {land} of {res.V.isel(component=0).size}")
    corr = []
    patterns = res.V / w  # V holds weighted patterns; undo the weights to compare
    for i in range(modes.sizes["mode"]):
        a = modes.patterns.isel(mode=i).values.ravel()
        b = patterns.isel(component=i).values.ravel()
        ok = ~np.isnan(a)
        corr.append(abs(np.corrcoef(a[ok], b[ok])[0, 1]))
    print(
        "   |correlation| of EOF patterns (V / weights) with the planted modes: "
        + " ".join(f"{c:.3f}" for c in corr),
    )
    figures["climate-scree.png"] = lambda r=res: r.plot.scree().figure
    figures["climate-components.png"] = lambda r=res: r.plot.components(n=4, unweighted=True)
    figures["climate-timeseries.png"] = lambda r=res: r.plot.timeseries(n=3, scaling="unit")
    _save_figures(figures, args.out)
    return 0


def _save_figures(figures: dict, folder: str) -> None:
    """Write the demo's plots as PNG files (when matplotlib is installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # the command only writes files
        import matplotlib.pyplot as plt
    except ImportError:
        print('\nPlots skipped: install matplotlib (pip install "xsvd[plot]").')
        return
    from pathlib import Path

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    print("\nPlots:")
    for name, draw in figures.items():
        fig = draw()
        fig.savefig(path / name, dpi=110, bbox_inches="tight")
        plt.close(fig)
        print(f"   {path / name}")


class UsageError(Exception):
    """A problem with the command's input, reported as one line."""


#: Suffixes of PLINK file sets, read with the function that opens them.
PLINK_SUFFIXES = {".bed": "open_plink", ".bim": "open_plink", ".fam": "open_plink"}
PLINK_SUFFIXES |= {".pgen": "open_pgen", ".pvar": "open_pgen", ".psam": "open_pgen"}
#: Suffixes of VCF files (read as PLINK 2 files after conversion).
VCF_SUFFIXES = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")
#: --out names written as netCDF files; a name with no suffix or ``.zarr`` is a Zarr store.
NETCDF_SUFFIXES = (".nc", ".nc4", ".cdf", ".netcdf")


def _plink_prefix(path: str) -> str | None:
    """``"open_plink"`` or ``"open_pgen"`` where ``path`` is the prefix of such a file set."""
    from .genomics.plink import BED_SUFFIXES, PGEN_SUFFIXES, file_set_paths

    kinds = (("open_plink", BED_SUFFIXES), ("open_pgen", PGEN_SUFFIXES))
    found = [opener for opener, suffixes in kinds if file_set_paths(path, suffixes)[0].exists()]
    if len(found) > 1:
        raise UsageError(
            f"{path!r} is the prefix of both a .bed and a .pgen file set; give "
            f"{path}.bed or {path}.pgen."
        )
    return found[0] if found else None


class _Input:
    """The data to decompose, and the other variables of its store (for --weights).

    A Zarr store (``kind`` "zarr"), a netCDF file ("netcdf") or a PLINK file
    set ("genotypes": allele counts, samples named as the sample dimension).
    """

    def __init__(self, path: str, var: str | None, missing_chunks: str = "warn"):
        import xarray as xr

        import xsvd

        self.path = path
        remote = "://" in path
        lower = path.lower().rstrip("/")
        opener = PLINK_SUFFIXES.get(os.path.splitext(lower)[1])
        if not remote and not os.path.exists(path):
            opener = _plink_prefix(path)  # a file set's prefix, as plink's --bfile/--pfile
            if opener is None:
                raise UsageError(
                    f"{path!r} does not exist; give the path of a Zarr store, a netCDF file or "
                    "a PLINK file set (.bed or .pgen, or their prefix)."
                )
        if opener is None and lower.endswith(VCF_SUFFIXES):
            prefix = re.sub(r"\.(vcf(\.b?gz)?|bcf)$", "", path, flags=re.IGNORECASE)
            raise UsageError(
                f"{path!r} is a VCF file, which xsvd run does not read; convert it to a PLINK 2 "
                f"file set with `plink2 --vcf {path} --make-pgen --out {prefix}` and run on "
                f"{prefix}.pgen (with --center --weights patterson --missing mean for PLINK 2's "
                "PCA)."
            )
        if opener is not None and not remote:
            self.kind = "genotypes"
            self.data = getattr(xsvd, opener)(path)
            return
        self.kind = "zarr" if lower.endswith(".zarr") or remote or os.path.isdir(path) else "netcdf"
        if self.kind == "zarr":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", xsvd.MissingChunksWarning)
                self.data = xsvd.open_zarr(path, var, missing_chunks=missing_chunks)
            _say_warnings(caught, lambda w: issubclass(w.category, xsvd.MissingChunksWarning))
            return
        try:
            self.dataset = xr.open_dataset(path, chunks={})
        except Exception as exc:  # unknown format, missing netCDF engine, ...
            raise UsageError(
                f"could not open {path!r} as netCDF ({type(exc).__name__}: {exc}); give a Zarr "
                "store, a netCDF file (netCDF4 files need `pip install h5netcdf`) or a PLINK "
                "file set (.bed or .pgen)."
            ) from exc
        self.data = self.dataset[xsvd.io.pick_variable(self.dataset, var, path)]

    def variable(self, name: str):
        """A coordinate of the data, or another variable of the store, by name."""
        import xsvd

        if name in self.data.coords:
            return self.data.coords[name]
        if self.kind == "netcdf":
            if name in self.dataset.variables:
                return self.dataset[name]
            held = list(self.dataset.variables)
        elif self.kind == "zarr":
            try:
                return xsvd.open_zarr(self.path, name, missing_chunks="ignore")
            except ValueError:
                import xarray as xr

                held = list(xr.open_zarr(self.path).variables)
        else:
            held = list(self.data.coords)
        raise UsageError(
            f"--weights {name!r} is neither 'coslat', 'patterson' nor a variable or coordinate "
            f"of {self.path!r}, which holds {held}."
        )


def _weights(source: _Input, spec: str | None, sample_dims: list[str]) -> tuple[Any, Any, str]:
    """The data to decompose, the weights that ``--weights`` names, and a few words that say
    what they are (``patterson`` also leaves out monomorphic variants)."""
    data = source.data
    if spec is None:
        return data, None, "none"
    if spec == "patterson":
        import xsvd

        if len(sample_dims) != 1 or data.ndim != 2:
            raise UsageError(
                f"--weights patterson scales genotypes, 2-D (variants x samples) with one "
                f"sample dimension, but {data.name!r} has the dimensions {list(data.dims)} and "
                f"--dim {','.join(sample_dims)}."
            )
        kept, w = xsvd.patterson_scaling(data, dim=sample_dims[0])
        dropped = data.size // data.sizes[sample_dims[0]] - w.size
        text = (
            f"Patterson scaling, 1 / sqrt(2 p (1 - p)) per variant as PLINK 2's --pca, p from "
            f"{w.attrs['frequencies_from']} ({dropped} monomorphic variants left out)"
        )
        return kept, w, text
    if spec == "coslat":
        from xsvd.climate.weights import coslat_weights, latitude_rank

        if not any(c.dims and latitude_rank(c) for c in data.coords.values()):
            raise UsageError(  # the command has no lat= to name one: say what it looks for
                f"--weights coslat needs a latitude coordinate (named lat or latitude, or with "
                f"standard_name 'latitude' or units 'degrees_north'), but {data.name!r} has the "
                f"coordinates {list(data.coords)}. Add one to the input, or give --weights VAR "
                "with a variable of weights."
            )
        try:
            w = coslat_weights(data, dim=sample_dims)
        except ValueError as exc:  # along the sample dims, or not in degrees
            raise UsageError(
                f"--weights coslat: {exc} Or give --weights VAR with a variable of weights."
            ) from exc
        return data, w, f"{w.attrs['long_name']} (area weights for EOFs)"
    return data, source.variable(spec), f"variable {spec!r}, as given"


def _output_format(path: str) -> str:
    """``"netcdf"`` or ``"zarr"``: what ``--out`` names, by its suffix."""
    name = path.rstrip("/").lower()
    if name.endswith(NETCDF_SUFFIXES):
        if "://" in name:
            raise UsageError(
                f"--out {path!r}: a netCDF file is written to a local path; give a local "
                "path, or a Zarr store (a name ending in .zarr) for a URL."
            )
        return "netcdf"
    suffix = os.path.splitext(name.rsplit("/", 1)[-1])[1]
    if suffix in ("", ".zarr"):
        return "zarr"
    raise UsageError(
        f"--out {path!r}: xsvd writes a Zarr store (a name ending in .zarr) or a netCDF file "
        f"(a name ending in .nc), not {suffix!r}; both reopen with xsvd.open_result."
    )


def _write_netcdf(res, path: str, overwrite: bool) -> None:
    """Write ``res.to_dataset()`` to a netCDF file: beside ``path`` first, then moved into
    place, so that a failure leaves nothing (or the old file) behind."""
    import shutil
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(prefix=".xsvd-", suffix=".nc.partial", dir=folder)
    os.close(fd)
    try:
        try:
            res.to_dataset().to_netcdf(partial)
        except (ValueError, TypeError, RuntimeError) as exc:  # no engine, or one that cannot
            raise UsageError(  # write this: netCDF-4 files need h5netcdf (or netCDF4)
                f"could not write the netCDF file {path!r} ({type(exc).__name__}: {exc}); "
                "install h5netcdf for netCDF-4 files (pip install h5netcdf), or give --out a "
                "name ending in .zarr for a Zarr store."
            ) from exc
        if overwrite and os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _run_command(args: argparse.Namespace) -> int:
    import xsvd
    from xsvd.labeled.dims import SAMPLE_DIM_ATTR

    if os.path.exists(args.out) and not args.overwrite:
        raise UsageError(f"{args.out!r} already exists; choose another --out or add --overwrite.")
    fmt = _output_format(args.out)
    source = _Input(args.store, args.var, args.missing_chunks)
    data = source.data
    if args.dim:
        dims = [d for part in args.dim for d in part.split(",") if d]
    elif data.attrs.get(SAMPLE_DIM_ATTR) in data.dims:  # genotypes name their samples
        dims = [data.attrs[SAMPLE_DIM_ATTR]]
    else:
        raise UsageError(
            f"give --dim, the sample dimension(s) of {data.name!r} (the rows of the matrix), "
            f"from its dimensions {list(data.dims)}, e.g. --dim {data.dims[0]}."
        )
    missing = [d for d in dims if d not in data.dims]
    if missing:
        raise UsageError(
            f"{missing[0]!r} is not a dimension of {data.name!r}; its dimensions are "
            f"{list(data.dims)}."
        )
    if args.method == "compressed" and args.k is None:
        raise UsageError("--method compressed needs --k, the number of components to compute.")
    data, weights, weights_text = _weights(source, args.weights, dims)
    # every option flag as given: the library refuses what does not apply (--tol with
    # --method exact, say), in its words turned into the command's by command_words
    options = {opt.name: getattr(args, opt.name) for opt in option_flags()}
    if args.weights == "patterson" and options.get("center") is True:
        # PLINK 2's --pca centers at 2 p, p of the founders where the .fam has parents
        options["center"] = 2 * weights.allele_frequency
        weights_text += ", centered at 2 p"
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = xsvd.svd(data, args.k, dim=dims, weights=weights, **options)
        _say_warnings(caught, _from_xsvd)
        if args.device == "gpu":  # written and described from the host
            res = res.as_numpy()
    except ValueError as exc:
        if args.k is None and "`k=`" in str(exc):  # method auto chose the compressed SVD
            m = int(np.prod([data.sizes[d] for d in dims]))
            raise UsageError(
                f"{data.name!r} is a {m} x {data.size // max(m, 1)} (samples x features) matrix "
                "with both sides large, so --method auto chooses the compressed SVD, which "
                "needs --k, the number of components to compute (e.g. --k 10); or give "
                "--method exact (slow and memory-hungry at this size)."
            ) from exc
        raise
    seconds = time.perf_counter() - t0
    if fmt == "netcdf":
        _write_netcdf(res, args.out, args.overwrite)
    else:
        res.to_zarr(args.out, mode="w" if args.overwrite else "w-")
    _describe_result(res, seconds)
    if weights is not None:
        print(f"   weights: {weights_text}")
    kind = "netCDF file" if fmt == "netcdf" else "Zarr store"
    print(f"   wrote U, S, V to the {kind} {args.out} (reopen with xsvd.open_result)")
    return 0


def _from_xsvd(w: warnings.WarningMessage) -> bool:
    """Whether the warning ``w`` was issued by xsvd's code."""
    return os.path.abspath(w.filename).startswith(
        os.path.dirname(os.path.abspath(__file__)) + os.sep
    )


def _say_warnings(caught: list, ours) -> None:
    """The warnings that ``ours`` picks as one line each in the command's words
    (``--max-passes``, not ``max_passes=``), the others as they were."""
    for w in caught:
        if ours(w):
            text = command_words(" ".join(str(w.message).split()))
            print(f"xsvd: warning: {text}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _describe_input(da) -> None:
    backend = "dask" if da.chunks is not None else "numpy"
    shape = " x ".join(f"{d}={n}" for d, n in da.sizes.items())
    print(f"   input: {shape}, {da.dtype}, {backend}-backed, {da.nbytes / 2**20:.1f} MiB")


def _describe_result(res, seconds: float) -> None:
    U, S, V = res
    evr = res.explained_variance_ratio.values
    passes = res.settings.get("passes", 1)
    print(
        f"   method: {res.method} (k={S.size}, {passes} {'pass' if passes == 1 else 'passes'} over "
        f"the data, {res.settings.get('dtype', 'float64')} products) in {seconds:.2f} s",
    )
    print(f"   U {dict(U.sizes)}, S {dict(S.sizes)}, V {dict(V.sizes)}")
    head = " ".join(f"{100 * v:.1f}%" for v in evr[:5])
    print(
        f"   explained variance: {head}{' ...' if evr.size > 5 else ''} "
        f"(total of {evr.size}: {100 * evr.sum():.1f}%)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xsvd", description="Labeled exact and randomized SVD for xarray."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,run}")
    demo = sub.add_parser(
        "demo",
        help="run a compressed SVD on the embedded example data and save plots",
        description="Run a compressed SVD on the two embedded example data sets (genotypes "
        "with population structure, on Dask; a climate field with land, on NumPy), print "
        "what was found and save the plots as PNG files.",
    )
    demo.add_argument("--k", type=int, default=10, help="components (default %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    demo.add_argument(
        "--variants", type=int, default=40_000, help="genotype variants (default %(default)s)"
    )
    demo.add_argument(
        "--samples", type=int, default=600, help="genotype samples (default %(default)s)"
    )
    demo.add_argument(
        "--out", default="xsvd-demo-output", help="folder for the PNG plots (default %(default)s)"
    )
    demo.set_defaults(func=_demo)

    run = sub.add_parser(
        "run",
        help="decompose a variable of a Zarr store or netCDF file, or PLINK genotypes",
        description="Decompose a variable of a Zarr store or netCDF file, or the genotypes "
        "of a PLINK file set, and write U, S, V (with coordinates and settings) to a new "
        "Zarr store, or a netCDF file for an --out ending in .nc. Example, EOFs of a "
        "gridded field: xsvd run sst.zarr --var sst --dim time --k 10 --center --weights "
        "coslat --out eofs.nc. PCA of genotypes as PLINK 2's --pca: xsvd run data.bed --k "
        "10 --center --weights patterson --missing mean --out pca.zarr",
    )
    run.add_argument(
        "store",
        help="Zarr store (path or URL), netCDF file, or PLINK file set (.bed/.bim/.fam or "
        ".pgen/.pvar/.psam, or their prefix: the allele counts, variants x samples)",
    )
    run.add_argument("--var", metavar="NAME", help="variable to decompose (default: the only one)")
    run.add_argument(
        "--dim",
        action="append",
        help="sample dimension(s), the rows of the matrix (e.g. time); repeat or "
        "comma-separate (default for PLINK files: samples)",
    )
    run.add_argument(
        "--k",
        type=int,
        help="number of components (needed with --method compressed; default: all, by the "
        "exact SVD)",
    )
    run.add_argument(
        "--weights",
        metavar="{coslat,patterson,VAR}",
        help="multiply each feature by a weight: 'coslat' for sqrt(cos(latitude)) from the "
        "data's latitude coordinate (the square root, so that the covariance is weighted "
        "by cos(latitude), the area of a grid cell: the usual weighting for EOFs of gridded "
        "data); 'patterson' for genotypes, 1 / sqrt(2 p (1 - p)) per variant of allele "
        "frequency p, monomorphic variants left out (PLINK 2's PCA, with --center, which then "
        "subtracts 2 p, and --missing mean); or the name of a variable or coordinate of the "
        "input holding the weights, used as they are (for cell areas, give their square roots)",
    )
    for opt in (*option_flags(), *store_flags()):
        run.add_argument(flag(opt.name), **_argument(opt))
    run.add_argument(
        "--out",
        required=True,
        help="output: a netCDF file for a name ending in .nc, else a Zarr store (a name "
        "ending in .zarr); must not exist. Both reopen with xsvd.open_result",
    )
    run.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    run.set_defaults(func=_run_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ValueError, TypeError, OSError, ImportError) as exc:
        message = " ".join(str(exc).split())  # one line
        if args.command == "run":
            message = command_words(message)
        print(f"xsvd: error: {message}", file=sys.stderr)
        return 2


#: Options of :func:`xsvd.svd` that ``xsvd run`` has no flag of its kind for: ``k`` and
#: ``dim`` have flags of their own (``--k``, ``--dim`` repeated or comma-separated),
#: ``weights`` is ``--weights`` (a name, not an array), ``compute`` would make a lazy result,
#: which the command computes to write anyway. Every other option with a scalar value (bool,
#: int, float, a choice of strings) is a flag, made from its declaration by
#: :func:`option_flags`; ``dtype`` is not (any NumPy dtype).
NOT_FLAGS = ("k", "compute")

#: Options whose names are English words too: in the library's messages they are flags
#: only as ``name=value`` (``missing='mean'``), not as words ("missing values").
ENGLISH = ("method", "center", "missing", "device", "progress")


def option_flags() -> list[Option]:
    """The options of :func:`xsvd.svd` that ``xsvd run`` takes as flags, in its order:
    each scalar option (bool, int, float, a choice of strings) but :data:`NOT_FLAGS`."""
    return [o for o in described_options() if o.kind is not None and o.name not in NOT_FLAGS]


def store_flags() -> list[Option]:
    """The options of :func:`xsvd.open_zarr` that ``xsvd run`` takes as flags, for Zarr
    stores: ``missing_chunks``, from its declaration as the other flags."""
    from .io.zarr import open_zarr

    return [o for o in described_options(open_zarr) if o.name == "missing_chunks"]


def flag(name: str) -> str:
    """``max_passes`` -> ``--max-passes``."""
    return "--" + name.replace("_", "-")


def _argument(opt: Option) -> dict:
    """The ``add_argument`` keywords of an option: type, choices, default and help, all
    from its declaration (help: its docstring's summary, in the command's words)."""
    words = command_words(plain_text(opt.description))
    if opt.default is not None:
        default = "" if opt.kind == "bool" else " (default %(default)s)"
    else:
        default = f" (default: {command_words(plain_text(opt.default_text))})"
    if opt.compressed_only:
        words = f"compressed only: {words[:1].lower()}{words[1:]}"
    out: dict[str, Any] = dict(default=opt.default, help=words.replace("%", "%%") + default)
    if opt.kind == "bool":
        plain_switch = opt.default is False and not opt.nullable
        out["action"] = "store_true" if plain_switch else argparse.BooleanOptionalAction
    elif opt.kind == "choice":
        out["choices"] = opt.choices
    else:
        out["type"] = {"int": int, "float": float}[opt.kind]
    return out


def command_words(message: str) -> str:
    """The library's advice in the command's spelling: ``missing='mean'`` becomes
    ``--missing mean``, ``center=True`` ``--center``, ``krylov=False`` ``--no-krylov``,
    ``max_passes`` ``--max-passes`` (as words, not inside other names; the names in
    :data:`ENGLISH` only as ``name=value``)."""
    for opt in (*option_flags(), *store_flags()):
        name = opt.name
        word = rf"(?<![\w.(-]){name}"
        if opt.kind == "bool":  # a switch: no value
            off = f"--no-{flag(name)[2:]}" if opt.nullable or opt.default else f"no {flag(name)}"
            message = re.sub(rf"`?{word}=True`?", flag(name), message)
            message = re.sub(rf"`?{word}=False`?", off, message)
        message = re.sub(rf"`?{word}=['\"]?([\w.+-]+)['\"]?`?", rf"{flag(name)} \1", message)
        if name not in ENGLISH:
            message = re.sub(rf"{word}\b", flag(name), message)
    return message


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
