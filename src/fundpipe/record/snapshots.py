"""The nightly snapshot: a consistent copy of an organization's ledger and warehouse, hashed.

After a night, :func:`take_snapshot` copies what every past as-of reads — ``warehouse.duckdb``,
``ledger.duckdb`` and the ledger's binding — into the record:

    snapshots/<taken, UTC YYYYMMDDTHHMMSS.ffffffZ>/warehouse.duckdb, ledger.duckdb,
                                                  ledger.binding.json, manifest.json

Each DuckDB file is copied while fundpipe holds it for writing, after a ``CHECKPOINT`` (the
file then holds every committed row; nothing else can write it meanwhile), so the copy is
consistent. ``manifest.json`` — each file's SHA-256 and size, the fundpipe version, the schema
versions (the last migration applied to each file), the as-of date and the months closed by
then — is written last: a snapshot without one is unfinished and never restored.

The machine remembers the newest snapshot its local state is (``<data_dir>/record-seen.json``:
written by :func:`take_snapshot` and by a restore; :func:`last_seen` reads it), so that a night
can tell when the record holds a newer one: another machine ran the organization since.

:func:`prune` keeps the newest ``Settings.record_keep_nights`` snapshots and, forever, the first
snapshot that holds each close. :func:`verify_record` re-hashes everything in the record.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.keys import content_hash, file_hash, stream_hash
from fundpipe.record.decisions import FILES, parse_stamp, read_decisions
from fundpipe.record.store import Record, RecordError

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = [
    "MANIFEST",
    "SEEN",
    "SNAPSHOTS",
    "RecordCheck",
    "Seen",
    "Snapshot",
    "last_seen",
    "list_snapshots",
    "mark_seen",
    "prune",
    "state_files",
    "take_snapshot",
    "verify_record",
]

#: The folder of the snapshots in the record.
SNAPSHOTS = "snapshots"
#: A snapshot's manifest, written last.
MANIFEST = "manifest.json"
#: Beside the local state: the newest snapshot it is (taken here, or restored from).
SEEN = "record-seen.json"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One finished snapshot in the record (its manifest read)."""

    name: str
    taken_at: datetime
    url: str
    manifest: dict[str, Any]

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        """File name → ``{"sha256", "bytes"}``."""
        files: dict[str, dict[str, Any]] = self.manifest["files"]
        return files

    @property
    def closed_periods(self) -> list[str]:
        """The months closed when it was taken."""
        return list(self.manifest.get("closed_periods", []))


@dataclass(frozen=True, slots=True)
class Seen:
    """The snapshot this machine's local state last was (`last_seen`)."""

    location: str
    snapshot: str
    taken_at: datetime


def mark_seen(settings: Settings, record: Record, snapshot: Snapshot) -> None:
    """Remember that the local state is ``snapshot`` of ``record`` (see the module)."""
    body = {
        "location": record.location,
        "snapshot": snapshot.name,
        "taken_at": snapshot.taken_at.astimezone(UTC).isoformat(),
    }
    path = settings.local.data_dir / SEEN
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{SEEN}.writing")
    temporary.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)


