"""When a newest-first walk of a list may stop: the paging stop rule, beside the pagination.

A list is walked page by page until a page holds an object the caller already has; that page is
the last one. Newest first, every object after the first known one is then known too. The
assumption is guarded, because the interface does not show the lists' order: an object not
known after one that is, or a `created_at` later than the one before it, means the list is not
newest first, and the walk goes on to the end (a full walk) with a warning. The sync's walks
(`fundpipe.sync`) and the service snapshot's (`fundpipe.submit.snapshot`) both stop by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

__all__ = ["Walk"]


def _instant(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else None
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


class Walk:
    """One newest-first walk of a top-level list: when it may stop, and whether the order held.

    `known` is None for a full walk (never stops early, checks nothing). `open_ids` are the
    list's objects to re-read even when they are older than the stop point.
    """

    def __init__(
        self, name: str, known: frozenset[str] | None, open_ids: Iterable[str] = ()
    ) -> None:
        self.name = name
        self.incremental = known is not None
        self.known: frozenset[str] = known or frozenset()
        self.unseen_open = set(open_ids)
        self.disorder: str | None = None
        self._reached = False
        self._pages_past = 0
        self._previous: tuple[str, datetime] | None = None

    def page(self, records: Iterable[Mapping[str, Any]]) -> bool:
        """Note one page of the list; True when the walk may stop after it."""
        for record in records:
            object_id = str(record.get("id"))
            self.unseen_open.discard(object_id)
            if not self.incremental:
                continue
            known = object_id in self.known
            if self._reached and not known and self.disorder is None:
                self.disorder = f"{object_id}, not in the warehouse, came after objects it holds"
            self._reached = self._reached or known
            created = _instant(record.get("created_at"))
            if created is None:
                continue
            if self._previous is not None and created > self._previous[1] and not self.disorder:
                before, at = self._previous
                self.disorder = (
                    f"{object_id} (created {created.isoformat()}) came after {before} "
                    f"(created {at.isoformat()})"
                )
            self._previous = (object_id, created)
        if not self.incremental or self.disorder is not None or not self._reached:
            return False
        if not self.unseen_open:
            return True
        # Past the known ones, a page is worth reading while it costs less than reading the
        # still-unseen open objects one by one.
        self._pages_past += 1
        return self._pages_past > len(self.unseen_open)

    def goes_on_after_next(self, page_size: int) -> bool:
        """Whether the walk will go on past its next page whatever that page holds (it can
        see at most `page_size` of the still-unseen open objects): then the page after it may
        be asked for early."""
        if not self.incremental or self.disorder is not None:
            return True  # a full walk reads every page
        if not self._reached:
            return False  # the next page may reach what the warehouse holds, and end the walk
        left = len(self.unseen_open) - page_size  # open objects unseen, at the least, after it
        return left > 0 and self._pages_past + 1 <= left

    @property
    def mode(self) -> str:
        """How the list was walked in the end: "incremental", or "full" (also after disorder)."""
        return "incremental" if self.incremental and self.disorder is None else "full"

    def warning(self) -> str | None:
        """Words for SyncResult.warnings when an incremental walk fell back to a full one."""
        if not self.incremental or self.disorder is None:
            return None
        return (
            f"the {self.name} list is not newest first ({self.disorder}): walked it whole "
            "instead of stopping at what the warehouse holds"
        )
