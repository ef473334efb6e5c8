"""Rebuild an organization's local state from its durable record, and a night's part in it.

:func:`restore` picks the newest snapshot (taken by ``at``, when given), downloads its files,
checks each against the manifest's SHA-256, sets aside whatever local state is there
(``<file>.before-restore-<stamp>``: nothing is deleted), puts the snapshot's files in place,
replays the decisions recorded after it (by ``at``) and puts back the closed months' packages.

:func:`durable_night` is what a night does with the record: it holds the organization's lock in
the record for the night (two machines never run one organization at once), restores first
when the machine has no local state for the organization but the record has a snapshot, and
takes the night's snapshot when the night ends without an error.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from fundpipe.keys import stream_hash
from fundpipe.record.decisions import read_decisions, replay, restore_files
from fundpipe.record.lock import OrgLock
from fundpipe.record.snapshots import Snapshot, list_snapshots, state_files, take_snapshot
from fundpipe.record.store import Record, RecordError

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = ["RestoreResult", "durable_night", "has_local_state", "in_durable_record", "restore"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


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
    from fundpipe.warehouse.migrations import load_migrations

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
) -> RestoreResult:
    """Rebuild the organization's ledger and warehouse from its record; see the module.

    Raises RecordError (naming the object) when the record has no snapshot, or a file does not
    match its manifest — before anything local is touched.
    """
    from fundpipe.warehouse.file import Warehouse

    record = Record(settings.local.record_location)
    snapshot = _pick(record, at)
    _check_schema(snapshot)
    targets = state_files(settings)
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
    decisions = read_decisions(record, until=at)
    with Warehouse(settings.local.warehouse_file).write() as con:
        replayed = replay(con, decisions)
    put_back = restore_files(record, decisions, settings.local.reports_folder)
    return RestoreResult(
        location=record.location,
        snapshot=snapshot.url,
        taken_at=snapshot.taken_at,
        files=sorted(snapshot.files),
        decisions_replayed=replayed,
        files_put_back=put_back,
        set_aside=set_aside,
    )


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
        restored = None
        if not has_local_state(settings) and list_snapshots(record):
            restored = restore(settings, clock=clock)
        yield restored
        take_snapshot(settings, as_of=as_of, clock=clock)


def in_durable_record(
    run: Callable[Concatenate[Settings, _P], _R],
) -> Callable[Concatenate[Settings, _P], _R]:
    """Run a night (``run(settings, ..., as_of=...)``) inside :func:`durable_night` for its
    settings: the decorator of `fundpipe.night.night`, so the night's own steps stay as they
    are."""

    @functools.wraps(run)
    def within(settings: Settings, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        as_of: Any = kwargs.get("as_of")
        with durable_night(settings, as_of=as_of):
            return run(settings, *args, **kwargs)

    return within
