"""Errors, retries, idempotency keys and OAuth against a respx-mocked service."""

from __future__ import annotations

import logging
import time
from email.utils import format_datetime

import httpx
import pytest
import stamina
from fundclient_helpers import (
    ORG,
    TOKEN,
    TOKEN_2,
    VirtualTime,
    envelope,
    error_body,
    make_settings,
    sent_json,
    token_response,
)

from fundpipe.app import quiet_retries
from fundpipe.client import FundClient, errors, idempotency_key
from fundpipe.client._ratelimit import GUARD_MARGIN_S, RateGate
from fundpipe.keys import CanonicalBody, canonical_json

quiet_retries()  # the process's retry hooks, as fundpipe runs them

DIST = {
    "name": "Q4 2026",
    "vehicle": "veh_demo1",
    "distribution_date": "2026-12-15T09:00:00-05:00",
    "distribution_timezone": "America/New_York",
    "external_reference": "Q4-2026",
    "payments": [{"amount": 125_000, "currency": "USD", "entity": "ent_demo1"}],
}
CREATED = {
    "object": "distribution",
    "livemode": False,
    "id": "dst_1",
    "name": "Q4 2026",
    "status": "draft",
    "distribution_date": "2026-12-15T09:00:00-05:00",
    "created_at": "2026-11-23T12:00:00Z",
    "payments": envelope(
        [{"id": "dpmt_1", "amount": 125_000, "currency": "USD", "status": "staged"}]
    ),
}
HTML_502 = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def created() -> httpx.Response:
    return httpx.Response(201, json=envelope([CREATED], url="/v1/distributions"))


def api_error(status: int, type_: str, code: str, **extra: object) -> httpx.Response:
    return httpx.Response(status, json=error_body(status, type_, code, **extra))


# --- error mapping ---------------------------------------------------------------------------


async def test_html_502_from_a_proxy_becomes_a_typed_retried_server_error(client, service):
    route = service.get("/v1/vehicles/veh_1").mock(
        return_value=httpx.Response(
            502, content=HTML_502, headers={"content-type": "text/html", "Request-Id": "req_proxy"}
        )
    )
    with pytest.raises(errors.APIServerError) as info:
        await client.get_vehicle("veh_1")
    err = info.value
    assert err.status == 502
    assert err.code is None
    assert err.request_id == "req_proxy"
    assert err.body == HTML_502
    assert "non-JSON body" in str(err)
    assert "<html>" not in str(err)
    assert route.call_count == 4  # max_attempts


async def test_error_object_fields_are_kept(client, service):
    body = error_body(
        400,
        "invalid_request_error",
        "parameter_invalid",
        message="invalid amount",
        **{
            "invalid-params": [
                {
                    "code": "parameter_invalid_integer",
                    "name": "body.[0].payments.[0].amount",
                    "reason": "must be an integer",
                    "value": 1.5,
                }
            ],
            "doc_url": "https://docs.example/errors",
        },
    )
    route = service.post("/v1/distributions").mock(return_value=httpx.Response(400, json=body))
    with pytest.raises(errors.InvalidRequestError) as info:
        await client.create_distributions([DIST])
    err = info.value
    assert (err.status, err.type, err.code, err.request_id) == (
        400,
        "invalid_request_error",
        "parameter_invalid",
        "req_400",
    )
    assert err.invalid_params[0].name == "body.[0].payments.[0].amount"
    assert err.invalid_params[0].reason == "must be an integer"
    assert err.doc_url == "https://docs.example/errors"
    assert err.error == body
    assert "body.[0].payments.[0].amount: must be an integer" in str(err)
    assert route.call_count == 1


@pytest.mark.parametrize(
    ("status", "type_", "code", "cls"),
    [
        (400, "invalid_request_error", "parameter_missing", errors.InvalidRequestError),
        (403, "permission_error", "forbidden", errors.PermissionDeniedError),
        (404, "not_found_error", "resource_not_found", errors.NotFoundError),
        (422, "unprocessable_entity_error", "validation_error", errors.UnprocessableEntityError),
        (
            422,
            "unprocessable_entity_error",
            "idempotency_mismatch",
            errors.IdempotencyMismatchError,
        ),
        (409, "conflict_error", "idempotency_mismatch", errors.IdempotencyMismatchError),
    ],
)
async def test_fatal_errors_are_raised_without_retry(client, service, status, type_, code, cls):
    route = service.post("/v1/distributions").mock(return_value=api_error(status, type_, code))
    with pytest.raises(cls) as info:
        await client.create_distributions([DIST])
    assert info.value.status == status
    assert info.value.code == code
    assert not info.value.retryable
    assert route.call_count == 1


