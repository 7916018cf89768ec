"""The only place that knows about pint (physical units).

Data quantified with pint (e.g. by pint-xarray's ``da.pint.quantify()``; the
magnitude a NumPy or Dask array) pass through the pipeline like this:

- *units off*: :func:`strip` replaces the data (and quantified weights) by
  their magnitudes and records the units in a :class:`Units`; a Dask magnitude
  stays lazy. The solvers only ever see plain arrays.
- *units back*: :class:`~xsvd.SVDResult` asks :func:`quantify` to put the
  units on ``S`` (data units times weights units), ``mean`` and
  ``reconstruct()`` (data units), and ``total_variance`` (units of ``S**2``).
  ``U``, ``V``, the explained variance ratio and projection scores are
  dimensionless and stay plain arrays.
- Quantified coordinates (pint-xarray's ``PintIndex``) come back as plain
  coordinates with a ``units`` attribute, which ``.pint.quantify()`` reads.
- *saved and reopened*: :func:`describe` writes the units as text,
  :func:`restore` reads them back, as pint units where pint and pint-xarray
  are installed, else as text (``Units.text``), which the result puts on
  ``S``, ``mean`` and ``reconstruct()`` as ``units`` attributes.
- *new data* (``project``): :func:`magnitude_in` converts them to the
  decomposed data's units, or raises naming both; plain data are compared by
  their ``units`` attributes.

Offset units (``degC``, ``degF``) cannot be multiplied, and a singular value
is a magnitude of differences, not a temperature on a scale: ``S`` (and the
total variance) get the *delta* unit (``delta_degC``), while ``mean`` and
``reconstruct()`` keep ``degC``.

pint is never imported here at module level, and never by ``import xsvd``:
quantified data are recognised by the module of their type, and pint is only
imported once such data have been seen (it is then already loaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

__all__ = [
    "Units",
    "describe",
    "restore",
    "text_of",
    "is_quantity",
    "strip",
    "quantify",
    "dequantify",
    "magnitude_in",
    "delta",
    "attr_units",
    "data_delta",
]


@dataclass(frozen=True)
class Units:
    """Units of a decomposition: pint units, or None where plain numbers.

    ``data`` are the units of the quantified input (of ``mean`` and
    ``reconstruct()``), None for plain input; ``singular`` the units of ``S``;
    ``coords`` the names of the input's coordinates that were quantified.
    ``text``: for a quantified result reopened where pint and pint-xarray are
    not installed, its units as text (keys ``"data"`` and ``"singular"``), put
    on the results as ``units`` attributes; ``data`` and ``singular`` are then
    None (nothing is quantified).
    """

    data: Any
    singular: Any
    coords: tuple = ()
    text: Mapping[str, str | None] = field(default_factory=dict, hash=False)

    @property
    def variance(self) -> Any:
        """Units of sums of squares (``S**2``)."""
        return None if self.singular is None else self.singular**2


def is_quantity(x: Any) -> bool:
    """True for a pint Quantity (duck-typed by its module; never imports pint)."""
    t = type(x)
    return t.__module__.partition(".")[0] == "pint" and hasattr(x, "magnitude")


def _split(x: Any) -> tuple[Any, Any]:
    """``(plain, units)`` of a DataArray or bare Quantity; units None when not quantified."""
    if isinstance(x, xr.DataArray):
        if is_quantity(x.data):
            q = x.data
            return x.copy(deep=False, data=q.magnitude), q.units
        return x, None
    if is_quantity(x):
        return x.magnitude, x.units
    return x, None


def _dequantify_coords(obj: xr.DataArray) -> tuple[xr.DataArray, tuple]:
    """Quantified coordinates as plain ones with a ``units`` attribute, and their names.

    Only the coordinates change (call it once the data are plain).
    """
    names = tuple(name for name, c in obj.coords.items() if is_quantity(c.variable.data))
    if not names:
        return obj, names
    try:
        import pint_xarray  # noqa: F401  (the .pint accessor; it made the PintIndex)
    except ImportError:  # pragma: no cover - quantified coordinates come from pint-xarray
        out = obj
        for name in names:
            var = obj.coords[name].variable
            plain = var.copy(deep=False, data=var.data.magnitude)
            plain.attrs = {**var.attrs, "units": str(var.data.units)}
            out = out.assign_coords({name: plain})
        return out, names
    return obj.pint.dequantify(), names


def strip(obj: xr.DataArray, weights: Any) -> tuple[xr.DataArray, Any, Units | None]:
    """Units off: plain data and weights, and the units to put back (None: no units).

    The data's magnitude keeps its type (a Dask array stays lazy). Quantified
    coordinates (pint-xarray's) become plain ones with a ``units`` attribute,
    which is how the results carry them.
    """
    plain, data_units = _split(obj)
    plain, coords = _dequantify_coords(plain)
    weights, weight_units = _split(weights)
    if data_units is None and weight_units is None:
        return plain, weights, (Units(None, None, coords) if coords else None)
    s_units = delta(data_units) if data_units is not None else attr_units(obj, weight_units)
    if weight_units is not None:
        s_units = s_units * weight_units
    return plain, weights, Units(data=data_units, singular=s_units, coords=coords)


def _registry(units: Any):
    return units._REGISTRY


def delta(units: Any) -> Any:
    """``units`` for differences: ``delta_degC`` for ``degC``, unchanged when multiplicative."""
    zero = _registry(units).Quantity(0.0, units)
    return (zero - zero).units


def attr_units(obj: xr.DataArray, weight_units: Any) -> Any:
    """Units of plain data, from its ``units`` attribute (dimensionless without one)."""
    reg = _registry(weight_units)
    text = obj.attrs.get("units")
    if text is None:
        return reg.dimensionless
    import pint

    try:
        return delta(reg.parse_units(str(text)))
    except (pint.PintError, ValueError) as exc:
        raise ValueError(
            f"The weights carry units ({weight_units}), so the singular values get units "
            f"too, but the data's units attribute {text!r} is not a unit pint knows. "
            "Quantify the data (e.g. `da.pint.quantify('K')`) or pass plain weights."
        ) from exc


def data_delta(units: Units, attrs: dict) -> Any:
    """The units of differences of the data (``delta_degC`` for ``degC``).

    From the quantified data's units, or for plain data with quantified
    weights from their ``units`` attribute (``attrs``).
    """
    if units.data is not None:
        return delta(units.data)
    return attr_units(xr.DataArray(0, attrs=attrs), units.singular)


def quantify(obj: xr.DataArray, units: Any) -> xr.DataArray:
    """Put pint ``units`` on a plain DataArray (no-op for None); a Dask array stays lazy."""
    if units is None:
        return obj
    q = _registry(units).Quantity(obj.data, units)
    out = obj.copy(deep=False, data=q)
    out.attrs = {k: v for k, v in obj.attrs.items() if k != "units"}
    return out


def dequantify(obj: xr.DataArray) -> xr.DataArray:
    """The magnitude, with the units as a ``units`` attribute (for saving)."""
    plain, units = _split(obj)
    if units is None:
        return obj
    plain.attrs = {**obj.attrs, "units": _text(units)}
    return plain


def _text(units: Any) -> str:
    """Pint units as text that pint parses back (its ``D`` format, whatever the default)."""
    return format(units, "D")


# ------------------------------------------------------------ saved results
def describe(units: Units | None) -> dict | None:
    """The units of a result as JSON-able text (None when it has none), for saving.

    ``{"data": ..., "singular": ..., "coords": [...]}``: the units of the
    quantified input (None for plain input), of ``S``, and the names of the
    input's quantified coordinates.
    """
    if units is None or (units.data is None and units.singular is None and not units.text):
        return None
    out = {}
    for which in ("data", "singular"):
        value = getattr(units, which)
        out[which] = _text(value) if value is not None else units.text.get(which)
    out["coords"] = [str(c) for c in units.coords]
    return out


def restore(description: Mapping | None) -> Units | None:
    """The :class:`Units` that :func:`describe` wrote: pint units, or text without pint.

    Quantified again (pint-xarray's registry, pint's application registry)
    where pint and pint-xarray are installed and the units parse there; as
    text (``Units.text``) otherwise, put on the results as ``units``
    attributes.
    """
    if not description:
        return None
    text = {k: description.get(k) for k in ("data", "singular")}
    coords = tuple(description.get("coords") or ())
    try:
        import pint
        import pint_xarray
    except ImportError:
        return Units(None, None, coords, text)
    reg = pint_xarray.unit_registry
    try:
        parsed = {k: None if v is None else reg.parse_units(v) for k, v in text.items()}
    except (pint.PintError, ValueError, AttributeError, TypeError):
        return Units(None, None, coords, text)  # units of another registry: keep them as text
    return Units(parsed["data"], parsed["singular"], coords)


def text_of(units: Units | None, which: str) -> str | None:
    """Units of ``"data"`` or ``"singular"`` as text, for ``units`` attributes; None if unknown.

    Only for results whose units are text (reopened without pint); None
    when they are pint units (the values are quantified instead) or absent.
    """
    if units is None:
        return None
    return units.text.get(which)


def magnitude_in(
    other: xr.DataArray, units: Units | None, attrs: Mapping | None = None
) -> xr.DataArray:
    """New data for ``project``: plain, in the decomposed data's units.

    ``units`` are the decomposition's, ``attrs`` the decomposed data's
    attributes. The rules:

    - decomposed data quantified: quantified new data are converted to their
      units (an absolute conversion: kelvin to degC subtracts 273.15), an
      error if they cannot be; plain new data are an error;
    - decomposed data plain: quantified new data are an error. Plain new data
      are compared by their ``units`` attributes: where both have one and
      the two differ, the new data are converted with pint (an error naming
      both units when pint is not installed, does not know one of them, or
      they are not compatible). Where either has none, nothing is checked;
    - a quantified result reopened without pint-xarray (units as text)
      counts as plain data in those units; quantified new data are converted
      to them.
    """
    if not isinstance(other, xr.DataArray):
        return other  # the layout says what it needs
    attrs = {} if attrs is None else attrs
    data_units = None if units is None else units.data
    plain, other_units = _split(other)
    plain, _ = _dequantify_coords(plain)
    if other_units is None:
        if data_units is not None:
            raise ValueError(
                f"The decomposed data are in {data_units} but the new data have no units. "
                f"Quantify them, e.g. `new.pint.quantify({_text(data_units)!r})`."
            )
        have = text_of(units, "data") or attrs.get("units")
        return _converted(plain, other.attrs.get("units"), have)
    q = other.data
    if data_units is None:
        saved = text_of(units, "data")
        if saved is not None:  # reopened without pint-xarray: the saved units, as text
            return _converted(plain, _text(q.units), saved, registry=_registry(q.units))
        raise ValueError(
            f"The new data are in {q.units} but the decomposed data had no (pint) units. "
            "Project plain data, e.g. `new.pint.dequantify()`, or decompose quantified data."
        )
    import pint

    try:
        mag = q.m_as(_text(data_units))  # parsed in the new data's registry
    except (pint.PintError, ValueError) as exc:
        raise ValueError(
            f"Cannot project data in {q.units} onto a decomposition of data in "
            f"{data_units}: the units are not compatible ({exc})."
        ) from exc
    return plain.copy(deep=False, data=mag)


def _converted(plain: xr.DataArray, given, wanted, registry=None) -> xr.DataArray:
    """``plain``, in units ``given``, in units ``wanted`` (text); unchanged if either is None.

    Converted with pint (``registry``, else its application registry) when
    the two texts differ; an error naming both when that cannot be done.
    """
    if given is None or wanted is None or str(given).strip() == str(wanted).strip():
        return plain
    given, wanted = str(given), str(wanted)
    fix = (
        f"Convert the new data to {wanted!r} (and set their `units` attribute to {wanted!r}) "
        "before projecting"
    )
    try:
        import pint
    except ImportError:
        raise ValueError(
            f"The new data are in {given!r} but the decomposed data were in {wanted!r}, and "
            f"without pint these units cannot be compared or converted. {fix}, or install "
            'pint to convert them automatically: pip install "xsvd[units]".'
        ) from None
    reg = registry if registry is not None else pint.get_application_registry()
    try:
        mag = reg.Quantity(plain.data, given).m_as(wanted)
    except (pint.PintError, ValueError, AttributeError, TypeError) as exc:
        raise ValueError(
            f"Cannot project data in {given!r} onto a decomposition of data in {wanted!r}: "
            f"pint cannot convert one to the other ({type(exc).__name__}: {exc}). {fix}."
        ) from exc
    out = plain.copy(deep=False, data=mag)
    out.attrs = {**plain.attrs, "units": wanted}
    return out
