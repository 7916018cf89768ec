"""PCA of a PLINK 1 .bed file set with xsvd: missing calls and PLINK 2's scaling.

The script writes synthetic genotypes of three populations, with a few percent
of missing calls, as a PLINK 1 file set (``.bed``, ``.bim``, ``.fam``) in a
temporary folder, and then does what one would do with real files:

* open the file set with ``xsvd.open_plink``: a lazy (variants x samples)
  DataArray whose Dask chunks stay 2-bit packed, with the ``.bim`` and ``.fam``
  columns as coordinates (the populations come back as the family ids);
* standardize each variant as PLINK 2's ``--pca`` does, with
  ``xsvd.patterson_scaling`` (monomorphic variants dropped, weights
  ``1 / sqrt(2p(1-p))``);
* run the compressed SVD with ``missing="mean"``, which stands each missing
  call for its variant's mean inside the products (no filled copy);
* print the eigenvalues on PLINK 2's scale (``S**2 / n_variants``) and how
  well the first PCs separate the populations (nearest population centroid);
* if ``plink2`` is on the PATH, run ``plink2 --bfile ... --pca 10 meanimpute``
  (the exact PCA, with missing calls mean-imputed as here) and compare the
  eigenvalues and PCs; and plain ``--pca 10``, which corrects its relationship
  matrix for missingness instead of imputing, so its eigenvalues differ.

Run it with ``python examples/genomics_plink.py`` (``--small`` for a tiny file
set). See docs/genomics-pca.md for the explanations.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import xsvd


def synthetic_file_set(prefix: Path, n_variants: int, n_samples: int, missing: float):
    """Write genotypes of 3 populations with missing calls; return the missing share."""
    gt = xsvd.datasets.genotypes(n_variants, n_samples, n_populations=3, seed=0)
    values = gt.values.astype(np.float32)
    rng = np.random.default_rng(1)
    values[rng.random(values.shape) < missing] = np.nan
    chrom = 1 + np.arange(n_variants) * 22 // n_variants  # 22 chromosomes, in order
    gt = gt.copy(data=values).assign_coords(
        variants=[f"rs{i}" for i in range(n_variants)],
        chrom=("variants", chrom.astype(str)),
        position=("variants", 1 + 1_000 * (np.arange(n_variants) - np.searchsorted(chrom, chrom))),
        allele_1=("variants", np.full(n_variants, "G")),  # the counted allele
        allele_2=("variants", np.full(n_variants, "A")),
        family_id=("samples", gt.population.values),  # the .fam's first column
    )
    xsvd.write_plink(gt, prefix)
    return float(np.isnan(values).mean())


def nearest_centroid_accuracy(pcs: np.ndarray, labels: np.ndarray) -> float:
    """Share of samples closer to their own population's mean PC than to any other."""
    names = np.unique(labels)
    centroids = np.stack([pcs[labels == name].mean(axis=0) for name in names])
    dist = ((pcs[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)
    return float(np.mean(names[dist.argmin(axis=1)] == labels))


def run_plink2(plink2: str, prefix: Path, out: Path, *modifiers: str):
    """``plink2 --pca``: its eigenvalues and PCs (rows in the .fam's order)."""
    cmd = [plink2, "--bfile", str(prefix), "--pca", *modifiers, "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    eigenval = np.loadtxt(f"{out}.eigenval")
    eigenvec = np.loadtxt(f"{out}.eigenvec", usecols=range(2, 2 + len(eigenval)))
    return eigenval, eigenvec


def main(argv=None):
    parser = argparse.ArgumentParser(description="PCA of a PLINK .bed file set with xsvd.")
    parser.add_argument("--small", action="store_true", help="tiny file set (runs in seconds)")
    parser.add_argument("--missing", type=float, default=0.03, help="share of missing calls")
    args = parser.parse_args(argv)

    if args.small:
        n_variants, n_samples = 4_000, 200
    else:
        n_variants, n_samples = 50_000, 2_000
    k, n_structure = 10, 2  # 3 populations: 2 PCs carry the structure

    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "data"
        share = synthetic_file_set(prefix, n_variants, n_samples, args.missing)
        print(f"Wrote a PLINK 1 file set: {prefix}.bed, {prefix}.bim, {prefix}.fam")
        print(f"missing calls: {100 * share:.1f}%")

        # ------------------------------------------------------------- open
        bed = xsvd.open_plink(prefix)  # lazy: reads only the .bim and .fam
        chunk = bed.data.blocks[0].compute()  # the .bed's bytes of the first chunk
        sizes = ", ".join(f"{d}={n}" for d, n in bed.sizes.items())
        packed = Path(f"{prefix}.bed").stat().st_size - 3  # what the chunks hold, in all
        print(
            f"\nopen_plink: ({sizes}), {bed.data.numblocks[0]} Dask chunk(s) of "
            f"{type(chunk).__name__}: {packed / 2**20:.2f} MiB packed, "
            f"{bed.size * 4 / 2**20:.2f} MiB as float32"
        )
        print(f"coordinates: {', '.join(map(str, bed.coords))}")

        # ------------------------------------------------- PLINK 2's scaling
        kept, w = xsvd.patterson_scaling(bed)
        n_all = w.attrs["n_variants"]
        print(
            f"\npatterson_scaling: kept {kept.sizes['variants']} of {n_all} variants "
            "(monomorphic ones dropped)"
        )
        t0 = time.perf_counter()
        res = kept.svd.compressed(
            k=k, dim="samples", center=True, weights=w, missing="mean", seed=0
        )
        elapsed = time.perf_counter() - t0
        print(f"compressed SVD, k={k}: {elapsed:.2f} s ({res.settings['passes']} passes)")

        eigenval = res.S.values**2 / n_all
        print("Eigenvalues (PLINK 2's .eigenval scale, S**2 / n_variants):")
        print("  " + " ".join(f"{v:.3f}" for v in eigenval))

        # ------------------------------------------------------ populations
        pcs = res.U.isel(component=slice(0, n_structure))
        labels = pcs.family_id.values  # the populations, read back from the .fam
        acc = nearest_centroid_accuracy(pcs.values, labels)
        print(
            f"Nearest population centroid in the PC1-PC{n_structure} plane: "
            f"{100 * acc:.1f}% of samples in their own population"
        )

        # ----------------------------------------------------------- plink2
        plink2 = shutil.which("plink2")
        if plink2 is None:
            print("\nplink2 not found on PATH: skipping the comparison with PLINK 2")
            return
        ev_mi, vec_mi = run_plink2(plink2, prefix, Path(tmp) / "mi", str(k), "meanimpute")
        rel = np.abs(eigenval / ev_mi - 1)
        pc_diff = np.abs(np.abs(res.U.values) - np.abs(vec_mi))[:, :n_structure].max()
        print(f"\nplink2 --pca {k} meanimpute (exact, missing calls mean-imputed):")
        print(
            f"  eigenvalues 1-{n_structure} (structure): max relative difference "
            f"{rel[:n_structure].max():.1e}; PCs: max |difference| {pc_diff:.1e}"
        )
        print(
            f"  eigenvalues 1-{k}: max relative difference {rel.max():.1e} (beyond "
            f"{n_structure}: noise, which the compressed SVD gets only approximately)"
        )
        ev_plain, _ = run_plink2(plink2, prefix, Path(tmp) / "plain", str(k))
        rel_plain = np.abs(eigenval / ev_plain - 1)[:n_structure].max()
        print(
            f"plink2 --pca {k} (exact, missingness-corrected relationship matrix, no "
            f"imputation): eigenvalues 1-{n_structure} differ by up to {100 * rel_plain:.1f}%"
        )


if __name__ == "__main__":
    main()
