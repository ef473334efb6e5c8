"""The exception history is append-only: a second acknowledgement is a second event, a worsened
acknowledged exception reopens and says why, an owner is an event, `exceptions show` prints it,
and an exception_log written by the code before the history migrates without losing an
acknowledgement."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.lifecycle import (
    ExceptionNotFoundError,
    acknowledge,
    assign,
    history,
    list_exceptions,
)
from fundpipe.warehouse.file import Warehouse
from fundpipe.warehouse.migrations import apply_migrations, load_migrations

AS_OF = dt.date(2026, 11, 30)


def _run(settings: Settings, tmp_path: Path, day: int) -> ReconcileResult:
    as_of = AS_OF + dt.timedelta(days=day)
    at = dt.datetime.combine(as_of, dt.time(7), tzinfo=dt.UTC)
    return reconcile(settings, as_of=as_of, out_dir=tmp_path / f"out{day}", clock=lambda: at)


def _at(day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime.combine(AS_OF + dt.timedelta(days=day), dt.time(hour), tzinfo=dt.UTC)


def _shortfall_id(result: ReconcileResult) -> str:
    frame = result.frame("exceptions")
    return str(frame[frame.kind == "shortfall"].exception_id.iloc[0])


def _events(wh: Warehouse) -> list[tuple[object, ...]]:
    with wh.read() as con:
        return con.execute("SELECT * FROM exception_events ORDER BY seq").fetchall()


def test_two_acknowledgements_are_two_events_and_a_worse_amount_reopens(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    first = _run(settings, tmp_path, 0)
    short = _shortfall_id(first)  # veh_b short by $110.00
    acknowledge(known_warehouse, short, note="wire on its way", by="ana", now=_at(0), user="u1")
    acknowledge(known_warehouse, short, note="wire confirmed", by="ben", now=_at(0, 10), user="u2")
    _, events = history(known_warehouse, short)
    acks = [(e.event, e.by, e.os_user, e.amount_cents, e.note) for e in events[1:]]
    assert acks == [
        ("acknowledged", "ana", "u1", 11_000, "wire on its way"),
        ("acknowledged", "ben", "u2", 11_000, "wire confirmed"),
    ]
    assert events[0].event == "opened"

    # a better amount leaves it acknowledged (the acknowledgement covers $110.00)
    with known_warehouse.write() as con:
        con.execute("UPDATE distribution_payments SET amount_cents = 10000 WHERE id = 'dpmt_3'")
    better = _run(settings, tmp_path, 1)
    assert better.frame("exceptions").set_index("exception_id").loc[short].state == "acknowledged"
    # a worse one reopens it, saying why
    with known_warehouse.write() as con:
        con.execute("UPDATE distribution_payments SET amount_cents = 20000 WHERE id = 'dpmt_3'")
    worse = _run(settings, tmp_path, 2)
    assert worse.lifecycle is not None
    assert short in {t.id for t in worse.lifecycle.opened}
    found, events = history(known_warehouse, short)
    assert found.state == "open"
    assert [e.event for e in events] == [
        "opened",
        "acknowledged",
        "acknowledged",
        "amount_changed",
        "reopened",
    ]
    assert events[-1].amount_cents == 16_000
    assert events[-1].note == "worsened from $110.00 (acknowledged by ben) to $160.00"
    assert worse.summary.open_exceptions == worse.summary.exceptions


def test_an_owner_is_an_event_and_shows_in_the_list_the_workbook_and_the_cli(
    settings: Settings,
    known_warehouse: Warehouse,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _run(settings, tmp_path, 0)
    short = _shortfall_id(first)
    done = assign(known_warehouse, short, to="maria", by="ana", now=_at(0))
    assert done.owner == "maria"
    assert {t.id: t.owner for t in list_exceptions(known_warehouse)}[short] == "maria"
    again = _run(settings, tmp_path, 1)
    assert again.frame("exceptions").set_index("exception_id").loc[short].owner == "maria"
    with pytest.raises(ExceptionNotFoundError):
        assign(known_warehouse, "EX-NOPE", to="maria", by="ana", now=_at(0))

    monkeypatch.setenv("FUNDPIPE_WAREHOUSE_PATH", str(known_warehouse.path))
    runner = CliRunner()
    out = runner.invoke(app, ["exceptions", "assign", short, "--to", "li", "--by", "ana"])
    assert out.exit_code == 0, out.output
    assert f"{short} is owned by li" in out.output
    out = runner.invoke(app, ["exceptions", "show", short, "--json"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.output)
    assert shown["owner"] == "li"
    assert [(e["event"], e["assignee"]) for e in shown["events"]] == [
        ("opened", None),
        ("assigned", "maria"),
        ("assigned", "li"),
    ]
    out = runner.invoke(app, ["exceptions", "show", short])
    assert out.exit_code == 0, out.output
    assert "owner: li" in out.output
    out = runner.invoke(app, ["exceptions", "show", "EX-NOPE"])
    assert out.exit_code != 0
    assert "no exception EX-NOPE" in out.output
    assert "Traceback" not in out.output


def test_a_warehouse_written_before_the_history_migrates_its_exception_log(
    tmp_path: Path,
) -> None:
    """Today's exception_log rows become first events; no acknowledgement is lost."""
    path = tmp_path / "old.duckdb"
    schema = Path(__file__).resolve().parents[2] / "schemas" / "warehouse.sql"
    migrations = load_migrations(schema.read_text(encoding="utf-8"))
    con = duckdb.connect(str(path))
    try:
        con.execute("SET TimeZone = 'UTC'")
        apply_migrations(con, [m for m in migrations if m.number <= 8])
        # as fundpipe.reconcile.lifecycle.track and acknowledge wrote it before migration 010
        con.execute(
            """
            INSERT INTO exception_log VALUES
              ('EX-OPEN', 'extra', 'distribution_payment', 'dpmt_9', 'open', '2026-11-20',
               '2026-11-30', NULL, NULL, NULL, NULL, 'veh_a', NULL, NULL, 5000,
               'an extra payment', 'find it', '2026-11-30 07:00+00'),
              ('EX-ACK', 'shortfall', 'vehicle', 'veh_b', 'acknowledged', '2026-11-21',
               '2026-11-30', NULL, 'ana', '2026-11-25 10:00+00', 'wire on its way', 'veh_b',
               NULL, NULL, 11500000, 'short', 'fund it', '2026-11-30 07:00+00'),
              ('EX-DONE', 'missing', 'distribution_payment', NULL, 'resolved', '2026-11-22',
               '2026-11-26', '2026-11-27', 'ben', '2026-11-23 10:00+00', 'asked the bank',
               NULL, 'b.csv', 3, 777, 'a missing row', 'check', '2026-11-27 07:00+00')
            """
        )
    finally:
        con.close()
    wh = Warehouse(path)
    wh.migrate()
    found = {t.id: t for t in list_exceptions(wh)}
    assert found["EX-OPEN"].state == "open"
    assert found["EX-OPEN"].first_seen == dt.date(2026, 11, 20)
    ack = found["EX-ACK"]
    assert (ack.state, ack.acknowledged_by, ack.note, ack.acknowledged_amount_cents) == (
        "acknowledged",
        "ana",
        "wire on its way",
        11_500_000,
    )
    assert ack.last_seen == dt.date(2026, 11, 30)
    done = found["EX-DONE"]
    assert (done.state, done.resolved_on, done.acknowledged_by, done.note) == (
        "resolved",
        dt.date(2026, 11, 27),
        "ben",
        "asked the bank",
    )
    _, events = history(wh, "EX-DONE")
    assert [e.event for e in events] == ["opened", "acknowledged", "resolved"]
    assert events[1].at == dt.datetime(2026, 11, 23, 10, tzinfo=dt.UTC)


def test_past_as_of_reruns_leave_the_events_unchanged_and_show_the_state_of_that_day(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    first = _run(settings, tmp_path, 0)
    short = _shortfall_id(first)
    acknowledge(known_warehouse, short, note="known", by="ana", now=_at(1, 9))
    _run(settings, tmp_path, 1)
    recorded = _events(known_warehouse)
    # on 1 December a re-run of 30 November: the acknowledgement of 1 December is not in it
    past = reconcile(settings, as_of=AS_OF, out_dir=tmp_path / "again", clock=lambda: _at(1, 12))
    assert past.frame("exceptions").set_index("exception_id").loc[short].state == "open"
    assert past.summary.open_exceptions == first.summary.open_exceptions
    assert _events(known_warehouse) == recorded
