"""Genotype inputs and PCA outputs: PLINK files, VCF-Zarr, 2-bit packing, PLINK 2's scaling.

- :func:`open_plink` reads a PLINK 1 ``.bed``/``.bim``/``.fam`` file set as a
  lazy ``(variants, samples)`` DataArray whose Dask chunks stay 2-bit packed
  (the file's own bytes) until xsvd multiplies them, a small block at a time;
  :func:`write_plink` writes one, chunk by chunk (:mod:`~xsvd.genomics.plink`).
  :func:`open_pgen` reads a PLINK 2 ``.pgen``/``.pvar``/``.psam`` file set the
  same way, with ``pgenlib`` (:mod:`~xsvd.genomics.pgen`).
- :func:`pack_genotypes` packs 0/1/2 genotypes already in memory (NumPy,
  CuPy or Dask chunks), four to a byte (:mod:`~xsvd.genomics.packing`).
- :func:`dosage` turns a VCF-Zarr / sgkit ``call_genotype`` into allele
  dosages, lazily, with missing calls as NaN (:mod:`~xsvd.genomics.vcf`).
- :func:`patterson_scaling` gives the per-variant scaling of PLINK 2's
  ``--pca`` (Patterson, Price & Reich 2006; :mod:`~xsvd.genomics.scaling`).
- :func:`project_samples` projects new samples onto reference PCs, missing
  calls as the reference means, corrected for the shrinkage of projected
  scores (:func:`shrinkage_factors`, Lee, Zou & Wright 2010; or online
  augmentation, decomposition and Procrustes, Zhang, Dey & Lee 2020,
  :mod:`~xsvd.genomics.oadp`; :mod:`~xsvd.genomics.projection`).
- :func:`write_plink_pca` and :func:`write_eigenvec` write the files of
  PLINK 2's ``--pca`` (``.eigenvec``, ``.eigenval``, ``.eigenvec.allele`` or
  ``.eigenvec.var``) and the frequencies PLINK 2 projects new samples with
  (:mod:`~xsvd.genomics.plink2`).
- :func:`tracy_widom` tests the eigenvalues as EIGENSOFT's ``twstats``, and
  :func:`relationship_eigenvalues` gives all of them from the Gram matrix of
  the samples, streamed (:mod:`~xsvd.genomics.twstats`, which also holds the
  Tracy-Widom distribution itself).

Values are counts of one allele (0, 1, 2) as float32 with NaN for missing
calls; for ``.bed`` files, counts of allele 1 (the ``.bim``'s fifth column),
as PLINK 1.9 and bed-reader report them. :mod:`~xsvd.genomics.results` reads
the few plain numbers of a PCA result that the functions here need.
"""

from __future__ import annotations

from .packing import pack_genotypes
from .pgen import open_pgen
from .plink import open_plink, write_plink
from .plink2 import write_eigenvec, write_plink_pca
from .projection import project_samples, shrinkage_factors
from .scaling import patterson_scaling
from .tables import PlinkFileError
from .twstats import relationship_eigenvalues, tracy_widom
from .vcf import dosage

__all__ = [
    "open_plink",
    "open_pgen",
    "write_plink",
    "PlinkFileError",
    "pack_genotypes",
    "dosage",
    "patterson_scaling",
    "project_samples",
    "shrinkage_factors",
    "write_eigenvec",
    "write_plink_pca",
    "tracy_widom",
    "relationship_eigenvalues",
]
