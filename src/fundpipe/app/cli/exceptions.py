"""`fundpipe exceptions list | ack`: the exception log, over `fundpipe.reconcile.lifecycle`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    console,
    local_org_settings,
    user_errors,
)
from fundpipe.errors import InputError

__all__ = ["exceptions_app"]

exceptions_app = typer.Typer(
    help="The exception log: list exceptions and their states, acknowledge what was dealt with.",
    no_args_is_help=True,
)


@exceptions_app.command("list")
def exceptions_list_command(
    state: Annotated[
        str | None,
        typer.Option(
            "--state", help="Only exceptions in this state: open, acknowledged, resolved."
        ),
    ] = None,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """List the exceptions the reconciliations found, with id, state, age, amount, what to do.

    Example: fundpipe exceptions list --state open
    """
    with user_errors():
        from fundpipe.reconcile.lifecycle import STATES, list_exceptions
        from fundpipe.warehouse.file import Warehouse

        if state is not None and state not in STATES:
            raise InputError(f"--state {state!r} is not one of {', '.join(STATES)}")
        settings = local_org_settings(data_dir, org)
        found = list_exceptions(Warehouse(settings.warehouse_file), state=state)
        if json_out:
            print(json.dumps([t.as_dict() for t in found], indent=2, default=str))
            return
        from fundpipe.app.cli.render import render_exception_log

        render_exception_log(found, console)


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
        import getpass
        from datetime import UTC, datetime

        from fundpipe.reconcile.lifecycle import ExceptionNotFoundError, acknowledge
        from fundpipe.warehouse.file import Warehouse

        settings = local_org_settings(data_dir, org)
        try:
            done = acknowledge(
                Warehouse(settings.warehouse_file),
                exception_id,
                note=note,
                by=by or getpass.getuser(),
                now=datetime.now(UTC),
            )
        except (ExceptionNotFoundError, ValueError) as exc:
            raise InputError(str(exc).strip("'\"")) from None
        console.print(f"{done.id} acknowledged by {done.acknowledged_by}: {done.note}")
