"""The inbox: names, moves, files still being written, the lock; resuming from the ledger."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from time_machine import TimeMachineFixture

from fundpipe.client import idempotency_key
from fundpipe.plan import ResolvedRequest
from fundpipe.submit.inbox import (
    InboxBusyError,
    InboxLock,
    LeftAlone,
    UnsafePathError,
    is_transient_name,
    move_into,
    sanitize_name,
    stable_files,
    survey,
)
from fundpipe.submit.ingest import ingest
from fundpipe.submit.ledger import open_ledger
from worlds.submit import World, write_sheet


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("../../etc/passwd.csv", "passwd.csv"),
        ("..\\..\\boot.ini.csv", "boot.ini.csv"),
        ("Q4 payments (final).xlsx", "Q4_payments_final_.xlsx"),
        (".hidden.csv", "hidden.csv"),
        ("..", "file"),
        ("ä€$;rm -rf.csv", "_rm_-rf.csv"),
    ],
)
def test_names_are_sanitised(name: str, clean: str) -> None:
    assert sanitize_name(name) == clean


def test_moves_stay_inside_the_data_dir_and_never_overwrite(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "inbox").mkdir(parents=True)
    for content in ("one", "two"):
        (data / "inbox" / "q4.csv").write_text(content)
        move_into(data / "inbox" / "q4.csv", data / "processed", data)
    assert sorted(p.read_text() for p in (data / "processed").iterdir()) == ["one", "two"]
    (data / "inbox" / "x.csv").write_text("x")
    with pytest.raises(UnsafePathError):
        move_into(data / "inbox" / "x.csv", tmp_path / "elsewhere", data)
    assert (data / "inbox" / "x.csv").exists()


@pytest.mark.parametrize(
    "name", ["~$q4.xlsx", ".~lock.q4.xlsx#", "q4.csv.part", "q4.csv.tmp", ".gitkeep", "notes.txt"]
)
def test_temporary_and_foreign_names_are_not_picked_up(name: str) -> None:
    assert is_transient_name(name)


def test_only_files_at_rest_are_picked_up(tmp_path: Path) -> None:
    old, fresh = tmp_path / "old.csv", tmp_path / "fresh.csv"
    old.write_text("a")
    fresh.write_text("b")
    past = time.time() - 60
    os.utime(old, (past, past))
    assert stable_files(tmp_path, settle_s=5, watch_s=0.01) == [old]
    assert stable_files(tmp_path, settle_s=0) == [fresh, old]


def test_a_sheet_s_age_is_read_on_the_file_system_s_clock_not_the_worker_s(
    tmp_path: Path, time_machine: TimeMachineFixture
) -> None:
    """A worker whose clock runs a day behind (or ahead of) the share's still holds back the
    sheet written a moment ago and reads the one at rest; one stamped ahead of the share's own
    clock is judged by the watch alone."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    fresh, old, ahead = inbox / "fresh.csv", inbox / "old.csv", inbox / "ahead.csv"
    for p in (fresh, old, ahead):
        p.write_text("x")
    share_now = fresh.stat().st_mtime
    os.utime(old, (share_now - 60, share_now - 60))
    os.utime(ahead, (share_now + 3600, share_now + 3600))
    for skew in (-86_400, 86_400):
        time_machine.move_to(share_now + skew, tick=True)
        assert survey(inbox, settle_s=5, watch_s=0.01).ready == [ahead, old]


