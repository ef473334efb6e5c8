"""A rejected file's exception resolves when its correction went in (issue 32): a later processed
file, under any name, that carries all of its distributions — or when a person settles it (the
file never changes, so once someone acknowledges it the next reconciliation resolves it)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fundpipe.config import Settings
from fundpipe.reconcile import reconcile
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import sandbox_world, write_sheet

BASE = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)


def test_an_acknowledged_rejected_file_is_resolved_by_the_next_run(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    def run(day: int) -> list[str]:
        at = dt.datetime(2026, 11, day, 12, tzinfo=dt.UTC)
        result = reconcile(settings, out_dir=tmp_path / str(day), clock=lambda: at)
        exceptions = result.frame("exceptions")
        return list(exceptions[exceptions.kind == "file_rejected"].exception_id)

    (rejected,) = run(28)
    assert run(29) == [rejected]  # nobody has settled it: still open
    acknowledge(
        known_warehouse,
        rejected,
        note="corrected sheet dropped as B-fixed.csv",
        by="ana",
        now=dt.datetime(2026, 11, 29, 15, tzinfo=dt.UTC),
    )
    assert run(30) == []
    with known_warehouse.read() as con:
        events = con.execute(
            "SELECT event, by_name FROM exception_events WHERE exception_id = ? ORDER BY seq",
            [rejected],
        ).fetchall()
    assert events == [("opened", "fundpipe"), ("acknowledged", "ana"), ("resolved", "fundpipe")]


def test_a_corrected_file_under_a_new_name_resolves_the_rejected_one(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data", clock=lambda: BASE)
    good = tmp_path / "good.csv"
    write_sheet(good, [("C1", "veh_demo1", [100_000, 20_000]), ("C2", "veh_demo2", [5_000])])
    bad = good.read_text().replace('"1,000.00"', '"(1,000.00)"')  # a negative amount
    assert bad != good.read_text()

    def drop(name: str, text: str) -> str:
        (world.inbox / name).write_text(text)
        result = ingest(world.settings, transport=world.transport, settle_s=0)
        sync(world.settings, transport=world.transport, clock=lambda: BASE)
        return str(result.files[0].state)

    def rejected() -> list[tuple[str, str]]:
        result = reconcile(world.settings, out_dir=tmp_path / "r", clock=lambda: BASE)
        exceptions = result.frame("exceptions")
        mine = exceptions[exceptions.kind == "file_rejected"]
        return list(zip(mine.exception_id, mine.state, strict=True))

    assert drop("payouts.csv", bad) == "rejected"
    ((exception, state),) = rejected()
    assert state == "open"
    assert drop("payouts-fixed.csv", good.read_text()) == "processed"  # all of its distributions
    assert rejected() == []
    wh = Warehouse(world.settings.local.warehouse_file)
    with wh.read() as con:
        events = con.execute(
            "SELECT event FROM exception_events WHERE exception_id = ? ORDER BY seq", [exception]
        ).fetchall()
    assert events == [("opened",), ("resolved",)]
