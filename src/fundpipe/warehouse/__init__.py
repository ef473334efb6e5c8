"""Stage ⑥: the DuckDB warehouse file — opening it, its lock, its migrations, its integrity, the
one door to DuckDB, and the read-only index of what is known.

Other packages import from here, never from a module of this package:

- `Warehouse` — the warehouse file: `read()`, `write()` (under its lock), `transaction()`
- `WarehouseLockedError` — another process holds the file
- `SCHEMA_FILE` — the warehouse's versioned migrations (`schemas/warehouse.sql`)
- `lock_holder` — who holds a DuckDB file's lock, for the error that names them
- `records` — a query's rows as dicts keyed by column
- `shared_reads` — one read-only connection per file for every `read()` inside the block
- `connect` — every DuckDB connection: a file (read-only when asked) or in memory
- `scratch` — a throw-away in-memory connection, closed after the block
- `transaction` — BEGIN … COMMIT, ROLLBACK on any error: the one hand-written block
- `faults_named` — the machine's faults met inside the block (a full disk…), naming the file
- `refuse_damaged` — refuse a file whose blocks fail their checksums (`DamagedFileError`)
- `writing` — a full disk met inside the block told as `DiskFullError`, naming the file
- `Known` — the read-only index of what the service is known to hold
- `read_known` — read that index from a warehouse file
- `OPEN_DISTRIBUTION_STATUSES` — distribution statuses that may still change
- `OPEN_PAYMENT_STATUSES` — payment statuses that may still change
- `WALKED_LISTS` — the lists walked newest first
- `Migration` — one versioned migration
- `MigrationError` — a migration that cannot apply (an edited one, a failed one)
- `load_migrations` — a DDL file's migrations, in order
- `apply_migrations` — apply those not yet applied, each in a transaction
- `applied_numbers` — the migration numbers a file has recorded
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.warehouse.connection import connect, scratch, transaction
    from fundpipe.warehouse.file import (
        SCHEMA_FILE,
        Warehouse,
        WarehouseLockedError,
        lock_holder,
        records,
        shared_reads,
    )
    from fundpipe.warehouse.integrity import faults_named, refuse_damaged, writing
    from fundpipe.warehouse.known import (
        OPEN_DISTRIBUTION_STATUSES,
        OPEN_PAYMENT_STATUSES,
        WALKED_LISTS,
        Known,
        read_known,
    )
    from fundpipe.warehouse.migrations import (
        Migration,
        MigrationError,
        applied_numbers,
        apply_migrations,
        load_migrations,
    )

__all__ = [
    "OPEN_DISTRIBUTION_STATUSES",
    "OPEN_PAYMENT_STATUSES",
    "SCHEMA_FILE",
    "WALKED_LISTS",
    "Known",
    "Migration",
    "MigrationError",
    "Warehouse",
    "WarehouseLockedError",
    "applied_numbers",
    "apply_migrations",
    "connect",
    "faults_named",
    "load_migrations",
    "lock_holder",
    "read_known",
    "records",
    "refuse_damaged",
    "scratch",
    "shared_reads",
    "transaction",
    "writing",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "Warehouse": "file",
    "WarehouseLockedError": "file",
    "SCHEMA_FILE": "file",
    "lock_holder": "file",
    "records": "file",
    "shared_reads": "file",
    "connect": "connection",
    "scratch": "connection",
    "transaction": "connection",
    "faults_named": "integrity",
    "refuse_damaged": "integrity",
    "writing": "integrity",
    "Known": "known",
    "read_known": "known",
    "OPEN_DISTRIBUTION_STATUSES": "known",
    "OPEN_PAYMENT_STATUSES": "known",
    "WALKED_LISTS": "known",
    "Migration": "migrations",
    "MigrationError": "migrations",
    "load_migrations": "migrations",
    "apply_migrations": "migrations",
    "applied_numbers": "migrations",
}

__getattr__ = lazy_face(__name__, _HOMES)
