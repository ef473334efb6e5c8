"""Durable sandbox state: one SQLite database, one connection, writes serialized by a lock.

A batch create runs in one transaction together with its idempotency record, so a process killed
mid-request leaves either the whole batch (and its key) or nothing. WAL journal on files; a
private in-memory database when no path is given.
"""

from __future__ import annotations

import secrets
import sqlite3
import string
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from fundpipe.timerules import render_utc

_UPPER = string.ascii_uppercase + string.digits

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS organizations (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS clients (
  client_id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, scopes TEXT NOT NULL,
  organizations TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (
  token_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, scopes TEXT NOT NULL,
  expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS vehicles (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, name TEXT NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS vehicles_org ON vehicles (org, seq);
CREATE TABLE IF NOT EXISTS financial_accounts (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, vehicle TEXT NOT NULL,
  name TEXT NOT NULL, type TEXT NOT NULL, bank_name TEXT, last_four TEXT,
  total INTEGER NOT NULL, available INTEGER NOT NULL, total_eolm INTEGER NOT NULL,
  currency TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS fa_org ON financial_accounts (org, seq);
CREATE INDEX IF NOT EXISTS fa_vehicle ON financial_accounts (vehicle, seq);
CREATE TABLE IF NOT EXISTS entities (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, name TEXT NOT NULL,
  type TEXT NOT NULL, external_type TEXT, external_reference TEXT,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS entities_org ON entities (org, seq);
CREATE TABLE IF NOT EXISTS contacts (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, name TEXT NOT NULL,
  email TEXT NOT NULL, external_reference TEXT,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS contacts_org ON contacts (org, seq);
CREATE TABLE IF NOT EXISTS entity_contacts (
  seq INTEGER PRIMARY KEY, entity TEXT NOT NULL, contact TEXT NOT NULL,
  UNIQUE (entity, contact));
CREATE INDEX IF NOT EXISTS entity_contacts_contact ON entity_contacts (contact, seq);
CREATE TABLE IF NOT EXISTS payment_instructions (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, entity TEXT NOT NULL,
  type TEXT, beneficiary_name TEXT, bank_name TEXT, routing_number TEXT, last_four TEXT,
  branch_code TEXT, external_reference TEXT, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS pmi_entity ON payment_instructions (entity, seq);
CREATE TABLE IF NOT EXISTS distributions (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, name TEXT NOT NULL,
  vehicle TEXT NOT NULL, external_reference TEXT, date_ts REAL NOT NULL, timezone TEXT NOT NULL,
  short_id TEXT NOT NULL, status TEXT NOT NULL, published_at REAL, approved_at REAL,
  executed_at REAL, cancelled_at REAL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS distributions_org ON distributions (org, seq);
CREATE INDEX IF NOT EXISTS distributions_status ON distributions (status, date_ts);
CREATE TABLE IF NOT EXISTS payments (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL,
  distribution TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL,
  override_ts REAL, status TEXT NOT NULL, recipient_confirmed_at REAL, verified_at REAL,
  disbursed_at REAL, failed_at REAL, failure_reason TEXT, entity TEXT NOT NULL,
  payment_instructions TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS payments_distribution ON payments (distribution, seq);
CREATE INDEX IF NOT EXISTS payments_status ON payments (status);
CREATE TABLE IF NOT EXISTS notifications (
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, org TEXT NOT NULL, payment TEXT NOT NULL,
  contact TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS notifications_payment ON notifications (payment, seq);
-- Entity and contact references created in the public spec's array form (public forms).
CREATE TABLE IF NOT EXISTS external_references (
  seq INTEGER PRIMARY KEY, org TEXT NOT NULL, kind TEXT NOT NULL, owner TEXT NOT NULL,
  ref TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS external_references_owner ON external_references (owner, seq);
CREATE INDEX IF NOT EXISTS external_references_ref ON external_references (org, kind, ref);
CREATE TABLE IF NOT EXISTS idempotency (
  client_id TEXT NOT NULL, org TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL, body TEXT NOT NULL, created_ts REAL NOT NULL,
  PRIMARY KEY (client_id, org, key));
"""

#: Tables emptied by a reset (everything but the schema).
TABLES = (
    "meta",
    "organizations",
    "clients",
    "tokens",
    "vehicles",
    "financial_accounts",
    "entities",
    "contacts",
    "entity_contacts",
    "payment_instructions",
    "distributions",
    "payments",
    "notifications",
    "external_references",
    "idempotency",
)

#: Largest number of bound values per IN list (well under SQLite's limit).
IN_CHUNK = 500


def new_id(prefix: str) -> str:
    """A fresh random id such as `dst_3f9a…` (24 lower-case hex digits, 96 random bits)."""
    return prefix + secrets.token_hex(12)


def new_ids(prefix: str, count: int) -> list[str]:
    """`count` fresh ids like `new_id(prefix)`, from one read of the system's random source."""
    digits = secrets.token_hex(12 * count)
    return [prefix + digits[k : k + 24] for k in range(0, 24 * count, 24)]


_SHORT_SPACE = len(_UPPER) ** 8


def new_short_id() -> str:
    """An 8-character upper-case short id such as `D3F9K2QX` (uniform over A-Z0-9)."""
    n = secrets.randbelow(_SHORT_SPACE)
    out = []
    for _ in range(8):
        n, rem = divmod(n, 36)
        out.append(_UPPER[rem])
    return "".join(out)


@lru_cache(maxsize=8192)
def ts_to_iso(ts: float | None) -> str | None:
    """Epoch seconds → ISO 8601 UTC with `Z` (None stays None); cached: rows share timestamps."""
    if ts is None:
        return None
    return render_utc(datetime.fromtimestamp(ts, UTC))


def chunks(values: Sequence[Any], size: int = IN_CHUNK) -> Iterable[Sequence[Any]]:
    """`values` cut into slices of at most `size`."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def placeholders(count: int) -> str:
    """`?,?,…` for an IN list of `count` values."""
    return ",".join("?" * count)


class Store:
    """The SQLite database behind one sandbox; every access goes through `read()` or `write()`."""

    def __init__(self, db_path: Path | None) -> None:
        """Open (and create when needed) the database at `db_path`, or a private in-memory one."""
        self.path = db_path
        target = ":memory:" if db_path is None else str(db_path)
        if db_path is not None:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        if db_path is not None:
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a killed process (not a power cut): fine for a sandbox.
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=OFF")
        self._conn.executescript(SCHEMA)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, held under the lock, for reads."""
        with self._lock:
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any exception)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                # Also after a failed COMMIT: never leave the shared connection mid-transaction.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """A value of the `meta` table."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set a value of the `meta` table."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def wipe(conn: sqlite3.Connection) -> None:
    """Delete every row of every table (inside the caller's transaction)."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")
