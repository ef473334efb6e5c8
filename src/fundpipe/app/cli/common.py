"""What every CLI command shares: the consoles, Prefect's defaults for a local run, settings
from the environment, and the one place a failure becomes a line and an exit code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from fundpipe.errors import ExitCode, InternalError, as_fundpipe_error

if TYPE_CHECKING:
    from fundpipe.config import Settings
    from fundpipe.orgs import OrgSettings

console = Console()
err_console = Console(stderr=True)


def cli_actor(typed: str, os_user: str | None = None) -> str:
    """What a decision made at the CLI records as its person: the name typed (``--by``), who
    typed it and on which operating-system user, e.g. ``Pat Preparer (typed at the CLI by OS
    user alice)``; `os_user`: the login running this process when not given."""
    import getpass

    name = " ".join(typed.split())
    if not name:
        return name  # the command refuses an empty name itself
    if os_user is None:
        try:
            os_user = getpass.getuser()
        except (KeyError, OSError):  # no login name and no passwd entry (some containers)
            os_user = "unknown"
    return f"{name} (typed at the CLI by OS user {os_user})"


def prefect_defaults(verbose: bool = False) -> None:
    """Sensible Prefect defaults for a local run (each overridable by the environment).

    Prefect's console handlers would print a failing task's traceback; a person gets the CLI's
    one-line message instead (the full log still reaches the Prefect API). `--verbose` shows it.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    level = "INFO" if verbose else "CRITICAL"
    # the run logger stays at INFO: its lines reach the Prefect API (the run's Logs tab) while
    # the console handlers are quiet
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", level)


def settings_for(data_dir: Path | None = None) -> Settings:
    """Settings from the environment, with `--data-dir` when given."""
    from fundpipe.config import Settings

    settings = Settings()
    if data_dir is not None:
        settings = settings.updated(local={"data_dir": data_dir})
    return settings


@contextmanager
def org_settings_for(data_dir: Path | None, org: str | None) -> Iterator[Settings]:
    """The settings of one organization (`--org`; needed only when several are configured),
    pointed at a running service (the embedded sandbox when none is configured), with the client
    secret from the Prefect Secret block `FUNDPIPE_CLIENT_SECRET_BLOCK` names when no secret is
    set. A single-organization layout is moved into `data/orgs/<org>/` first, saying so once.
    See `fundpipe.orgs.org_settings` (`Among.SERVICE`)."""
    from fundpipe.app.embedded import one_org

    with one_org(settings_for(data_dir), org, _say) as live:
        yield live


def local_org_settings(data_dir: Path | None, org: str | None) -> Settings:
    """One organization's settings for a command that reads only local files (reconcile,
    exceptions, close), without asking the service: `fundpipe.orgs.org_settings`
    (`Among.LOCAL`); no client is built, so no secret is loaded."""
    from fundpipe.orgs import Among, org_settings

    settings = settings_for(data_dir)
    return org_settings(
        settings, org or settings.service.org_id, among=Among.LOCAL, load_secret=None, say=_say
    ).settings


def reading_scope(
    data_dir: Path | None, org: str | None, *, record: bool = False
) -> list[OrgSettings]:
    """The organizations a command that only reads covers: the one `--org` (else
    `FUNDPIPE_ORG_ID`) names, else every organization (`fundpipe.orgs.every_org_settings`):
    the configured list, else the folders under `data/orgs/`. `record`: the durable record's
    commands, which need no local folder — the configured list is taken as it is, and the
    record's organization folders count too."""
    from fundpipe.orgs import Among, every_org_settings

    settings = settings_for(data_dir)
    wanted = org or settings.service.org_id
    if not record:
        return every_org_settings(settings, wanted, among=Among.LOCAL, say=_say)
    from fundpipe.record import Record

    base = settings.local.record_url or str(settings.local.data_dir / "record")
    recorded = [] if wanted else Record(base).folders("")
    return every_org_settings(settings, wanted, among=Among.CONFIGURED, also=recorded, say=_say)


