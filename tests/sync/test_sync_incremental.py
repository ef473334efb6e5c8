"""Incremental sync: a night's requests grow with the night's work, not with history.

History is seeded in bulk through the sandbox's `POST /_sandbox/history` (executed distributions,
disbursed payments); requests are counted at the transport, below the client.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.client import FundClient
from fundpipe.config import Settings
from fundpipe.sandbox import SandboxConfig, SandboxServer, create_app
from fundpipe.sync.pull import SyncResult, sync
from worlds.submit import sandbox_world

BASE = "http://sandbox.test"
START = dt.datetime(2030, 1, 10, 12, 0, tzinfo=dt.UTC)


class Counting(httpx.AsyncBaseTransport):
    """A transport that remembers the path of every service request it passes on."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Note the request's path (service reads only), then pass it on."""
        if request.url.path.startswith("/v1/"):
            self.paths.append(request.url.path)
        return await self.inner.handle_async_request(request)

    def take(self) -> list[str]:
        """The paths noted since the last take."""
        taken, self.paths = self.paths, []
        return taken


def _service(tmp_path: Path, **config: Any) -> tuple[Counting, Settings]:
    app = create_app(SandboxConfig(seed="demo", rate_limit_requests=1_000_000, **config))
    settings = Settings(
        _env_file=None, local={"data_dir": tmp_path / "data"}, http={"rate_limit_per_s": 100_000}
    ).with_service(BASE)
    return Counting(httpx.ASGITransport(app=app)), settings


def _control(transport: Counting, method: str, path: str, body: dict[str, Any]) -> Any:
    async def call() -> Any:
        async with httpx.AsyncClient(transport=transport.inner, base_url=BASE) as control:
            response = await control.request(method, f"/_sandbox/{path}", json=body)
            assert response.status_code < 300, response.text
            return response.json()

    return asyncio.run(call())


def _create(transport: Counting, settings: Settings, count: int, date: str, ref: str) -> list[str]:
    """`count` distributions of one payment each, dated `date`; their ids, oldest first."""

    async def make() -> list[str]:
        ids: list[str] = []
        async with FundClient(settings.client_config(), transport=transport.inner) as client:
            for start in range(0, count, 100):
                made = await client.create_distributions(
                    [
                        {
                            "name": f"{ref} {n}",
                            "vehicle": "veh_demo1",
                            "external_reference": f"{ref}-{n}",
                            "distribution_date": date,
                            "payments": [
                                {"amount": 100 + n, "currency": "USD", "entity": "ent_demo1"}
                            ],
                        }
                        for n in range(start, min(count, start + 100))
                    ]
                )
                ids.extend(d.id for d in made)
        return ids

    return asyncio.run(make())