def test_every_inbox_entry_fundpipe_does_not_read_gets_a_word(world: World, tmp_path: Path) -> None:
    """A link to a sheet elsewhere, a link to a folder, a folder named like a sheet and a file
    fundpipe does not read are each named with the reason; no link is followed out of the
    organization's folder (the sheet elsewhere is neither sent nor moved)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_sheet(elsewhere / "other.csv", [("R-9", "veh_demo1", [900])])
    write_sheet(world.inbox / "q4.csv", [("R-1", "veh_demo1", [100, 200])])
    (world.inbox / "link.csv").symlink_to(elsewhere / "other.csv")
    (world.inbox / "shared.csv").symlink_to(elsewhere, target_is_directory=True)
    (world.inbox / "folder.csv").mkdir()
    (world.inbox / "memo.docx").write_bytes(b"PK")
    (world.inbox / "~$q4.xlsx").write_bytes(b"lock")
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [(f.source_file, f.state) for f in result.files] == [("q4.csv", "processed")]
    assert result.left_alone == [
        LeftAlone("folder.csv", "a folder"),
        LeftAlone("link.csv", "a link to a file outside the inbox"),
        LeftAlone("memo.docx", "not a sheet fundpipe reads (.docx)"),
        LeftAlone("shared.csv", "a link to a folder"),
        LeftAlone("~$q4.xlsx", "a lock or temporary file (a sheet still being written)"),
    ]
    assert result.exit_code == 0
    assert world.amounts() == {"R-1": [100, 200]}
    assert (elsewhere / "other.csv").is_file()
    assert (world.inbox / "link.csv").is_symlink()
    assert (world.inbox / "folder.csv").is_dir()


def test_a_sheet_still_being_written_is_named_and_read_by_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "fresh.csv").write_text("a")
    (tmp_path / "other.csv").symlink_to(tmp_path / "fresh.csv")
    (tmp_path / "notes").write_text("b")
    looked = survey(tmp_path, settle_s=5, watch_s=0.01)
    assert looked.ready == []
    assert [e.sentence for e in looked.left_alone] == [
        "fresh.csv — left alone: still being written (changed in the last 5 s); the next run "
        "reads it",
        "notes — left alone: not a sheet fundpipe reads (no extension)",
        "other.csv — left alone: a link to another file of the inbox",
    ]


def test_the_lock_names_its_holder(tmp_path: Path) -> None:
    busy = pytest.raises(InboxBusyError, match=rf"pid {os.getpid()} on .+ since \d{{4}}-")
    with InboxLock(tmp_path), busy:
        InboxLock(tmp_path).acquire()
    with InboxLock(tmp_path):  # released on exit
        pass


def test_a_run_waiting_for_the_inbox_lock_says_who_holds_it_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with InboxLock(tmp_path), pytest.raises(InboxBusyError) as busy:
        InboxLock(tmp_path, wait_s=1.2).acquire()
    assert [r.getMessage() for r in caplog.records if r.name == "fundpipe.submit.inbox"] == [
        f"{tmp_path / '.ingest.lock'}: {busy.value}; waiting up to 1.2 s"
    ]


def test_a_crash_between_intent_and_send_is_resumed_with_the_same_key(world: World) -> None:
    write_sheet(world.inbox / "q4.csv", [("R-1", "veh_demo1", [100, 200])])
    # first run: dry, to learn the request it will send
    planned = ingest(world.settings, transport=world.transport, settle_s=0, dry_run=True)
    assert planned.plan is not None
    (request,) = planned.plan.requests
    body = list(request.body)
    key = idempotency_key("org_demo", "POST", "/v1/distributions", body)
    # a run wrote its intent, then died before sending (the file was already in processing/)
    (world.data_dir / "processing").mkdir()
    (world.inbox / "q4.csv").rename(world.data_dir / "processing" / "q4.csv")
    with open_ledger(world.settings.local.ledger_file) as ledger:
        ledger.record_intent(
            ResolvedRequest(
                "distributions", "POST", "/v1/distributions", body, key, ("h",), ("R-1",), "x"
            )
        )
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in result.files] == ["processed"]
    assert result.submit is not None
    assert result.submit.keys_sent == {key}
    assert world.amounts() == {"R-1": [100, 200]}
    with open_ledger(world.settings.local.ledger_file) as ledger:
        (record,) = ledger.requests()
    assert (record.key, record.state, record.attempts) == (key, "succeeded", 2)


def test_a_chunk_of_intents_with_a_key_already_written_records_each_key_once(
    tmp_path: Path,
) -> None:
    def request(key: str) -> ResolvedRequest:
        return ResolvedRequest("associations", "POST", "/v1/x", [{"id": key}], key, ("h",), (), key)

    with open_ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.record_intents([request("a"), request("b")])
        ledger.record_outcome("a", "succeeded", status=201)
        # "a" sent again (twice in one chunk) beside a new key: one commit, no duplicate row
        ledger.record_intents([request("c"), request("a"), request("a")])
        rows = {(r.key, r.state, r.attempts) for r in ledger.requests()}
    assert rows == {("a", "sent", 3), ("b", "sent", 1), ("c", "sent", 1)}


def test_outcomes_are_written_in_the_commit_of_the_next_chunk_s_intents(tmp_path: Path) -> None:
    def request(key: str) -> ResolvedRequest:
        return ResolvedRequest("associations", "POST", "/v1/x", [{"id": key}], key, ("h",), (), key)

    with open_ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.record_intents([request("a"), request("b")])
        ledger.record_outcomes_and_intents(
            [lambda: ledger.record_outcome("b", "succeeded", status=201, service_ids=["cnt_b"])],
            [request("c")],
        )
        after_new = {(r.key, r.state, r.attempts) for r in ledger.requests()}
        # an outcome beside a key sent again: the upsert's commit carries it too
        ledger.record_outcomes_and_intents(
            [lambda: ledger.record_outcome("c", "failed", status=422)], [request("a")]
        )
        after_resend = {(r.key, r.state, r.attempts) for r in ledger.requests()}
    assert after_new == {("a", "sent", 1), ("b", "succeeded", 1), ("c", "sent", 1)}
    assert after_resend == {("a", "sent", 2), ("b", "succeeded", 1), ("c", "failed", 1)}
