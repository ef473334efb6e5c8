"""What the exception queue and an exception's page read and do, through the library the CLI
uses (`fundpipe.reconcile`): the open exceptions filtered and sorted as a person asked, the
organization's members an exception can be given to, one exception's history in the words of
`fundpipe exceptions show`, and a person's acts — acknowledge, assign, comment — each written to
the warehouse and the durable record as the CLI writes it, by the signed-in person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from urllib.parse import urlencode

from fundpipe.desk._members import Member, Members
from fundpipe.desk._reading import DeskOrg, open_tally
from fundpipe.desk._session import Person
from fundpipe.reconcile import (
    HISTORY_COLUMNS,
    LOG_COLUMNS,
    RIGHT_ALIGNED,
    ExceptionNotFoundError,
    history,
    history_row,
    list_exceptions,
    log_row,
)
from fundpipe.record import decision_sink
from fundpipe.vocabulary import ExceptionRecord, ExceptionState, kind_words
from fundpipe.warehouse import Warehouse

__all__ = [
    "AGES",
    "QUEUE_PAGE",
    "UNASSIGNED",
    "ExceptionPage",
    "Queue",
    "QueueView",
    "Sort",
    "act_on",
    "exception_page",
    "member_named",
    "members_of",
    "owner_text",
    "queue",
    "queue_view",
    "unresolved_ids",
]

#: Exceptions a page of the queue shows (the rest are on the next pages, filters kept).
QUEUE_PAGE = 100
#: The owner filter's value for the exceptions nobody owns.
UNASSIGNED = "unassigned"
#: The age filter's choices: at least this many days open, and how the page says it.
AGES: Mapping[int, str] = {
    1: "open a day or more",
    7: "open a week or more",
    30: "open 30 days or more",
}


class Sort(StrEnum):
    """The queue's orders."""

    AGE = "age"
    AMOUNT = "amount"
    KIND = "kind"

    @property
    def words(self) -> str:
        """How the page says it."""
        return {"age": "oldest first", "amount": "largest amount first", "kind": "by kind"}[self]


@dataclass(frozen=True, slots=True)
class QueueView:
    """What a person asked the queue to show (the page's query): a kind, an owner (or
    :data:`UNASSIGNED`), a least age in days, and an order."""

    kind: str | None = None
    owner: str | None = None
    min_age: int | None = None
    sort: Sort = Sort.AGE
    #: Which page of QUEUE_PAGE exceptions (1 is the first).
    page: int = 1

    @property
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return (self.kind, self.owner, self.min_age) != (None, None, None)

    def query(self, page: int) -> str:
        """The query string of this view's `page` (what a page link keeps)."""
        picked = {
            "kind": self.kind,
            "owner": self.owner,
            "age": None if self.min_age is None else str(self.min_age),
            "sort": None if self.sort is Sort.AGE else self.sort.value,
            "page": None if page == 1 else str(page),
        }
        return urlencode({k: v for k, v in picked.items() if v is not None})


def queue_view(query: Mapping[str, str]) -> QueueView:
    """The view a page's query asks for (``kind``, ``owner``, ``age``, ``sort``, ``page``; an
    empty value is no filter); a ValueError saying which parameter is wrong and what it may be."""
    picked = {k: query.get(k, "").strip() for k in ("kind", "owner", "age", "sort", "page")}
    sort = picked["sort"] or Sort.AGE
    if sort not in set(Sort):
        raise ValueError(f"sort={sort!r} is not one of {', '.join(Sort)}")
    age = picked["age"]
    if age and (not age.isdigit() or int(age) not in AGES):
        raise ValueError(f"age={age!r} is not one of {', '.join(map(str, AGES))} (days)")
    number = picked["page"] or "1"
    if not number.isdigit() or int(number) < 1:
        raise ValueError(f"page={number!r} is not a page number (1, 2, …)")
    return QueueView(
        kind=picked["kind"] or None,
        owner=picked["owner"] or None,
        min_age=int(age) if age else None,
        sort=Sort(sort),
        page=int(number),
    )