def _rows(settings: Settings, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(settings.local.warehouse_file), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _night(history: int, tmp_path: Path) -> tuple[int, int, SyncResult]:
    """Requests of a first sync over `history` executed distributions, and of a second sync
    with nothing new."""
    transport, settings = _service(tmp_path)
    _control(transport, "POST", "history", {"vehicle": "veh_demo1", "distributions": history})
    sync(settings, transport=transport)
    first = len(transport.take())
    again = sync(settings, transport=transport)
    return first, len(transport.take()), again


def test_a_night_with_nothing_new_sends_the_same_few_requests_whatever_the_history(
    tmp_path: Path,
) -> None:
    small_first, small, _ = _night(200, tmp_path / "small")
    big_first, big, again = _night(2_500, tmp_path / "big")
    assert big_first >= small_first + 23  # a first sync walks the whole history
    # vehicle list, 3 account lists, one page each of distributions, entities, contacts
    assert small == big == 7
    assert again.walks == dict.fromkeys(("distributions", "entities", "contacts"), "incremental")
    assert again.counts["distributions"] == 100  # the first page only
    assert again.status_changes == 0
    assert again.warnings == ()


def test_a_night_on_the_strict_interface_stops_at_known_objects_too(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True)
    transport = Counting(world.transport)
    world.control("POST", "history", {"vehicle": "veh_demo1", "distributions": 1_000})
    first = sync(world.settings, transport=transport)
    assert first.counts["distributions"] == 1_000
    transport.take()
    again = sync(world.settings, transport=transport)
    paths = transport.take()
    # no vehicle list on the strict interface: the account list of the vehicle the warehouse
    # holds accounts of is read all the same
    assert paths.count("/v1/distributions") == 1
    assert paths.count("/v1/vehicles/veh_demo1/financial_accounts") == 1
    assert len(paths) <= 6
    assert again.counts["financial_accounts"] == first.counts["financial_accounts"]


def test_new_distributions_after_history_are_pulled_and_open_ones_re_read(tmp_path: Path) -> None:
    transport, settings = _service(tmp_path)
    _control(transport, "POST", "history", {"vehicle": "veh_demo1", "distributions": 1_000})
    sync(settings, transport=transport)
    transport.take()
    new = _create(transport, settings, 250, "2031-01-01T00:00:00Z", "NEW")
    night = sync(settings, transport=transport)
    paths = transport.take()
    assert night.walks["distributions"] == "incremental"
    assert paths.count("/v1/distributions") == 3  # 250 new: 2½ pages, the third holds known ones
    held = _rows(settings, "SELECT count(*) FROM distributions")
    assert held == [(1_250,)]
    seen = _rows(settings, "SELECT count(*) FROM status_history WHERE sync_id = ?", night.sync_id)
    assert seen == [(2 * 250,)]  # each new distribution and payment, first sighting
    # the next night: the 250 are still open (drafts dated 2031) and are re-read in the walk
    following = sync(settings, transport=transport)
    paths = transport.take()
    assert paths.count("/v1/distributions") == 3
    assert following.reread_open == 0
    assert following.counts["distributions"] >= len(new)
    assert len(paths) <= len(new) // 100 + 8


def test_a_status_change_of_an_open_distribution_is_recorded(tmp_path: Path) -> None:
    transport, settings = _service(tmp_path)
    _control(transport, "POST", "clock/set", {"now": START.isoformat()})
    later = (START + dt.timedelta(hours=3)).isoformat()
    soon = (START + dt.timedelta(hours=1)).isoformat()
    (deep,) = _create(transport, settings, 1, later, "DEEP")  # open, then buried by 250 newer
    _create(transport, settings, 250, soon, "SOON")
    (near,) = _create(transport, settings, 1, later, "NEAR")  # open, at the list's head
    _control(transport, "POST", "clock/advance", {"seconds": 2 * 3600})  # the 250 execute
    first = sync(settings, transport=transport)
    assert first.walks["distributions"] == "full"
    _control(transport, "POST", "clock/advance", {"seconds": 2 * 3600})  # deep and near execute
    transport.take()
    night = sync(settings, transport=transport)
    paths = transport.take()
    assert night.walks["distributions"] == "incremental"
    assert night.reread_open == 1  # `deep`, through its payment list
    assert f"/v1/distributions/{deep}/payments" in paths
    changes = _rows(
        settings,
        "SELECT h.object, h.previous_status, h.status FROM status_history h "
        "LEFT JOIN distribution_payments p ON p.id = h.id "
        "WHERE h.sync_id = ? AND (h.id IN (?, ?) OR p.distribution IN (?, ?)) "
        "ORDER BY h.object, coalesce(p.distribution, h.id) = ?",
        night.sync_id,
        deep,
        near,
        deep,
        near,
        near,
    )
    assert changes == [
        ("distribution", "draft", "executed"),  # `near`, seen in the walk
        ("distribution_payment", "staged", "disbursed"),  # `deep`'s payment
        ("distribution_payment", "staged", "disbursed"),  # `near`'s payment
    ]
    assert night.status_changes == 3
    # a month of nights later `deep` itself is walked again (a full walk) and found executed
    month = sync(settings, transport=transport, clock=lambda: START + dt.timedelta(days=30))
    assert month.walks["distributions"] == "full"
    status = _rows(settings, "SELECT status FROM distributions WHERE id = ?", deep)
    assert status == [("executed",)]


def test_a_list_that_is_not_newest_first_is_walked_whole_with_a_warning(tmp_path: Path) -> None:
    transport, settings = _service(tmp_path)
    _create(transport, settings, 120, "2031-01-01T00:00:00Z", "NOW")
    sync(settings, transport=transport)
    # history inserted afterwards sits at the head of the list but was created long before
    _control(transport, "POST", "history", {"vehicle": "veh_demo1", "distributions": 150})
    night = sync(settings, transport=transport)
    assert night.walks["distributions"] == "full"
    assert night.counts["distributions"] == 270  # an incremental walk would have stopped at 250
    assert any("distributions list is not newest first" in w for w in night.warnings)
    state = _rows(settings, "SELECT last_full_sync_id FROM sync_lists WHERE list = 'distributions'")
    assert state == [(night.sync_id,)]


def test_full_pulls_everything_and_a_week_brings_a_full_walk_by_itself(tmp_path: Path) -> None:
    transport, settings = _service(tmp_path)
    _control(transport, "POST", "history", {"vehicle": "veh_demo1", "distributions": 300})
    first = sync(settings, transport=transport)
    assert first.walks == dict.fromkeys(("distributions", "entities", "contacts"), "full")
    everything = sync(settings, transport=transport, full=True)
    assert everything.walks == first.walks
    assert everything.counts == first.counts
    assert everything.counts["distributions"] == 300
    assert everything.counts["distribution_payments"] == 300
    week = everything.seen_at + dt.timedelta(days=settings.pipeline.full_sync_days)
    assert sync(settings, transport=transport, clock=lambda: week).walks["distributions"] == "full"
    day = week + dt.timedelta(days=1)
    assert sync(settings, transport=transport, clock=lambda: day).walks == dict.fromkeys(
        ("distributions", "entities", "contacts"), "incremental"
    )


def test_fundpipe_sync_full_walks_every_list_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        monkeypatch.delenv("FUNDPIPE_CLIENT_SECRET_BLOCK", raising=False)
        monkeypatch.setenv("FUNDPIPE_BASE_URL", server.base_url)
        monkeypatch.setenv("FUNDPIPE_CLIENT_ID", "demo-client")
        monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "demo-secret")
        monkeypatch.setenv("FUNDPIPE_ORG_ID", "org_demo")
        monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path))
        walks = []
        for args in (["sync", "--json"], ["sync", "--json"], ["sync", "--full", "--json"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            walks.append(set(json.loads(result.stdout)["walks"].values()))
    assert walks == [{"full"}, {"incremental"}, {"full"}]
