"""EOFs of a sea-surface-temperature field with xsvd.

Empirical orthogonal functions (EOFs) are the right singular vectors of a
(time x space) anomaly matrix. This example decomposes the synthetic field
``xsvd.datasets.climate_field()``, which has a land mask (NaN over land at
every time step) and three *planted* modes that are known exactly, and shows
how to:

* area-weight the grid with ``sqrt(cos(lat))`` and remove the time mean
  (``center=True``);
* read the explained variance of each EOF;
* see that land cells come back as NaN in ``V`` (they are left out of the
  solve, not filled);
* turn ``V`` back into EOF patterns (``V / weights``) and check them against
  the planted modes (``return_modes=True``);
* project new data (a second realization of the same climate, with different
  noise) onto the EOFs with ``res.project``;
* rebuild the field from ``k`` components with ``res.reconstruct`` and
  measure the error.

Run it with ``python examples/climate_eofs.py`` (``--small`` for a tiny grid).
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

import xsvd


def main(argv=None):
    parser = argparse.ArgumentParser(description="EOFs of a synthetic SST field with xsvd.")
    parser.add_argument("--small", action="store_true", help="tiny grid (runs in about a second)")
    args = parser.parse_args(argv)

    size = dict(n_time=60, n_lat=12, n_lon=24) if args.small else {}  # default: 240 x 36 x 72
    sst, modes = xsvd.datasets.climate_field(**size, seed=0, return_modes=True)
    n_modes = modes.sizes["mode"]
    k = n_modes + 2  # a couple more components than there are planted modes

    land = sst.isnull().all("time")
    sizes = ", ".join(f"{d}={n}" for d, n in sst.sizes.items())
    print(f"Input: {sst.name} ({sizes}); {int(land.sum())} of {land.size} cells are land (NaN)")

    # ------------------------------------------------------------------ the SVD
    # Area weights sqrt(cos(lat)): squared values are then weighted by cos(lat).
    w = xsvd.coslat_weights(sst)
    res = sst.svd(k=k, dim="time", center=True, weights=w)  # method chosen by shape
    U, S, V = res
    print(f"\n{res}")
    print(f"U {dict(U.sizes)}, S {dict(S.sizes)}, V {dict(V.sizes)}")

    # The randomized solver gives the same leading components here.
    fast = sst.svd.compressed(k=k, dim="time", center=True, weights=w, seed=0)
    rel = float((abs(fast.S - S) / S).isel(component=slice(None, n_modes)).max())
    print(f"method='compressed' agrees on the first {n_modes} singular values to {rel:.0e}")

    # ------------------------------------------------------- explained variance
    evr = res.explained_variance_ratio.values
    print("\nExplained variance (share of the centered, weighted total):")
    for c, (r, cum) in enumerate(zip(evr, np.cumsum(evr), strict=True)):
        print(f"  EOF {c + 1}: {100 * r:5.1f}%   cumulative {100 * cum:5.1f}%")

    # ---------------------------------------------------------- land is NaN in V
    v_nan = V.isnull().all("component")
    same = bool((v_nan == land).all())
    print(f"\nV is NaN at {int(v_nan.sum())} cells, exactly the land cells: {same}")

    # ------------------------------------------- EOF patterns vs planted modes
    # V holds the *weighted* patterns; dividing by the weights gives the EOFs on
    # the grid. The planted patterns are orthonormal under cos(lat) area
    # weights, so compare them with the same area-weighted inner product
    # (a congruence coefficient; 1 means the same pattern up to sign).
    eofs = (V / w).isel(component=slice(None, n_modes))
    coslat = np.cos(np.deg2rad(sst.lat))

    def inner(a, b):
        return (a * b * coslat).sum(["lat", "lon"])  # sum() skips land (NaN)

    congruence = inner(eofs, modes.patterns) / np.sqrt(
        inner(eofs, eofs) * inner(modes.patterns, modes.patterns)
    )
    print("\n|congruence| of the EOF patterns (V / weights) with the planted patterns:")
    print("         " + "".join(f"  mode {m}" for m in modes["mode"].values))
    for c in range(n_modes):
        row = "".join(f"{abs(float(x)):8.3f}" for x in congruence.isel(component=c).values)
        print(f"  EOF {c + 1}:{row}")

    # Without noise, singular value k would be amplitude[k] * sqrt(n_time *
    # sum of cos(lat) over the ocean) (see the climate_field docstring).
    ocean_coslat = coslat.broadcast_like(land).where(~land)
    planted_S = modes.amplitude * np.sqrt(sst.sizes["time"] * float(ocean_coslat.sum()))
    found = " ".join(f"{float(s):.1f}" for s in S[:n_modes])
    planted = " ".join(f"{float(s):.1f}" for s in planted_S)
    print(f"singular values: {found} (planted, without noise: {planted})")

    # --------------------------------------------------------- project new data
    # A second realization of the same climate: same grid, land and planted
    # modes, different noise. Scores are on the scale of U.
    new = xsvd.datasets.climate_field(**size, seed=1)
    scores = res.project(new)
    first = dict(component=slice(None, n_modes))
    r_u = xr.corr(scores.isel(first), U.isel(first), dim="time")
    print(
        f"\nProjected new data: scores {dict(scores.sizes)}; correlation with U per EOF: "
        + " ".join(f"{float(r):.3f}" for r in r_u.values)
    )

    # ------------------------------------------------- reconstruct from k EOFs
    print("\nRank-k reconstruction (the noise has a standard deviation of 0.2 degC):")
    for kk in range(1, k + 1):
        rec = res.reconstruct(k=kk)  # the first kk components of the same result
        rms = float(np.sqrt(((rec - sst) ** 2).mean()))  # mean() skips land (NaN)
        print(f"  k={kk}: RMS error {rms:.3f} {sst.attrs['units']}")


if __name__ == "__main__":
    main()
