"""Kubernetes quantities: exact values, the grammar, and the validity check."""

from __future__ import annotations

from fractions import Fraction

import pytest

from streams.quantity import QuantityError, is_quantity, parse_quantity, to_int, to_milli

VALUES = [
    ("1", Fraction(1)),
    ("500m", Fraction(1, 2)),
    ("0.5", Fraction(1, 2)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("+2", Fraction(2)),
    ("-1", Fraction(-1)),
    ("2Gi", Fraction(2 * 2**30)),
    ("1.5Ki", Fraction(1536)),
    ("1Ei", Fraction(2**60)),
    ("1k", Fraction(1000)),
    ("3M", Fraction(3 * 10**6)),
    ("1E", Fraction(10**18)),
    ("1e3", Fraction(1000)),
    ("5E-3", Fraction(5, 1000)),
    ("123456789n", Fraction(123456789, 10**9)),
    ("250u", Fraction(1, 4000)),
    (2, Fraction(2)),
    (0.25, Fraction(1, 4)),
]
NOT_QUANTITIES = [
    "",
    " 1",
    "1 ",
    "1\n",
    "12x",
    "1K",
    "1KiB",
    "1.5.5",
    "Gi",
    "--1",
    "1e",
    "e3",
    "1 Gi",
    "\u0661\u0662",  # Arabic-Indic digits: Kubernetes' grammar is ASCII only
    "\uff11Gi",  # a fullwidth 1
    "1\u0660m",
    "1Gi\n",
]


@pytest.mark.parametrize(("text", "value"), VALUES)
def test_quantities_parse_exactly(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value
    assert is_quantity(text)


@pytest.mark.parametrize("text", NOT_QUANTITIES)
def test_other_strings_are_refused_with_the_text(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a valid Kubernetes quantity"):
        parse_quantity(text)
    assert not is_quantity(text)


@pytest.mark.parametrize("value", [True, False, float("inf"), float("nan")])
def test_booleans_and_non_finite_floats_are_not_quantities(value: float) -> None:
    assert not is_quantity(value)
    with pytest.raises(QuantityError):
        parse_quantity(value)


@pytest.mark.parametrize("value", [None, [], {}, b"1"])
def test_other_json_values_are_not_quantities(value: object) -> None:
    assert not is_quantity(value)


@pytest.mark.parametrize(("cached", "boolean"), [(1, True), (0, False), (1.0, True), (0.0, False)])
def test_a_cached_number_does_not_make_a_bool_a_quantity(cached: float, boolean: bool) -> None:
    assert parse_quantity(cached) == cached
    with pytest.raises(QuantityError):
        parse_quantity(boolean)


def test_milli_and_int_round_up_like_apimachinery() -> None:
    assert to_milli("1.0001m") == 2
    assert to_milli("250m") == 250
    assert to_milli("2") == 2000
    assert to_int("1.2") == 2
    assert to_int("1Ki") == 1024


def test_the_integer_fast_path_matches_the_exact_parse() -> None:
    from math import ceil

    suffixes = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    numbers = ["0", "1", "7", "-7", "+7", "999", "123456789", "-123456789", "10000000000000000001"]
    for number in numbers:
        for suffix in suffixes:
            text = number + suffix
            exact = parse_quantity(text)
            assert to_milli(text) == ceil(exact * 1000), text
            assert to_int(text) == ceil(exact), text
    for value in (0, 3, -3, 2**70):
        assert to_milli(value) == value * 1000 and to_int(value) == value
    # not plain integers: the exact parse (ASCII digits only, as Kubernetes' grammar)
    for text in ("1.5Ki", "1e3", "0.0001", ".5m"):
        assert to_milli(text) == ceil(parse_quantity(text) * 1000)
    for bad in ("1\n", " 1", "1K", "1_000"):
        with pytest.raises(QuantityError):
            to_milli(bad)
