"""What validation says about a file: `Issue` (one problem) and `FileReport` (one file's verdict).

Problems in sheets are data, never exceptions. Account numbers never appear in an issue, a
report or a repr: only their last four characters (see `mask_account_number`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: Canonical columns whose values are secrets: masked in every issue.
SENSITIVE_COLUMNS = frozenset({"account_number", "account_number_secret"})


def mask_account_number(value: object) -> str:
    """``"****6789"`` for an account number: only the last four characters survive."""
    text = "" if value is None else str(value).strip()
    if not text:
        return ""
    return "****" + text[-4:] if len(text) > 4 else "****"


@dataclass(frozen=True)
class Issue:
    """One problem an analyst can fix: where it is, what was there, which check failed and why.

    ``row`` uses Excel numbering (the header is row 1) and is None for file-level problems;
    ``column`` is the header as the analyst wrote it; ``value`` is masked when sensitive.
    """

    file: str
    sheet: str | None
    row: int | None
    column: str | None
    value: str | None
    check: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """The issue as a JSON-ready dict."""
        return {
            "file": self.file,
            "sheet": self.sheet,
            "row": self.row,
            "column": self.column,
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
    #: True when the file could not be read at all (CLI exit code 2)
    unreadable: bool = False
    #: SHA-256 of the file's bytes (None when it could not be read)
    content_sha256: str | None = None

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

    def file_warning(self, check: str, reason: str, *, sheet: str | None = None) -> None:
        """Record a file-level warning."""
        self.warnings.append(Issue(self.file, sheet, None, None, None, check, reason))
