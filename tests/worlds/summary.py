"""The Summary agrees with its own tabs (issue 29): every figure on the workbook's Summary sheet
is the total of the tab it summarizes, read back from the workbook a person opens."""

from __future__ import annotations

from collections import Counter
from typing import Any

import openpyxl

from fundpipe.reconcile import ReconcileResult
from fundpipe.reports.headers import MATCH_WORDS


def _summary(ws: Any) -> dict[str, Any]:
    """Label (column A) → value (column B) of the Summary, and a tie-out line's dollars (C)."""
    out: dict[str, Any] = {}
    for label, value, dollars, *_ in ws.iter_rows(min_col=1, max_col=3, values_only=True):
        if isinstance(label, str) and label.strip():
            out[label.strip()] = (value, dollars) if dollars is not None else value
    return out


def _tab(wb: Any, name: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A tab's rows by header, and its Total row (None when it has none)."""
    rows = list(wb[name].iter_rows(values_only=True))
    header = [str(h) for h in rows[0]]
    body = [dict(zip(header, r, strict=True)) for r in rows[1:]]
    if len(body) == 1 and all(v is None for v in rows[1][1:]):
        body = []  # the one line of a tab with no rows ("No exceptions: …"), under its header
    first = header[0]
    totals = [r for r in body if r.get(first) == "Total"]
    return [r for r in body if r.get(first) != "Total"], (totals[0] if totals else None)


def _cents(value: Any) -> int:
    return round(float(value or 0) * 100)


def assert_summary_is_its_tabs(result: ReconcileResult) -> None:
    """Every Summary figure of `result`'s workbook equals the total of its tab."""
    wb = openpyxl.load_workbook(result.workbook, read_only=True)
    try:
        summary = _summary(wb["Summary"])
        day = summary.get("As of")

        funding, _ = _tab(wb, "Funding")
        for label, header in (
            ("Depository available", "Available (USD)"),
            ("Open obligations", "Obligations (USD)"),
            ("Failed payments still owed", "Failed owed (USD)"),
            ("Staged payments past due", "Past due (USD)"),
            ("Shortfall", "Shortfall (USD)"),
        ):
            assert _cents(summary[label]) == sum(_cents(r[header]) for r in funding), (day, label)
        assert summary["Vehicles"] == len(funding), day
        short = [r for r in funding if _cents(r["Shortfall (USD)"]) > 0]
        assert summary["Vehicles short of funds"] == len(short), day
        no_balance = [r for r in funding if r["Available (USD)"] is None]
        assert summary["Vehicles with no balance yet"] == len(no_balance), day

        roll, _ = _tab(wb, "Roll-forward")
        unexplained = sum(_cents(r["Unexplained (USD)"]) for r in roll)
        assert _cents(summary["Unexplained this month (Roll-forward)"]) == unexplained, day
        items = sum(1 for r in roll if _cents(r["Unexplained (USD)"])) + sum(
            int(r["Carried items"] or 0) for r in roll
        )
        assert summary["Reconciling items open"] == items, day
        assert _cents(summary["Reconciling items open, incl. carried (Roll-forward)"]) == sum(
            _cents(r["Reconciling items (USD)"]) for r in roll
        ), day

        payments, _ = _tab(wb, "Payments")
        matches = Counter(str(r["Match"]) for r in payments)
        extra, missing, ok = (MATCH_WORDS[k] for k in ("extra", "missing", "ok"))
        assert summary["Sheet rows (ledger)"] == len(payments) - matches[extra], day
        assert summary["Service payments"] == len(payments) - matches[missing], day
        assert summary["Payments matching"] == matches[ok], day

        tie_out, total = _tab(wb, "Tie-out")
        assert total is not None, day
        assert summary["Distributions"] == len(tie_out), day
        assert summary["Distributions not tying out"] == sum(
            1 for r in tie_out if not r["Ties out"]
        ), day
        for label, part in (
            ("Per the sheets", "Sheet"),
            ("At the service", "Service"),
            ("Disbursed", "Disbursed"),
            ("Failed (still owed unless paid again)", "Failed"),
            ("Cancelled", "Cancelled"),
            ("Outstanding (staged)", "Outstanding"),
        ):
            payments_count, dollars = summary[label]
            assert payments_count == total[f"{part} payments"], (day, label)
            assert _cents(dollars) == _cents(total[f"{part} (USD)"]), (day, label)

        exceptions, _ = _tab(wb, "Exceptions")
        kinds = Counter(str(r["Kind"]) for r in exceptions)
        for kind, n in kinds.items():
            assert summary[kind] == n, (day, kind)
        assert summary["Total"] == len(exceptions), day
        acknowledged = sum(1 for r in exceptions if r["State"] == "Acknowledged")
        assert summary["Acknowledged"] == acknowledged, day
        assert summary["Open (not acknowledged)"] == len(exceptions) - acknowledged, day
    finally:
        wb.close()
