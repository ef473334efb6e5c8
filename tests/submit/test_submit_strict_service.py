"""Issue 24's proofs, in process: a night against a service that refuses unknown fields in the
public error form, and nights through a service outage (sandbox faults), on a virtual clock."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest

from fundpipe.client._retry import Timer
from fundpipe.errors import ExitCode, as_fundpipe_error
from fundpipe.submit.binding import binding_file
from fundpipe.submit.ingest import ingest
from worlds.submit import World, sandbox_world, write_sheet

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
ROSTER_REFS = ("NEW-E1", "NEW-E2")


def _created(world: World) -> dict[str, Any]:
    """What the service holds of the samples' roster: entity ids by reference, contacts by
    email, instruction ids by entity."""
    import asyncio

    from fundpipe.client import FundClient

    async def pull() -> dict[str, Any]:
        async with FundClient(world.settings.client_config(), transport=world.transport) as c:
            entities = [e async for e in c.list_entities()]
            contacts = [x async for x in c.list_contacts()]
        by_ref: dict[str, list[str]] = {}
        for e in entities:
            for ref in e.external_references:
                by_ref.setdefault(ref, []).append(e.id)
        emails: dict[str, int] = {}
        for x in contacts:
            emails[x.email or ""] = emails.get(x.email or "", 0) + 1
        pmis = {e.id: list(e.payment_instructions) for e in entities}
        return {"by_ref": by_ref, "emails": emails, "pmis": pmis}

    return asyncio.run(pull())


def _roster_again(world: World, name: str) -> None:
    """The same roster in a new file (other bytes: the Notes sheet says so)."""
    book = openpyxl.load_workbook(SAMPLES / "roster_new_investors.xlsx")
    book["Notes"]["A2"] = "Dropped again the next day."
    book.save(world.inbox / name)


def test_a_night_against_a_service_refusing_unknown_fields_creates_everything_once(
    tmp_path: Path,
) -> None:
    world = sandbox_world(
        tmp_path / "data", strict_interface=True, public_forms=True, reject_unknown_fields=True
    )
    for name in ("distributions_q4.csv", "roster_new_investors.xlsx"):
        shutil.copy2(SAMPLES / name, world.inbox / name)
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in result.files] == ["processed", "processed"], result.files

    held = _created(world)
    for ref in ROSTER_REFS:
        assert len(held["by_ref"][ref]) == 1, ref  # each investor once
        assert len(held["pmis"][held["by_ref"][ref][0]]) == 1  # its instructions once
    assert all(count == 1 for count in held["emails"].values()), held["emails"]
    amounts = world.amounts()  # fails on a distribution made twice
    assert len(amounts) == 3

    # contacts and instructions never carried a field the public description forbids; the
    # entities' forms were learned, are in the organization's binding, and the summary says so
    forms = json.loads(binding_file(world.settings).read_text(encoding="utf-8"))["body_forms"]
    assert forms == {"/v1/entities": "external_references+no_external_type"}
    assert sum("binding keeps this form" in n for n in result.notes) == 2, result.notes

    # 25 hours later (the idempotency keys are forgotten): the same roster creates nothing,
    # and the night starts with the learned forms (no refusal at all)
    world.control("POST", "clock/advance", {"seconds": 25 * 3600})
    world.control("DELETE", "requests")
    _roster_again(world, "roster again.xlsx")
    again = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in again.files] == ["processed"], again.files
    assert again.submit is not None
    assert again.submit.requests_sent == 0
    counts = world.control("GET", "requests")
    assert "400" not in counts["by_status"], counts
    assert _created(world) == held
    assert world.amounts() == amounts


class VirtualClock(Timer):
    """The client's retry clock: time passes only while the client waits."""

    t = 0.0

    def now(self) -> float:
        return VirtualClock.t

    def waited(self, seconds: float) -> None:
        VirtualClock.t += seconds


class HealingTransport(httpx.AsyncBaseTransport):
    """The sandbox's transport; once the virtual clock passes `heal_at`, the faults are lifted
    through the control route (as an operator would)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, heal_at: float) -> None:
        self.inner = inner
        self.heal_at = heal_at
        self.healed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not self.healed and VirtualClock.t >= self.heal_at:
            lift = httpx.Request("DELETE", "http://sandbox.test/_sandbox/faults")
            response = await self.inner.handle_async_request(lift)
            await response.aread()
            self.healed = True
        return await self.inner.handle_async_request(request)


@pytest.fixture
def virtual_clock(monkeypatch: pytest.MonkeyPatch) -> type[VirtualClock]:
    VirtualClock.t = 0.0
    monkeypatch.setattr("fundpipe.client._requester.Timer", VirtualClock)
    return VirtualClock


def _outage(world: World) -> None:
    """503 without Retry-After on every request of org_demo."""
    world.control(
        "PUT", "faults", {"error_rate": 1.0, "statuses": [503], "org_id": "org_demo", "seed": 1}
    )


def test_thirty_seconds_of_503_are_ridden_out_and_the_night_completes(
    tmp_path: Path, virtual_clock: type[VirtualClock]
) -> None:
    world = sandbox_world(tmp_path / "data")
    write_sheet(world.inbox / "q4.csv", [("OUT-1", "veh_demo1", [100, 200])])
    _outage(world)
    transport = HealingTransport(world.transport, heal_at=30.0)
    result = ingest(world.settings, transport=transport, settle_s=0)
    assert transport.healed
    assert virtual_clock.t >= 30.0
    assert [f.state for f in result.files] == ["processed"], result.files
    assert world.amounts() == {"OUT-1": [100, 200]}
    assert any("unavailable for" in n and "waited it out" in n for n in result.notes), result.notes


def test_an_outage_past_the_deadline_fails_plainly_and_the_next_night_finishes_once(
    tmp_path: Path, virtual_clock: type[VirtualClock]
) -> None:
    world = sandbox_world(tmp_path / "data")
    write_sheet(world.inbox / "q4.csv", [("OUT-2", "veh_demo1", [300])])
    _outage(world)
    transport = HealingTransport(world.transport, heal_at=10_000.0)
    with pytest.raises(Exception) as caught:
        ingest(world.settings, transport=transport, settle_s=0)
    failure = as_fundpipe_error(caught.value)
    assert failure.exit_code == ExitCode.SERVICE
    message = str(failure)
    assert "unavailable for 2 min" in message  # FUNDPIPE_RETRY_DEADLINE_S: 120 s by default
    assert "nothing was lost" in message
    assert virtual_clock.t >= world.settings.http.retry_deadline_s

    world.control("DELETE", "faults")  # the service is back: the next night
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [f.state for f in result.files] == ["processed"], result.files
    assert world.amounts() == {"OUT-2": [300]}  # once
