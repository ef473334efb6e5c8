"""Column headers in words for the workbook: "Investor", "Amount (USD)", "Seen at (UTC)".

The views' column names stay the machine's (snake_case, `*_cents`): Parquet keeps them. The
workbook shows each as a finance reader would say it, with the unit or time zone in the header:
money in dollars "(USD)", instants "(UTC)", calendar dates of a distribution "(local date)".
"""

from __future__ import annotations

__all__ = ["WORDS", "header_for"]

#: Names whose plain words are not just the name with spaces.
WORDS: dict[str, str] = {
    "entity": "Investor id",
    "investor_name": "Investor",
    "investor_reference": "Investor reference",
    "vehicle": "Vehicle id",
    "vehicle_name": "Vehicle",
    "financial_account": "Account id",
    "account_name": "Account",
    "type": "Account type",
    "distribution_name": "Distribution",
    "distribution_external_reference": "Distribution reference",
    "distribution_id": "Distribution id",
    "payment_id": "Payment id",
    "exception_id": "Exception id",
    "object_id": "Object id",
    "source_file": "Sheet file (as dropped)",
    "file_location": "Sheet file (now, in the data folder)",
    "sheet": "Sheet tab",
    "row": "Excel row",
    "sheet_rows": "Sheet rows pointing at it",
    "what": "What",
    "action": "What to do",
    "match": "Match",
    "effective_date": "Payment date (local date)",
    "next_distribution_date": "Next distribution (local date)",
    "first_short_date": "First short on (local date)",
    "file_hash": "File hash",
}


def _words(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def header_for(name: str, kind: str) -> str:
    """The header shown for column `name` of `kind` (money, instant, date, number, text, bool)."""
    if kind == "money":
        stem = name[: -len("_cents")] if name.endswith("_cents") else name
        return f"{WORDS.get(stem, _words(stem))} (USD)"
    words = WORDS.get(name, _words(name))
    if kind == "instant":
        return f"{words} (UTC)"
    return words
