"""Money text → integer cents, exactly and vectorised.

Accepted: ``$1,234.56``, ``1234.5``, ``1,234``, ``USD 1234.56``, and numbers read from
spreadsheets (see `format_spreadsheet_number`). Rejected, each with its own check and a reason in
plain words: blank, non-USD (``€``, ``EUR``…), negative (``-5``, ``(1.00)``), ambiguous
separators (``1.234,56``), not a number, more than two decimals, absurdly large, zero.

The parse is string arithmetic on whole columns (regex extraction of the integer and fraction
parts, then integer casts): no float and no per-row ``Decimal`` ever touches the amount.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.cents import format_cents as format_cents
from fundpipe.sheets.frames import text_by_code

#: Largest integer-part digits accepted before the amount is called absurd (keeps int64 safe).
_MAX_INT_DIGITS = 13

# RE2 (pyarrow) has no look-around: a currency code counts when no letter touches it.
_FOREIGN = (
    r"(?i)(?:€|£|¥|₹|₣|(?:^|[^a-z])(?:EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR|MXN|BRL|HKD|SGD)(?:[^a-z]|$))"
)
_NUMBER = r"^(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?:\.(?P<frac>\d*))?$"
_AMBIGUOUS = r"^\d[\d.,]*(?:,\d{1,2}|\.\d{3}[.,]\d*)$"

#: check name → reason, for every money check (also used by the error report's legend)
MONEY_REASONS: dict[str, str] = {
    "amount_required": "the amount is blank",
    "amount_not_usd": "only US dollars are accepted; this amount names another currency",
    "amount_negative": "the amount is negative; payments must be positive amounts",
    "amount_ambiguous_separators": (
        "the separators are ambiguous (European style?); write it as 1234.56 — a dot before the "
        "cents and commas only between thousands"
    ),
    "amount_not_a_number": "the amount is not a number",
    "amount_too_many_decimals": "the amount has more than two decimals (cents)",
    "amount_too_large": "the amount is too large to be a real payment",
    "amount_zero": "the amount is zero; payments must be greater than zero",
}


def _flag(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean pyarrow result as a numpy bool array (nulls → False)."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


#: The common shapes (``1234.56``, ``$1,234.56``): matched without captures, which RE2 answers
#: several times faster than an extraction.
_PLAIN = r"^\$?(?:\d{1,3}(?:,\d{3})+|\d{1,13})(?:\.\d{0,2})?$"

#: Most digits a plain amount may have (13 before the point, 2 after): its cents fit an int64.
_PLAIN_DIGITS = _MAX_INT_DIGITS + 2


def _parse_plain(raw: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(is a plain shape, its cents — 0 elsewhere) per text (see `_PLAIN`).

    The digits without ``$``, ``,`` and ``.`` are one integer; the decimals written (0 to 2)
    say the power of ten that makes it cents.
    """
    raw = pc.fill_null(raw, "")
    digits = pc.replace_substring(pc.replace_substring(raw, "$", ""), ",", "")
    point = np.asarray(pc.find_substring(digits, ".").to_numpy(zero_copy_only=False))
    length = np.asarray(pc.binary_length(digits).to_numpy(zero_copy_only=False))
    digits = pc.replace_substring(digits, ".", "")
    plain = _flag(pc.match_substring_regex(raw, _PLAIN)) & (length <= _PLAIN_DIGITS + 1)
    whole = pc.cast(pc.if_else(pa.array(plain), digits, "0"), pa.int64())
    decimals = np.where(point < 0, 0, length - point - 1)
    scale = np.array([100, 10, 1], dtype=np.int64)[np.where(plain, decimals, 0)]
    cents = np.asarray(whole.to_numpy(zero_copy_only=False), dtype=np.int64) * scale
    return plain, cents


def parse_money(values: pd.Series) -> pd.DataFrame:
    """Parse a column of money text into cents.

    Returns a frame on ``values``' index with ``cents`` (nullable Int64, <NA> where the text
    was rejected) and ``check`` (the failed check's name, <NA> where the amount is fine).
    All string work runs in Arrow compute kernels (RE2); see `money_codes`.
    """
    cents, check = money_codes(pa.array(values.astype("str"), type=pa.string(), from_pandas=True))
    good: np.ndarray = check < 0
    cents_col = pd.Series(pd.arrays.IntegerArray(cents, ~good), index=values.index)
    if good.all():
        check_col = pd.Series(pd.NA, index=values.index, dtype="str")
    else:
        check_col = text_by_code(check, MONEY_CHECKS, values.index)
    return pd.DataFrame({"cents": cents_col, "check": check_col}, copy=False)


