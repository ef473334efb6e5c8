"""Each night starts by comparing the local state with the record (issue 40): after a week of
nights with acknowledgements, a lost warehouse alone — or a lost ledger alone — is restored
before anything else runs, instead of being rebuilt empty; every past as-of and every
acknowledgement is what it was, and nothing is created twice."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import time_machine
from record_history import as_of_views, decisions_seen, org_settings

from fundpipe.config import Settings
from fundpipe.errors import DamagedFileError
from fundpipe.night import NightResult, night
from fundpipe.nights import OrgNight
from fundpipe.reconcile.lifecycle import acknowledge, list_exceptions
from fundpipe.record import decision_sink
from fundpipe.warehouse.file import Warehouse
from worlds.machine import damage
from worlds.submit import World, write_sheet

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow

#: The week: one night a day at 06:00 UTC, the test clock moved to it.
WEEK = [dt.datetime(2026, 12, day, 6, tzinfo=dt.UTC) for day in range(1, 8)]


def _night(world: World, settings: Settings, at: dt.datetime) -> NightResult:
    """The night of ``at``'s day, the clocks (the test's and the sandbox's) moved to ``at``."""
    world.control("POST", "clock/set", {"now": at.isoformat()})
    with time_machine.travel(at, tick=True):
        return night(settings, transport=world.transport, as_of=at.date())


def _acknowledge_open(world: World, settings: Settings, kind: str, at: dt.datetime) -> str:
    """A person acknowledges the open exception of ``kind``, recorded when made."""
    [open_one] = [e for e in list_exceptions(Warehouse(settings.local.warehouse_file), state="open") if e.kind == kind]  # fmt: skip
    acknowledge(
        Warehouse(settings.local.warehouse_file), open_one.id, note=f"explained ({kind})",
        by="ana", now=at, record=decision_sink(settings),
    )  # fmt: skip
    return open_one.id


def _posts(world: World) -> list[str]:
    ops = [r["operation"] for r in world.control("GET", "request_log")["requests"]]
    return [op for op in ops if op.startswith("POST /v1")]


def _week(world: World, tmp_path: Path) -> tuple[Settings, bytes]:
    """A week of nights: a sheet on the first (one distribution short of funds), its shortfall
    acknowledged that afternoon, a payment changed at the service on the third, and that
    mismatch acknowledged after the last night (so only its decision in the record holds it).
    Returns the settings and the sheet's bytes."""
    settings = org_settings(world, str(tmp_path / "record"))
    inbox = settings.local.data_dir / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    write_sheet(
        inbox / "dec.csv",
        [("W1", "veh_demo1", [100_000, 200_000]), ("W2", "veh_demo3", [50_000_000, 30_000_000])],
        date="2026-12-20 09:00",
    )
    sheet = (inbox / "dec.csv").read_bytes()
    for at in WEEK:
        if at.day == 3:
            payment = next(
                p
                for d, ps in world.distributions()
                for p in ps
                if d.external_reference == "W1" and p.amount == 100_000
            )
            world.control("PATCH", f"distribution_payments/{payment.id}", {"amount": 90_000})
        result = _night(world, settings, at)
        assert result.restored is None  # the local state is the record's every night
        if at.day == 1:
            _acknowledge_open(world, settings, "shortfall", at + dt.timedelta(hours=9))
    _acknowledge_open(world, settings, "amount_mismatch", WEEK[-1] + dt.timedelta(hours=9))
    return settings, sheet


def _as_ofs(settings: Settings, out: Path) -> dict[dt.date, dict[str, pd.DataFrame]]:
    """`reconcile --as-of` of each day of the week, re-run now (a past as-of only reads)."""
    return {at.date(): as_of_views(settings, at.date(), out / str(at.date())) for at in WEEK}


def _assert_same(
    after: dict[dt.date, dict[str, pd.DataFrame]], before: dict[dt.date, dict[str, pd.DataFrame]]
) -> None:
    assert after.keys() == before.keys()
    for day, views in after.items():
        assert views.keys() == before[day].keys()
        for name, frame in views.items():
            pd.testing.assert_frame_equal(frame, before[day][name], obj=f"{name} as of {day}")


