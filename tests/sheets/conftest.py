"""Worlds for sheet tests: a clean distribution sheet in any encoding or as XLSX, and helpers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import xlsxwriter
from sheet_builders import HEADER, clean_rows, csv_bytes


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Write rows as a CSV file (text, encoding and delimiter chosen by the test)."""

    def write(
        rows: list[list[str]] | None = None,
        *,
        name: str = "sheet.csv",
        header: list[str] = HEADER,
        encoding: str = "utf-8",
        delimiter: str = ",",
    ) -> Path:
        path = tmp_path / name
        text = csv_bytes(clean_rows() if rows is None else rows, header=header, delimiter=delimiter)
        path.write_bytes(text.encode(encoding))
        return path

    return write


@pytest.fixture
def write_xlsx(tmp_path: Path) -> Callable[..., Path]:
    """Write cells (any Python values; callables get the worksheet) to an XLSX with xlsxwriter."""

    def write(
        rows: list[list[object]] | None = None,
        *,
        name: str = "sheet.xlsx",
        header: list[str] = HEADER,
        sheet: str = "Distributions",
    ) -> Path:
        path = tmp_path / name
        workbook = xlsxwriter.Workbook(str(path))
        ws = workbook.add_worksheet(sheet)
        date_format = workbook.add_format({"num_format": "yyyy-mm-dd hh:mm"})
        ws.write_row(0, 0, header)
        for r, row in enumerate(clean_rows() if rows is None else rows, start=1):
            for c, value in enumerate(row):
                if callable(value):
                    value(ws, r, c, date_format)
                elif value is not None:
                    ws.write(r, c, value)
        workbook.close()
        return path

    return write
