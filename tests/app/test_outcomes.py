"""The run summary counts each file once (issue 13: a re-run said "accepted 3" and "no-op 3"),
read from the typed night (`fundpipe.night.NightResult`)."""

from __future__ import annotations

import shutil

from fundpipe.night import night
from fundpipe.nights import OrgNight
from worlds.submit import World, write_sheet


def test_a_rerun_of_submitted_files_is_only_a_no_op(world: World) -> None:
    settings = world.settings.updated(pipeline={"inbox_settle_s": 0})
    kept = world.data_dir / "kept"
    kept.mkdir()
    for n in range(3):
        write_sheet(world.inbox / f"q{n}.csv", [(f"R-{n}", "veh_demo1", [100])])
        shutil.copy(world.inbox / f"q{n}.csv", kept / f"q{n}.csv")
    first = dict(OrgNight.of("org_demo", night(settings, transport=world.transport)).facts())
    assert (first["files processed (new)"], first["files already submitted (no-op)"]) == (3, 0)
    assert first["distributions submitted"] == 3
    assert first["amount submitted"] == "$3.00"
    for copy in kept.iterdir():
        shutil.copy(copy, world.inbox / f"again_{copy.name}")
    rerun = OrgNight.of("org_demo", night(settings, transport=world.transport)).as_json()
    facts = rerun["facts"]  # the `fundpipe run --json` labels
    assert facts["files seen"] == 3
    assert facts["files already submitted (no-op)"] == 3
    assert facts["files processed (new)"] == 0
    assert "files accepted" not in facts
    assert rerun["exit_code"] == 0
