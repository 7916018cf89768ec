"""The options of a decomposition, each declared once.

Frozen dataclasses, built once at the public boundary (the labeled API, or a
direct call of the core's solvers) and handed down as objects, as xeofs'
``solver_kwargs`` and flox's forwarded options are:

- :class:`Preprocessing`: how the data are read, for every solver (centering,
  missing values);
- :class:`CompressedOptions`: the randomized solver's own (passes, sketch,
  seed, precision, block Krylov, ``tol``).

Adding an option is a field here plus its use. The public functions take the
fields as keyword arguments (their signatures are made from the fields, see
:func:`takes_options`), and ``settings`` of a result are derived from these
objects (:meth:`Preprocessing.settings`, :meth:`CompressedOptions.settings`).
The core never changes an options object it is given (they are frozen);
:meth:`CompressedOptions.resolved` returns a new one with the defaults filled in.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any, Literal

import numpy as np

from . import backend

__all__ = [
    "Preprocessing",
    "CompressedOptions",
    "DEFAULT_N_POWER_ITER",
    "DEFAULT_N_OVERSAMPLES",
    "DEFAULT_MAX_PASSES",
    "DEFAULT_KRYLOV",
    "DEFAULT_TOL",
    "check_flag",
    "check_center",
    "checked_center",
    "check_count",
    "ordered_settings",
    "split_options",
    "as_kwargs",
    "takes_options",
]

DEFAULT_N_POWER_ITER = 7
DEFAULT_N_OVERSAMPLES = 10
DEFAULT_MAX_PASSES = 20
DEFAULT_KRYLOV = True
#: With neither ``n_power_iter`` nor ``tol`` given (and computed results), the passes stop
#: once every component's estimated relative error is below this, and after
#: ``DEFAULT_N_POWER_ITER + 1`` passes at the latest (what a fixed default would read).
DEFAULT_TOL = 1e-6


def check_flag(name: str, value: Any, *, none_too: bool = False) -> None:
    """Refuse options that must be True or False (or None) but are not, e.g. ``center="yes"``."""
    if (value is None and none_too) or isinstance(value, bool | np.bool_):
        return
    allowed = "True, False or None" if none_too else "True or False"
    got, extra = f"{value!r} ({type(value).__name__})", ""
    if isinstance(value, str):
        extra = " A string is not read as a yes or no (even 'no' or 'False' is truthy)."
    elif name == "center" and (hasattr(value, "shape") or isinstance(value, Mapping)):
        # values to subtract, to a caller that takes none (the analyses beside the core)
        allowed, got = f"{allowed} here", f"values of type {type(value).__name__}"
        extra = (
            " Values to subtract are taken by xsvd.svd and Dataset.svd; here subtract them "
            "first: pass `da - values` with center=False."
        )
    raise TypeError(f"{name} must be {allowed}, got {got}.{extra}")


def check_count(name: str, value: Any, low: int) -> None:
    """Refuse a count that is not an integer ``>= low``; True and False are refused as
    ``TypeError`` (they are integers to Python, but ``n_power_iter=True`` is a mistake)."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(
            f"{name} must be an integer >= {low}, got {value!r} (a bool): pass a number, "
            f"e.g. {name}={max(low, 3)}."
        )
    if not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")


@dataclass(frozen=True, kw_only=True)
class Preprocessing:
    """How the matrix ``B = (A - 1 mu^T) diag(w)`` is read, for every solver.

    Attributes
    ----------
    center : bool or array (n,)
        True: remove each feature's mean over the samples. An array: the
        values to remove instead, one per feature (e.g. ``2 p`` of allele
        frequencies taken from a reference panel or the founders only); they
        replace the means the data would give, are not read from the data, and
        with ``missing="mean"`` fill in the missing values too. Finite numbers,
        on any backend (moved to the data's). See :meth:`given_center`.
    missing : {"error", "mean"}
        Missing values other than whole-NaN features: an error, or each
        stands for its feature's mean (see :mod:`xsvd.core.missing`).
    negative_missing : bool, optional
        Whether negative values count as missing (default: in integer data
        with ``missing="mean"``).
    """

    center: bool = False
    missing: Literal["error", "mean"] = "error"
    negative_missing: bool | None = None

    def __post_init__(self) -> None:
        if not self.given:
            check_center(self.center)

    @property
    def given(self) -> bool:
        """``center`` holds the values to remove (an array; per variable of a Dataset, a
        mapping), not True or False."""
        if isinstance(self.center, bool | np.bool_):
            return False
        return hasattr(self.center, "shape") or isinstance(self.center, Mapping)

    @property
    def centers(self) -> bool:
        """Something is removed from the data: ``center=True`` or given values."""
        return self.given or bool(self.center)

    def given_center(self, n: int) -> np.ndarray | None:
        """The values ``center`` gives, checked, as float64 on the host (None: not given).

        Refuses, saying how to fix it, what is not one finite number per feature.
        """
        if not self.given:
            return None
        return checked_center(self.center, n)

    def settings(self) -> dict:
        """The part of ``settings`` these options make (``center``: True, False or
        ``"given"``)."""
        center = "given" if self.given else bool(self.center)
        return {"missing": self.missing, "center": center}


