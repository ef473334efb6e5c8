"""Each organization's night published to the shared reports location, and the morning view
built from what was published there (fundpipe.reports.publish, fundpipe.morning)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from fundpipe.morning import (
    PublishedNight,
    build_morning_view,
    write_morning_view,
)
from fundpipe.nights import OrgRow
from fundpipe.reports.publish import join, publish_night, read_json
from fundpipe.vocabulary import ExceptionRecord


def _night(reports: Path, org: str, available: list[int], shortfall: list[int]) -> Path:
    """An organization's report folder as reconcile leaves it: a workbook and funding.parquet."""
    out = reports / org / "2026-11-25" / "013012Z"
    out.mkdir(parents=True)
    (out / "reconciliation.xlsx").write_bytes(b"workbook of " + org.encode())
    pd.DataFrame(
        {
            "vehicle": [f"veh_{i}" for i in range(len(available))],
            "available_cents": available,
            "obligations_cents": [100] * len(available),
            "shortfall_cents": shortfall,
        }
    ).to_parquet(out / "funding.parquet")
    return out


def _tieout(out: Path, sheet: int, service: int, disbursed: int, failed: int) -> None:
    """A night's distribution_tieout.parquet: one distribution and its Total row."""
    total = {
        "sheet_cents": sheet,
        "service_cents": service,
        "disbursed_cents": disbursed,
        "failed_cents": failed,
        "cancelled_cents": 0,
        "outstanding_cents": service - disbursed - failed,
    }
    ties = sheet == service
    pd.DataFrame(
        [
            {"is_total": False, "distribution_name": "Q4", **total, "ties": ties},
            {"is_total": True, "distribution_name": "Total", **total, "ties": ties},
        ]
    ).to_parquet(out / "distribution_tieout.parquet")


def _facts(org: str, distributions: int, cents: int, exceptions: list[dict[str, str]]) -> dict:
    """The record a night publishes (`PublishedNight`, its one writer)."""
    return PublishedNight(
        organization=org,
        name=org.upper(),
        as_of="2026-11-25",
        files=2,
        rejected_files=("bad.csv",) if exceptions else (),
        distributions=distributions,
        submitted_cents=cents,
        exceptions=tuple(ExceptionRecord.from_json(e) for e in exceptions),
    ).as_json()


OPEN = {
    "id": "EX-1",
    "state": "open",
    "what": "bad.csv rejected",
    "amount": "$12.00",
    "what_to_do": "fix it",
}


