"""Execute a plan through the client, recording every request to the ledger.

- :func:`load_state` reads what the service has (vehicles, entities, contacts, distributions,
  depository balances) into a :class:`fundpipe.plan.ServiceState`.
- :func:`preflight` (pure) checks a plan against that state: vehicles exist, ``ent_``/``cnt_``
  ids exist, placeholders will be created, and the funding check (a vehicle's new distributions
  vs its depository ``available``): a warning by default, a refusal with ``require_funds``.
- :func:`settle` closes requests a crashed run left open: a distribution the service holds is
  recorded as created; one it lacks is planned again — with the same body, hence the same key.
  Looking the distribution up by ``external_reference`` comes first, always, so a request whose
  key the service has forgotten (24 h) can never create a second distribution.
- :func:`execute` runs the phases in order with bounded concurrency: intent → send → outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from fundpipe.client import FundClient
from fundpipe.client.errors import APIError, FundServiceError
from fundpipe.keys import idempotency_key
from fundpipe.plan import (
    PHASES,
    IdMap,
    Plan,
    PlannedDistribution,
    PlannedRequest,
    Ref,
    ResolvedRequest,
    ServiceDistribution,
    ServicePayment,
    ServiceState,
    UnresolvedReferenceError,
)
from fundpipe.progress import NullProgress, ProgressSink
from fundpipe.sheets.money import format_cents
from fundpipe.submit.ledger import Ledger

log = logging.getLogger(__name__)

#: Client errors whose outcome is certain: the service refused and stored nothing.
_DEFINITIVE_STATUSES = frozenset({400, 401, 403, 404, 405, 413, 415, 422})

Level = Literal["warning", "error"]


# --------------------------------------------------------------------------- service state


async def load_state(client: FundClient, org_id: str) -> ServiceState:
    """Read the service's vehicles, entities, contacts, distributions and depository balances."""
    vehicles = frozenset([v.id async for v in client.list_vehicles()])
    entities_by_ref: dict[str, str] = {}
    entity_ids: set[str] = set()
    with_instructions: set[str] = set()
    async for e in client.list_entities():
        entity_ids.add(e.id)
        if e.external_reference:
            # newest first: keep the oldest entity carrying a reference
            entities_by_ref[e.external_reference] = e.id
        if e.payment_instructions:
            with_instructions.add(e.id)
    contacts_by_email: dict[str, str] = {}
    contact_ids: set[str] = set()
    contact_entities: dict[str, frozenset[str]] = {}
    async for c in client.list_contacts():
        contact_ids.add(c.id)
        if c.email:
            contacts_by_email[c.email.lower()] = c.id
        contact_entities[c.id] = frozenset(c.entities)
    distributions: dict[str, ServiceDistribution] = {}
    async for d in client.list_distributions():
        if not d.external_reference:
            continue
        if d.status == "cancelled" and d.external_reference in distributions:
            continue  # a live distribution with the same reference is what counts
        payments = list(d.payments.data) if d.payments else []
        if d.payments is not None and d.payments.next_page_url:
            payments = [p async for p in client.list_distribution_payments(d.id)]
        distributions[d.external_reference] = ServiceDistribution(
            id=d.id,
            external_reference=d.external_reference,
            name=d.name or "",
            vehicle=d.vehicle or "",
            distribution_date=d.distribution_date.isoformat() if d.distribution_date else "",
            distribution_timezone=d.distribution_timezone or "UTC",
            payments=tuple(
                ServicePayment(
                    entity=p.entity or "",
                    amount_cents=p.amount,
                    currency=p.currency,
                    distribution_date_override=(
                        p.distribution_date_override.isoformat()
                        if p.distribution_date_override
                        else None
                    ),
                    notify=tuple(
                        sorted(n.contact for n in p.notifications.data if n.contact)
                        if p.notifications is not None
                        else ()
                    ),
                )
                for p in payments
            ),
            payment_ids=tuple(p.id for p in payments),
            status=d.status,
        )
    available: dict[str, int] = {}
    async for fa in client.list_financial_accounts():
        if fa.type == "depository":
            available[fa.vehicle] = available.get(fa.vehicle, 0) + fa.balance.available
    return ServiceState(
        org_id=org_id,
        vehicles=vehicles,
        entities_by_ref=entities_by_ref,
        entity_ids=frozenset(entity_ids),
        entities_with_instructions=frozenset(with_instructions),
        contacts_by_email=contacts_by_email,
        contact_ids=frozenset(contact_ids),
        contact_entities=contact_entities,
        distributions_by_ref=distributions,
        available_cents=available,
    )


# --------------------------------------------------------------------------- pre-flight


@dataclass(frozen=True)
class PreflightIssue:
    """One finding of the pre-flight check."""

    level: Level
    file_hash: str | None
    source_file: str | None
    check: str
    message: str


