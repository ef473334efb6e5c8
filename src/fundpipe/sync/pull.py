"""Sync: pull what the service holds into the DuckDB warehouse.

One sync pulls vehicles, every financial account with its balance, distributions with their
payments and notifications, entities and contacts, and merges them in one transaction:

- balances are *appended* to `balance_snapshots` with the sync's `seen_at` (never overwritten);
- distributions, payments, notifications, entities, contacts, vehicles and accounts are upserted
  by id, and every status a distribution or payment is seen in for the first time is appended to
  `status_history`;
- the ledger's `ledger_payments` / `ledger_files` are copied from the ledger file (read-only), so
  reconciliation never needs the ledger open; no ledger file → those tables are emptied.

Only what is new and still open is pulled (`fundpipe.sync.incremental`): the distribution,
entity and contact lists are walked newest first down to what the warehouse already holds, open
distributions are re-read; a list is walked whole every `FUNDPIPE_FULL_SYNC_DAYS`, on `full=True`,
on a first sync and when it is not newest first. The merge only upserts: nothing is deleted.

Pulling is concurrent where lists are independent (each vehicle's accounts, the rest of a
distribution's payments, the entity and contact lists), sequential along one cursor; pages are
staged in Parquet (`fundpipe.sync.stage`), and the warehouse is opened only for the merge (a
first sync builds the new file beside the pull: `fundpipe.sync.fresh`)."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from fundpipe.client import FundClient, Walk
from fundpipe.client.errors import MissingScopeError, NotFoundError, OperationUnavailableError
from fundpipe.client.models import one_form
from fundpipe.config import Settings, require_service
from fundpipe.progress import ProgressSink
from fundpipe.submit import check_binding, check_livemode
from fundpipe.sync.fresh import FreshWarehouse
from fundpipe.sync.incremental import WALKED_LISTS, Walks, plan_walks, record_walks
from fundpipe.sync.merge import copy_ledger, ledger_vehicles, merge
from fundpipe.sync.monthend import certify_month_ends
from fundpipe.sync.stage import STAGE_SCHEMAS, Stage
from fundpipe.warehouse import Warehouse

__all__ = ["SyncResult", "sync", "sync_async"]

log = logging.getLogger(__name__)

_PAGE_SIZE = 100  # the service's maximum `limit`

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
    #: what could not be pulled but did not stop the sync (optional operations), in words
    warnings: tuple[str, ...] = ()
    #: the objects' `livemode` (None when none was seen; True when any was live)
    livemode: bool | None = None
    #: how each top-level list was walked: "full" or "incremental" (down to known objects)
    walks: dict[str, str] = field(default_factory=dict)
    #: still-open distributions re-read through their payment list (beyond the list walk)
    reread_open: int = 0


def _flatten_accounts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for record in records:
        balance = record.get("balance") or {}
        out.append({**record, **{k: balance.get(k) for k in _BALANCE_FIELDS}})
    return out


async def _close(pages: AsyncIterator[Any]) -> None:
    """Close a page walk left before its end (an async generator), so it fetches no more."""
    aclose = getattr(pages, "aclose", None)
    if aclose is not None:
        await aclose()


class _Puller:
    """Walks the service's lists into the stage, bounding concurrent side-walks."""

    def __init__(
        self,
        client: FundClient,
        stage: Stage,
        concurrency: int,
        page_size: int,
        vehicles: Iterable[str] = (),
        planned: Walks | None = None,
    ) -> None:
        self.client = client
        planned = planned or Walks(dict.fromkeys(WALKED_LISTS, "full"), {})
        self.walks = {
            name: Walk(
                name,
                planned.ids.get(name) if planned.modes.get(name) == "incremental" else None,
                planned.open_distributions if name == "distributions" else (),
            )
            for name in WALKED_LISTS
        }
        self.reread_open = 0
        # from the ledger, FUNDPIPE_VEHICLES and (incremental walks) the warehouse's accounts
        self.hinted = set(vehicles) | planned.vehicles
        self.seen_vehicles: set[str] = set()  # named by distributions
        self.warnings: list[str] = []
        self.livemode: bool | None = None
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
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        operation: str | None = None,
        *,
        ahead: bool | Callable[[], bool] = False,
    ) -> AsyncIterator[dict[str, Any]]:
        return self.client.raw_pages(path, params, operation=operation, ahead=ahead)

    def _seen(self, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            live = record.get("livemode")
            if live is not None:
                self.livemode = bool(self.livemode) or bool(live)

    async def vehicles_and_accounts(self) -> bool:
        """The vehicle list (optional): False, with a warning, when the service lacks it."""
        path = self.client.path_of("vehicles")
        try:
            async for page in self.pages(path, {"limit": self.page_size}, "vehicles"):
                vehicles = page["data"]
                self.stage["vehicles"].add(vehicles)
                for vehicle in vehicles:
                    self.hinted.discard(vehicle["id"])
                    await self.spawn(partial(self.accounts, vehicle["id"]))
        except (OperationUnavailableError, MissingScopeError) as exc:
            what = f"{path} answered {exc.status}"
            if isinstance(exc, MissingScopeError):
                what = f"not granted: {exc.message}"
            self.warnings.append(
                f"the optional operation 'vehicles' failed ({what}): balances read for the "
                "vehicles of the ledger, the distributions, the warehouse and FUNDPIPE_VEHICLES"
            )
            return False
        return True

    async def unlisted_vehicles(self) -> None:
        """Without the vehicle list: every vehicle we know of, through its account list."""
        for vehicle_id in sorted(self.hinted | self.seen_vehicles):
            self.stage["vehicles"].add([{"id": vehicle_id}])
            await self.spawn(partial(self.accounts, vehicle_id))

    async def accounts(self, vehicle_id: str) -> None:
        path = f"/v1/vehicles/{vehicle_id}/financial_accounts"
        try:
            async for page in self.pages(path, {"limit": self.page_size}):
                self._seen(page["data"])
                self.stage["financial_accounts"].add(_flatten_accounts(page["data"]))
        except NotFoundError:
            self.warnings.append(f"vehicle {vehicle_id}: unknown to the service (404)")

    async def distributions(self) -> None:
        walk = self.walks["distributions"]
        # Pages of distributions carry their payments (megabytes each): the next page is asked
        # for while this one is decoded (iter_raw_pages_ahead) when the walk is sure to read it,
        # and taken in while this one is staged.
        pages = self.pages(
            "/v1/distributions",
            {"limit": self.page_size},
            ahead=lambda: walk.goes_on_after_next(self.page_size),
        )
        ahead: asyncio.Future[Any] | None = None
        try:
            page = await anext(pages, None)
            while page is not None:
                stop = walk.page(page["data"])
                if not stop:
                    ahead = asyncio.ensure_future(anext(pages, None))
                self._seen(page["data"])
                self.seen_vehicles |= {d["vehicle"] for d in page["data"] if d.get("vehicle")}
                self.stage["distributions"].add(page["data"])
                for n, distribution in enumerate(page["data"]):
                    await self._payments_of(distribution)
                    if ahead is not None and n % 8 == 0:
                        await asyncio.sleep(0)  # let the next page's request go out
                if stop or ahead is None:
                    break
                page, ahead = await ahead, None
        finally:
            if ahead is not None:  # an error ended the walk: the page asked for ahead is dropped
                ahead.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await ahead
            await _close(pages)
        # Open distributions the walk did not reach: their payments, through the nested list.
        for dst_id in sorted(walk.unseen_open):
            self.reread_open += 1
            path = f"/v1/distributions/{dst_id}/payments"
            await self.spawn(partial(self.open_payments, dst_id, path))

    async def open_payments(self, dst_id: str, path: str) -> None:
        """The payments of a still-open distribution the list walk stopped before."""
        try:
            await self.payment_pages(dst_id, path, {"limit": self.page_size})
        except NotFoundError:
            self.warnings.append(f"distribution {dst_id}: unknown to the service (404)")

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
        elif nested.get("has_more") is True:  # the older form: go on through the list operation
            path = f"/v1/distributions/{dst_id}/payments"
            params = {"limit": self.page_size}
            await self.spawn(partial(self.payment_pages, dst_id, path, params))

    async def payment_pages(self, dst_id: str, path: str, params: Mapping[str, Any] | None) -> None:
        async for page in self.pages(path, params):
            await self._add_payments(dst_id, page["data"])

    async def _add_payments(self, dst_id: str, payments: list[dict[str, Any]]) -> None:
        self.stage["distribution_payments"].add(payments, defaults={"distribution": dst_id})
        for payment in payments:
            nested = payment.get("notifications")
            if not isinstance(nested, Mapping):
                continue  # a payment without the nested list has no notifications to read
            if notified := nested.get("data"):
                self.stage["distribution_notifications"].add(notified, payment=payment["id"])
            next_url = nested.get("next_page_url")
            if next_url:
                await self.spawn(partial(self.notifications, payment["id"], next_url))

    async def notifications(self, payment_id: str, path: str) -> None:
        async for page in self.pages(path):
            self.stage["distribution_notifications"].add(page["data"], payment=payment_id)

    async def simple(self, path: str, table: str, kind: str) -> None:
        walk = self.walks[table]
        pages = self.pages(path, {"limit": self.page_size})
        try:
            async for page in pages:
                self._seen(page["data"])
                self.stage[table].add(one_form(kind, r) for r in page["data"])
                if walk.page(page["data"]):
                    break
        finally:
            await _close(pages)

    async def run(self) -> None:
        # Independent cursors walk side by side; side-walks are bounded by the semaphore.
        try:
            listed, *_ = await asyncio.gather(
                self.vehicles_and_accounts(),
                self.distributions(),
                self.simple("/v1/entities", "entities", "entity"),
                self.simple("/v1/contacts", "contacts", "contact"),
            )
            if not listed:
                await self.unlisted_vehicles()
            await self.drain()
            self.warnings.extend(w for walk in self.walks.values() if (w := walk.warning()))
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
    full: bool = False,
) -> SyncResult:
    """`sync` for callers already inside an event loop."""
    require_service(settings, transport)
    check_binding(settings, settings.service.org_id, bind=False)
    now = clock or (lambda: datetime.now(UTC))
    seen_at = now()
    sync_id = f"sync_{seen_at.astimezone(UTC):%Y%m%dT%H%M%SZ}_{uuid.uuid4().hex[:8]}"
    local, http, every = settings.local, settings.http, settings.pipeline.full_sync_days
    warehouse = warehouse or Warehouse(local.warehouse_file, cache_dir=local.cache_dir)
    planned = plan_walks(warehouse, full=full, full_every_days=every, now=seen_at)
    for name in WALKED_LISTS:
        log.info("sync %s: %s walk (%s)", name, planned.modes[name], planned.reasons[name])
    fresh = FreshWarehouse(warehouse)
    with tempfile.TemporaryDirectory(prefix="fundpipe-sync-") as tmp:
        stage = Stage(Path(tmp), progress)
        try:
            hints = set(settings.service.vehicles) | ledger_vehicles(local.ledger_file)
            async with FundClient(settings.client_config(), transport=transport) as client:
                puller = _Puller(client, stage, http.max_concurrency, page_size, hints, planned)
                await puller.run()
            check_livemode(settings, puller.livemode)  # before the warehouse is touched
            await fresh.place()
        finally:
            stage.close()
            await fresh.discard()
        counts = {name: sink.rows for name, sink in stage.sinks.items()}
        with warehouse.write() as con:
            staged = {name: stage[name].path for name in STAGE_SCHEMAS}
            changes = merge(con, staged, sync_id, seen_at)
            timeout_s, stamp = warehouse.lock_timeout_s, (seen_at, sync_id)
            ledger_rows = copy_ledger(con, local.ledger_file, timeout_s=timeout_s, stamp=stamp)
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
            walks = {name: walk.mode for name, walk in puller.walks.items()}
            record_walks(con, walks, sync_id, seen_at)  # the merge has committed
            certify_month_ends(con, sync_id, seen_at)  # a provisional close's month-end
    log.info("sync %s: %s, %d status changes", sync_id, counts, changes)
    return SyncResult(
        sync_id=sync_id,
        seen_at=seen_at,
        finished_at=finished_at,
        warehouse=warehouse.path,
        counts=counts,
        status_changes=changes,
        ledger_payments=ledger_rows,
        ledger_found=local.ledger_file.exists(),
        warnings=tuple(puller.warnings),
        livemode=puller.livemode,
        walks=walks,
        reread_open=puller.reread_open,
    )


def sync(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    warehouse: Warehouse | None = None,
    progress: ProgressSink | None = None,
    full: bool = False,
) -> SyncResult:
    """Pull the service into the warehouse (see the module docstring); return what was pulled.

    `settings` must point at a service (`settings.base_url`); `transport` replaces the network
    (tests pass the sandbox's ASGI app); `clock` stamps `seen_at` (tests pass the sandbox clock);
    `progress` hears the rows pulled per list (the CLI draws bars from it); `full` walks every
    list whole instead of stopping at what the warehouse already holds.
    """
    return asyncio.run(
        sync_async(
            settings,
            transport=transport,
            clock=clock,
            warehouse=warehouse,
            progress=progress,
            full=full,
        )
    )
