"""Tell the night's story through Prefect: INFO lines on the run logger, and the events the
alerts react to (lines and payloads from `fundpipe.app.prefect.oncall`, scrubbed by its `plain`).

Called by the flows after each step, in the flow run (so the lines reach the run's Logs tab on
the server, whatever the console shows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect import get_run_logger
from prefect.events import emit_event

from fundpipe.app.prefect import oncall
from fundpipe.config import DEMO_ORG_ID, Settings

if TYPE_CHECKING:
    from fundpipe.night import NightResult


def _secrets(settings: Settings) -> list[str | None]:
    secret = settings.client_secret
    return [secret.get_secret_value() if secret is not None else None]


def _say(settings: Settings, lines: list[str]) -> None:
    logger = get_run_logger()
    for line in lines:
        logger.info(oncall.plain(line, _secrets(settings)))


def _emit(settings: Settings, event: tuple[str, dict[str, str], dict[str, Any]]) -> None:
    name, resource, payload = oncall.safe_event(event, _secrets(settings))
    emit_event(event=name, resource=resource, payload=payload)


def organization(settings: Settings) -> str:
    """The organization a night acts for (the demo organization of the embedded sandbox)."""
    return settings.org_id or DEMO_ORG_ID


def tell_ingest(ingested: dict[str, Any], settings: Settings) -> None:
    """One line per file and one for the step; a `fundpipe.file.rejected` event per rejection."""
    files = ingested.get("files", [])
    _say(settings, [oncall.file_line(f) for f in files] + [oncall.ingest_line(ingested)])
    for f in files:
        if f["state"] == "rejected":
            _emit(settings, oncall.rejected_event(f, organization(settings)))


def tell_sync(synced: dict[str, Any], settings: Settings) -> None:
    """The sync step's counts."""
    _say(settings, [oncall.sync_line(synced)])


def tell_reconcile(reconciled: dict[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """The reconcile step's line and one per exception; a `fundpipe.exception.opened` event per
    exception opened tonight. Returns the exceptions (the lifecycle's columns)."""
    from fundpipe.app.outcomes import exception_lines

    exceptions = exception_lines(reconciled)
    _say(
        settings,
        [oncall.reconcile_line(reconciled)] + [oncall.exception_line(e) for e in exceptions],
    )
    for exception in oncall.opened(exceptions):
        _emit(settings, oncall.opened_event(exception, organization(settings)))
    return exceptions


def tell_night(
    night: NightResult,
    summary: dict[str, Any],
    exceptions: list[dict[str, Any]],
    settings: Settings,
    sentence: str,
) -> None:
    """Where the reports are, the night in one sentence, and `fundpipe.night.completed` (its
    counts read from the typed `night`)."""
    workbook = summary.get("reports", {}).get("workbook")
    url = oncall.report_url(settings.reports_url, workbook, settings.reports_folder)
    out_dir = str(_parent(workbook)) if workbook else None
    _say(settings, [oncall.reports_line({"out_dir": out_dir}, url), sentence])
    _emit(settings, oncall.night_event(night, exceptions, organization(settings)))


def _parent(path: str) -> Any:
    from pathlib import Path

    return Path(path).parent
