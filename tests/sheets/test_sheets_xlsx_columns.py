"""XLSX sheets read column-wise (fastexcel) give exactly the text of the cell-by-cell path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
import xlsxwriter
from hypothesis import given, settings
from hypothesis import strategies as st

from fundpipe.sheets import xlsx
from fundpipe.sheets.money import format_spreadsheet_number
from fundpipe.sheets.readers import ReadResult, read_file

Writer = Callable[[Any, Any], None]


def workbook(path: Path, build: Writer) -> Path:
    """An XLSX with one sheet ``Distributions`` filled by ``build(worksheet, formats)``."""
    book = xlsxwriter.Workbook(str(path))
    formats = {
        "datetime": book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"}),
        "date": book.add_format({"num_format": "yyyy-mm-dd"}),
    }
    build(book.add_worksheet("Distributions"), formats)
    book.close()
    return path


def read_both(path: Path) -> tuple[ReadResult, list[bool]]:
    """Read ``path`` as shipped and cell by cell; assert both agree; say which sheets went fast
    (a sheet read cell by cell enters the reader's ``around_cells``; these workbooks have one)."""
    entered: list[bool] = []

    @contextmanager
    def counting() -> Iterator[None]:
        entered.append(True)
        yield

    shipped = read_file(path, around_cells=counting)
    assert len(shipped.sheets) <= 1
    taken = [not entered] * len(shipped.sheets)
    cell_by_cell = read_file(path, columnar=False)
    assert (shipped.errors, shipped.warnings) == (cell_by_cell.errors, cell_by_cell.warnings)
    assert len(shipped.sheets) == len(cell_by_cell.sheets)
    for ours, theirs in zip(shipped.sheets, cell_by_cell.sheets, strict=True):
        assert (ours.name, ours.header, ours.cell_errors) == (
            theirs.name,
            theirs.header,
            theirs.cell_errors,
        )
        pd.testing.assert_frame_equal(ours.body, theirs.body, check_exact=True)
    return shipped, taken


def _typed_columns(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["Name", "Amount", "Paid", "When", "Code"])
    amounts = [1234.5, 0.1 + 0.2, 12.345, 21000021.0, -4.0, 123456789012.345]
    whens = [
        datetime(2026, 12, 15, 9, 0),
        datetime(2026, 12, 15),
        datetime(2026, 12, 15, 9, 0, 1, 500000),
    ]
    codes = ["001234", "1234.50", "TRUE"]
    for i, amount in enumerate(amounts):
        row = i + 1 if i < 2 else i + 2  # Excel row 4 stays empty
        ws.write_string(row, 0, f" payee {i} ")
        ws.write_number(row, 1, amount)
        ws.write_boolean(row, 2, i % 2 == 0)
        if i < len(whens):
            ws.write_datetime(row, 3, whens[i], fmt["datetime"])
        if i < len(codes):
            ws.write_string(row, 4, codes[i])


def test_typed_columns_are_read_column_wise_with_the_same_text(
    tmp_path: Path,
) -> None:
    result, fast = read_both(workbook(tmp_path / "typed.xlsx", _typed_columns))
    assert fast == [True]
    [sheet] = result.sheets
    assert sheet.header == ["Name", "Amount", "Paid", "When", "Code"]
    body = sheet.body
    assert list(body.index) == [2, 3, 5, 6, 7, 8]  # Excel row numbers; the empty row 4 dropped
    assert body["c0"].tolist() == [f"payee {i}" for i in range(6)]
    assert body["c1"].tolist() == [
        "1234.50",
        "0.30",
        "12.345",
        "21000021",
        "-4",
        "123456789012.345",
    ]
    assert body["c2"].tolist() == ["TRUE", "FALSE", "TRUE", "FALSE", "TRUE", "FALSE"]
    assert body["c3"].tolist()[:3] == [
        "2026-12-15T09:00:00",
        "2026-12-15",
        "2026-12-15T09:00:01.500000",
    ]
    assert body["c4"].tolist()[:3] == ["001234", "1234.50", "TRUE"]


def _mixed_column(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["Name", "Amount"])
    ws.write_row(1, 0, ["a", 1234.5])
    ws.write_row(2, 0, ["b", "1,234.00"])
    ws.write_row(3, 0, ["c", True])
    ws.write_datetime(4, 1, datetime(2026, 12, 15, 9), fmt["datetime"])


def _mixed_late(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["Amount"])
    for row in range(1, 6000):  # past the first rows the reader looks at before parsing
        ws.write_number(row, 0, 1234.5)
    ws.write_string(6000, 0, "(1.00)")


def _not_at_a1(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(2, 1, ["Name", "Amount"])
    ws.write_row(3, 1, ["a", 5.5])


def _header_not_text(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["Name", 2026, 1234.5, True, None, "Name"])
    ws.write_row(1, 0, ["a", 1, 2, 3, 4, 5])


def _near_whole_serial(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["When"])
    ws.write_number(1, 0, 46371.0, fmt["datetime"])  # a whole day: a date
    ws.write_number(2, 0, 46371.000000001, fmt["datetime"])  # a computed time: a datetime


def _times_and_old_dates(ws: Any, fmt: dict[str, Any]) -> None:
    ws.write_row(0, 0, ["Time", "Old"])
    ws.write_number(1, 0, 0.375, fmt["datetime"])
    ws.write_number(1, 1, 59.0, fmt["date"])


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_mixed_column, ["1234.50", "1,234.00", "TRUE", "2026-12-15T09:00:00"]),
        (_mixed_late, None),
        (_not_at_a1, None),
        (_header_not_text, None),
        (_near_whole_serial, ["2026-12-15", "2026-12-15T00:00:00"]),
        (_times_and_old_dates, ["09:00:00"]),
    ],
    ids=[
        "mixed column",
        "mixed late",
        "not at A1",
        "header not text",
        "near-whole serial",
        "times",
    ],
)
def test_unusual_sheets_are_read_cell_by_cell(
    tmp_path: Path,
    build: Writer,
    expected: list[str] | None,
) -> None:
    result, fast = read_both(workbook(tmp_path / "odd.xlsx", build))
    assert fast == [False]
    [sheet] = result.sheets
    if expected is not None:
        column = "c1" if build is _mixed_column else "c0"
        assert sheet.body[column].tolist() == expected


