"""Collect row-level issues as frames (cheap on a million rows) and turn them into `Issue`s."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from fundpipe.validate.issues import SENSITIVE_COLUMNS, Issue, mask_account_number

_COLUMNS = ["row", "column", "value", "check", "reason"]
_BLANK_CHECKS = ("not_nullable", "amount_required", "datetime_required")
_NAMED = re.compile("\x1f([^\x1f]+)\x1f")


def column_named(column: str) -> str:
    """How a reason names a column: a mark `IssueCollector.to_issues` turns into the header as
    the analyst wrote it and its letter (``Timezone (column E)``), not the canonical name."""
    return f"\x1f{column}\x1f"


def _as_written(reason: str, headers: dict[str, str], letters: dict[str, str]) -> str:
    """``reason`` with each `column_named` mark replaced by its header and letter."""
    if "\x1f" not in reason:
        return reason

    def header(match: re.Match[str]) -> str:
        column = match.group(1)
        letter = letters.get(column)
        return headers.get(column, column) + (f" (column {letter})" if letter else "")

    return _NAMED.sub(header, reason)


class IssueCollector:
    """Accumulates failing cells of one sheet: (Excel row, canonical column, value, check, reason)."""

    def __init__(self) -> None:
        self._parts: list[pd.DataFrame] = []
        self.sheet_level: list[tuple[str | None, str | None, str, str]] = []

    def add(
        self,
        mask: pd.Series,
        column: str | None,
        values: pd.Series | None,
        check: str | pd.Series,
        reason: str | pd.Series,
    ) -> None:
        """Record every row where ``mask`` is true (the frame index is the Excel row number)."""
        mask = mask.fillna(False).astype(bool)
        if not mask.any():
            return
        rows = mask.index[mask.to_numpy()]
        part = pd.DataFrame(
            {
                "row": rows.astype("int64"),
                "column": column,
                "value": values[mask].astype("str").to_numpy() if values is not None else None,
                # check/reason may cover only the failing rows (cheaper on big sheets)
                "check": check.reindex(rows).to_numpy() if isinstance(check, pd.Series) else check,
                "reason": reason.reindex(rows).to_numpy()
                if isinstance(reason, pd.Series)
                else reason,
            }
        )
        self._parts.append(part)

    def add_rows(
        self,
        rows: np.ndarray,
        column: str,
        values: list[str | None],
        check: str | list[str | None],
        reason: str | list[str | None],
    ) -> None:
        """Record the cells of ``column`` at Excel ``rows`` (what `add` records from a mask,
        from plain arrays: ``values`` as written, a check and reason per row or for all)."""
        if len(rows):
            self._parts.append(
                pd.DataFrame(
                    {
                        "row": np.asarray(rows, dtype=np.int64),
                        "column": column,
                        "value": np.array(values, dtype=object),
                        "check": check if isinstance(check, str) else np.array(check, dtype=object),
                        "reason": reason
                        if isinstance(reason, str)
                        else np.array(reason, dtype=object),
                    }
                )
            )

    def add_frame(self, frame: pd.DataFrame) -> None:
        """Record issues already shaped as a frame with the collector's columns."""
        if len(frame):
            self._parts.append(frame[_COLUMNS])

    def add_sheet_level(
        self, column: str | None, value: str | None, check: str, reason: str
    ) -> None:
        """Record a problem that belongs to the sheet (no row), optionally naming a column;
        once, however often it is found (a sheet checked in slices finds it in each)."""
        entry = (column, value, check, reason)
        if entry not in self.sheet_level:
            self.sheet_level.append(entry)

    @property
    def failed_rows(self) -> pd.Index:
        """Excel row numbers with at least one issue."""
        if not self._parts:
            return pd.Index([], dtype="int64")
        rows: pd.Index = pd.Index(pd.concat([p["row"] for p in self._parts]).unique())
        return rows

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts) + len(self.sheet_level)

    def to_issues(
        self,
        file: str,
        sheet: str | None,
        headers: dict[str, str],
        *,
        limit: int,
        letters: dict[str, str] | None = None,
    ) -> list[Issue]:
        """Issues sorted by row then column, with columns named as the analyst wrote them and
        their letters (``letters``: canonical column → its letter in Excel), in the columns and in
        the reasons (`column_named`)."""
        letters = letters or {}
        out = [
            Issue(
                file,
                sheet,
                None,
                headers.get(column, column) if column else None,
                _mask(column, value),
                check,
                _as_written(reason, headers, letters),
                letters.get(column) if column else None,
            )
            for column, value, check, reason in self.sheet_level
        ]
        if not self._parts:
            return out
        frame = pd.concat(self._parts, ignore_index=True)
        # A formula with no saved result also reads as blank: say it once, as the formula problem.
        formula = frame["check"].eq("formula_without_value")
        if formula.any():
            cells = set(zip(frame.loc[formula, "row"], frame.loc[formula, "column"], strict=True))
            blank_checks = frame["check"].isin(_BLANK_CHECKS)
            in_cell = pd.Series(
                [(r, c) in cells for r, c in zip(frame["row"], frame["column"], strict=True)],
                index=frame.index,
            )
            frame = frame[~(blank_checks & in_cell)]
        frame = frame.sort_values(["row", "column"], kind="stable").head(limit)
        for row, column, value, check, reason in frame.itertuples(index=False, name=None):
            col = None if column is None or pd.isna(column) else str(column)
            val = None if value is None or pd.isna(value) else str(value)
            out.append(
                Issue(
                    file,
                    sheet,
                    int(row),
                    headers.get(col, col) if col else None,
                    _mask(col, val),
                    str(check),
                    _as_written(str(reason), headers, letters),
                    letters.get(col) if col else None,
                )
            )
        return out


def _mask(column: str | None, value: str | None) -> str | None:
    if value is None:
        return None
    if column in SENSITIVE_COLUMNS:
        return mask_account_number(value)
    return value if len(value) <= 200 else value[:197] + "..."
