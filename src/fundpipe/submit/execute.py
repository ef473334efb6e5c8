"""Execute a plan through the client, recording every request to the ledger.

(What the service holds is read by :mod:`fundpipe.submit.snapshot`; the plan is checked by
:mod:`fundpipe.plan.preflight` before it gets here.)

- :func:`settle` closes requests a crashed run left open: a distribution the service holds is
  recorded as created; one it lacks is planned again — with the same body, hence the same key.
  Looking the distribution up by ``external_reference`` comes first, always, so a request whose
  key the service has forgotten (24 h) can never create a second distribution.
- :func:`execute` runs the phases in order, each in chunks: the intents of a chunk's requests
  in one commit → the chunk sent with bounded concurrency → its outcomes in the commit of the
  next chunk's intents. Contact associations (optional; each needs only its entity and
  contacts) run beside payment instructions and distributions, in at most half of the
  request slots, and nothing waits for them.
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
    ServiceDistribution,
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


def _payment_ids_for(d: PlannedDistribution, existing: ServiceDistribution) -> list[str | None]:
    """Match the service's payments to the sheet's rows by (entity, amount, currency)."""
    pool = list(zip(existing.payments, existing.payment_ids, strict=False))
    out: list[str | None] = []
    for p in d.payments:
        hit = next(
            (
                i
                for i, (sp, _) in enumerate(pool)
                if sp.entity == p.entity and sp.amount_cents == p.amount_cents
            ),
            None,
        )
        out.append(pool.pop(hit)[1] if hit is not None else None)
    return out


def settle(ledger: Ledger, plan: Plan, state: ServiceState) -> list[str]:
    """Record distributions a previous run sent and the service holds; close open requests.

    Returns the references settled by lookup. Distributions the plan links that a request of
    ours carried are ``created`` (we made them); the others are ``linked``.
    """
    settled: list[str] = []
    sent_by_file = {f.file_hash: ledger.sent_refs(f.file_hash) for f in plan.files}
    for d in plan.distributions:
        if d.action != "link" or d.existing_id is None:
            continue
        existing = state.distributions_by_ref[d.external_reference]
        ours = d.external_reference in sent_by_file.get(d.file_hash, set())
        ledger.mark_distributions(
            d.file_hash,
            [d.external_reference],
            "created" if ours else "linked",
            distribution_ids={d.external_reference: existing.id},
            payment_ids={d.external_reference: _payment_ids_for(d, existing)},
            entities={d.external_reference: [str(p.entity) for p in d.payments]},
        )
        if ours:
            settled.append(d.external_reference)
    for record in ledger.open_requests():
        if record.phase != "distributions":
            continue
        found = [r for r in record.distribution_refs if r in state.distributions_by_ref]
        if found and len(found) == len(record.distribution_refs):
            ids = [state.distributions_by_ref[r].id for r in found]
            ledger.record_outcome(record.key, "settled", service_ids=ids)
    return settled


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
    result = SubmitResult()
    sink = progress or NullProgress()
    sink.start("submit", "submit requests", total=len(plan.requests))
    ids = IdMap(entities=dict(state.entities_by_ref), contacts=dict(state.contacts_by_email))
    by_ref = {(d.file_hash, d.external_reference): d for d in plan.distributions}
    gate = asyncio.Semaphore(concurrency)
    side_gate = asyncio.Semaphore(max(1, concurrency // 2))
    broken: dict[str, str] = {}  # file hash → why its later requests cannot run
    writer = LedgerWriter(ledger)
    chunk = max(1, chunk_size or 8 * concurrency)

    def fail(target: dict[str, str], request: PlannedRequest, why: str) -> None:
        for h in request.file_hashes:
            broken.setdefault(h, f"{request.label}: {why}")
            target.setdefault(h, f"{request.label}: {why}")

    def prepare(request: PlannedRequest, blocked: dict[str, str]) -> ResolvedRequest | None:
        """Resolve ``request`` unless every file it serves is ``blocked`` (what was broken when
        its phase began, and what this phase's unresolvable requests broke since)."""
        if all(h in blocked for h in request.file_hashes) and request.file_hashes:
            return None
        try:
            return request.resolve(ids, plan.org_id, key_fn)
        except UnresolvedReferenceError as exc:
            if request.phase == "associations":  # optional: never blocks a distribution
                result.warnings.append(f"{request.label}: not associated ({exc})")
                return None
            fail(result.failed, request, str(exc))
            for h in request.file_hashes:
                blocked.setdefault(h, str(exc))
            writer.later(lambda: _fail_distributions(ledger, request, by_ref))
            return None

    async def run(request: PlannedRequest, resolved: ResolvedRequest) -> None:
        """Send one request whose intent is committed; queue its outcome."""
        # associations run beside the later phases, in at most half of the slots (all of them
        # once the later phases are done)
        async with side_gate if request.phase == "associations" else contextlib.nullcontext():
            await send(request, resolved)

    async def send(request: PlannedRequest, resolved: ResolvedRequest) -> None:
        async with gate:
            resent: list[str] = []  # smaller batches sent after a 409 named existing objects
            try:
                if request.phase in ("entities", "contacts"):
                    adopted = await send_adopting(
                        client,
                        resolved,
                        partial(_send, client),
                        key_fn,
                        plan.org_id,
                        writer.intent,
                    )
                    records = adopted.records
                    result.linked_ids.extend(adopted.linked)
                    result.warnings.extend(f"{request.label}: {c}" for c in adopted.conflicts)
                    resent = [r.key for r in adopted.requests]
                    result.keys_sent.update(resent)
                else:
                    records = await _send(client, resolved)
            except FundServiceError as exc:
                status = exc.status if isinstance(exc, APIError) else None
                # a 409 naming the existing object is an answer, not a request still in flight
                definitive = status in _DEFINITIVE_STATUSES or isinstance(exc, AlreadyExistsError)
                request_id = exc.request_id if isinstance(exc, APIError) else None
                error = str(exc)
                key = resolved.key
                optional = request.phase == "associations"
                if optional:
                    result.warnings.extend(association_warnings(request, resolved, exc))
                else:
                    fail(result.failed if definitive else result.unknown, request, str(exc))

                def record_failure() -> None:
                    ledger.record_outcome(
                        key,
                        "failed" if definitive or optional else "unknown",
                        status=status,
                        request_id=request_id,
                        error=error,
                    )
                    if optional:
                        return
                    if definitive:
                        _fail_distributions(ledger, request, by_ref)
                    else:
                        for h in request.file_hashes:
                            ledger.mark_distributions(
                                h, request.distribution_refs, "sent", request_key=key
                            )

                writer.later(record_failure)
                return
        _learn(ids, request, records)
        # only the ids are kept until the outcome is written, not the parsed response
        service_ids = _ids_of(records)
        created: Created | None = None
        if request.phase == "distributions":
            created = created_by(resolved, records, await _all_payments(client, records))
        del records
        keys = [resolved.key, *resent]

        def record_success() -> None:
            for key in keys:
                ledger.record_outcome(key, "succeeded", status=201, service_ids=service_ids)
            if created is not None:
                result.created.update(created.distribution_ids)
                record_created(ledger, request.file_hashes, keys[0], created)

        writer.later(record_success)

    async def run_chunk(batch: list[tuple[PlannedRequest, ResolvedRequest]]) -> None:
        # durable before any is sent, in one commit with the outcomes queued before them
        await writer.intents([r for _, r in batch])
        result.requests_sent += len(batch)
        result.keys_sent.update(r.key for _, r in batch)
        await asyncio.gather(*(_counted(run(p, r), sink) for p, r in batch))

    async def run_phase(phase: Phase) -> None:
        # each chunk is resolved just before it is sent (a big night's bodies are not all
        # held at once); what blocks a request is decided as when the phase began
        blocked = dict(broken)
        # an association's body is one id: its chunks are larger (fewer ledger statements
        # and commits a request, and fewer waits for a chunk's last answer)
        size = chunk * _ASSOCIATION_CHUNKS if phase == "associations" and not chunk_size else chunk
        batch: list[tuple[PlannedRequest, ResolvedRequest]] = []
        weight = 0
        for request in plan.phase(phase):
            resolved = prepare(request, blocked)
            if resolved is None:
                sink.advance("submit")
                continue
            batch.append((request, resolved))
            weight += _weight(request)
            if len(batch) >= size or (len(batch) >= concurrency and weight >= _CHUNK_ELEMENTS):
                await run_chunk(batch)
                batch, weight = [], 0
        if batch:
            await run_chunk(batch)

    started = time.perf_counter()
    flusher = asyncio.create_task(writer.run_flusher())
    beside: asyncio.Task[None] | None = None
    try:
        for phase in PHASES:
            if phase == "associations":
                # needs only its entity and contacts (created by now); never waited for by
                # payment instructions or distributions
                beside = asyncio.create_task(run_phase(phase))
            else:
                await run_phase(phase)
        if beside is not None:
            # nothing else waits for a slot now: the associations left may take them all
            for _ in range(concurrency - max(1, concurrency // 2)):
                side_gate.release()
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
    result.elapsed_s = time.perf_counter() - started
    return result


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
