"""MCA of two fields: xsvd.mca against xeofs' MCA, in one process, with ratios.

    /work/venv/bin/python benchmarks/mca.py                       # two 3,000 x 90 x 180 fields
    /work/venv/bin/python benchmarks/mca.py --shape 1000x45x90    # smaller

Both fields share the samples (time) and hold 12 coupled modes plus noise.
Timed (median of ``--repeat`` runs): ``xsvd.mca`` at its defaults (the
matrix-free compressed SVD, one read of each field per pass; the squared
covariance fractions included, which read each field once more), the
scheme before issue 22 (two reads of each field per pass, without the
fractions) and xeofs' ``MCA(use_pca=False)`` with its default
solver (``solver="auto"``). Accuracy: the largest relative error of the ``k``
singular values and the largest angle of the left patterns, against a
reference: the exact SVD of the formed cross-covariance where it fits
(``n_left * n_right <= 3e7``), else ``xsvd.mca(tol=1e-13)`` (whose error
estimates are printed). This is not part of ``benchmarks/run.py`` (its cases
are single-matrix SVDs with one input each).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import xarray as xr

import xsvd


def fields(shape: tuple[int, int, int], seed: int = 0):
    """Two fields (time, lat, lon) with 12 coupled modes (amplitudes 0.8**j) and white noise."""
    n, ny, nx = shape
    rng = np.random.default_rng(seed)
    lat = np.linspace(-89, 89, ny)
    lon = np.linspace(0, 358, nx)
    modes = rng.standard_normal((n, 12)) * (0.8 ** np.arange(12))
    out = []
    for side in range(2):
        patterns = rng.standard_normal((12, ny * nx))
        data = modes @ patterns + 0.5 * rng.standard_normal((n, ny * nx))
        coords = {"time": np.arange(n), "lat": lat, "lon": lon}
        da = xr.DataArray(data.reshape(n, ny, nx), dims=("time", "lat", "lon"), coords=coords)
        out.append(da.rename(f"field{side}"))
    return out


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def angles(a, b):
    sign = np.sign((a * b).sum(axis=0))
    return 2 * np.arcsin(np.minimum(1, np.linalg.norm(a - b * sign, axis=0) / 2))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--shape", default="3000x90x180", help="time x lat x lon of each field")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.lower().split("x"))
    k = args.k
    left, right = fields(shape)
    n_feat = shape[1] * shape[2]
    print(f"two fields {shape} ({n_feat} features each), k={k}, repeat={args.repeat}")

    def run_xsvd():
        res = xsvd.mca(left, right, k, dim="time")
        res.squared_covariance_fraction  # noqa: B018  (computed on first use)
        return res

    t_x, res = timed(run_xsvd, args.repeat)

    def run_two_reads():  # the scheme before issue 22: two reads of each field per pass
        from xsvd.climate.fields import prepare_field
        from xsvd.core.randomized.operator import operator_svd

        fl, fr = prepare_field(left, "time"), prepare_field(right, "time")
        scale = 1.0 / (shape[0] - 1)
        out = operator_svd(
            lambda w: fl.t_times(fr.times(w)) * scale,
            lambda t: fr.t_times(fl.times(t)) * scale,
            (fl.shape[1], fr.shape[1]),
            k,
        )
        fl.times(out.U), fr.times(out.V)  # the scores, as mca
        # S in the data's units: each field was scaled by a power of two
        return out, fl.unscaled(fr.unscaled(out.S))

    t_o, (old, old_S) = timed(run_two_reads, args.repeat)
    from xeofs.cross import MCA

    def run_xeofs():
        model = MCA(n_modes=k, use_pca=False, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(left, right, dim="time")
        return model

    t_e, model = timed(run_xeofs, args.repeat)
    if n_feat * n_feat <= 3e7:
        ref, what = xsvd.mca(left, right, k, dim="time", method="exact"), "exact SVD of C"
    else:
        ref = xsvd.mca(left, right, k, dim="time", tol=1e-13, max_passes=30)
        rel = float(ref.errors.S_relative.max())
        what = f"xsvd.mca(tol=1e-13), estimated relative S error {rel:.1e}"
    s_ref = ref.singular_values.values
    p_ref = ref.left_patterns.values.reshape(k, -1).T

    def accuracy(S, P):
        return float(np.max(np.abs(S - s_ref) / s_ref)), float(angles(P, p_ref).max())

    acc_x = accuracy(res.singular_values.values, res.left_patterns.values.reshape(k, -1).T)
    comps = model.components()[0].transpose("mode", "lat", "lon").values.reshape(k, -1).T
    acc_e = accuracy(model.data["singular_values"].values, comps)
    acc_o = accuracy(old_S, old.U)
    frac_x = res.squared_covariance_fraction.values
    frac_e = model.squared_covariance_fraction().values
    print(f"reference: {what}")
    print(f"{'tool':<34}{'time s':>9}{'max rel S err':>15}{'max angle':>12}")
    print(f"{'xsvd.mca (defaults)':<34}{t_x:>9.2f}{acc_x[0]:>15.1e}{acc_x[1]:>12.1e}")
    print(f"{'  two reads per pass (before)':<34}{t_o:>9.2f}{acc_o[0]:>15.1e}{acc_o[1]:>12.1e}"
          "  (no fractions)")  # fmt: skip
    print(f"{'xeofs MCA (use_pca=False, auto)':<34}{t_e:>9.2f}{acc_e[0]:>15.1e}{acc_e[1]:>12.1e}")
    print(f"speed-up xsvd / xeofs: {t_e / t_x:.2f}x; passes (reads of each field): "
          f"{res.settings['passes']}, before {2 * old.passes}; "
          f"largest fraction difference: {np.abs(frac_x - frac_e).max():.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
