"""`ingest` against the in-process sandbox: what an operations team would notice."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import duckdb
import pytest
from rich.console import Console

from fundpipe.app.cli.render import render_plan
from fundpipe.submit.ingest import ingest
from fundpipe.submit.ledger import open_ledger
from worlds.submit import World, write_sheet

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _drop(world: World, name: str, rows: list[tuple[str, str, list[int]]]) -> dict[str, list[int]]:
    return write_sheet(world.inbox / name, rows)


def test_a_dropped_file_is_created_once_and_moved_to_processed(world: World) -> None:
    truth = _drop(
        world, "q4.csv", [("A-1", "veh_demo1", [100_00, 250_01]), ("A-2", "veh_demo2", [5])]
    )
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [(f.state, f.payment_states) for f in result.files] == [("processed", {"created": 3})]
    assert world.amounts() == {k: sorted(v) for k, v in truth.items()}
    assert (world.data_dir / "processed" / "q4.csv").exists()
    assert not list(world.inbox.iterdir())
    with open_ledger(world.settings.local.ledger_file) as ledger:
        rows = ledger.payments()
    assert {
        (r["distribution_external_reference"], r["amount_cents"], r["state"]) for r in rows
    } == {
        ("A-1", 10000, "created"),
        ("A-1", 25001, "created"),
        ("A-2", 5, "created"),
    }
    assert all(r["payment_id"].startswith("dpmt_") and r["distribution_id"] for r in rows)


def test_redropped_file_creates_nothing(world: World) -> None:
    _drop(world, "q4.csv", [("A-1", "veh_demo1", [100, 200])])
    shutil.copy(world.inbox / "q4.csv", world.data_dir / "q4-copy.csv")
    ingest(world.settings, transport=world.transport, settle_s=0)
    before = world.distributions()
    shutil.copy(world.data_dir / "q4-copy.csv", world.inbox / "q4 (copy).csv")
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in result.files] == ["duplicate"]
    assert result.submit is None  # not even planned
    assert len(world.distributions()) == len(before) == 1
    # processed/ keeps one file of that content; the ledger keeps the drop
    assert [p.name for p in (world.data_dir / "processed").iterdir()] == ["q4.csv"]
    assert not list((world.data_dir / "processing").glob("*.csv"))
    with open_ledger(world.settings.local.ledger_file) as ledger:
        (drop,) = ledger.redrops()
    assert (drop["source_file"], drop["same_as"]) == ("q4 (copy).csv", "q4.csv")


def test_redropped_edited_file_is_a_conflict_and_creates_nothing(world: World) -> None:
    _drop(world, "q4.csv", [("A-1", "veh_demo1", [100, 200])])
    ingest(world.settings, transport=world.transport, settle_s=0)
    # the analyst edits one amount and adds a distribution, then drops the file again
    _drop(world, "q4.csv", [("A-1", "veh_demo1", [100, 201]), ("A-2", "veh_demo1", [7])])
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    (outcome,) = result.files
    assert outcome.state == "conflict"
    assert result.exit_code == 1
    assert world.amounts() == {"A-1": [100, 200]}  # A-2 not created either
    rejected = world.data_dir / "rejected"
    # the outcome names the reports it wrote: what the CLI and the on-call lines point at
    assert outcome.error_reports == (
        rejected / "q4.csv.errors.csv",
        rejected / "q4.csv.errors.xlsx",
    )
    assert outcome.error_report == rejected / "q4.csv.errors.xlsx"
    report = (rejected / "q4.csv.errors.csv").read_text(encoding="utf-8-sig")
    assert "distribution_conflict" in report
    assert "A-1" in report
    # the row that differs (the second payment, Excel row 3), the column as written and its
    # letter, both amounts in dollars
    import csv

    (row,) = [
        r for r in csv.DictReader(io.StringIO(report)) if r["check"] == "distribution_conflict"
    ]
    assert (row["row"], row["column"], row["letter"], row["value"]) == (
        "3",
        "Amount ($)",
        "G",
        "$2.01",
    )
    assert "amount: sheet $2.01, service $2.00" in row["reason"]
    assert "cents" not in row["reason"]
    with open_ledger(world.settings.local.ledger_file) as ledger:
        assert ledger.payment_states(outcome.file_hash) == {"conflict": 3}
        assert {f["state"] for f in ledger.files()} == {"processed", "conflict"}


def test_unknown_outcome_after_25_hours_is_settled_by_lookup_not_resent(world: World) -> None:
    _drop(world, "q4.csv", [("A-1", "veh_demo1", [100, 200]), ("A-2", "veh_demo1", [300])])
    # the service commits, then the connection drops; the client gives up at once
    world.control(
        "PUT", "faults", {"drop_after_commit_rate": 1.0, "path_prefix": "/v1/distributions"}
    )
    stuck = world.settings.updated(http={"max_attempts": 1})
    first = ingest(stuck, transport=world.transport, settle_s=0)
    assert [f.state for f in first.files] == ["incomplete"]
    assert first.exit_code == 3
    assert (world.data_dir / "processing" / "q4.csv").exists()
    world.control("DELETE", "faults")
    world.control("POST", "clock/advance", {"seconds": 25 * 3600})  # the key is forgotten
    second = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in second.files] == ["processed"]
    assert second.submit is not None
    assert second.submit.requests_sent == 0
    assert world.amounts() == {"A-1": [100, 200], "A-2": [300]}
    with open_ledger(world.settings.local.ledger_file) as ledger:
        assert ledger.payment_states() == {"created": 3}
        assert [r.state for r in ledger.requests()] == ["settled"]


def test_dry_run_prints_the_plan_and_sends_nothing(world: World) -> None:
    shutil.copy(SAMPLES / "roster_new_investors.xlsx", world.inbox)
    shutil.copy(SAMPLES / "distributions_q4.csv", world.inbox)
    entities_before = len(world.entities())
    out = io.StringIO()
    result = ingest(
        world.settings,
        transport=world.transport,
        settle_s=0,
        dry_run=True,
    )
    assert result.plan is not None
    render_plan(result.plan, Console(file=out, width=250))
    printed = out.getvalue()
    assert result.plan.counts()["distributions_create"] == 3
    assert "445,276.50" in printed  # total of veh_demo1
    assert "POST /v1/distributions" in printed
    assert "****6789" in printed
    assert "000123456789" not in printed
    assert world.distributions() == []
    assert len(world.entities()) == entities_before
    assert sorted(p.name for p in world.inbox.iterdir()) == [
        "distributions_q4.csv",
        "roster_new_investors.xlsx",
    ]
    assert not world.settings.local.ledger_file.exists()


def test_require_funds_refuses_an_underfunded_distribution(world: World) -> None:
    # veh_demo3 has 750,000.00 available
    _drop(world, "big.csv", [("BIG-1", "veh_demo3", [700_000_00, 60_000_00])])
    result = ingest(world.settings, transport=world.transport, settle_s=0, require_funds=True)
    (outcome,) = result.files
    assert outcome.state == "refused"
    assert "760,000.00 USD" in (outcome.message or "")
    assert world.distributions() == []
    report = (world.data_dir / "rejected" / "big.csv.errors.csv").read_text(encoding="utf-8-sig")
    assert "funds_available" in report
    # without --require-funds the same shortfall is only a warning
    _drop(world, "big2.csv", [("BIG-2", "veh_demo3", [700_000_00, 60_000_00])])
    warned = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in warned.files] == ["processed"]
    assert warned.preflight is not None
    assert [i.check for i in warned.preflight.warnings] == ["funds_available"]
    assert set(world.amounts()) == {"BIG-2"}


def test_files_still_being_written_are_left_in_the_inbox(world: World) -> None:
    _drop(world, "q4.csv.part", [("P-1", "veh_demo1", [1])])
    _drop(world, "~$q4.xlsx", [("P-2", "veh_demo1", [1])])
    _drop(world, "fresh.csv", [("P-3", "veh_demo1", [1])])
    result = ingest(world.settings, transport=world.transport, settle_s=30)
    assert result.files == []
    assert world.distributions() == []
    assert len(list(world.inbox.iterdir())) == 3


def test_roster_objects_are_created_and_account_numbers_stay_out_of_the_ledger(
    world: World,
) -> None:
    shutil.copy(SAMPLES / "roster_new_investors.xlsx", world.inbox)
    shutil.copy(SAMPLES / "distributions_q4.csv", world.inbox)
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert {f.state for f in result.files} == {"processed"}
    roster = {f.source_file: f.roster for f in result.files}
    assert roster["distributions_q4.csv"] is None
    told = roster["roster_new_investors.xlsx"]
    assert told is not None
    assert told["entities"] >= 3
    assert told["payment_instructions"] >= 1
    by_ref = {e.external_reference: e for e in world.entities()}
    assert {"NEW-E1", "NEW-E2", "NEW-E3"} <= set(by_ref)
    assert by_ref["NEW-E1"].payment_instructions  # instructions were created
    with open_ledger(world.settings.local.ledger_file) as ledger:
        phases = [r.phase for r in ledger.requests()]
        rows = ledger.payments()
    assert phases.count("distributions") == 1
    assert {"entities", "contacts", "associations", "payment_instructions"} <= set(phases)
    new_entity_rows = [r for r in rows if r["entity"] == by_ref["NEW-E1"].id]
    assert new_entity_rows  # sheet references resolved to the created ent_ id
    raw = world.settings.local.ledger_file.read_bytes()
    wal = world.settings.local.ledger_file.with_name(world.settings.local.ledger_file.name + ".wal")
    raw += wal.read_bytes() if wal.exists() else b""
    assert b"000123456789" not in raw


def test_the_ledger_tables_keep_the_warehouse_seam(world: World) -> None:
    with open_ledger(world.settings.local.ledger_file):
        pass  # a new ledger file, as a first run leaves it; read it as the warehouse does
    con = duckdb.connect(str(world.settings.local.ledger_file), read_only=True)
    try:
        payments = con.execute("DESCRIBE ledger_payments").fetchall()
        files = con.execute("DESCRIBE ledger_files").fetchall()
    finally:
        con.close()
    seam_payments = [
        ("file_hash", "VARCHAR"),
        ("source_file", "VARCHAR"),
        ("sheet", "VARCHAR"),
        ("row", "INTEGER"),
        ("distribution_external_reference", "VARCHAR"),
        ("distribution_name", "VARCHAR"),
        ("vehicle", "VARCHAR"),
        ("entity", "VARCHAR"),
        ("amount_cents", "BIGINT"),
        ("currency", "VARCHAR"),
        ("distribution_id", "VARCHAR"),
        ("payment_id", "VARCHAR"),
        ("state", "VARCHAR"),
        ("updated_at", "TIMESTAMP WITH TIME ZONE"),
    ]
    seam_files = [
        ("file_hash", "VARCHAR"),
        ("source_file", "VARCHAR"),
        ("received_at", "TIMESTAMP WITH TIME ZONE"),
        ("state", "VARCHAR"),
        ("rows", "INTEGER"),
        ("distributions", "INTEGER"),
        ("total_cents", "BIGINT"),
    ]
    assert [(c[0], c[1]) for c in payments][: len(seam_payments)] == seam_payments
    assert [(c[0], c[1]) for c in files][: len(seam_files)] == seam_files


def test_batch_size_and_settle_time_come_from_the_settings(world: World, monkeypatch) -> None:
    monkeypatch.setenv("FUNDPIPE_SUBMIT_BATCH_SIZE", "2")
    monkeypatch.setenv("FUNDPIPE_INBOX_SETTLE_S", "0")
    settings = type(world.settings)(
        local={"data_dir": world.data_dir}, http={"rate_limit_per_s": 1000.0}
    )
    assert (settings.pipeline.submit_batch_size, settings.pipeline.inbox_settle_s) == (2, 0.0)
    truth = _drop(world, "five.csv", [(f"B-{i}", "veh_demo1", [100 + i]) for i in range(5)])
    # no settle_s / batch_size arguments: a file written just now is taken at once (settle 0)
    result = ingest(settings.with_service("http://sandbox.test"), transport=world.transport)
    assert [f.state for f in result.files] == ["processed"]
    assert result.plan is not None
    sizes = [len(r.body) for r in result.plan.phase("distributions")]
    assert sizes == [2, 2, 1]  # at most 2 distributions per create request
    assert world.amounts() == {k: sorted(v) for k, v in truth.items()}


def test_a_batch_size_the_service_would_refuse_is_a_settings_error(monkeypatch) -> None:
    import pydantic

    from fundpipe.config import Settings

    monkeypatch.setenv("FUNDPIPE_SUBMIT_BATCH_SIZE", "101")
    with pytest.raises(pydantic.ValidationError, match="submit_batch_size"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_a_distribution_cancelled_at_the_service_is_a_conflict_not_already_there(
    world: World,
) -> None:
    _drop(world, "q4.csv", [("C-1", "veh_demo1", [100, 200])])
    ingest(world.settings, transport=world.transport, settle_s=0)
    ((cancelled, _),) = world.distributions()
    world.control("POST", f"distributions/{cancelled.id}/cancel")
    # the same sheet, renamed so it is not a byte-identical re-drop: same content as before
    _drop(world, "q4-again.csv", [("C-1", "veh_demo1", [100, 200]), ("C-2", "veh_demo1", [5])])
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    (outcome,) = result.files
    assert (outcome.state, result.exit_code) == ("conflict", 1)
    after = world.distributions()
    assert [(d.id, d.status) for d, _ in after] == [(cancelled.id, "cancelled")]  # C-2 neither
    report = (world.data_dir / "rejected" / "q4-again.csv.errors.csv").read_text("utf-8-sig")
    assert "C-1" in report
    assert "cancelled at the service" in report


def test_same_payments_notifying_other_contacts_is_a_conflict(world: World) -> None:
    import asyncio

    from fundpipe.client import FundClient, idempotency_key
    from fundpipe.plan import IdMap, ServiceState, build_plan
    from fundpipe.submit.snapshot import load_state
    from worlds.submit import file_input, payment_rows

    def sheet(contact: str) -> list[dict[str, object]]:
        return payment_rows("N-1", [100, 200], entities=["ent_demo1", "ent_demo1"], notify=contact)

    async def create_then_load() -> ServiceState:
        async with FundClient(world.settings.client_config(), transport=world.transport) as client:
            empty = await load_state(client, "org_demo")
            (request,) = build_plan([file_input("h1", sheet("cnt_demo1"))], empty).requests
            sent = request.resolve(IdMap(), "org_demo", idempotency_key)
            await client.create_distributions(sent.body, idempotency_key=sent.key)
            return await load_state(client, "org_demo")

    state = asyncio.run(create_then_load())
    # the service holds N-1 notifying cnt_demo1: the same sheet links, another contact conflicts
    (same,) = build_plan([file_input("h2", sheet("cnt_demo1"))], state).distributions
    (other,) = build_plan([file_input("h3", sheet("cnt_demo2"))], state).distributions
    assert (same.action, same.existing_id) == ("link", state.distributions_by_ref["N-1"].id)
    assert (other.action, other.reason) == (
        "conflict",
        "notifications differ: the payments notify other contacts than the sheet names",
    )


class _Recorder:
    """A progress sink that remembers each step's total and how far it got."""

    def __init__(self) -> None:
        self.totals: dict[str, int | None] = {}
        self.done: dict[str, int] = {}

    def start(self, key: str, description: str, total: int | None = None) -> None:
        self.totals[key] = total
        self.done.setdefault(key, 0)

    def advance(self, key: str, amount: int = 1) -> None:
        self.done[key] = self.done.get(key, 0) + amount