def money_codes(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Money text (Arrow) → (cents per row, 0 where rejected; the failed check per row as an
    index into `MONEY_CHECKS`, -1 where the amount is fine), without a pandas copy.

    The common shapes (``1234.56``, ``$1,234.56``) take one regex pass; only the rest go
    through every rule to find the reason.
    """
    raw = pc.utf8_trim_whitespace(values)
    plain_ok, cents = _parse_plain(raw)
    # The check per row as a code into MONEY_CHECKS (-1: fine), so no per-row strings are made.
    check = np.where(cents > 0, -1, _ZERO).astype(np.int32)
    if plain_ok.all():
        if not (cents > 0).all():
            cents = np.where(check < 0, cents, 0)
        return cents, check
    rest = np.flatnonzero(~plain_ok)
    cents_rest, check_rest = _parse_in_full(pc.take(raw, pa.array(rest)))
    cents[rest] = cents_rest
    check[rest] = check_rest
    cents[check >= 0] = 0
    return cents, check


#: The money checks in order of precedence (`money_codes`'s codes index it).
MONEY_CHECKS: list[str | None] = list(MONEY_REASONS)
_ZERO = MONEY_CHECKS.index("amount_zero")


def _parse_in_full(text: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(cents, check code) for texts outside the plain shapes, applying every rule.

    The check code indexes `MONEY_REASONS` (its order is the rules' precedence); -1 = fine.
    """
    blank = _flag(pc.or_kleene(pc.is_null(text), pc.equal(text, "")))
    text = pc.fill_null(text, "")
    compact = pc.replace_substring_regex(text, r"\s+", "")
    # Strip a leading "$"/"US$"/"USD" (after any sign or opening parenthesis) and a trailing USD.
    bare = pc.replace_substring_regex(compact, r"(?i)^([-−(]?)(?:US\$|\$|USD)", r"\1")
    bare = pc.replace_substring_regex(bare, r"(?i)USD$", "")
    foreign = _flag(pc.match_substring_regex(text, _FOREIGN))
    negative = _flag(pc.match_substring_regex(bare, r"^[-−(]|[-)]$"))
    parts = pc.extract_regex(bare, _NUMBER)
    int_part = pc.fill_null(pc.struct_field(parts, "int"), "")
    frac = pc.fill_null(pc.struct_field(parts, "frac"), "")
    numeric = _flag(
        pc.and_(
            pc.is_valid(parts),
            pc.or_(pc.greater(pc.utf8_length(int_part), 0), pc.greater(pc.utf8_length(frac), 0)),
        )
    )
    ambiguous = ~numeric & _flag(pc.match_substring_regex(bare, _AMBIGUOUS))

    frac_clean = pc.utf8_rtrim(frac, characters="0")
    too_many = numeric & _flag(pc.greater(pc.utf8_length(frac_clean), 2))
    digits = pc.utf8_ltrim(pc.replace_substring(int_part, ",", ""), characters="0")
    too_large = numeric & _flag(pc.greater(pc.utf8_length(digits), _MAX_INT_DIGITS))

    ok = numeric & ~blank & ~foreign & ~negative & ~too_many & ~too_large
    ok_arrow = pa.array(ok)
    safe_int = pc.if_else(pc.and_(ok_arrow, pc.greater(pc.utf8_length(digits), 0)), digits, "0")
    safe_frac = pc.utf8_rpad(pc.if_else(ok_arrow, frac_clean, ""), width=2, padding="0")
    cents = pc.add(
        pc.multiply(pc.cast(safe_int, pa.int64()), 100), pc.cast(safe_frac, pa.int64())
    ).to_numpy(zero_copy_only=False)
    zero = ok & (cents == 0)

    conditions = [blank, foreign, negative, ambiguous, ~numeric, too_many, too_large, zero]
    check = np.select(conditions, range(len(conditions)), default=-1)
    return cents, check


def format_spreadsheet_number(value: float) -> str:
    """Text for a number read from a spreadsheet cell, without losing information.

    Whole numbers print without a decimal point (``21000021.0`` → ``21000021``); a number within
    a tiny tolerance of a whole cent prints with two decimals (``1234.5`` → ``1234.50``,
    ``0.30000000000000004`` → ``0.30``); anything else keeps its shortest exact form, so a
    money parser sees its extra decimals and rejects it.
    """
    if not math.isfinite(value):
        return repr(value)
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    scaled = value * 100
    if not math.isfinite(scaled):  # beyond ~1.8e306: no cent to round to; the money rules reject it
        return repr(value)
    whole = round(scaled)
    # A spreadsheet float is the nearest double to what the analyst typed; allow a few ulps.
    if abs(scaled - whole) <= max(1e-6, 8 * math.ulp(scaled)):
        sign = "-" if whole < 0 else ""
        return f"{sign}{abs(whole) // 100}.{abs(whole) % 100:02d}"
    return repr(value)
