"""Sync over many pages: per-vehicle account lists, a distribution's further payment pages."""

from __future__ import annotations

import asyncio
import logging

import duckdb
import httpx
import pytest

from fundpipe.client import FundClient, FundServiceError
from fundpipe.config import Settings
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.locks import hold_until_released, release

BASE = "http://sandbox.test"


def test_every_page_of_every_list_lands_once(service: tuple[httpx.ASGITransport, Settings]) -> None:
    transport, settings = service

    async def build() -> str:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as control:
            bulk = await control.post(
                "/_sandbox/bulk_financial_accounts",
                json={"organization": "org_demo", "vehicles": 3, "accounts_per_vehicle": 130},
            )
            assert bulk.status_code == 201, bulk.text
        async with FundClient(settings.client_config(), transport=transport) as client:
            (made,) = await client.create_distributions(
                [
                    {
                        "name": "big",
                        "vehicle": "veh_demo1",
                        "distribution_date": "2031-01-01T00:00:00Z",
                        "payments": [
                            {"amount": 100 + i, "currency": "USD", "entity": f"ent_demo{i % 5 + 1}"}
                            for i in range(230)
                        ],
                    }
                ]
            )
        return made.id

    dst = asyncio.run(build())
    result = sync(settings, transport=transport)
    assert result.counts["vehicles"] == 6
    assert result.counts["financial_accounts"] == 6 + 3 * 130
    assert result.counts["distribution_payments"] == 230
    assert result.ledger_found is False
    again = sync(settings, transport=transport)
    con = duckdb.connect(str(settings.local.warehouse_file), read_only=True)
    try:
        payments = con.execute(
            "SELECT count(*), count(DISTINCT id), sum(amount_cents) FROM distribution_payments WHERE distribution = ?",
            [dst],
        ).fetchone()
        snapshots = con.execute(
            "SELECT count(*), count(DISTINCT sync_id) FROM balance_snapshots"
        ).fetchone()
        accounts = con.execute("SELECT count(*) FROM financial_accounts").fetchone()
        history = con.execute(
            "SELECT count(*) FROM status_history WHERE sync_id = ?", [again.sync_id]
        ).fetchone()
        syncs = con.execute("SELECT count(*) FROM syncs WHERE finished_at IS NOT NULL").fetchone()
        ledger = con.execute("SELECT count(*) FROM ledger_payments").fetchone()
    finally:
        con.close()
    assert payments == (230, 230, sum(100 + i for i in range(230)))
    assert snapshots == (2 * (6 + 390), 2)  # appended per sync, never overwritten
    assert accounts == (6 + 390,)  # upserted
    assert history == (0,)  # nothing changed status between the two syncs
    assert syncs == (2,)
    assert ledger == (0,)


def test_sync_waits_for_a_warehouse_held_by_another_process_and_names_it(
    service: tuple[httpx.ASGITransport, Settings], caplog: pytest.LogCaptureFixture
) -> None:
    transport, settings = service
    waits: list[float] = []

    def release_on_first_wait(seconds: float) -> None:
        """The warehouse's wait between attempts: the holder lets go the first time (no race)."""
        waits.append(seconds)
        if len(waits) == 1:
            release(holder)

    wh = Warehouse(
        settings.local.warehouse_file,
        lock_timeout_s=20,
        retry_interval_s=0.05,
        sleep=release_on_first_wait,
    )
    wh.migrate()
    holder = hold_until_released(settings.local.warehouse_file)
    try:
        with caplog.at_level(logging.WARNING, logger="fundpipe.warehouse.file"):
            result = sync(settings, transport=transport, warehouse=wh)
    finally:
        holder.kill()
        holder.wait()
    assert result.counts["vehicles"] == 3
    assert f"PID {holder.pid}" in caplog.text
    assert len(waits) == 1  # it waited while the file was held, and went on once released


def test_a_failed_pull_leaves_the_warehouse_as_it_was(
    service: tuple[httpx.ASGITransport, Settings],
) -> None:
    transport, settings = service
    first = sync(settings, transport=transport)

    async def break_distributions() -> None:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as control:
            faults = await control.put(
                "/_sandbox/faults",
                json={"error_rate": 1.0, "statuses": [500], "path_prefix": "/v1/distributions"},
            )
            assert faults.status_code < 300, faults.text

    asyncio.run(break_distributions())
    failing = settings.updated(http={"max_attempts": 1})
    with pytest.raises(FundServiceError):
        sync(failing, transport=transport)
    con = duckdb.connect(str(settings.local.warehouse_file), read_only=True)
    try:
        syncs = con.execute("SELECT sync_id FROM syncs").fetchall()
        snapshots = con.execute("SELECT count(DISTINCT sync_id) FROM balance_snapshots").fetchone()
    finally:
        con.close()
    assert syncs == [(first.sync_id,)]
    assert snapshots == (1,)
