"""Execute a plan through the client, recording every request to the ledger.

(What the service holds is read by :mod:`fundpipe.submit.snapshot`, the plan checked by
:mod:`fundpipe.plan.preflight` and a crashed run's open requests closed by
:mod:`fundpipe.submit.settle` before it gets here.)

:func:`execute` runs the phases in order, each in chunks: the intents of a chunk's requests in
one commit → the chunk sent with bounded concurrency → its outcomes in the commit of the next
chunk's intents. Contact associations (optional; each needs only its entity and contacts) run
beside payment instructions and distributions, in at most half of the request slots, and
nothing waits for them. One run is an :class:`_Execution`, one method per step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fundpipe.client import FundClient
from fundpipe.client.errors import (
    AlreadyExistsError,
    APIError,
    FundServiceError,
)
from fundpipe.client.models import CreatedDistribution
from fundpipe.keys import CanonicalBody, idempotency_key
from fundpipe.plan import (
    PHASES,
    IdMap,
    Phase,
    Plan,
    PlannedDistribution,
    PlannedRequest,
    ResolvedRequest,
    ServiceState,
    UnresolvedReferenceError,
)
from fundpipe.progress import NullProgress, ProgressSink
from fundpipe.submit.adopt import association_warnings, send_adopting
from fundpipe.submit.ledger import Ledger
from fundpipe.submit.writer import Created, LedgerWriter, created_by, record_created

log = logging.getLogger(__name__)

#: Client errors whose outcome is certain: the service refused and stored nothing.
_DEFINITIVE_STATUSES = frozenset({400, 401, 403, 404, 405, 413, 415, 422})


# --------------------------------------------------------------------------- execution


@dataclass
class SubmitResult:
    """What one execution did."""

    created: dict[str, str] = field(default_factory=dict)  # external reference → dst_ id
    keys_sent: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # file hash → reason
    unknown: dict[str, str] = field(default_factory=dict)  # file hash → reason
    requests_sent: int = 0
    elapsed_s: float = 0.0  # wall time of the execution (all phases)
    #: what was not done but blocks nothing (associations, linked or clashing investors)
    warnings: list[str] = field(default_factory=list)
    linked_ids: list[str] = field(default_factory=list)  # existing entities/contacts used

    @property
    def complete(self) -> bool:
        """True when no outcome is left unknown."""
        return not self.unknown


async def _send(client: FundClient, request: ResolvedRequest) -> list[Any]:
    body = request.body
    if request.phase == "entities":
        return await client.create_entities(body, idempotency_key=request.key)
    if request.phase == "contacts":
        return await client.create_contacts(body, idempotency_key=request.key)
    if request.phase == "associations":
        ent_id = request.path.split("/")[3]
        # only the contacts' ids are kept (the ledger's service ids): no record is built
        return await client.associate_contact_ids(
            ent_id, [c["id"] for c in body], idempotency_key=request.key
        )
    if request.phase == "payment_instructions":
        return await client.create_payment_instructions(body, idempotency_key=request.key)
    if request.body_json:  # the text the key was made from: sent as it is
        body = CanonicalBody(body, request.body_json)
    # only the ids and references are kept (the ledger's): no nested payment record is built
    return await client.create_distribution_ids(body, idempotency_key=request.key)


def _ids_of(records: Iterable[Any]) -> list[str]:
    out = []
    for r in records:
        ident = r if isinstance(r, str) else getattr(r, "id", None) or getattr(r, "entity", None)
        if ident:
            out.append(str(ident))
    return out


async def execute(
    client: FundClient,
    ledger: Ledger,
    plan: Plan,
    state: ServiceState,
    *,
    concurrency: int = 8,
    chunk_size: int | None = None,
    key_fn: Callable[[str, str, str, Any], str] = idempotency_key,
    progress: ProgressSink | None = None,
) -> SubmitResult:
    """Run the plan's phases in order (associations beside the later ones), with at most
    ``concurrency`` requests in flight.

    A phase's requests are sent in chunks of ``chunk_size`` (default ``8 × concurrency``, four
    times that for contact associations; fewer when they carry over 50k payments), each
    resolved just before it is sent (ids of earlier phases only): the chunk's intents are
    committed in one statement before any of its requests is sent, and its outcomes with the
    next chunk's intents, in the same commit (alone once a second passes without a commit, and
    at the end). ``progress`` hears one step per planned request, whatever its outcome.
    """
    sink = progress or NullProgress()
    run = _Execution(client, ledger, plan, state, concurrency, chunk_size, key_fn, sink)
    return await run.all_phases()


class _Execution:
    """One run of :func:`execute`: what its requests share (the ids learned so far, the files
    an earlier failure broke, the ledger's writer, the two gates) and one method per step —
    the phases → a phase → a chunk → a request → its outcome."""

    def __init__(
        self,
        client: FundClient,
        ledger: Ledger,
        plan: Plan,
        state: ServiceState,
        concurrency: int,
        chunk_size: int | None,
        key_fn: Callable[[str, str, str, Any], str],
        sink: ProgressSink,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.plan = plan
        self.concurrency = concurrency
        self.chunk_size = chunk_size
        self.key_fn = key_fn
        self.sink = sink
        self.result = SubmitResult()
        self.ids = IdMap(
            entities=dict(state.entities_by_ref), contacts=dict(state.contacts_by_email)
        )
        self.by_ref = {(d.file_hash, d.external_reference): d for d in plan.distributions}
        self.gate = asyncio.Semaphore(concurrency)
        self.side_slots = max(1, concurrency // 2)
        self.side_gate = asyncio.Semaphore(self.side_slots)
        self.broken: dict[str, str] = {}  # file hash → why its later requests cannot run
        self.writer = LedgerWriter(ledger)
        self.chunk = max(1, chunk_size or 8 * concurrency)

    async def all_phases(self) -> SubmitResult:
        """Every phase in order, associations beside the later ones; the ledger flushed and
        closed whatever happens."""
        self.sink.start("submit", "submit requests", total=len(self.plan.requests))
        started = time.perf_counter()
        writer = self.writer
        flusher = asyncio.create_task(writer.run_flusher())
        beside: asyncio.Task[None] | None = None
        try:
            for phase in PHASES:
                if phase == "associations":
                    # needs only its entity and contacts (created by now); never waited for by
                    # payment instructions or distributions
                    beside = asyncio.create_task(self.run_phase(phase))
                else:
                    await self.run_phase(phase)
            if beside is not None:
                # nothing else waits for a slot now: the associations left may take them all
                for _ in range(self.concurrency - self.side_slots):
                    self.side_gate.release()
                await beside
        finally:
            if beside is not None and not beside.done():
                beside.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beside
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            await writer.flush()
            writer.close()
        self.result.elapsed_s = time.perf_counter() - started
        return self.result

    async def run_phase(self, phase: Phase) -> None:
        """Resolve and send one phase's requests, a chunk at a time."""
        # each chunk is resolved just before it is sent (a big night's bodies are not all
        # held at once); what blocks a request is decided as when the phase began
        blocked = dict(self.broken)
        # an association's body is one id: its chunks are larger (fewer ledger statements
        # and commits a request, and fewer waits for a chunk's last answer)
        size = self.chunk
        if phase == "associations" and not self.chunk_size:
            size *= _ASSOCIATION_CHUNKS
        batch: list[tuple[PlannedRequest, ResolvedRequest]] = []
        weight = 0
        for request in self.plan.phase(phase):
            resolved = self.prepare(request, blocked)
            if resolved is None:
                self.sink.advance("submit")
                continue
            batch.append((request, resolved))
            weight += _weight(request)
            if len(batch) >= size or (len(batch) >= self.concurrency and weight >= _CHUNK_ELEMENTS):
                await self.run_chunk(batch)
                batch, weight = [], 0
        if batch:
            await self.run_chunk(batch)

    def prepare(self, request: PlannedRequest, blocked: dict[str, str]) -> ResolvedRequest | None:
        """Resolve ``request`` unless every file it serves is ``blocked`` (what was broken when
        its phase began, and what this phase's unresolvable requests broke since)."""
        if all(h in blocked for h in request.file_hashes) and request.file_hashes:
            return None
        try:
            return request.resolve(self.ids, self.plan.org_id, self.key_fn)
        except UnresolvedReferenceError as exc:
            if request.phase == "associations":  # optional: never blocks a distribution
                self.result.warnings.append(f"{request.label}: not associated ({exc})")
                return None
            self.fail(self.result.failed, request, str(exc))
            for h in request.file_hashes:
                blocked.setdefault(h, str(exc))
            self.writer.later(partial(_fail_distributions, self.ledger, request, self.by_ref))
            return None

    async def run_chunk(self, batch: list[tuple[PlannedRequest, ResolvedRequest]]) -> None:
        """Commit a chunk's intents, then send its requests together."""
        # durable before any is sent, in one commit with the outcomes queued before them
        await self.writer.intents([r for _, r in batch])
        self.result.requests_sent += len(batch)
        self.result.keys_sent.update(r.key for _, r in batch)
        await asyncio.gather(*(_counted(self.run(p, r), self.sink) for p, r in batch))

    async def run(self, request: PlannedRequest, resolved: ResolvedRequest) -> None:
        """Send one request whose intent is committed; queue its outcome."""
        # associations run beside the later phases, in at most half of the slots (all of them
        # once the later phases are done)
        beside = request.phase == "associations"
        async with self.side_gate if beside else contextlib.nullcontext():
            await self.send(request, resolved)

    async def send(self, request: PlannedRequest, resolved: ResolvedRequest) -> None:
        """Send one request in a slot of the gate; queue its outcome (success or failure)."""
        async with self.gate:
            resent: list[str] = []  # smaller batches sent after a 409 named existing objects
            try:
                if request.phase in ("entities", "contacts"):
                    adopted = await send_adopting(
                        self.client,
                        resolved,
                        partial(_send, self.client),
                        self.key_fn,
                        self.plan.org_id,
                        self.writer.intent,
                    )
                    records = adopted.records
                    self.result.linked_ids.extend(adopted.linked)
                    self.result.warnings.extend(f"{request.label}: {c}" for c in adopted.conflicts)
                    resent = [r.key for r in adopted.requests]
                    self.result.keys_sent.update(resent)
                else:
                    records = await _send(self.client, resolved)
            except FundServiceError as exc:
                self.failed(request, resolved, exc)
                return
        _learn(self.ids, request, records)
        # only the ids are kept until the outcome is written, not the parsed response
        service_ids = _ids_of(records)
        created: Created | None = None
        if request.phase == "distributions":
            created = created_by(resolved, records, await _all_payments(self.client, records))
        del records
        keys = [resolved.key, *resent]
        self.writer.later(partial(self.record_success, request, keys, service_ids, created))

    def failed(
        self, request: PlannedRequest, resolved: ResolvedRequest, exc: FundServiceError
    ) -> None:
        """Count a refused (or unanswered) request against its files; queue its outcome."""
        status = exc.status if isinstance(exc, APIError) else None
        # a 409 naming the existing object is an answer, not a request still in flight
        definitive = status in _DEFINITIVE_STATUSES or isinstance(exc, AlreadyExistsError)
        if request.phase == "associations":  # optional: a warning, never a failed file
            self.result.warnings.extend(association_warnings(request, resolved, exc))
        else:
            target = self.result.failed if definitive else self.result.unknown
            self.fail(target, request, str(exc))
        request_id = exc.request_id if isinstance(exc, APIError) else None
        outcome = (resolved.key, definitive, status, request_id, str(exc))
        self.writer.later(partial(self.record_failure, request, *outcome))

    def fail(self, target: dict[str, str], request: PlannedRequest, why: str) -> None:
        """Mark the files ``request`` serves as broken, and why, in ``target`` too."""
        for h in request.file_hashes:
            self.broken.setdefault(h, f"{request.label}: {why}")
            target.setdefault(h, f"{request.label}: {why}")

    def record_failure(
        self,
        request: PlannedRequest,
        key: str,
        definitive: bool,
        status: int | None,
        request_id: str | None,
        error: str,
    ) -> None:
        """Write a failed request's outcome (on the writer's thread)."""
        optional = request.phase == "associations"
        self.ledger.record_outcome(
            key,
            "failed" if definitive or optional else "unknown",
            status=status,
            request_id=request_id,
            error=error,
        )
        if optional:
            return
        if definitive:
            _fail_distributions(self.ledger, request, self.by_ref)
        else:
            for h in request.file_hashes:
                self.ledger.mark_distributions(
                    h, request.distribution_refs, "sent", request_key=key
                )

    def record_success(
        self,
        request: PlannedRequest,
        keys: list[str],
        service_ids: list[str],
        created: Created | None,
    ) -> None:
        """Write a request's success, and the distributions it created (on the writer's
        thread)."""
        for key in keys:
            self.ledger.record_outcome(key, "succeeded", status=201, service_ids=service_ids)
        if created is not None:
            self.result.created.update(created.distribution_ids)
            record_created(self.ledger, request.file_hashes, keys[0], created)


async def _counted(step: Awaitable[None], sink: ProgressSink) -> None:
    try:
        await step
    finally:
        sink.advance("submit")


def _learn(ids: IdMap, request: PlannedRequest, records: Sequence[Any]) -> None:
    if request.phase == "entities":
        for e in records:
            if getattr(e, "external_reference", None):
                ids.entities[e.external_reference] = e.id
    elif request.phase == "contacts":
        for c in records:
            if getattr(c, "email", None):
                ids.contacts[c.email.lower()] = c.id


#: How many times the default chunk an association chunk holds (its body is one contact id).
_ASSOCIATION_CHUNKS = 4

#: Elements (payments, for distributions) a chunk of requests stops growing at once it holds
#: ``concurrency`` requests: bounds the bodies resolved at once on a big night.
_CHUNK_ELEMENTS = 50_000


def _weight(request: PlannedRequest) -> int:
    """The elements of a request's body (a distribution counts its payments)."""
    if request.phase == "distributions":
        return sum(len(e.get("payments", ())) for e in request.body)
    return len(request.body)


def _fail_distributions(
    ledger: Ledger,
    request: PlannedRequest,
    by_ref: dict[tuple[str, str], PlannedDistribution],
) -> None:
    if request.phase == "distributions":
        for h in request.file_hashes:
            ledger.mark_distributions(h, request.distribution_refs, "failed")
        return
    # an earlier phase failed: every distribution of the same files is left unsent
    for h in request.file_hashes:
        refs = [ref for (fh, ref), d in by_ref.items() if fh == h and d.action == "create"]
        ledger.mark_distributions(h, refs, "failed")


async def _all_payments(
    client: FundClient, records: Sequence[CreatedDistribution]
) -> dict[str, list[str]]:
    """The ids of all the payments of the distributions whose answer holds only their first
    page (distributions of more than 100 payments)."""
    out: dict[str, list[str]] = {}
    for record in records:
        if record.more_payments:
            out[record.id] = [p.id async for p in client.list_distribution_payments(record.id)]
    return out