def test_a_lost_warehouse_and_then_a_lost_ledger_come_back_before_the_night_runs(
    world: World, tmp_path: Path
) -> None:
    settings, sheet = _week(world, tmp_path)
    before = _as_ofs(settings, tmp_path / "before")
    seen: dict[str, Any] = decisions_seen(settings)
    acknowledged = [s for s in seen["states"] if s[1] == "acknowledged"]
    assert [s[3] for s in acknowledged] == ["ana", "ana"]  # the shortfall and the mismatch
    # the week's report shows money and exceptions (what a lost warehouse rebuilt empty lost)
    last = before[WEEK[-1].date()]
    assert len(last["sheet_vs_service"]) == 4  # the sheet's four payments
    assert len(last["exceptions"]) > 0

    # only the warehouse is lost: the next night restores it first
    settings.local.warehouse_file.unlink()
    eighth = WEEK[-1] + dt.timedelta(days=1)
    world.control("DELETE", "request_log")
    restored = _night(world, settings, eighth)
    assert restored.restored is not None
    assert restored.restored.files == ["warehouse.duckdb"]
    # the mismatch's acknowledgement came after the last snapshot: replayed from its decision
    assert restored.restored.decisions_replayed == 1
    said = OrgNight.of("org_demo", restored).restored
    assert said.startswith("restored the warehouse from the record's snapshot of 2026-12-07")
    assert said.endswith("1 decision made after it replayed: the warehouse was missing")
    assert _posts(world) == []
    _assert_same(_as_ofs(settings, tmp_path / "after-warehouse"), before)
    assert decisions_seen(settings) == seen

    # then only the ledger is lost, and the week's sheet dropped again: nothing is sent twice
    settings.local.ledger_file.unlink()
    (settings.local.data_dir / "inbox" / "dec.csv").write_bytes(sheet)
    world.control("DELETE", "request_log")
    again = _night(world, settings, eighth + dt.timedelta(days=1))
    assert again.restored is not None
    assert again.restored.files == ["ledger.duckdb"]  # its binding was kept
    assert again.restored.why == "the ledger was missing"
    assert [f.state for f in again.files] == ["duplicate"]
    assert _posts(world) == []
    assert set(world.references()) == {"W1", "W2"}  # each created once, on the first night
    # the warehouse was kept as it was: the last day's as-of is still the one it was
    day = WEEK[-1].date()
    _assert_same({day: as_of_views(settings, day, tmp_path / "after-ledger")}, {day: last})
    assert decisions_seen(settings) == seen


def test_a_machine_behind_another_one_catches_up_and_a_damaged_file_is_not_restored_over(
    world: World, tmp_path: Path
) -> None:
    """Two machines share the record: A runs a night, B the next (restored: it held nothing)
    and a person acknowledges on B; A's next night starts from B's snapshot with that
    acknowledgement replayed, its own older files set aside. A damaged warehouse is still the one-line
    error naming `fundpipe restore --org`, and nothing is restored over it."""
    shared = str(tmp_path / "shared")
    machine_a = org_settings(world, shared)
    top_b = world.settings.updated(local={"data_dir": tmp_path / "machine-b"})
    machine_b = org_settings(World(top_b, world.transport), shared)
    (machine_a.local.data_dir / "inbox").mkdir(parents=True, exist_ok=True)
    write_sheet(machine_a.local.data_dir / "inbox" / "dec.csv", [("S1", "veh_demo3", [80_000_000])])
    assert _night(world, machine_a, WEEK[0]).restored is None
    on_b = _night(world, machine_b, WEEK[1])
    assert on_b.restored is not None
    assert on_b.restored.why == "this machine held no local state of the organization"
    acknowledged = _acknowledge_open(world, machine_b, "shortfall", WEEK[1] + dt.timedelta(hours=9))

    on_a = _night(world, machine_a, WEEK[2])
    assert on_a.restored is not None
    assert on_a.restored.files == ["ledger.binding.json", "ledger.duckdb", "warehouse.duckdb"]
    assert on_a.restored.decisions_replayed == 1  # the acknowledgement made on B after its night
    assert "older than the record's: another machine ran this organization since" in (
        on_a.restored.sentence
    )
    assert {p.name.split(".before-restore-")[0] for p in on_a.restored.set_aside} >= {
        "warehouse.duckdb",
        "ledger.duckdb",
    }
    on_a_now = {e.id: e for e in list_exceptions(Warehouse(machine_a.local.warehouse_file))}
    shortfall = on_a_now[acknowledged]
    assert (shortfall.state, shortfall.acknowledged_by) == ("acknowledged", "ana")

    # a damaged warehouse: the machine's fault, said in one line; the record is not used on it
    damage(machine_a.local.warehouse_file)
    kept = machine_a.local.warehouse_file.read_bytes()
    aside = sorted(machine_a.local.data_dir.glob("*.before-restore-*"))
    with pytest.raises(DamagedFileError) as damaged:
        _night(world, machine_a, WEEK[3])
    assert "fundpipe restore --org org_demo" in str(damaged.value)
    assert "\n" not in str(damaged.value)
    assert machine_a.local.warehouse_file.read_bytes() == kept
    assert sorted(machine_a.local.data_dir.glob("*.before-restore-*")) == aside
