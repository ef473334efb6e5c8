"""The night's reports on the shared reports location (`FUNDPIPE_REPORTS_URL`), for the flows.

`publish_org` is called by an organization's night after its reports are written: it publishes
them with the night's facts (`fundpipe.reports.publish`). `morning` is called by the parent
`nightly` run once every organization's night ended: it builds the morning view across them
(`fundpipe.morning`) and links it from an artifact. Without `FUNDPIPE_REPORTS_URL` both
do nothing, and the artifacts say the reports stayed on the worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fundpipe.config import Organization, Settings

if TYPE_CHECKING:
    from fundpipe.nights import Nights, OrgNight
    from fundpipe.reports import Published

__all__ = ["MORNING_KEY", "morning", "publish_org"]

#: Key of the parent run's link artifact to the morning workbook.
MORNING_KEY = "fundpipe-morning"


def publish_org(org: Organization, night: OrgNight, settings: Settings) -> Published | None:
    """Publish one organization's night (its reports, error reports and facts); the folder it
    went to and each local file's URL, or None without `FUNDPIPE_REPORTS_URL`."""
    from fundpipe.morning import PublishedNight
    from fundpipe.reports import publish_night

    if not settings.local.reports_url or not night.workbook:
        return None
    # each rejected file's error reports: the CSV, and the workbook its alert links
    errors = [str(p) for f in night.rejected for p in f.error_reports]
    record = PublishedNight.of(org.folder, org.name or "", night)
    return publish_night(
        settings.local.reports_url,
        settings.local.reports_folder,
        Path(night.workbook).parent,
        [Path(e) for e in errors if e],
        record.as_json(),
    )


def morning(settings: Settings, nights: Nights) -> str | None:
    """Build the morning view from every organization's published night, write it to the
    shared location, link it from the `fundpipe-morning` artifact where a browser can open it
    (`links.openable`), else show its path as text; its workbook's URL, or its path when no
    link opens (None without `FUNDPIPE_REPORTS_URL`)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from prefect import get_run_logger
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    from fundpipe.app.prefect.artifacts import NO_LINKS
    from fundpipe.app.prefect.links import markdown, openable, where
    from fundpipe.morning import build_morning_view, describe, write_morning_view

    if not settings.local.reports_url:
        return None
    day = (
        nights.as_of
        or datetime.now(ZoneInfo(settings.orchestration.nightly_timezone)).date().isoformat()
    )
    view = build_morning_view(day, nights.rows)
    written = write_morning_view(settings.local.reports_url, view)
    get_run_logger().info("%s; workbook: %s", describe(view), written.workbook)
    title = f"Morning view {day}: every organization (morning.xlsx)"
    url = openable(written.workbook, settings.local.reports_url, settings.local.reports_public_url)
    if url:
        create_link_artifact(
            link=url,
            link_text=title,
            key=MORNING_KEY,
            description=f"One row per organization; Parquet: {written.parquet}",
        )
        return url
    # a folder or an s3:// URL opens nothing in a browser: the path as text, on the shared
    # reports location (the same on every machine)
    create_markdown_artifact(
        markdown=f"# {title}\n\n"
        + markdown("morning.xlsx", where(written.workbook, None, settings.local.reports_url, None))
        + f"\n- Parquet: `{written.parquet}`\n\n{NO_LINKS}\n",
        key=MORNING_KEY,
        description="One row per organization: where the morning view is",
    )
    return written.workbook
