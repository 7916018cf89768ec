"""EOF analysis of real sea-surface temperatures: the statistics papers report, and rotation.

The data are the winter (November to March) mean SST anomalies of the North
and tropical Pacific, 1962/63 to 2011/12, that the ``eofs`` package ships as
example data (time 50 x latitude 18 x longitude 30, NaN over land); their
leading EOF is the El Nino pattern. The script

* decomposes the anomalies with ``sqrt(cos(lat))`` area weights;
* reports the eigenvalues with North et al. (1982) typical errors, and which
  components they separate;
* checks xsvd's eigenvalues, PCs and correlation maps against ``eofs``;
* expresses the EOFs as correlation and covariance (regression) maps with the
  SST field, and the PCs with unit variance;
* rotates the four leading components (varimax and promax);
* draws the spectrum with its error bars, the PC time series and a map per
  component, as PNG files in the folder given by ``--out``.

Needs eofs (for the data) and matplotlib: ``pip install eofs matplotlib``.
Run it with ``python examples/climate_sst.py --out figures``; ``--small``
draws only the first figures (for the test suite).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import xarray as xr

import xsvd  # registers DataArray.svd


def load_sst() -> xr.DataArray:
    """eofs' NOAA SST anomalies (time, latitude, longitude), loaded into memory."""
    try:
        from eofs.examples import example_data_path
    except ImportError as exc:  # the test suite skips on this message
        raise ModuleNotFoundError(
            "No module named 'eofs': this example reads the NOAA SST anomalies that the eofs "
            "package ships; pip install eofs"
        ) from exc
    # [load]
    with xr.open_dataset(example_data_path("sst_ndjfm_anom.nc")) as ds:
        sst = ds["sst"].load()
    sst.attrs["units"] = "degC"  # anomalies in °C (the file gives no units)
    # [load end]
    return sst


def main(argv=None):
    parser = argparse.ArgumentParser(description="EOF statistics of NOAA Pacific SST.")
    parser.add_argument("--out", default="climate_sst_figures", help="folder for the PNG files")
    parser.add_argument("--small", action="store_true", help="draw only the first figures")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    sst = load_sst()
    land = sst.isnull().all("time")
    print(f"SST anomalies {dict(sst.sizes)}; {int(land.sum())} of {land.size} cells are land")

    # [decompose]
    w = xsvd.coslat_weights(sst)  # area weights sqrt(cos(lat))
    res = sst.svd(dim="time", center=True, weights=w)  # all 50 components (exact SVD)
    # [decompose end]
    print(res)

    # [north]
    lam = res.eigenvalues()  # S**2 / (n - 1): variances, in degC**2
    err = res.north_errors()  # North et al. (1982): lam * sqrt(2 / n)
    evr = res.explained_variance_ratio
    evr_err = res.north_errors(ratio=True)
    gap = lam.diff("component", label="lower")  # lam[i+1] - lam[i] (negative)
    separated = (-gap > err.isel(component=slice(0, -1))).values  # from the next one
    # [north end]
    print("\nEigenvalues with North et al. (1982) typical errors:")
    for i in range(6):
        sep = "separated from the next" if separated[i] else "NOT separated from the next"
        print(
            f"  EOF {i + 1}: {float(lam[i]):7.3f} ± {float(err[i]):6.3f} degC**2  "
            f"({100 * float(evr[i]):4.1f}% ± {100 * float(evr_err[i]):3.1f}%)  {sep}"
        )

    # [maps]
    pcs = res.pcs(scaling="unit")  # unit variance (ddof=1), as eofs' pcscaling=1
    corr = res.correlation_maps(sst)  # eofs' eofsAsCorrelation, NaN over land
    cov = res.covariance_maps(sst)  # eofs' eofsAsCovariance: degC per std of the PC
    # [maps end]
    print(f"\nPCs with unit variance: std (ddof=1) = {pcs.std('time', ddof=1).values[:3].round(6)}")
    nan_is_land = bool((corr.isnull().all("component") == land).all())
    print(f"correlation maps {dict(corr.sizes)}, NaN exactly over land: {nan_is_land}")
    print(f"covariance maps in {cov.attrs['units']}: EOF 1 ranges {_range(cov[0])}")

    # eofs' own results, for comparison (signs of EOFs are arbitrary: align them)
    from eofs.xarray import Eof

    solver = Eof(sst, weights=w.values[:, None])
    sign = np.sign((res.V[:3] * solver.eofs(neofs=3).values).sum(["latitude", "longitude"]))
    diffs = {
        "eigenvalues": abs(lam[:10] - solver.eigenvalues(neigs=10).values).max(),
        "PCs": abs(pcs[:, :3] * sign - solver.pcs(npcs=3, pcscaling=1).values).max(),
        "correlation maps": abs(corr[:3] * sign - solver.eofsAsCorrelation(neofs=3).values).max(),
    }
    shown = ", ".join(f"{k} {float(v):.0e}" for k, v in diffs.items())
    print(f"Largest differences from eofs: {shown}")

    # [rotate]
    rot = res.rotate(4, method="varimax")  # orthogonal: uncorrelated PCs
    obl = res.rotate(4, method="promax", power=4)  # oblique: correlated PCs
    rot_corr = rot.correlation_maps(sst)
    # [rotate end]
    print(f"\n{rot}")
    print(
        "Explained variance of the 4 leading components, unrotated / varimax / promax (%):\n  "
        + "\n  ".join(
            f"EOF {i}: {100 * float(a):5.1f} {100 * float(b):5.1f} {100 * float(c):5.1f}"
            for i, (a, b, c) in enumerate(
                zip(
                    evr[:4].values,
                    rot.explained_variance_ratio.values,
                    obl.explained_variance_ratio.values,
                    strict=True,
                ),
                start=1,
            )
        )
    )
    total = (float(evr[:4].sum()), float(rot.explained_variance_ratio.sum()))
    print(f"Together: {100 * total[0]:.1f}% and {100 * total[1]:.1f}% (varimax keeps the sum)")
    largest = np.abs(obl.pc_correlation.values - np.eye(4)).max()
    print(f"Largest correlation between promax PCs: {largest:.2f}")

    # ------------------------------------------------------------ figures
    figures = draw(res, err, corr, cov, rot, rot_corr, out, small=args.small)
    print(f"\nWrote {len(figures)} figures to {out}/: " + ", ".join(p.name for p in figures))