def test_error_class_prefers_code_then_type_then_status():
    assert (
        errors.error_class_for(409, "conflict_error", "idempotency_mismatch")
        is errors.IdempotencyMismatchError
    )
    assert errors.error_class_for(409, "conflict_error", "conflict") is errors.ConflictError
    assert errors.error_class_for(503, "invalid_request_error", "x") is errors.APIServerError
    assert errors.error_class_for(429, None, None) is errors.RateLimitError
    assert errors.error_class_for(418, None, None) is errors.InvalidRequestError
    assert errors.error_class_for(501, "api_error", "not_implemented") is errors.APIServerError


async def test_malformed_json_in_a_success_is_a_decode_error_not_a_retry(client, service):
    route = service.get("/v1/vehicles/veh_1").mock(
        return_value=httpx.Response(
            200, content=b'{"id": "veh_1", "name": ', headers={"content-type": "application/json"}
        )
    )
    with pytest.raises(errors.ResponseDecodeError) as info:
        await client.get_vehicle("veh_1")
    assert info.value.status == 200
    assert route.call_count == 1


async def test_malformed_json_error_body_still_gives_the_status_class(client, service):
    service.get("/v1/entities/ent_1").mock(
        return_value=httpx.Response(
            404, content=b'{"object": "error", "type"', headers={"content-type": "application/json"}
        )
    )
    with pytest.raises(errors.NotFoundError) as info:
        await client.get_entity("ent_1")
    assert info.value.code is None


async def test_unexpected_record_shape_is_a_decode_error(client, service):
    service.get("/v1/financial_accounts/fa_1").mock(
        return_value=httpx.Response(
            200, json={"id": "fa_1", "vehicle": "veh_1", "balance": {"total": "lots"}}
        )
    )
    with pytest.raises(errors.ResponseDecodeError, match="FinancialAccount"):
        await client.get_financial_account("fa_1")


# --- retries ---------------------------------------------------------------------------------


async def test_conflict_is_retried_with_the_same_key(client, service):
    route = service.post("/v1/distributions").mock(
        side_effect=[api_error(409, "conflict_error", "conflict"), created()]
    )
    result = await client.create_distributions([DIST])
    assert [d.id for d in result] == ["dst_1"]
    keys = {call.request.headers["Idempotency-Key"] for call in route.calls}
    assert route.call_count == 2
    assert len(keys) == 1


async def test_key_is_deterministic_and_constant_across_retries(client, service):
    route = service.post("/v1/distributions").mock(
        side_effect=[
            httpx.Response(503, json=error_body(503, "api_error", "internal_error")),
            httpx.ConnectError("refused"),
            httpx.ReadTimeout("slow"),
            created(),
        ]
    )
    await client.create_distributions([DIST])
    expected = idempotency_key(ORG, "POST", "/v1/distributions", [DIST])
    assert [c.request.headers["Idempotency-Key"] for c in route.calls] == [expected] * 4
    assert all(sent_json(c) == [DIST] for c in route.calls)


async def test_a_body_whose_canonical_text_is_made_is_sent_and_keyed_as_the_same_body(
    client, service
):
    route = service.post("/v1/distributions").mock(side_effect=[created(), created()])
    await client.create_distributions([DIST])
    await client.create_distributions(CanonicalBody([DIST], canonical_json([DIST])))
    plain, made = route.calls
    assert made.request.content == plain.request.content == canonical_json([DIST]).encode()
    assert made.request.headers["Idempotency-Key"] == plain.request.headers["Idempotency-Key"]
    assert plain.request.headers["Idempotency-Key"] == idempotency_key(
        ORG, "POST", "/v1/distributions", [DIST]
    )


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_transient_statuses_are_retried(client, service, status):
    route = service.get("/v1/vehicles/veh_1").mock(
        side_effect=[
            httpx.Response(status, json=error_body(status, "api_error", "x")),
            httpx.Response(200, json={"id": "veh_1"}),
        ]
    )
    vehicle = await client.get_vehicle("veh_1")
    assert vehicle.id == "veh_1"
    assert route.call_count == 2


async def test_501_is_not_retried(client, service):
    route = service.get("/v1/entities/ent_1").mock(
        return_value=api_error(501, "api_error", "not_implemented")
    )
    with pytest.raises(errors.APIServerError):
        await client.get_entity("ent_1")
    assert route.call_count == 1


