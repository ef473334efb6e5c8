"""The night's reports on the shared reports location (`FUNDPIPE_REPORTS_URL`), for the flows.

`publish_org` is called by an organization's night after its reports are written: it publishes
them with the night's facts (`fundpipe.reports.publish`). `morning` is called by the parent
`nightly` run once every organization's night ended: it builds the morning view across them
(`fundpipe.reports.morning`) and links it from an artifact. Without `FUNDPIPE_REPORTS_URL` both
do nothing, and the artifacts say the reports stayed on the worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fundpipe.config import Organization, Settings

__all__ = ["MORNING_KEY", "morning", "publish_org"]

#: Key of the parent run's link artifact to the morning workbook.
MORNING_KEY = "fundpipe-morning"


def publish_org(
    org: Organization,
    summary: dict[str, Any],
    exceptions: list[dict[str, Any]],
    settings: Settings,
) -> dict[str, Any] | None:
    """Publish one organization's night (its reports, error reports and facts); the folder it
    went to and each local file's URL, or None without `FUNDPIPE_REPORTS_URL`."""
    from fundpipe.app.prefect import oncall
    from fundpipe.reports.publish import publish_night

    workbook = summary.get("reports", {}).get("workbook")
    if not settings.reports_url or not workbook:
        return None
    files = summary.get("files", [])
    processed = [f for f in files if f["state"] == "processed"]
    errors = [oncall.error_report_of(f) for f in files if f["state"] == "rejected"]
    facts = {
        "organization": org.folder,
        "name": org.name or "",
        "as_of": summary.get("as_of"),
        "files": len(files),
        "rejected_files": [Path(f["file"]).name for f in files if f["state"] == "rejected"],
        "distributions": sum(int(f.get("distributions") or 0) for f in processed),
        "submitted_cents": sum(int(f.get("total_cents") or 0) for f in processed),
        "exceptions": [
            {k: e.get(k) for k in ("id", "state", "what", "amount", "what_to_do")}
            for e in exceptions
        ],
    }
    published = publish_night(
        settings.reports_url,
        settings.reports_folder,
        Path(workbook).parent,
        [Path(e) for e in errors if e],
        facts,
    )
    return {"folder": published.folder, "urls": published.urls}


def morning(settings: Settings, rows: list[dict[str, Any]], as_of: str | None) -> str | None:
    """Build the morning view from every organization's published night, write it to the
    shared location, link it from the `fundpipe-morning` artifact; its workbook's URL (None
    without `FUNDPIPE_REPORTS_URL`)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from prefect import get_run_logger
    from prefect.artifacts import create_link_artifact

    from fundpipe.reports.morning import (
        OrgNight,
        build_morning_view,
        describe,
        write_morning_view,
    )

    if not settings.reports_url:
        return None
    day = as_of or datetime.now(ZoneInfo(settings.nightly_timezone)).date().isoformat()
    nights = [
        OrgNight(
            organization=r["organization"],
            name=r.get("name") or "",
            state=r["state"],
            message=r.get("message") or "",
            published=r.get("report_folder") or None,
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