@dataclass(frozen=True)
class Preflight:
    """Pre-flight findings and the files they refuse."""

    issues: tuple[PreflightIssue, ...]
    refused: frozenset[str]

    @property
    def warnings(self) -> list[PreflightIssue]:
        """Findings that do not stop anything."""
        return [i for i in self.issues if i.level == "warning"]

    @property
    def errors(self) -> list[PreflightIssue]:
        """Findings that refuse their file."""
        return [i for i in self.issues if i.level == "error"]


def _created_placeholders(plan: Plan) -> set[Ref]:
    made: set[Ref] = set()
    for r in plan.requests:
        if r.phase == "entities":
            made |= {Ref("entity", e["external_reference"]) for e in r.body}
        elif r.phase == "contacts":
            made |= {Ref("contact", c["email"]) for c in r.body}
    return made


def preflight(plan: Plan, state: ServiceState, *, require_funds: bool = False) -> Preflight:
    """Check ``plan`` against ``state``; pure. Refused files must be excluded from the plan."""
    issues: list[PreflightIssue] = []
    refused: set[str] = set()
    blocked = {f.file_hash for f in plan.files if f.conflict or f.excluded}
    made = _created_placeholders(plan)
    todo = [d for d in plan.distributions if d.action == "create" and d.file_hash not in blocked]

    def refuse(d: PlannedDistribution, check: str, message: str) -> None:
        refused.add(d.file_hash)
        issues.append(PreflightIssue("error", d.file_hash, d.source_file, check, message))

    for d in todo:
        if d.vehicle not in state.vehicles:
            refuse(d, "vehicle_exists", f"{d.external_reference}: vehicle {d.vehicle} not found")
        for p in d.payments:
            where = f"{d.external_reference} row {p.row}"
            if isinstance(p.entity, Ref):
                if p.entity not in made:
                    refuse(d, "entity_exists", f"{where}: entity {p.entity.key!r} unknown")
            elif p.entity not in state.entity_ids:
                refuse(d, "entity_exists", f"{where}: entity {p.entity} not found")
            for c in p.notify:
                if isinstance(c, Ref):
                    if c not in made:
                        refuse(d, "contact_exists", f"{where}: contact {c.key!r} unknown")
                elif c not in state.contact_ids:
                    refuse(d, "contact_exists", f"{where}: contact {c} not found")

    # Funding: files in plan order; with require_funds a file that would overdraw is refused
    # whole and the following files are checked without it.
    committed: dict[str, int] = defaultdict(int)
    for f in plan.files:
        if f.file_hash in blocked or f.file_hash in refused:
            continue
        mine: dict[str, int] = defaultdict(int)
        for d in todo:
            if d.file_hash == f.file_hash:
                mine[d.vehicle] += d.total_cents
        short = {
            v: (committed[v] + cents, state.available_cents.get(v, 0))
            for v, cents in mine.items()
            if committed[v] + cents > state.available_cents.get(v, 0)
        }
        for vehicle, (needed, available) in sorted(short.items()):
            issues.append(
                PreflightIssue(
                    "error" if require_funds else "warning",
                    f.file_hash,
                    f.source_file,
                    "funds_available",
                    f"{vehicle}: distributions total {format_cents(needed, unit='USD')} but the "
                    f"depository has {format_cents(available, unit='USD')} available",
                )
            )
        if short and require_funds:
            refused.add(f.file_hash)
            continue
        for v, cents in mine.items():
            committed[v] += cents
    return Preflight(tuple(issues), frozenset(refused))


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
        return await client.associate_contacts(
            ent_id, [c["id"] for c in body], idempotency_key=request.key
        )
    if request.phase == "payment_instructions":
        return await client.create_payment_instructions(body, idempotency_key=request.key)
    return await client.create_distributions(body, idempotency_key=request.key)


def _ids_of(records: Iterable[Any]) -> list[str]:
    out = []
    for r in records:
        ident = getattr(r, "id", None) or getattr(r, "entity", None)
        if ident:
            out.append(str(ident))
    return out