async def test_501_of_a_guessed_operation_is_unavailable_and_not_retried(client, service):
    route = service.get("/v1/vehicles/veh_1").mock(
        return_value=api_error(501, "api_error", "not_implemented")
    )
    with pytest.raises(errors.OperationUnavailableError) as info:
        await client.get_vehicle("veh_1")
    assert info.value.status == 501
    assert isinstance(info.value.__cause__, errors.APIServerError)
    assert route.call_count == 1


async def test_connection_failures_exhaust_into_a_service_connection_error(client, service):
    route = service.get("/v1/vehicles/veh_1").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(errors.ServiceConnectionError, match="ConnectError") as info:
        await client.get_vehicle("veh_1")
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.attempt == 4
    assert route.call_count == 4


async def test_retry_after_http_date_is_honoured(client, service, clock, caplog):
    when = clock().replace(microsecond=0)
    retry_at = format_datetime(when + __import__("datetime").timedelta(seconds=7), usegmt=True)
    service.get("/v1/vehicles/veh_1").mock(
        side_effect=[
            httpx.Response(
                429,
                json=error_body(429, "rate_limit_error", "rate_limit_exceeded"),
                headers={"Retry-After": retry_at},
            ),
            httpx.Response(200, json={"id": "veh_1"}),
        ]
    )
    with caplog.at_level(logging.WARNING):
        await client.get_vehicle("veh_1")
    assert "retry 1 in 7.00 s" in caplog.text
    # said once: the ways to run fundpipe (fundpipe.app) turn stamina's own retry log off
    assert [r.name for r in caplog.records] == ["fundpipe.client"]


async def test_retry_after_seconds_are_capped(service, clock, caplog):
    settings = make_settings(retry_after_cap_s=2.5)
    async with FundClient(
        settings.client_config(), transport=httpx.MockTransport(service.async_handler), clock=clock
    ) as client:
        service.get("/v1/vehicles/veh_1").mock(
            side_effect=[
                httpx.Response(
                    429,
                    json=error_body(429, "rate_limit_error", "rate_limit_exceeded"),
                    headers={"Retry-After": "30"},
                ),
                httpx.Response(200, json={"id": "veh_1"}),
            ]
        )
        with caplog.at_level(logging.WARNING, logger="fundpipe.client"):
            await client.get_vehicle("veh_1")
    assert "retry 1 in 2.50 s" in caplog.text


async def test_a_wait_past_the_deadline_is_not_started(service, clock):
    settings = make_settings(retry_deadline_s=5.0, retry_after_cap_s=60.0)
    async with FundClient(
        settings.client_config(), transport=httpx.MockTransport(service.async_handler), clock=clock
    ) as client:
        route = service.get("/v1/vehicles/veh_1").mock(
            return_value=httpx.Response(
                503,
                json=error_body(503, "api_error", "internal_error"),
                headers={"Retry-After": "20"},
            )
        )
        with pytest.raises(errors.APIServerError) as info:
            await client.get_vehicle("veh_1")
    assert info.value.retry_after == 20
    assert route.call_count == 1


async def test_retry_after_is_the_wait_stamina_makes(service, clock):
    """The backoff hook hands `Retry-After` to stamina, which waits exactly that (its own
    exponential backoff is not used). Outside stamina's test mode, so the 0.2 s are real."""
    scheduled: list[float] = []
    route = service.get("/v1/vehicles/veh_1").mock(
        side_effect=[
            httpx.Response(
                503,
                json=error_body(503, "api_error", "internal_error"),
                headers={"Retry-After": "0.2"},
            ),
            httpx.Response(200, json={"id": "veh_1"}),
        ]
    )
    settings = make_settings(retry_deadline_s=60.0)
    hooks = stamina.instrumentation.get_on_retry_hooks()
    stamina.instrumentation.set_on_retry_hooks([lambda retry: scheduled.append(retry.wait_for)])
    try:
        with stamina.set_testing(False):
            async with FundClient(
                settings.client_config(),
                transport=httpx.MockTransport(service.async_handler),
                clock=clock,
            ) as client:
                started = time.monotonic()
                vehicle = await client.get_vehicle("veh_1")
                elapsed = time.monotonic() - started
    finally:
        stamina.instrumentation.set_on_retry_hooks(hooks)
    assert vehicle.id == "veh_1"
    assert route.call_count == 2
    assert scheduled == [0.2]
    assert elapsed >= 0.2


