"""The files rejected on a report's as-of date, as its workbook lists them (issue 42 §7).

`rejected_files` reads them from the warehouse's ledger files at the report's point in time —
received on the as-of date (in the reporting timezone) and rejected or in conflict — with the
first problems of each, read from its error report beside it in ``rejected/``, and that report's
full path. A file a corrected one settled since is still listed, saying so: the reviewer signs
what happened that night. `note_rejected_files` adds the same to the exported exceptions (the
Exceptions tab): the file's problems after its line, its error report in what to do.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb

from fundpipe.cents import format_cents
from fundpipe.reconcile.export import set_point_in_time, sql_literal
from fundpipe.submit import InboxDirs
from fundpipe.warehouse import scratch
from fundpipe.words import counted

__all__ = ["NightFile", "note_rejected_files", "rejected_files", "report_problems"]

#: The problems of a file said on the page (the rest are in its error report).
FIRST_PROBLEMS = 3


@dataclass(frozen=True, slots=True)
class NightFile:
    """A file rejected (or in conflict) on the as-of date, as the workbook says it."""

    name: str
    file_hash: str
    state: str
    rows: int | None
    total_cents: int | None
    received_at: datetime
    settled: bool
    problems: tuple[str, ...]
    more_problems: int
    error_report: Path | None

    @property
    def title(self) -> str:
        """``q4_typo.csv: 2 rows, $2,000.00``."""
        rows = counted(self.rows, "row") if self.rows is not None else "rows unknown"
        money = f", {format_cents(self.total_cents)}" if self.total_cents is not None else ""
        return f"{self.name}: {rows}{money}"

    @property
    def why(self) -> str:
        """Why it was rejected, in the error report's words (its first problems)."""
        if self.state == "conflict":
            said = "it changes distributions already at the service (see the Exceptions tab)"
        elif self.problems:
            more = f"; and {self.more_problems} more" if self.more_problems else ""
            said = "; ".join(self.problems) + more
        else:
            said = "it could not be read as a sheet (the night's log says why)"
        settled = " Settled since: a later file carries its distributions." if self.settled else ""
        return f"{'In conflict' if self.state == 'conflict' else 'Rejected'}: {said}.{settled}"

    @property
    def report_text(self) -> str:
        """Where its error report is, whole (a relative path means nothing on paper)."""
        return str(self.error_report) if self.error_report else "no error report written"


def report_problems(report: Path) -> tuple[tuple[str, ...], int]:
    """The first problems of an error report CSV, each as a person reads it, and how many more."""
    with open(report, newline="", encoding="utf-8-sig") as fh:
        lines = list(csv.DictReader(fh))
    said = []
    for line in lines[:FIRST_PROBLEMS]:
        where = []
        if line.get("rows"):
            where.append(
                f"row {line['rows']}" if "," not in line["rows"] else f"rows {line['rows']}"
            )
        if line.get("column"):
            letter = f" (column {line['letter']})" if line.get("letter") else ""
            where.append(f"{line['column']}{letter}")
        value = f" '{line['value']}'" if line.get("value") else ""
        said.append(f"{', '.join(where)}{value}: {line.get('reason', '')}".lstrip(": "))
    return tuple(said), max(len(lines) - FIRST_PROBLEMS, 0)


def rejected_files(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    zone: str,
    data_dir: Path,
    known_at: datetime | None = None,
) -> list[NightFile]:
    """The files received on `as_of` (in `zone`) and rejected or in conflict, as fundpipe knew
    them at the report's knowledge time, oldest first; their error reports in `data_dir`'s
    ``rejected/``."""
    set_point_in_time(con, as_of, timezone=zone, known_at=known_at)
    rows = con.execute(
        f"""
        SELECT source_file, file_hash, state, "rows", total_cents, received_at,
               file_hash IN (SELECT file_hash FROM superseded_files)
        FROM as_of_ledger_files
        WHERE state IN ('rejected', 'conflict')
          AND CAST(timezone('{sql_literal(zone)}', received_at) AS DATE) = ?
        ORDER BY received_at, source_file
        """,
        [as_of],
    ).fetchall()
    folder = InboxDirs(data_dir).rejected.resolve()
    found = []
    for source, file_hash, state, count, cents, received, settled in rows:
        name = Path(str(source).replace("\\", "/")).name
        report = folder / f"{name}.errors.csv"
        problems, more = report_problems(report) if report.is_file() else ((), 0)
        xlsx = report.with_suffix(".xlsx")
        found.append(
            NightFile(
                name=name,
                file_hash=str(file_hash),
                state=str(state),
                rows=count,
                total_cents=cents,
                received_at=received,
                settled=bool(settled),
                problems=problems,
                more_problems=more,
                error_report=xlsx if xlsx.is_file() else report if report.is_file() else None,
            )
        )
    return found


def note_rejected_files(exceptions: Path, files: list[NightFile]) -> None:
    """Add each file's problems to its exception's line in the exported `exceptions` (after
    "nothing in it was paid") and its error report's path to what to do."""
    rejected = [f for f in files if f.state == "rejected"]
    if not rejected:
        return
    with scratch() as con:
        con.execute("CREATE TABLE night_files (file_hash VARCHAR, why VARCHAR, report VARCHAR)")
        con.executemany(
            "INSERT INTO night_files VALUES (?, ?, ?)",
            [(f.file_hash, f.why, f.report_text) for f in rejected],
        )
        staged = exceptions.with_suffix(".noted.parquet")
        source, target = sql_literal(str(exceptions)), sql_literal(str(staged))
        con.execute(
            f"""
            COPY (
                SELECT x.* EXCLUDE (file_row_number) REPLACE (
                    CASE WHEN n.why IS NULL THEN x.what ELSE x.what || '. ' || n.why END AS what,
                    CASE WHEN n.report IS NULL THEN x.action
                         ELSE 'open its error report ' || n.report
                              || ', fix the sheet and drop it in the inbox again' END AS action)
                FROM read_parquet('{source}', file_row_number = true) x
                LEFT JOIN night_files n
                  ON x.kind = 'file_rejected' AND n.file_hash = x.object_id
                ORDER BY x.file_row_number
            ) TO '{target}' (FORMAT parquet, COMPRESSION zstd)
            """
        )
    staged.replace(exceptions)
