"""What becomes of each file of an ingest: :class:`FileOutcome` / :class:`IngestResult`, and
(pure) a file's :func:`verdict` after a submission — its outcome, ledger state, where it goes,
and the issues its error report lists.

A file is processed only when every distribution it holds is at the service; a conflict or a
pre-flight refusal sends nothing of it; an unknown outcome keeps it in ``processing/`` for the
next run to settle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fundpipe.cents import format_cents
from fundpipe.errors import exit_code_of
from fundpipe.plan import Plan, PlannedDistribution, PlannedFile, Ref
from fundpipe.plan.preflight import Preflight
from fundpipe.submit.execute import SubmitResult
from fundpipe.submit.inbox import LeftAlone
from fundpipe.validate import FileReport, Issue

__all__ = ["FileDecision", "FileOutcome", "FileState", "IngestResult", "verdict"]

Outcome = Literal["processed", "rejected", "conflict", "incomplete", "refused"]

FileState = Literal[
    "processed", "rejected", "conflict", "duplicate", "incomplete", "refused", "planned"
]


@dataclass
class FileOutcome:
    """What happened to one file."""

    source_file: str
    file_hash: str
    state: FileState
    rows: int = 0
    distributions: int = 0
    total_cents: int = 0
    payment_states: dict[str, int] = field(default_factory=dict)
    message: str | None = None
    moved_to: Path | None = None
    #: what a roster holds: "entities", "contacts", "payment_instructions" → rows (None for a
    #: file without a roster sheet)
    roster: dict[str, int] | None = None
    #: the error report written beside `moved_to` for a file with row errors: CSV, then XLSX
    error_reports: tuple[Path, ...] = ()

    @property
    def error_report(self) -> Path | None:
        """The error report an analyst opens (the XLSX), None when none was written."""
        return next((p for p in self.error_reports if p.suffix == ".xlsx"), None)


@dataclass
class IngestResult:
    """The outcome of one `ingest` call."""

    files: list[FileOutcome] = field(default_factory=list)
    plan: Plan | None = None
    preflight: Preflight | None = None
    dry_run: bool = False
    submit: SubmitResult | None = None
    #: what the run could not do but did not need (optional operations, associations), in words
    warnings: list[str] = field(default_factory=list)
    #: the client's notes (e.g. the body form it switched to), in words
    notes: list[str] = field(default_factory=list)
    #: the service objects' `livemode` (None when none was seen)
    livemode: bool | None = None
    #: the inbox entries fundpipe does not read, each with its reason (a link, a folder, …)
    left_alone: list[LeftAlone] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 all done; 1 a file was rejected, refused or in conflict; 3 outcomes still unknown
        (the table is ``fundpipe.errors.OUTCOME_EXIT_CODES``)."""
        return int(exit_code_of(f.state for f in self.files))

    def by_state(self, state: FileState) -> list[FileOutcome]:
        """The files that ended in ``state``."""
        return [f for f in self.files if f.state == state]

    def __repr__(self) -> str:
        # short on purpose: asyncio.run() formats the result it returns (Python 3.11), and the
        # dataclass repr of a 300k-payment plan was two 240 MB strings at the night's peak RSS
        files = ", ".join(f"{f.source_file}: {f.state}" for f in self.files)
        return f"IngestResult(files=[{files}], dry_run={self.dry_run}, exit_code={self.exit_code})"


@dataclass(frozen=True)
class FileDecision:
    """What becomes of one planned file (not a night's verdict: that is
    `fundpipe.vocabulary.Verdict`)."""

    outcome: Outcome
    ledger_state: str
    #: ``processed`` or ``rejected`` (the inbox folder it moves to); None: it stays put
    destination: Literal["processed", "rejected"] | None
    message: str | None
    issues: list[Issue] = field(default_factory=list)
    #: the ledger state of its distributions that were never sent (None: nothing to mark)
    unsent_state: str | None = None