def test_sheet_not_at_a1_keeps_excel_row_numbers(
    tmp_path: Path,
) -> None:
    result, _ = read_both(workbook(tmp_path / "offset.xlsx", _not_at_a1))
    [sheet] = result.sheets
    # row 1 (empty) is the header row; the values keep their Excel rows 3 and 4
    assert list(sheet.body.index) == [3, 4]
    assert pd.isna(sheet.body.loc[4, "c0"])
    assert sheet.body.loc[4].tolist()[1:] == ["a", "5.50"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.floats(-1e300, 1e300),
            st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0, 2.0**53]),
            st.integers(-(10**12), 10**12).map(lambda c: c / 100),
            st.integers(-(2**60), 2**60).map(float),
        ),
        max_size=40,
    )
)
def test_numbers_convert_in_bulk_exactly_as_one_by_one(values: list[float | None]) -> None:
    text = xlsx._numbers_text(pa.array(values, pa.float64())).to_pylist()
    assert text == [None if v is None else format_spreadsheet_number(v) for v in values]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.datetimes(datetime(1901, 1, 1), datetime(9999, 12, 31)),
            st.dates(date(1901, 1, 1), date(9999, 12, 31)).map(
                lambda d: datetime(d.year, d.month, d.day)
            ),
        ),
        max_size=30,
    )
)
def test_datetimes_convert_in_bulk_exactly_as_one_by_one(values: list[datetime | None]) -> None:
    # fastexcel hands over milliseconds; calamine makes a whole-day serial a date
    stamps = [
        None if v is None else v - timedelta(microseconds=v.microsecond % 1000) for v in values
    ]
    text = xlsx._datetimes_text(pa.array(stamps, pa.timestamp("ms")))
    assert text is not None
    expected = [
        None
        if v is None
        else xlsx._cell_text(
            v.date() if v == datetime.combine(v.date(), datetime.min.time()) else v
        )
        for v in stamps
    ]
    assert text.to_pylist() == expected
