"""What validation says about a file: `Issue` (one problem) and `FileReport` (one file's verdict).

Problems in sheets are data, never exceptions. Account numbers never appear in an issue, a
report or a repr: only their last four characters (see `mask_account_number`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fundpipe.sensitive import SENSITIVE_FIELDS, mask

#: Warning checks a run repeats for a file it accepts (`FileReport.reading_notes`).
READING_NOTES = frozenset({"date_order_from_column"})

#: Canonical columns whose values are secrets: masked in every issue (the sensitive fields,
#: and the roster's copy of the account number).
SENSITIVE_COLUMNS = SENSITIVE_FIELDS | {"account_number_secret"}

#: ``"****6789"`` for an account number: the one masking function, `fundpipe.sensitive.mask`.
mask_account_number = mask


def column_letter(position: int) -> str:
    """Excel's letter for a 0-based column position: 0 → ``A``, 25 → ``Z``, 26 → ``AA``."""
    if position < 0:
        raise ValueError(f"no column at position {position}")
    letters = ""
    number = position + 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


@dataclass(frozen=True)
class Issue:
    """One problem an analyst can fix: where it is, what was there, which check failed and why.

    ``row`` uses Excel numbering (the header is row 1) and is None for file-level problems;
    ``column`` is the header as the analyst wrote it and ``letter`` the column's letter as the
    analyst sees it in Excel (a CSV's too: the letter it has when opened there; None when the
    issue names no column of the sheet); ``value`` is masked when sensitive.
    """

    file: str
    sheet: str | None
    row: int | None
    column: str | None
    value: str | None
    check: str
    reason: str
    letter: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The issue as a JSON-ready dict."""
        return {
            "file": self.file,
            "sheet": self.sheet,
            "row": self.row,
            "column": self.column,
            "column_letter": self.letter,
            "value": self.value,
            "check": self.check,
            "reason": self.reason,
        }


@dataclass(repr=False)
class FileReport:
    """The verdict on one file: accepted whole (``valid``) or rejected whole with its errors.

    The frames hold the canonical rows of a valid file (``distributions``: one payment per row;
    ``entities``/``contacts``/``payment_instructions`` from a roster) and may be None. The only
    place a full account number lives is ``payment_instructions["account_number_secret"]``;
    ``repr`` never shows frames.
    """

    file: str
    valid: bool = True
    rows: int = 0
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    distributions: pd.DataFrame | None = None
    entities: pd.DataFrame | None = None
    contacts: pd.DataFrame | None = None
    payment_instructions: pd.DataFrame | None = None
    #: sheets read (XLSX sheet names; empty for CSV and Parquet)
    sheets: list[str] = field(default_factory=list)
    #: which template each sheet (or the file) matched: sheet or "" → template name
    templates: dict[str, str] = field(default_factory=dict)
    #: per sheet ("" for CSV/Parquet): canonical column → the header as the analyst wrote it
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    #: per sheet ("" for CSV/Parquet): canonical column → its letter in Excel (``G``, ``AB``)
    letters: dict[str, dict[str, str]] = field(default_factory=dict)
    #: True when the file could not be read at all (CLI exit code 2)
    unreadable: bool = False
    #: SHA-256 of the file's bytes (None when it could not be read)
    content_sha256: str | None = None
    #: the sum of the distribution rows' amounts that could be read, in cents (None when no
    #: distribution sheet was read, or none of its amounts could be): a rejected file's total,
    #: for its exception
    read_cents: int | None = None
    #: the distribution references a rejected distribution sheet names (where they could be
    #: read): a later file that carries all of them is its correction
    references: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"FileReport(file={self.file!r}, valid={self.valid}, rows={self.rows}, "
            f"errors={len(self.errors)}, warnings={len(self.warnings)}, sheets={self.sheets!r})"
        )

    def add_error(self, issue: Issue) -> None:
        """Record an error (the file is rejected)."""
        self.errors.append(issue)
        self.valid = False

    def file_error(self, check: str, reason: str, *, sheet: str | None = None) -> None:
        """Record a file-level error."""
        self.add_error(Issue(self.file, sheet, None, None, None, check, reason))

    def reading_notes(self) -> list[str]:
        """What was decided while reading a file that is otherwise fine — a day/month order
        taken from its column — one sentence each, for a run's warnings (a valid file's other
        warnings stay in ``fundpipe validate``)."""
        return [
            f"{w.column} ({w.letter}){f' on sheet {w.sheet}' if w.sheet else ''}: {w.reason}"
            for w in self.warnings
            if w.check in READING_NOTES
        ]

    def file_warning(self, check: str, reason: str, *, sheet: str | None = None) -> None:
        """Record a file-level warning."""
        self.warnings.append(Issue(self.file, sheet, None, None, None, check, reason))


@dataclass(frozen=True)
class IssueGroup:
    """One problem as an error report lists it: the same issue (sheet, column, value, check and
    reason alike) over every row it occurs on, said once with its rows."""

    severity: str
    first: Issue
    #: Excel row numbers, ascending (empty for a file-level or sheet-level problem)
    rows: tuple[int, ...]

    @property
    def count(self) -> int:
        """How many rows carry the problem (1 for a problem without a row)."""
        return max(len(self.rows), 1)

    def rows_text(self, *, limit: int = 100) -> str:
        """The rows compactly, ``"2–7, 9"``; past ``limit`` runs, ``"… and 1,234 more rows"``."""
        return compact_rows(self.rows, limit=limit)

    def as_dict(self) -> dict[str, Any]:
        """The group as a JSON-ready dict: the first issue's fields (``row``: the first row),
        then ``rows`` (all of them, a list of numbers), ``rows_text`` and ``count``."""
        return {
            "severity": self.severity,
            **self.first.as_dict(),
            "rows": list(self.rows),
            "rows_text": self.rows_text(),
            "count": self.count,
        }


def compact_rows(rows: Iterable[int], *, limit: int = 100) -> str:
    """Ascending row numbers as runs: ``[2, 3, 4, 5, 6, 7, 9]`` → ``"2–7, 9"``.

    At most ``limit`` runs are spelled out; the rest are counted (an Excel cell holds 32,767
    characters, a million bad rows would not fit).
    """
    runs: list[tuple[int, int]] = []
    for row in sorted(set(rows)):
        if runs and row == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    parts = [str(a) if a == b else f"{a}–{b}" for a, b in runs[:limit]]
    if len(runs) > limit:
        more = sum(b - a + 1 for a, b in runs[limit:])
        parts.append(f"… and {more:,} more rows")
    return ", ".join(parts)


def group_issues(report: FileReport) -> list[IssueGroup]:
    """The report's errors then warnings, each identical problem once with all its rows.

    Groups keep the place of their first issue in the report (which lists issues by row);
    problems without a row (file or sheet level) stay one line each.
    """
    groups: list[IssueGroup] = []
    for severity, issues in (("error", report.errors), ("warning", report.warnings)):
        rows: dict[tuple[Any, ...], list[int]] = {}
        firsts: dict[tuple[Any, ...], Issue] = {}
        order: list[tuple[Any, ...] | int] = []
        for index, issue in enumerate(issues):
            if issue.row is None:
                order.append(index)
                continue
            key = (issue.sheet, issue.column, issue.letter, issue.value, issue.check, issue.reason)
            if key not in rows:
                rows[key] = []
                firsts[key] = issue
                order.append(key)
            rows[key].append(issue.row)
        for item in order:
            if isinstance(item, int):
                groups.append(IssueGroup(severity, issues[item], ()))
            else:
                groups.append(IssueGroup(severity, firsts[item], tuple(sorted(rows[item]))))
    return groups
