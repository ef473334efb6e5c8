"""The exception lifecycle over the known world: stable ids, acknowledge, resolve, the CLI."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.config import Settings
from fundpipe.reconcile import lifecycle, reconcile
from fundpipe.reconcile.lifecycle import (
    ExceptionNotFoundError,
    acknowledge,
    assign,
    history,
    list_exceptions,
)
from fundpipe.warehouse.file import Warehouse

AS_OF = dt.date(2026, 11, 30)
NOW = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)


def _run(settings: Settings, tmp_path: Path, day: int):  # type: ignore[no-untyped-def]
    as_of = AS_OF + dt.timedelta(days=day)
    return reconcile(settings, as_of=as_of, out_dir=tmp_path / f"out{day}")


def test_ids_are_stable_acknowledged_leave_the_open_count_and_gone_ones_resolve(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    first = _run(settings, tmp_path, 0)
    assert first.lifecycle is not None
    opened = {t.id: t for t in first.lifecycle.opened}
    assert len(opened) == first.summary.exceptions == first.summary.open_exceptions
    second = _run(settings, tmp_path, 1)
    assert second.lifecycle is not None
    assert not second.lifecycle.opened
    assert not second.lifecycle.resolved
    assert {t.id for t in second.lifecycle.still_open} == set(opened)
    assert {(t.age_days, t.first_seen) for t in second.lifecycle.still_open} == {(1, AS_OF)}

    extra = next(t for t in opened.values() if t.kind == "extra")
    done = acknowledge(known_warehouse, extra.id, note="refund requested", by="ana", now=NOW)
    assert (done.state, done.acknowledged_by, done.note) == (
        "acknowledged",
        "ana",
        "refund requested",
    )
    with pytest.raises(ExceptionNotFoundError):
        acknowledge(known_warehouse, "EX-NOPE", note="x", by="ana", now=NOW)

    # the extra payment goes away at the service: its exception resolves on that day, and its
    # distribution (dst_2: sheet $160 vs service $210) ties out again
    tie_out = next(
        t for t in opened.values() if (t.kind, t.object_id) == ("distribution_tie_out", "dst_2")
    )
    with known_warehouse.write() as con:
        con.execute("DELETE FROM distribution_payments WHERE id = 'dpmt_4'")
    third = _run(settings, tmp_path, 2)
    assert third.lifecycle is not None
    assert sorted(t.id for t in third.lifecycle.resolved) == sorted([extra.id, tie_out.id])
    assert third.summary.open_exceptions == third.summary.exceptions
    resolved = list_exceptions(known_warehouse, state="resolved")
    assert sorted((t.id, t.resolved_on, t.note) for t in resolved) == sorted(
        [
            (extra.id, AS_OF + dt.timedelta(days=2), "refund requested"),
            (tie_out.id, AS_OF + dt.timedelta(days=2), None),
        ]
    )


def test_an_acknowledged_exception_leaves_the_summary_open_count(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    first = _run(settings, tmp_path, 0)
    assert first.lifecycle is not None
    some = first.lifecycle.opened[0]
    acknowledge(known_warehouse, some.id, note="known", by="ana", now=NOW)
    again = _run(settings, tmp_path, 1)
    assert again.summary.open_exceptions == again.summary.exceptions - 1
    assert again.summary.acknowledged_exceptions == 1


def test_cli_lists_and_acknowledges(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(settings, tmp_path, 0)
    monkeypatch.setenv("FUNDPIPE_WAREHOUSE_PATH", str(known_warehouse.path))
    runner = CliRunner()
    listed = runner.invoke(app, ["exceptions", "list", "--json", "--state", "open"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert rows
    assert {"id", "state", "age_days", "what", "amount_dollars", "action"} <= set(rows[0])
    target = rows[0]["id"]
    acked = runner.invoke(app, ["exceptions", "ack", target, "--note", "dealt with", "--by", "bo"])
    assert acked.exit_code == 0, acked.output
    again = json.loads(
        runner.invoke(app, ["exceptions", "list", "--json", "--state", "acknowledged"]).output
    )
    assert [(r["id"], r["acknowledged_by"], r["note"]) for r in again] == [
        (target, "bo", "dealt with")
    ]
    bad = runner.invoke(app, ["exceptions", "ack", "EX-NOPE", "--note", "x"])
    assert bad.exit_code != 0
    assert "no exception EX-NOPE" in bad.output
    table = runner.invoke(app, ["exceptions", "list"])
    assert table.exit_code == 0
    assert target in table.output


def test_exceptions_and_their_events_are_read_by_column_name(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A select list in another order (a view or query edit) reads the same exceptions and
    events: no field is taken by its position."""
    first = _run(settings, tmp_path, 0)
    assert first.lifecycle is not None
    some = first.lifecycle.opened[0]
    acknowledge(known_warehouse, some.id, note="known", by="ana", now=NOW)
    assign(known_warehouse, some.id, to="li", by="ana", now=NOW)
    listed, shown = list_exceptions(known_warehouse), history(known_warehouse, some.id)
    assert shown[0].owner == "li"
    assert [(e.event, e.by, e.assignee) for e in shown[1]][-2:] == [
        ("acknowledged", "ana", None),
        ("assigned", "ana", "li"),
    ]

    def reversed_list(columns: str) -> str:
        return ", ".join(reversed([c.strip() for c in columns.split(",")]))

    monkeypatch.setattr(lifecycle, "EXCEPTION_COLUMNS", reversed_list(lifecycle.EXCEPTION_COLUMNS))
    monkeypatch.setattr(lifecycle, "EVENT_COLUMNS", reversed_list(lifecycle.EVENT_COLUMNS))
    assert list_exceptions(known_warehouse) == listed
    assert history(known_warehouse, some.id) == shown
