"""The night's Prefect artifacts, for a person who has the UI and not the worker's disk.

Every key ends in the organization's id (``fundpipe-exceptions-org-demo``), so the latest
artifact of a key is that organization's.

- ``fundpipe-run-summary``: markdown, linking every report (and each rejected file's error
  report) where the night published it under ``FUNDPIPE_REPORTS_URL``
  (`fundpipe.app.prefect.sharing`); without it, saying the reports stayed on the worker (a ``file://``
  path there is dead in a browser);
- ``fundpipe-workbook``: a link to the published workbook (only with ``FUNDPIPE_REPORTS_URL``);
- ``fundpipe-rejected-<file>``: a table of one rejected file's errors (values already masked);
- ``fundpipe-exceptions``: the exceptions, with the labels a person reads (Exception, State,
  Age (days), What, Amount, What to do).
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

from fundpipe.app.prefect import oncall
from fundpipe.app.prefect.uiview import org_key, plain_exceptions
from fundpipe.config import Settings

if TYPE_CHECKING:
    from fundpipe.nights import OrgNight


def _link(settings: Settings, path: Path | str | None, night: OrgNight) -> str | None:
    """The published URL of a report (None: not published; a worker's path is no link)."""
    if not path:
        return None
    return night.url_of(path) or oncall.report_url(
        settings.reports_url, path, settings.reports_folder
    )


#: Said instead of a link when the reports were not published (a file:// path on the worker's
#: disk is dead in a browser).
NOT_PUBLISHED = (
    "The reports stayed on the worker that ran this night ({where}): set FUNDPIPE_REPORTS_URL "
    "to publish them where the Prefect UI can link them."
)


def rejected_key(file_name: str, org: str | None = None) -> str:
    """The artifact key of a rejected file's error table (lowercase letters, digits, dashes),
    with its organization's id when known."""
    slug = re.sub(r"[^a-z0-9]+", "-", Path(file_name).name.lower()).strip("-")
    if org:
        return org_key("fundpipe-rejected", org, slug)
    return f"fundpipe-rejected-{slug}"[:100]


def summary_markdown(night: OrgNight) -> str:
    """The run summary as the markdown of a Prefect artifact (its reports are linked by
    `summary_with_links`)."""
    org = f" — organization {night.organization}" if night.organization else ""
    lines = [
        f"# fundpipe nightly run — {night.as_of.isoformat()}{org}",
        "",
        "| what | value |",
        "|---|---|",
    ]
    lines += [f"| {label} | {value} |" for label, value in night.plain_facts()]
    if night.rejected:
        lines += ["", "## Rejected files", ""]
        lines += [
            f"- `{f.source_file}` — {f.message or 'see its error report'}" for f in night.rejected
        ]
    if night.warnings or night.notes:
        lines += ["", "## Warnings and notes", ""]
        lines += [f"- {w}" for w in [*night.warnings, *night.notes]]
    if night.exception_counts:
        lines += ["", "## Exceptions", "", "| kind | count |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in night.exception_counts.items()]
    lines += ["", "## Reports", ""]
    return "\n".join(lines) + "\n"


def summary_with_links(night: OrgNight, settings: Settings) -> str:
    """The run summary's markdown with every report as a link a person can open."""
    reports = night.reports
    links = {name: _link(settings, path, night) for name, path in reports.items()}
    text = summary_markdown(night).rstrip("\n")
    lines = [text, ""] + [f"- [{name}]({url})" for name, url in links.items() if url]
    if reports and not any(links.values()):
        where = f"`{night.workbook.parent}`" if night.workbook else "its reports folder"
        lines.append(NOT_PUBLISHED.format(where=where))
    errors = [
        (Path(f.source_file).name, _link(settings, oncall.error_report_of(f), night))
        for f in night.rejected
    ]
    if errors:
        lines += ["", "## Error reports", ""]
        lines += [
            f"- [{name}.errors.csv]({url})" if url else f"- {name}.errors.csv: not published"
            for name, url in errors
        ]
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
            table=oncall.error_rows(f) or [{"reason": f.message or "rejected"}],
            key=rejected_key(name, org),
            description=f"Why {name} was rejected (its error report's rows)",
        )
    create_table_artifact(
        table=plain_exceptions(night.exceptions) or [{"State": "no open exceptions"}],
        key=org_key("fundpipe-exceptions", org),
        description="Exceptions that need a person: id, state, age, what, amount, what to do",
    )
