"""The text files of PLINK file sets (``.bim``, ``.fam``, ``.pvar``, ``.psam``): read as
tables, their malformed lines and repeated samples refused, naming the file and the line."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "PlinkFileError",
    "BIM_DTYPES",
    "read_table",
    "malformed_line",
    "check_sample_ids",
    "sex_codes",
]


class PlinkFileError(ValueError):
    """A PLINK file set that cannot be read as it is."""


#: how the .bim's columns are parsed: numbers as numbers (one Python string per
#: field would take tens of MB for a few hundred thousand variants)
BIM_DTYPES = {
    "chrom": str,
    "variants": str,
    "cm": np.float64,
    "position": np.int64,
    "allele_1": str,
    "allele_2": str,
}


def read_table(path: Path, columns, kind: str, dtypes: dict | None = None):
    import pandas as pd

    if not path.exists():
        raise PlinkFileError(
            f"The {kind} file {str(path)!r} is missing. A PLINK 1 file set is three files "
            "with one prefix: .bed (genotypes), .bim (variants) and .fam (samples)."
        )
    dtype = str if dtypes is None else {i: dtypes[c] for i, c in enumerate(columns)}
    try:
        table = pd.read_csv(
            path, sep=r"\s+", header=None, dtype=dtype, comment=None, keep_default_na=False
        )
    except pd.errors.EmptyDataError:
        table = pd.DataFrame([[]] * 0, columns=range(len(columns)))
    except (ValueError, TypeError) as exc:  # a column that is not numbers, or too few columns
        raise malformed_line(path, len(columns), kind, ", ".join(columns)) or PlinkFileError(
            f"{str(path)!r} cannot be read as a {kind} file, whose {len(columns)} columns are "
            f"{', '.join(columns)}: {exc}"
        ) from exc
    if table.shape[1] != len(columns):
        raise PlinkFileError(
            f"{str(path)!r} has {table.shape[1]} columns; a {kind} file has "
            f"{len(columns)}: {', '.join(columns)}."
        )
    table.columns = list(columns)
    short = table.isna() | (table == "")  # a line with fewer fields leaves its last ones empty
    if short.to_numpy().any():
        raise malformed_line(path, len(columns), kind, ", ".join(columns)) or PlinkFileError(
            f"{str(path)!r} has an empty field; a {kind} line has {', '.join(columns)}."
        )
    return table


def malformed_line(path: Path, width: int, kind: str, columns: str, skip: int = 0):
    """The :class:`PlinkFileError` for the first data line of ``path`` (after ``skip`` lines)
    with another number of fields than ``width``, naming the file, the line and its text;
    None when every line has ``width`` fields."""
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if number > skip and fields and len(fields) != width:
                return PlinkFileError(
                    f"{str(path)!r}, line {number}, has {len(fields)} field(s) where a {kind} "
                    f"line has {width} ({columns}): {line.strip()[:200]!r}. A column is "
                    "missing (PLINK refuses the file too): fix or remove the line, or "
                    "rewrite the file set with plink2."
                )
    return None


def check_sample_ids(path: Path, families, ids, skip: int = 0) -> None:
    """Refuse a sample listed twice (the same family and sample id), as PLINK 2 does; warn
    when one sample id is in several families (``sel`` by id is then ambiguous)."""
    pairs = np.char.add(np.char.add(np.asarray(families, dtype=str), "\t"), ids)
    for values, same_family in ((pairs, True), (np.asarray(ids, dtype=str), False)):
        _, first, counts = np.unique(values, return_index=True, return_counts=True)
        if not (counts > 1).any():
            continue
        twice = np.sort(first[counts > 1])
        i = int(twice[0])
        j = int(np.flatnonzero(values == values[i])[1])
        shown = ", ".join(repr(str(ids[t])) for t in twice[:5])
        message = (
            f"{str(path)!r} lists {len(twice)} sample id(s) more than once (e.g. {shown}; "
            f"{str(ids[i])!r} on lines {skip + i + 1} and {skip + j + 1})"
        )
        if same_family:
            raise PlinkFileError(
                message + " in the same family, which PLINK 2 refuses too: give each sample "
                "its own id in the file (e.g. a suffix to the IID of a sample typed twice)."
            )
        warnings.warn(
            message + " in different families: the `samples` coordinate is not unique, so "
            "selecting by id (`sel`) is ambiguous. Select by position (`isel`) or give each "
            "sample its own id.",
            UserWarning,
            stacklevel=3,
        )
        return


#: PLINK 2's sex codes: 1 or M = male, 2 or F = female; anything else is unknown (0).
_SEX_CODES = {"1": 1, "m": 1, "male": 1, "2": 2, "f": 2, "female": 2}


def sex_codes(values) -> np.ndarray:
    """The ``.fam`` sex column as PLINK's codes 1 (male), 2 (female), 0 (unknown), int8."""
    return np.array([_SEX_CODES.get(str(v).strip().lower(), 0) for v in values], dtype=np.int8)
