"""`fundpipe desk` (serve the finance desk) and `fundpipe desk user add` (a local account), over
`fundpipe.desk`."""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer

from fundpipe.app.cli.common import DataDirOption, console, settings_for, user_errors
from fundpipe.app.cli.help_text import Typer
from fundpipe.errors import InputError

__all__ = ["desk_app"]

desk_app = Typer(
    help="The finance desk: the morning and the exception queue in a web page, each person "
    "signed in. Without a sub-command: serve it.",
    invoke_without_command=True,
)
user_app = Typer(help="The desk's local accounts.", no_args_is_help=True)
desk_app.add_typer(user_app, name="user")


@desk_app.callback()
def desk_command(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (cookies are Secure off loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    data_dir: DataDirOption = None,
) -> None:
    """Serve the finance desk (FastAPI, with uvicorn) until interrupted. On the first start
    with no account it prints a one-time link that makes the first admin's account.

    Example: fundpipe desk --port 8765
    """
    if ctx.invoked_subcommand is not None:
        return
    with user_errors(data_dir):
        import uvicorn

        from fundpipe.app.embedded import quiet_org_service
        from fundpipe.desk import Accounts, Desk, DeskSettings, create_app

        desk = Desk(settings_for(data_dir), DeskSettings(), host=host, service=quiet_org_service)
        app = create_app(desk)
        token = Accounts(desk.folder / "accounts.json").first_admin_token()
        base = (desk.desk.url or f"http://{host}:{port}").rstrip("/")
        console.print(f"fundpipe desk on {base}/ (data folder {desk.settings.local.data_dir})")
        if token is not None:
            console.print(
                f"no account yet: open {base}/first-admin/{token} to make the first admin's "
                "(the link works once)",
                soft_wrap=True,
            )
        # no access log: a sign-in's one-time link and the provider's code are in its paths
        uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")


@user_app.command("add")
def user_add_command(
    email: Annotated[str, typer.Argument(help="The person's email (their sign-in).")],
    name: Annotated[str, typer.Option("--name", help="The person's name, as acts record it.")],
    data_dir: DataDirOption = None,
) -> None:
    """Make a local account (or set a new password for one). The password is asked for without
    echo, or read from the first line of standard input when that is not a terminal.

    Example: fundpipe desk user add maria@example.com --name "Maria Lopez"
    """
    with user_errors(data_dir):
        from fundpipe.desk import Accounts, Desk, DeskSettings

        if sys.stdin.isatty():
            password = getpass.getpass("password: ")
            if getpass.getpass("again: ") != password:
                raise InputError("the two passwords differ")
        else:
            password = sys.stdin.readline().rstrip("\r\n")
        desk = Desk(settings_for(data_dir), DeskSettings())
        account = Accounts(desk.folder / "accounts.json").add(email, name, password)
        console.print(f"account {account.email} ({account.name}) saved in {desk.folder}")
