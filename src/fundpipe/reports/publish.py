"""Publish one organization's night to the shared reports location (`FUNDPIPE_REPORTS_URL`).

The location is a folder path (a shared drive mounted on every machine) or an fsspec URL
(``s3://bucket/reports``, ``memory://…`` in tests): whatever fsspec can write to. An
organization's reports folder (``Settings.reports_folder``, ``data/reports/<org>/``) is
published under ``Settings.reports_url`` (``<FUNDPIPE_REPORTS_URL>/<org>``, see
``Settings.for_org``) with the same relative paths, so a report's URL is the location plus its
path below the reports folder:

    <FUNDPIPE_REPORTS_URL>/<org>/<as_of>/<stamp>/reconciliation.xlsx, *.parquet
    <FUNDPIPE_REPORTS_URL>/<org>/<as_of>/<stamp>/errors/<file>.errors.csv   (rejected files)
    <FUNDPIPE_REPORTS_URL>/<org>/<as_of>/<stamp>/night.json                 (the night's facts)
    <FUNDPIPE_REPORTS_URL>/<org>/<as_of>/latest.json                        (where the newest is)

``night.json`` holds what the morning view (`fundpipe.morning`) needs and cannot read
from the Parquet files: the organization's name, the night's state, files, rejected files,
distributions submitted and their total (integer cents). ``latest.json`` is written last, so a
reader never follows it to a half-published night.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LATEST", "NIGHT", "Published", "join", "publish_night", "read_json"]

#: The night's facts, beside its reports.
NIGHT = "night.json"
#: Per organization and date: the folder (relative to the date's folder) of the newest night.
LATEST = "latest.json"


@dataclass(frozen=True)
class Published:
    """What one organization's night published: each local file's URL, and its folder's."""

    folder: str
    urls: dict[str, str] = field(default_factory=dict)

    def url_of(self, path: str | Path | None) -> str | None:
        """The published URL of a local file of the night (None: it was not published)."""
        if not path:
            return None
        return self.urls.get(str(Path(path).resolve()))


def join(base: str, *parts: str) -> str:
    """``base`` (a folder path or URL) and relative ``parts``, joined with ``/``."""
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts if p)])


def _fs(url: str) -> tuple[Any, str]:
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(url)
    return fs, root


def publish_night(
    reports_url: str,
    reports_folder: Path,
    out_dir: Path,
    error_reports: Sequence[Path],
    facts: Mapping[str, Any],
) -> Published:
    """Copy the night's report folder ``out_dir`` (below ``reports_folder``) and the rejected
    files' ``error_reports`` to ``reports_url``, with ``facts`` as its ``night.json``; then
    point ``latest.json`` of its date at it. Returns every published file's URL."""
    relative = out_dir.resolve().relative_to(reports_folder.resolve()).as_posix()
    folder = join(reports_url, relative)
    fs, root = _fs(folder)
    fs.makedirs(root, exist_ok=True)
    urls: dict[str, str] = {}
    for path in sorted(p for p in out_dir.iterdir() if p.is_file()):
        fs.put_file(str(path), join(root, path.name))
        urls[str(path.resolve())] = join(folder, path.name)
    if error_reports:
        fs.makedirs(join(root, "errors"), exist_ok=True)
    for path in error_reports:
        if path.is_file():
            fs.put_file(str(path), join(root, "errors", path.name))
            urls[str(path.resolve())] = join(folder, "errors", path.name)
    with fs.open(join(root, NIGHT), "w", encoding="utf-8") as fh:
        json.dump(dict(facts), fh, indent=1, default=str)
    date_folder, _, night = relative.rpartition("/")
    if date_folder:
        _, date_root = _fs(join(reports_url, date_folder))
        with fs.open(join(date_root, LATEST), "w", encoding="utf-8") as fh:
            json.dump({"folder": night}, fh)
    return Published(folder=folder, urls=urls)


def read_json(url: str) -> dict[str, Any] | None:
    """A published JSON file (``night.json``, ``latest.json``), or None when it is missing."""
    fs, path = _fs(url)
    if not fs.exists(path):
        return None
    with fs.open(path, "r", encoding="utf-8") as fh:
        data = json.load(fh)
    return data if isinstance(data, dict) else None
