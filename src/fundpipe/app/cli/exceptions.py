"""`fundpipe exceptions list | show | ack | assign | comment`: the exception history, over
`fundpipe.reconcile.lifecycle`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    ReadOrgOption,
    cli_actor,
    console,
    local_org_settings,
    reading_scope,
    show_each_org,
    user_errors,
)
from fundpipe.app.cli.help_text import Typer
from fundpipe.cents import format_cents
from fundpipe.errors import InputError

if TYPE_CHECKING:
    from fundpipe.config import Settings
    from fundpipe.vocabulary import ExceptionRecord

__all__ = ["exceptions_app"]

exceptions_app = Typer(
    help="The exception history: list exceptions and their states, show one's events, "
    "acknowledge what was dealt with, assign an owner, comment.",
    no_args_is_help=True,
)


def _person_act(
    act: Callable[..., ExceptionRecord],
    exception_id: str,
    by: str | None,
    data_dir: Path | None,
    org: str | None,
    **fields: Any,
) -> ExceptionRecord:
    """A person's event (`acknowledge`, `assign`, `comment`) on the organization's warehouse,
    now, by `by` (recorded with who typed it: `cli_actor`; default: the login name); an unknown
    or resolved id, or an empty name or note, is a usage
    error (exit 2) saying so."""
    import getpass

    from fundpipe.reconcile import ExceptionNotFoundError
    from fundpipe.warehouse import Warehouse

    what = {"note": "a note saying what was done", "to": "the owner's name"}
    for name, value in fields.items():
        if name in what and value is not None and not value.strip():
            raise InputError(f"this needs {what[name]}")
    if by is not None and not by.strip():
        raise InputError("--by needs the name of who acts")
    from fundpipe.record import decision_sink  # each person's act goes to the durable record too

    settings = local_org_settings(data_dir, org)
    try:
        return act(
            Warehouse(settings.local.warehouse_file),
            exception_id,
            by=cli_actor(by) if by else getpass.getuser(),
            now=datetime.now(UTC),
            record=decision_sink(settings),
            **fields,
        )
    except ExceptionNotFoundError as exc:
        raise InputError(str(exc).strip("'\"")) from None


@exceptions_app.command("list")
def exceptions_list_command(
    state: Annotated[
        str | None,
        typer.Option(
            "--state", help="Only exceptions in this state: open, acknowledged, resolved."
        ),
    ] = None,
    data_dir: DataDirOption = None,
    org: ReadOrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """List the exceptions the reconciliations found, with id, state, age, amount, what to do
    (every organization without --org, one section each).

    Example: fundpipe exceptions list --state open
    """
    with user_errors():
        from fundpipe.reconcile import STATES, list_exceptions
        from fundpipe.warehouse import Warehouse

        if state is not None and state not in STATES:
            raise InputError(f"--state {state!r} is not one of {', '.join(STATES)}")

        def show(settings: Settings) -> tuple[Any, int]:
            found = list_exceptions(Warehouse(settings.local.warehouse_file), state=state)
            if not json_out:
                from fundpipe.app.cli.render import render_exception_log

                render_exception_log(found, console)
            return [t.as_json("lifecycle") for t in found], 0

        show_each_org(reading_scope(data_dir, org), show, json_out=json_out)


@exceptions_app.command("ack")
def exceptions_ack_command(
    exception_id: Annotated[str, typer.Argument(help="The exception's id, e.g. EX-1A2B3C4D5E.")],
    note: Annotated[str, typer.Option("--note", help="What was done about it (required).")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who acknowledges (default: your login name).")
    ] = None,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
) -> None:
    """Acknowledge an exception: it leaves the open count, its note and who/when stay on record.

    Example: fundpipe exceptions ack EX-1A2B3C4D5E --note "investor confirmed; paid by wire"
    """
    with user_errors():
        from fundpipe.reconcile import acknowledge

        done = _person_act(acknowledge, exception_id, by, data_dir, org, note=note)
        covered = done.acknowledged_amount_cents
        amount = "" if covered is None else f" at {format_cents(covered)}"
        console.print(f"{done.id} acknowledged by {done.acknowledged_by}{amount}: {done.note}")


@exceptions_app.command("show")
def exceptions_show_command(
    exception_id: Annotated[str, typer.Argument(help="The exception's id, e.g. EX-1A2B3C4D5E.")],
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show one exception and its whole history: opened, amount changed, acknowledged, assigned,
    commented, reopened, resolved — when, by whom (name and operating-system user), amount and note.

    Example: fundpipe exceptions show EX-1A2B3C4D5E
    """
    with user_errors():
        from fundpipe.reconcile import ExceptionNotFoundError, history
        from fundpipe.warehouse import Warehouse

        settings = local_org_settings(data_dir, org)
        try:
            found, events = history(Warehouse(settings.local.warehouse_file), exception_id)
        except ExceptionNotFoundError as exc:
            raise InputError(str(exc).strip("'\"")) from None
        if json_out:
            print(
                json.dumps(
                    {**found.as_json("lifecycle"), "events": [e.as_dict() for e in events]},
                    indent=2,
                    default=str,
                )
            )
            return
        from fundpipe.app.cli.render import render_exception_history

        render_exception_history(found, events, console)


@exceptions_app.command("assign")
def exceptions_assign_command(
    exception_id: Annotated[str, typer.Argument(help="The exception's id, e.g. EX-1A2B3C4D5E.")],
    to: Annotated[str, typer.Option("--to", help="Who owns it from now on.")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who assigns (default: your login name).")
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why, or what to do.")] = None,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
) -> None:
    """Set an exception's owner (shown in `exceptions list` and the workbook); the assignment is
    an event of its history.

    Example: fundpipe exceptions assign EX-1A2B3C4D5E --to maria
    """
    with user_errors():
        from fundpipe.reconcile import assign

        done = _person_act(assign, exception_id, by, data_dir, org, to=to, note=note)
        console.print(f"{done.id} is owned by {done.owner}")


@exceptions_app.command("comment")
def exceptions_comment_command(
    exception_id: Annotated[str, typer.Argument(help="The exception's id, e.g. EX-1A2B3C4D5E.")],
    note: Annotated[str, typer.Option("--note", help="The comment (required).")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who comments (default: your login name).")
    ] = None,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
) -> None:
    """Comment on an unresolved exception: an event of its history (shown by `exceptions show`)
    that changes neither its state nor its owner.

    Example: fundpipe exceptions comment EX-1A2B3C4D5E --note "asked the bank for the trace"
    """
    with user_errors():
        from fundpipe.reconcile import comment

        done = _person_act(comment, exception_id, by, data_dir, org, note=note)
        console.print(f"{done.id}: comment recorded")
