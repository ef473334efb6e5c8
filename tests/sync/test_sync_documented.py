"""Sync on the documented surface: no vehicle list, balances through each vehicle's accounts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fundpipe.client.errors import IncompleteListError
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from worlds.submit import sandbox_world

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def test_sync_on_the_strict_sandbox_reads_balances_of_the_known_vehicles(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True)
    shutil.copy2(SAMPLES / "distributions_q4.csv", world.inbox)
    shutil.copy2(SAMPLES / "roster_new_investors.xlsx", world.inbox)
    ingest(world.settings, transport=world.transport, settle_s=0)
    result = sync(world.settings, transport=world.transport)
    assert result.counts["vehicles"] == 3  # veh_demo1..3, named by the ledger and the service
    assert result.counts["financial_accounts"] == 6
    assert result.counts["distributions"] == 3
    assert any("'vehicles'" in w for w in result.warnings)
    assert result.livemode is False


def test_fundpipe_vehicles_adds_a_vehicle_no_sheet_named(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True)
    settings = world.settings.updated(service={"vehicles": ["veh_demo3", "veh_nosuch"]})
    result = sync(settings, transport=world.transport)
    assert result.counts["financial_accounts"] == 2
    assert any("veh_nosuch" in w and "unknown" in w for w in result.warnings)


def test_a_has_more_only_list_stops_the_sync_loudly(tmp_path: Path) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True)
    world.control("POST", "history", {"vehicle": "veh_demo1", "distributions": 150})
    world.control("PUT", "settings", {"legacy_pagination": True})
    with pytest.raises(IncompleteListError, match="no way to continue"):
        sync(world.settings, transport=world.transport)
