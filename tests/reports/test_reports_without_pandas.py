"""A workbook is written without importing pandas (`fundpipe reconcile` reads no sheet: pandas
would be half a second of every run): every cell is built with typed Arrow values."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import openpyxl

# Runs in a fresh interpreter: the test session itself has imported pandas long ago. Text that
# is neutralised, escaped and kept with its spaces; money, instants, dates, floats, booleans; a
# wrapped column, words for machine values, a totals row, the chart.
WRITE_WORKBOOK = """
import datetime as dt
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fundpipe.arrowpandas import spare_pandas
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, write_workbook

spare_pandas()  # as `reconcile` does
folder = Path(sys.argv[1])
pq.write_table(
    pa.table(
        {
            "vehicle": pa.array(["veh_a", "veh_b", "veh_c"], pa.string()),
            "vehicle_name": pa.array(["=1+1", " lead & <tail> ", "a_x0041_b"], pa.string()),
            "kind": pa.array(["shortfall", "file_refused", None], pa.string()),
            "shortfall_cents": pa.array([12_345, -5, 0], pa.int64()),
            "seen_at": pa.array(
                [dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)] * 3, pa.timestamp("us", tz="UTC")
            ),
            "due_on": pa.array([dt.date(2026, 11, 30)] * 3, pa.date32()),
            "ratio": pa.array([0.5, float("nan"), None], pa.float64()),
            "ok": pa.array([True, False, None], pa.bool_()),
            "note": pa.array(["a long note " * 8, None, "short"], pa.string()),
        }
    ),
    folder / "funding.parquet",
)
source = SheetSource(
    "Funding",
    folder / "funding.parquet",
    words={"kind": {"shortfall": "Short of funds"}},
    wrap={"note": 20},
    totals=True,
)
write_workbook(folder / "w.xlsx", WorkbookSummary(), [source])
print("pandas imported:", "pandas" in sys.modules)
"""


def _write(folder: Path, *, pandas_first: bool) -> list[str]:
    script = ("import pandas\n" if pandas_first else "") + textwrap.dedent(WRITE_WORKBOOK)
    run = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, check=True
    )
    return run.stdout.splitlines()


def test_a_workbook_is_written_without_importing_pandas(tmp_path: Path) -> None:
    assert _write(tmp_path, pandas_first=False) == ["pandas imported: False"]
    ws = openpyxl.load_workbook(tmp_path / "w.xlsx")["Funding"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[1][1:4] == ("'=1+1", "Short of funds", 123.45)
    assert rows[2][1:3] == (" lead & <tail> ", "File refused")
    assert rows[3][1] == "a_x005F_x0041_b"  # a literal _x0041_ escaped, as xlsxwriter does
    assert rows[4][:4] == ("Total", None, None, 123.40)
    (chart,) = openpyxl.load_workbook(tmp_path / "w.xlsx")["Summary"]._charts
    assert [p.v for p in chart.series[0].val.numRef.numCache.pt] == [123.45]
    # the same workbook written where pandas was imported first: the same cells, sheet by sheet
    again = tmp_path / "again"
    again.mkdir()
    assert _write(again, pandas_first=True) == ["pandas imported: True"]
    for name in ("Summary", "Funding"):
        ours = openpyxl.load_workbook(tmp_path / "w.xlsx")[name]
        theirs = openpyxl.load_workbook(again / "w.xlsx")[name]
        assert list(ours.iter_rows(values_only=True)) == list(theirs.iter_rows(values_only=True))
