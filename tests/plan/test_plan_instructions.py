"""Roster payment instructions for entities that already have some: matched by entity and
content fingerprint, never by `external_reference`; one matching none is held for a person."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from fundpipe.plan import (
    FileInput,
    build_plan,
    instruction_entities_to_read,
    instruction_fingerprint,
)
from worlds.submit import DEMO_STATE, file_input, payment_rows

ROW = {
    "sheet": "Roster",
    "row": 2,
    "entity_external_reference": "NEW-E1",
    "type": "ach",
    "beneficiary_name": "Harbor Trust",
    "bank_name": "First Example Bank",
    "routing_number": "021000021",
    "account_number_secret": "000123456789",
    "external_reference": "NEW-P1",
}
#: the service's record of that instruction, as a read gives it back (no full number, and
#: another spelling of the names: the fingerprint folds case and whitespace)
RECORD = {
    "type": "ach",
    "beneficiary_name": "HARBOR  Trust",
    "bank_name": "First Example Bank",
    "routing_number": "021000021",
    "account_number_last_four": "6789",
}
STATE = replace(
    DEMO_STATE,
    entities_by_ref={**DEMO_STATE.entities_by_ref, "NEW-E1": "ent_n1"},
    entity_ids=DEMO_STATE.entity_ids | {"ent_n1"},
    entities_with_instructions=frozenset({"ent_n1"}),
)


def _files(**changes: object) -> list[FileInput]:
    frame = pd.DataFrame([{**ROW, **changes}])
    return [file_input("h1", payment_rows("R1", [5]), payment_instructions=frame)]


def test_the_fingerprint_takes_only_the_last_four_digits_and_no_reference() -> None:
    roster = instruction_fingerprint({**ROW, "account_number": ROW["account_number_secret"]})
    assert roster == instruction_fingerprint(RECORD)
    assert roster == instruction_fingerprint({**RECORD, "external_reference": "OTHER"})
    # the ledger's masked body gives the same
    masked = {k: v for k, v in RECORD.items() if k != "account_number_last_four"}
    assert instruction_fingerprint({**masked, "account_number": "****6789"}) == roster
    assert instruction_fingerprint({**RECORD, "account_number_last_four": "4321"}) != roster
    assert instruction_fingerprint({**RECORD, "routing_number": "011000028"}) != roster
    assert instruction_fingerprint({"id": "pmi_1", "object": "payment_instructions"}) is None
    assert "6789" not in str(roster)


def test_an_instruction_the_entity_has_is_neither_sent_nor_read_again() -> None:
    state = replace(
        STATE, instruction_fingerprints={"ent_n1": frozenset({instruction_fingerprint(RECORD)})}
    )
    assert instruction_entities_to_read(_files(), state) == set()
    plan = build_plan(_files(), state)
    assert plan.phase("payment_instructions") == []
    assert plan.held_instructions == ()


def test_an_instruction_matching_none_is_read_for_then_held_with_its_row() -> None:
    state = replace(
        STATE, instruction_fingerprints={"ent_n1": frozenset({instruction_fingerprint(RECORD)})}
    )
    files = _files(account_number_secret="000555554321")
    assert instruction_entities_to_read(files, state) == {"ent_n1"}
    plan = build_plan(files, replace(state, instructions_read=frozenset({"ent_n1"})))
    assert plan.phase("payment_instructions") == []
    (held,) = plan.held_instructions
    assert (held.sheet, held.row, held.entity_id, held.account_last_four) == (
        "Roster",
        2,
        "ent_n1",
        "4321",
    )
    assert "000555554321" not in held.reason
    assert plan.held_reasons("h1") == [held.reason]
    # the distribution of the same file is still sent
    assert len(plan.phase("distributions")) == 1


def test_an_entity_without_instructions_gets_the_roster_ones() -> None:
    plan = build_plan(_files(), replace(STATE, entities_with_instructions=frozenset()))
    (request,) = plan.phase("payment_instructions")
    assert request.body[0]["entity"] == "ent_n1"
    assert plan.held_instructions == ()
