"""Tell the night's story through Prefect: INFO lines on the run logger, and the events the
alerts react to (lines and payloads from `fundpipe.app.prefect.oncall`, scrubbed by its `plain`).

Called by the flows after each step, in the flow run (so the lines reach the run's Logs tab on
the server, whatever the console shows).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from prefect import get_run_logger
from prefect.events import emit_event

from fundpipe.app.prefect import oncall
from fundpipe.config import DEMO_ORG_ID, Settings

if TYPE_CHECKING:
    from fundpipe.night import NightException
    from fundpipe.nights import OrgNight
    from fundpipe.reconcile.views import ReconcileResult
    from fundpipe.submit.verdicts import IngestResult
    from fundpipe.sync.pull import SyncResult


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


def tell_ingest(ingested: IngestResult, settings: Settings) -> None:
    """One line per file and one for the step; a `fundpipe.file.rejected` event per rejection."""
    lines = [oncall.file_line(f) for f in ingested.files] + [oncall.ingest_line(ingested)]
    _say(settings, lines + oncall.left_alone_lines(ingested))
    for f in ingested.by_state("rejected"):
        _emit(settings, oncall.rejected_event(f, organization(settings)))


def tell_sync(synced: SyncResult, settings: Settings) -> None:
    """The sync step's counts."""
    _say(settings, [oncall.sync_line(synced)])


def tell_reconcile(
    reconciled: ReconcileResult, exceptions: Sequence[NightException], settings: Settings
) -> None:
    """The reconcile step's line and one per exception (`fundpipe.night.exceptions_of`); a
    `fundpipe.exception.opened` event per exception opened tonight."""
    _say(
        settings,
        [oncall.reconcile_line(reconciled)] + [oncall.exception_line(e) for e in exceptions],
    )
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
