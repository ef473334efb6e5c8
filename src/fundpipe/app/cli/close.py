"""`fundpipe close month | review | reject | reopen | list | verify`: close a month (prepare,
review), list the periods, verify a closed one; over `fundpipe.reconcile.close`.

The spellings before the group (`fundpipe close 2026-11 --prepared-by ana`, `--reviewed-by`,
`--rejected-by`, `--reopen`, `close --list`, `close --verify`) still work for this release:
`_CloseGroup` hands any first word that is not a sub-command to the hidden `_OLD` command, which
says once on stderr which new spelling to use and does the same.

Longer than ~400 lines: the group's six commands, the old spellings and the change after
sign-off are one vocabulary of the close, and split they would each import the rest.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    ReadOrgOption,
    cli_actor,
    console,
    err_console,
    local_org_settings,
    reading_scope,
    show_each_org,
    user_errors,
)
from fundpipe.app.cli.help_text import SentencesGroup, Typer
from fundpipe.errors import ExitCode, InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from fundpipe.config import Settings
    from fundpipe.reconcile import CloseResult

__all__ = ["close_app"]

#: The hidden command the spellings before the sub-commands are handed to.
_OLD = "old-spelling"


class _CloseGroup(SentencesGroup):
    """The `close` group: a first word that is no sub-command (a month, `--list`, `--verify`)
    is the spelling before the group, handed to the hidden `_OLD` command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Click's parsing, with an old spelling routed to `_OLD`."""
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [_OLD, *args]
        parsed: list[str] = super().parse_args(ctx, args)
        return parsed


close_app = Typer(
    cls=_CloseGroup,
    help="Close a month: its final reconciliation (as of its last day, as known at the close) "
    "filed in data/reports/<org>/closed/YYYY-MM/ with a manifest.json of SHA-256s, never "
    "rewritten; then reviewed (or rejected) by another person, reopened, listed, verified.\n\n"
    "Example: fundpipe close month 2026-11 --prepared-by ana, then fundpipe close review "
    "2026-11 --by ben; fundpipe close list; fundpipe close verify 2026-11",
    no_args_is_help=True,
)

