"""What the service holds, read into a :class:`fundpipe.plan.ServiceState` (service → state).

:func:`load_state` reads entities, contacts and distributions — documented lists only — and
:func:`with_vehicles` adds the depository balances of the vehicles a run needs, through the
documented `GET /v1/vehicles/{veh_id}/financial_accounts`. The vehicle list is a guessed
operation: when the service serves it, it adds vehicles; when it answers 404/405/501 the
snapshot carries a warning and goes on (`ServiceState.warnings`), never a failure. A list that
cannot be continued (`IncompleteListError`) stops the snapshot, before anything is created.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from fundpipe.client import FundClient
from fundpipe.client.errors import MissingScopeError, NotFoundError, OperationUnavailableError
from fundpipe.client.models import Distribution
from fundpipe.errors import ConfigurationError
from fundpipe.plan import FileInput, ServiceDistribution, ServicePayment, ServiceState

__all__ = [
    "OPTIONAL_REFUSALS",
    "load_state",
    "only_organization",
    "unavailable_warning",
    "vehicles_of",
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


async def load_state(
    client: FundClient, org_id: str, *, vehicles: Iterable[str] = ()
) -> ServiceState:
    """Read the service's entities, contacts and distributions, and the balances of
    ``vehicles`` (see :func:`with_vehicles`)."""
    livemode: bool | None = None
    entities_by_ref: dict[str, str] = {}
    entities_by_name: dict[tuple[str, str], list[str]] = {}
    entity_ids: set[str] = set()
    with_instructions: set[str] = set()
    async for e in client.list_entities():
        livemode = _live(livemode, e.livemode)
        entity_ids.add(e.id)
        # newest first: keep the oldest entity carrying a reference; every reference counts
        for ref in e.external_references or (
            [e.external_reference] if e.external_reference else []
        ):
            entities_by_ref[ref] = e.id
        if e.name and e.type:
            entities_by_name.setdefault((e.name, e.type), []).append(e.id)
        if e.payment_instructions:
            with_instructions.add(e.id)
    contacts_by_email: dict[str, str] = {}
    contact_ids: set[str] = set()
    contact_entities: dict[str, frozenset[str]] = {}
    async for c in client.list_contacts():
        livemode = _live(livemode, c.livemode)
        contact_ids.add(c.id)
        if c.email:
            contacts_by_email[c.email.lower()] = c.id
        if "entities" in c.model_fields_set:  # absent from the documented record
            contact_entities[c.id] = frozenset(c.entities)
    distributions: dict[str, ServiceDistribution] = {}
    async for d in client.list_distributions():
        livemode = _live(livemode, d.livemode)
        if not d.external_reference:
            continue
        if d.status == "cancelled" and d.external_reference in distributions:
            continue  # a live distribution with the same reference is what counts
        distributions[d.external_reference] = await _distribution(client, d)
    listed: set[str] = set()
    warnings: list[str] = []
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
    state = ServiceState(
        org_id=org_id,
        vehicles=frozenset(listed),
        warnings=tuple(warnings),
        entities_by_ref=entities_by_ref,
        entity_ids=frozenset(entity_ids),
        entities_with_instructions=frozenset(with_instructions),
        contacts_by_email=contacts_by_email,
        contact_ids=frozenset(contact_ids),
        contact_entities=contact_entities,
        distributions_by_ref=distributions,
        entities_by_name={k: tuple(v) for k, v in entities_by_name.items()},
        livemode=livemode,
    )
    return await with_vehicles(client, state, vehicles)


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
