"""Sync: pull what the service holds into the DuckDB warehouse.

One sync pulls vehicles, every financial account with its balance, distributions with their
payments and notifications, entities and contacts, then merges them into the warehouse in one
transaction:

- balances are *appended* to `balance_snapshots` with the sync's `seen_at` (never overwritten);
- distributions, payments, notifications, entities, contacts, vehicles and accounts are upserted
  by id, and every status a distribution or payment is seen in for the first time is appended to
  `status_history`;
- the ledger's `ledger_payments` / `ledger_files` are copied from the ledger file (read-only), so
  reconciliation never needs the ledger open; no ledger file → those tables are emptied.

Pulling is concurrent where lists are independent (each vehicle's accounts, the rest of a
distribution's payments, the entity and contact lists) and sequential along one cursor. Pages go
straight into Arrow record batches and are staged in Parquet files in a temporary directory
(bounded memory: at most `_FLUSH_ROWS` rows per table wait in memory), and the warehouse is opened
only for the final merge — it is not held while the network is slow.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from fundpipe.client import FundClient
from fundpipe.config import Settings, require_service
from fundpipe.progress import NullProgress, ProgressSink
from fundpipe.sync.merge import copy_ledger, merge
from fundpipe.warehouse.file import Warehouse

__all__ = ["SyncResult", "sync", "sync_async"]

log = logging.getLogger(__name__)

_PAGE_SIZE = 100  # the service's maximum `limit`
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

_BALANCE_FIELDS = ("total", "available", "total_end_of_last_month", "currency")


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one sync pulled and where it went."""

    sync_id: str
    seen_at: datetime
    finished_at: datetime
    warehouse: Path
    counts: dict[str, int]
    status_changes: int
    ledger_payments: int
    ledger_found: bool


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

    def add(self, records: Iterable[Mapping[str, Any]], **fixed: Any) -> None:
        records = list(records)  # one page of at most 100 records
        if not records:
            return
        columns = {
            f.name: pa.array(
                [fixed[f.name]] * len(records)
                if f.name in fixed
                else [r.get(f.name) for r in records],
                f.type,
            )
            for f in self.schema
        }
        batch = pa.RecordBatch.from_pydict(columns, schema=self.schema)
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


class _Stage:
    def __init__(self, root: Path, progress: ProgressSink | None = None) -> None:
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


def _flatten_accounts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for record in records:
        balance = record.get("balance") or {}
        out.append({**record, **{k: balance.get(k) for k in _BALANCE_FIELDS}})
    return out


