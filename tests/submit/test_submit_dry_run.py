"""`ingest --dry-run` says what a real run would reject or leave in conflict (issue 13)."""

from __future__ import annotations

from fundpipe.submit.ingest import ingest
from worlds.submit import World, write_sheet

BAD = (
    "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,Amount ($),"
    "Currency\nB,veh_demo2,B1,2026-12-20 09:00,America/New_York,ent_demo1,abc,USD\n"
)


def test_a_dry_run_lists_rejected_files_with_their_reasons_and_exits_1(world: World) -> None:
    write_sheet(world.inbox / "a.csv", [("A1", "veh_demo1", [100_000, 200_000])])
    (world.inbox / "bad.csv").write_text(BAD, encoding="utf-8")
    result = ingest(world.settings, dry_run=True, transport=world.transport, settle_s=0)
    states = {f.source_file: f for f in result.files}
    assert states["a.csv"].state == "planned"
    bad = states["bad.csv"]
    assert bad.state == "rejected"
    assert bad.message is not None
    assert "row 2 Amount ($) 'abc'" in bad.message
    assert result.exit_code == 1
    assert world.distributions() == []


def test_a_dry_run_of_a_conflicting_edit_says_conflict_and_exits_1(world: World) -> None:
    write_sheet(world.inbox / "a.csv", [("A1", "veh_demo1", [100_000, 200_000])])
    assert ingest(world.settings, transport=world.transport, settle_s=0).exit_code == 0
    write_sheet(world.inbox / "edit.csv", [("A1", "veh_demo1", [100_000, 250_000])])
    result = ingest(world.settings, dry_run=True, transport=world.transport, settle_s=0)
    (edit,) = result.files
    assert edit.state == "conflict"
    assert result.exit_code == 1


def test_a_dry_run_refused_by_pre_flight_says_refused(world: World) -> None:
    write_sheet(world.inbox / "big.csv", [("G1", "veh_demo3", [700_000_00, 60_000_00])])
    result = ingest(
        world.settings, dry_run=True, transport=world.transport, settle_s=0, require_funds=True
    )
    (big,) = result.files
    assert big.state == "refused"
    assert "760,000.00 USD" in (big.message or "")
    assert result.exit_code == 1
