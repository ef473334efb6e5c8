"""`fundpipe restore` and `fundpipe backup`: the durable record, over `fundpipe.record`."""

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
    console,
    reading_scope,
    settings_for,
    show_each_org,
    user_errors,
)
from fundpipe.errors import ExitCode, InputError

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = ["backup_command", "restore_command", "where_the_record_is"]


def _org_settings(data_dir: Path | None, org: str | None) -> Settings:
    """The organization's settings without asking the service or reading its local folders
    (they may be gone): the configured list, else the organization named."""
    from fundpipe.orgs import Among, org_settings

    settings = settings_for(data_dir)
    return org_settings(
        settings, org or settings.service.org_id, among=Among.CONFIGURED, load_secret=None
    ).settings


def where_the_record_is(settings: Settings) -> str:
    """One line saying where the organizations' durable record is (`fundpipe run` ends with
    it)."""
    base = (settings.local.record_url or str(settings.local.data_dir / "record")).rstrip("/")
    return (
        f"durable record: {base}/<org>/ (decisions when made, a snapshot after each night; "
        "FUNDPIPE_RECORD_URL moves it, fundpipe backup shows it)"
    )


def _parse_at(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"--at {text!r} is not a time: write it ISO, e.g. 2026-12-03T06:00:00+00:00 "
            "(no offset: UTC)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def restore_command(
    org: Annotated[
        str | None,
        typer.Option("--org", help="The organization to restore (its id)."),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Restore the record as it was at this time (ISO; no offset: UTC): the last "
            "snapshot taken by then and the decisions recorded by then.",
        ),
    ] = None,
    data_dir: DataDirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Rebuild an organization's ledger and warehouse from its durable record: the newest
    snapshot (its SHA-256s checked), then every decision recorded after it, and the closed
    months' files. Local files found are set aside (*.before-restore-<time>), never deleted.

    Example: fundpipe restore --org org_demo (or --at 2026-12-03T06:00:00+00:00)
    """
    with user_errors(data_dir):
        from fundpipe.record import OrgLock, Record, restore

        settings = _org_settings(data_dir, org)
        moment = _parse_at(at)
        # no night of the organization runs meanwhile, here or on another machine
        record = Record(settings.local.record_location)
        with OrgLock(record, expiry_s=settings.local.record_lock_expiry_s, what="restore"):
            done = restore(settings, at=moment)
        if json_out:
            print(
                json.dumps(
                    {
                        "record": done.location,
                        "snapshot": done.snapshot,
                        "taken_at": done.taken_at.isoformat(),
                        "files": done.files,
                        "decisions_replayed": done.decisions_replayed,
                        "files_put_back": done.files_put_back,
                        "set_aside": [str(p) for p in done.set_aside],
                    },
                    indent=2,
                )
            )
            return
        lines = [
            f"restored {settings.service.org_id or 'the organization'} from {done.snapshot} "
            f"(taken {done.taken_at:%Y-%m-%d %H:%M} UTC; hashes checked: {', '.join(done.files)})",
            f"decisions replayed after it: {done.decisions_replayed}; "
            f"closed files put back: {done.files_put_back}",
            *(f"set aside: {p}" for p in done.set_aside),
        ]
        console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def backup_command(
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-hash the record: every snapshot against its manifest, every decision and "
            "filed file against its SHA-256 (exit 1 when one differs).",
        ),
    ] = False,
    snapshot: Annotated[
        bool,
        typer.Option(
            "--now", help="Take a snapshot of the local ledger and warehouse now (as a night does)."
        ),
    ] = False,
    org: Annotated[
        str | None,
        typer.Option(
            "--org",
            help="Only this organization (its id); default: every configured organization, one "
            "section each. --now needs it when several are configured.",
        ),
    ] = None,
    data_dir: DataDirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show where each organization's durable record is and what it holds (every organization
    without --org, one section each); --verify re-hashes it, --now takes a snapshot (of one
    organization).

    Example: fundpipe backup --verify
    """
    with user_errors(data_dir):
        from fundpipe.orgs import pick_org

        scope = reading_scope(data_dir, org, record=True)
        if snapshot:
            from fundpipe.record import take_snapshot

            # a snapshot writes to the record: one organization, named when several are
            pick_org([one.org for one in scope], None)
            settings = scope[0].settings
            taken = take_snapshot(settings)
            if taken is None:
                raise InputError(f"no ledger or warehouse in {settings.local.data_dir} to snapshot")
            console.print(f"snapshot {taken.url}", markup=False, highlight=False, soft_wrap=True)
        show_each_org(scope, (_verified if verify else _described)(json_out), json_out=json_out)


def _verified(json_out: bool) -> Callable[[Settings], tuple[Any, int]]:
    """`backup --verify` of one organization: its record re-hashed (exit 1 when one differs)."""

    def show(settings: Settings) -> tuple[Any, int]:
        from fundpipe.record import verify_record

        check = verify_record(settings)
        if json_out:
            pass
        elif check.ok:
            console.print(
                f"{check.location}: {check.snapshots} snapshot(s), {check.decisions} "
                f"decision(s) and {check.files} filed file(s) match their SHA-256",
                markup=False,
                highlight=False,
                soft_wrap=True,  # a path is never broken across lines
            )
        else:
            for problem in check.problems:
                console.print(problem, markup=False, highlight=False, soft_wrap=True)
        payload = {
            "record": check.location,
            "ok": check.ok,
            "snapshots": check.snapshots,
            "decisions": check.decisions,
            "files": check.files,
            "problems": check.problems,
        }
        return payload, 0 if check.ok else int(ExitCode.NEEDS_PERSON)

    return show


def _described(json_out: bool) -> Callable[[Settings], tuple[Any, int]]:
    """`backup` of one organization: where its record is, its snapshots and decisions."""

    def show(settings: Settings) -> tuple[Any, int]:
        from fundpipe.record import Record, list_snapshots, read_decisions

        record = Record(settings.local.record_location)
        snapshots = list_snapshots(record)
        decisions = read_decisions(record)
        payload = {
            "record": record.location,
            "snapshots": [
                {"url": s.url, "taken_at": s.taken_at.isoformat(), **s.manifest} for s in snapshots
            ],
            "decisions": len(decisions),
        }
        if not json_out:
            newest = (
                f", the newest taken {snapshots[-1].taken_at:%Y-%m-%d %H:%M} UTC"
                if snapshots
                else ""
            )
            console.print(
                f"durable record: {record.location}\n"
                f"{len(snapshots)} snapshot(s){newest}; {len(decisions)} decision(s)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        return payload, 0

    return show
