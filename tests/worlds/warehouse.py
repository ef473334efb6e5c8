"""A small known world inserted straight into a warehouse (no service needed)."""

from __future__ import annotations

import duckdb

#: Formula-injection payloads, one per leading character that spreadsheets treat as a formula.
PAYLOADS = {
    "eq": '=HYPERLINK("http://evil.example","x")',
    "plus": "+cmd|/C calc!A0",
    "minus": "-2+3",
    "at": "@SUM(1+1)",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
}

SEEN = "2026-11-20 12:00:00+00"


def seed_known_world(con: duckdb.DuckDBPyConnection) -> None:
    """Two vehicles: A fully funded and explained, B short by $100 with an extra payment.

    - veh_a: depository total $1,000.00 = end of last month $1,500.00 − $500.00 disbursed.
      Payments dpmt_1 ($300, disbursed) and dpmt_2 ($200 at the service, $250 in the sheet).
    - veh_b: depository available $100.00; open payments dpmt_3 ($150, in the sheet) and
      dpmt_4 ($50, in no sheet) → obligations $200, shortfall $100; its total $90 against
      $100 at month end with nothing disbursed → $10 unexplained.
    - a sheet row sent whose payment the service does not have (ledger state sent) → missing.
      (Issue 13: a row the service refused, ledger state failed, is its file's outcome instead.)
    - dpmt_5 ($10) failed at the service while the ledger says created → status mismatch (and
      not an obligation).
    - a rejected file → an exception.
    """
    con.execute(
        f"""
        INSERT INTO vehicles VALUES
          ('veh_a', 'org_demo', '{PAYLOADS["eq"]}', false, '2026-01-01', '2026-01-01', '{SEEN}'),
          ('veh_b', 'org_demo', 'Fund B', false, '2026-01-02', '2026-01-02', '{SEEN}');
        INSERT INTO financial_accounts VALUES
          ('fa_adep', 'veh_a', 'A dep', 'depository', 'Bank', '1234', 'USD', false, '2026-01-01', '2026-01-01', '{SEEN}'),
          ('fa_abrk', 'veh_a', 'A brk', 'brokerage', 'Bank', '9999', 'USD', false, '2026-01-01', '2026-01-01', '{SEEN}'),
          ('fa_bdep', 'veh_b', 'B dep', 'depository', NULL, NULL, 'USD', false, '2026-01-02', '2026-01-02', '{SEEN}');
        -- an older snapshot (ignored: superseded) and one after the as-of date (ignored: future)
        INSERT INTO balance_snapshots VALUES
          ('s0', '2026-11-01 00:00:00+00', 'fa_adep', 'veh_a', 'depository', 1, 1, 1, 'USD', NULL),
          ('s1', '{SEEN}', 'fa_adep', 'veh_a', 'depository', 100000, 100000, 150000, 'USD', NULL),
          ('s1', '{SEEN}', 'fa_abrk', 'veh_a', 'brokerage', 5000, 5000, 4000, 'USD', NULL),
          ('s1', '{SEEN}', 'fa_bdep', 'veh_b', 'depository', 9000, 10000, 10000, 'USD', NULL),
          ('s2', '2026-12-05 00:00:00+00', 'fa_bdep', 'veh_b', 'depository', 7, 7, 7, 'USD', NULL);
        INSERT INTO distributions (id, name, vehicle, external_reference, distribution_date,
            distribution_timezone, status, last_seen_at) VALUES
          ('dst_1', '{PAYLOADS["plus"]}', 'veh_a', 'REF-1', '2026-11-10 14:00:00+00', 'America/New_York', 'executed', '{SEEN}'),
          ('dst_2', 'Q4 B', 'veh_b', '{PAYLOADS["minus"]}', '2026-12-01 03:00:00+00', 'America/New_York', 'draft', '{SEEN}');
        INSERT INTO distribution_payments (id, distribution, amount_cents, currency, status,
            disbursed_at, entity, last_seen_at) VALUES
          ('dpmt_1', 'dst_1', 30000, 'USD', 'disbursed', '2026-11-10 14:00:00+00', 'ent_1', '{SEEN}'),
          ('dpmt_2', 'dst_1', 20000, 'USD', 'disbursed', '2026-11-10 14:00:00+00', 'ent_2', '{SEEN}'),
          ('dpmt_3', 'dst_2', 15000, 'USD', 'staged', NULL, 'ent_1', '{SEEN}'),
          ('dpmt_4', 'dst_2', 5000, 'USD', 'staged', NULL, 'ent_3', '{SEEN}');
        INSERT INTO distribution_payments (id, distribution, amount_cents, currency, status,
            failure_reason, entity, last_seen_at) VALUES
          ('dpmt_5', 'dst_2', 1000, 'USD', 'failed', 'insufficient funds', 'ent_5', '{SEEN}');
        INSERT INTO ledger_payments VALUES
          ('h1', '{PAYLOADS["at"]}', '{PAYLOADS["tab"]}', 2, 'REF-1', '{PAYLOADS["plus"]}', 'veh_a', 'ent_1', 30000, 'USD', 'dst_1', 'dpmt_1', 'created', '{SEEN}'),
          ('h1', '{PAYLOADS["at"]}', '{PAYLOADS["tab"]}', 3, 'REF-1', '{PAYLOADS["plus"]}', 'veh_a', 'ent_2', 25000, 'USD', 'dst_1', 'dpmt_2', 'created', '{SEEN}'),
          ('h2', 'b.csv', 'b', 2, '{PAYLOADS["minus"]}', 'Q4 B', 'veh_b', 'ent_1', 15000, 'USD', 'dst_2', 'dpmt_3', 'linked', '{SEEN}'),
          ('h2', 'b.csv', 'b', 3, '{PAYLOADS["cr"]}', 'Q4 C', 'veh_b', 'ent_4', 777, 'USD', NULL, NULL, 'sent', '{SEEN}'),
          ('h2', 'b.csv', 'b', 4, '{PAYLOADS["minus"]}', 'Q4 B', 'veh_b', 'ent_5', 1000, 'USD', 'dst_2', 'dpmt_5', 'created', '{SEEN}');
        INSERT INTO ledger_files VALUES
          ('h1', '{PAYLOADS["at"]}', '{SEEN}', 'processed', 2, 1, 55000),
          ('h3', 'bad.csv', '{SEEN}', 'rejected', 1, 1, 100);
        """
    )