PeriodArgument = Annotated[str, typer.Argument(help="The month, YYYY-MM (e.g. 2026-11).")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why, in a few words.")]


@contextmanager
def _closing() -> Iterator[None]:
    """The close's own refusals (`CloseError`) as usage errors (exit 2), inside `user_errors`."""
    from fundpipe.reconcile import CloseError

    try:
        yield
    except CloseError as exc:
        raise InputError(str(exc)) from None


def _act(
    data_dir: Path | None,
    org: str | None,
    json_out: bool,
    act: Callable[[Settings], CloseResult],
) -> None:
    """Run one decision (`act`) on the organization's settings and show what it did."""
    with user_errors(), _closing():
        done = act(local_org_settings(data_dir, org))
        _show(done, json_out)


def _show(done: CloseResult, json_out: bool) -> None:
    """The period's state after a decision, and its folder (or the state as JSON)."""
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


@close_app.command("month")
def month_command(
    period: PeriodArgument,
    prepared_by: Annotated[
        str, typer.Option("--prepared-by", help="Who prepared the month's final report.")
    ],
    with_open_exceptions: Annotated[
        bool,
        typer.Option(
            "--with-open-exceptions",
            help="Close even with exceptions still open; they are listed in the manifest.",
        ),
    ] = False,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Close a month: its final reconciliation as of its last day, as known now, filed in
    data/reports/<org>/closed/YYYY-MM/ (a reopened month's next close: closed/YYYY-MM/vN/) with
    a manifest.json of SHA-256s and the month's events; read-only, never rewritten. Closing it
    again changes nothing.

    Example: fundpipe close month 2026-11 --prepared-by ana
    """
    from fundpipe.reconcile import close_period

    _act(
        data_dir,
        org,
        json_out,
        lambda settings: close_period(
            settings,
            period,
            prepared_by=cli_actor(prepared_by),
            with_open_exceptions=with_open_exceptions,
        ),
    )


@close_app.command("review")
def review_command(
    period: PeriodArgument,
    by: Annotated[str, typer.Option("--by", help="Who reviewed it (not its preparer).")],
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Record the review of the version of a month closed last, by another person than its
    preparer (at another login, unless FUNDPIPE_ONE_PERSON_CLOSE=true). The review is its own
    read-only file beside the package, closed/YYYY-MM.vN.review.json: anyone who may write the
    organization's data folder can review.

    Example: fundpipe close review 2026-11 --by ben
    """
    from fundpipe.reconcile import review_period

    _act(
        data_dir,
        org,
        json_out,
        lambda settings: review_period(settings, period, reviewed_by=cli_actor(by)),
    )


@close_app.command("reject")
def reject_command(
    period: PeriodArgument,
    by: Annotated[str, typer.Option("--by", help="Who rejects it (its reviewer).")],
    reason: ReasonOption,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Reject the version of a month closed last, with the reason: the reviewer's decision,
    under the same two-person rule as a review, in its own file beside the package.

    Example: fundpipe close reject 2026-11 --by ben --reason "D1 missing"
    """
    from fundpipe.reconcile import reject_period

    _act(
        data_dir,
        org,
        json_out,
        lambda settings: reject_period(settings, period, rejected_by=cli_actor(by), reason=reason),
    )


@close_app.command("reopen")
def reopen_command(
    period: PeriodArgument,
    by: Annotated[str, typer.Option("--by", help="Who reopens it.")],
    reason: ReasonOption,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Open a reviewed or rejected month again, with the reason. Its closed version stays as
    filed; its next close is a new version beside the old.

    Example: fundpipe close reopen 2026-11 --by ana --reason "redo after D1"
    """
    from fundpipe.reconcile import reopen_period

    _act(
        data_dir,
        org,
        json_out,
        lambda settings: reopen_period(settings, period, by=cli_actor(by), reason=reason),
    )


@close_app.command("list")
def list_command(
    data_dir: DataDirOption = None, org: ReadOrgOption = None, json_out: JsonOption = False
) -> None:
    """Show each month's state: open, or closed with who prepared and reviewed it, and
    CHANGED AFTER SIGN-OFF with its adjustments while nobody acknowledged them (without --org:
    every organization's). Reads only local files.

    Example: fundpipe close list
    """
    _list(data_dir, org, json_out)


def _list(data_dir: Path | None, org: str | None, json_out: bool) -> None:
    with user_errors():
        from fundpipe.reconcile import list_periods, signoffs

        def show(settings: Settings) -> tuple[Any, int]:
            with _closing():
                months = signoffs(settings, list_periods(settings))
            if not json_out:
                for m in months:
                    console.print(
                        f"{m.state.period}  {m.describe()}", markup=False, highlight=False
                    )
            return [
                {
                    **m.state.as_dict(),
                    "changed_after_signoff": m.changed_after_signoff,
                    "changes_after_signoff": [
                        {
                            "payment_id": c.payment_id,
                            "distribution": c.distribution,
                            "closed_amount_cents": c.closed_cents,
                            "amount_cents": c.now_cents,
                            "change_cents": c.change_cents,
                            "learned_at": c.learned_at.isoformat(),
                        }
                        for c in m.changes
                    ],
                }
                for m in months
            ], 0

        show_each_org(reading_scope(data_dir, org), show, json_out=json_out)


@close_app.command("acknowledge-changes")
def acknowledge_changes_command(
    period: PeriodArgument,
    by: Annotated[str, typer.Option("--by", help="Who saw the changes.")],
    data_dir: DataDirOption = None,
    org: OrgOption = None,
) -> None:
    """Acknowledge a closed month's changes after sign-off (after-close adjustments learned
    since its close or the last acknowledgement): it no longer shows as changed after sign-off
    until another change comes. Recorded in the warehouse and the durable record.

    Example: fundpipe close acknowledge-changes 2026-11 --by ben
    """
    from fundpipe.reconcile import acknowledge_changes

    with user_errors(), _closing():
        if not by.strip():
            raise InputError("--by needs the name of who saw the changes")
        _, changes = acknowledge_changes(
            local_org_settings(data_dir, org), period, by=cli_actor(by)
        )
        console.print(
            f"{period}: {len(changes)} change(s) after sign-off acknowledged", highlight=False
        )


@close_app.command("verify")
def verify_command(
    period: PeriodArgument,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Re-hash every version of a closed month: its files against its manifest, the manifest
    and the review against the hashes recorded at the close and the review. Exit 1 when one
    changed, naming it.

    Example: fundpipe close verify 2026-11
    """
    _verify(period, data_dir, org, json_out)


def _verify(period: str, data_dir: Path | None, org: str | None, json_out: bool) -> None:
    with user_errors(), _closing():
        from fundpipe.reconcile import verify_period

        checked = verify_period(local_org_settings(data_dir, org), period)
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


def _say_new_spelling(new: str) -> None:
    """The one line an old spelling prints on stderr: the spelling to use instead."""
    err_console.print(
        f"note: this spelling of `fundpipe close` goes in a later release; use `fundpipe close "
        f"{new}`",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@close_app.command(_OLD, hidden=True)
def old_spelling_command(
    period: Annotated[str | None, typer.Argument(help="The month, YYYY-MM.")] = None,
    prepared_by: Annotated[
        str | None, typer.Option("--prepared-by", help="Now: close month PERIOD --prepared-by.")
    ] = None,
    reviewed_by: Annotated[
        str | None, typer.Option("--reviewed-by", help="Now: close review PERIOD --by.")
    ] = None,
    rejected_by: Annotated[
        str | None, typer.Option("--rejected-by", help="Now: close reject PERIOD --by --reason.")
    ] = None,
    reopen: Annotated[
        bool, typer.Option("--reopen", help="Now: close reopen PERIOD --by --reason.")
    ] = False,
    by: Annotated[str | None, typer.Option("--by", help="Who reopens (with --reopen).")] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (with --rejected-by or --reopen).")
    ] = None,
    with_open_exceptions: Annotated[
        bool, typer.Option("--with-open-exceptions", help="With --prepared-by.")
    ] = False,
    list_periods_: Annotated[bool, typer.Option("--list", help="Now: close list.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="Now: close verify PERIOD.")] = False,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """The spellings of `fundpipe close` before its sub-commands, kept for this release: each
    says once on stderr which sub-command to use, then does what it did."""
    month = period or "YYYY-MM"
    if list_periods_:
        _say_new_spelling("list")
        _list(data_dir, org, json_out)
        return
    if verify:
        _say_new_spelling(f"verify {month}")
    with user_errors():
        if period is None:
            raise InputError("name the month (YYYY-MM), or use fundpipe close list")
    if verify:
        _verify(period, data_dir, org, json_out)
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
    with user_errors():
        if len(steps) > 1:
            raise InputError(f"{' and '.join(steps)} are separate steps: run them apart")
        if reopen and (not by or not reason):
            raise InputError("--reopen needs --by NAME and --reason TEXT")
        if rejected_by and not reason:
            raise InputError("--rejected-by needs --reason TEXT")
        if not steps:
            raise InputError(
                f"say what to do: fundpipe close month {month} --prepared-by NAME, close review "
                f"{month} --by NAME, close reject {month} --by NAME --reason TEXT, close reopen "
                f"{month} --by NAME --reason TEXT, or close verify {month}"
            )
    if reopen and by and reason:
        _say_new_spelling(f"reopen {period} --by NAME --reason TEXT")
        reopen_command(period, by, reason, data_dir, org, json_out)
    elif rejected_by and reason:
        _say_new_spelling(f"reject {period} --by NAME --reason TEXT")
        reject_command(period, rejected_by, reason, data_dir, org, json_out)
    elif reviewed_by:
        _say_new_spelling(f"review {period} --by NAME")
        review_command(period, reviewed_by, data_dir, org, json_out)
    elif prepared_by:
        extra = " --with-open-exceptions" if with_open_exceptions else ""
        _say_new_spelling(f"month {period} --prepared-by NAME{extra}")
        month_command(period, prepared_by, with_open_exceptions, data_dir, org, json_out)
