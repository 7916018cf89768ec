"""The benchmark cases: data, contenders and reference spectrum of each.

A builder ``build_<name>(cfg, log)`` makes the data, computes (or reuses) the
high-accuracy reference singular values and returns a :class:`Case` whose
tools close over the data; ``case.close()`` drops the data (and deletes any
store written to disk).
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import dask
import dask.array as da
import numpy as np
import scipy.linalg
import xarray as xr
from _harness import PEER, REFERENCE, SUBJECT, Output, Tool, Wrap

import xsvd

GENOTYPE_DIMS = ("variants", "samples")
DASK = "dask svd_compressed (compute=True)"
DASK_BLAS1 = "dask svd_compressed (compute=True, 1 BLAS thread)"

# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """Sizes and solver settings shared by all cases (CLI options of run.py)."""

    k: int = 10
    n_power_iter: int = 2
    n_oversamples: int = 10
    seed: int = 0
    n_variants: int = 100_000
    n_samples: int = 5_000
    chunk_variants: int = 20_000
    zarr_variants: int = 400_000
    zarr_dir: str | None = None  #: parent folder of the temporary store
    keep_zarr: bool = False
    climate_shape: tuple[int, int, int] = (3000, 90, 180)
    climate_modes: int = 3
    dask_lazy_rows: bool = True  #: also time svd_compressed(compute=False)
    accuracy_seeds: int = 5  #: seeds of the (untimed) accuracy sweep; 1 = timed seed only

    def quick(self) -> Config:
        """Small sizes for a smoke run (well under a minute)."""
        return replace(
            self,
            n_variants=20_000,
            n_samples=1_000,
            chunk_variants=4_000,
            zarr_variants=40_000,
            climate_shape=(240, 36, 72),
        )

    @property
    def solver(self) -> dict:
        """The randomized-solver settings every tool gets (in its own spelling)."""
        return {
            "k": self.k,
            "n_power_iter": self.n_power_iter,
            "n_oversamples": self.n_oversamples,
            "seed": self.seed,
        }


@dataclass
class Goal:
    """A claim to check: ``peer`` at least ``min_ratio`` times slower than xsvd,
    and (if ``accuracy``) xsvd's max relative error no larger than the peer's."""

    peer: str
    min_ratio: float
    accuracy: bool = False


@dataclass
class Case:
    """Data, contenders and reference spectrum of one benchmark case."""

    name: str
    description: str
    tools: list[Tool]
    reference_s: np.ndarray
    reference_how: str
    reference_evr: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    goals: list[Goal] = field(default_factory=list)
    close: Callable[[], None] = lambda: None


Log = Callable[[str], None]

# --------------------------------------------------------------------------- shared pieces


def random_genotypes(n_variants: int, n_samples: int, chunk_variants: int, seed: int):
    """Lazy uint8 matrix (variants x samples) of 0/1/2, one chunk per block of variants."""
    return da.random.default_rng(seed).integers(
        0,
        3,
        size=(n_variants, n_samples),
        chunks=(chunk_variants, n_samples),
        dtype=np.uint8,
    )


def _block_gram(block: np.ndarray, rows_at_once: int = 8192) -> np.ndarray:
    """``block.T @ block`` in float64, exact for small integer data.

    Integer blocks whose every partial sum stays below 2**24 are multiplied
    in float32, where such integer sums are exact whatever the summation
    order (so the result equals the float64 product, at half the cost);
    anything else is multiplied in float64.
    """
    n = block.shape[1]
    gram = np.zeros((n, n), dtype=np.float64)
    exact32 = block.dtype.kind in "ui" and (
        block.shape[0] * float(np.abs(block).max()) ** 2 < 2**24
    )
    ftype = np.float32 if exact32 else np.float64
    for r0 in range(0, block.shape[0], rows_at_once):
        sub = block[r0 : r0 + rows_at_once].astype(ftype)
        gram += sub.T @ sub
    return gram


def gram_singular_values(blocks: Iterable[np.ndarray], k: int) -> np.ndarray:
    """Top-``k`` singular values of the row-stacked blocks from their Gram matrix.

    The Gram matrix (features x features) is accumulated block by block in
    float64; its top eigenvalues come from LAPACK (``eigh``) and the singular
    values are their square roots.
    """
    gram = None
    for block in blocks:
        g = _block_gram(np.asarray(block))
        if gram is None:
            gram = g
        else:
            gram += g
    if gram is None:
        raise ValueError("no blocks")
    n = gram.shape[0]
    evals = scipy.linalg.eigh(gram, eigvals_only=True, subset_by_index=[n - k, n - 1])
    return np.sqrt(np.clip(evals[::-1], 0.0, None))


def _dask_blocks(x) -> Iterator[np.ndarray]:
    """The row blocks of a Dask array, computed one at a time."""
    for i in range(x.numblocks[0]):
        yield x.blocks[i].compute()


def _numpy_blocks(x: np.ndarray, rows: int) -> Iterator[np.ndarray]:
    for r0 in range(0, x.shape[0], rows):
        yield x[r0 : r0 + rows]


_REFERENCES: dict[tuple, tuple[np.ndarray, float]] = {}


def _cached_reference(key: tuple, compute: Callable[[], np.ndarray], log: Log):
    """Reference singular values (and the seconds they took), computed once per key."""
    if key not in _REFERENCES:
        log(f"  reference {key[0]}: computing ...")
        t0 = time.perf_counter()
        s = compute()
        _REFERENCES[key] = (s, time.perf_counter() - t0)
        log(f"  reference ready in {_REFERENCES[key][1]:.1f} s: s[:3] = {s[:3]}")
    return _REFERENCES[key]


GRAM_HOW = (
    "sqrt of the top-k eigenvalues (LAPACK eigh) of the Gram matrix X^T X, "
    "accumulated block by block in float64 (integer blocks multiplied exactly in float32)"
)


def _xsvd_genotype(gt: xr.DataArray, cfg: Config, seed: int) -> Output:
    """xsvd's compressed SVD of a variants x samples matrix (samples = rows)."""
    res = gt.svd.compressed(
        k=cfg.k,
        dim="samples",
        n_power_iter=cfg.n_power_iter,
        n_oversamples=cfg.n_oversamples,
        seed=seed,
    )
    info = {
        "xsvd_method": res.method,
        "xsvd_passes_reported": res.settings.get("passes"),
        "xsvd_stripes": res.settings.get("stripes"),
        "xsvd_dtype": res.settings.get("dtype"),
    }
    return Output(s=np.asarray(res.S.values), info=info)


