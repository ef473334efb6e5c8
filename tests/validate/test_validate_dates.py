"""Dates with day and month in figures: never a silent guess (issue 22).

``03/04/2027`` is 3 April to an analyst in London and 4 March to one in New York. Unless the
organization declares its order (``FUNDPIPE_DATE_ORDER``) or the same column proves it, such a
date rejects the file with an error naming both readings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xlsxwriter
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.validate.files import FileReport, validate_files
from worlds.sheets import HEADER

LONDON = "Europe/London"


def payments(*dates: str) -> list[list[str]]:
    """One payment per date, each its own distribution (rows of one must agree on the date)."""
    return [
        [f"Spring {i}", "veh_demo1", f"SPRING-{i}", when, LONDON, "ent_demo1", "100.00"]
        for i, when in enumerate(dates)
    ]


def only(path: Path, **kwargs: object) -> FileReport:
    [report] = validate_files([path], **kwargs)  # type: ignore[arg-type]
    return report


def test_03_04_2027_alone_rejects_the_file_naming_both_readings(
    write_csv: Callable[..., Path],
) -> None:
    report = only(write_csv(payments("2027-04-01", "03/04/2027"), name="london.csv"))
    assert not report.valid
    [error] = report.errors
    assert (error.row, error.column, error.letter, error.value, error.check) == (
        3,
        "Payment Date",
        "D",
        "03/04/2027",
        "date_order_ambiguous",
    )
    assert "could be 3 April 2027 (day first) or 4 March 2027 (month first)" in error.reason
    assert "FUNDPIPE_DATE_ORDER" in error.reason


@pytest.mark.parametrize(("order", "iso"), [("dmy", "2027-04-03"), ("mdy", "2027-03-04")])
def test_the_declared_order_reads_it(write_csv: Callable[..., Path], order: str, iso: str) -> None:
    report = only(write_csv(payments("03/04/2027 09:00")), date_order=order)
    assert report.valid, report.errors
    assert report.distributions is not None
    assert report.distributions["distribution_date"].str.slice(0, 10).tolist() == [iso]


def test_a_column_holding_25_04_2027_reads_its_open_dates_day_first_and_says_so(
    write_csv: Callable[..., Path],
) -> None:
    report = only(write_csv(payments("03/04/2027", "25/04/2027")))
    assert report.valid, report.errors
    assert report.distributions is not None
    assert report.distributions["distribution_date"].str.slice(0, 10).tolist() == [
        "2027-04-03",
        "2027-04-25",
    ]
    [note] = [w for w in report.warnings if w.check == "date_order_from_column"]
    assert (note.column, note.letter, note.value) == ("Payment Date", "D", "25/04/2027")
    assert "read day/month/year" in note.reason


def test_a_declared_order_wins_over_the_column(write_csv: Callable[..., Path]) -> None:
    report = only(write_csv(payments("03/04/2027", "25/04/2027")), date_order="mdy")
    assert [(e.row, e.check) for e in report.errors] == [(3, "datetime_invalid")]


def test_year_first_and_month_names_pass(write_csv: Callable[..., Path]) -> None:
    report = only(write_csv(payments("2027-04-03", "3 April 2027", "April 3, 2027 9:00 AM")))
    assert report.valid, report.errors


def test_xlsx_date_cells_and_parquet_dates_are_never_ambiguous(tmp_path: Path) -> None:
    path = tmp_path / "typed.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("Distributions")
    sheet.write_row(0, 0, HEADER)
    day = book.add_format({"num_format": "dd/mm/yyyy"})  # shown as 03/04/2027, a real date
    for r, row in enumerate(payments("", ""), start=1):
        sheet.write_row(r, 0, row)
        sheet.write_datetime(r, 3, datetime(2027, 4, 3), day)
    sheet.write_string(2, 3, "03/04/2027")  # the same, typed as text: ambiguous
    book.close()
    report = only(path)
    assert [(e.row, e.letter, e.check) for e in report.errors] == [(3, "D", "date_order_ambiguous")]

    table = pa.table(
        {
            **{h: [c] for h, c in zip(HEADER, payments("")[0], strict=True)},
            "Payment Date": pa.array([date(2027, 4, 3)], pa.date32()),
        }
    )
    pq.write_table(table, tmp_path / "typed.parquet")
    parquet = only(tmp_path / "typed.parquet")
    assert parquet.valid, parquet.errors
    assert parquet.distributions is not None
    assert parquet.distributions["distribution_date"].tolist() == ["2027-04-03T00:00:00+01:00"]


def test_fundpipe_validate_reads_the_order_from_FUNDPIPE_DATE_ORDER(
    write_csv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sheet = write_csv(payments("03/04/2027"), name="london.csv")
    runner = CliRunner()
    monkeypatch.delenv("FUNDPIPE_DATE_ORDER", raising=False)
    refused = runner.invoke(app, ["validate", "--format", "json", str(sheet)])
    assert refused.exit_code == 1
    [problem] = json.loads(refused.stdout)["files"][0]["grouped"]
    assert (problem["check"], problem["column_letter"]) == ("date_order_ambiguous", "D")
    monkeypatch.setenv("FUNDPIPE_DATE_ORDER", "dmy")
    accepted = runner.invoke(app, ["validate", str(sheet)])
    assert accepted.exit_code == 0, accepted.stdout
