"""Validate dropped sheets: each file is accepted whole or rejected whole with its `Issue`s.

`validate_files(paths)` reads every file (`fundpipe.sheets.readers`), matches each sheet's header
to a template (distribution or roster), parses money and date-times, runs the template's pandera
model and the cross-row rules, and finally resolves every distribution's entities across the
whole drop. It never raises on bad input: problems are data (`FileReport.errors`).

Its exit code: `validate_exit_code`; its rendering lives in `fundpipe.app` (JSON in
`outcomes.validation_dict`, tables in `render.render_validation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.errors import exit_code_of
from fundpipe.progress import NullProgress, ProgressSink
from fundpipe.sheets.readers import AroundCells, RawSheet, ReadLimits, read_file
from fundpipe.sheets.templates import best_match, load_templates
from fundpipe.sheets.written_dates import DateOrder
from fundpipe.validate.collect import IssueCollector
from fundpipe.validate.distribution import check_distributions
from fundpipe.validate.issues import FileReport, Issue, column_letter, mask_account_number
from fundpipe.validate.payments import ParsedDistributions, canonical_payments
from fundpipe.validate.roster import check_roster, roster_frames

__all__ = [
    "FileReport",
    "Issue",
    "ReadLimits",
    "mask_account_number",
    "validate_exit_code",
    "validate_files",
]

#: Most row-level issues kept per sheet (the rest are counted in one extra issue).
MAX_ISSUES_PER_SHEET = 50_000

_UNREADABLE = {
    "file_unreadable",
    "file_not_text",
    "file_encoding",
    "file_too_large",
    "file_type_unknown",
    "xlsx_corrupt",
    "xlsx_protected",
    "xlsx_too_large",
    "parquet_corrupt",
}


def validate_files(
    paths: Iterable[Path | str],
    *,
    known_entity_refs: Iterable[str] | None = None,
    limits: ReadLimits | None = None,
    progress: ProgressSink | None = None,
    date_order: DateOrder | None = None,
    around_cells: AroundCells = nullcontext,
) -> list[FileReport]:
    """Validate every file of one drop; one `FileReport` per path, in order.

    ``around_cells``: the entry point's process-wide choice around an XLSX sheet's cells
    (`fundpipe.sheets.frames.AroundCells`; the default changes nothing).

    ``date_order``: the order the organization declares for dates with day and month in figures
    (``Settings.date_order``, ``FUNDPIPE_DATE_ORDER``): ``mdy``, ``dmy``, or None — then a date
    such as ``03/04/2027`` that neither the value nor its column settles is a row error.

    ``progress`` hears one step per file read and validated (the CLI draws a bar from it).

    ``known_entity_refs``: external references of entities that already exist at the service.
    When None, a distribution row naming an entity reference that no roster in this drop
    defines gets a warning ("will be looked up at the service"); when given, it is an error.
    """
    files = [Path(p) for p in paths]
    sink = progress or NullProgress()
    sink.start("validate", "read + validate sheets", total=len(files))
    reports = []
    for path in files:
        reports.append(_validate_one(path, limits or ReadLimits(), date_order, around_cells))
        sink.advance("validate")
    roster_refs: set[str] = set()
    for report in reports:
        if report.valid and report.entities is not None:
            roster_refs.update(report.entities["external_reference"].dropna().astype(str))
    known = None if known_entity_refs is None else set(known_entity_refs)
    for report in reports:
        _resolve_entities(report, roster_refs, known)
    return reports


def _validate_one(
    path: Path, limits: ReadLimits, date_order: DateOrder | None, around_cells: AroundCells
) -> FileReport:
    report = FileReport(file=str(path))
    result = read_file(path, limits, around_cells=around_cells)
    report.content_sha256 = result.sha256
    for check, reason, sheet in result.warnings:
        report.file_warning(check, reason, sheet=sheet)
    for check, reason, sheet in result.errors:
        report.file_error(check, reason, sheet=sheet)
        report.unreadable = report.unreadable or check in _UNREADABLE
    if result.errors:
        return report
    if not result.sheets:
        report.file_error("file_empty", "the workbook has no sheets")
        return report
    recognised = 0
    several = len(result.sheets) > 1
    for raw in result.sheets:
        if raw.name is not None:
            report.sheets.append(raw.name)
        # a bug in validation is not the file's fault: it reaches the edge (exit 5, internal
        # error, its traceback in the run's log), never a rejected file
        recognised += _validate_sheet(report, raw, several=several, date_order=date_order)
    if recognised == 0 and report.valid:
        report.file_error(
            "template_unknown",
            "no sheet has a distribution or roster header in row 1 "
            "(see schemas/templates/distribution_sheet.md and roster_sheet.md)",
        )
    return report


def _validate_sheet(
    report: FileReport, raw: RawSheet, *, several: bool, date_order: DateOrder | None = None
) -> int:
    """Validate one sheet into ``report``; 1 if it matched a template, else 0."""
    sheet = raw.name
    if not any(raw.header):
        if several:
            report.file_warning(
                "sheet_ignored",
                f"sheet {sheet!r} is empty or has no header in row 1; ignored",
                sheet=sheet,
            )
        else:
            report.file_error("file_empty", "the file is empty (no header row)", sheet=sheet)
            return 1
        return 0
    match = best_match(raw.header, load_templates())
    if match.score[0] == 0 or (several and match.missing and match.score[0] < 0.5):
        if several:
            report.file_warning(
                "sheet_ignored",
                f"sheet {sheet!r} is not a distribution or roster sheet; ignored",
                sheet=sheet,
            )
            return 0
        expected = ", ".join(load_templates()["distribution"].required)
        report.file_error(
            "template_unknown",
            f"the header is not a distribution or roster header; a distribution sheet needs {expected}",
            sheet=sheet,
        )
        return 1
    report.templates[sheet or ""] = match.template.name
    if match.missing:
        report.file_error(
            "required_columns",
            f"missing required column(s) for a {match.template.title.lower()}: "
            + ", ".join(match.missing),
            sheet=sheet,
        )
    for name, spellings in match.duplicates.items():
        where = [
            f"{text!r} ({column_letter(pos)})"
            for pos, text in enumerate(raw.header)
            if text in spellings
        ]
        report.file_error(
            "duplicate_columns",
            f"columns {', '.join(where)} all mean {name}; keep one",
            sheet=sheet,
        )
    for position, text in match.unknown:
        if text:
            report.warnings.append(
                Issue(
                    report.file,
                    sheet,
                    1,
                    text,
                    None,
                    "unknown_column",
                    "this column is not part of the template and was ignored",
                    column_letter(position),
                )
            )
    if match.missing or match.duplicates:
        return 1
    report.rows += len(raw)
    if len(raw) == 0:
        report.file_error("no_rows", "the sheet has a header but no data rows", sheet=sheet)
        return 1
    issues = IssueCollector()
    for row, pos, check, reason in raw.cell_errors:
        cell_column = next((c for c, p in match.positions.items() if p == pos), None)
        if cell_column is None and check == "formula_without_value":
            continue  # a formula in a column the template ignores
        issues.add_frame(
            pd.DataFrame(
                {
                    "row": [row],
                    "column": cell_column,
                    "value": None,
                    "check": check,
                    "reason": reason,
                }
            )
        )
    parsed: ParsedDistributions | pd.DataFrame
    if match.template.name == "distribution":
        # the sheet stays in Arrow; it is checked a slice at a time (`check_distributions`),
        # which is handed its columns and lets go of each once it has no more use for it
        table = raw.take_table()
        columns = {
            column: table.column(f"c{at}")
            for column in match.template.column_names
            if (at := match.positions.get(column)) is not None
        }
        del table
        parsed = check_distributions(
            columns, raw.rows, issues, excel=raw.excel, date_order=date_order
        )
    else:
        body = raw.body
        absent = pd.Series(pd.NA, index=body.index, dtype="str")
        frame = pd.DataFrame(
            {
                column: body[f"c{at}"]
                if (at := match.positions.get(column)) is not None
                else absent
                for column in match.template.column_names
            },
            index=body.index,
            copy=False,
        )
        parsed = check_roster(frame, issues)
    headers = dict(match.headers)
    report.headers[sheet or ""] = headers
    letters = {column: column_letter(pos) for column, pos in match.positions.items()}
    report.letters[sheet or ""] = letters
    notes = parsed.notes if isinstance(parsed, ParsedDistributions) else []
    for column, value, check, reason in notes:
        report.warnings.append(
            Issue(
                report.file,
                sheet,
                None,
                headers.get(column, column),
                value,
                check,
                reason,
                letters.get(column),
            )
        )
    found = issues.to_issues(
        report.file, sheet, headers, limit=MAX_ISSUES_PER_SHEET, letters=letters
    )
    if len(issues) > MAX_ISSUES_PER_SHEET:
        found.append(
            Issue(
                report.file,
                sheet,
                None,
                None,
                None,
                "too_many_issues",
                f"{len(issues) - MAX_ISSUES_PER_SHEET:,} more problems were not listed; fix the ones above first",
            )
        )
    for issue in found:
        report.add_error(issue)
    if isinstance(parsed, ParsedDistributions):
        if parsed.read_cents is not None:  # no amount read: no total, not a misleading $0.00
            report.read_cents = (report.read_cents or 0) + parsed.read_cents
        if found:
            # the distinct references only: a million rows name a few thousand distributions
            read = pc.unique(parsed.text["external_reference"]).drop_null().to_pylist()
            stripped = (str(r).strip() for r in read)
            report.references = sorted({*report.references, *(r for r in stripped if r)})
            # the file is rejected, but its entity references are still checked, so that
            # every error is reported at once (the frame is dropped once they are)
            report.distributions = _concat(report.distributions, _entity_refs(parsed, sheet))
            return 1
    elif found:
        return 1
    source: str = report.file
    if isinstance(parsed, ParsedDistributions):
        payments = canonical_payments(parsed, source_file=source, sheet=sheet)
        report.distributions = _concat(report.distributions, payments)
    else:
        entities, contacts, instructions = roster_frames(parsed, source_file=source, sheet=sheet)
        report.entities = _concat(report.entities, entities)
        report.contacts = _concat(report.contacts, contacts)
        report.payment_instructions = _concat(report.payment_instructions, instructions)
    return 1


def _entity_refs(parsed: ParsedDistributions, sheet: str | None) -> pd.DataFrame:
    """The rows of a rejected distribution sheet whose entity was read: what the check needs."""
    # Only the rows naming an entity by its reference: the only ones `_check_entities` looks
    # up (an ent_ id needs no resolving).
    entity = parsed.text["entity"]
    named = np.asarray(pc.is_valid(entity).to_numpy(zero_copy_only=False), dtype=bool)
    where = np.flatnonzero(parsed.entity_is_ref & named)
    return pd.DataFrame(
        {
            "sheet": [sheet] * len(where),
            "row": parsed.rows[where].astype("int64"),
            "entity": np.array(entity.take(pa.array(where)).to_pylist(), dtype=object),
            "entity_is_ref": np.ones(len(where), dtype=bool),
        }
    )


def _concat(current: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    return new if current is None else pd.concat([current, new], ignore_index=True)


def _resolve_entities(report: FileReport, roster_refs: set[str], known: set[str] | None) -> None:
    _check_entities(report, roster_refs, known)
    if not report.valid:
        report.distributions = None


def _check_entities(report: FileReport, roster_refs: set[str], known: set[str] | None) -> None:
    payments = report.distributions
    if payments is None:
        return
    is_ref = payments["entity_is_ref"].to_numpy(dtype=bool)
    if not is_ref.any():
        return
    # Plain arrays: indexing the payment frame by a mask costs more than the check on small drops.
    entities = payments["entity"].to_numpy()[is_ref]
    missing = ~pd.Index(entities).isin(list(roster_refs | (known or set())))
    header = "entity"
    for sheet, row, entity in zip(
        payments["sheet"].to_numpy()[is_ref][missing],
        payments["row"].to_numpy()[is_ref][missing],
        entities[missing],
        strict=True,
    ):
        name = None if sheet is None else str(sheet)
        written = report.headers.get(name or "", {}).get("entity", header)
        letter = report.letters.get(name or "", {}).get("entity")
        where = (report.file, name, int(row), written, str(entity))
        if known is None:
            report.warnings.append(
                Issue(
                    *where,
                    "entity_resolvable",
                    "no roster in this drop defines this entity reference; it will be looked up at the service",
                    letter,
                )
            )
        else:
            report.add_error(
                Issue(
                    *where,
                    "entity_resolvable",
                    "no entity has this external reference, neither in this drop's roster nor at the service",
                    letter,
                )
            )


def validate_exit_code(reports: Sequence[FileReport]) -> int:
    """Exit code of a validation (``fundpipe.errors``): 0 all valid, 1 any rejected, 2 any
    input unreadable."""
    return exit_code_of(
        "unreadable" if r.unreadable else "valid" if r.valid else "invalid" for r in reports
    )
