"""`fundpipe alerts install` and `fundpipe alerts list`: the on-call alerts as Prefect
automations on the server named by `PREFECT_API_URL` (the logic is `fundpipe.app.prefect.alerts`).

`fundpipe.app.cli` registers `alerts_app`."""

from __future__ import annotations

import json
import os
from datetime import time
from typing import Annotated

import typer
from rich.table import Table

from fundpipe.app.cli.common import (
    console,
    err_console,
    prefect_defaults,
    settings_for,
    user_errors,
)
from fundpipe.app.cli.help_text import Typer
from fundpipe.errors import ConfigurationError, InputError

alerts_app = Typer(
    help="Alerts through Prefect automations: a failed or crashed run, a night not completed "
    "by a set hour, a rejected file, a newly opened exception — each POSTed to a webhook.",
    no_args_is_help=True,
)


def _server() -> None:
    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigurationError(
            "alerts live on a Prefect server: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api)"
        )


@alerts_app.command("install")
def install_command(
    webhook: Annotated[
        str, typer.Option("--webhook", help="URL the notifications are POSTed to (JSON).")
    ],
    complete_by: Annotated[
        str | None,
        typer.Option(
            "--complete-by",
            help="Hour (HH:MM, the nightly cron's zone) by which each organization's night "
            "must have completed; default FUNDPIPE_COMPLETE_BY (06:00). The Prefect server "
            "itself checks it, counting from the nightly deployment's scheduled run: no worker "
            "needed.",
        ),
    ] = None,
) -> None:
    """Create (or update) the webhook notification block and the fundpipe automations on the
    Prefect server; running it again changes nothing.

    Example: fundpipe alerts install --webhook https://hooks.example.com/fundpipe --complete-by 06:00
    """
    prefect_defaults()
    with user_errors():
        _server()
        if not webhook.startswith(("http://", "https://")):
            raise InputError("--webhook must be an http:// or https:// URL")
        settings = settings_for()
        complete_by = complete_by or settings.orchestration.complete_by
        from fundpipe.config.orchestration import hh_mm

        try:  # the option follows the rule of FUNDPIPE_COMPLETE_BY
            deadline = time.fromisoformat(hh_mm(complete_by))
        except ValueError as exc:
            raise InputError(f"--complete-by {complete_by!r}: {exc}") from None
        from fundpipe.app.prefect.alerts import Night, install
        from fundpipe.app.prefect.deadline import organizations_named

        night = Night(
            organizations=organizations_named(settings),
            complete_by=deadline.strftime("%H:%M"),
            zone=settings.orchestration.nightly_timezone,
            nightly_cron=settings.orchestration.nightly_cron,
        )
        done, notes = install(webhook, night)
        for item in done:
            console.print(f"{item.outcome:>9}  {item.name}  [dim]{item.detail}[/]")
        for note in notes:
            err_console.print(f"note: {note}", soft_wrap=True)
        wanted = deadline.strftime("%H:%M")
        if wanted != settings.orchestration.complete_by:
            # the night-check deployment's record keeps FUNDPIPE_COMPLETE_BY
            err_console.print(
                f"note: the night-check run records missed nights at FUNDPIPE_COMPLETE_BY "
                f"({settings.orchestration.complete_by}), not {wanted}; the alert keeps {wanted} "
                f"(set FUNDPIPE_COMPLETE_BY={wanted} for both)",
                soft_wrap=True,
            )


@alerts_app.command("list")
def list_command(
    json_out: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Show the fundpipe automations installed on the Prefect server and what fires each.

    Example: fundpipe alerts list --json
    """
    prefect_defaults()
    with user_errors():
        _server()
        from fundpipe.app.prefect.alerts import installed

        found = installed()
        if json_out:
            print(json.dumps(found, indent=2))
            return
        if not found:
            console.print("no fundpipe alerts installed: see `fundpipe alerts install --help`")
            return
        table = Table("automation", "enabled", "fires when", "does")
        for item in found:
            table.add_row(
                item["name"],
                "yes" if item["enabled"] else "no",
                item["description"],
                ", ".join(item["actions"]),
            )
        console.print(table)
