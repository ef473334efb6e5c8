"""A roster investor that is probably an existing one (same exact name and type, no shared
reference) is held: not created, its distributions not sent, the rest of the file planned."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from fundpipe.plan import build_plan
from fundpipe.plan.preflight import preflight
from worlds.submit import DEMO_STATE, file_input, payment_rows

ROSTER = pd.DataFrame(
    [
        {"name": "Harbor Trust", "type": "trust", "external_reference": "NEW-E1"},
        {"name": "Brand New LLC", "type": "llc", "external_reference": "NEW-E2"},
    ]
)
INSTRUCTIONS = pd.DataFrame(
    [{"entity_external_reference": "NEW-E1", "type": "ach", "beneficiary_name": "Harbor Trust"}]
)
# the service holds "Harbor Trust" (trust) under another reference
STATE = replace(DEMO_STATE, entities_by_name={("Harbor Trust", "trust"): ("ent_harbor",)})


def _plan(state=STATE):  # type: ignore[no-untyped-def]
    rows = payment_rows("D-1", [500], entities=["NEW-E1"]) + payment_rows(
        "D-2", [700], entities=["NEW-E2"], first_row=3
    )
    inputs = file_input("h1", rows, entities=ROSTER, payment_instructions=INSTRUCTIONS)
    return build_plan([inputs], state)


def test_a_probable_duplicate_investor_is_held_and_not_created() -> None:
    plan = _plan()
    (held,) = plan.held
    assert (held.external_reference, held.existing_id, held.distributions) == (
        "NEW-E1",
        "ent_harbor",
        (("h1", "D-1"),),
    )
    assert "probably the same investor" in held.reason
    created = [e["external_reference"] for r in plan.phase("entities") for e in r.body]
    assert created == ["NEW-E2"]  # only the investor nobody has
    assert plan.phase("payment_instructions") == []  # nor instructions for the held one


def test_the_rest_of_the_file_is_not_blocked() -> None:
    plan = _plan()
    sent = [ref for r in plan.phase("distributions") for ref in r.distribution_refs]
    assert sent == ["D-2"]
    assert [d.external_reference for d in plan.to_create()] == ["D-2"]
    assert preflight(plan, STATE).refused == set()


def test_two_existing_entities_with_that_name_hold_nothing() -> None:
    state = replace(STATE, entities_by_name={("Harbor Trust", "trust"): ("ent_a", "ent_b")})
    plan = _plan(state)
    assert plan.held == ()
    created = [e["external_reference"] for r in plan.phase("entities") for e in r.body]
    assert created == ["NEW-E1", "NEW-E2"]
