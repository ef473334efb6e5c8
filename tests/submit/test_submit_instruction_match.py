"""Payment instructions match on later nights by entity and a fingerprint of their content
(issue 24): the same roster creates none again, a changed account for an existing entity is held
for a person, the roster row's fingerprint equals the service record's in the default and public
forms, and no full account number reaches the ledger, the logs or the reports."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any

import duckdb
import httpx
import openpyxl
import pytest

from fundpipe.client import FundClient
from fundpipe.plan import instruction_fingerprint
from fundpipe.submit.ingest import ingest
from fundpipe.validate.files import validate_files
from worlds.submit import World, sandbox_world

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
ROSTER = SAMPLES / "roster_new_investors.xlsx"
#: the samples' full account numbers (roster rows 2, 4, 5) and the changed one of row 2
ACCOUNTS = ("000123456789", "7788990011", "4455667788")
NEW_ACCOUNT = "000555554321"
LIST_INSTRUCTIONS = "GET /v1/entities/{id}/payment_instructions"

FORMS: dict[str, dict[str, bool]] = {
    "default": {},
    "public": {"public_forms": True},
    "strict-public-rejecting": {
        "strict_interface": True,
        "public_forms": True,
        "reject_unknown_fields": True,
    },
}


def _instructions(world: World) -> dict[str, list[dict[str, Any]]]:
    """Entity reference → its instruction records as the service's list answers them."""

    async def pull() -> dict[str, list[dict[str, Any]]]:
        async with FundClient(world.settings.client_config(), transport=world.transport) as c:
            out: dict[str, list[dict[str, Any]]] = {}
            async for e in c.list_entities():
                refs = e.external_references or (
                    [e.external_reference] if e.external_reference else []
                )
                for ref in refs:
                    if ref.startswith("NEW-E"):
                        out[ref] = [
                            p.model_dump() async for p in c.list_entity_payment_instructions(e.id)
                        ]
            return out

    return asyncio.run(pull())


def _roster(world: World, name: str, *, account: str | None = None) -> None:
    """The samples' roster in a new file (other bytes), NEW-E1's account changed if given."""
    book = openpyxl.load_workbook(ROSTER)
    book["Notes"]["A2"] = f"Dropped as {name}."
    if account is not None:
        book["Roster"]["L2"] = account
    book.save(world.inbox / name)


def _later(world: World) -> None:
    """25 hours later (idempotency keys forgotten), request counts set back to zero."""
    world.control("POST", "clock/advance", {"seconds": 25 * 3600})
    world.control("DELETE", "requests")


def _first_night(world: World) -> None:
    shutil.copy2(ROSTER, world.inbox / ROSTER.name)
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in result.files] == ["processed"], result.files


@pytest.mark.parametrize("form", ["default", "public"])
def test_the_fingerprint_of_a_roster_row_equals_the_one_of_the_service_record(
    tmp_path: Path, form: str
) -> None:
    world = sandbox_world(tmp_path / "data", **FORMS[form])
    _first_night(world)
    rows = validate_files([ROSTER])[0].payment_instructions
    assert rows is not None
    assert len(rows) == 3
    stored = _instructions(world)
    for row in rows.to_dict("records"):
        records = stored[row["entity_external_reference"]]
        assert len(records) == 1
        record = records[0]
        assert record["account_number_last_four"] == row["account_number_secret"][-4:]
        # the roster row as validated (full number) and as sent (`account_number`)
        sent = {**row, "account_number": row["account_number_secret"]}
        del sent["account_number_last_four"]
        assert instruction_fingerprint(row) == instruction_fingerprint(record)
        assert instruction_fingerprint(sent) == instruction_fingerprint(record)
        assert row["account_number_secret"] not in str(instruction_fingerprint(row))
    # another account (same last four digits or not) is another instruction
    changed = {**rows.to_dict("records")[0], "account_number_secret": NEW_ACCOUNT}
    changed["account_number_last_four"] = NEW_ACCOUNT[-4:]
    assert instruction_fingerprint(changed) != instruction_fingerprint(rows.iloc[0].to_dict())


@pytest.mark.parametrize("form", list(FORMS))
def test_the_same_roster_dropped_again_creates_no_instruction_and_reads_none(
    tmp_path: Path, form: str
) -> None:
    world = sandbox_world(tmp_path / "data", **FORMS[form])
    _first_night(world)
    before = _instructions(world)
    assert sorted(before) == ["NEW-E1", "NEW-E2", "NEW-E3"]
    _later(world)
    _roster(world, "roster again.xlsx")
    again = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in again.files] == ["processed"], again.files
    assert again.submit is not None
    assert again.submit.requests_sent == 0
    assert again.plan is not None
    assert again.plan.held_instructions == ()
    counts = world.control("GET", "requests")["by_operation"]
    # matched from the ledger: no instruction list read, nothing posted
    assert LIST_INSTRUCTIONS not in counts
    assert "POST /v1/payment_instructions" not in counts
    assert _instructions(world) == before


