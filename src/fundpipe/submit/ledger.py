"""The submission ledger: a DuckDB file of intents and outcomes (``Settings.ledger_file``).

Tables (DDL in ``schemas/ledger.sql``, migrated like the warehouse; the first two are the
seam the warehouse copies — see docs/architecture.md):

- ``ledger_files``     one row per file content hash: ``processing | processed | rejected |
                       conflict``, rows, distributions, total cents (+ ``message``, ``updated_at``).
- ``ledger_payments``  one row per sheet payment row: the distribution it belongs to, its state
                       ``planned | sent | created | linked | conflict | failed`` and, once
                       known, its ``dst_``/``dpmt_`` ids (+ ``request_key``).
- ``ledger_redrops``   one row per drop of a content already known: the name it came with,
                       when, and the earlier file it repeats (``same_as``, processed when).
- ``ledger_requests``  one row per request (keyed by its Idempotency-Key): the intent written
                       *before* sending (``state = 'sent'``, body with account numbers masked),
                       the outcome written after (``succeeded | failed | unknown | settled``,
                       HTTP status, request id, service ids, error).

A request whose row still says ``sent`` or ``unknown`` when a run starts was interrupted: the
next run settles it (looking distributions up by ``external_reference``) before sending anything.
Every write is its own transaction, so a SIGKILL loses at most the write in progress. The
intents of a chunk of requests about to be sent together are one statement and one commit
(:meth:`Ledger.record_intents`), committed before any of them is sent. The file is opened by
:func:`open_ledger` (writing) or :func:`read_ledger` (read-only, a dry run's), and every
transaction is :meth:`Ledger.transaction`, on the one door to DuckDB
(``fundpipe.warehouse.connection``).

Longer than ~400 lines because it is one class over one DuckDB connection: the tables
share the write batching (``batched()`` / ``transaction()``) that bounds what a crash can lose,
and splitting the class would spread that one invariant over several modules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from fundpipe.keys import canonical_json
from fundpipe.plan import (
    PlannedDistribution,
    ResolvedRequest,
    display_body,
    instruction_fingerprint,
)
from fundpipe.resources import SCHEMAS_DIR
from fundpipe.warehouse import (
    apply_migrations,
    connect,
    faults_named,
    load_migrations,
    refuse_damaged,
    transaction,
)

Clock = Callable[[], datetime]

#: The ledger's DDL, applied as migrations (``fundpipe.warehouse.migrations``).
SCHEMA_FILE = SCHEMAS_DIR / "ledger.sql"

_PAYMENT_SCHEMA = pa.schema(
    [
        ("file_hash", pa.string()),
        ("source_file", pa.string()),
        ("sheet", pa.string()),
        ("row", pa.int32()),
        ("distribution_external_reference", pa.string()),
        ("distribution_name", pa.string()),
        ("vehicle", pa.string()),
        ("entity", pa.string()),
        ("amount_cents", pa.int64()),
        ("currency", pa.string()),
        ("distribution_id", pa.string()),
        ("payment_id", pa.string()),
        ("state", pa.string()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        ("request_key", pa.string()),
        ("position", pa.int32()),
    ]
)
_OUTCOME_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("state", pa.string()),
        ("status", pa.int32()),
        ("request_id", pa.string()),
        ("service_ids", pa.string()),
        ("error", pa.string()),
    ]
)
_INTENT_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("phase", pa.string()),
        ("method", pa.string()),
        ("path", pa.string()),
        ("label", pa.string()),
        ("file_hashes", pa.string()),
        ("distribution_refs", pa.string()),
        ("body", pa.string()),
        ("attempts", pa.int32()),
        ("own_references", pa.string()),
    ]
)
_MARK_SCHEMA = pa.schema(
    [
        ("file_hash", pa.string()),
        ("ref", pa.string()),
        ("position", pa.int32()),
        ("state", pa.string()),
        ("request_key", pa.string()),
        ("distribution_id", pa.string()),
        ("payment_id", pa.string()),
        ("entity", pa.string()),
    ]
)

#: The intents of `_intents` (an Arrow table of `_INTENT_SCHEMA`) as new `sent` rows.
_INSERT_INTENTS = """
    INSERT INTO ledger_requests AS r (key, phase, method, path, label,
        file_hashes, distribution_refs, body, state, attempts, status,
        request_id, service_ids, error, intent_at, outcome_at, own_references)
    SELECT key, phase, method, path, label, file_hashes, distribution_refs,
        body, 'sent', attempts, NULL, NULL, NULL, NULL, $now, NULL,
        own_references
    FROM _intents