# --- OAuth -----------------------------------------------------------------------------------


async def test_second_401_raises_and_is_not_retried(client, service):
    service["token"].mock(side_effect=[token_response(TOKEN), token_response(TOKEN_2)])
    route = service.get("/v1/vehicles/veh_1").mock(
        return_value=api_error(401, "authentication_error", "unauthorized")
    )
    with pytest.raises(errors.AuthenticationError):
        await client.get_vehicle("veh_1")
    assert route.call_count == 2
    assert service["token"].call_count == 2


async def test_token_endpoint_outage_is_retried(client, service):
    service["token"].mock(side_effect=[httpx.Response(503, text="down"), token_response()])
    service.get("/v1/vehicles/veh_1").mock(return_value=httpx.Response(200, json={"id": "veh_1"}))
    assert (await client.get_vehicle("veh_1")).id == "veh_1"


# --- rate limit ------------------------------------------------------------------------------


async def test_a_429_pauses_every_request_of_the_client(service, clock):
    vt = VirtualTime()
    gate = RateGate(10_000, 8, monotonic=vt.monotonic, sleep=vt.sleep)
    sent_at: dict[str, float] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        sent_at.setdefault(request.url.path, vt.now)
        if request.url.path == "/v1/vehicles/veh_1":
            return httpx.Response(
                429,
                json=error_body(429, "rate_limit_error", "rate_limit_exceeded"),
                headers={"Retry-After": "3"},
            )
        return httpx.Response(200, json={"id": "veh_2"})

    service.get(url__regex=r"/v1/vehicles/.*").mock(side_effect=answer)
    settings = make_settings(max_attempts=1)  # no retry: the refused request gives up at once
    async with FundClient(
        settings.client_config(),
        transport=httpx.MockTransport(service.async_handler),
        clock=clock,
        rate_gate=gate,
    ) as client:
        with stamina.set_testing(False):  # the shared pause is off in stamina's test mode
            with pytest.raises(errors.RateLimitError):
                await vt.run(client.get_vehicle("veh_1"))
            # The pause is shared: another request of this client waits for the 3 s too.
            [other] = await vt.run(client.get_vehicle("veh_2"))
    assert other.id == "veh_2"
    assert 2.0 < sent_at["/v1/vehicles/veh_2"] - sent_at["/v1/vehicles/veh_1"] <= 3.0 + 1e-9


async def test_rate_gate_pause_holds_other_requests():
    vt = VirtualTime()
    gate = RateGate(rate_per_s=1000, max_concurrency=4, monotonic=vt.monotonic, sleep=vt.sleep)

    async def one() -> None:
        async with gate.slot():
            pass

    with stamina.set_testing(False):
        gate.penalize(0.15)
        started = vt.now
        await vt.run(one())
    assert vt.now - started >= 0.14


async def test_rate_gate_bounds_concurrency():
    vt = VirtualTime()
    gate = RateGate(rate_per_s=1000, max_concurrency=2, monotonic=vt.monotonic, sleep=vt.sleep)
    in_flight = peak = 0

    async def one() -> None:
        nonlocal in_flight, peak
        async with gate.slot():
            in_flight += 1
            peak = max(peak, in_flight)
            await vt.sleep(0.02)
            in_flight -= 1

    await vt.run(*(one() for _ in range(8)))
    assert peak == 2


async def test_rate_gate_paces_requests_without_an_initial_burst():
    vt = VirtualTime()
    gate = RateGate(rate_per_s=50, max_concurrency=8, monotonic=vt.monotonic, sleep=vt.sleep)
    sent: list[float] = []

    async def one() -> None:
        async with gate.slot():
            sent.append(vt.now)

    await vt.run(*(one() for _ in range(11)))
    # 11 requests at 50/s span at least 10 intervals of 20 ms: no burst on top of the rate.
    assert sent[-1] - sent[0] >= 0.19


async def test_token_endpoint_429_is_retried_after_its_retry_after(client, service, caplog):
    service["token"].mock(
        side_effect=[
            httpx.Response(429, json={"error": "slow_down"}, headers={"Retry-After": "4"}),
            token_response(),
        ]
    )
    service.get("/v1/vehicles/veh_1").mock(return_value=httpx.Response(200, json={"id": "veh_1"}))
    with caplog.at_level(logging.WARNING, logger="fundpipe.client"):
        assert (await client.get_vehicle("veh_1")).id == "veh_1"
    assert "retry 1 in 4.00 s" in caplog.text


