"""PCA of a genotype matrix with xsvd, lazily on Dask.

Principal component analysis of genotypes is the SVD of the (samples x
variants) dosage matrix after removing each variant's mean. This example uses
``xsvd.datasets.genotypes(chunks=...)``: a Dask-backed ``uint8`` array
(variants x samples) of three populations drawn from the Balding-Nichols
model, and shows how to:

* run the compressed (randomized) SVD with ``dim="samples", center=True`` so
  that the samples are the rows and every variant is centered;
* keep it lazy with ``compute=False``: the call only builds a Dask graph, and
  no chunk is read until the result is computed;
* compute U, S, V and the explained variance together, in one pass of the
  graph (``dask.compute``), which reads every chunk ``n_power_iter + 1`` times;
* summarize the principal components (PCs) per population through the
  ``population`` coordinate that ``U`` keeps from the input.

Run it with ``python examples/genomics_pca.py`` (``--small`` for a tiny matrix).
"""

from __future__ import annotations

import argparse
import time

import dask
import numpy as np

import xsvd


def main(argv=None):
    parser = argparse.ArgumentParser(description="PCA of synthetic genotypes with xsvd.")
    parser.add_argument("--small", action="store_true", help="tiny matrix (runs in a second)")
    args = parser.parse_args(argv)

    if args.small:
        n_variants, n_samples, chunk, k = 4_000, 150, 1_000, 5
    else:
        n_variants, n_samples, chunk, k = 50_000, 2_000, 10_000, 10
    gt = xsvd.datasets.genotypes(n_variants, n_samples, n_populations=3, seed=0, chunks=chunk)
    sizes = ", ".join(f"{d}={n}" for d, n in gt.sizes.items())
    print(
        f"Input: {gt.name} ({sizes}), {gt.dtype}, Dask chunks of {chunk} variants, "
        f"{gt.nbytes / 2**20:.1f} MiB"
    )
    print(f"method='auto' would pick: {xsvd.choose_method(n_samples, n_variants, k)!r}")

    # ---------------------------------------------------- build the graph only
    t0 = time.perf_counter()
    res = gt.svd.compressed(k=k, dim="samples", center=True, seed=0, compute=False)
    print(f"\nLazy result, built in {time.perf_counter() - t0:.2f} s: {res}")
    print(f"U is a {type(res.U.data).__module__}.{type(res.U.data).__name__}; nothing was read yet")
    print(f"settings: {res.settings}")

    # ------------------------------------------------ compute it, in one graph
    # Computing U, S and V one at a time would run the whole solver once each;
    # dask.compute evaluates them together, sharing the passes over the data.
    t0 = time.perf_counter()
    U, S, V, evr = dask.compute(res.U, res.S, res.V, res.explained_variance_ratio)
    print(f"\nComputed in {time.perf_counter() - t0:.2f} s ({res.settings['passes']} passes)")
    print(f"U {dict(U.sizes)}, S {dict(S.sizes)}, V {dict(V.sizes)}")

    print("\nExplained variance (share of the centered total):")
    for c, (r, cum) in enumerate(zip(evr.values, np.cumsum(evr.values), strict=True)):
        print(f"  PC{c + 1:<2} {100 * r:5.2f}%   cumulative {100 * cum:5.2f}%")
    print(
        "With 3 populations, 2 PCs carry the population structure; "
        "the rest is sampling noise of similar size."
    )

    # -------------------------------------------------- PCs per population
    # PC scores are U * S. U keeps the input's sample coordinates, including
    # the non-dimension coordinate "population", so groupby works directly.
    pcs = (U * S).isel(component=[0, 1])
    means = pcs.groupby("population").mean()
    spread = pcs.groupby("population").std()
    print("\nMean (std) of PC1 and PC2 per population:")
    for pop in means.population.values:
        m = means.sel(population=pop).values
        s = spread.sel(population=pop).values
        print(f"  {pop}: PC1 {m[0]:+6.2f} ({s[0]:.2f})   PC2 {m[1]:+6.2f} ({s[1]:.2f})")

    # Nearest population mean in the PC1-PC2 plane.
    dist = ((pcs - means) ** 2).sum("component")  # (samples, population)
    nearest = means.population.values[dist.argmin("population").values]
    correct = float(np.mean(nearest == pcs.population.values))
    print(f"Samples closest to their own population's mean: {100 * correct:.1f}%")


if __name__ == "__main__":
    main()
