"""The machine's faults in words: a full disk and a damaged DuckDB file, told apart from bugs.

:func:`fault_in` reads an exception (and the exceptions it was raised from) and returns the
:class:`Fault` it stands for, or None (``fundpipe.errors.machine_fault`` makes it the
:class:`fundpipe.errors.MachineFault` the person is told; this module imports nothing of
fundpipe, so the error tree can use it):

- **a full disk**: an ``OSError`` with ``ENOSPC`` or ``EDQUOT`` (its ``filename`` is the path),
  or DuckDB's ``Could not write file "<path>": No space left on device`` (also inside the
  "database has been invalidated" error that follows it) → :class:`DiskFullError`;
- **a refused permission** (:func:`denied`): an ``OSError`` with ``EACCES`` or ``EPERM`` (a
  file or folder the OS user may not read, write or change the mode of), or DuckDB's ``Cannot
  open file "<path>": Permission denied`` → ``fundpipe.errors.PermissionDeniedError``;
- **a damaged DuckDB file**: DuckDB's own words for a block that fails its checksum (``Corrupt
  database file: computed checksum … in block at location N``), a file that is not a database
  (``not a valid DuckDB database file``) or is cut off (``Could not read enough bytes``,
  ``No more data remaining in MetadataReader``) → :class:`DamagedFileError`.

DuckDB's errors are recognised by their message (its checksum error is a bare ``duckdb.Error``,
its cut-off file an ``IOException`` like a lock conflict), so this module needs no DuckDB import;
the check that reads every block of a file is ``fundpipe.warehouse.integrity``.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "Denied",
    "Fault",
    "damage_of",
    "denied",
    "disk_full",
    "fault_in",
    "restore_command",
    "written_path",
]

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_WORDS = ("No space left on device", "Disk quota exceeded")
_FILE_NAMED = re.compile(r'file "(?P<path>[^"]+)"')
_CHECKSUM = re.compile(r"Corrupt database file.*?(?:at location (?P<at>\d+))?$", re.DOTALL)
#: DuckDB's words for a damaged file → ours.
_DAMAGE = (
    ("not a valid DuckDB database file", "it is not a DuckDB database file"),
    ("Could not read enough bytes", "it is cut off: shorter than its own blocks say"),
    ("No more data remaining in MetadataReader", "its metadata is cut off"),
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it was raised from (``__cause__``, ``__context__``, an exception
    carried as an argument, as xlsxwriter's ``FileCreateError`` carries its ``OSError``)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        todo += [a for a in current.args if isinstance(a, BaseException)]


def _is_duckdb(exc: BaseException) -> bool:
    return type(exc).__module__.lstrip("_").startswith("duckdb")


def _full_disk(exc: BaseException) -> BaseException | None:
    """The exception in ``exc``'s chain that says no space was left on a device, or None."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _FULL_ERRNOS:
            return e
        # DuckDB's and Arrow's errors say it in words (Arrow's OSError carries no errno)
        if (_is_duckdb(e) or isinstance(e, OSError)) and any(w in str(e) for w in _FULL_WORDS):
            return e
    return None


@dataclass(frozen=True, slots=True)
class Denied:
    """A permission the operating system refused: the path it names and whether the refusal was
    of an owner's act (``EPERM``: changing a file's mode, owner or times) or of access."""

    path: str
    owner_only: bool


def denied(exc: BaseException) -> Denied | None:
    """The permission ``exc`` (or what it was raised from) says was refused, or None."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM) and e.filename:
            return Denied(str(e.filename), owner_only=e.errno == errno.EPERM)
        found = _FILE_NAMED.search(str(e)) if _is_duckdb(e) else None
        if found and "Permission denied" in str(e):
            return Denied(found["path"], owner_only=False)
    return None


def disk_full(exc: BaseException) -> bool:
    """True when ``exc`` (or what it was raised from) says no space was left on a device."""
    return _full_disk(exc) is not None


def written_path(exc: BaseException) -> str | None:
    """The file ``exc`` names (an ``OSError``'s ``filename``, the file in DuckDB's message)."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.filename:
            return str(e.filename)
        if _is_duckdb(e) and (found := _FILE_NAMED.search(str(e))):
            return found["path"]
    return None


def damage_of(exc: BaseException) -> str | None:
    """What is wrong with a DuckDB file, in words, when ``exc`` is DuckDB saying it is damaged
    (e.g. "a block at byte 8192 fails its checksum"); None for any other error."""
    for e in _chain(exc):
        if not _is_duckdb(e):
            continue
        text = str(e)
        if found := _CHECKSUM.search(text):
            at = f" at byte {found['at']}" if found["at"] else ""
            return f"a block{at} fails its checksum"
        for words, problem in _DAMAGE:
            if words in text:
                return problem
    return None


def restore_command(path: Path | None, org: str | None = None) -> str:
    """The command that rebuilds ``path`` from the record: ``fundpipe restore --org ORG``, the
    organization named by ``org`` or by the file's folder (``data/orgs/<org>/…``)."""
    if org is None and path is not None and Path(path).parent.parent.name == "orgs":
        org = Path(path).parent.name
    return "fundpipe restore" + (f" --org {org}" if org else "")


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault of the machine, as data: a full disk or a damaged file, the path it names (None:
    none known), what that file is ("warehouse"; None: not the caller's) and the problem."""

    kind: Literal["disk_full", "damaged"]
    path: str | None
    what: str | None = None
    problem: str = ""


def fault_in(
    exc: BaseException, *, path: Path | None = None, what: str | None = None
) -> Fault | None:
    """The machine's fault ``exc`` stands for, or None when it is not one.

    ``path`` and ``what`` ("warehouse", "ledger") name the DuckDB file the caller holds: a
    DuckDB fault naming no file (or that file) is told as that file's; a fault naming another
    file is told as that one's.
    """
    mine = str(path) if path is not None else None
    if (full := _full_disk(exc)) is not None:
        named = written_path(exc)
        if named is None and mine is not None and _is_duckdb(full):
            return Fault("disk_full", mine, what)  # DuckDB writing the caller's file
        if named is not None and mine is not None and named.startswith(mine):
            return Fault("disk_full", named, what)
        return Fault("disk_full", named)
    problem = damage_of(exc)
    if problem is None:
        return None
    named = written_path(exc)
    if named is not None and (mine is None or not named.startswith(mine)):
        return Fault("damaged", named, "DuckDB file", problem)
    return Fault("damaged", mine, what or "DuckDB file", problem)
