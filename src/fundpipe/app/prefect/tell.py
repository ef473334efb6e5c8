"""Tell the night's story through Prefect: INFO lines on the run logger, and the events the
alerts react to (lines and payloads from `fundpipe.app.prefect.oncall`, scrubbed by its `plain`).

Called by the flows after each step, in the flow run (so the lines reach the run's Logs tab on
the server, whatever the console shows).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import get_run_logger
from prefect.events import emit_event

from fundpipe.app.prefect import oncall
from fundpipe.config import DEMO_ORG_ID, Settings

if TYPE_CHECKING:
    from fundpipe.app.prefect.links import Where
    from fundpipe.app.prefect.verdict_state import VerdictLine
    from fundpipe.nights import OrgNight
    from fundpipe.reconcile import ReconcileResult
    from fundpipe.submit import FileOutcome, IngestResult
    from fundpipe.sync import SyncResult
    from fundpipe.vocabulary import ExceptionRecord


def _secrets(settings: Settings) -> list[str | None]:
    secret = settings.service.client_secret
    return [secret.get_secret_value() if secret is not None else None]


#: The organization a run over several organizations is telling of (its label), so that each
#: of its lines names it; None in a run of one organization.
TELLING_OF: ContextVar[str | None] = ContextVar("fundpipe_telling_of", default=None)


def _say(settings: Settings, lines: list[str]) -> None:
    logger = get_run_logger()
    of = TELLING_OF.get()
    for line in lines:
        logger.info(oncall.plain(f"{of}: {line}" if of else line, _secrets(settings)))


#: The name people know the organization of this night by (its run sets it), for the events'
#: payloads: every alert's subject names it.
NAMED: ContextVar[str | None] = ContextVar("fundpipe_named", default=None)


def _emit(settings: Settings, event: tuple[str, dict[str, str], dict[str, Any]]) -> None:
    name, resource, payload = oncall.safe_event(event, _secrets(settings))
    known = NAMED.get()
    if known and "organization" in payload and "name" not in payload:
        payload = {**payload, "name": known}
    emit_event(event=name, resource=resource, payload=payload, related=oncall.related_of(name))


def organization(settings: Settings) -> str:
    """The organization a night acts for (the demo organization of the embedded sandbox)."""
    return settings.service.org_id or DEMO_ORG_ID


def tell_ingest(ingested: IngestResult, settings: Settings, *, alert: bool = True) -> None:
    """One line per file and one for the step; a `fundpipe.file.rejected` event per rejection
    (``alert`` False: not yet — a night tells them once its reports are published, with the
    link: `tell_incidents`)."""
    lines = [oncall.file_line(f) for f in ingested.files] + [oncall.ingest_line(ingested)]
    _say(settings, lines + oncall.left_alone_lines(ingested))
    if alert:
        tell_rejected(ingested.by_state("rejected"), settings)


def tell_rejected(
    files: Sequence[FileOutcome], settings: Settings, night: OrgNight | None = None
) -> None:
    """A `fundpipe.file.rejected` event per rejected file, saying where its error report is
    (`.errors.xlsx`): a link where one opens (`links`: an http(s) reports location, or
    FUNDPIPE_REPORTS_PUBLIC_URL over it), else its path and the machine it is on; ``night``:
    the night that published it."""
    for f in files:
        place = _where(settings, oncall.error_workbook_of(f), night)
        report = place.text() if place is not None else None
        _emit(settings, oncall.rejected_event(f, organization(settings), report))


def _where(settings: Settings, path: str | Path | None, night: OrgNight | None) -> Where | None:
    """Where a report of the night is for a person (`links.where`): its published location
    (a link if it opens), else its path on this machine."""
    from fundpipe.app.prefect.links import where

    if not path:
        return None
    published = (night.url_of(path) if night is not None else None) or oncall.report_url(
        settings.local.reports_url, path, settings.local.reports_folder
    )
    return where(published, path, settings.local.reports_url, settings.local.reports_public_url)


def tell_incidents(night: OrgNight, settings: Settings) -> None:
    """A night's alerts, once its reports are published (so each links its report where a
    link opens): a `fundpipe.file.rejected` per rejected file (its error report), a
    `fundpipe.exception.opened` per exception opened tonight (the night's workbook)."""
    tell_rejected(night.rejected, settings, night)
    place = _where(settings, night.workbook, night)
    workbook = place.text() if place is not None else None
    for exception in night.opened_exceptions:
        _emit(settings, oncall.opened_event(exception, organization(settings), workbook))


def tell_sync(synced: SyncResult, settings: Settings) -> None:
    """The sync step's counts."""
    _say(settings, [oncall.sync_line(synced)])


def tell_reconcile(
    reconciled: ReconcileResult,
    exceptions: Sequence[ExceptionRecord],
    settings: Settings,
    *,
    alert: bool = True,
) -> None:
    """The reconcile step's line and one per exception (`fundpipe.night.exceptions_of`); a
    `fundpipe.exception.opened` event per exception opened tonight (``alert`` False: a night
    tells them with its workbook's link, `tell_incidents`)."""
    _say(
        settings,
        [oncall.reconcile_line(reconciled)] + [oncall.exception_line(e) for e in exceptions],
    )
    if not alert:
        return
    for exception in oncall.opened(exceptions):
        _emit(settings, oncall.opened_event(exception, organization(settings)))


def tell_night_failed(
    org: str, name: str, why: str, host: str | None, what_to_do: str, settings: Settings
) -> None:
    """One organization's night failed: say it, and emit `fundpipe.night.failed` (its one
    alert, and the missed-night alert's sign that this night was told already)."""
    line = f"{name}: the night failed — {why}" + (f" (service {host})" if host else "")
    get_run_logger().error(oncall.plain(line, _secrets(settings)))
    _emit(settings, oncall.failed_event(org, name, why, host, what_to_do))


def tell_late(
    event_name: str,
    org: str,
    name: str,
    deadline: datetime,
    settings: Settings,
    verdict: str = "",
) -> None:
    """A night past its ``deadline``: `fundpipe.night.started-late` (a Late run taken after its
    missed-night alert: its window closes at once) or `fundpipe.night.completed-late` (the one
    message that closes the incident, with the night's ``verdict``), for one organization."""
    when = f"{deadline:%H:%M} ({deadline.tzinfo})"
    started = event_name == oncall.NIGHT_STARTED_LATE
    get_run_logger().warning(
        oncall.plain(
            f"{name}: the night {'started' if started else 'completed'} after its {when} "
            "deadline" + (f": {verdict}" if verdict else ""),
            _secrets(settings),
        )
    )
    _emit(settings, oncall.late_event(event_name, org, name, when, verdict))


def tell_needs_a_person(lines: Sequence[VerdictLine], settings: Settings) -> None:
    """Each verdict that needs a person as a WARNING (the run's Logs tab marks it): the
    organization by name, then what, how much and by when (``Alder Capital (org_a): NEEDS A
    PERSON: Vehicle short of funds …, $4,500.00, by 2026-12-15``)."""
    from fundpipe.vocabulary import Verdict

    logger = get_run_logger()
    for line in lines:
        if line.verdict is Verdict.NEEDS_A_PERSON:
            logger.warning(oncall.plain(line.sentence(), _secrets(settings)))


def tell_night(night: OrgNight, settings: Settings, sentence: str) -> None:
    """Where the reports are, the night in one sentence, and `fundpipe.night.completed` (its
    counts read from the typed `night`)."""
    import socket

    from fundpipe.app.prefect.links import openable

    published = oncall.report_url(
        settings.local.reports_url, night.workbook, settings.local.reports_folder
    )
    url = (
        openable(published, settings.local.reports_url, settings.local.reports_public_url)
        or published
    )
    reports_dir = night.workbook.parent if night.workbook else settings.local.reports_folder
    line = oncall.reports_line(reports_dir, url, socket.gethostname())
    _say(settings, [line, sentence])
    _emit(settings, oncall.night_event(night, organization(settings)))
