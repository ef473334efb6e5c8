"""The sync's staging area: Arrow record batches flushed to Parquet files, one per table.

Part of :mod:`fundpipe.sync` (``pull.py`` fills it, ``merge.py`` reads its files). At most
``_FLUSH_ROWS`` rows per table wait in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fundpipe.arrowpandas import spare_pandas
from fundpipe.progress import NullProgress, ProgressSink

__all__ = ["STAGE_SCHEMAS", "Stage"]

_FLUSH_ROWS = 10_000

_S = pa.string()
_TS = pa.string()  # instants are staged as the service's ISO text and cast by DuckDB on merge
_B = pa.bool_()
_I = pa.int64()

#: Staged tables and their columns (Arrow types).
STAGE_SCHEMAS: dict[str, pa.Schema] = {
    "vehicles": pa.schema(
        [("id", _S), ("organization", _S), ("name", _S), ("livemode", _B),
         ("created_at", _TS), ("updated_at", _TS)]
    ),
    "financial_accounts": pa.schema(
        [("id", _S), ("vehicle", _S), ("name", _S), ("type", _S), ("bank_name", _S),
         ("account_number_last_four", _S), ("livemode", _B), ("created_at", _TS),
         ("updated_at", _TS), ("total", _I), ("available", _I),
         ("total_end_of_last_month", _I), ("currency", _S)]
    ),
    "distributions": pa.schema(
        [("id", _S), ("name", _S), ("vehicle", _S), ("external_reference", _S),
         ("distribution_date", _TS), ("distribution_timezone", _S), ("short_id", _S),
         ("status", _S), ("published_at", _TS), ("approved_at", _TS), ("executed_at", _TS),
         ("cancelled_at", _TS), ("created_at", _TS), ("updated_at", _TS), ("sender_url", _S),
         ("recipient_url", _S), ("livemode", _B)]
    ),
    "distribution_payments": pa.schema(
        [("id", _S), ("distribution", _S), ("amount", _I), ("currency", _S),
         ("distribution_date_override", _TS), ("status", _S), ("recipient_confirmed_at", _TS),
         ("verified_at", _TS), ("disbursed_at", _TS), ("failed_at", _TS),
         ("failure_reason", _S), ("entity", _S), ("payment_instructions", _S), ("livemode", _B)]
    ),
    "distribution_notifications": pa.schema(
        [("id", _S), ("payment", _S), ("contact", _S), ("livemode", _B)]
    ),
    "entities": pa.schema(
        [("id", _S), ("name", _S), ("type", _S), ("external_type", _S),
         ("external_reference", _S), ("payment_instructions", pa.list_(_S)), ("livemode", _B),
         ("created_at", _TS), ("updated_at", _TS)]
    ),
    "contacts": pa.schema(
        [("id", _S), ("name", _S), ("email", _S), ("external_reference", _S),
         ("entities", pa.list_(_S)), ("livemode", _B), ("created_at", _TS), ("updated_at", _TS)]
    ),
}  # fmt: skip


class _Sink:
    """Arrow batches for one staged table, flushed to Parquet every `_FLUSH_ROWS` rows."""

    def __init__(self, path: Path, schema: pa.Schema, progress: ProgressSink | None = None) -> None:
        self.path = path
        self.schema = schema
        self.progress = progress or NullProgress()
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._writer = pq.ParquetWriter(path, schema, compression="lz4")
        self._struct = pa.struct(list(schema))

    def add(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        defaults: Mapping[str, Any] | None = None,
        **fixed: Any,
    ) -> None:
        """Stage one page of `records` (their keys outside the schema are ignored): columns in
        `fixed` take that value on every row, columns in `defaults` take it where a record has
        none."""
        records = records if isinstance(records, list) else list(records)  # at most a page
        if not records:
            return
        # One C++ pass over the dicts (missing keys are nulls), not a Python loop per column.
        batch = pa.RecordBatch.from_struct_array(pa.array(records, type=self._struct))
        for name, value in {**(defaults or {}), **fixed}.items():
            i = self.schema.get_field_index(name)
            field = self.schema.field(i)
            filled = pa.array([value] * batch.num_rows, field.type)
            if name not in fixed:
                filled = pc.coalesce(batch.column(i), filled)
            batch = batch.set_column(i, field, filled)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self.rows += batch.num_rows
        self.progress.advance(self.path.stem, batch.num_rows)
        if self._pending_rows >= _FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.Table.from_batches(self._pending, self.schema))
            self._pending, self._pending_rows = [], 0

    def close(self) -> None:
        self.flush()
        self._writer.close()


class Stage:
    """One staged Parquet file per table of :data:`STAGE_SCHEMAS`, in ``root``."""

    def __init__(self, root: Path, progress: ProgressSink | None = None) -> None:
        spare_pandas()  # pages become Arrow without pyarrow importing pandas (typed columns)
        progress = progress or NullProgress()
        for name in STAGE_SCHEMAS:
            progress.start(name, f"sync {name.replace('_', ' ')}")
        self.sinks = {
            name: _Sink(root / f"{name}.parquet", s, progress) for name, s in STAGE_SCHEMAS.items()
        }

    def __getitem__(self, name: str) -> _Sink:
        return self.sinks[name]

    def close(self) -> None:
        for sink in self.sinks.values():
            sink.close()
