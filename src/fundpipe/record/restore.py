"""Rebuild an organization's local state from its durable record, and a night's part in it.

:func:`restore` picks the newest snapshot (taken by ``at``, when given), downloads its files,
checks each against the manifest's SHA-256, sets aside whatever local state is there
(``<file>.before-restore-<stamp>``: nothing is deleted), puts the snapshot's files in place,
replays the decisions recorded after it (by ``at``) and puts back the closed months' packages.

:func:`catch_up` is how a night starts: it compares the local state with the record's newest
snapshot and restores first, before anything else runs, what the record has more of —

- a missing warehouse, or an empty one (no sync, no exception, no period event: what a night
  that lost its warehouse would rebuild), with the decisions made after the snapshot replayed
  and the closed months' files put back; the local ledger is kept;
- a missing ledger (and its binding when that is missing too); the local warehouse is kept;
- the whole local state when it is older than the record's: the record holds a snapshot newer
  than the one this machine last took or restored (`snapshots.last_seen`) — another machine ran
  the organization since.

A damaged file is never restored over: it stays the machine's fault (`DamagedFileError`, exit
6, the one line naming ``fundpipe restore --org ORG``), for a person to decide (a restore sets
aside the local file, and the night after a damaged one would otherwise report from a copy of
yesterday as if nothing had happened). Only a person's ``fundpipe restore`` replaces it.

:func:`durable_night` is what a night does with the record: it holds the organization's lock in
the record for the night (two machines never run one organization at once), catches up first
(:func:`catch_up`), and takes the night's snapshot when the night ends without an error.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, Self, TypeVar

from fundpipe.keys import stream_hash
from fundpipe.record.decisions import read_decisions, replay, restore_files
from fundpipe.record.lock import OrgLock
from fundpipe.record.snapshots import (
    Snapshot,
    last_seen,
    list_snapshots,
    mark_seen,
    state_files,
    take_snapshot,
)
from fundpipe.record.store import Record, RecordError

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = [
    "RestoreResult",
    "catch_up",
    "durable_night",
    "has_local_state",
    "in_durable_record",
    "restore",
]

_P = ParamSpec("_P")

#: The local files a restore can put back, as a person names them.
_WHAT = {
    "warehouse.duckdb": "the warehouse",
    "ledger.duckdb": "the ledger",
    "ledger.binding.json": "the ledger's binding",
}


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What a restore did."""

    location: str
    snapshot: str
    taken_at: datetime
    files: list[str]
    decisions_replayed: int
    files_put_back: int
    set_aside: list[Path] = field(default_factory=list)
    #: why a night restored first ("the warehouse was missing"); "" for `fundpipe restore`
    why: str = ""

    @property
    def sentence(self) -> str:
        """What was restored, from which snapshot, and why, in one line (what a night says)."""
        what = [_WHAT.get(f, f) for f in self.files]
        said = ", ".join(what[:-1]) + (" and " if len(what) > 1 else "") + what[-1]
        line = (
            f"restored {said} from the record's snapshot of "
            f"{self.taken_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({self.snapshot})"
        )
        if "warehouse.duckdb" in self.files:
            line += f", {_counted(self.decisions_replayed, 'decision')} made after it replayed"
        if self.files_put_back:
            line += f", {_counted(self.files_put_back, 'closed file')} put back"
        if self.set_aside:
            line += f"; the local files set aside as {', '.join(p.name for p in self.set_aside)}"
        return line + (f": {self.why}" if self.why else "")


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def has_local_state(settings: Settings) -> bool:
    """Whether this machine holds the organization's ledger or warehouse."""
    return settings.local.warehouse_file.exists() or settings.local.ledger_file.exists()


def _pick(record: Record, at: datetime | None) -> Snapshot:
    snapshots = list_snapshots(record)
    if at is not None:
        snapshots = [s for s in snapshots if s.taken_at <= at]
    if not snapshots:
        when = f" taken by {at.isoformat()}" if at else ""
        raise RecordError(
            f"{record.location} holds no snapshot{when}: nothing to restore from (a snapshot "
            "is taken after each night)"
        )
    return snapshots[-1]