#: How to pass centering values, for the messages that refuse them.
CENTER_HOW = (
    "pass center=True (each feature's mean over the samples), center=False, or the values "
    "to subtract, one finite number per feature (in the labeled API an xarray.DataArray "
    "over the feature dimensions, e.g. center=2 * w.allele_frequency)"
)


def check_center(value: Any) -> None:
    """Refuse a ``center`` that is neither True, False nor an array of values."""
    if isinstance(value, bool | np.bool_):
        return
    extra = ""
    if isinstance(value, str):
        extra = " A string is not read as a yes or no (even 'no' or 'False' is truthy)."
    raise TypeError(
        f"center must be True, False or the values to subtract, got {value!r} "
        f"({type(value).__name__}).{extra} Fix: {CENTER_HOW}."
    )


def checked_center(values: Any, n: int) -> np.ndarray:
    """Given centering values as a float64 host vector of length ``n``, or a clear error."""
    try:
        host = backend.to_numpy(values)
    except Exception as err:  # noqa: BLE001 - any library's refusal: say what to pass
        raise TypeError(f"center could not be read as numbers ({err}). Fix: {CENTER_HOW}.") from err
    host = np.asarray(host)
    if host.dtype.kind not in "biuf":
        raise TypeError(f"center holds {host.dtype} values, not numbers. Fix: {CENTER_HOW}.")
    if host.ndim != 1 or host.shape[0] != n:
        raise ValueError(
            f"center holds {host.shape} values, but the data have {n} features: it needs one "
            f"value per feature. Fix: {CENTER_HOW}."
        )
    host = host.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(host))
    if bad.size:
        raise ValueError(
            f"center holds {bad.size} NaN or infinite value(s) (first at feature {bad[0]}), "
            "which cannot be subtracted. Give a finite value for every feature, e.g. "
            "`center.fillna(0)` where a feature is to be left as it is, or pass center=True "
            "to subtract the means the data give."
        )
    return host


