"""One error object everywhere, with a Request-Id header equal to its request_id."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sandbox_support import assert_error, distribution, make_client, param_names

from fundpipe.sandbox import SandboxConfig, create_app


async def test_unknown_route_is_404_error_object(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await client.get("/v1/nothing_here", headers=writer), 404, "resource_not_found"
    )
    assert body["type"] == "not_found_error"


async def test_wrong_method_is_405_not_implemented(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await client.delete("/v1/distributions", headers=writer), 405, "not_implemented"
    )
    assert body["type"] == "invalid_request_error"


async def test_malformed_json_is_400_naming_the_body(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/distributions",
        headers={**writer, "Content-Type": "application/json"},
        content=b'[{"name": ',
    )
    body = assert_error(response, 400, "parameter_invalid")
    assert param_names(body) == {"body": "parameter_invalid"}


async def test_non_json_content_type_is_415(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/entities", headers={**writer, "Content-Type": "text/csv"}, content=b"name,type\n"
    )
    assert_error(response, 415, "parameter_invalid")


async def test_body_over_10_mib_is_413(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    big = json.dumps([{"name": "x" * (11 * 1024 * 1024), "type": "llc"}])
    response = await client.post(
        "/v1/entities", headers={**writer, "Content-Type": "application/json"}, content=big
    )
    assert_error(response, 413, "parameter_invalid")


async def test_unexpected_failure_is_500_with_request_id_and_no_traceback() -> None:
    app = create_app(SandboxConfig())

    async def boom() -> None:
        raise RuntimeError("secret internals")

    app.add_api_route("/v1/boom", boom, methods=["GET"])
    async with make_client(app) as client:
        response = await client.get("/v1/boom")
    body = assert_error(response, 500, "internal_error")
    assert body["type"] == "api_error"
    assert "secret internals" not in response.text


async def test_success_responses_carry_a_request_id(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.get("/v1/vehicles", headers=writer)
    assert response.status_code == 200
    assert response.headers["Request-Id"].startswith("req_")


async def test_bad_path_id_is_400_named_after_the_path(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await client.get("/v1/financial_accounts/acct-1", headers=writer), 400, "parameter_invalid"
    )
    assert param_names(body) == {"path.fa_id": "parameter_invalid"}


async def test_unknown_id_is_404(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    assert_error(
        await client.get("/v1/financial_accounts/fa_nope", headers=writer),
        404,
        "resource_not_found",
    )
    assert_error(
        await client.get("/v1/entities/ent_nope", headers=writer), 404, "resource_not_found"
    )
    assert_error(
        await client.get("/v1/distributions/dst_nope/payments", headers=writer),
        404,
        "resource_not_found",
    )


async def _post(
    client: httpx.AsyncClient, headers: dict[str, str], path: str, body: Any
) -> httpx.Response:
    return await client.post(path, headers=headers, json=body)


async def test_every_failure_of_a_batch_comes_back_at_once(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    good = distribution(3)
    bad = distribution(3)
    del bad["name"]
    bad["colour"] = "blue"
    bad["payments"][0]["amount"] = 12.5
    bad["payments"][1]["amount"] = -5
    bad["payments"][2]["currency"] = "EUR"
    bad["payments"][2]["entity"] = "ent_unknown1"
    third = distribution(1, name="", vehicle="veh_other")
    third["payments"][0]["amount"] = "100"
    third["payments"][0]["notifications"] = [{"contact": "cnt_nobody"}, {"contact": 7}]
    response = await _post(client, writer, "/v1/distributions", [good, bad, third])
    body = assert_error(response, 400, "parameter_missing")
    assert param_names(body) == {
        "body.[1].name": "parameter_missing",
        "body.[1].colour": "parameter_unknown",
        "body.[1].payments.[0].amount": "parameter_invalid_integer",
        "body.[1].payments.[1].amount": "parameter_invalid",
        "body.[1].payments.[2].currency": "parameter_invalid",
        "body.[1].payments.[2].entity": "parameter_invalid",
        "body.[2].name": "parameter_invalid_string_empty",
        "body.[2].vehicle": "parameter_invalid",
        "body.[2].payments.[0].amount": "parameter_invalid_integer",
        "body.[2].payments.[0].notifications.[0].contact": "parameter_invalid",
        "body.[2].payments.[0].notifications.[1].contact": "parameter_invalid_string",
    }
    listed = await client.get("/v1/distributions", headers=writer)
    assert listed.json()["data"] == []  # atomic: not even the good element


async def test_whole_number_float_amount_is_not_an_integer(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    element = distribution(1)
    response = await client.post(
        "/v1/distributions",
        headers={**writer, "Content-Type": "application/json"},
        content=json.dumps([element]).replace('"amount": 10000', '"amount": 10000.0'),
    )
    body = assert_error(response, 400, "parameter_invalid_integer")
    assert param_names(body) == {"body.[0].payments.[0].amount": "parameter_invalid_integer"}


async def test_offset_mismatch_alone_is_422_validation_error(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    element = distribution(2, date="2026-07-15T09:00:00-05:00")  # New York is at -04:00 in July
    element["payments"][1]["distribution_date_override"] = "2026-07-20T09:00:00Z"
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [element]), 422, "validation_error"
    )
    assert body["type"] == "unprocessable_entity_error"
    assert param_names(body) == {
        "body.[0].distribution_date": "validation_error",
        "body.[0].payments.[1].distribution_date_override": "validation_error",
    }


async def test_offset_mismatch_with_other_failures_is_400_listing_all(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    element = distribution(1, date="2026-07-15T09:00:00Z")
    element["payments"][0]["currency"] = "usd"
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [element]), 400, "parameter_invalid"
    )
    assert param_names(body) == {
        "body.[0].distribution_date": "validation_error",
        "body.[0].payments.[0].currency": "parameter_invalid",
    }


async def test_dst_gap_and_fold_wall_times_are_rejected(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    gap = distribution(1, date="2026-03-08T02:30")
    fold = distribution(1, date="2026-11-01T01:30")
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [gap, fold]), 400, "parameter_invalid"
    )
    reasons = {p["name"]: p["reason"] for p in body["invalid-params"]}
    assert "does not exist" in reasons["body.[0].distribution_date"]
    assert "occurs twice" in reasons["body.[1].distribution_date"]


async def test_limits_on_elements_and_payments(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    assert_error(await _post(client, writer, "/v1/distributions", []), 400, "parameter_invalid")
    too_many = [distribution(1) for _ in range(101)]
    assert param_names(
        assert_error(
            await _post(client, writer, "/v1/distributions", too_many), 400, "parameter_invalid"
        )
    ) == {"body": "parameter_invalid"}
    no_payments = distribution(0)
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [no_payments]), 400, "parameter_invalid"
    )
    assert param_names(body) == {"body.[0].payments": "parameter_invalid"}
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [distribution(1001)]),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"body.[0].payments": "parameter_invalid"}
    assert_error(
        await _post(client, writer, "/v1/distributions", {"name": "not an array"}),
        400,
        "parameter_invalid",
    )


async def test_unknown_timezone_is_invalid(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await _post(client, writer, "/v1/distributions", [distribution(1, zone="Mars/Base")]),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {"body.[0].distribution_timezone": "parameter_invalid"}


async def test_entity_and_contact_validation(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await _post(
            client,
            writer,
            "/v1/entities",
            [{"name": "x" * 256, "type": "llc"}, {"type": "pirate", "name": 5}],
        ),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {
        "body.[0].name": "parameter_invalid",
        "body.[1].type": "parameter_invalid",
        "body.[1].name": "parameter_invalid_string",
    }
    body = assert_error(
        await _post(
            client,
            writer,
            "/v1/contacts",
            [{"name": "Ann", "email": "not-an-email"}, {"name": "Bo"}],
        ),
        400,
        "parameter_invalid",
    )
    assert param_names(body) == {
        "body.[0].email": "parameter_invalid",
        "body.[1].email": "parameter_missing",
    }


async def test_limit_query_is_validated(client: httpx.AsyncClient, writer: dict[str, str]) -> None:
    for value, code in (
        ("0", "parameter_invalid"),
        ("101", "parameter_invalid"),
        ("ten", "parameter_invalid_integer"),
    ):
        body = assert_error(
            await client.get(f"/v1/entities?limit={value}", headers=writer), 400, code
        )
        assert param_names(body) == {"query.limit": code}
    body = assert_error(
        await client.get("/v1/entities?page=bogus", headers=writer), 400, "parameter_invalid"
    )
    assert param_names(body) == {"query.page": "parameter_invalid"}


async def test_unknown_query_parameter_is_400_parameter_unknown(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    body = assert_error(
        await client.get("/v1/vehicles?limit=5&colour=red", headers=writer),
        400,
        "parameter_unknown",
    )
    assert param_names(body) == {"query.colour": "parameter_unknown"}
    body = assert_error(
        await client.get("/v1/vehicles/veh_demo1?limit=5", headers=writer), 400, "parameter_unknown"
    )
    assert param_names(body) == {"query.limit": "parameter_unknown"}


async def test_405_lists_every_method_of_the_path(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    response = await client.put("/v1/entities", headers=writer, json=[])
    assert_error(response, 405, "not_implemented")
    assert response.headers["Allow"] == "GET, POST"


async def test_lone_surrogates_and_line_breaks_never_break_the_error(
    client: httpx.AsyncClient, writer: dict[str, str]
) -> None:
    headers = {**writer, "Content-Type": "application/json"}
    bad = await client.post(
        "/v1/entities", headers=headers, content=b'[{"name": "\\ud800", "type": "llc"}]'
    )
    assert_error(bad, 400, "parameter_invalid")
    odd_key = await client.post(
        "/v1/entities", headers=headers, content=b'[{"name": "A", "type": "llc", "a\\nb": 1}]'
    )
    body = assert_error(odd_key, 400, "parameter_unknown")
    assert param_names(body) == {"body.[0].a\\nb": "parameter_unknown"}
