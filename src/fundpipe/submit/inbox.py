"""The inbox: ``data/inbox`` → ``processing/`` → ``processed/`` or ``rejected/``.

- Files still being written are left alone: office lock and temporary names (``~$x.xlsx``,
  ``.~lock.x#``, ``*.part``, ``*.tmp``, dot files) and files whose size or modification time
  changes while they are watched, or that changed less than ``settle_s`` ago.
- Every move is one ``os.rename`` inside the data directory (one filesystem: atomic). Names are
  sanitised to ``[A-Za-z0-9._-]`` and checked to stay inside the data directory; a name already
  taken gets a numeric suffix, so nothing is ever overwritten.
- :class:`InboxLock` is an exclusive ``fcntl`` lock on ``<data>/.ingest.lock``: a second
  ``fundpipe ingest`` fails at once with the holder's pid, host and start time. The kernel drops
  the lock when its process dies, even by SIGKILL, so a crash never leaves the inbox locked.
- :func:`collect_candidates` picks the files a run ingests (what ``processing/`` still holds,
  then the settled inbox files); :class:`ValidationCache` keeps the validated frames of files
  waiting in ``processing/`` so a resumed run does not validate them again.
- Every other inbox entry gets a word (:class:`LeftAlone`, from
  ``fundpipe.submit.entries.survey``): a link (never followed), a folder, a file that is not a
  sheet; :class:`Collected` carries them to the run's result.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import pandas as pd

from fundpipe.errors import InboxBusyError
from fundpipe.keys import file_hash
from fundpipe.submit.entries import (
    SHEET_SUFFIXES,
    LeftAlone,
    Survey,
    is_transient_name,
    stable_files,
    survey,
)
from fundpipe.validate import FileReport
from fundpipe.warehouse import writing

__all__ = [
    "SHEET_SUFFIXES",
    "Candidate",
    "Collected",
    "InboxBusyError",
    "InboxDirs",
    "InboxLock",
    "LeftAlone",
    "Survey",
    "UnsafePathError",
    "ValidationCache",
    "collect_candidates",
    "is_transient_name",
    "move_into",
    "sanitize_name",
    "stable_files",
    "survey",
]

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 120


class UnsafePathError(ValueError):
    """A path would leave the data directory."""


@dataclass(frozen=True)
class InboxDirs:
    """The directories of one data directory."""

    data_dir: Path

    @property
    def inbox(self) -> Path:
        """Where analysts drop files."""
        return self.data_dir / "inbox"

    @property
    def processing(self) -> Path:
        """Files being submitted (left here by a crash, picked up first by the next run)."""
        return self.data_dir / "processing"

    @property
    def processed(self) -> Path:
        """Files fully submitted."""
        return self.data_dir / "processed"

    @property
    def rejected(self) -> Path:
        """Files refused, each with its error report beside it."""
        return self.data_dir / "rejected"

    def create(self) -> None:
        """Create every directory."""
        for d in (self.inbox, self.processing, self.processed, self.rejected):
            d.mkdir(parents=True, exist_ok=True)


def sanitize_name(name: str) -> str:
    """A safe file name: the base name only, ``[A-Za-z0-9._-]``, no leading dot, bounded."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    clean = _UNSAFE.sub("_", base).lstrip(".") or "file"
    if clean in {".", ".."}:
        clean = "file"
    if len(clean) > _MAX_NAME:
        suffix = Path(clean).suffix[:10]
        clean = clean[: _MAX_NAME - len(suffix)] + suffix
    return clean


