"""The options of :func:`xsvd.svd`, described from their one declaration.

The names, defaults and types come from the signature that
:func:`~xsvd.core.options.takes_options` makes of the options classes
(:class:`~xsvd.labeled.api.Labeling`, :class:`~xsvd.core.options.Preprocessing`,
:class:`~xsvd.core.options.CompressedOptions`); what each option means comes
from the Parameters sections of :func:`xsvd.svd` and :func:`xsvd.compressed`,
the docstrings ``help()`` shows. Two readers are built on it: the options
table of ``docs/getting-started.md`` (:func:`options_table`, checked against
the page by the tests) and the flags of ``xsvd run`` (:mod:`xsvd.cli`).

What a default of ``None`` stands for is said here, once, from the
constants the solver uses (:data:`NONE_MEANS`).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..core.options import (
    DEFAULT_MAX_PASSES,
    DEFAULT_N_POWER_ITER,
    DEFAULT_TOL,
    CompressedOptions,
    Preprocessing,
)
from . import api

__all__ = [
    "Option",
    "NONE_MEANS",
    "described_options",
    "parameter_docs",
    "plain_text",
    "options_table",
    "with_options_table",
    "TABLE_START",
    "TABLE_END",
]

#: The most passes of the default stop (neither ``n_power_iter`` nor ``tol`` given).
_CAP = DEFAULT_N_POWER_ITER + 1
_TOL = f"{DEFAULT_TOL:g}".replace("e-0", "e-")

#: What ``None``, the declared default of these options, stands for, in words (from the
#: solver's constants). Other compressed options show the value the solver fills in
#: (:meth:`~xsvd.core.options.CompressedOptions.resolved`).
NONE_MEANS = {
    "k": "all components (the exact SVD)",
    "dim": "the first dimension, where that is unambiguous",
    "weights": "no weights",
    "device": "the data stay where they are",
    "negative_missing": 'yes in integer data with `missing="mean"`, else no',
    "n_power_iter": (
        f"not fixed: pass until every estimated relative error is below `tol={_TOL}`, "
        f"{_CAP} passes at most"
    ),
    "seed": "fresh randomness at each call",
    "dtype": "float64 for float64 data, float32 for integer and float32 data",
    "tol": f"`{_TOL}` while `n_power_iter` is not given (the default stop)",
    "max_passes": f"`{DEFAULT_MAX_PASSES}` with a given `tol`; {_CAP} for the default stop",
}

#: The marker comments around the generated table in a Markdown page.
TABLE_START = "<!-- options-table:start (made by xsvd.labeled.options_doc.options_table) -->"
TABLE_END = "<!-- options-table:end -->"

_COMPRESSED = frozenset(f.name for f in fields(CompressedOptions))
#: The values the solver fills in for the compressed options left at None.
_RESOLVED = vars(CompressedOptions().resolved(lazy=False))


@dataclass(frozen=True)
class Option:
    """One keyword option of an entry point, as declared.

    Attributes
    ----------
    name : str
        The keyword, e.g. ``"n_power_iter"``.
    default : object
        Its declared default (``None`` often means "chosen by the solver":
        see :attr:`default_text`).
    kind : {"bool", "int", "float", "choice"} or None
        The scalar type, or None for other values (dimensions, arrays, dtypes).
    choices : tuple of str
        The values of a ``Literal`` type (``kind == "choice"``).
    nullable : bool
        Whether ``None`` is a value of its type.
    description : str
        The first sentence of its docstring entry, with the next short ones
        (reStructuredText).
    compressed_only : bool
        Whether only the compressed solver takes it.
    """

    name: str
    default: Any
    kind: str | None
    choices: tuple[str, ...]
    nullable: bool
    description: str
    compressed_only: bool

    @property
    def default_text(self) -> str:
        """The default in words, Markdown: a value, or what ``None`` stands for."""
        value = self.default
        if value is None and self.name in NONE_MEANS:
            return NONE_MEANS[self.name]
        if value is None and self.compressed_only:
            value = _RESOLVED[self.name]
        if value is None:  # a new option whose None means something: say it in NONE_MEANS
            raise KeyError(f"say what {self.name}=None means in NONE_MEANS")
        if isinstance(value, str):
            return f'`"{value}"`'
        return f"`{value!r}`"


def parameter_docs(*functions: Callable) -> dict[str, str]:
    """The text of each entry of the numpydoc Parameters sections of ``functions``.

    An entry that documents one name wins over a line that lists several
    (``"obj, dim, center\\n    See :func:`svd`."``), and the first function's
    over the later ones'.
    """
    single: dict[str, str] = {}
    grouped: dict[str, str] = {}
    for fn in functions:
        for names, text in _entries(inspect.getdoc(fn) or ""):
            target = single if len(names) == 1 else grouped
            for name in names:
                target.setdefault(name, text)
    return {**grouped, **single}


def _entries(doc: str) -> list[tuple[list[str], str]]:
    """``(names, text)`` of each entry of a docstring's Parameters section."""
    lines = doc.splitlines()
    try:
        start = next(
            i + 2
            for i, line in enumerate(lines[:-1])
            if line.strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"}
        )
    except StopIteration:
        return []
    out: list[tuple[list[str], list[str]]] = []
    for i in range(start, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and line and set(lines[i + 1].strip()) == {"-"}:
            break  # the next section
        if line and not line[0].isspace():
            names = line.split(" : ")[0]
            out.append(([n.strip() for n in names.split(",")], []))
        elif out and line.strip():
            out[-1][1].append(line.strip())
    return [(names, " ".join(text)) for names, text in out]


def _summary(text: str, short: int = 60) -> str:
    """The first sentence of ``text``, and the next ones while they are short (under
    ``short`` characters in all) and do not speak of the default (said apart)."""
    sentences = re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=\.)\s+", text.strip())
    out = sentences[0]
    for sentence in sentences[1:]:
        if len(out) >= short or sentence.startswith("Default"):
            break
        out = f"{out} {sentence}"
    return out


