"""What happens when the sandbox clock moves: distributions execute, payments disburse.

A `draft` distribution whose date has passed is published, approved and executed; each payment
of an executed distribution whose date (override, else the distribution's) has passed moves
`staged` → `recipient_confirmed` → `verified` → `disbursed`, debiting the vehicle's depository
account (`total` and `available`), or → `failed` ("insufficient funds") when `available` would go
negative. Payments are processed in date order; crossing the start of a month (UTC) snapshots
`total_end_of_last_month` of every account before the payments of the new month.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime


def _month_starts(after_ts: float, until_ts: float) -> list[float]:
    """Starts of UTC months in (after_ts, until_ts]."""
    out: list[float] = []
    cursor = datetime.fromtimestamp(after_ts, UTC)
    while True:
        year, month = (
            (cursor.year + 1, 1) if cursor.month == 12 else (cursor.year, cursor.month + 1)
        )
        cursor = datetime(year, month, 1, tzinfo=UTC)
        if cursor.timestamp() > until_ts:
            return out
        out.append(cursor.timestamp())


def run_lifecycle(conn: sqlite3.Connection, before_ts: float, now_ts: float) -> list[str]:
    """Advance every organization's state from `before_ts` to `now_ts`; returns executed ids."""
    executed = [
        row["id"]
        for row in conn.execute(
            "SELECT id FROM distributions WHERE status = 'draft' AND date_ts <= ? ORDER BY seq",
            (now_ts,),
        )
    ]
    if executed:
        conn.executemany(
            "UPDATE distributions SET status = 'executed', published_at = ?, approved_at = ?, "
            "executed_at = ?, updated_at = ? WHERE id = ?",
            [(now_ts, now_ts, now_ts, now_ts, dst) for dst in executed],
        )
    due = conn.execute(
        "SELECT p.id, p.amount, p.org, d.vehicle, COALESCE(p.override_ts, d.date_ts) AS due_ts "
        "FROM payments p JOIN distributions d ON d.id = p.distribution "
        "WHERE p.status = 'staged' AND d.status = 'executed' "
        "AND COALESCE(p.override_ts, d.date_ts) <= ? ORDER BY due_ts, p.seq",
        (now_ts,),
    ).fetchall()
    boundaries = _month_starts(before_ts, now_ts)
    for payment in due:
        while boundaries and boundaries[0] <= payment["due_ts"]:
            boundaries.pop(0)
            _snapshot(conn, now_ts)
        _disburse(conn, payment, now_ts)
    for _ in boundaries:
        _snapshot(conn, now_ts)
    return executed


def _snapshot(conn: sqlite3.Connection, now_ts: float) -> None:
    conn.execute("UPDATE financial_accounts SET total_eolm = total, updated_at = ?", (now_ts,))


def _disburse(conn: sqlite3.Connection, payment: sqlite3.Row, now_ts: float) -> None:
    account = conn.execute(
        "SELECT id, available FROM financial_accounts WHERE vehicle = ? AND type = 'depository' "
        "ORDER BY seq LIMIT 1",
        (payment["vehicle"],),
    ).fetchone()
    if account is None or account["available"] - payment["amount"] < 0:
        conn.execute(
            "UPDATE payments SET status = 'failed', failed_at = ?, failure_reason = ?, "
            "updated_at = ? WHERE id = ?",
            (now_ts, "insufficient funds", now_ts, payment["id"]),
        )
        return
    conn.execute(
        "UPDATE financial_accounts SET total = total - ?, available = available - ?, "
        "updated_at = ? WHERE id = ?",
        (payment["amount"], payment["amount"], now_ts, account["id"]),
    )
    conn.execute(
        "UPDATE payments SET status = 'disbursed', recipient_confirmed_at = ?, verified_at = ?, "
        "disbursed_at = ?, updated_at = ? WHERE id = ?",
        (now_ts, now_ts, now_ts, now_ts, payment["id"]),
    )