@dataclass(frozen=True, slots=True)
class Queue:
    """The open exceptions a view shows (its page of them), and the choices of its filters."""

    shown: tuple[ExceptionRecord, ...]
    open_count: int
    #: how many the filters keep (on every page), and where this page starts (0-based)
    matching: int
    first: int
    #: (kind, its words) of every open exception's kind
    kinds: tuple[tuple[str, str], ...]
    #: every owner of an open exception
    owners: tuple[str, ...]


def queue(org: DeskOrg, view: QueueView) -> Queue:
    """The organization's open exceptions that ``view`` keeps, in its order: its page of them
    (the filtering, ordering and paging are the warehouse's, not a fold of every one)."""
    first = (view.page - 1) * QUEUE_PAGE
    found = open_tally(
        org,
        kind=view.kind,
        owner=None if view.owner == UNASSIGNED else view.owner,
        unowned=view.owner == UNASSIGNED,
        min_age=view.min_age,
        order=view.sort.value,
        offset=first,
        limit=QUEUE_PAGE,
    )
    kinds = sorted(found.kinds, key=lambda k: kind_words(k).lower())
    return Queue(
        shown=found.shown,
        open_count=found.count,
        matching=found.matching,
        first=first,
        kinds=tuple((k, kind_words(k)) for k in kinds),
        owners=tuple(sorted(found.owners, key=str.lower)),
    )


def members_of(members: Members, org_id: str) -> list[Member]:
    """The organization's members (one entry each, by name): whom an exception can be given."""
    found = {m.email: m for m in members.current() if m.org == org_id}
    return sorted(found.values(), key=lambda m: (m.name.lower(), m.email))


def member_named(members: Members, org_id: str, email: str) -> Member | None:
    """The organization's member with ``email``, or None (not a member there)."""
    wanted = email.strip().lower()
    return next((m for m in members_of(members, org_id) if m.email == wanted), None)


def owner_text(member: Member) -> str:
    """What an assignment to ``member`` records as the owner: the name with the email, as a
    desk person's own events name them."""
    return f"{member.name} <{member.email}>"


def act_on(
    org: DeskOrg,
    act: Callable[..., ExceptionRecord],
    exception_id: str,
    *,
    person: Person,
    now: datetime,
    **fields: str,
) -> ExceptionRecord | None:
    """Do ``act`` (`fundpipe.reconcile.acknowledge`, `assign` or `comment`, with its
    ``fields``) on one of the organization's exceptions as ``person``: the same call and the
    same durable record as the CLI's. None when the organization has no such unresolved
    exception."""
    if not org.warehouse_file.exists():
        return None
    by, source = person.recorded_as
    try:
        return act(
            Warehouse(org.warehouse_file),
            exception_id,
            by=by,
            user=source,
            now=now,
            record=decision_sink(org.settings),
            **fields,
        )
    except ExceptionNotFoundError:
        return None


def unresolved_ids(org: DeskOrg) -> set[str]:
    """The ids of the organization's exceptions a person can still act on."""
    if not org.warehouse_file.exists():
        return set()
    found = list_exceptions(Warehouse(org.warehouse_file))
    return {e.id for e in found if e.state != ExceptionState.RESOLVED}


@dataclass(frozen=True, slots=True)
class ExceptionPage:
    """One exception and its history, as `fundpipe exceptions show` prints them."""

    exception: ExceptionRecord
    log_columns: tuple[str, ...]
    log_row: tuple[str, ...]
    history_columns: tuple[str, ...]
    history_rows: tuple[tuple[str, ...], ...]
    right_aligned: frozenset[str]

    @property
    def resolved(self) -> bool:
        """Whether it is resolved (no act is left)."""
        return self.exception.state == ExceptionState.RESOLVED


def exception_page(org: DeskOrg, exception_id: str) -> ExceptionPage | None:
    """The organization's exception ``exception_id`` and its history, or None (it has none)."""
    if not org.warehouse_file.exists():
        return None
    try:
        found, events = history(Warehouse(org.warehouse_file), exception_id)
    except ExceptionNotFoundError:
        return None
    return ExceptionPage(
        exception=found,
        log_columns=LOG_COLUMNS,
        log_row=log_row(found),
        history_columns=HISTORY_COLUMNS,
        history_rows=tuple(history_row(e) for e in events),
        right_aligned=RIGHT_ALIGNED,
    )