def _scalar(annotation: Any) -> tuple[str | None, tuple[str, ...], bool]:
    """``(kind, choices, nullable)`` of a type: bool, int, float, a Literal of str."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) is not Literal else ()
    members = [a for a in args if a is not type(None)] if args else [annotation]
    nullable = bool(args) and len(members) < len(args)
    if len(members) != 1:
        return None, (), nullable
    (member,) = members
    if typing.get_origin(member) is Literal:
        values = typing.get_args(member)
        nullable = nullable or None in values
        values = tuple(v for v in values if v is not None)
        if values and all(isinstance(v, str) for v in values):
            return "choice", values, nullable
        return None, (), nullable
    for kind in (bool, int, float):  # bool first: a bool is an int too
        if member is kind:
            return kind.__name__, (), nullable
    return None, (), nullable


def _hints(fn: Callable) -> dict[str, Any]:
    """The resolved types of ``fn``'s parameters, its options classes' fields included."""
    hints: dict[str, Any] = {}
    for cls in (api.Labeling, Preprocessing, CompressedOptions):
        hints.update(typing.get_type_hints(cls))
    hints.update(typing.get_type_hints(fn))
    return hints


def described_options(fn: Callable | None = None) -> list[Option]:
    """Every keyword option of ``fn`` (default :func:`xsvd.svd`), in signature order.

    ``k`` and ``method`` included; the data argument left out.

    Examples
    --------
    >>> opts = {o.name: o for o in described_options()}
    >>> opts["missing"].kind, opts["missing"].choices, opts["missing"].default
    ('choice', ('error', 'mean'), 'error')
    >>> opts["n_power_iter"].compressed_only, opts["n_power_iter"].kind
    (True, 'int')
    """
    fn = api.svd if fn is None else fn
    docs = parameter_docs(fn, api.compressed, api.svd)
    hints = _hints(fn)
    out = []
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        default = None if param.default is param.empty else param.default
        kind, choices, nullable = _scalar(hints.get(param.name))
        out.append(
            Option(
                name=param.name,
                default=default,
                kind=kind,
                choices=choices,
                nullable=nullable,
                description=_summary(docs.get(param.name, "")),
                compressed_only=param.name in _COMPRESSED,
            )
        )
    return out


def _markdown(text: str) -> str:
    """reStructuredText of a docstring as Markdown: ``x`` and :func:`~a.x` become `x`."""
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return text.replace("|", "\\|")


def plain_text(text: str) -> str:
    """reStructuredText or Markdown of a docstring as plain text (for a command's help):
    ``x``, `x` and :func:`~a.x` become x.

    Examples
    --------
    >>> plain_text("see :func:`~xsvd.compressed`, ``tol`` and `max_passes`")
    'see compressed, tol and max_passes'
    """
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    return text.replace("`", "")


def options_table(fn: Callable | None = None) -> str:
    """The Markdown table of the options of ``fn`` (default :func:`xsvd.svd`).

    One row per option: its name, its default (what ``None`` stands for, in
    words) and the summary of its docstring entry (:attr:`Option.description`).

    Examples
    --------
    >>> print(options_table().splitlines()[0])
    | option | default | meaning |
    """
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for opt in described_options(fn):
        meaning = _markdown(opt.description)
        if opt.compressed_only:
            meaning = f"compressed only: {meaning[:1].lower()}{meaning[1:]}"
        rows.append(f"| `{opt.name}` | {opt.default_text} | {meaning} |")
    return "\n".join(rows)


def with_options_table(page: str, fn: Callable | None = None) -> str:
    """``page`` (Markdown) with the text between :data:`TABLE_START` and
    :data:`TABLE_END` replaced by :func:`options_table`.

    A page without both markers is a ``ValueError``.
    """
    head, start, rest = page.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not (start and end):
        raise ValueError(f"the page has no {TABLE_START} ... {TABLE_END} markers.")
    return f"{head}{start}\n{options_table(fn)}\n{end}{tail}"