@pytest.mark.parametrize("scheme", ["folder", "memory"])
def test_the_morning_view_adds_up_what_each_organization_published(
    tmp_path: Path, scheme: str
) -> None:
    shared = str(tmp_path / "shared") if scheme == "folder" else f"memory://{tmp_path.name}"
    reports = tmp_path / "worker" / "reports"
    a = _night(reports, "org_a", available=[500_00, 250_00], shortfall=[0, 0])
    b = _night(reports, "org_b", available=[10_00], shortfall=[40_00])
    _tieout(a, sheet=1234_56, service=1234_56, disbursed=1000_00, failed=34_56)
    _tieout(b, sheet=99, service=0, disbursed=0, failed=0)
    errors = tmp_path / "worker" / "bad.csv.errors.csv"
    errors.write_text("row,reason\n2,negative\n", encoding="utf-8")
    published_a = publish_night(
        join(shared, "org_a"), reports / "org_a", a, [], _facts("org_a", 3, 1234_56, [])
    )
    published_b = publish_night(
        join(shared, "org_b"), reports / "org_b", b, [errors], _facts("org_b", 1, 99, [OPEN])
    )
    # each local file has its URL on the shared location, with the same relative path
    workbook_b = published_b.url_of(b / "reconciliation.xlsx")
    assert workbook_b == join(shared, "org_b", "2026-11-25", "013012Z", "reconciliation.xlsx")
    assert published_b.url_of(errors) == join(published_b.folder, "errors", "bad.csv.errors.csv")
    assert read_json(join(shared, "org_b", "2026-11-25", "latest.json")) == {"folder": "013012Z"}

    view = build_morning_view(
        "2026-11-25",
        [
            OrgRow("org_a", "A", "Completed", report_folder=published_a.folder),
            OrgRow("org_b", "B", "Completed", report_folder=published_b.folder),
            OrgRow("org_c", "C", "Failed", message="could not reach the service"),
        ],
    )
    rows = {r["organization"]: r for r in view.rows}
    assert rows["org_a"]["available_cents"] == 750_00
    assert rows["org_a"]["distributions"] == 3
    assert rows["org_b"]["shortfall_cents"] == 40_00
    assert rows["org_b"]["open_exceptions"] == 1
    assert rows["org_b"]["report"] == workbook_b
    # a night that published nothing says why, instead of a row that looks quiet
    assert rows["org_c"]["state"] == "Failed: could not reach the service"
    assert rows["org_c"]["report"] == ""
    assert view.totals["submitted_cents"] == 1234_56 + 99
    assert view.totals["available_cents"] == 760_00
    # each organization's distribution tie-out (its Total row), and whether it ties
    assert rows["org_a"]["tieout_sheet_cents"] == 1234_56
    assert rows["org_a"]["tieout_disbursed_cents"] == 1000_00
    assert rows["org_a"]["tieout_failed_cents"] == 34_56
    assert rows["org_a"]["tieout_outstanding_cents"] == 200_00
    assert (rows["org_a"]["ties"], rows["org_b"]["ties"], rows["org_c"]["ties"]) == (
        True,
        False,
        None,
    )
    assert view.totals["tieout_sheet_cents"] == 1234_56 + 99
    # the parent run's line: counts that agree with their nouns
    from fundpipe.morning import describe

    assert describe(view) == (
        "morning view: 3 organizations, 4 distributions ($1,235.55), shortfall $40.00, "
        "1 open exception"
    )
    assert view.exceptions == [
        {"organization": "org_b", **{k: v for k, v in OPEN.items() if k != "state"}}
    ]

    written = write_morning_view(shared, view)
    assert written.workbook == join(shared, "morning", "2026-11-25", "morning.xlsx")
    from fsspec.core import url_to_fs

    fs, parquet = url_to_fs(written.parquet)
    with fs.open(parquet, "rb") as fh:
        frame = pd.read_parquet(fh)
    assert list(frame["organization"]) == ["org_a", "org_b", "org_c"]
    assert int(frame["submitted_cents"].sum()) == 1234_56 + 99
    assert int(frame["tieout_service_cents"].sum()) == 1234_56
    assert list(frame["ties"]) == [True, False, None]
    fs, book_path = url_to_fs(written.workbook)
    local = tmp_path / "morning.xlsx"
    fs.get_file(book_path, str(local))
    book = openpyxl.load_workbook(local)
    sheet = book["Organizations"]
    header = [c.value for c in sheet[1]]
    assert header[:3] == ["Organization", "Name", "Night"]
    last = [c.value for c in sheet[5]]
    assert last[0] == "All 3"
    assert last[header.index("Submitted ($)")] == pytest.approx(1235.55)
    ties = header.index("Ties out") + 1
    assert [sheet.cell(row=r, column=ties).value for r in range(2, 6)] == ["yes", "no", None, "no"]
    assert sheet.cell(row=2, column=header.index("Tie-out: disbursed ($)") + 1).value == 1000
    assert last[header.index("Tie-out: sheet ($)")] == pytest.approx(1235.55)
    link = sheet.cell(row=3, column=header.index("Report") + 1).value
    assert link == f'=HYPERLINK("{workbook_b}","workbook")'

    assert [c.value for c in book["Open exceptions"][2]] == [
        "org_b",
        "EX-1",
        "bad.csv rejected",
        "$12.00",
        "fix it",
    ]


def test_night_json_holds_the_facts_and_no_more(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    out = _night(reports, "org_a", available=[1], shortfall=[0])
    published = publish_night(str(tmp_path / "shared"), reports, out, [], _facts("org_a", 1, 5, []))
    facts = json.loads(Path(published.folder, "night.json").read_text(encoding="utf-8"))
    assert facts["submitted_cents"] == 5
    assert sorted(p.name for p in Path(published.folder).iterdir()) == [
        "funding.parquet",
        "night.json",
        "reconciliation.xlsx",
    ]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda r: r.pop("submitted_cents"), "has no field 'submitted_cents'"),
        (lambda r: r["exceptions"][0].pop("what_to_do"), "has no field 'what_to_do'"),
        (lambda r: r.update(files="2"), "field 'files' of the published night is '2', not int"),
        (lambda r: r.update(version=2), "is version 2; this fundpipe reads version 1"),
        (lambda r: r.pop("version"), "is version None; this fundpipe reads version 1"),
    ],
)
def test_a_published_night_missing_a_field_or_of_another_version_is_an_error_naming_it(
    tmp_path: Path, change: object, says: str
) -> None:
    """The morning view never reads a missing field as 0: the record's one reader fails,
    naming the file."""
    from fundpipe.errors import InputError

    reports = tmp_path / "worker" / "reports"
    out = _night(reports, "org_a", available=[1], shortfall=[0])
    record = _facts("org_a", 1, 5, [OPEN])
    change(record)  # type: ignore[operator]
    published = publish_night(str(tmp_path / "shared"), reports, out, [], record)
    row = OrgRow("org_a", "A", "Completed", report_folder=published.folder)
    with pytest.raises(InputError) as raised:
        build_morning_view("2026-11-25", [row])
    assert str(raised.value).startswith(join(published.folder, "night.json") + ": ")
    assert says in str(raised.value)


def test_a_published_night_reads_back_as_it_was_written(tmp_path: Path) -> None:
    record = PublishedNight.from_json(_facts("org_b", 1, 99, [OPEN]), "night.json")
    assert record.as_json() == _facts("org_b", 1, 99, [OPEN])
    assert record.open_exceptions == (ExceptionRecord.from_json(OPEN),)
