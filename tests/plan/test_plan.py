"""The pure planning step: what is sent, in which order, under which key."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from fundpipe.client import idempotency_key
from fundpipe.keys import canonical_json
from fundpipe.plan import (
    IdMap,
    Ref,
    ServiceDistribution,
    ServicePayment,
    UnresolvedReferenceError,
    build_plan,
    display_body,
)
from fundpipe.plan.preflight import preflight
from worlds.submit import DEMO_STATE, file_input, payment_rows


def _existing(ref: str, amounts: list[int], *, dst: str = "dst_1") -> ServiceDistribution:
    return ServiceDistribution(
        id=dst,
        external_reference=ref,
        name=f"Distribution {ref}",
        vehicle="veh_demo1",
        # the same instant the sheet names, rendered in UTC
        distribution_date="2026-12-15T14:00:00+00:00",
        distribution_timezone="America/New_York",
        payments=tuple(
            ServicePayment(f"ent_demo{(i % 5) + 1}", cents, "USD")
            for i, cents in enumerate(amounts)
        ),
        payment_ids=tuple(f"dpmt_{i}" for i in range(len(amounts))),
    )


ROSTER_ENTITIES = pd.DataFrame(
    [
        {
            "name": "Harbor Trust",
            "type": "trust",
            "external_type": "Trust",
            "external_reference": "NEW-E1",
        },
        {"name": "Demo One", "type": "llc", "external_type": None, "external_reference": "DEMO-E1"},
    ]
)
ROSTER_CONTACTS = pd.DataFrame(
    [
        {
            "name": "Ana",
            "email": "Ana@Example.com",
            "external_reference": None,
            "entity_external_reference": "NEW-E1",
        },
        {
            "name": "Known",
            "email": "investor1@example.com",
            "external_reference": None,
            "entity_external_reference": "NEW-E1",
        },
    ]
)
ROSTER_INSTRUCTIONS = pd.DataFrame(
    [
        {
            "entity_external_reference": "NEW-E1",
            "type": "ach",
            "beneficiary_name": "Harbor Trust",
            "routing_number": "021000021",
            "account_number_secret": "000123456789",
            "external_reference": "NEW-P1",
        }
    ]
)


def test_only_missing_roster_objects_are_created_in_phase_order() -> None:
    rows = payment_rows(
        "R1", [1000, 2000], entities=["NEW-E1", "ent_demo2"], notify="ana@example.com"
    )
    plan = build_plan(
        [
            file_input(
                "h1",
                rows,
                entities=ROSTER_ENTITIES,
                contacts=ROSTER_CONTACTS,
                payment_instructions=ROSTER_INSTRUCTIONS,
            )
        ],
        DEMO_STATE,
    )
    assert [r.phase for r in plan.requests] == [
        "entities",
        "contacts",
        "associations",
        "payment_instructions",
        "distributions",
    ]
    # DEMO-E1 and investor1 exist at the service: not created again
    assert [e["external_reference"] for e in plan.requests[0].body] == ["NEW-E1"]
    assert [c["email"] for c in plan.requests[1].body] == ["ana@example.com"]
    association = plan.requests[2]
    assert association.path_ref == Ref("entity", "NEW-E1")
    assert list(association.body) == [
        {"id": Ref("contact", "ana@example.com")},
        {"id": "cnt_demo1"},
    ]
    payment = plan.requests[4].body[0]["payments"][0]
    assert payment["entity"] == Ref("entity", "NEW-E1")
    assert payment["notifications"] == [{"contact": Ref("contact", "ana@example.com")}]


def test_later_phases_take_ids_from_earlier_results_and_key_the_concrete_body() -> None:
    rows = payment_rows("R1", [1000], entities=["NEW-E1"])
    plan = build_plan([file_input("h1", rows, entities=ROSTER_ENTITIES)], DEMO_STATE)
    request = plan.phase("distributions")[0]
    with pytest.raises(UnresolvedReferenceError):
        request.resolve(IdMap(), "org_demo", idempotency_key)
    resolved = request.resolve(IdMap(entities={"NEW-E1": "ent_new1"}), "org_demo", idempotency_key)
    assert resolved.body[0]["payments"][0]["entity"] == "ent_new1"
    assert resolved.key == idempotency_key("org_demo", "POST", "/v1/distributions", resolved.body)
    # the canonical text the key was made from, kept for the bytes sent and the ledger's copy
    assert resolved.body_json == canonical_json(resolved.body)


def test_the_same_sheet_plans_the_same_keys_every_time() -> None:
    groups = [payment_rows(f"R{i}", [100 * (i + 1), 7]) for i in range(5)]
    rows = [r for g in groups for r in g]
    first = build_plan([file_input("h1", rows)], DEMO_STATE, batch_size=2)
    # the sheet's distributions in another order: same batches, same keys
    shuffled = [r for g in reversed(groups) for r in g]
    again = build_plan([file_input("h1", shuffled)], DEMO_STATE, batch_size=2)
    keys = [r.resolve_key("org_demo") for r in first.requests]
    assert keys == [r.resolve_key("org_demo") for r in again.requests]
    assert len(set(keys)) == 3  # 5 distributions in batches of at most 2


def test_batches_hold_at_most_batch_size_and_every_distribution_once() -> None:
    rows = [r for i in range(250) for r in payment_rows(f"R{i:03d}", [100])]
    plan = build_plan([file_input("h1", rows)], DEMO_STATE)
    sizes = [len(r.body) for r in plan.phase("distributions")]
    assert sizes == [100, 100, 50]
    sent = [d["external_reference"] for r in plan.phase("distributions") for d in r.body]
    assert sorted(sent) == sorted({f"R{i:03d}" for i in range(250)})


def test_a_resumed_run_recuts_the_same_batches_for_what_is_left() -> None:
    rows = [r for i in range(25) for r in payment_rows(f"R{i:02d}", [100 + i])]
    before = build_plan([file_input("h1", rows)], DEMO_STATE, batch_size=10)
    # the middle batch reached the service before the crash
    created = {d["external_reference"] for d in before.phase("distributions")[1].body}
    after_state = replace(
        DEMO_STATE,
        distributions_by_ref={
            ref: _existing(ref, [100 + int(ref[1:])], dst=f"dst_{ref}") for ref in created
        },
    )
    after = build_plan([file_input("h1", rows)], after_state, batch_size=10)
    keys_before = [r.resolve_key("org_demo") for r in before.phase("distributions")]
    keys_after = [r.resolve_key("org_demo") for r in after.phase("distributions")]
    assert keys_after == [keys_before[0], keys_before[2]]
    assert sum(d.action == "link" for d in after.distributions) == 10


def test_same_content_at_the_service_is_linked_not_sent() -> None:
    state = replace(DEMO_STATE, distributions_by_ref={"R1": _existing("R1", [1000, 2000])})
    plan = build_plan([file_input("h1", payment_rows("R1", [2000, 1000][::-1]))], state)
    (d,) = plan.distributions
    assert (d.action, d.existing_id) == ("link", "dst_1")
    assert plan.requests == ()


def test_an_edited_amount_is_a_conflict_and_its_file_sends_nothing() -> None:
    state = replace(DEMO_STATE, distributions_by_ref={"R1": _existing("R1", [1000, 2000])})
    rows = payment_rows("R1", [1000, 2001]) + payment_rows("R2", [500])
    plan = build_plan(
        [
            file_input("h1", rows, entities=ROSTER_ENTITIES),
            file_input("h2", payment_rows("R3", [9])),
        ],
        state,
    )
    actions = {d.external_reference: d.action for d in plan.distributions}
    assert actions == {"R1": "conflict", "R2": "create", "R3": "create"}
    assert "payments differ" in (plan.conflicts[0].reason or "")
    assert [f.conflict for f in plan.files] == [True, False]
    # nothing of h1 (not even its roster entity); h2 goes ahead
    assert [r.file_hashes for r in plan.requests] == [("h2",)]


def test_a_conflict_names_the_row_and_the_entity_that_differ_in_dollars() -> None:
    # the issue's case: the same count and total, one entity typed wrong (a reference the
    # service does not know) — "sheet 7 payments totalling 44527650 cents" on both sides
    amounts = [6_360_000, 6_360_000, 6_360_000, 6_360_000, 6_360_000, 6_360_000, 6_367_650]
    state = replace(DEMO_STATE, distributions_by_ref={"R1": _existing("R1", amounts)})
    entities = [f"ent_demo{(i % 5) + 1}" for i in range(7)]
    entities[3] = "ent_dmeo3"  # a typo: not an ent_ id the service has, read as a reference
    rows = payment_rows("R1", amounts, entities=entities, first_row=8)
    for row in rows:
        row["entity_is_ref"] = row["entity"] == "ent_dmeo3"
    (d,) = build_plan([file_input("h1", rows)], state).distributions
    assert d.action == "conflict"
    reason = d.reason or ""
    assert "row 11" in reason
    assert "entity: sheet ent_dmeo3" in reason
    assert "service ent_demo4" in reason
    assert "$445,276.50" in reason
    assert "cents" not in reason
    assert (d.conflict_row, d.conflict_column) == (11, "entity")


def test_a_conflict_on_an_amount_says_both_amounts() -> None:
    state = replace(DEMO_STATE, distributions_by_ref={"R1": _existing("R1", [1000, 2000])})
    (d,) = build_plan([file_input("h1", payment_rows("R1", [1000, 2001]))], state).distributions
    assert "row 3" in (d.reason or "")
    assert "amount: sheet $20.01, service $20.00" in (d.reason or "")
    assert (d.conflict_row, d.conflict_column) == (3, "amount")


def test_one_reference_twice_in_a_drop_is_sent_once_or_flagged() -> None:
    same = build_plan(
        [file_input("h1", payment_rows("R1", [5])), file_input("h2", payment_rows("R1", [5]))],
        DEMO_STATE,
    )
    assert [d.action for d in same.distributions] == ["create", "link"]
    assert len(same.phase("distributions")) == 1
    edited = build_plan(
        [file_input("h1", payment_rows("R1", [5])), file_input("h2", payment_rows("R1", [6]))],
        DEMO_STATE,
    )
    assert [d.action for d in edited.distributions] == ["create", "conflict"]


def test_preflight_refuses_unknown_vehicles_and_ids() -> None:
    rows = payment_rows("R1", [5], vehicle="veh_nope") + payment_rows(
        "R2", [5], entities=["ent_ghost"], notify="cnt_ghost; nobody@example.com"
    )
    checked = preflight(build_plan([file_input("h1", rows)], DEMO_STATE), DEMO_STATE)
    assert checked.refused == {"h1"}
    messages = " | ".join(i.message for i in checked.errors)
    assert "veh_nope not found" in messages
    assert "ent_ghost not found" in messages
    assert "cnt_ghost not found" in messages
    assert "'nobody@example.com' unknown" in messages


def test_funding_is_a_warning_unless_funds_are_required() -> None:
    state = replace(DEMO_STATE, available_cents={"veh_demo1": 10_000})
    files = [
        file_input("h1", payment_rows("R1", [6_000])),
        file_input("h2", payment_rows("R2", [5_000])),  # together: 110.00 > 100.00
    ]
    plan = build_plan(files, state)
    warned = preflight(plan, state)
    assert warned.refused == frozenset()
    assert [(i.level, i.file_hash) for i in warned.issues] == [("warning", "h2")]
    refused = preflight(plan, state, require_funds=True)
    assert refused.refused == {"h2"}
    assert "110.00 USD" in refused.errors[0].message
    assert "100.00 USD available" in refused.errors[0].message
    replanned = build_plan(files, state, exclude=refused.refused)
    assert [d["external_reference"] for r in replanned.requests for d in r.body] == ["R1"]


def test_displayed_bodies_mask_account_numbers() -> None:
    plan = build_plan(
        [file_input("h1", payment_rows("R1", [5]), payment_instructions=ROSTER_INSTRUCTIONS)],
        replace(DEMO_STATE, entities_by_ref={**DEMO_STATE.entities_by_ref, "NEW-E1": "ent_n1"}),
    )
    (request,) = plan.phase("payment_instructions")
    shown = str(display_body(list(request.body)))
    assert "000123456789" not in shown
    assert "****6789" in shown
    # the request itself carries the full number (the service needs it)
    assert request.body[0]["payment_instructions"][0]["account_number"] == "000123456789"
