"""Money text → integer cents: accepted forms, every rejection reason, and the round trip."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fundpipe.sheets.money import format_cents, format_spreadsheet_number, parse_money


def one(text: str | None) -> tuple[object, object]:
    out = parse_money(pd.Series([text], dtype="str"))
    cents = out["cents"].iloc[0]
    check = out["check"].iloc[0]
    return (None if pd.isna(cents) else int(cents), None if pd.isna(check) else check)


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("$1,234.56", 123456),
        ("1234.5", 123450),
        ("1,234", 123400),
        ("USD 7.10", 710),
        ("$ 1 000.00", 100000),
        ("0.01", 1),
        ("1.500", 150),
        ("  42  ", 4200),
        ("999,999,999.99", 99999999999),
    ],
)
def test_accepted_money_becomes_exact_cents(text: str, cents: int) -> None:
    assert one(text) == (cents, None)


@pytest.mark.parametrize(
    ("text", "check"),
    [
        ("-5.00", "amount_negative"),
        ("(1.00)", "amount_negative"),
        ("$(1,234.56)", "amount_negative"),
        ("0", "amount_zero"),
        ("$0.00", "amount_zero"),
        ("1.234", "amount_too_many_decimals"),
        ("10.001", "amount_too_many_decimals"),
        ("abc", "amount_not_a_number"),
        ("12,34,567", "amount_not_a_number"),
        ("1.234,56", "amount_ambiguous_separators"),
        ("12,5", "amount_ambiguous_separators"),
        ("€1,000.00", "amount_not_usd"),
        ("1000 EUR", "amount_not_usd"),
        ("", "amount_required"),
        (None, "amount_required"),
        ("99999999999999999", "amount_too_large"),
        # thousands separators do not let an amount past int64 (it wrapped round once)
        ("1,000,000,000,000,000,000", "amount_too_large"),
    ],
)
def test_rejected_money_names_its_reason(text: str | None, check: str) -> None:
    assert one(text) == (None, check)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1234.5, "1234.50"),
        (0.1 + 0.2, "0.30"),
        (21000021.0, "21000021"),
        (0.125, "0.125"),
        (1e9 + 0.01, "1000000000.01"),
        (1234.56 * 3, "3703.68"),
    ],
)
def test_spreadsheet_numbers_round_to_the_cent_only_within_a_tiny_tolerance(
    value: float, text: str
) -> None:
    assert format_spreadsheet_number(value) == text


def many(texts: list[str]) -> list[tuple[object, object]]:
    out = parse_money(pd.Series(texts, dtype="str"))
    return [
        (None if pd.isna(c) else int(c), None if pd.isna(k) else k)
        for c, k in zip(out["cents"], out["check"], strict=True)
    ]


# One parse per example over a list: the parser is built for columns, not single cells.
@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**14), min_size=1, max_size=200))
def test_money_text_round_trips_through_cents(cents: list[int]) -> None:
    assert many([format_cents(c) for c in cents]) == [(c, None) for c in cents]
    assert many([f"{c // 100}.{c % 100:02d}" for c in cents]) == [(c, None) for c in cents]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=1, max_size=200))
def test_excel_float_of_a_cent_amount_round_trips(cents: list[int]) -> None:
    # what a spreadsheet stores for the typed amount is the nearest double to cents / 100
    assert many([format_spreadsheet_number(c / 100) for c in cents]) == [(c, None) for c in cents]


def test_an_astronomically_large_spreadsheet_number_is_text_not_a_crash() -> None:
    from fundpipe.sheets.money import format_spreadsheet_number

    assert format_spreadsheet_number(1e307) == "1e+307"
    assert format_spreadsheet_number(1234.5) == "1234.50"
