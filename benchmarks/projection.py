"""Held-out samples projected on reference PCs: how much each method shrinks their scores.

    /work/venv/bin/python benchmarks/projection.py            # 1,000 + 200 samples, 50,000 SNPs
    /work/venv/bin/python benchmarks/projection.py --quick    # small smoke run

Simulates three populations (Balding-Nichols, Fst 0.02) in three versions:

- **pruned-like**: independent SNPs (what LD pruning aims at);
- **unpruned-like**: the same number of SNPs in LD blocks of 20 adjacent
  SNPs (each block a mosaic of 4 haplotypes, whose frequencies differ by
  population; 2 % of the alleles changed), plus two long LD regions of 600
  SNPs each (two haplotypes, as an inversion; 5 % changed), which give PCs
  of their own, as long-range LD regions do in unpruned human data;
- **unpruned-like, weak LD PCs**: the LD blocks with eight long regions of
  100 SNPs (15 % changed) instead, whose PCs are barely above the noise.

A random sixth of the samples are held out; the PCA (PLINK 2's scaling,
``patterson_scaling``; exact, 10 components) is made of the others, on the
SNPs with a minor allele frequency of at least 5 % among them (as usual for
a PCA: a held-out sample that carries an allele the reference barely has
gets an enormous standardized value there, which no method of projection
can place), and
the held-out samples are projected with ``xsvd.project_samples``: plainly
(``shrinkage=False``), with the Lee-Zou-Wright factors (``method="lzw"``,
the default) and by OADP (``method="oadp"``: with ``k=4`` (fitting 8
augmented PCs, of the reference's 10, as FRAPOSA's defaults 4, 8, 16), and
with its defaults, all 10 PCs fitting 10); the last two rows use a
reference PCA of 40 components instead. The gold standard, as in
Zhang, Dey & Lee (2020), is the exact augmentation (ADP): each held-out
sample added to the full reference (all its components), the PCA of the
augmented set (from the Gram matrix), and the Procrustes map of its top 8
components onto the reference's 4 (FRAPOSA's ``adp``). The
*slope* of a method on a PC is the least-squares slope of its held-out
scores on the gold standard's (1: no shrinkage). Results go to
``benchmarks/results/projection.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

import xsvd

HERE = Path(__file__).resolve().parent


def simulate(n_variants, n_samples, *, ld, fst=0.02, seed=0):
    """Allele counts (variants x samples) of 3 populations, and each sample's population.

    ``ld``: False, "strong" (two long LD regions) or "weak" (eight weaker ones).
    """
    rng = np.random.default_rng(seed)
    pop = np.repeat(np.arange(3), -(-n_samples // 3))[:n_samples]
    scale = (1 - fst) / fst
    if not ld:
        anc = rng.uniform(0.05, 0.95, n_variants)[:, None]
        f = rng.beta(anc * scale, (1 - anc) * scale, size=(n_variants, 3))[:, pop]
        return (rng.random(f.shape) < f).astype(np.uint8) + (rng.random(f.shape) < f), pop
    blocks = [_haplotype_block(rng, pop, 20, 4, scale, 0.02) for _ in range(n_variants // 20)]
    length, change, count = (600, 0.05, 2) if ld == "strong" else (100, 0.15, 8)
    blocks += [_haplotype_block(rng, pop, length, 2, scale, change) for _ in range(count)]
    return np.concatenate(blocks), pop


def _haplotype_block(rng, pop, length, n_hap, scale, change):
    templates = (rng.random((n_hap, length)) < rng.uniform(0.05, 0.95, length)).astype(np.uint8)
    base = rng.dirichlet(np.full(n_hap, 2.0))
    freqs = np.stack([rng.dirichlet(base * scale) for _ in range(3)])[pop]  # samples x n_hap
    counts = np.zeros((length, pop.size), np.uint8)
    for _ in range(2):  # two chromosomes
        u = rng.random(pop.size)[:, None]
        hap = np.minimum((u > np.cumsum(freqs, axis=1)).sum(axis=1), n_hap - 1)
        alleles = templates[hap].T
        counts += alleles ^ (rng.random(alleles.shape) < change)
    return counts


def adp_gold(X, Y, k):
    """Exact ADP (FRAPOSA's ``adp``): X (n x p) and Y (m x p) standardized; scores on U's scale."""
    n = X.shape[0]
    gram = X @ X.T
    evals, evecs = np.linalg.eigh(gram)
    top = np.sqrt(np.maximum(evals[::-1][:k], 0))  # the reference's singular values
    ref = evecs[:, ::-1][:, :k] * top
    cross = X @ Y.T
    out = np.empty((Y.shape[0], k))
    aug = np.empty((n + 1, n + 1))
    aug[:n, :n] = gram
    for i in range(Y.shape[0]):
        aug[:n, n] = aug[n, :n] = cross[:, i]
        aug[n, n] = Y[i] @ Y[i]
        ev, vec = np.linalg.eigh(aug)
        scores = vec[:, ::-1][:, : 2 * k] * np.sqrt(np.maximum(ev[::-1][: 2 * k], 0))
        out[i] = _procrustes_diffdim(ref, scores[:n], scores[n:])[0, :k]
    return out / top  # on the scale of U


def _procrustes_diffdim(Y, X, x_new, eps=1e-6, max_iter=10_000):
    """Fit X (n x k2) onto Y (n x k) padded with columns that follow the fit; map x_new."""
    Z = np.zeros((Y.shape[0], X.shape[1] - Y.shape[1]))
    Xm = X.mean(axis=0)
    for _ in range(max_iter):
        W = np.hstack([Y, Z])
        Wm = W.mean(axis=0)
        u, s, vt = np.linalg.svd((W - Wm).T @ (X - Xm))
        R = vt.T @ u.T
        rho = s.sum() / ((X - Xm) ** 2).sum()
        c = Wm - rho * Xm @ R
        fitted = (X @ R * rho + c)[:, Y.shape[1] :]
        done = ((fitted - Z) ** 2).sum() / ((fitted - fitted.mean(axis=0)) ** 2).sum() < eps
        Z = fitted
        if done or Z.shape[1] == 0:
            break
    return x_new @ R * rho + c


def slopes(est, gold):
    return [float(np.cov(gold[:, j], est[:, j])[0, 1] / np.var(gold[:, j], ddof=1)) for j in
            range(gold.shape[1])]  # fmt: skip


def run(n_variants, n_samples, k, n_pcs, seed):
    rows = []
    labels = {False: "pruned-like", "strong": "unpruned-like", "weak": "unpruned, weak LD PCs"}
    for ld, label in labels.items():
        g, pop = simulate(n_variants, n_samples, ld=ld, seed=seed)
        rng = np.random.default_rng(seed + 1)
        held = np.zeros(n_samples, bool)
        held[rng.choice(n_samples, n_samples // 6, replace=False)] = True
        gt = xr.DataArray(g, dims=("variants", "samples"))
        gt = gt.assign_coords(population=("samples", pop))
        freq = g[:, ~held].mean(axis=1) / 2
        gt = gt.isel(variants=np.flatnonzero((freq >= 0.05) & (freq <= 0.95)))  # MAF >= 5 %
        ref, new = gt.isel(samples=~held), gt.isel(samples=held)
        kept, w = xsvd.patterson_scaling(ref)
        new = new.isel(variants=np.flatnonzero(np.isin(gt.variants, kept.variants)))
        res = kept.svd.exact(k=k, dim="samples", center=True, weights=w)
        wide = kept.svd.exact(k=4 * k, dim="samples", center=True, weights=w)
        p = 2 * w.allele_frequency.values
        X = (kept.values.T - p) * w.values
        Y = (new.values.T - p) * w.values
        t0 = time.perf_counter()
        gold = adp_gold(X, Y, n_pcs)
        t_gold = time.perf_counter() - t0
        gold *= np.sign((gold * (Y @ res.V.values[:n_pcs].T)).sum(axis=0))  # PC signs of res
        eig = (res.S.values**2 / w.attrs["n_variants"])[:n_pcs]
        for name, pca, kwargs in [
            ("plain", res, {"shrinkage": False}),
            ("lzw", res, {}),
            (f"oadp, k={n_pcs}", res, {"method": "oadp", "k": n_pcs}),
            (f"oadp, k={k}", res, {"method": "oadp"}),
            (f"lzw, PCA of {4 * k}", wide, {}),
            (f"oadp, k={n_pcs}, PCA of {4 * k}", wide, {"method": "oadp", "k": n_pcs}),
        ]:
            t0 = time.perf_counter()
            est = xsvd.project_samples(pca, new, **kwargs).values[:, :n_pcs]
            elapsed = time.perf_counter() - t0
            rows.append(
                {
                    "data": label,
                    "method": name,
                    "slopes": slopes(est, gold),
                    "seconds": elapsed,
                    "eigenvalues": eig.tolist(),
                    "gold_seconds": t_gold,
                    "variants": int(kept.sizes["variants"]),
                    "reference": int(kept.sizes["samples"]),
                    "held_out": int(new.sizes["samples"]),
                }
            )
    return rows


def markdown(rows, args) -> str:
    n_pcs = len(rows[0]["slopes"])
    head = "| data | method | " + " | ".join(f"PC{i + 1}" for i in range(n_pcs)) + " | time |"
    lines = [
        f"Command: `{' '.join(['python', 'benchmarks/projection.py', *sys.argv[1:]])}`",
        "",
        f"{rows[0]['reference']} reference + {rows[0]['held_out']} held-out samples, "
        f"~{rows[0]['variants']} SNPs (MAF >= 5 %), PCA of {args.k} components unless "
        "said; slopes on exact ADP "
        f"({platform.processor() or platform.machine()}, numpy {np.__version__}).",
        "",
        head,
        "|" + "---|" * (n_pcs + 3),
    ]
    for r in rows:
        cells = " | ".join(f"{s:.3f}" for s in r["slopes"])
        lines.append(f"| {r['data']} | {r['method']} | {cells} | {r['seconds']:.2f} s |")
    for data in dict.fromkeys(r["data"] for r in rows):
        eig = next(r["eigenvalues"] for r in rows if r["data"] == data)
        lines.append("")
        lines.append(f"{data}: eigenvalues " + ", ".join(f"{e:.2f}" for e in eig))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=1_200)
    parser.add_argument("--k", type=int, default=10, help="components of the reference PCA")
    parser.add_argument("--pcs", type=int, default=4, help="PCs to report")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="10,000 SNPs, 420 samples")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if args.quick:
        args.variants, args.samples = 10_000, 420
    rows = run(args.variants, args.samples, args.k, args.pcs, args.seed)
    text = markdown(rows, args)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "projection.json").write_text(json.dumps(rows, indent=1))
    (args.out / "projection.md").write_text(text)


if __name__ == "__main__":
    main()
