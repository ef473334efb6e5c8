"""The night's Prefect artifacts, for a person who has the UI and not the worker's disk.

Every key ends in the organization's id (``fundpipe-exceptions-org-demo``), so the latest
artifact of a key is that organization's.

- ``fundpipe-run-summary``: markdown, with every report (and each rejected file's error
  report) as a link where a browser can open it (`fundpipe.app.prefect.links`: an ``http(s)``
  ``FUNDPIPE_REPORTS_URL``, or ``FUNDPIPE_REPORTS_PUBLIC_URL``), else as its path and the
  machine it is on — never a dead link;
- ``fundpipe-workbook``: a link to the published workbook (only where it opens);
- ``fundpipe-rejected-<file>``: a table of one rejected file's errors (values already masked);
- ``fundpipe-exceptions``: the exceptions, with the labels a person reads (Exception, State,
  Age (days), What, Amount, What to do), "What" and "What to do" cut to fit a 1600-pixel
  screen; the run summary lists each open one in full.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from fundpipe.app.prefect import links, oncall
from fundpipe.app.prefect.uiview import org_key, plain_exceptions, whole_exceptions
from fundpipe.config import Settings
from fundpipe.vocabulary import kind_words

if TYPE_CHECKING:
    from fundpipe.nights import OrgNight
    from fundpipe.submit import FileOutcome


def _where(settings: Settings, path: Path | str | None, night: OrgNight) -> links.Where | None:
    """Where a report is for a person: a link that opens, or its path and machine."""
    if not path:
        return None
    published = night.url_of(path) or oncall.report_url(
        settings.local.reports_url, path, settings.local.reports_folder
    )
    return links.where(
        published, path, settings.local.reports_url, settings.local.reports_public_url
    )


def _link(settings: Settings, path: Path | str | None, night: OrgNight) -> str | None:
    """The URL of a report a browser opens (None: no link would open)."""
    place = _where(settings, path, night)
    return place.url if place else None


#: Said under the reports when none of them is a link that opens.
NO_LINKS = (
    "No report here opens in a browser: set FUNDPIPE_REPORTS_URL to an http(s) location, or "
    "FUNDPIPE_REPORTS_PUBLIC_URL to the address the reports location is served at."
)


def rejected_key(file_name: str, org: str | None = None) -> str:
    """The artifact key of a rejected file's error table (lowercase letters, digits, dashes),
    with its organization's id when known."""
    slug = re.sub(r"[^a-z0-9]+", "-", Path(file_name).name.lower()).strip("-")
    if org:
        return org_key("fundpipe-rejected", org, slug)
    return f"fundpipe-rejected-{slug}"[:100]


def summary_markdown(night: OrgNight, name: str | None = None) -> str:
    """The run summary as the markdown of a Prefect artifact (its reports are linked by
    `summary_with_links`), titled by the organization's ``name`` when it has one."""
    from fundpipe.app.prefect.uiview import called

    who = called(night.organization, name) if night.organization else ""
    org = f" — {who}" if who else ""
    lines = [
        f"# fundpipe nightly run — {night.as_of.isoformat()}{org}",
        "",
        "| What | Value |",
        "|---|---|",
    ]
    lines += [f"| {label} | {value} |" for label, value in night.plain_facts()]
    if night.restored:
        lines += ["", "## Restored from the record first", "", f"- {night.restored}"]
    if night.rejected:
        lines += ["", "## Rejected files", ""]
        lines += [
            f"- `{f.source_file}` — {f.message or 'see its error report'}" for f in night.rejected
        ]
    if night.redropped:
        lines += ["", "## Files dropped again", ""]
        lines += [f"- `{f.source_file}` — {f.message}" for f in night.redropped]
    if night.warnings or night.notes:
        lines += ["", "## Warnings and notes", ""]
        lines += [f"- {w}" for w in [*night.warnings, *night.notes]]
    if night.exception_counts:
        lines += ["", "## Exceptions", "", "| Kind | Count |", "|---|---|"]
        lines += [f"| {kind_words(k)} | {v} |" for k, v in night.exception_counts.items()]
    whole = whole_exceptions(night.exceptions)
    if whole:
        # the exceptions table cuts its cells to fit the screen: here each one is whole
        lines += ["", "## Open exceptions, in full", "", *whole]
    lines += ["", "## Reports", ""]
    return "\n".join(lines) + "\n"