def _inside(path: Path, root: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise UnsafePathError("path leaves the data directory")
    return resolved


def move_into(src: Path, dest_dir: Path, data_dir: Path, name: str | None = None) -> Path:
    """Rename ``src`` into ``dest_dir`` under a sanitised, unused name; returns the new path."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    _inside(dest_dir, data_dir)
    clean = sanitize_name(name or src.name)
    stem, suffix = Path(clean).stem, Path(clean).suffix
    target = dest_dir / clean
    n = 1
    while target.exists():
        target = dest_dir / f"{stem}-{n}{suffix}"
        n += 1
    _inside(target, data_dir)
    src.rename(target)  # one filesystem: os.rename, atomic
    return target


class InboxLock:
    """An exclusive, non-blocking lock on ``<data_dir>/.ingest.lock`` naming its holder."""

    def __init__(self, data_dir: Path, wait_s: float = 0.0) -> None:
        """Prepare the lock for ``data_dir`` (nothing is locked yet); ``acquire`` waits up to
        ``wait_s`` seconds for another holder to finish (0: fail at once)."""
        self.path = data_dir / ".ingest.lock"
        self.wait_s = wait_s
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock, waiting up to ``wait_s``; else raise :class:`InboxBusyError` naming
        the holder."""
        deadline = time.monotonic() + self.wait_s
        told = False
        while True:
            try:
                return self._try_acquire()
            except InboxBusyError as busy:
                if time.monotonic() >= deadline:
                    raise
                if not told:  # never a silent wait: who holds it, and for how long we wait
                    log.warning("%s: %s; waiting up to %g s", self.path, busy, self.wait_s)
                    told = True
                time.sleep(0.5)

    def _try_acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe_holder(handle.read())
            handle.close()
            raise InboxBusyError(f"another fundpipe ingest is running ({holder})") from None
        mine = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        try:
            with writing(self.path, "the inbox lock"):  # a full disk: exit 6, naming it
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps(mine))
                handle.flush()
        except BaseException:
            handle.close()
            raise
        self._file = handle

    def release(self) -> None:
        """Release the lock (the holder note stays; it is rewritten by the next holder)."""
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def __enter__(self) -> Self:
        """Acquire on entry."""
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Release on exit."""
        self.release()


def _describe_holder(text: str) -> str:
    try:
        info = json.loads(text)
        return f"pid {info['pid']} on {info['host']} since {info['since']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"


# --------------------------------------------------------------------------- candidates


class ValidationCache:
    """Canonical payment frames of valid files waiting in ``processing/``, by content hash.

    Only distribution sheets are kept (roster frames hold account numbers, which are never
    copied to disk): a run resumed after a crash does not validate them again.
    """

    def __init__(self, directory: Path, *, enabled: bool) -> None:
        """A cache in ``directory``; when not ``enabled`` it neither loads nor stores."""
        self.directory = directory
        self.enabled = enabled

    def _path(self, file_hash: str) -> Path:
        return self.directory / f"{file_hash}.parquet"

    def load(self, file_hash: str) -> FileReport | None:
        """The cached report of a valid file, or None (not cached, unreadable, disabled)."""
        path = self._path(file_hash)
        if not self.enabled or not path.exists():
            return None
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError):
            return None
        return FileReport(
            file=str(frame["source_file"].iloc[0]), rows=len(frame), distributions=frame
        )

    def store(self, file_hash: str, report: FileReport) -> None:
        """Keep a valid distribution sheet's frame (never a roster's)."""
        roster = (report.entities, report.contacts, report.payment_instructions)
        frame = report.distributions
        if not self.enabled or frame is None or frame.empty or any(f is not None for f in roster):
            return
        tmp = self._path(file_hash).with_suffix(".tmp")
        with writing(tmp, "the validation cache"):  # a full disk: exit 6, naming it
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                frame.to_parquet(tmp, index=False)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        tmp.replace(self._path(file_hash))  # atomic: a half-written cache is never read

    def drop(self, file_hash: str) -> None:
        """Forget a file (it left ``processing/``)."""
        self._path(file_hash).unlink(missing_ok=True)


@dataclass
class Candidate:
    """A file to ingest: where it is now, the name it was dropped with, its content hash."""

    path: Path
    original_name: str
    file_hash: str


@dataclass(frozen=True, slots=True)
class Collected:
    """What a run found: the files to ingest, whether they live in the inbox tree (and so are
    moved), and the inbox entries left alone, each with its reason."""

    candidates: list[Candidate]
    in_inbox: bool
    left_alone: list[LeftAlone]


def collect_candidates(
    data_dir: Path, paths: Sequence[Path] | None, *, dry_run: bool, settle_s: float
) -> Collected:
    """Files to ingest, whether they live in the inbox tree, and the entries left alone.

    ``paths`` None → what waits in ``processing/`` (left by a crashed run) and every file of the
    inbox unchanged for ``settle_s`` seconds, moved into ``processing/`` (unless ``dry_run``);
    every other inbox entry is named with the reason it is left alone.
    """
    if paths is not None:
        found = [Candidate(Path(p), Path(p).name, file_hash(Path(p))) for p in paths]
        return Collected(found, False, [])
    dirs = InboxDirs(data_dir)
    if not dry_run:
        dirs.create()
    waiting = [(p, p.name) for p in stable_files(dirs.processing, settle_s=0)]
    inbox = survey(dirs.inbox, settle_s=settle_s)
    for p in inbox.ready:
        if dry_run:
            waiting.append((p, p.name))
        else:
            waiting.append((move_into(p, dirs.processing, data_dir), p.name))
    candidates = [Candidate(p, name, file_hash(p)) for p, name in waiting]
    return Collected(candidates, True, inbox.left_alone)