def _dask_svd(x, cfg: Config, compute: bool, seed: int) -> Output:
    """``dask.array.linalg.svd_compressed``; u, s and v computed together."""
    u, s, v = da.linalg.svd_compressed(
        x,
        cfg.k,
        n_power_iter=cfg.n_power_iter,
        n_oversamples=cfg.n_oversamples,
        seed=seed,
        compute=compute,
    )
    u, s, v = dask.compute(u, s, v)
    return Output(s=np.asarray(s))


def _dask_svd_one_blas_thread(x, cfg: Config, seed: int) -> Output:
    """svd_compressed(compute=True) with BLAS limited to one thread per call.

    The threaded scheduler already runs one task per core, and each task's
    BLAS call otherwise starts its own threads (oversubscription); xsvd
    applies the same limit inside its tasks.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _dask_svd(x, cfg, compute=True, seed=seed)


def _dask_tools(load: Callable[[Wrap], object], cfg: Config, lazy_note: str) -> list[Tool]:
    """svd_compressed: compute=True, the same with one BLAS thread, compute=False."""
    settings = dict(cfg.solver, iterator="power")
    tools = [
        Tool(
            DASK,
            lambda wrap, seed: _dask_svd(load(wrap), cfg, compute=True, seed=seed),
            settings=dict(settings, compute=True),
            counted=True,
            notes="dask's multi-pass mode: persists each iterate, re-reads the input",
        ),
        Tool(
            DASK_BLAS1,
            lambda wrap, seed: _dask_svd_one_blas_thread(load(wrap), cfg, seed),
            settings=dict(settings, compute=True, blas_threads=1),
            seeded=False,
            passes=2 * cfg.n_power_iter + 2,
            passes_how="products with the matrix: same graph as the compute=True row",
            notes="as compute=True, inside threadpoolctl.threadpool_limits(1, 'blas') "
            "(no BLAS oversubscription; xsvd does this in its tasks)",
        ),
    ]
    if cfg.dask_lazy_rows:
        tools.append(
            Tool(
                "dask svd_compressed (compute=False)",
                lambda wrap, seed: _dask_svd(load(wrap), cfg, compute=False, seed=seed),
                settings=dict(settings, compute=False),
                counted=True,
                seeded=False,
                notes=lazy_note,
            )
        )
    return tools


def _xsvd_settings(cfg: Config, **extra) -> dict:
    return dict(cfg.solver, dim="samples", **extra)


# --------------------------------------------------------------------------- genotype


def build_genotype(cfg: Config, log: Log) -> Case:
    """Persisted (in-memory) Dask uint8 genotypes: xsvd vs dask svd_compressed."""
    shape = (cfg.n_variants, cfg.n_samples)
    x = random_genotypes(*shape, cfg.chunk_variants, cfg.seed).persist()
    state = {"x": x}
    key = ("random-genotypes", *shape, cfg.chunk_variants, cfg.seed, cfg.k)
    ref, ref_s = _cached_reference(key, lambda: gram_singular_values(_dask_blocks(x), cfg.k), log)

    def load(wrap):
        return wrap(state["x"])

    xsvd_tool = Tool(
        "xsvd compressed",
        lambda wrap, seed: _xsvd_genotype(xr.DataArray(load(wrap), dims=GENOTYPE_DIMS), cfg, seed),
        role=SUBJECT,
        settings=_xsvd_settings(cfg),
        counted=True,
    )
    tools = [xsvd_tool] + _dask_tools(
        load, cfg, "one graph: every chunk is produced once and held while needed"
    )
    return Case(
        name="genotype",
        description=(
            f"persisted Dask uint8 matrix {shape[0]:,} x {shape[1]:,} "
            f"(chunks {cfg.chunk_variants:,} x {shape[1]:,}, {x.nbytes / 1e9:.2f} GB), "
            f"random 0/1/2, uncentered; k={cfg.k}, q={cfg.n_power_iter}, "
            f"p={cfg.n_oversamples}"
        ),
        tools=tools,
        reference_s=ref,
        reference_how=GRAM_HOW,
        meta={
            "shape": shape,
            "chunks": [cfg.chunk_variants, cfg.n_samples],
            "n_chunks": int(np.prod(x.numblocks)),
            "dtype": "uint8",
            "nbytes": int(x.nbytes),
            "reference_s": ref_s,
        },
        goals=[Goal(DASK, 3.0, accuracy=True), Goal(DASK_BLAS1, 3.0)],
        close=state.clear,
    )


# --------------------------------------------------------------------------- numpy


def build_numpy(cfg: Config, log: Log) -> Case:
    """The genotype matrix as a NumPy array: xsvd vs scikit-learn's randomized_svd."""
    from sklearn.utils.extmath import randomized_svd

    shape = (cfg.n_variants, cfg.n_samples)
    x = random_genotypes(*shape, cfg.chunk_variants, cfg.seed).compute()
    state = {"x": x}
    key = ("random-genotypes", *shape, cfg.chunk_variants, cfg.seed, cfg.k)
    ref, ref_s = _cached_reference(
        key, lambda: gram_singular_values(_numpy_blocks(x, cfg.chunk_variants), cfg.k), log
    )
    q = cfg.n_power_iter

    def run_sklearn(wrap, seed):
        _, s, _ = randomized_svd(
            state["x"],
            cfg.k,
            n_oversamples=cfg.n_oversamples,
            n_iter=q,
            random_state=seed,
        )
        return Output(s=np.asarray(s))

    tools = [
        Tool(
            "xsvd compressed",
            lambda wrap, seed: _xsvd_genotype(
                xr.DataArray(state["x"], dims=GENOTYPE_DIMS), cfg, seed
            ),
            role=SUBJECT,
            settings=_xsvd_settings(cfg),
            passes=q + 1,
            passes_how="reads of the matrix (q + 1, as xsvd reports)",
        ),
        Tool(
            "sklearn randomized_svd",
            run_sklearn,
            settings={
                "n_components": cfg.k,
                "n_iter": q,
                "n_oversamples": cfg.n_oversamples,
                "random_state": cfg.seed,
                "power_iteration_normalizer": "auto",
            },
            passes=2 * q + 2,
            passes_how="products with the full matrix (2 n_iter + 2, from sklearn's code)",
            notes="uint8 input: each product converts the matrix to float64",
        ),
    ]
    return Case(
        name="numpy",
        description=(
            f"the genotype matrix in memory as NumPy uint8 {shape[0]:,} x {shape[1]:,} "
            f"({x.nbytes / 1e9:.2f} GB); k={cfg.k}, q={q}, p={cfg.n_oversamples}"
        ),
        tools=tools,
        reference_s=ref,
        reference_how=GRAM_HOW,
        meta={"shape": shape, "dtype": "uint8", "nbytes": int(x.nbytes), "reference_s": ref_s},
        goals=[Goal("sklearn randomized_svd", 2.0)],
        close=state.clear,
    )


