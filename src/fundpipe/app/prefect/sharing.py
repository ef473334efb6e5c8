"""The night's reports on the shared reports location (`FUNDPIPE_REPORTS_URL`), for the flows.

`publish_org` is called by an organization's night after its reports are written: it publishes
them with the night's facts (`fundpipe.reports.publish`). `morning` is called by the parent
`nightly` run once every organization's night ended: it builds the morning view across them
(`fundpipe.reports.morning`) and links it from an artifact. Without `FUNDPIPE_REPORTS_URL` both
do nothing, and the artifacts say the reports stayed on the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fundpipe.config import Organization, Settings

if TYPE_CHECKING:
    from fundpipe.app.prefect.nightsummary import OrgNight, OrgRow
    from fundpipe.reports.publish import Published

__all__ = ["MORNING_KEY", "morning", "publish_org"]

#: Key of the parent run's link artifact to the morning workbook.
MORNING_KEY = "fundpipe-morning"


def publish_org(org: Organization, night: OrgNight, settings: Settings) -> Published | None:
    """Publish one organization's night (its reports, error reports and facts); the folder it
    went to and each local file's URL, or None without `FUNDPIPE_REPORTS_URL`."""
    from fundpipe.app.prefect import oncall
    from fundpipe.reports.publish import publish_night

    if not settings.reports_url or not night.workbook:
        return None
    processed = night.in_state("processed")
    errors = [oncall.error_report_of(f) for f in night.rejected]
    facts = {
        "organization": org.folder,
        "name": org.name or "",
        "as_of": night.as_of.isoformat(),
        "files": len(night.files),
        "rejected_files": [Path(f.source_file).name for f in night.rejected],
        "distributions": sum(f.distributions for f in processed),
        "submitted_cents": sum(f.total_cents for f in processed),
        "exceptions": [
            {
                "id": e.id,
                "state": e.state,
                "what": e.what,
                "amount": e.amount,
                "what_to_do": e.what_to_do,
            }
            for e in night.exceptions
        ],
    }
    return publish_night(
        settings.reports_url,
        settings.reports_folder,
        Path(night.workbook).parent,
        [Path(e) for e in errors if e],
        facts,
    )


def morning(settings: Settings, rows: Sequence[OrgRow], as_of: str | None) -> str | None:
    """Build the morning view from every organization's published night, write it to the
    shared location, link it from the `fundpipe-morning` artifact; its workbook's URL (None
    without `FUNDPIPE_REPORTS_URL`)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from prefect import get_run_logger
    from prefect.artifacts import create_link_artifact

    from fundpipe.reports.morning import OrgNight as MorningNight
    from fundpipe.reports.morning import (
        build_morning_view,
        describe,
        write_morning_view,
    )

    if not settings.reports_url:
        return None
    day = as_of or datetime.now(ZoneInfo(settings.nightly_timezone)).date().isoformat()
    nights = [
        MorningNight(
            organization=r.organization,
            name=r.name,
            state=r.state,
            message=r.message,
            published=r.report_folder or None,
        )
        for r in rows
    ]
    view = build_morning_view(day, nights)
    written = write_morning_view(settings.reports_url, view)
    get_run_logger().info("%s; workbook: %s", describe(view), written["workbook"])
    create_link_artifact(
        link=written["workbook"],
        link_text=f"Morning view {day}: every organization (morning.xlsx)",
        key=MORNING_KEY,
        description=f"One row per organization; Parquet: {written['parquet']}",
    )
    return written["workbook"]
