"""What the service holds, read into a :class:`fundpipe.plan.ServiceState` (service → state).

:func:`load_state` reads entities, contacts and distributions — documented lists only — and
:func:`with_vehicles` adds the depository balances of the vehicles a run needs, through the
documented `GET /v1/vehicles/{veh_id}/financial_accounts`. The vehicle list is a guessed
operation: when the service serves it, it adds vehicles; when it answers 404/405/501 the
snapshot carries a warning and goes on (`ServiceState.warnings`), never a failure. A list that
cannot be continued (`IncompleteListError`) stops the snapshot, before anything is created.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from fundpipe.client import FundClient, Paginator, Walk
from fundpipe.client.errors import MissingScopeError, NotFoundError, OperationUnavailableError
from fundpipe.client.models import Contact, Distribution, Entity
from fundpipe.errors import ConfigurationError
from fundpipe.plan import FileInput, ServiceDistribution, ServicePayment, ServiceState
from fundpipe.submit.known import read_distributions
from fundpipe.warehouse import Known

__all__ = [
    "OPTIONAL_REFUSALS",
    "Snapshot",
    "load_snapshot",
    "load_state",
    "only_organization",
    "unavailable_warning",
    "vehicles_of",
    "with_distributions",
    "with_vehicles",
]


#: What an optional (guessed) operation may answer that makes it a warning, not a failure:
#: unserved (404/405/501) or not granted to this client (403 naming the scope).
OPTIONAL_REFUSALS = (OperationUnavailableError, MissingScopeError)


def unavailable_warning(
    exc: OperationUnavailableError | MissingScopeError, operation: str, instead: str
) -> str:
    """The run summary's sentence for a guessed operation the service does not serve."""
    if isinstance(exc, OperationUnavailableError):
        return (
            f"the service does not serve the optional operation {operation!r} "
            f"({exc.path} answered {exc.status}): {instead}"
        )
    return f"the optional operation {operation!r} is not granted ({exc.message}): {instead}"


def _live(seen: bool | None, livemode: bool | None) -> bool | None:
    if livemode is None:
        return seen
    return bool(seen) or livemode


class _State:
    """The snapshot being gathered, fed newest first (the full walk, or the newest pages of an
    incremental one followed by the warehouse's rows)."""

    def __init__(self) -> None:
        self.livemode: bool | None = None
        self.entities_by_ref: dict[str, str] = {}
        self.entities_by_name: dict[tuple[str, str], list[str]] = {}
        self.entity_ids: set[str] = set()
        self.with_instructions: set[str] = set()
        self.contacts_by_email: dict[str, str] = {}
        self.contact_ids: set[str] = set()
        self.contact_entities: dict[str, frozenset[str]] = {}
        #: reference → the distribution that counts: its content, or its warehouse id
        self.distributions: dict[str, ServiceDistribution | str] = {}

    def entity(
        self,
        ent_id: str,
        refs: Iterable[str],
        name: str | None,
        kind: str | None,
        instructions: bool,
        livemode: bool | None,
    ) -> None:
        self.livemode = _live(self.livemode, livemode)
        self.entity_ids.add(ent_id)
        # newest first: keep the oldest entity carrying a reference; every reference counts
        for ref in refs:
            self.entities_by_ref[ref] = ent_id
        if name and kind:
            self.entities_by_name.setdefault((name, kind), []).append(ent_id)
        if instructions:
            self.with_instructions.add(ent_id)

    def contact(
        self,
        cnt_id: str,
        email: str | None,
        entities: frozenset[str] | None,
        livemode: bool | None,
    ) -> None:
        self.livemode = _live(self.livemode, livemode)
        self.contact_ids.add(cnt_id)
        if email:
            self.contacts_by_email[email.lower()] = cnt_id
        if entities is not None:  # absent from the documented record
            self.contact_entities[cnt_id] = entities

    def distribution(
        self, ref: str, status: str | None, found: ServiceDistribution | str, livemode: bool | None
    ) -> None:
        self.livemode = _live(self.livemode, livemode)
        if status == "cancelled" and ref in self.distributions:
            return  # a live distribution with the same reference is what counts
        self.distributions[ref] = found

    def state(self, org_id: str, warnings: list[str], vehicles: set[str]) -> ServiceState:
        return ServiceState(
            org_id=org_id,
            vehicles=frozenset(vehicles),
            warnings=tuple(warnings),
            entities_by_ref=self.entities_by_ref,
            entity_ids=frozenset(self.entity_ids),
            entities_with_instructions=frozenset(self.with_instructions),
            contacts_by_email=self.contacts_by_email,
            contact_ids=frozenset(self.contact_ids),
            contact_entities=self.contact_entities,
            distributions_by_ref={
                r: d for r, d in self.distributions.items() if isinstance(d, ServiceDistribution)
            },
            entities_by_name={k: tuple(v) for k, v in self.entities_by_name.items()},
            livemode=self.livemode,
        )


