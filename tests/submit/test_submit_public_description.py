"""Issue 34's proof: the strict-interface night passes through a validating proxy that refuses
every request the service's older public OpenAPI description forbids (`worlds.public_proxy`,
in process), with all three sample files processed.

Contacts and payment instructions are never refused: the client sends neither an
`external_reference` (the public inputs have none; the interface shows no body). Entities are
refused once (the public docs' `external_reference` and `external_type`, which the interface
describes but the public input does not allow); the client learns from the proxy's own error
form (problem+json, `validation[]`) and sends the public form.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from fundpipe.submit.ingest import ingest
from worlds.public_proxy import PublicDescriptionProxy
from worlds.submit import World, sandbox_world

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
SAMPLE_FILES = (
    "distributions_q4.csv",
    "distributions_q4_special.parquet",
    "roster_new_investors.xlsx",
)


@pytest.mark.parametrize("public_forms", [False, True], ids=["default-forms", "public-forms"])
def test_the_samples_pass_a_proxy_refusing_what_the_public_description_forbids(
    tmp_path: Path, public_forms: bool
) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True, public_forms=public_forms)
    proxy = PublicDescriptionProxy(world.transport)
    for name in SAMPLE_FILES:
        shutil.copy2(SAMPLES / name, world.inbox / name)
    result = ingest(world.settings, transport=proxy, settle_s=0)

    assert sorted(f.state for f in result.files) == ["processed"] * 3, result.files
    # every create went through the proxy's validation
    assert proxy.checked["/v1/contacts"] >= 1
    assert proxy.checked["/v1/payment_instructions"] >= 1
    assert proxy.checked["/v1/entities"] >= 1
    assert proxy.checked["/v1/distributions"] >= 1
    # only the entities' documented-first form was refused, once, and learned from
    assert [r.path for r in proxy.refused] == ["/v1/entities"], proxy.refused
    assert proxy.refused[0].unexpected() == {"external_reference", "external_type"}
    assert any("external_type" in n for n in result.notes), result.notes

    checked = World(settings=world.settings, transport=world.transport)
    assert len(checked.amounts()) == 4  # 3 in the CSV, 1 in the Parquet file, once each
    refs = {r for e in checked.entities() for r in e.external_references}
    assert {"NEW-E1", "NEW-E2", "NEW-E3"} <= refs

    # the roster's own references of contacts and instructions stay in the ledger
    with duckdb.connect(str(world.settings.local.ledger_file), read_only=True) as con:
        kept = dict(
            con.execute(
                "SELECT phase, own_references FROM ledger_requests "
                "WHERE phase IN ('contacts', 'payment_instructions')"
            ).fetchall()
        )
    assert json.loads(kept["contacts"]) == ["NEW-C1", "NEW-C2", "NEW-C3", "NEW-C4"]
    assert json.loads(kept["payment_instructions"]) == ["NEW-P1", "NEW-P2", "NEW-P3"]


WIRE_ROSTER = (
    "Legal Name,Entity Type,Entity Reference,Payment Type,Routing Number,Account Number,"
    "SWIFT Code,Intermediary Party Name,Intermediary Party SWIFT Code,Beneficiary Street 1,"
    "Beneficiary Street 2,Beneficiary City,Beneficiary State,Beneficiary Postal Code,"
    "Beneficiary Country Code,OBI Line 1,OBI Line 2,OBI Line 3,Instruction Reference\n"
    "Harbor Wire Trust,trust,NEW-DW1,domestic_wire,021000021,000123456789,,"
    "Example Correspondent,CHASUS33,100 Main St,Suite 5,Boston,MA,02110,US,"
    "Q4 distribution,Harbor fund,,NEW-DWP1\n"
    "Alpine Holdings,corporation,NEW-IW1,international_wire,,CH9300762011623852957,"
    "DEUTDEFF500,Example Correspondent,CHASUS33,12 Quai du Mont-Blanc,,Geneva,,1201,CH,"
    "Q4 distribution,Alpine fund,Ref 7,NEW-IWP1\n"
)


@pytest.mark.parametrize("public_forms", [False, True], ids=["default-forms", "public-forms"])
def test_a_roster_of_wires_passes_the_proxy_with_the_public_wire_fields(
    tmp_path: Path, public_forms: bool
) -> None:
    world = sandbox_world(tmp_path / "data", strict_interface=True, public_forms=public_forms)
    proxy = PublicDescriptionProxy(world.transport)
    (world.inbox / "wires.csv").write_text(WIRE_ROSTER, encoding="utf-8")
    result = ingest(world.settings, transport=proxy, settle_s=0)

    assert [f.state for f in result.files] == ["processed"], result.files
    assert proxy.checked["/v1/payment_instructions"] == 1
    # the instructions were never refused: only the entities' documented-first form was
    assert [r.path for r in proxy.refused] == ["/v1/entities"], proxy.refused
    with duckdb.connect(str(world.settings.local.ledger_file), read_only=True) as con:
        (body,) = con.execute(
            "SELECT body FROM ledger_requests WHERE phase = 'payment_instructions'"
        ).fetchone() or ("",)
    sent = {i["type"]: i for element in json.loads(body) for i in element["payment_instructions"]}
    assert sent["domestic_wire"]["address"] == {
        "street1": "100 Main St",
        "street2": "Suite 5",
        "city": "Boston",
        "state": "MA",
        "postal_code": "02110",
        "country_code": "US",
    }
    assert sent["international_wire"]["address"]["country_code"] == "CH"
    assert set(sent["international_wire"]) == {
        "type",
        "account_number",
        "swift_code",
        "intermediary_party_name",
        "intermediary_party_swift_code",
        "originator_to_beneficiary_instructions_line1",
        "originator_to_beneficiary_instructions_line2",
        "originator_to_beneficiary_instructions_line3",
        "address",
    }
    assert "DEUTDEFF500" not in body  # the ledger keeps the sensitive fields masked
