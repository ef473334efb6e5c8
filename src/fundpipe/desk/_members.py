"""Members and roles per organization, from one TOML file (`FUNDPIPE_DESK_MEMBERS`)::

    [[member]]
    email = "maria@example.com"
    name = "Maria Lopez"
    org = "org_demo"
    role = "preparer"

A person may have several entries (one per organization, or several roles in one). The file is
read again whenever it changes (its modification time or size), without a restart; each change
is an event of the desk's log. A file that cannot be read gives nobody any right until it is
fixed (the error is logged): the desk never falls back to an older list.

The rights of each role are :data:`RIGHTS` (the README's table says the same).
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from fundpipe.desk._log import DeskLog

__all__ = ["RIGHTS", "Member", "Members", "Right", "Role", "parse_members"]


class Role(StrEnum):
    """A member's role in one organization, least to most."""

    VIEWER = "viewer"
    ANALYST = "analyst"
    PREPARER = "preparer"
    REVIEWER = "reviewer"
    ADMIN = "admin"


class Right(StrEnum):
    """What a member may do in an organization."""

    SEE = "see the morning, the reconciliation and the exceptions"
    DOWNLOAD = "download the workbook and Parquet files"
    ACT_ON_EXCEPTIONS = "acknowledge, assign and comment on exceptions"
    CLOSE = "close a month"
    REVIEW = "review, reject or reopen a month closed by someone else"
    ACKNOWLEDGE_CHANGES = "acknowledge a closed month's changes after sign-off"
    UPLOAD = "upload a sheet: checked at once, then dropped in the inbox"


_ALL = frozenset(Role)
#: Which roles hold each right.
RIGHTS: Mapping[Right, frozenset[Role]] = {
    Right.SEE: _ALL,
    Right.DOWNLOAD: _ALL - {Role.VIEWER},
    Right.ACT_ON_EXCEPTIONS: frozenset({Role.ANALYST, Role.PREPARER, Role.REVIEWER, Role.ADMIN}),
    Right.CLOSE: frozenset({Role.PREPARER, Role.ADMIN}),
    Right.REVIEW: frozenset({Role.REVIEWER, Role.ADMIN}),
    Right.ACKNOWLEDGE_CHANGES: frozenset({Role.PREPARER, Role.REVIEWER, Role.ADMIN}),
    Right.UPLOAD: _ALL - {Role.VIEWER},
}


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of the members file."""

    email: str
    name: str
    org: str
    role: Role


def parse_members(text: str, source: str) -> list[Member]:
    """The entries of a members file; a mistake is a ValueError naming ``source`` and the
    entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{source}: not TOML: {error}") from None
    entries = data.get("member", [])
    if not isinstance(entries, list):
        raise ValueError(f"{source}: `member` must be a list of [[member]] tables")
    found = []
    for n, entry in enumerate(entries, start=1):
        found.append(_member(entry, f"{source}: [[member]] {n}"))
    return found


def _member(entry: Any, where: str) -> Member:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is not a table")
    missing = [k for k in ("email", "name", "org", "role") if not str(entry.get(k, "")).strip()]
    if missing:
        raise ValueError(f"{where} needs {', '.join(missing)}")
    role = str(entry["role"]).strip().lower()
    if role not in set(Role):
        raise ValueError(f"{where}: role {role!r} is not one of {', '.join(Role)}")
    return Member(
        email=str(entry["email"]).strip().lower(),
        name=str(entry["name"]).strip(),
        org=str(entry["org"]).strip(),
        role=Role(role),
    )


class Members:
    """The members file, read again when it changes."""

    def __init__(self, path: Path, log: DeskLog) -> None:
        self.path = path
        self._log = log
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._read_once = False
        self._members: list[Member] = []

    def _stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def current(self) -> list[Member]:
        """Every entry, as the file says now (read again if it changed since last asked)."""
        with self._lock:
            stamp = self._stamp()
            if self._read_once and stamp == self._seen:
                return self._members
            first = not self._read_once
            self._read_once = True
            self._seen = stamp
            if stamp is None:
                self._members = []
                self._log.event("members_missing", detail=f"{self.path}: no members file")
                return self._members
            try:
                self._members = parse_members(self.path.read_text(encoding="utf-8"), str(self.path))
            except (OSError, ValueError) as error:
                self._members = []
                self._log.event("members_unreadable", detail=str(error))
                return self._members
            self._log.event(
                "members_read" if first else "members_changed",
                detail=f"{self.path}: {len(self._members)} entries",
            )
            return self._members

    def roles(self, email: str) -> dict[str, frozenset[Role]]:
        """Each organization ``email`` is a member of, and its roles there."""
        found: dict[str, set[Role]] = {}
        for m in self.current():
            if m.email == email.strip().lower():
                found.setdefault(m.org, set()).add(m.role)
        return {org: frozenset(roles) for org, roles in found.items()}

    def may(self, email: str, org: str, right: Right) -> bool:
        """Whether ``email`` holds ``right`` in ``org`` through any of its roles there."""
        return bool(self.roles(email).get(org, frozenset()) & RIGHTS[right])
