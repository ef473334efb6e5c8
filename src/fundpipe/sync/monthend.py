"""A provisional close certified: the first sync that reads the service's month-end balance of
a month closed before it was known records it.

A month closed before any sync of the next month had read `total_end_of_last_month` is closed
on its last snapshot and marked provisional (`fundpipe.reconcile.close`). The first sync whose
snapshots are in the next month (UTC) reads the service's month-end figure: `certify_month_ends`
then records, for each such close, a `certified` decision and each account's month-end closing
balance, at which the next month's roll-forward opens.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from fundpipe.reconcile import PeriodDecision, record_decision
from fundpipe.warehouse import records, transaction

__all__ = ["certify_month_ends"]


def certify_month_ends(
    con: duckdb.DuckDBPyConnection, sync_id: str, seen_at: datetime
) -> list[str]:
    """Certify every provisional close whose month-end balances the warehouse now holds (on
    `con`, writable; one transaction); return the periods certified."""
    pending = records(
        con,
        """
        SELECT e.period, e.version
        FROM period_events e
        WHERE e.event = 'closed' AND e.provisional
          AND NOT EXISTS (SELECT 1 FROM period_events c
                          WHERE c.period = e.period AND c.event = 'certified'
                            AND c.version IS NOT DISTINCT FROM e.version)
        ORDER BY e.period, e.seq
        """,
    )
    certified: list[str] = []
    with transaction(con):
        for close in pending:
            period = str(close["period"])
            month_start = datetime.fromisoformat(f"{period}-01T00:00:00+00:00")
            next_start = (month_start + timedelta(days=32)).replace(day=1)
            after = (next_start + timedelta(days=32)).replace(day=1)
            figures = records(
                con,
                """
                SELECT financial_account, total_end_of_last_month_cents AS closing_cents, sync_id
                FROM balance_snapshots
                WHERE seen_at >= ? AND seen_at < ?
                QUALIFY row_number() OVER (PARTITION BY financial_account ORDER BY seen_at) = 1
                ORDER BY financial_account
                """,
                [next_start, after],
            )
            if not figures:
                continue
            record_decision(
                con,
                PeriodDecision(
                    period=period,
                    event="certified",
                    at=seen_at,
                    by="fundpipe",
                    version=close["version"],
                    sync_id=str(figures[0]["sync_id"]),
                    reason="the service's month-end balance (total_end_of_last_month) read",
                ),
            )
            con.executemany(
                "INSERT INTO period_closing_records (period, financial_account, closing_cents, "
                "balance_seen_at, recorded_at, version, source) "
                "VALUES (?, ?, ?, ?, ?, ?, 'month_end')",
                [
                    [
                        period,
                        f["financial_account"],
                        f["closing_cents"],
                        next_start - timedelta(microseconds=1),
                        seen_at,
                        close["version"],
                    ]
                    for f in figures
                ],
            )
            certified.append(period)
    return certified