async def test_retries_are_logged_with_their_cause_and_wait(client, service, caplog):
    service.get("/v1/vehicles/veh_1").mock(
        side_effect=[httpx.ReadTimeout("slow"), httpx.Response(200, json={"id": "veh_1"})]
    )
    with caplog.at_level(logging.DEBUG, logger="fundpipe.client"):
        await client.get_vehicle("veh_1")
    assert "GET /v1/vehicles/veh_1 failed (ReadTimeout); retry 1 in" in caplog.text
    assert "GET /v1/vehicles/veh_1 -> 200 (request_id=None, attempt 2," in caplog.text


async def test_a_429_slows_the_shared_rate_once_and_it_recovers():
    vt = VirtualTime()
    gate = RateGate(
        rate_per_s=100, max_concurrency=4, recovery_s=10, monotonic=vt.monotonic, sleep=vt.sleep
    )

    async def one() -> None:
        async with gate.slot():
            pass

    gate.penalize(1.0)
    assert gate.current_rate == pytest.approx(95)
    gate.penalize(1.0)  # another answer of the same burst: no second slowdown
    assert gate.current_rate == pytest.approx(95)
    assert gate.paused_for == pytest.approx(1.0)
    vt.now += 2
    gate.penalize(1.0)  # a new 429 after the pause
    assert gate.current_rate == pytest.approx(90.25)
    for _ in range(20):  # a request every 10 s without a 429: the rate climbs back
        vt.now += 10
        await vt.run(one())
    assert gate.current_rate == 100  # back to the configured rate, never above


def test_rate_gate_slots_follow_the_previous_slot_not_a_late_send():
    now = [100.0]
    gate = RateGate(rate_per_s=10, max_concurrency=8, monotonic=lambda: now[0])
    step = 0.1 + GUARD_MARGIN_S / 10  # 1/rate, stretched by the guard's margin
    assert gate.interval == pytest.approx(step)
    queued = [gate.take_slot() for _ in range(3)]  # three requests waiting at once
    assert queued == pytest.approx([100.0, 100.0 + step, 100.0 + 2 * step])
    now[0] = 100.0 + 2.5 * step  # the event loop lagged: they were all sent late...
    # ...and the next request keeps its place on the schedule instead of starting over
    assert gate.take_slot() == pytest.approx(100.0 + 3 * step)
    now[0] = 105.0  # after idle time no slot is banked: no burst
    assert [gate.take_slot() for _ in range(2)] == pytest.approx([105.0, 105.0 + step])


def test_rate_gate_guard_never_lets_bunched_slots_exceed_the_rate_over_a_window():
    now = [0.0]
    gate = RateGate(rate_per_s=4, max_concurrency=8, monotonic=lambda: now[0])
    sent: list[float] = []
    for _ in range(20):  # every send is attempted at once, as after a long stall
        delay = gate.guard_delay()
        now[0] += max(0.0, delay)
        assert gate.guard_delay() == 0.0
        gate.record_send()
        sent.append(now[0])
    for start in sent:  # at most 4 sends in any 1-s window (+ margin), wherever it starts
        assert sum(start <= t < start + 1.0 + GUARD_MARGIN_S for t in sent) <= 4
    assert sent[-1] == pytest.approx(4 * (1.0 + GUARD_MARGIN_S))  # no slower than that either


async def test_rate_gate_keeps_the_rate_when_the_event_loop_lags():
    def stalled(wake: float) -> float:
        # CPU work elsewhere in the loop: 100 ms stalls every 120 ms; a wake-up that falls in
        # a stall happens when the stall ends.
        into = (wake - 1000.0) % 0.12
        return wake - into + 0.1 if into < 0.1 else wake

    vt = VirtualTime(lag=stalled)
    gate = RateGate(rate_per_s=40, max_concurrency=8, monotonic=vt.monotonic, sleep=vt.sleep)
    sent: list[float] = []

    async def one() -> None:
        async with gate.slot():
            sent.append(vt.now)

    await vt.run(*(one() for _ in range(41)))
    # 40 intervals at 40/s: 1 s on schedule; a leaky bucket that lost the slots the stalls
    # delayed needs ~2.4 s. The guard: never more than 40 sends in any 1-s window.
    assert sent[-1] - sent[0] < 1.5
    assert all(sum(s <= t < s + 1.0 for t in sent) <= 40 for s in sent)