class _Puller:
    """Walks the service's lists into the stage, bounding concurrent side-walks."""

    def __init__(self, client: FundClient, stage: _Stage, concurrency: int, page_size: int) -> None:
        self.client = client
        self.stage = stage
        self.page_size = page_size
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    async def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `work` concurrently once a slot is free (waits, so callers stay bounded)."""
        await self._slots.acquire()

        async def run() -> None:
            try:
                await work()
            finally:
                self._slots.release()

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every spawned walk, including walks spawned while waiting."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    def pages(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        return self.client.raw_pages(path, params)

    async def vehicles_and_accounts(self) -> None:
        async for page in self.pages("/v1/vehicles", {"limit": self.page_size}):
            vehicles = page["data"]
            self.stage["vehicles"].add(vehicles)
            for vehicle in vehicles:
                await self.spawn(partial(self.accounts, vehicle["id"]))

    async def accounts(self, vehicle_id: str) -> None:
        path = f"/v1/vehicles/{vehicle_id}/financial_accounts"
        async for page in self.pages(path, {"limit": self.page_size}):
            self.stage["financial_accounts"].add(_flatten_accounts(page["data"]))

    async def distributions(self) -> None:
        async for page in self.pages("/v1/distributions", {"limit": self.page_size}):
            self.stage["distributions"].add(page["data"])
            for distribution in page["data"]:
                await self._payments_of(distribution)

    async def _payments_of(self, distribution: Mapping[str, Any]) -> None:
        dst_id = distribution["id"]
        nested = distribution.get("payments")
        if not isinstance(nested, Mapping):
            path = f"/v1/distributions/{dst_id}/payments"
            await self.spawn(partial(self.payment_pages, dst_id, path, {"limit": self.page_size}))
            return
        await self._add_payments(dst_id, nested.get("data") or [])
        next_url = nested.get("next_page_url")
        if next_url:
            await self.spawn(partial(self.payment_pages, dst_id, next_url, None))

    async def payment_pages(self, dst_id: str, path: str, params: Mapping[str, Any] | None) -> None:
        async for page in self.pages(path, params):
            await self._add_payments(dst_id, page["data"])

    async def _add_payments(self, dst_id: str, payments: list[dict[str, Any]]) -> None:
        self.stage["distribution_payments"].add(
            {**p, "distribution": p.get("distribution") or dst_id} for p in payments
        )
        for payment in payments:
            nested = payment.get("notifications")
            if not isinstance(nested, Mapping):
                continue  # a payment without the nested list has no notifications to read
            self.stage["distribution_notifications"].add(
                nested.get("data") or [], payment=payment["id"]
            )
            next_url = nested.get("next_page_url")
            if next_url:
                await self.spawn(partial(self.notifications, payment["id"], next_url))

    async def notifications(self, payment_id: str, path: str) -> None:
        async for page in self.pages(path):
            self.stage["distribution_notifications"].add(page["data"], payment=payment_id)

    async def simple(self, path: str, table: str) -> None:
        async for page in self.pages(path, {"limit": self.page_size}):
            self.stage[table].add(page["data"])

    async def run(self) -> None:
        # Independent cursors walk side by side; side-walks are bounded by the semaphore.
        try:
            await asyncio.gather(
                self.vehicles_and_accounts(),
                self.distributions(),
                self.simple("/v1/entities", "entities"),
                self.simple("/v1/contacts", "contacts"),
            )
            await self.drain()
        except BaseException:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
            raise


async def sync_async(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    warehouse: Warehouse | None = None,
    page_size: int = _PAGE_SIZE,
    progress: ProgressSink | None = None,
) -> SyncResult:
    """`sync` for callers already inside an event loop."""
    require_service(settings, transport)
    now = clock or (lambda: datetime.now(UTC))
    seen_at = now()
    sync_id = f"sync_{seen_at.astimezone(UTC):%Y%m%dT%H%M%SZ}_{uuid.uuid4().hex[:8]}"
    warehouse = warehouse or Warehouse(settings.warehouse_file)
    with tempfile.TemporaryDirectory(prefix="fundpipe-sync-") as tmp:
        stage = _Stage(Path(tmp), progress)
        try:
            async with FundClient(settings, transport=transport) as client:
                await _Puller(client, stage, settings.max_concurrency, page_size).run()
        finally:
            stage.close()
        counts = {name: sink.rows for name, sink in stage.sinks.items()}
        with warehouse.write() as con:
            changes = merge(
                con, {name: stage[name].path for name in STAGE_SCHEMAS}, sync_id, seen_at
            )
            ledger_rows = copy_ledger(con, settings.ledger_file, timeout_s=warehouse.lock_timeout_s)
            finished_at = now()
            con.execute(
                "UPDATE syncs SET finished_at = ?, vehicles = ?, financial_accounts = ?, "
                "distributions = ?, payments = ?, notifications = ?, entities = ?, contacts = ?, "
                "status_changes = ?, ledger_payments = ? WHERE sync_id = ?",
                [
                    finished_at,
                    counts["vehicles"],
                    counts["financial_accounts"],
                    counts["distributions"],
                    counts["distribution_payments"],
                    counts["distribution_notifications"],
                    counts["entities"],
                    counts["contacts"],
                    changes,
                    ledger_rows,
                    sync_id,
                ],
            )
    log.info("sync %s: %s, %d status changes", sync_id, counts, changes)
    return SyncResult(
        sync_id=sync_id,
        seen_at=seen_at,
        finished_at=finished_at,
        warehouse=warehouse.path,
        counts=counts,
        status_changes=changes,
        ledger_payments=ledger_rows,
        ledger_found=settings.ledger_file.exists(),
    )


def sync(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    warehouse: Warehouse | None = None,
    progress: ProgressSink | None = None,
) -> SyncResult:
    """Pull the service into the warehouse (see the module docstring); return what was pulled.

    `settings` must point at a service (`settings.base_url`); `transport` replaces the network
    (tests pass the sandbox's ASGI app); `clock` stamps `seen_at` (tests pass the sandbox clock);
    `progress` hears the rows pulled per list (the CLI draws bars from it).
    """
    return asyncio.run(
        sync_async(
            settings, transport=transport, clock=clock, warehouse=warehouse, progress=progress
        )
    )
