"""The exception log and an exception's history in words, row by row: what `fundpipe
exceptions list` and `exceptions show` print and what the desk's exception page shows, written
once so both say the same (the CLI's `fundpipe.app.cli.render` and the desk's templates only lay
these rows out).
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING

from fundpipe.cents import format_cents

if TYPE_CHECKING:
    from fundpipe.reconcile.lifecycle import ExceptionEvent
    from fundpipe.vocabulary import ExceptionRecord

__all__ = [
    "HISTORY_COLUMNS",
    "LOG_COLUMNS",
    "RIGHT_ALIGNED",
    "history_row",
    "log_row",
]

#: The columns of the exception log, in order.
LOG_COLUMNS = ("Id", "State", "Owner", "Age (days)", "What", "Amount (USD)", "What to do")
#: The columns of an exception's history, in order.
HISTORY_COLUMNS = ("When (UTC)", "As of", "Event", "By", "OS user", "Amount (USD)", "Note")
#: The columns of either that are figures, right-aligned.
RIGHT_ALIGNED = frozenset({"Age (days)", "Amount (USD)"})


def log_row(found: ExceptionRecord) -> tuple[str, ...]:
    """One exception as a row of the log (:data:`LOG_COLUMNS`): an acknowledged one's state
    says by whom and the note."""
    state = str(found.state)
    if found.state == "acknowledged":
        state += f" by {found.acknowledged_by}: {found.note}"
    return (
        found.id,
        state,
        found.owner or "",
        str(found.age_days),
        found.what,
        found.amount,
        found.action or "",
    )


def history_row(event: ExceptionEvent) -> tuple[str, ...]:
    """One event as a row of the history (:data:`HISTORY_COLUMNS`): when in UTC to the second,
    by whom (the name, and the operating-system user or where the desk's person signed in), the
    amount then, and the note (an assignment names the owner first)."""
    note = event.note or ""
    if event.assignee:
        note = f"owner: {event.assignee}" + (f"; {note}" if note else "")
    return (
        event.at.astimezone(UTC).isoformat(timespec="seconds"),
        event.as_of.isoformat(),
        event.event,
        event.by or "",
        event.os_user or "",
        "" if event.amount_cents is None else format_cents(event.amount_cents),
        note,
    )