def draw(res, err, corr, cov, rot, rot_corr, out: Path, *, small: bool) -> list[Path]:
    """The figures of the guide, as PNG files in ``out``."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    paths = []

    def save(fig, name):
        path = out / name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)

    # [figures]
    # the spectrum with North's error bars
    n = 10
    pct = 100 * res.explained_variance_ratio[:n]
    pct_err = 100 * res.north_errors(ratio=True)[:n]
    fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
    ax.errorbar(pct.component.values, pct.values, yerr=pct_err.values, fmt="o", capsize=3)
    ax.set(xlabel="component", ylabel="explained variance (%)", xticks=pct.component.values)
    ax.set_title("Explained variance with North et al. (1982) typical errors")
    save(fig, "spectrum.png")

    # the PCs with unit variance, and the EOFs as correlation maps
    save(res.plot.timeseries(n=3), "pcs.png")  # standardized: unit variance
    corr.attrs["long_name"] = "correlation of SST with the PC"
    save(res.plot.components(n=3, values=corr, vmin=-1, vmax=1), "eofs_correlation.png")
    if not small:
        cov.attrs["long_name"] = "SST per std of the PC"
        save(res.plot.components(n=3, values=cov), "eofs_covariance.png")
        # the varimax-rotated components
        rot_corr.attrs["long_name"] = "correlation of SST with the varimax PC"
        fig = rot.plot.components(n=4, values=rot_corr, vmin=-1, vmax=1)
        save(fig, "varimax_correlation.png")
        fig = rot.plot.timeseries(n=4)
        fig.suptitle("Varimax-rotated principal components of SST")
        save(fig, "varimax_pcs.png")
    # [figures end]
    return paths


def _range(da: xr.DataArray) -> str:
    return f"{float(da.min()):.2f} to {float(da.max()):.2f}"


if __name__ == "__main__":
    main()
