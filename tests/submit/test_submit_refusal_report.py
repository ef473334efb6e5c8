"""A refusal (unknown entity) reaches the error report with its sheet, row, column and value."""

from __future__ import annotations

import csv

from fundpipe.submit.ingest import ingest
from worlds.submit import World, write_sheet


def test_an_unknown_entity_is_reported_at_its_cell(world: World) -> None:
    write_sheet(
        world.inbox / "a.csv",
        [("A1", "veh_demo1", [100_000, 200_000])],
        entities=("ent_demo1", "ent_nope99"),
    )
    result = ingest(world.settings, transport=world.transport, settle_s=0)
    (outcome,) = result.files
    assert outcome.state == "refused"
    report = world.data_dir / "rejected" / "a.csv.errors.csv"
    assert outcome.error_reports[0] == report
    with open(report, encoding="utf-8-sig", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["row"], row["column"], row["value"], row["check"]) == (
        "3",
        "Entity ID",
        "ent_nope99",
        "entity_exists",
    )
    assert row["file"].endswith("rejected/a.csv")
