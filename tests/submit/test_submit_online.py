"""`check_online`: the night's checks before the night, against the service, sending nothing."""

from __future__ import annotations

from pathlib import Path

from fundpipe.submit import check_online
from fundpipe.submit.ingest import ingest
from worlds.submit import World, write_sheet

# the sandbox's demo entities, and the analyst's typo of the third in row 11 (the issue's case)
ENTITIES = ["ent_demo1", "ent_demo2", "ent_demo3", "ent_demo4", "ent_demo5"]


def _sheet(world: World, path: Path, parts: list[tuple[str, str, list[int], list[str]]]) -> None:
    """One CSV of several distributions, each with its own entities."""
    lines: list[str] = []
    for i, (ref, vehicle, amounts, entities) in enumerate(parts):
        part = world.data_dir / f"part{i}.csv"
        write_sheet(part, [(ref, vehicle, amounts)], entities=entities)
        text = part.read_text(encoding="utf-8").splitlines()
        lines += text if not lines else text[1:]
        part.unlink()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_every_online_problem_is_in_the_first_report_and_nothing_is_sent(world: World) -> None:
    write_sheet(world.data_dir / "first.csv", [("A-1", "veh_demo1", [100, 200])])
    ingest(world.settings, [world.data_dir / "first.csv"], transport=world.transport, settle_s=0)
    before = world.distributions()
    sheet = world.data_dir / "q4.csv"
    # rows 2-3: A-1 again with another amount (a conflict); rows 4-8: A-2; rows 9-11: A-4,
    # whose third payment (row 11) names ent_dmeo3; rows 12-13: a vehicle the service lacks
    _sheet(
        world,
        sheet,
        [
            ("A-1", "veh_demo1", [100, 201], ENTITIES),
            ("A-2", "veh_demo1", [5] * 5, ENTITIES),
            ("A-4", "veh_demo1", [6] * 3, ["ent_demo1", "ent_demo2", "ent_dmeo3"]),
            ("A-3", "veh_nope", [7, 8], ENTITIES),
        ],
    )

    (report,) = check_online(world.settings, [sheet], transport=world.transport).reports

    assert not report.valid
    found = {(i.row, i.column, i.letter, i.value, i.check) for i in report.errors}
    assert (3, "Amount ($)", "G", "$2.01", "distribution_conflict") in found
    assert (11, "Entity ID", "F", "ent_dmeo3", "entity_exists") in found
    assert (12, "Vehicle", "B", "veh_nope", "vehicle_exists") in found
    conflict = next(i for i in report.errors if i.check == "distribution_conflict")
    assert "amount: sheet $2.01, service $2.00" in conflict.reason
    assert world.distributions() == before  # read-only


def test_an_unknown_entity_reference_is_an_error_not_a_warning(world: World) -> None:
    sheet = world.data_dir / "refs.csv"
    write_sheet(sheet, [("B-1", "veh_demo1", [100, 200])], entities=["ent_demo1", "NO-SUCH-REF"])
    (report,) = check_online(world.settings, [sheet], transport=world.transport).reports
    (issue,) = [i for i in report.errors if i.check == "entity_resolvable"]
    assert (issue.row, issue.letter, issue.value) == (3, "F", "NO-SUCH-REF")


def test_a_valid_sheet_passes_online(world: World) -> None:
    sheet = world.data_dir / "ok.csv"
    write_sheet(sheet, [("C-1", "veh_demo1", [100, 200])])
    (report,) = check_online(world.settings, [sheet], transport=world.transport).reports
    assert report.valid, report.errors
    assert report.distributions is not None
