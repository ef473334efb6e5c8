"""One exception, whichever reader holds it: :class:`ExceptionRecord` and :class:`ExceptionState`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from enum import StrEnum
from typing import Any, Literal

from fundpipe.cents import format_cents
from fundpipe.vocabulary._kinds import kind_words

__all__ = ["JSON_FORMS", "ExceptionRecord", "ExceptionState", "JsonForm"]


class ExceptionState(StrEnum):
    """Where an exception is in its lifecycle (the fold of its events)."""

    OPEN = "open"
    ACKNOWLEDGED = "acknowledged"
    RESOLVED = "resolved"


#: The JSON forms of an exception record, by output.
JsonForm = Literal["lifecycle", "night", "published"]

#: Each form's keys, in the order its output has always written them:
#: ``lifecycle`` — `fundpipe exceptions list/show --json`, `fundpipe reconcile --json`;
#: ``night`` — `fundpipe run --json` (a row's ``exceptions``, a summary's ``exception_list``)
#: and what a child run on another worker leaves its parent;
#: ``published`` — a published night's ``night.json`` (what the morning view reads).
JSON_FORMS: Mapping[JsonForm, tuple[str, ...]] = {
    "lifecycle": (
        "id",
        "kind",
        "state",
        "first_seen",
        "last_seen",
        "resolved_on",
        "acknowledged_by",
        "acknowledged_at",
        "note",
        "vehicle",
        "object_type",
        "object_id",
        "source_file",
        "row",
        "amount_cents",
        "what",
        "action",
        "owner",
        "acknowledged_amount_cents",
        "age_days",
        "amount_dollars",
    ),
    "night": (
        "id",
        "state",
        "age_days",
        "what",
        "amount",
        "what_to_do",
        "kind",
        "opened_tonight",
        "amount_cents",
    ),
    "published": ("id", "state", "what", "amount", "what_to_do"),
}

_DOLLARS = re.compile(r"(-?)\$(\d{1,3}(?:,\d{3})*)\.(\d{2})")


def _cents_of(text: str) -> int | None:
    """The cents of `format_cents`' text ("" → None); another text is a ValueError."""
    if not text:
        return None
    found = _DOLLARS.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not an amount in dollars ($1,234.56)")
    sign, dollars, cents = found.groups()
    value = int(dollars.replace(",", "")) * 100 + int(cents)
    return -value if sign else value


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True, slots=True)
class ExceptionRecord:
    """One exception in the plain columns a person reads: what every reader holds (the
    lifecycle's listing, a night's exceptions, a published night).

    The first eight fields are what every reader has; the rest are the lifecycle's columns
    (None where a reader has not got them: a night read back from JSON, a published night).
    """

    id: str
    state: ExceptionState
    #: days from first seen to the as-of date (or to the day it was resolved)
    age_days: int
    what: str
    #: None: the exception has no amount (never shown as $0.00)
    amount_cents: int | None
    #: what a person does about it: the view's action, else its kind's (`what_to_do`)
    what_to_do: str
    #: an `ExceptionKind` value ("" for an id whose details are not recorded yet)
    kind: str
    #: the lifecycle opened (or reopened) it tonight
    opened_tonight: bool = False
    first_seen: date | None = None
    last_seen: date | None = None
    resolved_on: date | None = None
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None
    note: str | None = None
    vehicle: str | None = None
    object_type: str | None = None
    object_id: str | None = None
    source_file: str | None = None
    row: int | None = None
    #: the view's own action for it, as recorded (None: none recorded)
    action: str | None = None
    #: who owns it (the last `exceptions assign`), and the amount the last acknowledgement covered
    owner: str | None = None
    acknowledged_amount_cents: int | None = None

    def __post_init__(self) -> None:
        """The state as an `ExceptionState` whatever text it was given ("open"), or a ValueError."""
        object.__setattr__(self, "state", ExceptionState(self.state))

    @property
    def amount(self) -> str:
        """The amount as dollars text (``$1,234.56``), empty when there is none."""
        return "" if self.amount_cents is None else format_cents(self.amount_cents)

    @property
    def is_open(self) -> bool:
        """Open (acknowledged and resolved ones are not)."""
        return self.state == ExceptionState.OPEN

    @property
    def opened(self) -> bool:
        """Open, and opened tonight."""
        return self.is_open and self.opened_tonight

    @property
    def words(self) -> str:
        """Its kind in a controller's words (`kind_words`)."""
        return kind_words(self.kind)

    def tonight(self, *, opened_tonight: bool) -> ExceptionRecord:
        """This record as a night reports it: a kind and a sentence even when its details are not
        recorded yet ("exception", the kind's words), and whether tonight opened it."""
        kind = self.kind or "exception"
        return replace(
            self,
            kind=kind,
            what=self.what or kind.replace("_", " "),
            opened_tonight=opened_tonight,
        )

    def as_json(self, form: JsonForm) -> dict[str, Any]:
        """Its JSON form for one output (:data:`JSON_FORMS`): dates as ISO text, the amount in
        cents and as dollars text."""
        values: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "state": str(self.state),
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
            "resolved_on": _iso(self.resolved_on),
            "acknowledged_by": self.acknowledged_by,
            "acknowledged_at": _iso(self.acknowledged_at),
            "note": self.note,
            "vehicle": self.vehicle,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "source_file": self.source_file,
            "row": self.row,
            "amount_cents": self.amount_cents,
            "what": self.what,
            "action": self.action,
            "owner": self.owner,
            "acknowledged_amount_cents": self.acknowledged_amount_cents,
            "age_days": self.age_days,
            "amount_dollars": self.amount,
            "amount": self.amount,
            "what_to_do": self.what_to_do,
            "opened_tonight": self.opened_tonight,
        }
        return {key: values[key] for key in JSON_FORMS[form]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExceptionRecord:
        """Read back the ``night`` or the ``published`` form (a missing key is a KeyError naming
        it). The published form has no kind, age or cents: its amount is read from its dollars
        text, its age is 0 and its kind ""."""
        published = "amount_cents" not in data
        if published:
            amount_cents = _cents_of(str(data["amount"]))
        else:
            cents = data["amount_cents"]
            amount_cents = None if cents is None else int(cents)
        return cls(
            id=str(data["id"]),
            state=ExceptionState(str(data["state"])),
            age_days=0 if published else int(data["age_days"]),
            what=str(data["what"]),
            amount_cents=amount_cents,
            what_to_do=str(data["what_to_do"]),
            kind="" if published else str(data["kind"]),
            opened_tonight=False if published else bool(data["opened_tonight"]),
        )