def _feed_entity(acc: _State, e: Entity) -> None:
    refs = e.external_references or ([e.external_reference] if e.external_reference else [])
    acc.entity(e.id, refs, e.name, e.type, bool(e.payment_instructions), e.livemode)


def _feed_contact(acc: _State, c: Contact) -> None:
    entities = frozenset(c.entities) if "entities" in c.model_fields_set else None
    acc.contact(c.id, c.email, entities, c.livemode)


async def _feed_distribution(acc: _State, client: FundClient, d: Distribution) -> None:
    if d.external_reference:
        acc.distribution(d.external_reference, d.status, await _distribution(client, d), d.livemode)
    else:
        acc.livemode = _live(acc.livemode, d.livemode)


@dataclass
class Snapshot:
    """What :func:`load_state` read: the state, and the distributions only the warehouse
    holds (their content is read by :func:`with_distributions` when a plan needs them)."""

    state: ServiceState
    known: Known | None = None
    #: reference → warehouse id of a distribution counted but not yet read
    pending: dict[str, str] = field(default_factory=dict)


R = TypeVar("R", Entity, Contact, Distribution)


async def _newest(listing: Paginator[R], known: frozenset[str]) -> tuple[list[R], bool] | None:
    """The records listed before the first one in ``known``, newest first, and whether one
    was met (else the list ended: it was read whole); None when the list is not newest first
    (then only the full walk can be trusted). The order is judged as sync judges it
    (:class:`fundpipe.client.Walk`): an unknown record after a known one, or a
    ``created_at`` later than the one before; records without ``created_at`` (the documented
    entity and contact records) are judged by the first rule alone."""
    walk = Walk("snapshot", known)
    out: list[R] = []
    async for page in listing.pages():
        stop = walk.page({"id": item.id, "created_at": item.created_at} for item in page.data)
        if walk.disorder is not None:
            return None
        out.extend(item for item in page.data if item.id not in known)
        if stop:
            return out, True
    return out, False


async def _since(
    listing: Callable[[], Paginator[R]], known: frozenset[str], what: str, warnings: list[str]
) -> tuple[list[R], bool]:
    """What :func:`_newest` finds, or the whole list (with a warning) when out of order; the
    flag says whether the warehouse's rows complete the records."""
    found = await _newest(listing(), known)
    if found is None:
        warnings.append(_order_warning(what))
        return [r async for r in listing()], False
    return found


def _order_warning(what: str) -> str:
    return (
        f"the service's {what} list is not in newest-first order: listed in full instead of "
        "only what is newer than the last sync"
    )


async def load_state(
    client: FundClient,
    org_id: str,
    *,
    vehicles: Iterable[str] = (),
    known: Known | None = None,
) -> ServiceState:
    """Read the service's entities, contacts and distributions, and the balances of
    ``vehicles`` (see :func:`with_vehicles`). With ``known`` (the warehouse's last sync) only
    what is newer is listed — see :func:`load_snapshot`."""
    snap = await load_snapshot(client, org_id, known=known)
    state = snap.state
    if snap.pending:
        state = await with_distributions(client, snap, snap.pending)
    return await with_vehicles(client, state, vehicles)


