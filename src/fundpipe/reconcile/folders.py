"""Where a reconciliation's reports are filed: `reports/<as-of>/<run time>Z/`, and
`reports/latest` pointing at the newest run of the newest as-of; the reports filed there
(`filed_reports`, `latest_report`), each with its `report.json`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

__all__ = [
    "FiledReport",
    "filed_reports",
    "latest_as_of",
    "latest_report",
    "point_latest",
    "run_folder",
]


def run_folder(reports: Path, as_of: date, run_at: datetime) -> Path:
    """`reports/<as-of>/<run time>Z` (run time in UTC): reports are filed by the date they are
    as of, each run in its own folder (a suffix when it already exists)."""
    at = run_at.astimezone(UTC)
    folder = reports / as_of.isoformat() / at.strftime("%Y%m%dT%H%M%SZ")
    n = 1
    while folder.exists():
        n += 1
        folder = reports / as_of.isoformat() / f"{at.strftime('%Y%m%dT%H%M%SZ')}-{n}"
    return folder


def latest_as_of(reports: Path) -> date | None:
    """The as-of date `reports/latest` points at (None when there is no latest yet)."""
    link = reports / "latest"
    if not link.is_symlink():
        return None
    try:
        return date.fromisoformat(link.readlink().parts[0])
    except (ValueError, IndexError):
        return None


def point_latest(reports: Path, out_dir: Path) -> None:
    """Point `reports/latest` at `out_dir` (a relative symlink, replaced atomically)."""
    link = reports / "latest"
    staged = reports / f".latest-{os.getpid()}"
    staged.unlink(missing_ok=True)
    staged.symlink_to(out_dir.relative_to(reports), target_is_directory=True)
    staged.replace(link)


@dataclass(frozen=True, slots=True)
class FiledReport:
    """One run's report folder, `reports/<as-of>/<run time>Z/`, and its `report.json`."""

    as_of: date
    run: str
    folder: Path
    run_at: datetime
    known_at: datetime
    reporting_timezone: str


def _filed(folder: Path) -> FiledReport | None:
    """The report filed in ``folder``, None when it has no readable `report.json`."""
    try:
        facts = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        return FiledReport(
            as_of=date.fromisoformat(facts["as_of"]),
            run=folder.name,
            folder=folder,
            run_at=datetime.fromisoformat(facts["run_at"]),
            known_at=datetime.fromisoformat(facts["known_at"]),
            reporting_timezone=str(facts["reporting_timezone"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def filed_reports(reports: Path) -> list[FiledReport]:
    """Every report filed under ``reports``: newest as-of first, and per as-of the newest
    knowledge time first (folders without a `report.json`, and links, are left out)."""
    found: list[FiledReport] = []
    if not reports.is_dir():
        return found
    for day in reports.iterdir():
        if day.is_symlink() or not day.is_dir() or not _is_date(day.name):
            continue
        for run in day.iterdir():
            if run.is_dir() and not run.is_symlink() and (filed := _filed(run)) is not None:
                found.append(filed)
    return sorted(found, key=lambda r: (r.as_of, r.known_at, r.run), reverse=True)


def latest_report(reports: Path) -> FiledReport | None:
    """The report `reports/latest` points at, else the newest filed (None: none yet)."""
    link = reports / "latest"
    if link.is_symlink():
        filed = _filed(reports / link.readlink())
        if filed is not None:
            return filed
    every = filed_reports(reports)
    return every[0] if every else None


def _is_date(name: str) -> bool:
    try:
        date.fromisoformat(name)
    except ValueError:
        return False
    return True
