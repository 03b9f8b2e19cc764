"""Kubernetes resource quantities, parsed exactly.

Grammar (apimachinery ``resource.Quantity``): a signed decimal number (``1``, ``.5``,
``1.``, ``+2``), then either a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal SI suffix
(n u m "" k M G T P E) or a decimal exponent (``e3``, ``E-2``). Values are returned as
``Fraction`` so that nothing is rounded until the caller chooses a unit.

:func:`to_milli` and :func:`to_int` take an integer fast path for the common spellings (an
optional sign, ASCII digits, then nothing or one of the SI or binary suffixes): metric
samples such as ``"123456789n"`` or ``"1843212Ki"`` are nearly all distinct, so the parse
cache cannot help them, and the ``Fraction`` arithmetic costs ~10 µs a value. The fast
path is exact integer arithmetic (the same ceiling); anything else goes through
:func:`parse_quantity`.

Bounds (beyond the grammar, so that no value can stall or overflow a fold): a quantity
string is at most :data:`MAX_TEXT` characters, its decimal exponent at most
:data:`MAX_EXPONENT` in size, and its magnitude at most :data:`MAX_MAGNITUDE` (2^63 - 1,
the largest value apimachinery represents; it clamps larger ones, tide refuses them).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from math import ceil, isfinite

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))\Z"
)


#: suffix -> (numerator, denominator) of its multiplier, for the integer fast path
_INT_SCALE: dict[str, tuple[int, int]] = {
    **{suffix: (factor, 1) for suffix, factor in _BINARY.items()},
    **{suffix: (f.numerator, f.denominator) for suffix, f in _DECIMAL.items()},
}
#: ``<sign?><ASCII digits><suffix>``; ``fullmatch`` (``$`` would accept a trailing newline)
_INTEGER = re.compile(r"([+-]?[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)")


MAX_TEXT = 64
MAX_EXPONENT = 64
MAX_MAGNITUDE = 2**63 - 1


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def quantity_problem(value: object, *, negative: bool = False) -> str | None:
    """Why ``value`` is not a quantity tide accepts (None when it is one): the grammar,
    ASCII only, the bounds above and, unless ``negative``, not below zero."""
    if type(value) is str:
        if len(value) > MAX_TEXT:
            return f"quantity is longer than {MAX_TEXT} characters"
        if not value.isascii():
            return f"quantity {value!r} is not ASCII"
        integer = _INTEGER.fullmatch(value)
        if integer is not None:  # the common spellings, in exact integer arithmetic
            digits, suffix = integer.groups()
            num, den = _INT_SCALE[suffix]
            amount = int(digits)
            if abs(amount) * num > MAX_MAGNITUDE * den:
                return f"quantity {value!r} is larger than {MAX_MAGNITUDE}"
            return f"quantity {value!r} is negative" if amount < 0 and not negative else None
        try:
            number = parse_quantity(value)
        except QuantityError as exc:
            return str(exc)
        if abs(number) > MAX_MAGNITUDE:
            return f"quantity {value!r} is larger than {MAX_MAGNITUDE}"
        return f"quantity {value!r} is negative" if number < 0 and not negative else None
    if type(value) is int:
        if abs(value) > MAX_MAGNITUDE:
            return f"quantity {value} is larger than {MAX_MAGNITUDE}"
        return None if negative or value >= 0 else f"quantity {value} is negative"
    if type(value) is float:
        if not isfinite(value) or abs(value) > MAX_MAGNITUDE:
            return f"quantity {value!r} is not a finite number up to {MAX_MAGNITUDE}"
        return None if negative or value >= 0 else f"quantity {value!r} is negative"
    return "not a Kubernetes quantity"


# typed: an untyped cache key lets False hit a cached 0.0 (False == 0.0, same hash)
@lru_cache(maxsize=4096, typed=True)
def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity (``"500m"``, ``"2Gi"``, ``"1e3"``, ``"0.5"``) to an exact number."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity {text!r} is not a number")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not isfinite(text):
            raise QuantityError(f"quantity {text!r} is not a finite number")
        return Fraction(str(text))
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise QuantityError(f"quantity {text!r} is not a valid Kubernetes quantity")
    match = _PATTERN.match(text)
    if match is None or text != text.strip() or not text.isascii():
        raise QuantityError(f"quantity {text!r} is not a valid Kubernetes quantity")
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"quantity {text!r} has an exponent beyond +-{MAX_EXPONENT}")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["dec"] or ""]


def is_quantity(value: object) -> bool:
    """Whether ``value`` is a quantity :func:`parse_quantity` accepts, without the arithmetic.

    Validation checks every quantity of every imported object, and metric samples are
    nearly all distinct (``"123456789n"``), so the parse cache cannot help there.
    """
    return quantity_problem(value, negative=True) is None


def to_milli(text: str | int | float) -> int:
    """The quantity in thousandths, rounded up (as ``Quantity.MilliValue``)."""
    if type(text) is str and len(text) <= MAX_TEXT:
        match = _INTEGER.fullmatch(text)
        if match is not None:
            digits, suffix = match.groups()
            num, den = _INT_SCALE[suffix]
            return -((-int(digits) * num * 1000) // den)  # exact ceiling
    elif type(text) is int:
        return text * 1000
    return ceil(parse_quantity(text) * 1000)


def to_int(text: str | int | float) -> int:
    """The quantity as an integer, rounded up (as ``Quantity.Value``)."""
    if type(text) is str and len(text) <= MAX_TEXT:
        match = _INTEGER.fullmatch(text)
        if match is not None:
            digits, suffix = match.groups()
            num, den = _INT_SCALE[suffix]
            return -((-int(digits) * num) // den)  # exact ceiling
    elif type(text) is int:
        return text
    return ceil(parse_quantity(text))