#: What a reading command shows of one organization: its JSON payload (used with --json; the
#: text is printed by the function itself) and its exit code.
OrgReading = Callable[["Settings"], tuple[Any, int]]


def show_each_org(scope: Sequence[OrgSettings], show: OrgReading, *, json_out: bool) -> None:
    """Show `scope`'s organizations one after the other and exit with the worst exit code.

    One organization: what `show` prints, as it is. Several: a heading naming each
    organization before its section, and with `--json` one object keyed by organization id; an
    organization that fails gets its error line (its JSON: `{"error": ...}`) and the others
    are still shown. A bug (an internal error) stops the command as everywhere.
    """
    several = len(scope) > 1
    payloads: dict[str, Any] = {}
    worst = 0
    for n, one in enumerate(scope):
        if several and not json_out:
            console.print(
                ("\n" if n else "") + f"organization {one.org.label}",
                style="bold",
                markup=False,
                highlight=False,
            )
        try:
            payload, code = show(one.settings)
        except Exception as exc:  # one organization's failure: said, the others still shown
            error = as_fundpipe_error(exc)
            if not several or isinstance(error, InternalError):
                raise
            err_console.print(
                f"[bold red]error:[/] {one.org.folder}: {error}", soft_wrap=True, highlight=False
            )
            payload, code = {"error": str(error)}, int(error.exit_code)
        payloads[one.org.folder] = payload
        worst = max(worst, code)
    if json_out:
        print(
            json.dumps(
                payloads if several else payloads[scope[0].org.folder], indent=2, default=str
            )
        )
    if worst:
        raise typer.Exit(worst)


def _say(line: str) -> None:
    """Tell the person running the command (what a one-time layout move moved)."""
    err_console.print(line, soft_wrap=True)


def run_log_file(data_dir: Path | None = None) -> Path:
    """The run's log file, where a bug's traceback goes: `<data dir>/logs/fundpipe.log`."""
    if data_dir is None:
        try:
            data_dir = settings_for().local.data_dir
        except Exception:  # the settings themselves may be what failed
            data_dir = Path(os.environ.get("FUNDPIPE_DATA_DIR") or "data")
    return data_dir / "logs" / "fundpipe.log"


def _log_traceback(exc: BaseException, log_file: Path) -> Path | None:
    """Append `exc`'s traceback (secrets redacted) to `log_file`; None when it can't be written."""
    import traceback
    from datetime import UTC, datetime

    from fundpipe.client import redact

    text = "".join(traceback.format_exception(exc))
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    command = " ".join(sys.argv[1:])
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"{stamp} internal error in `fundpipe {command}`\n{redact(text)}\n")
    except OSError:
        return None
    return log_file


@contextmanager
def user_errors(data_dir: Path | None = None) -> Iterator[None]:
    """Turn every failure into a one-line message and an exit code (never a traceback).

    An unexpected exception is a bug (exit 5): its traceback goes to the run's log file
    (`run_log_file(data_dir)`) and the message says where.
    """
    from fundpipe.app import quiet_retries

    quiet_retries()  # the client says each retry once; stamina's own hooks stay quiet
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    except Exception as exc:  # every failure becomes a message, never a traceback
        error = as_fundpipe_error(exc)
        if isinstance(error, InternalError):
            written = _log_traceback(exc, run_log_file(data_dir))
            if written is not None:
                error = error.logged_at(str(written))
        err_console.print(f"[bold red]error:[/] {error}", soft_wrap=True)
        raise typer.Exit(int(error.exit_code)) from None


DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (inbox, ledger, warehouse, reports)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
OrgOption = Annotated[
    str | None,
    typer.Option(
        "--org", help="Organization id (needed only when several organizations are configured)."
    ),
]
ReadOrgOption = Annotated[
    str | None,
    typer.Option(
        "--org",
        help="Only this organization (its id); default: every configured organization, one "
        "section each.",
    ),
]
