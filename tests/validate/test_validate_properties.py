"""Properties: one bad cell in a valid sheet is reported at exactly that row and column."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fundpipe.validate.files import validate_files
from worlds.sheets import HEADER, csv_bytes

# (column position, a value that column must refuse)
MUTATIONS = [
    (1, "veh demo1"),
    (1, "VEH_1"),
    (2, " "),
    (3, "2026-03-08 02:30"),
    (3, "2026-12-15T09:00:00-04:00"),
    (3, "31/12/2026"),
    (4, "Mars/Olympus_Mons"),
    (5, "ent_bad-id"),
    (6, "(1.00)"),
    (6, "1.234,56"),
    (6, "12.345"),
    (6, "€5"),
    (6, "0"),
    (6, "ten"),
]


def sheet(n: int) -> list[list[str]]:
    return [
        [
            "Q4 Income",
            "veh_demo1",
            "Q4-D1",
            "2026-12-15 09:00",
            "America/New_York",
            f"ent_demo{i}",
            f"{100 + i}.25",
        ]
        for i in range(n)
    ]


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(min_value=3, max_value=12), data=st.data())
def test_one_mutated_cell_is_rejected_at_exactly_that_row_and_column(
    tmp_path: Path, n: int, data: st.DataObject
) -> None:
    rows = sheet(n)
    target = data.draw(st.integers(min_value=0, max_value=n - 1), label="row")
    column, value = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    rows[target][column] = value
    path = tmp_path / "mutated.csv"
    path.write_text(csv_bytes(rows), encoding="utf-8")
    [report] = validate_files([path])
    assert not report.valid
    assert report.distributions is None
    assert {(e.row, e.column) for e in report.errors} == {(target + 2, HEADER[column])}


@given(
    st.sampled_from(["ent_", "veh_", "ent", "ENT_", "x"]),
    st.text(alphabet=st.sampled_from("aZ09_- .\n\u00e9\uff41\u0663\u00a0"), max_size=6),
)
def test_an_id_is_shaped_exactly_when_its_pattern_matches_the_whole_cell(
    head: str, tail: str
) -> None:
    """The vehicle and entity id rules (`VEHICLE_ID`, `ENTITY_ID`) read the same cells whether
    checked as a regular expression or as prefix + ASCII letters and digits."""
    import pandas as pd

    from fundpipe.validate.models import ENTITY_ID, VEHICLE_ID, _id_shaped

    cells = pd.Series([head + tail], dtype="str")
    for prefix, pattern in (("ent_", ENTITY_ID), ("veh_", VEHICLE_ID)):
        expected = bool(cells.str.fullmatch(pattern).fillna(False).iloc[0])
        assert bool(_id_shaped(cells, prefix).iloc[0]) == expected