@dataclass(frozen=True, kw_only=True)
class CompressedOptions:
    """The randomized solver's options; see :func:`xsvd.compressed` for each.

    None means "the default", filled in by :meth:`resolved`.
    """

    n_power_iter: int | None = None
    n_oversamples: int | None = None
    seed: int | None = None
    dtype: Any = None
    krylov: bool | None = None
    tol: float | None = None
    max_passes: int | None = None

    def __post_init__(self) -> None:
        check_flag("krylov", self.krylov, none_too=True)

    def given(self) -> list[str]:
        """The names of the options set (not None), for errors about the exact SVD."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def resolved(self, *, lazy: bool) -> CompressedOptions:
        """A copy with every default filled in and every value checked.

        ``lazy``: the results are one lazy graph (Dask with ``compute=False``),
        which ``tol`` cannot work with.

        With neither ``n_power_iter`` nor ``tol`` given, computed results stop
        when converged: ``tol`` becomes :data:`DEFAULT_TOL` and ``max_passes``
        stays None, which caps the passes at ``DEFAULT_N_POWER_ITER + 1``
        (see :attr:`default_stop`); a lazy graph reads the data that many times.
        """
        n_power_iter, max_passes, tol = self.n_power_iter, self.max_passes, self.tol
        if tol is not None:
            if n_power_iter is not None:
                raise ValueError(
                    "Pass either n_power_iter (a fixed number of passes) or tol (pass until "
                    "the error estimates are below it), not both."
                )
            if not (isinstance(tol, float | int | np.floating) and 0 < tol < 1):
                raise ValueError(f"tol must be a number between 0 and 1, e.g. 1e-3, got {tol!r}.")
            max_passes = DEFAULT_MAX_PASSES if max_passes is None else max_passes
            check_count("max_passes", max_passes, 1)
            if lazy:
                raise ValueError(
                    "tol decides after each pass whether to read the data again, so it needs "
                    "computed results: pass compute=True (the default of the labeled API)."
                )
            n_power_iter = 0
            tol, max_passes = float(tol), int(max_passes)
        elif max_passes is not None:
            raise ValueError("max_passes bounds the passes that tol asks for: pass tol too.")
        elif n_power_iter is None and not lazy:  # the default: stop when converged
            n_power_iter, tol = 0, DEFAULT_TOL
        n_power_iter = DEFAULT_N_POWER_ITER if n_power_iter is None else n_power_iter
        check_count("n_power_iter", n_power_iter, 0)
        n_oversamples = DEFAULT_N_OVERSAMPLES if self.n_oversamples is None else self.n_oversamples
        check_count("n_oversamples", n_oversamples, 0)
        return replace(
            self,
            n_power_iter=int(n_power_iter),
            n_oversamples=int(n_oversamples),
            krylov=DEFAULT_KRYLOV if self.krylov is None else bool(self.krylov),
            tol=tol,
            max_passes=max_passes,
        )

    @property
    def converges(self) -> bool:
        """Resolved options: the passes stop when the estimates reach ``tol``."""
        return self.tol is not None

    @property
    def default_stop(self) -> bool:
        """Resolved options: neither ``n_power_iter`` nor ``tol`` was given (converge, capped
        at ``DEFAULT_N_POWER_ITER + 1`` passes, no warning when the cap is reached)."""
        return self.tol is not None and self.max_passes is None

    @property
    def most_passes(self) -> int:
        """Resolved options: the most passes they allow (``n_power_iter + 1`` when fixed,
        ``max_passes`` with ``tol``, ``DEFAULT_N_POWER_ITER + 1`` for the default stop)."""
        if not self.converges:
            return self.n_power_iter + 1
        return DEFAULT_N_POWER_ITER + 1 if self.default_stop else self.max_passes

    def settings(self) -> dict:
        """The part of ``settings`` these (resolved) options make.

        ``n_power_iter`` and ``dtype`` are reported by the solver (the
        iterations made, the precision used); ``tol`` when the passes stopped
        by it (asked for, or the default), ``max_passes`` when asked for.
        """
        out = {"n_oversamples": self.n_oversamples, "seed": self.seed, "krylov": self.krylov}
        if self.tol is not None:
            out.update(tol=self.tol)
        if self.max_passes is not None:
            out.update(max_passes=self.max_passes)
        return out


#: The order in which ``settings`` list what they hold (a result's repr and saved form).
SETTINGS_ORDER = (
    "k",
    "n_power_iter",
    "n_oversamples",
    "seed",
    "dtype",
    "stripes",
    "passes",
    "missing",
    "krylov",
    "tol",
    "max_passes",
    "estimated_error",
    "stopped",
    "error_bounds",
    "center",
    "weighted",
    "standardize",
)


def ordered_settings(**parts) -> dict:
    """The settings of a decomposition, listed in :data:`SETTINGS_ORDER` (others last)."""
    rank = {name: i for i, name in enumerate(SETTINGS_ORDER)}
    return dict(sorted(parts.items(), key=lambda item: rank.get(item[0], len(rank))))


def split_options(kwargs: dict, classes: tuple[type, ...], where: str) -> tuple:
    """One options object per class, from the keyword arguments naming their fields.

    A name that no class declares is a ``TypeError``, as for any function.
    """
    names = {f.name: cls for cls in classes for f in fields(cls)}
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    return tuple(cls(**{k: v for k, v in kwargs.items() if names[k] is cls}) for cls in classes)


def takes_options(*classes: type) -> Callable:
    """Give a function ``f(..., **options)`` the signature its options classes declare.

    ``inspect.signature`` (and so ``help()``, IDEs and the API docs) then
    lists every option with its default, keyword-only, without writing them
    out again.
    """

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        taken = {p.name for p in params}
        for cls in classes:
            for f in fields(cls):
                if f.name in taken:
                    continue
                default = f.default if f.default is not MISSING else inspect.Parameter.empty
                params.append(
                    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default)
                )
        fn.__signature__ = sig.replace(parameters=params)
        return fn

    return decorate


def as_kwargs(*objects) -> dict:
    """The fields of options objects as one dict (for a forwarded call)."""
    out: dict = {}
    for obj in objects:
        out.update(asdict(obj))
    return out