async def load_snapshot(client: FundClient, org_id: str, *, known: Known | None) -> Snapshot:
    """Entities, contacts and distributions, without balances.

    Without ``known`` every list is walked in full. With it, each newest-first list is walked
    only until an object the warehouse holds (everything older was read by that sync), and
    the warehouse's rows complete the state; a list found out of ``created_at`` order is
    walked in full, with a warning. Distributions only the warehouse holds are left
    ``pending`` (reference → id) for :func:`with_distributions`.
    """
    acc = _State()
    warnings: list[str] = []
    pending: dict[str, str] = {}
    if known is None:
        async for e in client.list_entities():
            _feed_entity(acc, e)
        async for c in client.list_contacts():
            _feed_contact(acc, c)
        async for d in client.list_distributions():
            await _feed_distribution(acc, client, d)
    else:
        # a list read to its end without meeting a known object is whole by itself (and a
        # warehouse none of whose objects the service lists describes another service)
        entities, more = await _since(client.list_entities, known.entity_ids, "entity", warnings)
        for e in entities:
            _feed_entity(acc, e)
        for k in known.entities if more else ():
            refs = [k.external_reference] if k.external_reference else []
            acc.entity(k.id, refs, k.name, k.type, k.has_instructions, k.livemode)
        contacts, more = await _since(client.list_contacts, known.contact_ids, "contact", warnings)
        for c in contacts:
            _feed_contact(acc, c)
        for cnt_id, email, linked, live in known.contacts if more else ():
            acc.contact(cnt_id, email, linked, live)
        distributions, more = await _since(
            client.list_distributions, known.distribution_ids, "distribution", warnings
        )
        for d in distributions:
            await _feed_distribution(acc, client, d)
        for dst_id, ref, status, live in known.distributions if more else ():
            acc.distribution(ref, status, dst_id, live)
        pending = {r: d for r, d in acc.distributions.items() if isinstance(d, str)}
    listed: set[str] = set()
    try:
        listed = {v.id async for v in client.list_vehicles()}
    except OPTIONAL_REFUSALS as exc:
        warnings.append(
            unavailable_warning(
                exc,
                "vehicles",
                "vehicles are taken from the sheets, the ledger and FUNDPIPE_VEHICLES",
            )
        )
    return Snapshot(acc.state(org_id, warnings, listed), known, pending)


async def with_distributions(
    client: FundClient, snap: Snapshot, refs: Iterable[str]
) -> ServiceState:
    """``snap``'s state with the warehouse-held distributions among ``refs`` read from the
    warehouse (those a plan matches or an open request names); when the warehouse cannot be
    read now, the distribution list is walked in full instead."""
    state = snap.state
    wanted = {r: snap.pending[r] for r in set(refs) if r in snap.pending}
    if not wanted or snap.known is None:
        return state
    found = read_distributions(snap.known.path, wanted.values())
    if found is None:
        acc = _State()
        async for d in client.list_distributions():
            await _feed_distribution(acc, client, d)
        full = acc.state(state.org_id, [], set())
        return replace(state, distributions_by_ref=full.distributions_by_ref)
    merged = dict(state.distributions_by_ref)
    for ref, dst_id in wanted.items():
        if dst_id in found:
            merged[ref] = found[dst_id]
    return replace(state, distributions_by_ref=merged)


async def _distribution(client: FundClient, d: Distribution) -> ServiceDistribution:
    payments = list(d.payments.data) if d.payments else []
    if d.payments is not None and d.payments.more_to_fetch:
        payments = [p async for p in client.list_distribution_payments(d.id)]
    return ServiceDistribution(
        id=d.id,
        external_reference=d.external_reference or "",
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


async def with_vehicles(
    client: FundClient, state: ServiceState, vehicles: Iterable[str]
) -> ServiceState:
    """``state`` with the vehicles the service knows among ``vehicles`` and their depository
    ``available``, read through the documented vehicle account list (a vehicle whose list
    answers 404 is unknown to the service)."""
    known = set(state.vehicles)
    available = dict(state.available_cents)
    livemode = state.livemode
    for vehicle in sorted(set(vehicles) - set(available)):
        try:
            accounts = [fa async for fa in client.list_vehicle_financial_accounts(vehicle)]
        except NotFoundError:
            known.discard(vehicle)
            continue
        known.add(vehicle)
        available.setdefault(vehicle, 0)
        for fa in accounts:
            livemode = _live(livemode, fa.livemode)
            if fa.type == "depository":
                available[fa.vehicle] = available.get(fa.vehicle, 0) + fa.balance.available
    return replace(state, vehicles=frozenset(known), available_cents=available, livemode=livemode)


def vehicles_of(inputs: Sequence[FileInput]) -> set[str]:
    """The vehicles the valid sheets pay from."""
    out: set[str] = set()
    for f in inputs:
        if f.distributions is not None and "vehicle" in f.distributions:
            out |= {str(v) for v in f.distributions["vehicle"].dropna().unique() if str(v)}
    return out


async def only_organization(client: FundClient, warnings: list[str]) -> str:
    """The one organization the client reaches; "" (the token's own) when the organization
    list is not served — a warning, since the interface makes `X-Organization-Id` optional
    for a client bound to one organization."""
    try:
        orgs = [o.id async for o in client.list_organizations()]
    except OPTIONAL_REFUSALS as exc:
        warnings.append(
            unavailable_warning(
                exc,
                "organizations",
                "acting for the organization the client is bound to; set FUNDPIPE_ORG_ID "
                "to name it",
            )
        )
        return ""
    if len(orgs) != 1:
        raise ConfigurationError(
            "FUNDPIPE_ORG_ID is required: the client reaches several organizations"
        )
    return str(orgs[0])
