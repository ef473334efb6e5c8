"""Column headers in words for the workbook: "Investor", "Amount (USD)", "Seen at (UTC)".

The views' column names stay the machine's (snake_case, `*_cents`): Parquet keeps them. The
workbook shows each as a finance reader would say it, with the unit or time zone in the header:
money in dollars "(USD)", instants "(UTC)", calendar dates of a distribution "(local date)".
"""

from __future__ import annotations

from fundpipe.vocabulary import KINDS

__all__ = ["KIND_WORDS", "MATCH_WORDS", "OBJECT_WORDS", "WORDS", "header_for"]

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
    "exception_id": "Id",
    "age_days": "Age (days)",
    "first_seen": "First seen",
    "acknowledged_by": "Acknowledged by",
    "note": "Acknowledgement note",
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
    "payment_date": "Payment date (local date)",
    "sheet_cents": "Sheet",  # money per the sheets (not the sheet tab)
    "days_past_due": "Days past due",
    "ties": "Ties out",
    "sheet_payments": "Sheet payments",
    "service_payments": "Service payments",
    "disbursed_payments": "Disbursed payments",
    "failed_payments": "Failed payments",
    "cancelled_payments": "Cancelled payments",
    "outstanding_payments": "Outstanding payments",
    "difference_payments": "Difference in payments",
    "period": "Month",
    "opening": "Opening",
    "credits": "Credits, acknowledged",
    "other": "Other, acknowledged",
    "expected_closing": "Expected closing",
    "service_total": "Service total",
    "carried": "Carried from earlier months",
    "reconciling_items": "Reconciling items",
    "reconciling_item_id": "Reconciling item id",
    "carried_item_ids": "Carried item ids",
    "carried_items": "Carried items",
    "disbursed_distributions": "Distributions disbursed",
    "opening_source": "Opening from",
}


#: Each exception kind in the words a controller uses (the Parquet files keep the machine kind):
#: the workbook's words map, read from the one table of what each kind means.
KIND_WORDS: dict[str, str] = {str(kind): meaning.words for kind, meaning in KINDS.items()}

#: What an exception is about, in words (the Exceptions sheet's Object type).
OBJECT_WORDS: dict[str, str] = {
    "vehicle": "Vehicle",
    "financial_account": "Account",
    "distribution": "Distribution",
    "distribution_payment": "Payment",
    "ledger_file": "Sheet file",
}

#: The Payments sheet's Match column in words (sheet row against the service's payment).
MATCH_WORDS: dict[str, str] = {
    "ok": "Matches",
    "missing": "Sheet row not at the service",
    "extra": "Service payment in no sheet",
    "amount_mismatch": "Amount differs (sheet vs service)",
    "status_mismatch": "Payment failed, cancelled or not confirmed",
}


def _words(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def header_for(name: str, kind: str) -> str:
    """The header shown for column `name` of `kind` (money, instant, date, number, text, bool)."""
    if kind == "money":
        stem = name[: -len("_cents")] if name.endswith("_cents") else name
        return f"{WORDS.get(name) or WORDS.get(stem, _words(stem))} (USD)"
    words = WORDS.get(name, _words(name))
    if kind == "instant":
        return f"{words} (UTC)"
    return words
