"""People's decisions in the durable record: one object each, written when made, never rewritten.

A decision (an acknowledgement, an assignment, a close, a review — and any later kind, such as a
rejection or a reopening) is what a person's act wrote to the warehouse: rows of its append-only
tables (``exception_events``, ``period_events``, ``period_closing_balances``), and for a close
the files it filed. :func:`record_decision` writes it as one JSON object

    decisions/<recorded UTC, YYYYMMDDTHHMMSS.ffffffZ>-<8 random hex>.json

(names sort in the order the decisions were recorded; the random tail keeps two made in one
microsecond apart), and copies the files it names to ``files/<path below the reports folder>``.
Nothing is updated: a second acknowledgement is a second object.

:func:`replay` puts the rows of decisions back into a warehouse restored from a snapshot, each
row only when the warehouse lacks it (a row already in the snapshot is skipped), so replaying
every decision is safe; :func:`restore_files` puts back the filed files.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.keys import content_hash, file_hash
from fundpipe.record.store import Record, RecordError, RecordExistsError

if TYPE_CHECKING:
    import duckdb

    from fundpipe.config import Settings

__all__ = [
    "DECISIONS",
    "FILES",
    "Decision",
    "DecisionSink",
    "decision_sink",
    "read_decisions",
    "record_decision",
    "replay",
    "restore_files",
]

#: The folder of the decisions in the record.
DECISIONS = "decisions"
#: The folder of the files decisions filed (a closed month's package), by path below reports.
FILES = "files"

#: Rows a decision wrote, by warehouse table.
Rows = Mapping[str, Sequence[Mapping[str, Any]]]
#: What a library writer of a person's event calls: (decision, rows, at).
DecisionSink = Callable[[str, Rows, datetime], object]


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision read back from the record."""

    name: str
    decision: str
    at: datetime
    recorded_at: datetime
    rows: dict[str, list[dict[str, Any]]]
    files: dict[str, str]
    sha256: str

    @property
    def intact(self) -> bool:
        """Whether its rows and files still hash to what was recorded with them."""
        return _digest(self.decision, self.rows, self.files) == self.sha256


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _digest(decision: str, rows: Rows, files: Mapping[str, str]) -> str:
    body = json.dumps({"decision": decision, "rows": rows, "files": files}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def parse_stamp(text: str) -> datetime:
    """A record name's leading UTC stamp (``YYYYMMDDTHHMMSS[.ffffff]Z``) as an aware datetime."""
    head = text.split("-", 1)[0]
    fmt = "%Y%m%dT%H%M%S.%fZ" if "." in head else "%Y%m%dT%H%M%SZ"
    return datetime.strptime(head, fmt).replace(tzinfo=UTC)


def record_decision(
    settings: Settings,
    decision: str,
    rows: Rows,
    *,
    at: datetime,
    files: Sequence[Path] = (),
    clock: Callable[[], datetime] | None = None,
) -> str:
    """Write one person's decision to the organization's durable record; return its URL.

    ``decision`` names it (``acknowledged``, ``assigned``, ``closed``, ``reviewed``,
    ``rejected``, ``reopened``…); ``rows`` are the rows it wrote, by warehouse table, as
    inserted (datetimes and dates are written ISO); ``at`` is when it was made; ``files`` are
    local files it filed below the reports folder (a closed month's package), copied to the
    record once. Call it right after the rows are written.
    """
    record = Record(settings.local.record_location)
    reports = settings.local.reports_folder.resolve()
    filed: dict[str, str] = {}
    for path in files:
        relative = path.resolve().relative_to(reports).as_posix()
        digest = file_hash(path)
        filed[relative] = digest
        try:
            record.create_from(f"{FILES}/{relative}", path)
        except RecordExistsError:
            if content_hash(record.read(f"{FILES}/{relative}")) != digest:
                raise RecordError(
                    f"{record.url(f'{FILES}/{relative}')} holds another version of {path}: "
                    "a filed file is never replaced"
                ) from None
    plain = {
        table: [{k: _json_value(v) for k, v in row.items()} for row in table_rows]
        for table, table_rows in rows.items()
    }
    recorded = (clock or (lambda: datetime.now(UTC)))()
    body = {
        "decision": decision,
        "at": at.isoformat(),
        "recorded_at": recorded.astimezone(UTC).isoformat(),
        "rows": plain,
        "files": filed,
        "sha256": _digest(decision, plain, filed),
    }
    name = f"{DECISIONS}/{_stamp(recorded)}-{secrets.token_hex(4)}.json"
    record.create(name, (json.dumps(body, indent=1, sort_keys=True) + "\n").encode())
    return record.url(name)


def decision_sink(settings: Settings) -> DecisionSink:
    """``record_decision`` bound to one organization's settings, for a library function that
    writes a person's event but holds no settings (`fundpipe.reconcile.lifecycle.acknowledge`)."""

    def sink(decision: str, rows: Rows, at: datetime) -> str:
        return record_decision(settings, decision, rows, at=at)

    return sink


def read_decisions(record: Record, *, until: datetime | None = None) -> list[Decision]:
    """The record's decisions in the order they were recorded (those recorded by ``until``)."""
    out: list[Decision] = []
    for name in record.names(DECISIONS):
        if not name.endswith(".json"):
            continue
        recorded = parse_stamp(name.rpartition("/")[2])
        if until is not None and recorded > until:
            continue
        try:
            body = json.loads(record.read(name))
            out.append(
                Decision(
                    name=name,
                    decision=str(body["decision"]),
                    at=datetime.fromisoformat(body["at"]),
                    recorded_at=datetime.fromisoformat(body["recorded_at"]),
                    rows={str(t): list(r) for t, r in body["rows"].items()},
                    files={str(k): str(v) for k, v in body.get("files", {}).items()},
                    sha256=str(body["sha256"]),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise RecordError(
                f"{record.url(name)} is not a readable decision (damaged?): restore from a copy "
                "of the record, or move it away and run again"
            ) from None
    return out


def _column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? AND table_schema = 'main'",
        [table],
    ).fetchall()
    return {str(name): str(kind) for name, kind in rows}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def replay(con: duckdb.DuckDBPyConnection, decisions: Sequence[Decision]) -> int:
    """Insert each decision's rows that the warehouse on ``con`` lacks (a row equal in every
    column it was recorded with counts as present); return how many decisions added a row."""
    added = 0
    for decision in decisions:
        if not decision.intact:
            raise RecordError(
                f"decision {decision.name} does not match its recorded SHA-256 (changed after "
                "it was written): nothing was replayed past it"
            )
        wrote = False
        for table, rows in decision.rows.items():
            types = _column_types(con, table)
            if not types:
                raise RecordError(f"decision {decision.name} names an unknown table {table}")
            for row in rows:
                columns = [c for c in row if c in types]
                casts = [f"CAST(? AS {types[c]})" for c in columns]
                match = " AND ".join(
                    f"{_quote(c)} IS NOT DISTINCT FROM {cast}"
                    for c, cast in zip(columns, casts, strict=True)
                )
                values = [row[c] for c in columns]
                present = con.execute(
                    f"SELECT count(*) FROM {_quote(table)} WHERE {match}",
                    values,
                ).fetchone()
                if present and present[0]:
                    continue
                con.execute(
                    f"INSERT INTO {_quote(table)} ({', '.join(map(_quote, columns))}) "
                    f"VALUES ({', '.join(casts)})",
                    values,
                )
                wrote = True
        added += wrote
    return added


def restore_files(record: Record, decisions: Sequence[Decision], reports_folder: Path) -> int:
    """Put back the files the decisions filed (below ``reports_folder``) that are missing
    locally, checked against their recorded SHA-256 and made read-only; return how many."""
    put = 0
    folders: set[Path] = set()
    for decision in decisions:
        for relative, digest in decision.files.items():
            target = reports_folder / relative
            if target.exists():
                continue
            data = record.read(f"{FILES}/{relative}")
            if content_hash(data) != digest:
                raise RecordError(
                    f"{record.url(f'{FILES}/{relative}')} does not match the SHA-256 recorded "
                    f"with decision {decision.name}"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(target.parent, os.W_OK):
                target.parent.chmod(target.parent.stat().st_mode | stat.S_IWUSR)
            target.write_bytes(data)
            target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            folders.add(target.parent)
            put += 1
    # a package's folder is read-only, as the close left it; the `closed/` folder a review
    # sits in (`closed/YYYY-MM.vN.review.json`) stays writable for the next close and review
    packages = (f for f in folders if (f / "manifest.json").is_file())
    for folder in sorted(packages, key=lambda p: len(p.parts), reverse=True):
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH)
    return put
