"""What the reconciliation workbook shows: its tabs and how each lays out its view.

`SHEETS` lists the tabs after the Summary and the view each shows; `SHEET_LAYOUT` says, per view,
which columns come first, last, behind the outline's "+" button or not at all, which wrap, and
which values are shown in words, and what a sheet with no rows says
(`fundpipe.reports.workbook.SheetSource`). `tie_out_lines` are
the Summary's dollar tie-out.
"""

from __future__ import annotations

from typing import Any

from fundpipe.reports import KIND_WORDS, MATCH_WORDS, OBJECT_WORDS, TieOutLine

__all__ = ["SHEETS", "SHEET_LAYOUT", "tie_out_lines"]

#: Workbook tabs after Summary: (sheet name, view).
SHEETS: tuple[tuple[str, str], ...] = (
    ("Exceptions", "exceptions"),
    ("Tie-out", "distribution_tieout"),
    ("Roll-forward", "rollforward"),
    ("Roll-forward detail", "rollforward_movements"),
    ("Funding", "funding"),
    ("Balances", "balance_movement"),
    ("Payments", "sheet_vs_service"),
)

#: How each sheet shows its view: columns first / last / not at all, values in plain words.
SHEET_LAYOUT: dict[str, dict[str, Any]] = {
    "exceptions": {
        # reading order: which one, where it stands, what it is, how much, what to do; then the
        # details (grouped, collapsed: `what` says them in words), the object's id last (a
        # file's is its 64-character hash). `reason` is inside `what`.
        "first_columns": (
            "exception_id",
            "state",
            "age_days",
            "owner",
            "what",
            "amount_cents",
            "action",
            "kind",
            "vehicle_name",
            "distribution_external_reference",
            "investor_reference",
        ),
        "details_after": 11,
        "last_columns": ("object_type", "object_id", "file_hash"),
        "hidden_columns": ("reason",),
        "words": {
            "kind": KIND_WORDS,
            "object_type": OBJECT_WORDS,
            "state": {"open": "Open", "acknowledged": "Acknowledged", "resolved": "Resolved"},
        },
        "wrap": {"what": 60.0, "action": 42.0, "kind": 22.0},
        "empty": "No exceptions: nothing needs a person as of this date.",
    },
    "rollforward": {
        "totals": True,
        "first_columns": (
            "vehicle_name",
            "account_name",
            "type",
            "period",
            "opening_cents",
            "opening_source",
            "disbursed_cents",
            "returned_cents",
            "credits_cents",
            "other_cents",
            "market_movement_cents",
            "expected_closing_cents",
            "service_total_cents",
            "unexplained_cents",
            "carried_cents",
            "reconciling_items_cents",
            "reconciling_item_id",
        ),
        "details_after": 17,
        "wrap": {"vehicle_name": 18.0, "account_name": 18.0, "opening_source": 16.0},
    },
    "rollforward_movements": {
        "totals": True,
        "first_columns": (
            "vehicle_name",
            "account_name",
            "period",
            "kind",
            "distribution_name",
            "distribution_external_reference",
            "payments",
            "amount_cents",
        ),
        "details_after": 8,
        "empty": "No money was disbursed or returned this month.",
        "words": {
            "kind": {"disbursed": "Disbursed", "returned": "Returned (failed after disbursal)"}
        },
        # the kind's width is its words' ("Returned (failed after disbursal)"), not the
        # machine value the column is sized from
        "wrap": {
            "vehicle_name": 18.0,
            "account_name": 18.0,
            "kind": 20.0,
            "distribution_name": 24.0,
        },
    },
    # every tab of money foots: a Total row under its figures
    "funding": {
        "totals": True,
        "words": {"balance": {"seen": "Read", "no balance yet": "No balance yet"}},
        "empty": "No vehicle as of this date.",
    },
    "balance_movement": {"totals": True},
    "distribution_tieout": {
        "total_rows": "is_total",
        "last_columns": ("vehicle", "difference_payments", "distribution_id"),
        "details_after": 19,
        "wrap": {"distribution_name": 24.0, "vehicle_name": 16.0},
    },
    "sheet_vs_service": {
        "totals": True,
        "first_columns": (
            "match",
            "reason",
            "vehicle",
            "distribution_name",
            "distribution_external_reference",
            "investor_name",
            "sheet_amount_cents",
            "service_amount_cents",
            "difference_cents",
            "service_status",
            "effective_date",
            "payment_id",
        ),
        "details_after": 12,
        "hidden_columns": ("file_hash",),
        "words": {"match": MATCH_WORDS},
        "wrap": {"match": 22.0, "reason": 36.0, "distribution_name": 20.0, "investor_name": 20.0},
    },
}


def tie_out_lines(tie_out: dict[str, tuple[int, int]]) -> list[TieOutLine]:
    """The Summary's dollar tie-out: sheets, service, where the service's dollars stand."""
    if not tie_out:
        return []
    labels = {
        "sheet": "Per the sheets",
        "service": "At the service",
        "disbursed": "  Disbursed",
        "failed": "  Failed (still owed unless paid again)",
        "cancelled": "  Cancelled",
        "outstanding": "  Outstanding (staged)",
    }
    lines = [TieOutLine(labels[k], *tie_out[k]) for k in labels]
    parts = ("disbursed", "failed", "cancelled", "outstanding")
    lines.append(
        TieOutLine(
            "Disbursed + failed + cancelled + outstanding",
            sum(tie_out[k][0] for k in parts),
            sum(tie_out[k][1] for k in parts),
            total=True,
        )
    )
    lines.append(
        TieOutLine(
            "Difference, service − sheets",
            tie_out["service"][0] - tie_out["sheet"][0],
            tie_out["service"][1] - tie_out["sheet"][1],
            total=True,
        )
    )
    return lines
