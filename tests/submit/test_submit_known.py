"""A night's ingest asks the service only about what the last sync did not see (issue 14).

With a synced warehouse the newest-first lists are walked only until objects the warehouse
holds: the requests of a small night do not grow with the history, and what someone else made
since the sync is still found — never created twice.
"""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from pathlib import Path

import httpx

from fundpipe.client import FundClient
from fundpipe.submit.ingest import ingest
from fundpipe.submit.ledger import open_ledger
from fundpipe.sync.pull import sync
from worlds.locks import hold_until_released, release
from worlds.submit import World, sandbox_world, write_sheet


class Counting(httpx.AsyncBaseTransport):
    """The sandbox's transport, counting the service requests (control routes excluded)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seen: Counter[str] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.startswith("/_sandbox"):
            self.seen[f"{request.method} {request.url.path}"] += 1
        return await self.inner.handle_async_request(request)

    @property
    def total(self) -> int:
        return sum(self.seen.values())


def _with_history(tmp_path: Path, name: str, history: int) -> World:
    world = sandbox_world(tmp_path / name)
    world.control("POST", "history", {"vehicle": "veh_demo1", "distributions": history})
    return world


def _night(world: World, ref: str) -> Counting:
    """Drop one small sheet and ingest it, counting the requests."""
    write_sheet(world.inbox / f"{ref}.csv", [(ref, "veh_demo1", [100, 200])])
    counting = Counting(world.transport)
    result = ingest(world.settings, transport=counting, settle_s=0)
    assert [f.state for f in result.files] == ["processed"]
    return counting


def test_a_small_night_after_a_sync_costs_the_same_whatever_the_history(tmp_path: Path) -> None:
    counts = {}
    for history in (250, 2_500):
        world = _with_history(tmp_path, f"h{history}", history)
        sync(world.settings, transport=world.transport)
        counts[history] = _night(world, "NIGHT-1")
        # every reference once (the list alone: a history's payments are not fetched)
        assert len(world.references()) == history + 1
        assert world.amounts_of("NIGHT-1") == [100, 200]
    assert counts[250].seen == counts[2_500].seen
    # the reads: one newest page each of entities, contacts and distributions (plus the
    # token, organization, vehicles and balances); the night's one create
    assert counts[2_500].seen["GET /v1/distributions"] == 1
    assert counts[2_500].seen["POST /v1/distributions"] == 1
    assert counts[2_500].total <= 12


def test_without_a_warehouse_the_lists_are_walked_in_full(tmp_path: Path) -> None:
    world = _with_history(tmp_path, "cold", 2_500)
    counting = _night(world, "NIGHT-1")
    assert counting.seen["GET /v1/distributions"] == 25  # 2,500 / 100 a page
    assert world.amounts_of("NIGHT-1") == [100, 200]  # and no reference twice


def _create_elsewhere(world: World, ref: str, amounts: list[int]) -> None:
    """Someone else creates, at the service, the distribution a sheet describes."""

    async def create() -> None:
        async with FundClient(world.settings.client_config(), transport=world.transport) as client:
            await client.create_distributions(
                [
                    {
                        "name": f"Distribution {ref}",
                        "vehicle": "veh_demo1",
                        "external_reference": ref,
                        "distribution_date": "2026-12-15T09:00:00",
                        "distribution_timezone": "America/New_York",
                        "payments": [
                            {"amount": a, "currency": "USD", "entity": f"ent_demo{i + 1}"}
                            for i, a in enumerate(amounts)
                        ],
                    }
                ]
            )

    asyncio.run(create())


def test_a_distribution_made_elsewhere_after_the_sync_is_found_not_made_twice(
    tmp_path: Path,
) -> None:
    world = _with_history(tmp_path, "w", 300)
    sync(world.settings, transport=world.transport)
    _create_elsewhere(world, "LATE-1", [100, 200])
    write_sheet(world.inbox / "late.csv", [("LATE-1", "veh_demo1", [100, 200])])
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    assert [(f.state, f.payment_states) for f in result.files] == [("processed", {"linked": 2})]
    assert result.submit is not None
    assert not result.submit.created
    assert world.amounts_of("LATE-1") == [100, 200]  # one distribution, not two


def test_a_distribution_the_warehouse_holds_is_matched_from_it(tmp_path: Path) -> None:
    world = _with_history(tmp_path, "w", 300)
    _create_elsewhere(world, "OLD-1", [100, 200])
    sync(world.settings, transport=world.transport)
    write_sheet(world.inbox / "old.csv", [("OLD-1", "veh_demo1", [100, 201])])
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    (outcome,) = result.files
    assert outcome.state == "conflict"  # the sheet's amount differs from what exists
    assert world.amounts_of("OLD-1") == [100, 200]


def test_a_locked_warehouse_falls_back_to_the_full_walk(tmp_path: Path) -> None:
    world = _with_history(tmp_path, "w", 300)
    sync(world.settings, transport=world.transport)
    _create_elsewhere(world, "LATE-1", [100, 200])
    write_sheet(world.inbox / "late.csv", [("LATE-1", "veh_demo1", [100, 200])])
    counting = Counting(world.transport)
    holder = hold_until_released(world.settings.local.warehouse_file)
    try:
        result = ingest(world.settings, transport=counting, settle_s=0)
    finally:
        release(holder)
    assert [(f.state, f.payment_states) for f in result.files] == [("processed", {"linked": 2})]
    assert counting.seen["GET /v1/distributions"] == 4  # 301 distributions, in full


SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


class HeldAssociations(httpx.AsyncBaseTransport):
    """Holds every contact association until a distribution create has been answered (at most
    ``wait_s``), then answers it with ``status`` (None: the sandbox's own answer)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, status: int | None, wait_s: float = 10):
        self.inner = inner
        self.status = status
        self.wait_s = wait_s
        self.distributions_done: asyncio.Event | None = None
        self.associations_held = 0
        #: associations the wait gave up on: released by the timeout, not by a create answered
        self.timed_out = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.distributions_done is None:
            self.distributions_done = asyncio.Event()
        path = request.url.path
        if request.method == "POST" and path.startswith("/v1/entities/ent_"):
            self.associations_held += 1
            try:
                await asyncio.wait_for(self.distributions_done.wait(), self.wait_s)
            except TimeoutError:
                self.timed_out += 1
            if self.status is not None:
                body = {
                    "object": "error",
                    "type": "unprocessable_entity_error",
                    "code": "validation_error",
                    "message": "refused by the test",
                    "status": self.status,
                }
                return httpx.Response(self.status, json=body, request=request)
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and path == "/v1/distributions":
            self.distributions_done.set()
        return response


def _roster_night(world: World, status: int | None) -> HeldAssociations:
    shutil.copy(SAMPLES / "roster_new_investors.xlsx", world.inbox)
    shutil.copy(SAMPLES / "distributions_q4.csv", world.inbox)
    held = HeldAssociations(world.transport, status)
    result = ingest(world.settings, transport=held, settle_s=0)
    assert {f.state for f in result.files} == {"processed"}
    assert held.associations_held > 0
    return held


def test_distributions_do_not_wait_for_contact_associations(world: World) -> None:
    held = _roster_night(world, None)
    # every association waited for a distribution create that was sent without waiting for it:
    # each was released by a create answered, none by its wait running out
    assert held.distributions_done is not None
    assert held.distributions_done.is_set()
    assert held.timed_out == 0
    assert len(world.references()) >= 1


def test_a_failing_association_never_blocks_a_distribution(world: World) -> None:
    held = _roster_night(world, 422)
    assert held.timed_out == 0
    with open_ledger(world.settings.local.ledger_file) as ledger:
        states = {r["state"] for r in ledger.payments()}
        failed = [r for r in ledger.requests() if r.phase == "associations"]
    assert states == {"created"}
    assert failed
    assert all(r.state == "failed" for r in failed)


def test_a_list_out_of_created_order_is_walked_in_full_with_a_warning(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "w")
    sync(world.settings, transport=world.transport)
    _create_elsewhere(world, "LATE-1", [100, 200])
    # history inserted after it: listed first, yet created earlier
    world.control("POST", "history", {"vehicle": "veh_demo1", "distributions": 300})
    write_sheet(world.inbox / "late.csv", [("LATE-1", "veh_demo1", [100, 200])])
    counting = Counting(world.transport)
    result = ingest(world.settings, transport=counting, settle_s=0)
    assert [(f.state, f.payment_states) for f in result.files] == [("processed", {"linked": 2})]
    assert any("not in newest-first order" in w for w in result.warnings)
    assert counting.seen["GET /v1/distributions"] >= 4  # 301 distributions, in full
    assert world.amounts_of("LATE-1") == [100, 200]


def test_on_the_documented_interface_records_without_created_at_keep_the_short_walk(
    tmp_path: Path,
) -> None:
    # the documented entity and contact records carry no created_at: their order is judged by
    # "no unknown record after a known one" alone, as sync judges it — not taken as disorder
    world = sandbox_world(tmp_path / "strict", strict_interface=True)
    sync(world.settings, transport=world.transport)
    write_sheet(world.inbox / "night.csv", [("STRICT-1", "veh_demo1", [100, 200])])
    counting = Counting(world.transport)
    result = ingest(world.settings, transport=counting, settle_s=0)
    assert [f.state for f in result.files] == ["processed"]
    assert not [w for w in result.warnings if "newest-first" in w], result.warnings
    assert counting.seen["GET /v1/entities"] == 1
    assert counting.seen["GET /v1/contacts"] == 1
    assert world.amounts_of("STRICT-1") == [100, 200]
