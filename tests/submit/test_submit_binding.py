"""A data directory belongs to one service and organization; its objects' livemode is checked."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.errors import ConfigurationError, ExitCode, as_fundpipe_error
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.submit.binding import read_binding
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from worlds.submit import World, sandbox_world, write_sheet


def _other_sandbox(world: World) -> World:
    """A second sandbox, elsewhere, with the same data directory."""
    app_ = create_app(SandboxConfig(rate_limit_requests=10_000, rate_limit_window_s=1))
    settings = world.settings.updated(service={"base_url": "http://other-sandbox.test"})
    return World(settings=settings, transport=httpx.ASGITransport(app=app_))


def test_a_data_dir_moved_to_another_sandbox_is_refused(tmp_path: Path) -> None:
    first = sandbox_world(tmp_path / "data")
    write_sheet(first.inbox / "q4.csv", [("B-1", "veh_demo1", [100])])
    ingest(first.settings, transport=first.transport, settle_s=0)
    assert read_binding(first.settings) is not None
    assert read_binding(first.settings)["service"] == "http://sandbox.test"  # type: ignore[index]

    second = _other_sandbox(first)
    write_sheet(second.inbox / "q1.csv", [("B-2", "veh_demo1", [200])])
    with pytest.raises(ConfigurationError) as refused:
        ingest(second.settings, transport=second.transport, settle_s=0)
    message = str(refused.value)
    assert "belongs to http://sandbox.test" in message
    assert "FUNDPIPE_DATA_DIR" in message  # how to start fresh
    assert as_fundpipe_error(refused.value).exit_code == ExitCode.USAGE
    assert second.amounts() == {}  # nothing sent to the second service
    assert (second.inbox / "q1.csv").exists()
    with pytest.raises(ConfigurationError):
        sync(second.settings, transport=second.transport)
    assert not second.settings.local.warehouse_file.exists()


def test_another_organization_with_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data")
    write_sheet(world.inbox / "q4.csv", [("O-1", "veh_demo1", [100])])
    ingest(world.settings, transport=world.transport, settle_s=0)
    other = world.settings.updated(service={"org_id": "org_other"})
    write_sheet(world.inbox / "q1.csv", [("O-2", "veh_demo1", [100])])
    with pytest.raises(ConfigurationError, match="organization org_demo"):
        ingest(other, transport=world.transport, settle_s=0)


def test_a_fresh_data_dir_starts_anew(tmp_path: Path) -> None:
    first = sandbox_world(tmp_path / "data")
    write_sheet(first.inbox / "q4.csv", [("F-1", "veh_demo1", [100])])
    ingest(first.settings, transport=first.transport, settle_s=0)
    second = _other_sandbox(first)
    fresh = World(
        settings=second.settings.updated(local={"data_dir": tmp_path / "fresh"}),
        transport=second.transport,
    )
    fresh.inbox.mkdir(parents=True)
    write_sheet(fresh.inbox / "q4.csv", [("F-1", "veh_demo1", [100])])
    result = ingest(fresh.settings, transport=fresh.transport, settle_s=0)
    assert [f.state for f in result.files] == ["processed"]


def test_live_objects_when_test_ones_are_expected_stop_before_anything_is_created(
    tmp_path: Path,
) -> None:
    world = sandbox_world(tmp_path / "data")  # the sandbox's objects are livemode false
    expecting_live = world.settings.updated(service={"livemode": True})
    write_sheet(world.inbox / "q4.csv", [("L-9", "veh_demo1", [100])])
    with pytest.raises(ConfigurationError, match="test objects"):
        ingest(expecting_live, transport=world.transport, settle_s=0)
    assert world.amounts() == {}


def test_a_first_sync_that_finds_live_objects_leaves_no_warehouse(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data")  # the sandbox's objects are livemode false
    expecting_live = world.settings.updated(service={"livemode": True})
    with pytest.raises(ConfigurationError, match="test objects"):
        sync(expecting_live, transport=world.transport)
    warehouse = world.settings.local.warehouse_file
    assert not warehouse.exists()
    assert not list(warehouse.parent.glob(f"{warehouse.name}*"))  # nor a half-built one
    sync(world.settings, transport=world.transport)  # the same sync, expecting test objects
    assert [p.name for p in warehouse.parent.glob(f"{warehouse.name}*")] == [warehouse.name]


def test_config_shows_the_binding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = sandbox_world(tmp_path / "data")
    write_sheet(world.inbox / "q4.csv", [("C-1", "veh_demo1", [100])])
    ingest(world.settings, transport=world.transport, settle_s=0)
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(world.data_dir))
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "http://sandbox.test")
    values = json.loads(CliRunner().invoke(app, ["config", "--json"]).output)
    assert values["ledger bound to"].startswith("http://sandbox.test, organization org_demo")