@pytest.mark.parametrize("form", list(FORMS))
def test_a_changed_account_for_an_existing_entity_is_held_for_a_person(
    tmp_path: Path, form: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    world = sandbox_world(tmp_path / "data", **FORMS[form])
    _first_night(world)
    before = _instructions(world)
    _later(world)
    _roster(world, "roster new account.xlsx", account=NEW_ACCOUNT)
    again = ingest(world.settings, transport=world.transport, settle_s=0)
    counts = world.control("GET", "requests")["by_operation"]

    # nothing created; the file is processed and says which row was held, and why
    assert [f.state for f in again.files] == ["processed"], again.files
    assert again.submit is not None
    assert again.submit.requests_sent == 0
    assert _instructions(world) == before
    assert again.plan is not None
    (held,) = again.plan.held_instructions
    assert (held.source_file, held.sheet, held.row) == ("roster new account.xlsx", "Roster", 2)
    assert (held.entity, held.account_last_four) == ("NEW-E1", "4321")
    message = again.files[0].message or ""
    assert "roster new account.xlsx, sheet Roster, row 2" in message
    assert "NEW-E1" in message
    assert "account ending 4321" in message
    assert "a person decides" in message
    assert held.reason in again.warnings
    # the ledger's fingerprints did not match: the entity's list was read once (one entity)
    assert counts.get(LIST_INSTRUCTIONS) == 1, counts
    if form == "strict-public-rejecting":  # its records show only their ids
        assert "shows no content" in held.reason
    else:
        assert "matches none of the instructions it has" in held.reason

    # no full account number in the ledger, the logs, the summary or any file written
    ledger = duckdb.connect(str(world.settings.local.ledger_file), read_only=True)
    try:
        bodies = " ".join(
            str(r) for r in ledger.execute("SELECT * FROM ledger_requests").fetchall()
        )
    finally:
        ledger.close()
    assert "****6789" in bodies  # the ledger does keep the last four digits
    said = " ".join([caplog.text, bodies, *again.warnings, *again.notes])
    said += " ".join(f.message or "" for f in again.files)
    written = b"".join(
        p.read_bytes()
        for p in world.data_dir.rglob("*")
        if p.is_file() and p.suffix != ".xlsx"  # the dropped rosters themselves
    )
    for account in (*ACCOUNTS, NEW_ACCOUNT):
        assert account not in said
        assert account.encode() not in written


class NoInstructionList(httpx.AsyncBaseTransport):
    """The sandbox, except that an entity's instruction list is not served (404), as on a
    service serving only the interface's summary table."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith("/v1/entities/") and path.endswith("/payment_instructions"):
            body = {"error": {"type": "invalid_request_error", "message": "Not Found"}}
            return httpx.Response(404, json=body, request=request)
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize("form", ["default", "public"])
@pytest.mark.parametrize("served", [True, False], ids=["list", "by-id"])
def test_without_the_ledger_the_service_records_are_matched_by_fingerprint(
    tmp_path: Path, form: str, served: bool
) -> None:
    """Another data directory (no ledger of the first night) against the same service: the
    instructions are read from the service — the entity's list, or where it is not served the
    entity and each instruction by id — and matched; none is created twice."""
    world = sandbox_world(tmp_path / "data", **FORMS[form])
    _first_night(world)
    before = _instructions(world)
    _later(world)
    fresh = World(
        settings=world.settings.updated(local={"data_dir": tmp_path / "other"}),
        transport=world.transport if served else NoInstructionList(world.transport),  # type: ignore[arg-type]
    )
    fresh.inbox.mkdir(parents=True)
    _roster(fresh, "roster elsewhere.xlsx")
    again = ingest(fresh.settings, transport=fresh.transport, settle_s=0)
    assert [f.state for f in again.files] == ["processed"], again.files
    assert again.plan is not None
    assert again.plan.held_instructions == ()
    assert again.plan.phase("payment_instructions") == []
    counts = world.control("GET", "requests")["by_operation"]
    if served:  # one list per roster entity
        assert counts.get(LIST_INSTRUCTIONS) == 3, counts
    else:  # each roster entity by id, and its one instruction by id
        assert counts.get("GET /v1/entities/{id}") == 3, counts
        assert counts.get("GET /payment_instructions/{id}") == 3, counts
    assert "POST /v1/payment_instructions" not in counts
    assert _instructions(world) == before