def verdict(
    planned: PlannedFile,
    source_file: str,
    plan: Plan,
    checked: Preflight,
    submitted: SubmitResult,
    sheets: SheetColumns | None = None,
) -> FileDecision:
    """The verdict on ``planned`` (dropped as ``source_file``) once ``plan`` was executed.

    ``sheets``: the file's headers as written and their letters, per sheet (`SheetColumns`),
    so a conflict names its column as the analyst sees it."""
    file_hash = planned.file_hash
    if planned.conflict:
        issues = [
            conflict_issue(d, source_file, sheets)
            for d in plan.distributions
            if d.file_hash == file_hash and d.action == "conflict"
        ]
        message = f"{len(issues)} distribution(s) in conflict: nothing sent"
        return FileDecision("conflict", "conflict", "rejected", message, issues, "conflict")
    if planned.excluded:
        issues = [
            Issue(
                source_file,
                issue.sheet,
                issue.row,
                issue.column,
                issue.value,
                issue.check,
                issue.message,
            )
            for issue in checked.errors
            if issue.file_hash == file_hash
        ]
        message = "; ".join(i.reason for i in issues) or "refused by pre-flight"
        return FileDecision("refused", "rejected", "rejected", message, issues, "failed")
    if file_hash in submitted.unknown:
        message = "outcome unknown, the next run settles it: " + submitted.unknown[file_hash]
        return FileDecision("incomplete", "processing", None, message)
    if file_hash in submitted.failed:
        message = "the service refused: " + submitted.failed[file_hash]
        issue = Issue(source_file, None, None, None, None, "service_refused", message)
        return FileDecision("rejected", "rejected", "rejected", message, [issue])
    held = plan.held_reasons(file_hash)
    return FileDecision("processed", "processed", "processed", "; ".join(held) or None)


@dataclass(frozen=True)
class SheetColumns:
    """A file's columns as the analyst sees them, per sheet ("" for CSV/Parquet): canonical
    column → the header as written, and → its letter (`FileReport.headers`/`letters`)."""

    headers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    letters: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, report: FileReport) -> SheetColumns:
        """The columns a validated report read."""
        return cls(report.headers, report.letters)

    def place(self, sheet: str | None, column: str) -> tuple[str, str | None]:
        """``column``'s header as written on ``sheet`` and its letter (None when not read)."""
        key = sheet or ""
        return self.headers.get(key, {}).get(column, column), self.letters.get(key, {}).get(column)


def conflict_issue(
    d: PlannedDistribution, source_file: str, sheets: SheetColumns | None = None
) -> Issue:
    """A distribution in conflict as an error row: its own first differing row, the column
    that differs as written and its letter, what differs on both sides."""
    columns = sheets or SheetColumns()
    own = d.payments[0] if d.payments else None
    sheet = own.sheet if own else None
    row = d.conflict_row or (own.row if own else None)
    column = d.conflict_column or "external_reference"
    written, letter = columns.place(sheet, column)
    value: str | None = d.external_reference
    if d.conflict_column is not None and own is not None:
        at = next((p for p in d.payments if p.row == row), own)
        shown = {
            "entity": at.entity.key if isinstance(at.entity, Ref) else at.entity,
            "amount": format_cents(at.amount_cents),
            "currency": at.currency,
            "distribution_date_override": at.distribution_date_override,
            "distribution_name": d.name,
            "vehicle": d.vehicle,
            "distribution_date": d.distribution_date,
            "distribution_timezone": d.distribution_timezone,
        }
        value = shown.get(column, d.external_reference)
    where = d.existing_id or "another file of this run"
    return Issue(
        source_file,
        sheet,
        row,
        written,
        value,
        "distribution_conflict",
        f"distribution {d.external_reference} already exists at the service as {where} and "
        f"does not match ({d.reason}); nothing of this file was sent — resolve it by hand",
        letter,
    )


def first_reasons(report: FileReport, limit: int = 3) -> str:
    """The first errors of a rejected file for a run's one-line summary:
    `: row 3 Amount ($) 'abc': reason; …` — the first errors, for a run's one-line summary."""
    parts = []
    for issue in report.errors[:limit]:
        where = " ".join(
            p for p in (f"row {issue.row}" if issue.row else "", issue.column or "") if p
        )
        value = f" {issue.value!r}" if issue.value not in (None, "") else ""
        parts.append(f"{where}{value}: {issue.reason}".strip(": ").strip())
    more = f"; and {len(report.errors) - limit} more" if len(report.errors) > limit else ""
    return (": " + "; ".join(parts) + more) if parts else ""