"""
#: ... and keys already written sent again: one more attempt each.
_UPSERT_INTENTS = """
    ON CONFLICT (key) DO UPDATE SET
        state = 'sent', attempts = r.attempts + excluded.attempts,
        intent_at = excluded.intent_at
"""

#: Payment states that are final: nothing more will be sent for the row.
FINAL_PAYMENT_STATES = frozenset({"created", "linked", "conflict", "failed"})


@dataclass(frozen=True)
class RequestRecord:
    """A ledger row of ``ledger_requests``."""

    key: str
    phase: str
    path: str
    state: str
    file_hashes: tuple[str, ...]
    distribution_refs: tuple[str, ...]
    attempts: int
    status: int | None
    intent_at: datetime | None


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Ledger:
    """An open ledger. Use :func:`open_ledger` (a context manager) to get one."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        clock: Clock = _utcnow,
        *,
        read_only: bool = False,
    ) -> None:
        """Wrap an open DuckDB connection; migrates it to ``schemas/ledger.sql`` (unless
        read-only)."""
        self._con = connection
        self._clock = clock
        self._depth = 0
        self._marks: list[dict[str, Any]] | None = None
        self._outcomes: list[dict[str, Any]] | None = None
        if not read_only:
            apply_migrations(self._con, load_migrations(SCHEMA_FILE.read_text(encoding="utf-8")))

    # ------------------------------------------------------------------------ files

    def file_state(self, file_hash: str) -> str | None:
        """The recorded state of a file content hash, or None when never seen."""
        row = self._con.execute(
            "SELECT state FROM ledger_files WHERE file_hash = ?", [file_hash]
        ).fetchone()
        return None if row is None else str(row[0])

    def record_file(
        self,
        file_hash: str,
        source_file: str,
        state: str,
        *,
        rows: int | None = None,
        distributions: int | None = None,
        total_cents: int | None = None,
        message: str | None = None,
    ) -> None:
        """Insert or update one file's row (counts kept when not given)."""
        now = self._clock()
        self._con.execute(
            """
            INSERT INTO ledger_files AS f VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (file_hash) DO UPDATE SET
                source_file = excluded.source_file,
                state = excluded.state,
                rows = coalesce(excluded.rows, f.rows),
                distributions = coalesce(excluded.distributions, f.distributions),
                total_cents = coalesce(excluded.total_cents, f.total_cents),
                message = excluded.message,
                updated_at = excluded.updated_at
            """,
            [
                file_hash,
                source_file,
                now,
                state,
                rows,
                distributions,
                total_cents,
                message,
                now,
            ],
        )

    def first_seen(self, file_hash: str) -> tuple[str, datetime] | None:
        """The name a content was first ingested under and when its row last changed (for a
        processed file: when it was processed); None when never seen."""
        row = self._con.execute(
            "SELECT source_file, updated_at FROM ledger_files WHERE file_hash = ?", [file_hash]
        ).fetchone()
        return None if row is None else (str(row[0]), row[1])

    def record_redrop(
        self, file_hash: str, source_file: str, same_as: str, same_as_at: datetime | None
    ) -> None:
        """Record one drop of a content already known (``same_as``, processed at
        ``same_as_at``; None: earlier in the same drop)."""
        self._con.execute(
            "INSERT INTO ledger_redrops VALUES (?, ?, ?, ?, ?)",
            [file_hash, source_file, self._clock(), same_as, same_as_at],
        )

    def redrops(self) -> list[dict[str, Any]]:
        """Every drop of a content already known, oldest first."""
        cur = self._con.execute("SELECT * FROM ledger_redrops ORDER BY dropped_at, source_file")
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def record_references(self, file_hash: str, references: Iterable[str]) -> None:
        """Record the distribution references a rejected file names (once each)."""
        rows = [(file_hash, ref) for ref in sorted(set(references))]
        if rows:
            self._con.executemany(
                "INSERT INTO ledger_file_distributions VALUES (?, ?) ON CONFLICT DO NOTHING", rows
            )

    def files(self) -> list[dict[str, Any]]:
        """Every file row, oldest first."""
        cur = self._con.execute("SELECT * FROM ledger_files ORDER BY received_at, file_hash")
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    # ------------------------------------------------------------------------ payments

    def record_distributions(self, distributions: Iterable[PlannedDistribution]) -> None:
        """Record every sheet row of ``distributions`` once (later calls update states only).

        ``create`` rows start ``planned``, ``link`` rows ``linked`` (with the existing id),
        ``conflict`` rows ``conflict``. Rows already created or linked are left alone.
        """
        now = self._clock()
        # column by column: one dict per payment row costs ~1 KB each on a big night
        columns: dict[str, list[Any]] = {name: [] for name in _PAYMENT_SCHEMA.names}
        for d in distributions:
            state = {"create": "planned", "link": "linked", "conflict": "conflict"}[d.action]
            count = len(d.payments)
            for position, p in enumerate(d.payments):
                columns["source_file"].append(p.source_file)
                columns["sheet"].append(p.sheet)
                columns["row"].append(p.row)
                columns["entity"].append(p.entity if isinstance(p.entity, str) else None)
                columns["amount_cents"].append(p.amount_cents)
                columns["currency"].append(p.currency)
                columns["position"].append(position)
            for name, value in (
                ("file_hash", d.file_hash),
                ("distribution_external_reference", d.external_reference),
                ("distribution_name", d.name),
                ("vehicle", d.vehicle),
                ("distribution_id", d.existing_id if d.action == "link" else None),
                ("payment_id", None),
                ("state", state),
                ("updated_at", now),
                ("request_key", None),
            ):
                columns[name].extend([value] * count)
        if not columns["row"]:
            return
        incoming = pa.Table.from_pydict(columns, schema=_PAYMENT_SCHEMA)
        del columns
        with self.transaction():
            self._con.register("_incoming", incoming)
            try:
                self._con.execute(
                    """
                    INSERT INTO ledger_payments
                    SELECT i.* FROM _incoming i
                    WHERE NOT EXISTS (
                        SELECT 1 FROM ledger_payments p
                        WHERE p.file_hash = i.file_hash AND p.sheet IS NOT DISTINCT FROM i.sheet
                          AND p.row = i.row)
                    """
                )
                # rows seen before and not final: take the new classification
                self._con.execute(
                    """
                    UPDATE ledger_payments p SET
                        state = CASE WHEN i.state = 'planned' AND p.state = 'sent' THEN 'sent'
                                     ELSE i.state END,
                        distribution_id = coalesce(i.distribution_id, p.distribution_id),
                        updated_at = i.updated_at
                    FROM _incoming i
                    WHERE p.file_hash = i.file_hash AND p.sheet IS NOT DISTINCT FROM i.sheet
                      AND p.row = i.row AND p.state NOT IN ('created', 'linked')
                    """
                )
            finally:
                self._con.unregister("_incoming")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one commit (nested calls join the outer transaction): the
        ledger's `fundpipe.warehouse.connection.transaction`, committed when the outermost
        block ends, rolled back when it raises."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        with transaction(self._con):
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0

    def mark_distributions(
        self,
        file_hash: str,
        refs: Sequence[str],
        state: str,
        *,
        request_key: str | None = None,
        distribution_ids: Mapping[str, str] | None = None,
        payment_ids: Mapping[str, Sequence[str | None]] | None = None,
        entities: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Set the state (and, when known, ids) of every row of the given distributions.

        ``payment_ids[ref]`` lists the ``dpmt_`` ids in request order (the sheet's row order);
        ``entities[ref]`` the resolved ``ent_`` ids in the same order. Inside :meth:`batched`
        the change is applied when the batch ends.
        """
        marks = []
        for ref in refs:
            ids = list((payment_ids or {}).get(ref) or ())
            ents = list((entities or {}).get(ref) or ())
            dst = (distribution_ids or {}).get(ref)
            for position in range(max(len(ids), len(ents), 1)):
                marks.append(
                    {
                        "file_hash": file_hash,
                        "ref": ref,
                        "position": position if (ids or ents) else None,
                        "state": state,
                        "request_key": request_key,
                        "distribution_id": dst,
                        "payment_id": ids[position] if position < len(ids) else None,
                        "entity": ents[position] if position < len(ents) else None,
                    }
                )
        if self._marks is not None:
            self._marks.extend(marks)
        elif marks:
            with self.transaction():
                self._apply_marks(marks)

    def _apply_marks(self, marks: list[dict[str, Any]]) -> None:
        # one row per target: the last mark wins; a positional mark supersedes a whole-
        # distribution one for the same reference
        last: dict[tuple[str, str, int | None], dict[str, Any]] = {}
        for m in marks:
            if m["position"] is not None:
                last.pop((m["file_hash"], m["ref"], None), None)
            elif any(k[:2] == (m["file_hash"], m["ref"]) and k[2] is not None for k in last):
                last = {k: v for k, v in last.items() if k[:2] != (m["file_hash"], m["ref"])}
            last[(m["file_hash"], m["ref"], m["position"])] = m
        table = pa.Table.from_pylist(list(last.values()), schema=_MARK_SCHEMA)
        self._con.register("_marks", table)
        try:
            self._con.execute(
                """
                UPDATE ledger_payments p SET
                    state = m.state, updated_at = $now,
                    request_key = coalesce(m.request_key, p.request_key),
                    distribution_id = coalesce(m.distribution_id, p.distribution_id),
                    payment_id = coalesce(m.payment_id, p.payment_id),
                    entity = coalesce(m.entity, p.entity)
                FROM _marks m
                WHERE p.file_hash = m.file_hash
                  AND p.distribution_external_reference = m.ref
                  AND (m.position IS NULL OR p.position = m.position)
                """,
                {"now": self._clock()},
            )
        finally:
            self._con.unregister("_marks")

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Collect outcomes and payment marks; apply them in one transaction at the end."""
        if self._marks is not None:
            yield
            return
        self._marks, self._outcomes = [], []
        try:
            yield
            marks, outcomes = self._marks, self._outcomes
        finally:
            self._marks = self._outcomes = None
        if not (marks or outcomes):
            return
        with self.transaction():
            if outcomes:
                self._apply_outcomes(outcomes)
            if marks:
                self._apply_marks(marks)

    def payment_states(self, file_hash: str | None = None) -> dict[str, int]:
        """Count of payment rows per state (for one file, or all)."""
        sql = "SELECT state, count(*) FROM ledger_payments"
        params: list[Any] = []
        if file_hash is not None:
            sql += " WHERE file_hash = ?"
            params.append(file_hash)
        rows = self._con.execute(sql + " GROUP BY state", params).fetchall()
        return {str(s): int(n) for s, n in rows}

    def payments(self, file_hash: str | None = None) -> list[dict[str, Any]]:
        """Payment rows (for one file, or all), in file and row order."""
        sql = "SELECT * FROM ledger_payments"
        params: list[Any] = []
        if file_hash is not None:
            sql += " WHERE file_hash = ?"
            params.append(file_hash)
        cur = self._con.execute(sql + " ORDER BY file_hash, sheet, row", params)
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def sent_refs(self, file_hash: str) -> set[str]:
        """References of this file's distributions that a request of ours carried."""
        rows = self._con.execute(
            "SELECT file_hashes, distribution_refs FROM ledger_requests "
            "WHERE phase = 'distributions' AND contains(file_hashes, ?)",
            [json.dumps(file_hash)],
        ).fetchall()
        out: set[str] = set()
        for hashes, refs in rows:
            if file_hash in json.loads(hashes or "[]"):
                out.update(json.loads(refs or "[]"))
        return out

    # ------------------------------------------------------------------------ requests

    def record_intent(self, request: ResolvedRequest) -> None:
        """Write the intent of ``request`` before it is sent (state ``sent``).

        One statement, one commit: the intent is durable before anything is sent. The rows of
        ledger_payments follow with the outcome (a crash in between leaves the request open,
        and the next run settles it by looking the distributions up).
        """
        self.record_intents([request])

    def record_intents(
        self, requests: Sequence[ResolvedRequest], *, before: Callable[[], None] = lambda: None
    ) -> None:
        """Write several intents in one statement, one commit (requests about to be sent
        together): all of them are durable when this returns, none when it raises. ``before``
        runs first inside the same transaction (other writes that share the commit; it may
        run twice, the first run rolled back)."""
        if not requests:
            return
        now = self._clock()
        # one row per key (the same key twice in one batch counts two attempts)
        rows: dict[str, dict[str, Any]] = {}
        for request in requests:
            row = rows.get(request.key)
            if row is not None:
                row["attempts"] += 1
                continue
            rows[request.key] = {
                "key": request.key,
                "phase": request.phase,
                "method": request.method,
                "path": request.path,
                "label": request.label,
                "file_hashes": json.dumps(list(request.file_hashes)),
                "distribution_refs": json.dumps(list(request.distribution_refs)),
                "body": _stored_body(request),
                "attempts": 1,
                "own_references": (
                    json.dumps(list(request.own_references)) if request.own_references else None
                ),
            }
        table = pa.Table.from_pylist(list(rows.values()), schema=_INTENT_SCHEMA)
        self._con.register("_intents", table)
        try:
            if not self._depth:
                # new keys (every chunk of a first night): a plain insert costs half of the
                # upsert; a key already written (a re-send) makes it fail whole, and the
                # upsert below runs instead — either way one commit holds every intent
                try:
                    with self.transaction():
                        before()
                        self._con.execute(_INSERT_INTENTS, {"now": now})
                    return
                except duckdb.ConstraintException:
                    pass
            with self.transaction():
                before()
                self._con.execute(_INSERT_INTENTS + _UPSERT_INTENTS, {"now": now})
        finally:
            self._con.unregister("_intents")

    def record_outcomes_and_intents(
        self, writes: Sequence[Callable[[], None]], requests: Sequence[ResolvedRequest]
    ) -> None:
        """Apply the outcomes and payment marks that ``writes`` make (as inside
        :meth:`batched`), then write the intents of ``requests`` — all in one commit: the
        outcomes of the requests sent so far go with the intents of the next ones, which are
        durable, as with :meth:`record_intents`, when this returns (none of it when it raises).
        """
        self._marks, self._outcomes = [], []
        try:
            for write in writes:
                write()
            marks, outcomes = self._marks, self._outcomes
        finally:
            self._marks = self._outcomes = None

        def apply() -> None:
            if outcomes:
                self._apply_outcomes(outcomes)
            if marks:
                self._apply_marks(marks)

        if requests:
            self.record_intents(requests, before=apply)
        elif outcomes or marks:
            with self.transaction():
                apply()

    def record_outcome(
        self,
        key: str,
        state: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        service_ids: Sequence[str] | None = None,
        error: str | None = None,
    ) -> None:
        """Write a request's outcome: ``succeeded``, ``failed``, ``unknown`` or ``settled``."""
        outcome = {
            "key": key,
            "state": state,
            "status": status,
            "request_id": request_id,
            "service_ids": json.dumps(list(service_ids)) if service_ids is not None else None,
            "error": error,
        }
        if self._outcomes is not None:
            self._outcomes.append(outcome)
        else:
            self._apply_outcomes([outcome])

    def _apply_outcomes(self, outcomes: list[dict[str, Any]]) -> None:
        table = pa.Table.from_pylist(outcomes, schema=_OUTCOME_SCHEMA)
        self._con.register("_outcomes", table)
        try:
            self._con.execute(
                """
                UPDATE ledger_requests r SET state = o.state, status = o.status,
                    request_id = o.request_id, service_ids = o.service_ids, error = o.error,
                    outcome_at = $now
                FROM _outcomes o WHERE r.key = o.key
                """,
                {"now": self._clock()},
            )
        finally:
            self._con.unregister("_outcomes")

    def settle_open(self, keep: set[str]) -> int:
        """Mark open requests not in ``keep`` as ``settled`` (what they asked for exists)."""
        open_keys = [r.key for r in self.open_requests() if r.key not in keep]
        for key in open_keys:
            self.record_outcome(key, "settled")
        return len(open_keys)

    def entities_given_instructions(self) -> set[str]:
        """Entity ids this ledger created payment instructions for (requests that succeeded).

        Where the service's entity record does not list its instructions (the public spec's
        form), this is how a later night knows them: an instruction sent without
        `external_reference` is matched by its entity and its content fingerprint
        (:meth:`instruction_fingerprints_given`).
        """
        return set(self.instruction_fingerprints_given())

    def instruction_fingerprints_given(self) -> dict[str, set[str]]:
        """Entity id → the content fingerprints of the payment instructions this ledger
        created for it (requests that succeeded), computed from the bodies as the ledger keeps
        them: account numbers masked to their last four digits, which is all a fingerprint
        takes (:func:`fundpipe.plan.instruction_fingerprint`)."""
        rows = self._con.execute(
            "SELECT body FROM ledger_requests "
            "WHERE phase = 'payment_instructions' AND state IN ('succeeded', 'settled')"
        ).fetchall()
        found: dict[str, set[str]] = {}
        for (body,) in rows:
            for element in json.loads(body or "[]"):
                entity = element.get("entity") if isinstance(element, dict) else None
                if not (isinstance(entity, str) and entity.startswith("ent_")):
                    continue
                mine = found.setdefault(entity, set())
                for item in element.get("payment_instructions") or ():
                    fingerprint = instruction_fingerprint(item) if isinstance(item, dict) else None
                    if fingerprint is not None:
                        mine.add(fingerprint)
        return found

    def open_requests(self) -> list[RequestRecord]:
        """Requests whose outcome is not known (``sent`` or ``unknown``), oldest first."""
        return [r for r in self.requests() if r.state in {"sent", "unknown"}]

    def requests(self) -> list[RequestRecord]:
        """Every request row, oldest intent first."""
        rows = self._con.execute(
            "SELECT key, phase, path, state, file_hashes, distribution_refs, attempts, status, "
            "intent_at FROM ledger_requests ORDER BY intent_at, key"
        ).fetchall()
        return [
            RequestRecord(
                key=str(r[0]),
                phase=str(r[1]),
                path=str(r[2]),
                state=str(r[3]),
                file_hashes=tuple(json.loads(r[4] or "[]")),
                distribution_refs=tuple(json.loads(r[5] or "[]")),
                attempts=int(r[6] or 0),
                status=None if r[7] is None else int(r[7]),
                intent_at=r[8],
            )
            for r in rows
        ]

    def request_state(self, key: str) -> str | None:
        """The recorded state of one request key, or None."""
        row = self._con.execute("SELECT state FROM ledger_requests WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def close(self) -> None:
        """Close the connection (checkpointing the file)."""
        self._con.close()


def _stored_body(request: ResolvedRequest) -> str:
    """The body as the ledger keeps it: account numbers masked (only instructions carry any)."""
    body: Any = request.body
    if request.phase == "payment_instructions":
        body = display_body(body)
    elif request.body_json:  # made when the request was resolved
        return request.body_json
    return canonical_json(body)


@contextmanager
def open_ledger(path: Path, *, clock: Clock = _utcnow, org: str | None = None) -> Iterator[Ledger]:
    """Open (creating when needed) the ledger at ``path`` for writing; closed on exit.

    Every block is read before anything is written: a damaged ledger raises
    :class:`fundpipe.errors.DamagedFileError` (naming ``org``'s restore command), and a full
    disk while the ledger is written :class:`fundpipe.errors.DiskFullError` — the machine's
    faults (exit code 6), never a bug."""
    with faults_named(path, "ledger", org=org):
        path.parent.mkdir(parents=True, exist_ok=True)
        con = connect(path)
    try:
        with faults_named(path, "ledger", org=org, con=con):
            refuse_damaged(con, path, "ledger", org=org)
            ledger = Ledger(con, clock)
            yield ledger
    finally:
        with faults_named(path, "ledger", org=org):
            con.close()


@contextmanager
def read_ledger(path: Path, *, org: str | None = None) -> Iterator[Ledger | None]:
    """Open the ledger at ``path`` read-only (nothing migrated, nothing written); closed on exit.

    None when there is no ledger file, or when it cannot be opened now (another run holds it
    for writing: a reader such as a dry run can do without). A damaged ledger is said so, not
    read around: :class:`fundpipe.errors.DamagedFileError`, as :func:`open_ledger` raises it."""
    if not path.exists():
        yield None
        return
    try:
        with faults_named(path, "ledger", org=org):
            con = connect(path, read_only=True)
    except duckdb.Error:  # another run holds it
        yield None
        return
    try:
        with faults_named(path, "ledger", org=org, con=con):
            refuse_damaged(con, path, "ledger", org=org)
            yield Ledger(con, read_only=True)
    finally:
        con.close()
