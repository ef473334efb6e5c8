"""What the service holds, read into a :class:`fundpipe.plan.ServiceState` (service → state).

:func:`load_state` reads vehicles, entities, contacts, distributions and depository balances;
the plan is built and pre-flighted against it.
"""

from __future__ import annotations

from fundpipe.client import FundClient
from fundpipe.plan import ServiceDistribution, ServicePayment, ServiceState

__all__ = ["load_state"]


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
