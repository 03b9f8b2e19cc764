"""Quick coercion of the command line's plain parameter types, without pydantic (issue 26,
item 4: an offline command's start-up).

typer 0.29 turns each parameter's text into its value through a pydantic ``TypeAdapter`` it
builds when the command runs (``typer._coercion.build_runtime_param``, called from
``typer.core._TyperParameter.get_runtime_param``): any command with an option imports
pydantic, more than a third of ``tide audit decisions``'s start-up. :func:`install` gives
typer a :class:`QuickParam` for the types tide's commands use (``str``, ``int``, ``float``,
``bool``, ``Path``, an ``Enum`` or ``Literal``, a ``list`` of those; typer has already
unwrapped ``Optional``). It converts only the inputs whose answer is certain (ASCII digits
for an ``int``, a known word for a ``bool``, ...) and hands any other one to typer's own
coercion, built when first needed: the same value, or the same error, either way
(tests/controller/cli/test_coercion.py holds both to a table of inputs). Any other
annotation, a custom parser or a file parameter is typer's own from the start.

This leans on typer internals: pyproject.toml pins typer to 0.29.x, and :func:`install`
leaves typer as it is when they are not there (the test fails loudly then).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

from typer import _coercion, core
from typer._param_types import (
    choice_coercion_annotation,
    coerce_cli_choice,
    coerce_cli_path,
    routes_to_path,
)

if TYPE_CHECKING:
    from typer._click import Context
    from typer._coercion import TypeDescriptor
    from typer.core import _TyperParameter
    from typer.models import ParameterInfo

#: "no certain answer": typer's own coercion decides (a value or an error)
UNSURE: Any = object()

#: a converter: (value, parameter, context) -> the value, or UNSURE
Convert = Callable[[Any, "_TyperParameter", "Context"], Any]

#: the words pydantic reads as a bool (lower case), after typer strips the input
_BOOLS = {
    **dict.fromkeys(("1", "on", "t", "true", "y", "yes"), True),
    **dict.fromkeys(("0", "f", "false", "n", "no", "off"), False),
}
#: longer digit strings go to typer (Python's own limit on int() of a string is 4,300)
_DIGITS = 18


class QuickParam(_coercion.RuntimeParam):
    """One parameter's coercion: ``convert`` first, typer's own when it is unsure (built
    the first time it is). Not a dataclass of its own: generating one costs start-up."""

    def __init__(self, descriptor: TypeDescriptor, convert: Convert) -> None:
        super().__init__(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
        # RuntimeParam is a frozen dataclass
        object.__setattr__(self, "descriptor", descriptor)
        object.__setattr__(self, "convert", convert)
        object.__setattr__(self, "fallback", [])

    descriptor: TypeDescriptor
    convert: Convert
    fallback: list[_coercion.RuntimeParam]

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        found = self.convert(value, param, ctx)
        if found is not UNSURE:
            return found
        if not self.fallback:
            self.fallback.append(_coercion.build_runtime_param(self.descriptor))
        return self.fallback[0]._coerce_value(value, param=param, ctx=ctx)


def _str(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    return value if type(value) is str else UNSURE


def _plain_number(text: str, *, point: bool) -> bool:
    """Whether ``text`` is ASCII digits with an optional sign (and with ``point``, one
    decimal point among or around them): what int() and float() read as pydantic does."""
    body = text[1:] if text[:1] in ("+", "-") else text
    whole, _, part = body.partition(".") if point else (body, "", "")
    digits = whole + part
    return 0 < len(digits) <= _DIGITS and digits.isascii() and digits.isdigit()


def _number(kind: type[int] | type[float], info: ParameterInfo) -> Convert:
    point = kind is float

    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        if type(value) is str and _plain_number(value, point=point):
            number: int | float = kind(value)
        elif type(value) is kind or (kind is float and type(value) is int):
            number = kind(value)
        else:
            return UNSURE
        if (info.min is not None and number < info.min) or (
            info.max is not None and number > info.max
        ):
            return UNSURE  # typer says how it is out of range
        return number

    return convert


def _bool(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    if type(value) is bool:
        return value
    if type(value) is not str or not value.isascii():
        return UNSURE
    word = value.strip().lower()
    return False if word == "" else _BOOLS.get(word, UNSURE)


def _path(info: ParameterInfo) -> Convert:
    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        if type(value) is str:
            value = Path(value)  # what typer's pydantic Path gives for a string
        elif not isinstance(value, Path):
            return UNSURE
        return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)

    return convert


def _choice(choices: tuple[Any, ...], case_sensitive: bool) -> Convert:
    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        try:
            return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive, ctx=ctx)
        except ValueError:
            return UNSURE  # typer's message names the choices

    return convert


def _each(item: Convert) -> Convert:
    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        if not isinstance(value, list | tuple):
            return UNSURE
        found = [item(v, param, ctx) for v in value]
        return UNSURE if any(v is UNSURE for v in found) else found

    return convert


def converter(annotation: Any, info: ParameterInfo) -> Convert | None:
    """The quick converter of a parameter of type ``annotation`` (None: typer's own);
    in the order typer's ``_adapters.build_leaf_adapter`` tries them."""
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        inner = converter(item, info)
        return None if inner is None else _each(inner)
    if info.parser is not None or info.clamp:
        return None
    choice = choice_coercion_annotation(annotation, info)
    if choice is not None:
        choices, case_sensitive = choice
        if any(isinstance(c, Enum) and type(c) is not annotation for c in choices):
            return None
        return _choice(choices, case_sensitive)
    if annotation is int or annotation is float:
        return _number(annotation, info)
    if annotation is bool:
        return _bool
    if annotation is str:
        return _str
    if annotation is Path and routes_to_path(annotation, info) and info.path_type is None:
        return _path(info)
    return None


def build(descriptor: TypeDescriptor) -> _coercion.RuntimeParam:
    """typer's ``build_runtime_param`` for tide: a :class:`QuickParam` where
    :func:`converter` has one, typer's own otherwise."""
    convert = (
        None if descriptor.is_file else converter(descriptor.annotation, descriptor.parameter_info)
    )
    if convert is None:
        return _coercion.build_runtime_param(descriptor)
    return QuickParam(descriptor, convert)


def supported() -> bool:
    """Whether this typer has the internals :func:`install` replaces (typer 0.29)."""
    getter = getattr(core._TyperParameter, "get_runtime_param", None)
    return (
        callable(getattr(core, "build_runtime_param", None))
        and callable(getattr(_coercion, "build_runtime_param", None))
        and getter is not None
        and "build_runtime_param" in getter.__code__.co_names
        and "_coerce_value" in getattr(_coercion.RuntimeParam, "__abstractmethods__", ())
    )


def install() -> None:
    """Make typer coerce parameters with :func:`build` (once; nothing on another typer)."""
    if supported():
        core.build_runtime_param = build  # type: ignore[attr-defined]
