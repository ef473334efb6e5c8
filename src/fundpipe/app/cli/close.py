"""`fundpipe close`: close a month (prepare, review), list the periods, verify a closed one;
over `fundpipe.reconcile.close`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    console,
    local_org_settings,
    reading_scope,
    show_each_org,
    user_errors,
)
from fundpipe.errors import ExitCode, InputError

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = ["close_command"]


def close_command(
    period: Annotated[
        str | None, typer.Argument(help="The month to close or verify, YYYY-MM (e.g. 2026-11).")
    ] = None,
    prepared_by: Annotated[
        str | None,
        typer.Option("--prepared-by", help="Close the month: who prepared its final report."),
    ] = None,
    reviewed_by: Annotated[
        str | None,
        typer.Option(
            "--reviewed-by", help="Record the review of a closed month (not its preparer)."
        ),
    ] = None,
    rejected_by: Annotated[
        str | None,
        typer.Option("--rejected-by", help="Reject a closed month (its reviewer; needs --reason)."),
    ] = None,
    reopen: Annotated[
        bool,
        typer.Option(
            "--reopen",
            help="Open a reviewed or rejected month again (needs --by and --reason); its next "
            "close is a new version beside the old.",
        ),
    ] = False,
    by: Annotated[str | None, typer.Option("--by", help="Who reopens (with --reopen).")] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (with --rejected-by or --reopen).")
    ] = None,
    with_open_exceptions: Annotated[
        bool,
        typer.Option(
            "--with-open-exceptions",
            help="Close even with exceptions still open; they are listed in the manifest.",
        ),
    ] = False,
    list_periods_: Annotated[
        bool,
        typer.Option(
            "--list",
            help="Show each month's state: open or closed (without --org: every organization's).",
        ),
    ] = False,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Re-hash a closed month's files against its manifest."),
    ] = False,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Close a month: its final reconciliation (as of its last day) filed in
    data/reports/<org>/closed/YYYY-MM/ with a manifest.json of SHA-256s; never rewritten.

    Example: fundpipe close 2026-11 --prepared-by ana (then fundpipe close 2026-11
    --reviewed-by ben, or --rejected-by ben --reason TEXT; fundpipe close 2026-11 --reopen --by
    ana --reason TEXT; fundpipe close --list; fundpipe close --verify 2026-11)
    """
    with user_errors():
        from fundpipe.reconcile.close import (
            CloseError,
            close_period,
            list_periods,
            reject_period,
            reopen_period,
            review_period,
            verify_period,
        )

        if list_periods_:

            def show(settings: Settings) -> tuple[Any, int]:
                try:
                    periods = list_periods(settings)
                except CloseError as exc:
                    raise InputError(str(exc)) from None
                if not json_out:
                    for p in periods:
                        console.print(f"{p.period}  {p.describe()}", markup=False, highlight=False)
                return [p.as_dict() for p in periods], 0

            show_each_org(reading_scope(data_dir, org), show, json_out=json_out)
            return
        settings = local_org_settings(data_dir, org)
        try:
            if period is None:
                raise InputError("name the month (YYYY-MM), or use --list")
            if verify:
                checked = verify_period(settings, period)
                if json_out:
                    print(
                        json.dumps(
                            {
                                "period": checked.period,
                                "ok": checked.ok,
                                "files": checked.checked,
                                "problems": checked.problems,
                            }
                        )
                    )
                elif checked.ok:
                    console.print(
                        f"{checked.period}: all {checked.checked} file(s) of "
                        f"{checked.versions} version(s) match the manifest, and the review "
                        "matches the one recorded"
                    )
                else:
                    for problem in checked.problems:
                        console.print(f"{checked.period}: {problem}", markup=False)
                if not checked.ok:
                    raise typer.Exit(ExitCode.NEEDS_PERSON)
                return
            steps = [
                o
                for o, v in (
                    ("--prepared-by", prepared_by),
                    ("--reviewed-by", reviewed_by),
                    ("--rejected-by", rejected_by),
                    ("--reopen", reopen),
                )
                if v
            ]
            if len(steps) > 1:
                raise InputError(f"{' and '.join(steps)} are separate steps: run them apart")
            if reopen:
                if not by or not reason:
                    raise InputError("--reopen needs --by NAME and --reason TEXT")
                done = reopen_period(settings, period, by=by, reason=reason)
            elif rejected_by:
                if not reason:
                    raise InputError("--rejected-by needs --reason TEXT")
                done = reject_period(settings, period, rejected_by=rejected_by, reason=reason)
            elif reviewed_by:
                done = review_period(settings, period, reviewed_by=reviewed_by)
            elif prepared_by:
                done = close_period(
                    settings,
                    period,
                    prepared_by=prepared_by,
                    with_open_exceptions=with_open_exceptions,
                )
            else:
                raise InputError(
                    "say --prepared-by NAME (close), --reviewed-by NAME, --rejected-by NAME "
                    "--reason TEXT, --reopen --by NAME --reason TEXT, or --verify"
                )
        except CloseError as exc:
            raise InputError(str(exc)) from None
        if json_out:
            print(
                json.dumps(
                    {
                        **done.state.as_dict(),
                        "changed": done.changed,
                        "open_exceptions": done.open_exceptions,
                    },
                    indent=2,
                )
            )
            return
        what = "" if done.changed else " (already so; nothing changed)"
        console.print(
            f"{done.state.period}: {done.state.describe()}{what}\n{done.folder}",
            markup=False,
            highlight=False,
        )
