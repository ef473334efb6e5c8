"""The online checks (issue 43): a drop validated as the night would, against the service, read-only.

:func:`check_online` runs the offline checks (`fundpipe.validate`) with the entity references
the service knows, then plans the valid files against a snapshot of the service and runs the
pre-flight, and writes every finding into the file's `FileReport` as an error row (file,
sheet, Excel row, the column as written and its letter, value, reason): entities, contacts
and vehicles the service does not know, references that already exist there with other
content. Nothing is sent but reads — no create, no ledger write, no file moved — so the desk's
upload and ``fundpipe validate --online`` show every problem in one pass, before the night.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from fundpipe.config import Settings, require_service
from fundpipe.plan import FileInput, build_plan, references
from fundpipe.plan.preflight import PreflightIssue, preflight
from fundpipe.submit.binding import check_binding, learned_client
from fundpipe.submit.ingest import _run_sync
from fundpipe.submit.instructions import with_known_instructions
from fundpipe.submit.snapshot import (
    load_snapshot,
    only_organization,
    vehicles_of,
    with_distributions,
    with_vehicles,
)
from fundpipe.submit.verdicts import SheetColumns, conflict_issue
from fundpipe.validate import FileReport, Issue, validate_files
from fundpipe.warehouse import read_known

__all__ = ["OnlineCheck", "check_online"]

#: The pre-flight's column words → the template's canonical columns (for the header as written).
_PREFLIGHT_COLUMNS = {"Vehicle": "vehicle", "Entity ID": "entity"}


@dataclass(frozen=True)
class OnlineCheck:
    """What the online checks found: one report per file (offline and online problems alike),
    and what the service said that is not about one file."""

    reports: list[FileReport]
    warnings: list[str] = field(default_factory=list)


def check_online(
    settings: Settings,
    paths: Sequence[Path],
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> OnlineCheck:
    """Validate ``paths`` offline and online, read-only: the service is only read.

    ``settings`` must name a service (or ``transport`` replace it: tests pass the sandbox's
    ASGI app); raises `fundpipe.errors.ConfigurationError` otherwise. Client errors (the
    service unreachable, refused credentials) are raised as the client's errors.
    """
    require_service(settings, transport)
    return _run_sync(_check(settings, list(paths), transport))


async def _check(
    settings: Settings, paths: list[Path], transport: httpx.AsyncBaseTransport | None
) -> OnlineCheck:
    warnings: list[str] = []
    async with learned_client(settings, transport) as client:
        org_id = settings.service.org_id or await only_organization(client, warnings)
        check_binding(settings, org_id, bind=False)
        snap = await load_snapshot(client, org_id, known=read_known(settings.local.warehouse_file))
        reports = validate_files(
            paths,
            known_entity_refs=set(snap.state.entities_by_ref),
            date_order=settings.pipeline.date_order,
        )
        roster = {
            str(ref)
            for r in reports
            if r.valid and r.entities is not None
            for ref in r.entities["external_reference"].dropna()
        }
        for report, path in zip(reports, paths, strict=True):
            if not report.valid and not report.unreadable:
                _unknown_entities(report, path, snap.state, roster)
                report.errors.sort(key=lambda i: (i.sheet or "", i.row or 0))
        valid = [r for r in reports if r.valid]
        inputs = [
            FileInput(
                file_hash=r.content_sha256 or r.file,
                source_file=r.file,
                distributions=r.distributions,
                entities=r.entities,
                contacts=r.contacts,
                payment_instructions=r.payment_instructions,
            )
            for r in valid
        ]
        if not inputs:
            return OnlineCheck(reports, warnings)
        state = await with_distributions(client, snap, references(inputs))
        state = await with_vehicles(
            client, state, vehicles_of(inputs) | set(settings.service.vehicles)
        )
        state = await with_known_instructions(client, state, None, inputs)
    warnings.extend(state.warnings)
    plan = build_plan(inputs, state)
    # a file in conflict is still checked whole: the analyst hears of every problem at once
    whole = replace(plan, files=tuple(replace(f, conflict=False) for f in plan.files))
    checked = preflight(whole, state, require_funds=settings.pipeline.require_funds)
    for report, f in zip(valid, inputs, strict=True):
        columns = SheetColumns.of(report)
        for d in plan.distributions:
            if d.file_hash == f.file_hash and d.action == "conflict":
                report.add_error(conflict_issue(d, report.file, columns))
        for finding in checked.issues:
            if finding.file_hash != f.file_hash:
                continue
            issue = _preflight_issue(report.file, finding, columns)
            if finding.level == "error":
                report.add_error(issue)
            else:
                report.warnings.append(issue)
        report.warnings.extend(
            Issue(report.file, None, None, None, None, "held", reason)
            for reason in plan.held_reasons(f.file_hash)
        )
    for report in valid:  # the errors in row order, as the offline ones are
        report.errors.sort(key=lambda i: (i.sheet or "", i.row or 0))
    return OnlineCheck(reports, warnings)


def _preflight_issue(file: str, finding: PreflightIssue, columns: SheetColumns) -> Issue:
    """A pre-flight finding as an error row, its column as written and its letter."""
    letter = None
    written = finding.column
    if finding.column is not None:
        canonical = _PREFLIGHT_COLUMNS.get(finding.column, finding.column)
        written, letter = columns.place(finding.sheet, canonical)
    return Issue(
        file,
        finding.sheet,
        finding.row,
        written,
        finding.value,
        finding.check,
        finding.message,
        letter,
    )


def _unknown_entities(report: FileReport, path: Path, state: Any, roster: set[str]) -> None:
    """Add to a file already rejected offline the entities the service does not know, so the
    analyst hears of a typo such as ``ent_dmeo3`` in the same pass as the rest (a valid file
    hears of them from the pre-flight). A cell already in error is left as it is said."""
    from fundpipe.sheets.readers import read_file
    from fundpipe.validate import ENTITY_ID

    said = {(i.sheet, i.row, i.letter) for i in report.errors}
    service_id = re.compile(ENTITY_ID)
    for raw in read_file(path).sheets:
        key = raw.name or ""
        written = report.headers.get(key, {}).get("entity")
        letter = report.letters.get(key, {}).get("entity")
        if written is None or written not in raw.header:
            continue
        column = raw.body[f"c{raw.header.index(written)}"]
        for excel_row, value in zip(column.index.tolist(), column.tolist(), strict=True):
            row = int(excel_row)
            text = "" if value is None or value != value else str(value).strip()
            if not text or (raw.name, row, letter) in said:
                continue
            if service_id.fullmatch(text):
                if text in state.entity_ids:
                    continue
                reason = "the service has no entity with this id"
            elif text in state.entities_by_ref or text in roster:
                continue
            else:
                reason = (
                    "no entity has this external reference, neither in this drop's roster "
                    "nor at the service"
                )
            report.add_error(
                Issue(report.file, raw.name, row, written, text, "entity_exists", reason, letter)
            )