def _check_schema(snapshot: Snapshot) -> None:
    from fundpipe.resources import SCHEMAS_DIR
    from fundpipe.warehouse import load_migrations

    for name, version in snapshot.manifest.get("schema_version", {}).items():
        text = (SCHEMAS_DIR / f"{name}.sql").read_text(encoding="utf-8")
        known = max((m.number for m in load_migrations(text)), default=0)
        if int(version) > known:
            raise RecordError(
                f"{snapshot.url} was made by fundpipe {snapshot.manifest.get('fundpipe_version')}"
                f" ({name} schema {version}; this fundpipe knows up to {known}): restore with "
                "that version or newer"
            )


def restore(
    settings: Settings,
    *,
    at: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
    only: Collection[str] | None = None,
    why: str = "",
) -> RestoreResult:
    """Rebuild the organization's ledger and warehouse from its record; see the module.

    ``only``: the record's names of the files to put back (``warehouse.duckdb``,
    ``ledger.duckdb``, ``ledger.binding.json``; default all); the decisions are replayed and
    the closed files put back when the warehouse is among them. ``why``: what the result says
    the restore was for. Raises RecordError (naming the object) when the record has no
    snapshot, or a file does not match its manifest — before anything local is touched.
    """
    from fundpipe.warehouse import Warehouse

    record = Record(settings.local.record_location)
    snapshot = _pick(record, at)
    _check_schema(snapshot)
    targets = {
        name: target
        for name, target in state_files(settings).items()
        if only is None or name in only
    }
    settings.local.data_dir.mkdir(parents=True, exist_ok=True)
    staging = settings.local.data_dir / f".restore-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        for file_name, expected in snapshot.files.items():
            if file_name not in targets:
                continue
            with (
                record.open_read(f"{snapshot.name}/{file_name}") as src,
                (staging / file_name).open("wb") as dst,
            ):
                digest = stream_hash(src, copy_to=dst)
            if digest != expected["sha256"]:
                raise RecordError(
                    f"{snapshot.url}/{file_name} does not match its manifest (sha256 "
                    f"{digest[:12]}…, recorded {str(expected['sha256'])[:12]}…): "
                    "restore an earlier snapshot with --at"
                )
        stamp = (clock or (lambda: datetime.now(UTC)))().strftime("%Y%m%dT%H%M%SZ")
        set_aside: list[Path] = []
        for file_name, (path, _) in targets.items():
            for existing in (path, path.with_name(path.name + ".wal")):
                if existing.exists():
                    aside = existing.with_name(f"{existing.name}.before-restore-{stamp}")
                    existing.rename(aside)
                    set_aside.append(aside)
            staged = staging / file_name
            if staged.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                staged.replace(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    replayed = put_back = 0
    if "warehouse.duckdb" in targets:
        decisions = read_decisions(record, until=at)
        with Warehouse(settings.local.warehouse_file).write() as con:
            replayed = replay(con, decisions)
        put_back = restore_files(record, decisions, settings.local.reports_folder)
    if only is None:
        # the whole local state is the record's now: a later night counts only the snapshots
        # taken after this restore as newer (one restored `--at` an earlier time stays so)
        mark_seen(settings, record, list_snapshots(record)[-1])
    return RestoreResult(
        location=record.location,
        snapshot=snapshot.url,
        taken_at=snapshot.taken_at,
        files=sorted(f for f in snapshot.files if f in targets),
        decisions_replayed=replayed,
        files_put_back=put_back,
        set_aside=set_aside,
        why=why,
    )


def _holds_nothing(settings: Settings) -> bool:
    """Whether the local warehouse holds nothing a night or a person wrote (no sync, no
    exception event, no period event). Read as it is, without waiting or migrating: a file
    another process holds for writing counts as holding something (the night then waits for
    it as always); a file that is not a database, or a damaged block met here, raises
    `DamagedFileError` — the night would meet it anyway, and never restores over it."""
    import duckdb

    from fundpipe.warehouse import Warehouse, faults_named

    path = settings.local.warehouse_file
    try:
        con = Warehouse(path).peek()
    except duckdb.Error:  # held by a writer: it is there, and the night waits for it
        return False
    if con is None:
        return True
    try:
        with faults_named(path, "warehouse", con=con):
            tables = [
                str(name)
                for (name,) in con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND "
                    "table_name IN ('syncs', 'exception_events', 'period_events')"
                ).fetchall()
            ]
            held = 0
            for table in tables:  # each a name from the fixed list above
                found = con.execute(f"SELECT count(*) FROM {table}").fetchone()
                held += int(found[0]) if found else 0
    finally:
        con.close()
    return held == 0


