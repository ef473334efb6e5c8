"""The GC pause around an XLSX sheet's cells is the entry point's choice, not the reader's.

The reader never touches the garbage collector (`tests/test_layout.py` checks no library module
does); `fundpipe validate` and `fundpipe ingest` hand it `paused_gc` as `around_cells`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import xlsxwriter

from fundpipe.sheets.readers import read_file

HEADER = ["Distribution Name", "Vehicle", "External Reference", "Payment Date", "Entity ID"]


def mixed_sheet(path: Path) -> Path:
    """A sheet whose amount column mixes numbers and text: read cell by cell (python-calamine)."""
    book = xlsxwriter.Workbook(str(path))
    ws = book.add_worksheet("Distributions")
    ws.write_row(0, 0, [*HEADER, "Amount ($)"])
    for r, amount in enumerate([1250.5, "$1,000.00", 300, "(12.00)"], start=1):
        ws.write_row(r, 0, ["Q4", "veh_1", "Q4-2026", "2026-12-01", f"ent_{r}", amount])
    book.close()
    return path


def test_the_cells_are_read_inside_the_entry_point_s_choice_and_read_the_same(
    tmp_path: Path,
) -> None:
    path = mixed_sheet(tmp_path / "mixed.xlsx")
    entered: list[bool] = []

    @contextmanager
    def around() -> Iterator[None]:
        entered.append(gc.isenabled())
        yield

    chosen = read_file(path, around_cells=around)
    assert entered  # the cell-by-cell path ran inside it
    plain = read_file(path)
    assert gc.isenabled()  # the library's default left the collector as it was
    pd.testing.assert_frame_equal(chosen.sheets[0].body, plain.sheets[0].body, check_exact=True)
    assert chosen.sheets[0].body["c5"].tolist() == ["1250.50", "$1,000.00", "300", "(12.00)"]


def test_fundpipe_validate_pauses_the_collector_around_a_sheet_s_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from fundpipe.app.cli import app, process

    path = mixed_sheet(tmp_path / "mixed.xlsx")
    while_reading: list[bool] = []
    paused = process.paused_gc

    @contextmanager
    def spy() -> Iterator[None]:
        with paused():
            while_reading.append(gc.isenabled())
            yield

    monkeypatch.setattr(process, "paused_gc", spy)
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, ["validate", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output  # a verdict, not an error
    assert while_reading  # the cells were made inside it…
    assert not any(while_reading)  # …with the collector paused
    assert gc.isenabled()  # and on again after
