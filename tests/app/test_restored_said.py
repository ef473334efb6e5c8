"""What a night restored from the record before it ran is said in one line everywhere a person
looks: `fundpipe run`'s output, the night's run summary, its log lines and its event."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime
from pathlib import Path

from rich.console import Console

from fundpipe.app.cli.render import render_run_summary
from fundpipe.app.prefect import oncall
from fundpipe.app.prefect.artifacts import summary_markdown
from fundpipe.nights import Nights, OrgNight, OrgRow
from fundpipe.record.restore import RestoreResult

TAKEN = datetime(2026, 12, 7, 6, 0, 12, tzinfo=UTC)
SNAPSHOT = "file:///record/org_a/snapshots/20261207T060012.000000Z"


def _restored(**fields: object) -> RestoreResult:
    base: dict[str, object] = {
        "location": "file:///record/org_a",
        "snapshot": SNAPSHOT,
        "taken_at": TAKEN,
        "files": ["warehouse.duckdb"],
        "decisions_replayed": 2,
        "files_put_back": 0,
        "why": "the warehouse was missing",
    }
    return RestoreResult(**{**base, **fields})  # type: ignore[arg-type]


def test_the_restore_is_one_sentence_naming_what_from_which_snapshot_and_why() -> None:
    assert _restored().sentence == (
        f"restored the warehouse from the record's snapshot of 2026-12-07 06:00 UTC ({SNAPSHOT})"
        ", 2 decisions made after it replayed: the warehouse was missing"
    )
    everything = _restored(
        files=["ledger.binding.json", "ledger.duckdb", "warehouse.duckdb"],
        decisions_replayed=1,
        files_put_back=3,
        set_aside=[Path("/d/warehouse.duckdb.before-restore-20261208T060000Z")],
        why="the local state was older than the record's",
    ).sentence
    assert everything.startswith(
        "restored the ledger's binding, the ledger and the warehouse from the record's snapshot"
    )
    tail = (
        ", 1 decision made after it replayed, 3 closed files put back; the local files set "
        "aside as warehouse.duckdb.before-restore-20261208T060000Z: the local state was older"
    )
    assert tail in everything
    ledger = _restored(files=["ledger.duckdb"], why="the ledger was missing").sentence
    assert "decision" not in ledger  # the warehouse was kept: nothing replayed into it
    assert "\n" not in everything


def test_fundpipe_run_the_summary_and_the_log_say_the_restore_once_each() -> None:
    said = _restored().sentence
    night = OrgNight("org_a", date(2026, 12, 8), restored=said)
    quiet = OrgNight("org_b", date(2026, 12, 8))
    nights = Nights.of(
        [
            OrgRow("org_a", state="Completed", night=night),
            OrgRow("org_b", state="Completed", night=quiet),
        ],
        None,
    )
    out = io.StringIO()
    render_run_summary(nights, Console(file=out, width=100, color_system=None))
    lines = [line for line in out.getvalue().splitlines() if line.startswith("restored")]
    assert lines == [f"restored org_a: {said.removeprefix('restored ')}"]

    summary = summary_markdown(night)
    assert f"## Restored from the record first\n\n- {said}\n" in summary
    assert "Restored from the record" not in summary_markdown(quiet)

    assert oncall.restored_lines(night) == [said]
    assert oncall.restored_lines(quiet) == []
    _, _, payload = oncall.night_event(night, "org_a")
    assert payload["restored"] == said
    assert night.as_json()["restored"] == said
    assert quiet.as_json()["restored"] is None