# --------------------------------------------------------------------------- zarr


def _write_zarr(path: str, cfg: Config) -> float:
    """Write the random genotype matrix to a Zarr store; returns the seconds taken."""
    x = random_genotypes(cfg.zarr_variants, cfg.n_samples, cfg.chunk_variants, cfg.seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3: consolidated-metadata notice
        xr.Dataset({"genotype": (GENOTYPE_DIMS, x)}).to_zarr(path, mode="w", consolidated=False)
    return time.perf_counter() - t0


def _store_size(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
    )


def build_zarr(cfg: Config, log: Log) -> Case:
    """A larger genotype matrix streamed from a Zarr store (never persisted)."""
    tmpdir = tempfile.mkdtemp(prefix="xsvd-bench-", dir=cfg.zarr_dir)
    path = os.path.join(tmpdir, "genotypes.zarr")
    shape = (cfg.zarr_variants, cfg.n_samples)
    log(f"  writing {shape[0]:,} x {shape[1]:,} uint8 store to {path} ...")
    write_s = _write_zarr(path, cfg)
    stored = _store_size(path)
    log(f"  written in {write_s:.1f} s ({stored / 1e9:.2f} GB on disk)")

    def close():
        if cfg.keep_zarr:
            log(f"  kept {path}")
        else:
            shutil.rmtree(tmpdir, ignore_errors=True)

    try:
        key = ("zarr-genotypes", path, cfg.k)
        ref, ref_s = _cached_reference(
            key,
            lambda: gram_singular_values(
                _dask_blocks(da.from_zarr(path, component="genotype")), cfg.k
            ),
            log,
        )
    except BaseException:
        close()
        raise

    def open_xarray(wrap):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = xr.open_zarr(path, chunks={}, consolidated=False)["genotype"]
        return g.copy(data=wrap(g.data))

    def open_dask(wrap):
        return wrap(da.from_zarr(path, component="genotype"))

    chunks_xr = open_xarray(lambda a: a).data.chunksize
    chunks_da = open_dask(lambda a: a).chunksize
    if chunks_xr != chunks_da:
        warnings.warn(
            f"xarray and dask see different chunks: {chunks_xr} vs {chunks_da}", stacklevel=2
        )
    xsvd_tool = Tool(
        "xsvd compressed",
        lambda wrap, seed: _xsvd_genotype(open_xarray(wrap), cfg, seed),
        role=SUBJECT,
        settings=_xsvd_settings(cfg, input="xr.open_zarr(path, chunks={})"),
        counted=True,
    )
    tools = [xsvd_tool] + _dask_tools(
        open_dask,
        cfg,
        "one graph: every chunk is read once and held in memory while needed",
    )
    for t in tools[1:]:
        t.settings["input"] = "da.from_zarr(path)"
    n_chunks = -(-shape[0] // cfg.chunk_variants)
    return Case(
        name="zarr",
        description=(
            f"uint8 {shape[0]:,} x {shape[1]:,} ({shape[0] * shape[1] / 1e9:.2f} GB) streamed "
            f"from a Zarr v3 store ({stored / 1e9:.2f} GB zstd on disk, chunks "
            f"{cfg.chunk_variants:,} x {shape[1]:,}); k={cfg.k}, q={cfg.n_power_iter}, "
            f"p={cfg.n_oversamples}"
        ),
        tools=tools,
        reference_s=ref,
        reference_how=GRAM_HOW + " (read from the store)",
        meta={
            "shape": shape,
            "chunks": list(chunks_da),
            "n_chunks": n_chunks,
            "dtype": "uint8",
            "nbytes": shape[0] * shape[1],
            "store_bytes": stored,
            "store_path": path,
            "write_s": write_s,
            "reference_s": ref_s,
        },
        close=close,
    )


# --------------------------------------------------------------------------- climate


def _sklearn_auto_n_iter(k: int, shape: tuple[int, int]) -> int:
    """What ``n_iter="auto"`` becomes in sklearn's randomized_svd (its documented rule)."""
    return 7 if k < 0.1 * min(shape) else 4


def build_climate(cfg: Config, log: Log) -> Case:
    """Centered, area-weighted EOFs of a field with land NaN: xsvd vs xeofs."""
    import xeofs

    n_time, n_lat, n_lon = cfg.climate_shape
    field_ = xsvd.datasets.climate_field(n_time, n_lat, n_lon, n_modes=cfg.climate_modes)
    weights = xsvd.coslat_weights(field_)
    state = {"field": field_}
    k, q, p = cfg.k, cfg.n_power_iter, cfg.n_oversamples
    n_ocean = int(field_.isel(time=0).notnull().sum())

    def run_exact(wrap, seed):
        res = state["field"].svd.exact(dim="time", center=True, weights=weights, k=k)
        return Output(
            s=np.asarray(res.S.values),
            evr=np.asarray(res.explained_variance_ratio.values),
            info={"xsvd_method": res.method},
        )

    def run_compressed(solver: dict):
        def run(wrap, seed):
            res = state["field"].svd.compressed(
                k=k, dim="time", center=True, weights=weights, seed=seed, **solver
            )
            return Output(
                s=np.asarray(res.S.values),
                evr=np.asarray(res.explained_variance_ratio.values),
                info={
                    "xsvd_method": res.method,
                    "xsvd_passes_reported": res.settings.get("passes"),
                    "xsvd_estimated_error": res.settings.get("estimated_error"),
                },
            )

        return run

    def run_xeofs(solver_kwargs: dict | None):
        def run(wrap, seed):
            kwargs = {} if solver_kwargs is None else {"solver": "randomized"}
            model = xeofs.single.EOF(
                n_modes=k,
                use_coslat=True,
                random_state=seed,
                solver_kwargs=solver_kwargs,
                **kwargs,
            )
            model.fit(state["field"], dim="time")
            return Output(
                s=np.asarray(model.singular_values().values),
                evr=np.asarray(model.explained_variance_ratio().values),
            )

        return run

    log("  reference: xsvd exact ...")
    t0 = time.perf_counter()
    ref = run_exact(None, None)
    ref_s = time.perf_counter() - t0
    gc.collect()
    q_auto = _sklearn_auto_n_iter(k, (n_time, n_ocean))
    xeofs_common = {"n_modes": k, "use_coslat": True, "center": True, "random_state": cfg.seed}
    xeofs_how = "products with its NaN-free, centered, weighted copy (2 n_iter + 2, sklearn)"
    xeofs_note = (
        "singular values of the centered sqrt(cos lat)-weighted ocean matrix "
        "(same matrix as xsvd); EVR = s^2/(n-1) / total variance"
    )
    xsvd_common = {"dim": "time", "center": True, "weights": "sqrt(cos lat)"}
    tools = [
        Tool(
            "xsvd compressed (defaults)",
            run_compressed({}),
            role=SUBJECT,
            settings=dict(xsvd_common, k=k, seed=cfg.seed),
            passes_how="reads of the matrix, as xsvd reports (until converged, 8 at most)",
            notes="default stopping: tol=1e-6 on the estimated errors, at most 8 passes",
        ),
        Tool(
            "xsvd compressed (n_power_iter=4)",
            run_compressed({"n_power_iter": 4}),
            role=PEER,
            settings=dict(xsvd_common, k=k, n_power_iter=4, seed=cfg.seed),
            passes=5,
            passes_how="reads of the matrix (q + 1, as xsvd reports)",
            notes="the fewest passes at which xsvd is at least as accurate as xeofs' default",
        ),
        Tool(
            f"xsvd compressed (n_power_iter={q})",
            run_compressed({"n_power_iter": q, "n_oversamples": p}),
            role=PEER,
            settings=dict(xsvd_common, **cfg.solver),
            passes=q + 1,
            passes_how="reads of the matrix (q + 1, as xsvd reports)",
            notes="the same q and p as the xeofs row below",
        ),
        Tool(
            "xsvd exact",
            run_exact,
            role=REFERENCE,
            seeded=False,
            settings={"dim": "time", "center": True, "weights": "sqrt(cos lat)", "k": k},
            passes_how="LAPACK SVD in memory",
            notes="the accuracy reference",
        ),
        Tool(
            "xeofs EOF (default solver)",
            run_xeofs(None),
            role=PEER,
            settings=dict(xeofs_common, solver="auto", n_iter=f"auto ({q_auto})"),
            passes=2 * q_auto + 2,
            passes_how=xeofs_how,
            notes=f"sklearn randomized_svd with n_iter='auto' = {q_auto}; " + xeofs_note,
        ),
        Tool(
            f"xeofs EOF (n_iter={q})",
            run_xeofs({"n_iter": q, "n_oversamples": p}),
            role=PEER,
            settings=dict(xeofs_common, solver="randomized", n_iter=q, n_oversamples=p),
            passes=2 * q + 2,
            passes_how=xeofs_how,
            notes="same q and p as xsvd; " + xeofs_note,
        ),
    ]
    return Case(
        name="climate",
        description=(
            f"NumPy float64 field time x lat x lon = {n_time:,} x {n_lat} x {n_lon} "
            f"({n_ocean:,} ocean points, land NaN; {cfg.climate_modes} planted modes + noise), "
            f"dim='time', center=True, weights sqrt(cos lat); k={k}, q={q}, p={p}"
        ),
        tools=tools,
        reference_s=ref.s,
        reference_evr=ref.evr,
        reference_how="xsvd exact (LAPACK SVD of the centered, weighted ocean matrix)",
        meta={
            "shape": [n_time, n_lat, n_lon],
            "ocean_points": n_ocean,
            "dtype": "float64",
            "nbytes": int(field_.nbytes),
            "reference_s": ref_s,
        },
        goals=[Goal("xeofs EOF (default solver)", 3.0, accuracy=True)],
        close=state.clear,
    )


CASES: dict[str, Callable[[Config, Log], Case]] = {
    "genotype": build_genotype,
    "numpy": build_numpy,
    "zarr": build_zarr,
    "climate": build_climate,
}