def _refuse_damaged(settings: Settings) -> None:
    """Open each local DuckDB file as a night does (every block read): a damaged one raises
    `DamagedFileError` naming it and ``fundpipe restore --org ORG``."""
    from fundpipe.submit import read_ledger
    from fundpipe.warehouse import Warehouse

    with read_ledger(settings.local.ledger_file, org=settings.service.org_id):
        pass
    if settings.local.warehouse_file.exists():
        with Warehouse(settings.local.warehouse_file).write():
            pass


def _behind(settings: Settings, newest: Snapshot, location: str) -> tuple[list[str] | None, str]:
    """What the local state lacks that ``newest`` holds: the record's names of the files to
    restore (None: all of them) and why; ``([], "")`` when it lacks nothing."""
    from fundpipe.submit import binding_file

    warehouse, ledger = settings.local.warehouse_file, settings.local.ledger_file
    if not warehouse.exists() and not ledger.exists():
        return None, "this machine held no local state of the organization"
    seen = last_seen(settings)
    if seen is not None and seen.location == location and seen.snapshot < newest.name:
        _refuse_damaged(settings)
        return None, (
            f"the local state was the snapshot of {seen.taken_at.astimezone(UTC):%Y-%m-%d %H:%M}"
            " UTC, older than the record's: another machine ran this organization since"
        )
    wanted: dict[str, str] = {}  # the record's name → why
    if not warehouse.exists():
        wanted["warehouse.duckdb"] = "the warehouse was missing"
    elif _holds_nothing(settings):
        wanted["warehouse.duckdb"] = "the warehouse was empty"
    if not ledger.exists():
        wanted["ledger.duckdb"] = "the ledger was missing"
        if not binding_file(settings).exists():
            wanted["ledger.binding.json"] = ""
    kept = [name for name in wanted if name in newest.files]
    return kept, "; ".join(wanted[name] for name in kept if wanted[name])


def catch_up(
    settings: Settings, *, clock: Callable[[], datetime] | None = None
) -> RestoreResult | None:
    """Compare the local state with the record and restore first what the record has more of
    (see the module); what was restored, or None when the local state is the record's (or the
    record holds no snapshot: nothing to restore from). Call it holding the organization's
    lock, before anything else of the night runs."""
    record = Record(settings.local.record_location)
    snapshots = list_snapshots(record)
    if not snapshots:
        return None
    files, why = _behind(settings, snapshots[-1], record.location)
    if files is not None and not files:
        return None
    return restore(settings, clock=clock, only=files, why=why)


@contextmanager
def durable_night(
    settings: Settings,
    *,
    as_of: date | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Iterator[RestoreResult | None]:
    """The night's part in the durable record (see the module): the lock held for the block,
    a restore first when there is no local state but a snapshot (yielded; None otherwise), the
    snapshot after the block when it raised nothing."""
    record = Record(settings.local.record_location)
    lock = OrgLock(
        record,
        expiry_s=settings.local.record_lock_expiry_s,
        wait_s=settings.pipeline.inbox_lock_wait_s,  # the flows wait: a nightly and an inbox run may meet
        clock=clock,
    )
    with lock:
        restored = catch_up(settings, clock=clock)
        yield restored
        take_snapshot(settings, as_of=as_of, clock=clock)


class Restorable(Protocol):
    """A night's result that can say what its start restored (`fundpipe.night.NightResult`)."""

    def with_restored(self, restored: RestoreResult) -> Self:
        """This result, saying ``restored``."""
        ...


_N = TypeVar("_N", bound=Restorable)


def in_durable_record(
    run: Callable[Concatenate[Settings, _P], _N],
) -> Callable[Concatenate[Settings, _P], _N]:
    """Run a night (``run(settings, ..., as_of=...)``) inside :func:`durable_night` for its
    settings: the decorator of `fundpipe.night.night`, so the night's own steps stay as they
    are; its result says what the night's start restored (``with_restored``)."""

    @functools.wraps(run)
    def within(settings: Settings, /, *args: _P.args, **kwargs: _P.kwargs) -> _N:
        as_of: Any = kwargs.get("as_of")
        with durable_night(settings, as_of=as_of) as restored:
            result = run(settings, *args, **kwargs)
        return result if restored is None else result.with_restored(restored)

    return within