def test_progress_follows_every_file_and_every_request(world: World) -> None:
    shutil.copy(SAMPLES / "roster_new_investors.xlsx", world.inbox)
    shutil.copy(SAMPLES / "distributions_q4.csv", world.inbox)
    recorder = _Recorder()
    result = ingest(world.settings, transport=world.transport, settle_s=0, progress=recorder)
    assert result.exit_code == 0
    assert result.plan is not None
    assert recorder.totals["validate"] == recorder.done["validate"] == 2
    # every planned request is counted once, whatever its outcome
    assert recorder.totals["submit"] == recorder.done["submit"] == len(result.plan.requests)
    assert result.submit is not None
    assert result.submit.requests_sent == len(result.plan.requests)


def test_dates_in_figures_follow_the_declared_order_and_a_columns_proof_is_told(
    world: World,
) -> None:
    # issue 22: 03/04/2027 was read as 4 March without a word
    write_sheet(world.inbox / "london.csv", [("L-1", "veh_demo1", [100_00])], date="03/04/2027")
    refused = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in refused.files] == ["rejected"]
    report = (world.data_dir / "rejected" / "london.csv.errors.csv").read_text("utf-8-sig")
    assert "could be 3 April 2027 (day first) or 4 March 2027 (month first)" in report

    london = world.settings.updated(pipeline={"date_order": "dmy"})
    write_sheet(world.inbox / "london2.csv", [("L-2", "veh_demo1", [100_00])], date="03/04/2027")
    accepted = ingest(london, transport=world.transport, settle_s=0)
    assert [f.state for f in accepted.files] == ["processed"]
    [created] = [d for d, _ in world.distributions() if d.external_reference == "L-2"]
    assert str(created.distribution_date).startswith("2027-04-03")

    write_sheet(world.inbox / "mixed.csv", [("L-3", "veh_demo1", [100_00])], date="25/04/2027")
    with open(world.inbox / "mixed.csv", "a", encoding="utf-8") as fh:
        fh.write("Distribution L-4,veh_demo1,L-4,03/04/2027,America/New_York,ent_demo1,$1.00,USD\n")
    told = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in told.files] == ["processed"]
    assert any("mixed.csv: Payment Date (D)" in w and "day/month/year" in w for w in told.warnings)


