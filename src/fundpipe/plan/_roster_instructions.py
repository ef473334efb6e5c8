"""Roster rows as payment instructions: the public fields each instruction type allows, the
instruction a roster row asks for, and which entities' instructions must be read before planning.

Part of :mod:`fundpipe.plan` (:func:`instruction_entities_to_read` is re-exported there); the
requests themselves are built in :mod:`~fundpipe.plan._build`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fundpipe.enums import PUBLIC_INSTRUCTION_FIELDS_BY_TYPE
from fundpipe.plan._instructions import instruction_fingerprint
from fundpipe.plan._model import FileInput, ServiceState
from fundpipe.plan._values import _pick, _records

# instruction field → the frame columns it may come from (roster spelling first); the names
# are the public description's (its ach / domestic_wire / international_wire inputs)
_INSTRUCTION_FIELDS: dict[str, tuple[str, ...]] = {
    "type": ("payment_type", "type"),
    "beneficiary_name": ("beneficiary_name",),
    "account_number": ("account_number_secret", "account_number"),
    "routing_number": ("routing_number",),
    "bank_name": ("bank_name",),
    "branch_code": ("branch_code",),
    # wires (DESIGN: intermediary, SWIFT and address fields)
    "swift_code": ("swift_code",),
    "intermediary_party_name": ("intermediary_party_name",),
    "intermediary_party_swift_code": ("intermediary_party_swift_code",),
    "originator_to_beneficiary_instructions_line1": (
        "originator_to_beneficiary_instructions_line1",
    ),
    "originator_to_beneficiary_instructions_line2": (
        "originator_to_beneficiary_instructions_line2",
    ),
    "originator_to_beneficiary_instructions_line3": (
        "originator_to_beneficiary_instructions_line3",
    ),
}
# the wire's `address` object (public `WireAddress`) → the roster columns of its parts
_ADDRESS_FIELDS = {
    "street1": "beneficiary_street1",
    "street2": "beneficiary_street2",
    "city": "beneficiary_city",
    "state": "beneficiary_state",
    "postal_code": "beneficiary_postal_code",
    "country_code": "beneficiary_country_code",
}
#: The fields each public instruction input allows (no other: `additionalProperties: false`).
PUBLIC_FIELDS_BY_TYPE = PUBLIC_INSTRUCTION_FIELDS_BY_TYPE


def _instruction(
    p: dict[str, Any], fields: dict[str, tuple[str, ...]], address_fields: dict[str, str]
) -> dict[str, Any]:
    """The instruction to send for one roster row: public field names only, the address as an
    object, and only the fields its type's public input allows. ``fields`` and
    ``address_fields`` name the columns the frame has (a column it lacks gives nothing)."""
    instruction: dict[str, Any] = {k: _pick(p, *names) for k, names in fields.items()}
    address = {k: _pick(p, column) for k, column in address_fields.items()}
    instruction["address"] = {k: v for k, v in address.items() if v is not None} or None
    allowed = PUBLIC_FIELDS_BY_TYPE.get(str(instruction.get("type")))
    return {
        k: v for k, v in instruction.items() if v is not None and (allowed is None or k in allowed)
    }


def _instruction_rows(f: FileInput) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(roster row, entity as the roster names it, the instruction to send) for every row of
    ``f``'s payment instructions that names an entity and carries an instruction."""
    rows = _records(f.payment_instructions)
    if not rows:
        return []
    present = set(rows[0])  # every record has the frame's columns
    fields = {
        k: tuple(n for n in names if n in present) for k, names in _INSTRUCTION_FIELDS.items()
    }
    address_fields = {k: c for k, c in _ADDRESS_FIELDS.items() if c in present}
    out = []
    for p in rows:
        entity = _pick(p, "entity_external_reference", "entity") or ""
        if not entity:
            continue
        instruction = _instruction(p, fields, address_fields)
        if instruction:  # a row carrying only entity or contact columns has none
            out.append((p, entity, instruction))
    return out


def roster_instructions(
    files: Sequence[FileInput], state: ServiceState, held: set[str]
) -> Iterable[tuple[FileInput, dict[str, Any], str, str | None, dict[str, Any]]]:
    """(file, roster row, entity as the roster names it, its id when it exists, the instruction
    to send) for every roster row carrying an instruction. The rows' instructions are worked
    out once per file (the snapshot's reads and the plan both ask); callers do not change them."""
    for f in files:
        for p, entity, instruction in f.once("instruction_rows", _instruction_rows):
            if entity in held:
                continue
            entity_id = entity if entity.startswith("ent_") else state.entities_by_ref.get(entity)
            yield f, p, entity, entity_id, instruction


def instruction_entities_to_read(files: Sequence[FileInput], state: ServiceState) -> set[str]:
    """Entities whose instructions the service must be asked for before planning: they have
    instructions, and a roster instruction for them matches none the plan knows yet (the
    ledger's creates, or an earlier read). A roster dropped again needs none."""
    out: set[str] = set()
    for _f, _p, _entity, entity_id, instruction in roster_instructions(files, state, set()):
        if (
            entity_id
            and entity_id in state.entities_with_instructions
            and entity_id not in state.instructions_read
            and instruction_fingerprint(instruction)
            not in state.instruction_fingerprints.get(entity_id, frozenset())
        ):
            out.add(entity_id)
    return out
