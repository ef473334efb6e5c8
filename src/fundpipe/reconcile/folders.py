"""Where a reconciliation's reports are filed: `reports/<as-of>/<run time>Z/`, and
`reports/latest` pointing at the newest run of the newest as-of."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path

__all__ = ["latest_as_of", "point_latest", "run_folder"]


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
