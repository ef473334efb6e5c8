"""A rejected file's exception is settled by a person (issue 32): the file never changes, so once
someone acknowledges it — the corrected sheet went in under another name — it is resolved by the
next reconciliation instead of staying listed for ever."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fundpipe.config import Settings
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.reconcile.views import reconcile
from fundpipe.warehouse.file import Warehouse


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