def test_a_rejected_file_carries_the_total_of_the_rows_that_could_be_read(world: World) -> None:
    # issue 25: the rejected file's exception had no amount
    write_sheet(world.inbox / "q4.csv", [("R-1", "veh_demo1", [100_00, 250_01])])
    with open(world.inbox / "q4.csv", "a", encoding="utf-8") as fh:
        fh.write(
            "Distribution R-1,veh_demo1,R-1,2026-12-15 09:00,America/New_York,ent_demo3,"
            "twelve dollars,USD\n"
        )
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [(f.state, f.total_cents) for f in result.files] == [("rejected", 350_01)]
    with open_ledger(world.settings.local.ledger_file) as ledger:
        files = ledger.files()
    assert [(f["state"], f["total_cents"]) for f in files] == [("rejected", 350_01)]


def test_the_plan_is_built_inside_the_entry_point_s_choice_and_nothing_is_sent_in_it(
    world: World,
) -> None:
    from collections.abc import Iterator
    from contextlib import contextmanager

    import httpx

    sent: list[str] = []

    class Counting(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.url.path)
            return await world.transport.handle_async_request(request)

    _drop(world, "q4.csv", [("P-1", "veh_demo1", [100, 200])])
    inside: list[int] = []

    @contextmanager
    def around() -> Iterator[None]:
        before = len(sent)
        yield
        inside.append(len(sent) - before)

    result = ingest(world.settings, transport=Counting(), settle_s=0, around_planning=around)
    assert inside == [0]  # entered once, and no request was sent inside it
    assert "/v1/distributions" in sent  # ... but after it
    assert [f.state for f in result.files] == ["processed"]
    assert world.amounts() == {"P-1": [100, 200]}
