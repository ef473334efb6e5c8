"""The durable record: an organization's history and decisions kept beyond the machine.

Local DuckDB files are a working copy; the record (``Settings.record_location``: a folder on
other storage or an fsspec URL, ``FUNDPIPE_RECORD_URL``; by default ``data/record/<org>/``)
keeps, per organization:

    decisions/<stamp>-<random>.json     each person's decision, written when made (`decisions`)
    files/closed/YYYY-MM/...            the files a close filed, copied once
    snapshots/<stamp>/                  after each night: ledger + warehouse + manifest (`snapshots`)
    lock.json                           while a machine runs its night (`lock`)

`restore` rebuilds the local state from the newest snapshot and the decisions after it;
`durable_night` is a night's part (lock; `catch_up`: restore first what the record has more of —
a missing or empty warehouse, a missing ledger, a local state older than the record's; snapshot).
Nothing here imports Prefect or `fundpipe.app`.
"""

from fundpipe.record.decisions import (
    Decision,
    DecisionSink,
    decision_sink,
    read_decisions,
    record_decision,
)
from fundpipe.record.lock import OrgLock, RecordLockedError
from fundpipe.record.restore import (
    RestoreResult,
    catch_up,
    durable_night,
    has_local_state,
    restore,
)
from fundpipe.record.snapshots import (
    RecordCheck,
    Snapshot,
    list_snapshots,
    take_snapshot,
    verify_record,
)
from fundpipe.record.store import Record, RecordError

__all__ = [
    "Decision",
    "DecisionSink",
    "OrgLock",
    "Record",
    "RecordCheck",
    "RecordError",
    "RecordLockedError",
    "RestoreResult",
    "Snapshot",
    "catch_up",
    "decision_sink",
    "durable_night",
    "has_local_state",
    "list_snapshots",
    "read_decisions",
    "record_decision",
    "restore",
    "take_snapshot",
    "verify_record",
]
