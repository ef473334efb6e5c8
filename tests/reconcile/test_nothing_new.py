"""Nothing new, nothing done (issue 44): a reconciliation for today whose books have not changed
since today's newest report writes no new folder and `latest` stays; a change at the service (a
payment's status, a balance), an acknowledged exception or a new reporting day gets a report."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.reconcile import acknowledge, reconcile
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse import Warehouse
from worlds.submit import World, sandbox_world, write_sheet

BASE = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
ACCOUNT = "fa_demo1dep"


def _folders(reports: Path) -> list[Path]:
    return sorted(p for p in reports.glob("*/*") if p.is_dir())


def _world(tmp_path: Path) -> tuple[World, Path]:
    world = sandbox_world(tmp_path / "data", clock=lambda: BASE)
    write_sheet(world.inbox / "N.csv", [("N1", "veh_demo1", [100_00, 200_00])], date="2026-12-09")
    assert ingest(world.settings, transport=world.transport, settle_s=0).files[0].state == (
        "processed"
    )
    return world, world.settings.local.reports_folder


def test_a_second_report_of_the_same_day_with_nothing_changed_writes_nothing(
    tmp_path: Path,
) -> None:
    world, reports = _world(tmp_path)
    sync(world.settings, transport=world.transport, clock=lambda: BASE)
    first = reconcile(world.settings, clock=lambda: BASE)
    assert not first.unchanged
    assert first.kept == ""
    # a later sync that finds nothing changed at the service (balances read again)
    later = BASE + dt.timedelta(hours=2)
    sync(world.settings, transport=world.transport, clock=lambda: later)
    again = reconcile(world.settings, clock=lambda: later)
    assert again.unchanged
    assert again.out_dir == first.out_dir == (reports / "latest").resolve()
    assert _folders(reports) == [first.out_dir]
    assert str(first.out_dir) in again.kept
    assert "no new report folder" in again.kept
    # the report it returns is the one issued: the same figures and exceptions
    assert again.summary.exceptions == first.summary.exceptions
    assert again.summary.obligations_cents == first.summary.obligations_cents == 300_00
    assert again.rows == first.rows
    assert again.sheets == first.sheets
    assert again.lifecycle is not None
    assert again.lifecycle.opened == ()
    assert first.lifecycle is not None
    assert again.lifecycle.open == first.lifecycle.open
    # asked to, it writes a new one all the same
    forced = reconcile(world.settings, clock=lambda: later, rebuild=True)
    assert not forced.unchanged
    assert forced.out_dir != first.out_dir
    assert (reports / "latest").resolve() == forced.out_dir


def test_a_change_at_the_service_or_a_new_day_gets_a_new_report(tmp_path: Path) -> None:
    world, reports = _world(tmp_path)
    sync(world.settings, transport=world.transport, clock=lambda: BASE)
    first = reconcile(world.settings, clock=lambda: BASE)
    # a balance moves at the service: the next sync reads it, the report shows it
    balance = world.control("PATCH", f"financial_accounts/{ACCOUNT}", {})["balance"]
    world.control("PATCH", f"financial_accounts/{ACCOUNT}", {"available": balance["available"] - 1})
    at = BASE + dt.timedelta(hours=1)
    sync(world.settings, transport=world.transport, clock=lambda: at)
    moved = reconcile(world.settings, clock=lambda: at)
    assert not moved.unchanged
    assert moved.out_dir != first.out_dir
    # a payment's status changes at the service (it fails: an exception)
    (payment, *_) = [p for _, ps in world.distributions() for p in ps]
    world.control("PATCH", f"distribution_payments/{payment.id}", {"status": "failed"})
    at = BASE + dt.timedelta(hours=2)
    sync(world.settings, transport=world.transport, clock=lambda: at)
    paid = reconcile(world.settings, clock=lambda: at)
    assert not paid.unchanged
    assert paid.out_dir not in (first.out_dir, moved.out_dir)
    # a person acknowledges an exception: the report shows its state
    assert paid.lifecycle is not None
    (one, *_) = (*paid.lifecycle.opened, *paid.lifecycle.still_open)
    at = BASE + dt.timedelta(hours=3)
    warehouse = Warehouse(world.settings.local.warehouse_file)
    acknowledge(warehouse, one.id, by="ana", note="seen", now=at)
    acked = reconcile(world.settings, clock=lambda: at)
    assert not acked.unchanged
    # the next reporting day gets its report though nothing changed
    tomorrow = BASE + dt.timedelta(days=1)
    day_two = reconcile(world.settings, clock=lambda: tomorrow)
    assert not day_two.unchanged
    assert day_two.out_dir.parent.name == tomorrow.date().isoformat()
    assert (reports / "latest").resolve() == day_two.out_dir
    assert reconcile(world.settings, clock=lambda: tomorrow + dt.timedelta(hours=1)).unchanged


def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    world, reports = _world(tmp_path)
    sync(world.settings, transport=world.transport, clock=lambda: BASE)
    runner = CliRunner()
    first = runner.invoke(app, ["reconcile", "--data-dir", str(world.data_dir)])
    assert first.exit_code == 0, first.output
    assert "Reconciliation as of" in first.output
    out = runner.invoke(app, ["reconcile", "--data-dir", str(world.data_dir)])
    assert out.exit_code == 0, out.output
    assert out.output.strip().startswith("nothing the report shows changed since")
    assert len(out.output.strip().splitlines()) <= 2  # one line (wrapped at most once)
    assert len(_folders(reports)) == 1
