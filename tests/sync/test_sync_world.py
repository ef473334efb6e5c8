"""A known world built in the sandbox, synced, reconciled and read back from the workbook.

The world (sandbox clock set to 2030-01-10 12:00 UTC; every balance made "clean", i.e. total =
available = end of last month, before anything moves):

- veh_demo1, depository $10,000.00. D1 (two payments, $1,000 + $2,000, one notifying a contact)
  and D3 ($500) pay at 13:00 and are executed by advancing the clock two hours. D3's payment is
  then changed to $450 behind fundpipe's back (sandbox PATCH): the sheet says $500, the service
  $450, and the account was debited $3,500 while its payments explain only $3,450.
- a vehicle created with a formula-injection name and $500.00: D2 owes $300 + $400 on
  2030-01-20 (New York wall-clock) → short by $200.
- veh_demo3: D4 ($100) that no sheet asked for → extra.
- the ledger (written per the seam's schema) also holds a row that never reached the service.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import httpx
import openpyxl
import pytest

from fundpipe.client import FundClient
from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reports.workbook import neutralise
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.sync.pull import SyncResult, sync
from worlds.warehouse import PAYLOADS

START = dt.datetime(2030, 1, 10, 12, 0, tzinfo=dt.UTC)
BASE = "http://sandbox.test"


class World:
    """Handles on the built world for the assertions."""

    def __init__(self) -> None:
        self.first: SyncResult
        self.second: SyncResult
        self.result: ReconcileResult
        self.warehouse: Path
        self.vehicle: str = ""
        self.payments: dict[str, str] = {}
        self.distributions: dict[str, str] = {}


async def _build(transport: httpx.ASGITransport, settings: Settings, world: World) -> None:
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as control:

        async def call(method: str, path: str, body: dict[str, Any]) -> Any:
            response = await control.request(method, f"/_sandbox/{path}", json=body)
            assert response.status_code < 300, response.text
            return response.json()

        await call("POST", "clock/set", {"now": START.isoformat()})
        created = await call(
            "POST",
            "vehicles",
            {"organization": "org_demo", "name": PAYLOADS["eq"], "depository_cents": 50_000},
        )
        world.vehicle = created["vehicle"]["id"]
        balances = {"fa_demo1dep": 1_000_000, "fa_demo2dep": 2_000_000, "fa_demo3dep": 750_000}
        balances |= {f"fa_demo{n}brk": 10_000 for n in (1, 2, 3)}
        for fa, cents in balances.items():
            await call(
                "PATCH",
                f"financial_accounts/{fa}",
                {"total": cents, "available": cents, "total_end_of_last_month": cents},
            )

        async with FundClient(settings.client_config(), transport=transport) as client:
            soon = "2030-01-10T13:00:00Z"

            def element(
                name: str,
                ref: str,
                vehicle: str,
                date: str,
                payments: list[dict[str, Any]],
                tz: str = "UTC",
            ) -> dict[str, Any]:
                return {
                    "name": name,
                    "vehicle": vehicle,
                    "external_reference": ref,
                    "distribution_date": date,
                    "distribution_timezone": tz,
                    "payments": payments,
                }

            def pay(cents: int, entity: str, **extra: Any) -> dict[str, Any]:
                return {"amount": cents, "currency": "USD", "entity": entity, **extra}

            made = await client.create_distributions(
                [
                    element(
                        PAYLOADS["plus"],
                        PAYLOADS["minus"],
                        "veh_demo1",
                        soon,
                        [
                            pay(100_000, "ent_demo1", notifications=[{"contact": "cnt_demo1"}]),
                            pay(200_000, "ent_demo2"),
                        ],
                    ),
                    element(
                        "D2",
                        "REF-D2",
                        world.vehicle,
                        "2030-01-20T09:00:00",
                        [pay(30_000, "ent_demo3"), pay(40_000, "ent_demo4")],
                        tz="America/New_York",
                    ),
                    element("D3", "REF-D3", "veh_demo1", soon, [pay(50_000, "ent_demo5")]),
                    element(
                        "D4",
                        "REF-D4",
                        "veh_demo3",
                        "2030-01-15T12:00:00Z",
                        [pay(10_000, "ent_demo1")],
                    ),
                ]
            )
        for d in made:
            world.distributions[d.name or ""] = d.id
            for i, p in enumerate(d.payments.data if d.payments else []):
                world.payments[f"{d.external_reference}#{i}"] = p.id


def _write_ledger(path: Path, world: World) -> None:
    """Ledger rows per the seam's schema (docs/architecture.md): what fundpipe submitted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE ledger_payments (file_hash VARCHAR, source_file VARCHAR, sheet VARCHAR, "
        '"row" INTEGER, distribution_external_reference VARCHAR, distribution_name VARCHAR, '
        "vehicle VARCHAR, entity VARCHAR, amount_cents BIGINT, currency VARCHAR, "
        "distribution_id VARCHAR, payment_id VARCHAR, state VARCHAR, updated_at TIMESTAMPTZ)"
    )
    con.execute(
        "CREATE TABLE ledger_files (file_hash VARCHAR PRIMARY KEY, source_file VARCHAR, "
        "received_at TIMESTAMPTZ, state VARCHAR, rows INTEGER, distributions INTEGER, total_cents BIGINT)"
    )
    d = world.distributions
    p = world.payments
    rows = [
        (
            "h1",
            PAYLOADS["at"],
            PAYLOADS["tab"],
            2,
            PAYLOADS["minus"],
            PAYLOADS["plus"],
            "veh_demo1",
            "ent_demo1",
            100_000,
            d[PAYLOADS["plus"]],
            p[PAYLOADS["minus"] + "#0"],
            "created",
        ),
        (
            "h1",
            PAYLOADS["at"],
            PAYLOADS["tab"],
            3,
            PAYLOADS["minus"],
            PAYLOADS["plus"],
            "veh_demo1",
            "ent_demo2",
            200_000,
            d[PAYLOADS["plus"]],
            p[PAYLOADS["minus"] + "#1"],
            "created",
        ),
        (
            "h1",
            PAYLOADS["at"],
            PAYLOADS["tab"],
            4,
            "REF-D2",
            "D2",
            world.vehicle,
            "ent_demo3",
            30_000,
            d["D2"],
            p["REF-D2#0"],
            "created",
        ),
        (
            "h1",
            PAYLOADS["at"],
            PAYLOADS["tab"],
            5,
            "REF-D2",
            "D2",
            world.vehicle,
            "ent_demo4",
            40_000,
            d["D2"],
            p["REF-D2#1"],
            "linked",
        ),
        (
            "h1",
            PAYLOADS["at"],
            PAYLOADS["tab"],
            6,
            "REF-D3",
            "D3",
            "veh_demo1",
            "ent_demo5",
            50_000,
            d["D3"],
            p["REF-D3#0"],
            "created",
        ),
        (
            "h2",
            PAYLOADS["cr"],
            "Sheet1",
            2,
            "REF-D5",
            "D5",
            "veh_demo2",
            "ent_demo1",
            12_345,
            None,
            None,
            "sent",
        ),
    ]
    for row in rows:
        con.execute(
            "INSERT INTO ledger_payments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'USD', ?, ?, ?, ?)",
            [*row, START],
        )
    con.execute(
        "INSERT INTO ledger_files VALUES ('h1', ?, ?, 'processed', 5, 3, 420000), ('h2', ?, ?, 'processed', 1, 1, 12345)",
        [PAYLOADS["at"], START, PAYLOADS["cr"], START],
    )
    con.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Build, sync twice (before and after the clock moves), reconcile; share across tests."""
    root = tmp_path_factory.mktemp("world")
    app = create_app(SandboxConfig(seed="demo", rate_limit_requests=100_000))
    transport = httpx.ASGITransport(app=app)
    settings = Settings(
        _env_file=None, local={"data_dir": root / "data"}, http={"rate_limit_per_s": 10_000}
    ).with_service(BASE)
    w = World()
    asyncio.run(_build(transport, settings, w))
    _write_ledger(settings.local.ledger_file, w)

    async def sandbox_now() -> dt.datetime:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as control:
            return dt.datetime.fromisoformat((await control.get("/_sandbox/clock")).json()["now"])

    # seen_at comes from the sandbox's clock, which runs on from where it was set.
    first_at = asyncio.run(sandbox_now())
    w.first = sync(settings, transport=transport, clock=lambda: first_at)

    async def move() -> None:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as control:
            moved = await control.post("/_sandbox/clock/advance", json={"seconds": 7200})
            assert moved.status_code == 200, moved.text
            assert set(moved.json()["executed"]) == {
                w.distributions[PAYLOADS["plus"]],
                w.distributions["D3"],
            }
            changed = await control.patch(
                f"/_sandbox/distribution_payments/{w.payments['REF-D3#0']}", json={"amount": 45_000}
            )
            assert changed.status_code == 200, changed.text

    asyncio.run(move())
    second_at = asyncio.run(sandbox_now())
    w.second = sync(settings, transport=transport, clock=lambda: second_at)
    later = w.second.seen_at
    w.warehouse = settings.local.warehouse_file
    w.result = reconcile(
        settings, as_of=later.date(), out_dir=root / "reports", clock=lambda: later
    )
    return w


def test_sync_pulls_every_list_and_copies_the_ledger(world: World) -> None:
    counts = world.second.counts
    assert counts["vehicles"] == 4
    assert counts["financial_accounts"] == 8
    assert counts["distributions"] == 4
    assert counts["distribution_payments"] == 6
    assert counts["distribution_notifications"] == 1
    assert counts["entities"] == 5
    assert counts["contacts"] == 5
    assert world.second.ledger_payments == 6
    assert (
        START + dt.timedelta(hours=2)
        < world.second.seen_at
        < START + dt.timedelta(hours=2, minutes=1)
    )


def test_balances_are_appended_per_sync_and_statuses_keep_their_history(world: World) -> None:
    con = duckdb.connect(str(world.warehouse), read_only=True)
    try:
        snapshots = con.execute(
            "SELECT sync_id, total_cents FROM balance_snapshots WHERE financial_account = 'fa_demo1dep' ORDER BY seen_at"
        ).fetchall()
        d1 = world.distributions[PAYLOADS["plus"]]
        history = con.execute(
            "SELECT previous_status, status FROM status_history WHERE id = ? ORDER BY seen_at", [d1]
        ).fetchall()
        paid = con.execute(
            "SELECT previous_status, status FROM status_history WHERE id = ? ORDER BY seen_at",
            [world.payments["REF-D3#0"]],
        ).fetchall()
        unchanged = con.execute(
            "SELECT count(*) FROM status_history WHERE id = ?", [world.distributions["D2"]]
        ).fetchone()
        amount = con.execute(
            "SELECT amount_cents, status FROM distribution_payments WHERE id = ?",
            [world.payments["REF-D3#0"]],
        ).fetchone()
    finally:
        con.close()
    assert snapshots == [(world.first.sync_id, 1_000_000), (world.second.sync_id, 650_000)]
    assert history == [(None, "draft"), ("draft", "executed")]
    assert paid == [(None, "staged"), ("staged", "disbursed")]
    assert unchanged == (1,)
    assert amount == (45_000, "disbursed")


def test_funding_flags_the_underfunded_vehicle(world: World) -> None:
    funding = world.result.frame("funding").set_index("vehicle")
    short = funding.loc[world.vehicle]
    assert (short.available_cents, short.obligations_cents, short.shortfall_cents) == (
        50_000,
        70_000,
        20_000,
    )
    assert short.first_short_date == dt.date(2030, 1, 20)
    assert short.vehicle_name == PAYLOADS["eq"]
    demo1 = funding.loc["veh_demo1"]
    assert (demo1.available_cents, demo1.obligations_cents, demo1.shortfall_cents) == (
        650_000,
        0,
        0,
    )
    demo3 = funding.loc["veh_demo3"]
    assert (demo3.obligations_cents, demo3.shortfall_cents) == (10_000, 0)
    assert funding.index[0] == world.vehicle


def test_sheet_vs_service_finds_the_changed_the_missing_and_the_extra(world: World) -> None:
    frame = world.result.frame("sheet_vs_service")
    by_match = frame.groupby("match").size().to_dict()
    assert by_match == {"ok": 4, "amount_mismatch": 1, "missing": 1, "extra": 1}
    changed = frame[frame.match == "amount_mismatch"].iloc[0]
    assert changed.payment_id == world.payments["REF-D3#0"]
    assert (changed.sheet_amount_cents, changed.service_amount_cents) == (50_000, 45_000)
    assert changed.reason == "sheet $500.00 vs service $450.00"
    extra = frame[frame.match == "extra"].iloc[0]
    assert extra.payment_id == world.payments["REF-D4#0"]
    missing = frame[frame.match == "missing"].iloc[0]
    assert (missing.source_file, missing.sheet_amount_cents) == (PAYLOADS["cr"], 12_345)


def test_balance_movement_shows_the_unexplained_debit(world: World) -> None:
    moves = world.result.frame("balance_movement").set_index("financial_account")
    dep = moves.loc["fa_demo1dep"]
    assert (dep.total_end_of_last_month_cents, dep.disbursed_this_month_cents, dep.total_cents) == (
        1_000_000,
        345_000,
        650_000,
    )
    assert dep.unexplained_cents == -5_000
    others = moves.drop(index="fa_demo1dep")
    assert (others.unexplained_cents == 0).all()


def test_exceptions_hold_exactly_what_needs_a_person(world: World) -> None:
    exceptions = world.result.frame("exceptions")
    got = sorted(zip(exceptions.kind, exceptions.amount_cents, strict=True))
    assert got == sorted(
        [
            ("shortfall", 20_000),
            ("amount_mismatch", -5_000),
            ("missing", 12_345),
            ("extra", 10_000),
            ("unexplained_balance", -5_000),
            # issue 22: the distributions that do not tie out, service − sheet: D3, D4, and the
            # one of the row that never reached the service
            ("distribution_tie_out", -5_000),
            ("distribution_tie_out", 10_000),
            ("distribution_tie_out", -12_345),
        ]
    )
    assert world.result.summary.exception_counts == {
        "amount_mismatch": 1,
        "distribution_tie_out": 3,
        "extra": 1,
        "missing": 1,
        "shortfall": 1,
        "unexplained_balance": 1,
    }


def test_workbook_cells_match_the_views_and_every_payload_is_neutralised(world: World) -> None:
    wb = openpyxl.load_workbook(world.result.workbook)
    assert wb.sheetnames == [
        "Summary",
        "Exceptions",
        "Tie-out",
        "Roll-forward",
        "Roll-forward detail",
        "Funding",
        "Balances",
        "Payments",
    ]
    funding = wb["Funding"]
    header = [c.value for c in funding[1]]
    first = dict(zip(header, funding[2], strict=True))
    assert first["Vehicle id"].value == world.vehicle  # issue 13: headers in words
    assert first["Vehicle"].value == neutralise(PAYLOADS["eq"])
    assert first["Shortfall (USD)"].value == 200
    assert first["Available (USD)"].value == 500
    assert first["Available (USD)"].number_format.startswith('"$"#,##0.00')
    exceptions = wb["Exceptions"]
    assert exceptions.max_row == 1 + 5 + 3  # issue 22: + 3 distributions not tying out
    payments = wb["Payments"]
    assert payments.max_row == 1 + 7 + 1  # the header, the payments, the Total row
    texts = set()
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", cell.coordinate
                if isinstance(cell.value, str):
                    texts.add(cell.value.replace("_x000D_", "\r"))
    for name, payload in PAYLOADS.items():
        if name == "tab":
            continue
        assert neutralise(payload) in texts, name
        assert payload not in texts, name
    assert neutralise(PAYLOADS["tab"]) in texts  # the ledger's sheet column
