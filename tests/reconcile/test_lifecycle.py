"""The exception lifecycle over the known world: stable ids, acknowledge, resolve, the CLI."""

from __future__ import annotations

import datetime as dt
import getpass
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
    comment,
    history,
    list_exceptions,
)
from fundpipe.record import Record, decision_sink, read_decisions, restore, take_snapshot
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
        (target, f"bo (typed at the CLI by OS user {getpass.getuser()})", "dealt with")
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


def test_a_comment_is_an_event_of_the_history_and_changes_nothing_else(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _run(settings, tmp_path, 0)
    assert first.lifecycle is not None
    some = first.lifecycle.opened[0]
    assign(known_warehouse, some.id, to="li", by="ana", now=NOW)
    (before,) = [e for e in list_exceptions(known_warehouse) if e.id == some.id]
    later = NOW + dt.timedelta(days=3)  # days after the last night: no sighting of it
    done = comment(
        known_warehouse, some.id, note="asked the bank for the trace", by="bo", now=later
    )
    assert done == before  # state, owner, amount, last seen and age as they were
    _, events = history(known_warehouse, some.id)
    assert (events[-1].event, events[-1].by, events[-1].note) == (
        "commented",
        "bo",
        "asked the bank for the trace",
    )
    with pytest.raises(ValueError, match="needs its text"):
        comment(known_warehouse, some.id, note="  ", by="bo", now=later)
    with pytest.raises(ExceptionNotFoundError):
        comment(known_warehouse, "EX-NOPE", note="x", by="bo", now=later)

    # the command line comments too, and `exceptions show` prints both in its history
    monkeypatch.setenv("FUNDPIPE_WAREHOUSE_PATH", str(known_warehouse.path))
    runner = CliRunner()
    said = runner.invoke(
        app, ["exceptions", "comment", some.id, "--note", "trace received", "--by", "cy"]
    )
    assert said.exit_code == 0, said.output
    assert f"{some.id}: comment recorded" in said.output
    empty = runner.invoke(app, ["exceptions", "comment", some.id, "--note", " ", "--by", "cy"])
    assert empty.exit_code == 2
    assert "this needs a note" in empty.output
    shown = json.loads(runner.invoke(app, ["exceptions", "show", some.id, "--json"]).output)
    assert [(e["event"], e["by"], e["note"]) for e in shown["events"]][-2:] == [
        ("commented", "bo", "asked the bank for the trace"),
        ("commented", f"cy (typed at the CLI by OS user {getpass.getuser()})", "trace received"),
    ]
    table = runner.invoke(app, ["exceptions", "show", some.id])
    assert table.exit_code == 0, table.output
    assert "commented" in table.output
    assert "trace received" in table.output


def test_a_comment_in_the_record_comes_back_with_a_restore(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    first = _run(settings, tmp_path, 0)
    assert first.lifecycle is not None
    some = first.lifecycle.opened[0]
    settings.local.data_dir.mkdir(parents=True, exist_ok=True)
    assert take_snapshot(settings, clock=lambda: NOW) is not None
    later = NOW + dt.timedelta(hours=2)
    comment(
        known_warehouse,
        some.id,
        note="asked the bank for the trace",
        by="Maria Lopez <maria@example.com>",
        user="desk:local",
        now=later,
        record=decision_sink(settings),
    )
    (decision,) = read_decisions(Record(settings.local.record_location))
    assert decision.decision == "commented"
    known_warehouse.path.unlink()  # the machine lost its warehouse
    restore(settings, clock=lambda: later + dt.timedelta(hours=1))
    _, events = history(Warehouse(known_warehouse.path), some.id)
    assert (events[-1].event, events[-1].by, events[-1].os_user, events[-1].note) == (
        "commented",
        "Maria Lopez <maria@example.com>",
        "desk:local",
        "asked the bank for the trace",
    )


def test_a_tally_is_every_exception_folded_then_filtered_ordered_and_cut_to_its_page(
    settings: Settings, known_warehouse: Warehouse, tmp_path: Path
) -> None:
    """The desk's queue, morning and month read a page of the open exceptions computed in the
    warehouse: it is what folding every one, filtering, ordering and cutting gives."""
    from collections import Counter

    from fundpipe.reconcile import tally_exceptions
    from fundpipe.vocabulary import kind_words

    _run(settings, tmp_path, 0)
    every = list_exceptions(known_warehouse, state="open")
    assert len(every) >= 4, "the known world has too few exceptions to page through"
    assign(known_warehouse, every[0].id, to="Ana <ana@example.com>", by="ana", now=NOW)
    acked = every[1].id
    acknowledge(known_warehouse, acked, note="seen", by="ana", now=NOW)
    _run(settings, tmp_path, 3)  # three days on: ages of 3 days, and one new at 0 if any
    every = list_exceptions(known_warehouse, state="open")
    orders = {
        "age": lambda e: (-e.age_days, e.id),
        "amount": lambda e: (e.amount_cents is None, -abs(e.amount_cents or 0), e.id),
        "kind": lambda e: (kind_words(e.kind).lower(), -e.age_days, e.id),
    }
    filters = [
        ({}, lambda e: True),
        ({"kind": every[-1].kind}, lambda e: e.kind == every[-1].kind),
        ({"owner": "Ana <ana@example.com>"}, lambda e: e.owner == "Ana <ana@example.com>"),
        ({"unowned": True}, lambda e: not e.owner),
        ({"min_age": 1}, lambda e: e.age_days >= 1),
    ]
    for order, key in orders.items():
        for asked, keeps in filters:
            kept = sorted((e for e in every if keeps(e)), key=key)
            for offset in (0, 2):
                found = tally_exceptions(
                    known_warehouse, order=order, offset=offset, limit=2, **asked
                )
                where = f"{order} {asked} from {offset}"
                assert found.shown == tuple(kept[offset : offset + 2]), where
                assert found.matching == len(kept), where
                assert found.count == len(every), where
                assert found.total_cents == sum(e.amount_cents or 0 for e in every), where
                assert set(found.kinds) == {e.kind for e in every}, where
                assert set(found.owners) == {e.owner for e in every if e.owner}, where
                rest = Counter(e.kind for e in kept[offset + 2 :])
                assert dict(found.after_by_kind) == dict(rest), where
    acknowledged = tally_exceptions(known_warehouse, state="acknowledged")
    assert [(e.id, e.state) for e in acknowledged.shown] == [(acked, "acknowledged")]
    assert acked not in {e.id for e in every}
