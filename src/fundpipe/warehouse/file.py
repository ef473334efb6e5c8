"""The DuckDB warehouse: connections held only while needed, and migrations.

DuckDB lets one process hold a database file for writing (and a read-only opener still needs the
file lock). fundpipe therefore opens the warehouse for the shortest span that does the work —
`Warehouse.write()` for a sync's merge, `Warehouse.read()` for reconciliation — and closes it;
`Warehouse.transaction()` is a `write()` whose block is one transaction. Every connection is
opened, and every transaction run, by `fundpipe.warehouse.connection` (the one door to DuckDB).
When another process holds the file, the opener logs who holds it (DuckDB's lock error names the
program and PID), retries with a bounded deadline, then raises `WarehouseLockedError`.

A damaged file is never written to: `write()` reads every block first
(`fundpipe.warehouse.integrity.damage_in`), and a damaged block met by any read, or a full disk,
is raised as the machine's fault naming the file (`DamagedFileError` with the restore command,
`DiskFullError`; exit code 6), not as a bug.

The tables live in `schemas/warehouse.sql`, split into `-- migration: NNN name` sections applied
by `fundpipe.warehouse.migrations` (as the ledger's `schemas/ledger.sql` is); the views and
macros in `schemas/views.sql`, run again after them whenever its text changes. Given a cache
folder, a new file starts as a copy of the empty warehouse kept there for the same schema
(`fundpipe.warehouse.template`), and the first one built is kept there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import duckdb

from fundpipe.errors import WarehouseLockedError
from fundpipe.resources import SCHEMAS_DIR
from fundpipe.warehouse.connection import connect, transaction
from fundpipe.warehouse.integrity import faults_named, refuse_damaged
from fundpipe.warehouse.migrations import (
    Migration,
    MigrationError,
    Repeatable,
    applied_numbers,
    apply_migrations,
    apply_views,
    load_migrations,
    views_current,
)
from fundpipe.warehouse.template import copy_template, keep_template

__all__ = [
    "SCHEMA_FILE",
    "VIEWS_FILE",
    "Migration",
    "MigrationError",
    "Warehouse",
    "WarehouseLockedError",
    "apply_migrations",
    "load_migrations",
    "records",
    "shared_reads",
    "transaction",
]

log = logging.getLogger(__name__)

#: The warehouse's tables, as ordered migrations (the single source; see schemas/README.md).
SCHEMA_FILE = SCHEMAS_DIR / "warehouse.sql"
#: The warehouse's views and macros, each defined once: a repeatable migration.
VIEWS_FILE = SCHEMAS_DIR / "views.sql"

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


#: Files seen current (migrated, views as this code has them), by path and schema text, with
#: the stamp the file had then (`Warehouse._stamp`).
_SEEN_CURRENT: dict[tuple[Path, str, str | None], tuple[int, ...]] = {}


class _Shared:
    """The connections of one `shared_reads` block, by file, and the lock its threads open
    them under."""

    def __init__(self) -> None:
        self.opened: dict[Path, duckdb.DuckDBPyConnection] = {}
        self.opening = threading.Lock()


#: The connections of the innermost `shared_reads` block (None outside one).
_SHARED_READS: ContextVar[_Shared | None] = ContextVar("fundpipe_shared_reads", default=None)


@contextmanager
def shared_reads() -> Iterator[None]:
    """Within the block, every `Warehouse.read()` of one file is a cursor of one read-only
    connection (a page of the desk reads several figures; each connect costs ~12 ms). The
    connections are closed when the block ends. Only for blocks that do not write: a writer in
    this process cannot open a file a reader holds."""
    shared = _Shared()
    token = _SHARED_READS.set(shared)
    try:
        yield
    finally:
        _SHARED_READS.reset(token)
        for con in shared.opened.values():
            with contextlib.suppress(duckdb.Error):
                con.close()


def lock_holder(error: BaseException) -> str | None:
    """The 'PID n (program)' named by a DuckDB lock-conflict error, or None if it is not one."""
    match = _LOCK_HOLDER.search(str(error))
    if match is None:
        return None
    return f"PID {match['pid']} ({match['program']})"


def records(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The rows of `sql`, each a dict keyed by its column names: code that builds objects from
    a query reads its columns by name, so a reordered select list cannot shift the fields."""
    bound = dict(params) if isinstance(params, Mapping) else list(params or [])
    cursor = con.execute(sql, bound)
    names = [column[0] for column in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class Warehouse:
    """The warehouse file, opened only for the span of a `write()` or `read()` block."""

    def __init__(
        self,
        path: Path,
        *,
        lock_timeout_s: float = 60.0,
        retry_interval_s: float = 0.5,
        schema_file: Path = SCHEMA_FILE,
        views_file: Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        org: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        """Describe the warehouse at `path`; nothing is opened until `write()` or `read()`.
        `org` names its organization in a damaged file's restore command (default: the
        folder, `data/orgs/<org>/`). With `cache_dir`, a missing file is created from the
        empty warehouse kept there (`fundpipe.warehouse.template`). `views_file` is run after
        the migrations of `schema_file` (default: `VIEWS_FILE` for the default schema, no views
        for another one)."""
        self.path = Path(path)
        self.org = org
        self.cache_dir = cache_dir
        self.lock_timeout_s = lock_timeout_s
        self.retry_interval_s = retry_interval_s
        self.schema_file = schema_file
        self.views_file = views_file
        if views_file is None and schema_file == SCHEMA_FILE:
            self.views_file = VIEWS_FILE
        self._sleep = sleep
        self._monotonic = monotonic

    def _faults(self, con: duckdb.DuckDBPyConnection | None = None) -> AbstractContextManager[None]:
        return faults_named(self.path, "warehouse", org=self.org, con=con)

    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        with self._faults():
            return self._connect_once(read_only=read_only)

    def _connect_once(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        started = self._monotonic()
        warned = False
        while True:
            try:
                con = connect(self.path, read_only=read_only)
            except duckdb.IOException as error:
                holder = lock_holder(error)
                if holder is None:
                    raise
                waited = self._monotonic() - started
                if waited >= self.lock_timeout_s:
                    raise WarehouseLockedError(self.path, holder, waited) from None
                if not warned:
                    log.warning(
                        "warehouse %s is held by %s; retrying for up to %.0f s",
                        self.path,
                        holder,
                        self.lock_timeout_s,
                    )
                    warned = True
                self._sleep(min(self.retry_interval_s, max(self.lock_timeout_s - waited, 0.01)))
                continue
            con.execute("SET TimeZone = 'UTC'")
            return con

    def _views(self) -> Repeatable | None:
        if self.views_file is None:
            return None
        return Repeatable(self.views_file.name, self.views_file.read_text(encoding="utf-8"))

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open for writing (creating the file and applying migrations), yield, then close.

        Every block is read first: a damaged file raises `DamagedFileError` before anything
        is written to it."""
        with self._faults():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        schema_text = self.schema_file.read_text(encoding="utf-8")
        views = self._views()
        copied = False
        if self.cache_dir is not None and not self.path.exists():
            copied = self._create(self.cache_dir, schema_text, views)
        con = self._connect(read_only=False)
        try:
            with self._faults(con):
                refuse_damaged(con, self.path, "warehouse", org=self.org)
                apply_migrations(con, load_migrations(schema_text))
                if views is not None:
                    apply_views(con, views)
                if copied:  # migrated now, as far as anyone reading the file can tell
                    con.execute("UPDATE _migrations SET applied_at = current_timestamp")
                    if views is not None:
                        con.execute(
                            "UPDATE _repeatable_migrations SET applied_at = current_timestamp"
                        )
                yield con
        finally:
            with self._faults():
                con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open for writing (as `write()`), run the block as one transaction and close: what
        the block wrote is committed when it ends, none of it when it raises. Code handed an
        open connection groups its writes with `fundpipe.warehouse.connection.transaction`."""
        with self.write() as con, transaction(con):
            yield con

    def _stamp(self) -> tuple[int, ...]:
        """What changes when anyone writes the file: its and its WAL's inode, size and mtime."""
        stamp: list[int] = []
        for one in (self.path, self.path.with_name(self.path.name + ".wal")):
            try:
                st = one.stat()
            except FileNotFoundError:
                stamp += [0, 0, 0]
                continue
            stamp += [st.st_ino, st.st_size, st.st_mtime_ns]
        return tuple(stamp)

    def _open_read(self) -> duckdb.DuckDBPyConnection:
        """A read-only connection to a current file: a missing or outdated one is migrated
        first. A file seen current, and not written since (its stamp unchanged), is not
        checked again in this process."""
        schema_text = self.schema_file.read_text(encoding="utf-8")
        views = self._views()
        key = (self.path.resolve(), schema_text, views.sql if views is not None else None)
        if self.path.exists():
            stamp = self._stamp()
            con = self._connect(read_only=True)
            try:
                current = _SEEN_CURRENT.get(key) == stamp
                if not current:
                    wanted = {m.number for m in load_migrations(schema_text)}
                    with self._faults(con):
                        current = wanted <= applied_numbers(con) and (
                            views is None or views_current(con, views)
                        )
                    if current:
                        _SEEN_CURRENT[key] = stamp
            except BaseException:
                con.close()
                raise
            if current:
                return con
            con.close()
        self.migrate()
        con = self._connect(read_only=True)
        _SEEN_CURRENT[key] = self._stamp()
        return con

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open read-only, yield, then close; a missing or outdated file is migrated first.

        Inside :func:`shared_reads`, every `read()` of the same file is a cursor of one
        connection (its own settings and variables), opened by the first and closed when the
        shared block ends; blocks may then run side by side, in threads."""
        shared = _SHARED_READS.get()
        if shared is not None:
            key = self.path.resolve()
            with shared.opening:
                root = shared.opened.get(key)
                if root is None:
                    root = shared.opened[key] = self._open_read()
                cursor = root.cursor()
            try:
                cursor.execute("SET TimeZone = 'UTC'")
                with self._faults(cursor):
                    yield cursor
            finally:
                cursor.close()
            return
        con = self._open_read()
        try:
            with self._faults(con):
                yield con
        finally:
            con.close()

    def peek(self) -> duckdb.DuckDBPyConnection | None:
        """The file opened read-only as it is — without waiting for a lock, migrating or
        reading every block — for a reader that can do without it; None when there is no
        file. The caller closes the connection. A file that is not a database is the
        machine's fault (`DamagedFileError`); DuckDB's other errors (held by a writer) are
        raised as they are, for the reader to tell."""
        if not self.path.exists():
            return None
        with self._faults():
            con = connect(self.path, read_only=True)
        con.execute("SET TimeZone = 'UTC'")
        return con

    def _create(self, cache_dir: Path, schema_text: str, views: Repeatable | None) -> bool:
        """Create the missing file as a copy of the template in `cache_dir` (True), or else
        by migrating a file of its own, which is then kept as the template (False)."""
        views_text = "" if views is None else views.sql
        with self._faults():
            if copy_template(cache_dir, schema_text, self.path, views_text=views_text):
                return True
        built = self.path.with_name(f"{self.path.name}.build-{os.getpid()}")
        try:
            Warehouse(
                built, schema_file=self.schema_file, views_file=self.views_file, org=self.org
            ).migrate()
            keep_template(cache_dir, schema_text, built, views_text=views_text)
            # never over a file that appeared meanwhile (then opened and migrated as usual)
            with contextlib.suppress(OSError):
                os.link(built, self.path)
        finally:
            for leftover in (built, built.with_name(built.name + ".wal")):
                leftover.unlink(missing_ok=True)
        return False

    def migrate(self) -> None:
        """Create the file if needed and apply pending migrations."""
        with self.write():
            pass
