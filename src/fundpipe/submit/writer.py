"""The ledger's writer for :func:`fundpipe.submit.execute.execute`: writes off the event loop.

Intents are committed in one statement per chunk of requests before any of them is sent;
outcomes and payment marks are queued and committed with the next chunk's intents (or alone
once no commit has been made for a second, and at the end).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fundpipe.client.models import CreatedDistribution
from fundpipe.plan import ResolvedRequest
from fundpipe.submit.ledger import Ledger


class LedgerWriter:
    """Ledger writes off the event loop, in one thread, in order.

    Intents are written (and committed) before their request is sent: a chunk's in one
    statement (:meth:`intents`), a lone one (an adopting re-send) through :meth:`intent`.
    Outcomes are queued and committed in the same commit as the next chunk's intents (one
    commit a chunk), and on their own once ``flush_s`` seconds pass without a commit (a slow
    chunk) and at the end (:meth:`flush`): an outcome lost to a crash leaves its request open,
    which the next run settles by lookup.
    """

    def __init__(self, ledger: Ledger, flush_s: float = 1.0) -> None:
        self.ledger = ledger
        self.flush_s = flush_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fundpipe-ledger")
        self._pending: list[Callable[[], None]] = []
        self._intents: list[tuple[ResolvedRequest, asyncio.Future[None]]] = []
        self._draining: asyncio.Task[None] | None = None
        self._committed = time.monotonic()  # when the last commit was asked for

    async def intents(self, requests: Sequence[ResolvedRequest]) -> None:
        """Return once the intents of ``requests`` are committed (one statement), in one
        commit with the outcomes queued so far."""
        writes, self._pending = self._pending, []
        if not (requests or writes):
            return
        self._committed = time.monotonic()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(
                self._pool, self.ledger.record_outcomes_and_intents, writes, list(requests)
            )
        except BaseException:
            self._pending[:0] = writes  # not written: still to write (the last flush tries)
            raise

    async def intent(self, request: ResolvedRequest) -> None:
        """Return once the intent is committed; intents queued meanwhile share one commit."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._intents.append((request, done))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain_intents())
        await done

    async def _drain_intents(self) -> None:
        loop = asyncio.get_running_loop()
        while self._intents:
            batch, self._intents = self._intents, []
            try:
                await loop.run_in_executor(
                    self._pool, self.ledger.record_intents, [r for r, _ in batch]
                )
            except Exception as exc:  # every waiter learns its intent was not written
                for _, done in batch:
                    done.set_exception(exc)
            else:
                for _, done in batch:
                    done.set_result(None)

    def later(self, write: Callable[[], None]) -> None:
        self._pending.append(write)

    def _apply(self, writes: list[Callable[[], None]]) -> None:
        with self.ledger.batched():
            for write in writes:
                write()

    async def flush(self) -> None:
        """Commit the outcomes queued so far (one commit)."""
        writes, self._pending = self._pending, []
        if writes:
            self._committed = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(self._pool, self._apply, writes)

    async def run_flusher(self) -> None:
        """Flush whenever ``flush_s`` seconds pass without a commit (until cancelled)."""
        while True:
            await asyncio.sleep(max(0.0, self._committed + self.flush_s - time.monotonic()))
            if time.monotonic() - self._committed >= self.flush_s:
                await self.flush()
                self._committed = time.monotonic()  # nothing queued: wait a whole period

    def close(self) -> None:
        self._pool.shutdown(wait=True)


@dataclass(frozen=True)
class Created:
    """What a successful distributions request created, as the ledger records it (only the
    ids: the parsed response is not kept until the outcome is written)."""

    distribution_ids: dict[str, str]
    payment_ids: dict[str, list[str]]
    entities: dict[str, list[str]]


def created_by(
    resolved: ResolvedRequest,
    records: Sequence[CreatedDistribution],
    extra: Mapping[str, list[str]],
) -> Created:
    """The ids a distributions request's answer ``records`` (and ``extra``: all the payment
    ids of those whose answer held only a first page) give to the elements of ``resolved``'s
    body."""
    by_ref = {r.external_reference: r for r in records}
    out = Created({}, {}, {})
    for element in resolved.body:
        ref = element["external_reference"]
        record = by_ref.get(ref)
        if record is None:
            continue
        out.distribution_ids[ref] = record.id
        out.payment_ids[ref] = list(extra.get(record.id) or record.payment_ids)
        out.entities[ref] = [p["entity"] for p in element["payments"]]
    return out


def record_created(ledger: Ledger, file_hashes: Sequence[str], key: str, created: Created) -> None:
    """Mark the created distributions' payment rows with their ids."""
    for h in file_hashes:
        ledger.mark_distributions(
            h,
            list(created.distribution_ids),
            "created",
            request_key=key,
            distribution_ids=created.distribution_ids,
            payment_ids=created.payment_ids,
            entities=created.entities,
        )
