"""Close the requests a crashed run left open, before a plan is executed.

:func:`settle`: a distribution the service holds is recorded as created; one it lacks is planned
again — with the same body, hence the same key. Looking the distribution up by
``external_reference`` comes first, always, so a request whose key the service has forgotten
(24 h) can never create a second distribution.
"""

from __future__ import annotations

from fundpipe.plan import Plan, PlannedDistribution, ServiceDistribution, ServiceState
from fundpipe.submit.ledger import Ledger


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