def last_seen(settings: Settings) -> Seen | None:
    """The snapshot this machine's local state last was; None when it never took or restored
    one, or cannot tell (an unreadable note is as good as none: the night then only restores
    what is missing or empty)."""
    path = settings.local.data_dir / SEEN
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        return Seen(
            location=str(body["location"]),
            snapshot=str(body["snapshot"]),
            taken_at=datetime.fromisoformat(body["taken_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class RecordCheck:
    """What `verify_record` found: what it re-hashed, and every problem by name."""

    location: str
    snapshots: int
    decisions: int
    files: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every snapshot, decision and filed file is as recorded."""
        return not self.problems


def state_files(settings: Settings) -> dict[str, tuple[Path, Path | None]]:
    """Record name → (local file, its schema file: a DuckDB file; None: copied as it is)."""
    from fundpipe.submit import SCHEMA_FILE as LEDGER_SCHEMA
    from fundpipe.submit import binding_file
    from fundpipe.warehouse import SCHEMA_FILE as WAREHOUSE_SCHEMA

    return {
        "warehouse.duckdb": (settings.local.warehouse_file, WAREHOUSE_SCHEMA),
        "ledger.duckdb": (settings.local.ledger_file, LEDGER_SCHEMA),
        "ledger.binding.json": (binding_file(settings), None),
    }


def _copy_duckdb(path: Path, schema: Path, dest: Path) -> tuple[int, list[str]]:
    """Copy a DuckDB file consistently; return its last migration and (for the warehouse) the
    months closed in it."""
    from fundpipe.warehouse import Warehouse, applied_numbers

    with Warehouse(path, schema_file=schema).write() as con:
        con.execute("CHECKPOINT")
        version = max(applied_numbers(con), default=0)
        closed: list[str] = []
        if con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'period_events'"
        ).fetchone() == (1,):
            closed = [
                str(p)
                for (p,) in con.execute(
                    "SELECT DISTINCT period FROM period_events WHERE event = 'closed' ORDER BY 1"
                ).fetchall()
            ]
        shutil.copyfile(path, dest)
    return version, closed


def take_snapshot(
    settings: Settings,
    *,
    as_of: date | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Snapshot | None:
    """Copy the organization's ledger and warehouse into its record with a manifest; prune
    the old snapshots. None when there is no local state to copy (nothing ran yet)."""
    from fundpipe import __version__

    files = state_files(settings)
    if not settings.local.warehouse_file.exists() and not settings.local.ledger_file.exists():
        return None
    record = Record(settings.local.record_location)
    taken = (clock or (lambda: datetime.now(UTC)))()
    name = f"{SNAPSHOTS}/{taken.astimezone(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}"
    listed: dict[str, dict[str, Any]] = {}
    schema: dict[str, int] = {}
    closed: list[str] = []
    with tempfile.TemporaryDirectory(prefix=".snapshot-", dir=settings.local.data_dir) as tmp:
        for file_name, (path, schema_file) in files.items():
            if not path.exists():
                continue
            copy = Path(tmp) / file_name
            if schema_file is None:
                shutil.copyfile(path, copy)
            else:
                version, periods = _copy_duckdb(path, schema_file, copy)
                schema[file_name.removesuffix(".duckdb")] = version
                closed = closed or periods
            listed[file_name] = {"sha256": file_hash(copy), "bytes": copy.stat().st_size}
            record.create_from(f"{name}/{file_name}", copy)
    manifest = {
        "organization": settings.service.org_id,
        "taken_at": taken.astimezone(UTC).isoformat(),
        "as_of": as_of.isoformat() if as_of else None,
        "fundpipe_version": __version__,
        "schema_version": schema,
        "closed_periods": closed,
        "files": listed,
    }
    record.create(f"{name}/{MANIFEST}", (json.dumps(manifest, indent=1) + "\n").encode())
    snapshot = Snapshot(name=name, taken_at=taken, url=record.url(name), manifest=manifest)
    mark_seen(settings, record, snapshot)
    prune(record, keep=settings.local.record_keep_nights)
    return snapshot


def list_snapshots(record: Record) -> list[Snapshot]:
    """The record's finished snapshots, oldest first."""
    out: list[Snapshot] = []
    for folder in record.folders(SNAPSHOTS):
        name = f"{SNAPSHOTS}/{folder}"
        if not record.exists(f"{name}/{MANIFEST}"):
            continue
        try:
            manifest = json.loads(record.read(f"{name}/{MANIFEST}"))
            taken = parse_stamp(folder)
        except ValueError:
            raise RecordError(
                f"{record.url(f'{name}/{MANIFEST}')} is not a readable manifest (damaged?)"
            ) from None
        out.append(Snapshot(name=name, taken_at=taken, url=record.url(name), manifest=manifest))
    return out


def prune(record: Record, *, keep: int) -> list[str]:
    """Delete the snapshots past the newest ``keep`` that are not the first to hold a close
    (and unfinished ones older than the newest finished); return the names deleted."""
    finished = list_snapshots(record)
    kept = {s.name for s in finished[-keep:]}
    seen: set[str] = set()
    for snapshot in finished:
        new = set(snapshot.closed_periods) - seen
        if new:
            kept.add(snapshot.name)
            seen |= new
    newest = finished[-1].taken_at if finished else None
    deleted = []
    for folder in record.folders(SNAPSHOTS):
        name = f"{SNAPSHOTS}/{folder}"
        done = any(s.name == name for s in finished)
        if name in kept or (not done and (newest is None or parse_stamp(folder) >= newest)):
            continue
        record.remove(name, recursive=True)
        deleted.append(name)
    return deleted


def verify_record(settings: Settings) -> RecordCheck:
    """Re-hash the organization's record: every snapshot's files against its manifest, every
    decision against its own SHA-256, every filed file against the decision that filed it."""
    record = Record(settings.local.record_location)
    problems: list[str] = []
    snapshots = list_snapshots(record)
    for snapshot in snapshots:
        for file_name, expected in snapshot.files.items():
            object_name = f"{snapshot.name}/{file_name}"
            if not record.exists(object_name):
                problems.append(f"{record.url(object_name)} is missing")
                continue
            with record.open_read(object_name) as handle:
                digest = stream_hash(handle)
            if digest != expected["sha256"]:
                problems.append(f"{record.url(object_name)} differs from its manifest (sha256)")
    decisions = read_decisions(record)
    filed = 0
    for decision in decisions:
        if not decision.intact:
            problems.append(f"{record.url(decision.name)} differs from its recorded sha256")
        for relative, expected_hash in decision.files.items():
            filed += 1
            object_name = f"{FILES}/{relative}"
            if not record.exists(object_name):
                problems.append(f"{record.url(object_name)} is missing")
            elif content_hash(record.read(object_name)) != expected_hash:
                problems.append(f"{record.url(object_name)} differs from its decision (sha256)")
    if not snapshots and not decisions:
        problems.append(f"{record.location} holds no snapshot and no decision")
    return RecordCheck(
        location=record.location,
        snapshots=len(snapshots),
        decisions=len(decisions),
        files=filed,
        problems=problems,
    )