def summary_with_links(night: OrgNight, settings: Settings) -> str:
    """The run summary's markdown with every report as a link that opens, or as its path and
    the machine it is on."""
    places = {name: _where(settings, path, night) for name, path in night.reports.items()}
    text = summary_markdown(night, settings.service.org_name).rstrip("\n")
    # a view's label in words ("parquet balance movement"), not its file stem
    lines = [text, ""] + [
        links.markdown(name.replace("_", " "), place) for name, place in places.items()
    ]
    if places and not any(p and p.url for p in places.values()):
        lines += ["", NO_LINKS]
    errors = [
        (
            f"{Path(f.source_file).name}.errors.csv",
            _where(settings, oncall.error_report_of(f), night),
        )
        for f in night.rejected
    ]
    if errors:
        lines += ["", "## Error reports", ""]
        lines += [links.markdown(name, place) for name, place in errors]
    return "\n".join(lines) + "\n"


def publish_artifacts(night: OrgNight, settings: Settings) -> None:
    """Attach the night's artifacts (see the module docstring) to the current run; their keys
    carry the organization's id."""
    from fundpipe.app.prefect.tell import organization

    org = organization(settings)
    create_markdown_artifact(
        markdown=summary_with_links(night, settings),
        key=org_key("fundpipe-run-summary", org),
        description="fundpipe nightly run: files, distributions, totals, exceptions, reports",
    )
    url = _link(settings, night.workbook, night)
    if url:
        create_link_artifact(
            link=url,
            link_text=f"reconciliation.xlsx ({night.as_of.isoformat()})",
            key=org_key("fundpipe-workbook", org),
            description="Tonight's reconciliation workbook on the shared reports folder",
        )
    for f in night.rejected:
        name = Path(f.source_file).name
        create_table_artifact(
            table=error_rows(f) or [{"Why": f.message or "rejected"}],
            key=rejected_key(name, org),
            description=f"Why {name} was rejected (its error report's rows)",
        )
    create_table_artifact(
        table=plain_exceptions(night.exceptions) or [{"State": "no open exceptions"}],
        key=org_key("fundpipe-exceptions", org),
        description="Exceptions that need a person: id, state, age, what, amount, what to do "
        "(cut short to fit; each in full: the run's summary)",
    )


def error_rows(file: FileOutcome, limit: int = 200) -> list[dict[str, str]]:
    """A rejected file's error report as table rows (its values are already masked)."""
    import csv

    report = oncall.error_report_of(file)
    if report is None or not Path(report).exists():
        return []
    with open(report, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    return plain_error_rows(rows[:limit])


def plain_error_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """An error report's rows (``severity, sheet, row, rows, count, column, letter, value,
    check, reason``) in the columns a person reads, the reason whole: Row(s), Column (with its
    spreadsheet letter), Value, Why; Sheet when a workbook names one, Severity when one is not
    an error. The check's code (``amount_negative``) is for scripts: the CSV keeps it."""
    sheets = any((r.get("sheet") or "").strip() for r in rows)
    severities = any((r.get("severity") or "error") != "error" for r in rows)
    plain = []
    for r in rows:
        column, letter = r.get("column") or "", r.get("letter") or ""
        row: dict[str, str] = {}
        if severities:
            row["Severity"] = r.get("severity") or ""
        if sheets:
            row["Sheet"] = r.get("sheet") or ""
        row["Row(s)"] = r.get("rows") or r.get("row") or ""
        row["Column"] = f"{column} (column {letter})" if column and letter else column or letter
        row["Value"] = r.get("value") or ""
        row["Why"] = r.get("reason") or ""
        plain.append(row)
    return plain
