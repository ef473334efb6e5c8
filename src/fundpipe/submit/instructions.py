"""The payment instructions a plan compares a roster with (ledger + service → state).

An instruction sent without `external_reference` is matched on a later night by its entity
and its content fingerprint (:func:`fundpipe.plan.instruction_fingerprint`). What a night knows
of an entity's instructions comes first from the ledger (the bodies of the creates that
succeeded, masked to the account's last four digits: no request), and only for a roster
instruction matching none of those from the service: the entity's instruction list, one
request per such entity. A roster dropped again therefore costs no request. See
docs/architecture.md, "Never an investor twice".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fundpipe.client import FundClient
from fundpipe.client.errors import APIError
from fundpipe.client.models import PaymentInstructions
from fundpipe.plan import (
    FINGERPRINT_FIELDS,
    FileInput,
    ServiceState,
    instruction_entities_to_read,
    instruction_fingerprint,
)
from fundpipe.submit.ledger import Ledger

__all__ = ["with_instruction_contents", "with_known_instructions", "with_ledger_instructions"]


async def with_known_instructions(
    client: FundClient, state: ServiceState, ledger: Ledger | None, inputs: Sequence[FileInput]
) -> ServiceState:
    """`state` knowing the instructions the ledger created, then those the service has for
    the entities a roster instruction of ``inputs`` still matches nothing of."""
    return await with_instruction_contents(client, with_ledger_instructions(state, ledger), inputs)


def with_ledger_instructions(state: ServiceState, ledger: Ledger | None) -> ServiceState:
    """`state` knowing, besides what the entity records list, the entities the ledger created
    payment instructions for and the content fingerprints of those instructions (instructions
    sent without `external_reference` are matched by entity and fingerprint; see
    docs/architecture.md, "Never an investor twice")."""
    if ledger is None:
        return state
    given = ledger.instruction_fingerprints_given()
    merged = {e: frozenset(f) for e, f in state.instruction_fingerprints.items()}
    for entity, fingerprints in given.items():
        merged[entity] = merged.get(entity, frozenset()) | fingerprints
    return replace(
        state,
        entities_with_instructions=state.entities_with_instructions | set(given),
        instruction_fingerprints=merged,
    )


async def with_instruction_contents(
    client: FundClient, state: ServiceState, inputs: Sequence[FileInput]
) -> ServiceState:
    """`state` with the instructions of the entities a roster needs compared read from the
    service: one `GET /v1/entities/{ent_id}/payment_instructions` (all its pages) per entity
    that has instructions and a roster instruction matching none the ledger created
    (:func:`fundpipe.plan.instruction_entities_to_read`) — none when a roster is dropped
    again; where that list is not served, the entity by id and each of its instructions by id.
    Each record is fingerprinted from what it shows (last four digits, never more); records
    showing nothing (the strict interface's, only ids) or reads not served leave the entity
    with nothing to compare (`ServiceState.instructions_unreadable`; the latter with a warning).
    """
    wanted = instruction_entities_to_read(inputs, state)
    if not wanted:
        return state
    fingerprints = dict(state.instruction_fingerprints)
    warnings = list(state.warnings)
    unreadable = set(state.instructions_unreadable)
    for ent_id in sorted(wanted):
        try:
            records = await _instructions_of(client, ent_id)
        except APIError as exc:
            if exc.status not in UNSERVED:
                raise
            records = None
            warnings.append(
                f"the service did not give the payment instructions of {ent_id} "
                f"({exc.status} {exc.message}): roster instructions for it are held for a "
                "person unless the ledger created them"
            )
        found = {f for f in map(_fingerprint, records or ()) if f is not None}
        if not found:  # not listed, or records showing only their ids
            unreadable.add(ent_id)
        fingerprints[ent_id] = fingerprints.get(ent_id, frozenset()) | found
    return replace(
        state,
        instruction_fingerprints=fingerprints,
        instructions_read=state.instructions_read | wanted,
        instructions_unreadable=frozenset(unreadable),
        warnings=tuple(warnings),
    )


#: Statuses that say an operation is not served (the entity's instruction list is the list URL
#: the interface's create answer and entity read give, not a row of its summary table).
UNSERVED = frozenset({404, 405, 501})


async def _instructions_of(client: FundClient, ent_id: str) -> list[PaymentInstructions]:
    """The entity's instruction records: its list (`GET /v1/entities/{ent_id}/payment_instructions`,
    one request a page), or — when that list is not served — the documented reads, the entity
    by id and `GET /payment_instructions/{id}` for each instruction it lists."""
    try:
        return [p async for p in client.list_entity_payment_instructions(ent_id)]
    except APIError as exc:
        if exc.status not in UNSERVED:
            raise
    entity = await client.get_entity(ent_id)
    return [await client.get_payment_instructions(pmi) for pmi in entity.payment_instructions]


def _fingerprint(record: PaymentInstructions) -> str | None:
    """The fingerprint of what a record shows (its last four digits; never more is returned)."""
    shown: dict[str, Any] = {name: getattr(record, name) for name in FINGERPRINT_FIELDS}
    shown["account_number_last_four"] = record.account_number_last_four
    return instruction_fingerprint(shown)