class _LedgerWriter:
    """Ledger writes off the event loop, in one thread, in order.

    Intents are written (and committed) before their request is sent. Outcomes are queued and
    committed together every ``flush_s`` seconds and at the end of each phase: an outcome lost
    to a crash leaves its request open, which the next run settles by lookup.
    """

    def __init__(self, ledger: Ledger, flush_s: float = 0.25) -> None:
        self.ledger = ledger
        self.flush_s = flush_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fundpipe-ledger")
        self._pending: list[Callable[[], None]] = []
        self._intents: list[tuple[ResolvedRequest, asyncio.Future[None]]] = []
        self._draining: asyncio.Task[None] | None = None

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
        writes, self._pending = self._pending, []
        if writes:
            await asyncio.get_running_loop().run_in_executor(self._pool, self._apply, writes)

    async def run_flusher(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            await self.flush()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


async def execute(
    client: FundClient,
    ledger: Ledger,
    plan: Plan,
    state: ServiceState,
    *,
    concurrency: int = 8,
    key_fn: Callable[[str, str, str, Any], str] = idempotency_key,
    progress: ProgressSink | None = None,
) -> SubmitResult:
    """Run the plan's phases in order, each with at most ``concurrency`` requests in flight.

    ``progress`` hears one step per planned request, whatever its outcome.
    """
    result = SubmitResult()
    sink = progress or NullProgress()
    sink.start("submit", "submit requests", total=len(plan.requests))
    ids = IdMap(entities=dict(state.entities_by_ref), contacts=dict(state.contacts_by_email))
    by_ref = {(d.file_hash, d.external_reference): d for d in plan.distributions}
    gate = asyncio.Semaphore(concurrency)
    broken: dict[str, str] = {}  # file hash → why its later requests cannot run
    writer = _LedgerWriter(ledger)

    def fail(target: dict[str, str], request: PlannedRequest, why: str) -> None:
        for h in request.file_hashes:
            broken.setdefault(h, f"{request.label}: {why}")
            target.setdefault(h, f"{request.label}: {why}")

    async def run(request: PlannedRequest) -> None:
        blocked = [h for h in request.file_hashes if h in broken]
        if blocked and len(blocked) == len(request.file_hashes):
            return
        try:
            resolved = request.resolve(ids, plan.org_id, key_fn)
        except UnresolvedReferenceError as exc:
            fail(result.failed, request, str(exc))
            writer.later(lambda: _fail_distributions(ledger, request, by_ref))
            return
        async with gate:
            await writer.intent(resolved)
            result.requests_sent += 1
            result.keys_sent.add(resolved.key)
            try:
                records = await _send(client, resolved)
            except FundServiceError as exc:
                status = exc.status if isinstance(exc, APIError) else None
                definitive = status in _DEFINITIVE_STATUSES
                request_id = exc.request_id if isinstance(exc, APIError) else None
                error = str(exc)
                fail(result.failed if definitive else result.unknown, request, str(exc))

                def record_failure() -> None:
                    ledger.record_outcome(
                        resolved.key,
                        "failed" if definitive else "unknown",
                        status=status,
                        request_id=request_id,
                        error=error,
                    )
                    if definitive:
                        _fail_distributions(ledger, request, by_ref)
                    else:
                        for h in request.file_hashes:
                            ledger.mark_distributions(
                                h, request.distribution_refs, "sent", request_key=resolved.key
                            )

                writer.later(record_failure)
                return
        _learn(ids, request, records)
        extra: dict[str, list[Any]] = {}
        if request.phase == "distributions":
            extra = await _all_payments(client, records)

        def record_success() -> None:
            ledger.record_outcome(
                resolved.key, "succeeded", status=201, service_ids=_ids_of(records)
            )
            if request.phase == "distributions":
                _record_created(ledger, request, resolved, records, extra, result)

        writer.later(record_success)

    started = time.perf_counter()
    flusher = asyncio.create_task(writer.run_flusher())
    try:
        for phase in PHASES:
            await asyncio.gather(*(_counted(run(r), sink) for r in plan.phase(phase)))
            await writer.flush()
    finally:
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


async def _all_payments(client: FundClient, records: Sequence[Any]) -> dict[str, list[Any]]:
    """Payments beyond the nested first page (distributions of more than 100 payments)."""
    out: dict[str, list[Any]] = {}
    for record in records:
        if record.payments is not None and record.payments.next_page_url:
            out[record.id] = [p async for p in client.list_distribution_payments(record.id)]
    return out


def _record_created(
    ledger: Ledger,
    request: PlannedRequest,
    resolved: ResolvedRequest,
    records: Sequence[Any],
    extra: dict[str, list[Any]],
    result: SubmitResult,
) -> None:
    by_ref = {r.external_reference: r for r in records}
    dst_ids: dict[str, str] = {}
    payment_ids: dict[str, list[str]] = {}
    entities: dict[str, list[str]] = {}
    for element in resolved.body:
        ref = element["external_reference"]
        record = by_ref.get(ref)
        if record is None:
            continue
        dst_ids[ref] = record.id
        payments = extra.get(record.id) or (list(record.payments.data) if record.payments else [])
        payment_ids[ref] = [p.id for p in payments]
        entities[ref] = [p["entity"] for p in element["payments"]]
        result.created[ref] = record.id
    for h in request.file_hashes:
        ledger.mark_distributions(
            h,
            list(dst_ids),
            "created",
            request_key=resolved.key,
            distribution_ids=dst_ids,
            payment_ids=payment_ids,
            entities=entities,
        )
