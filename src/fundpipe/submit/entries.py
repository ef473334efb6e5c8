"""What an inbox folder holds: the sheets ready to read, and every other entry with a word.

:func:`survey` looks at a folder once: a sheet is ready when its name is a sheet's and it is at
rest (not modified for ``settle_s`` seconds, unchanged while watched); every other entry is a
:class:`LeftAlone` with its reason — a link (never followed: one could lead out of the
organization's folder), a folder (even one named ``folder.csv``), a file that is not a sheet
fundpipe reads, a lock or temporary file, a hidden file, a sheet still being written (read by
the next run). ``fundpipe.submit.inbox`` moves the ready ones; the run's output, log and on-call
lines name the others.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SHEET_SUFFIXES",
    "LeftAlone",
    "Survey",
    "file_system_now",
    "is_transient_name",
    "stable_files",
    "survey",
]

#: File suffixes the readers understand.
SHEET_SUFFIXES = frozenset({".csv", ".xlsx", ".xlsm", ".parquet", ".pq"})
_TRANSIENT_SUFFIXES = (".part", ".tmp", ".crdownload", ".partial", ".swp")


def is_transient_name(name: str) -> bool:
    """True for names of files that are still being written or are not sheets."""
    lower = name.lower()
    return (
        name.startswith(("~$", ".~lock", ".", "~"))
        or lower.endswith(_TRANSIENT_SUFFIXES)
        or lower.endswith("#")
        or Path(lower).suffix not in SHEET_SUFFIXES
    )


@dataclass(frozen=True, slots=True)
class LeftAlone:
    """An inbox entry fundpipe does not read, and why (e.g. "a link to a file outside the
    inbox", "a folder", "not a sheet fundpipe reads (.docx)")."""

    name: str
    reason: str

    @property
    def sentence(self) -> str:
        """``<name> — left alone: <reason>``, as the run's output, log and on-call lines say."""
        return f"{self.name} — left alone: {self.reason}"


@dataclass(frozen=True, slots=True)
class Survey:
    """An inbox folder looked at once: the sheets ready to read and every other entry."""

    ready: list[Path]
    left_alone: list[LeftAlone]


def _link_reason(link: Path, directory: Path) -> str:
    """Why a link is left alone: links are never followed (one could lead out of the
    organization's folder); where it points only says so in words."""
    target = Path(os.path.realpath(link))
    if target.is_dir():
        return "a link to a folder"
    if not target.exists():
        return "a link to nothing (its target is gone)"
    if target.parent == Path(os.path.realpath(directory)):
        return "a link to another file of the inbox"
    return "a link to a file outside the inbox"


def _entry_reason(entry: Path, directory: Path) -> str | None:
    """Why ``entry`` is left alone, or None when it is a sheet fundpipe reads (once settled)."""
    if entry.is_symlink():
        return _link_reason(entry, directory)
    if entry.is_dir():
        return "a folder"
    if not entry.is_file():
        return "not a regular file"
    name = entry.name
    if name.startswith(("~$", ".~lock", "~")) or name.lower().endswith(_TRANSIENT_SUFFIXES):
        return "a lock or temporary file (a sheet still being written)"
    if name.endswith("#"):
        return "a lock or temporary file (a sheet still being written)"
    if name.startswith("."):
        return "a hidden file"
    suffix = Path(name.lower()).suffix
    if suffix not in SHEET_SUFFIXES:
        return f"not a sheet fundpipe reads ({suffix or 'no extension'})"
    return None


def survey(directory: Path, *, settle_s: float = 1.0, watch_s: float = 0.2) -> Survey:
    """The sheets of ``directory`` ready to read, sorted by name, and every other entry with
    the reason it is left alone.

    A sheet is ready when its name is not transient, it was last modified at least ``settle_s``
    seconds ago, and its size and modification time do not change while it is watched for
    ``watch_s`` seconds (capped at ``settle_s``; 0 disables both); one that is not yet is left
    for the next run, and said so. Links are never followed, whatever they point at.

    A sheet's age is read on the clock that stamps its modification time, the file system's
    (:func:`file_system_now`), not the worker's: a share whose clock differs from the worker's
    neither holds a sheet back nor lets one through early. A modification time still ahead of
    that clock (set by hand, or a share with a clock of its own) says nothing about the age:
    such a sheet is judged by the watch alone.
    """
    if not directory.is_dir():
        return Survey([], [])
    left: dict[str, str] = {}

    def look() -> dict[Path, tuple[int, int]]:
        out = {}
        for p in directory.iterdir():
            reason = _entry_reason(p, directory)
            if reason is not None:
                left[p.name] = reason
                continue
            st = p.stat()
            out[p] = (st.st_size, st.st_mtime_ns)
        return out

    first = look()
    if settle_s > 0 and first:
        time.sleep(min(settle_s, watch_s))
    second = look()
    now = file_system_now(directory.parent) if first else time.time()
    ready = []
    for p, sig in first.items():
        age = now - sig[1] / 1e9
        if second.get(p) == sig and (age >= settle_s or age < 0):
            ready.append(p)
        elif p.name not in left:
            left[p.name] = (
                f"still being written (changed in the last {settle_s:g} s); the next run reads it"
            )
    return Survey(
        sorted(ready, key=lambda p: p.name),
        [LeftAlone(name, reason) for name, reason in sorted(left.items())],
    )


def file_system_now(folder: Path) -> float:
    """Now, in seconds since the epoch, on the clock of the file system that holds `folder`:
    the modification time of a probe file written there and removed at once (for a local inbox,
    in the organization's folder beside it; an analyst's inbox itself is never written). Where
    nothing can be written there, this machine's clock."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".fundpipe-clock-") as probe:
            return os.fstat(probe.fileno()).st_mtime_ns / 1e9
    except OSError:
        return time.time()


def stable_files(directory: Path, *, settle_s: float = 1.0, watch_s: float = 0.2) -> list[Path]:
    """Sheet files in ``directory`` that are not being written, sorted by name (the ready
    sheets of :func:`survey`; a file that does not qualify is simply left for the next run)."""
    return survey(directory, settle_s=settle_s, watch_s=watch_s).ready
