"""One canonical JSON, one key recipe, one file hash — and keys already in ledgers never change."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fundpipe import keys
from fundpipe.client import canonical_json as client_canonical_json
from fundpipe.client import idempotency_key as client_idempotency_key

BODY = [
    {
        "name": "Q4 distribution — Ünïcode",
        "vehicle": "veh_demo1",
        "external_reference": "Q4-2026",
        "distribution_date": "2026-12-15T09:00:00-05:00",
        "payments": [{"entity": "ent_1", "amount": 123456, "notify": True, "memo": None}],
    }
]


def test_the_client_and_the_plan_use_the_one_recipe() -> None:
    assert client_canonical_json is keys.canonical_json
    assert client_idempotency_key is keys.idempotency_key


def test_ledger_bodies_are_byte_identical_to_the_former_recipe() -> None:
    """The ledger stored ``json.dumps(sort_keys, compact, default=str)``: same bytes for JSON."""
    former = json.dumps(BODY, sort_keys=True, separators=(",", ":"), default=str)
    assert keys.canonical_json(BODY) == former


def test_keys_are_the_fp1_recipe() -> None:
    payload = ["fp1", "org_demo", "POST", "/v1/distributions", BODY]
    expected = "fp1_" + hashlib.sha256(keys.canonical_json(payload).encode()).hexdigest()
    assert keys.idempotency_key("org_demo", "post", "/v1/distributions?x=1", BODY) == expected


def test_file_hash_is_the_content_hash(tmp_path: Path) -> None:
    data = b"external_reference,amount\nA-1,100.00\n" * 100_000
    path = tmp_path / "sheet.csv"
    path.write_bytes(data)
    assert keys.file_hash(path) == keys.content_hash(data) == hashlib.sha256(data).hexdigest()


def test_golden_keys_never_change() -> None:
    """Literal keys, as ledgers already hold them: a re-run after any upgrade must send the very
    same Idempotency-Key for the same request, or the service would create it twice."""
    assert keys.canonical_json(["fp1", "org_demo", "POST", "/v1/distributions", BODY]) == (
        '["fp1","org_demo","POST","/v1/distributions",[{"distribution_date":'
        '"2026-12-15T09:00:00-05:00","external_reference":"Q4-2026","name":'
        '"Q4 distribution \\u2014 \\u00dcn\\u00efcode","payments":[{"amount":123456,'
        '"entity":"ent_1","memo":null,"notify":true}],"vehicle":"veh_demo1"}]]'
    )
    assert (
        keys.idempotency_key("org_demo", "POST", "/v1/distributions", BODY)
        == "fp1_25da1f13ce866c0daf52110477e6a4b8ca5b37d1d6d9f88930d7b24427c63e8c"
    )
    entity = {"name": "Ada Lovelace", "external_reference": "INV-001", "type": "individual"}
    assert (
        keys.idempotency_key(None, "POST", "/v1/entities", entity)
        == "fp1_2be19ce67b57aae2d24cdaebfd0658a8c20df07889360c508d6ec0a0a5f46531"
    )
