"""Sandbox-only control routes under `/_sandbox/` (no auth, never rate-limited nor faulted).

Payloads (JSON; every field optional unless marked):
- `POST /_sandbox/reset` `{"seed": "demo"|"empty"}` (default demo) → `{"seed", "now"}`
- `GET /_sandbox/clock` → `{"now"}`
- `POST /_sandbox/clock/advance` `{"seconds"*}` → `{"now", "executed": [dst ids]}`
- `POST /_sandbox/clock/set` `{"now"*}` (ISO 8601; a plain time is UTC; only forward) → as advance
- `GET|PUT|DELETE /_sandbox/faults` `{"error_rate", "statuses", "retry_after_s", "latency_ms",
  "drop_after_commit_rate", "seed", "path_prefix", "org_id"}` → the current fault settings
  (`org_id`: fault only the requests naming that organization in `X-Organization-Id`)
- `GET|PUT /_sandbox/settings` `{"rate_limit_requests", "rate_limit_window_s",
  "token_lifetime_s", "legacy_pagination", "rate_limit_scope"}` → the current settings
  (`legacy_pagination`: lists in the older `has_more`-only form, see `fundpipe.sandbox._modes`;
  shown only when true; `rate_limit_scope`: `client` or `client_org`, the quota per client or per
  client and organization — a sandbox mode, see `SandboxConfig`; shown only when not `client`)
- `GET|DELETE /_sandbox/request_log` → `{"requests": [...]}` (see `fundpipe.sandbox._request_log`)
- `GET|DELETE /_sandbox/requests` → `{"total", "by_operation", "by_status"}`: the requests
  answered outside `/_sandbox/` since the start, the last reset or DELETE (429s included;
  operations as `METHOD /v1/path/{id}`); DELETE sets them back to zero
- `POST /_sandbox/clients` `{"client_id"*, "client_secret"*, "scopes", "organizations"}` → 201
  `{"client_id", "scopes", "organizations"}` (the secret is never echoed)
- `POST /_sandbox/organizations` `{"id", "name"*}` → 201 organization
- `POST /_sandbox/vehicles` `{"organization"*, "name"*, "depository_cents", "brokerage_cents"}`
  → 201 `{"vehicle", "financial_accounts": [depository, brokerage]}`
- `POST /_sandbox/bulk_financial_accounts` `{"organization"*, "vehicles"*,
  "accounts_per_vehicle"*}` → 201 `{"vehicles": [ids], "financial_accounts": count}`
- `POST /_sandbox/history` `{"vehicle"*, "entities", "distributions",
  "payments_per_distribution", "external_reference_prefix", "first_number", "amount_cents",
  "interval_s"}` → 201 counts and reference range (executed distributions in bulk; see
  `fundpipe.sandbox._history`)
- `PATCH /_sandbox/distribution_payments/{dpmt_id}` `{"amount", "status"}` → the payment
- `POST /_sandbox/distributions/{dst_id}/cancel` (no body) → the distribution, `cancelled` with
  `cancelled_at`, its non-terminal payments `cancelled`; 400 when it is already executed
- `PATCH /_sandbox/financial_accounts/{fa_id}` `{"total", "available",
  "total_end_of_last_month"}` → the account
Bad payloads get 400 with the usual error object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox._config import RATE_LIMIT_SCOPES
from fundpipe.sandbox._control_data import (
    bulk_financial_accounts,
    cancel_distribution,
    create_client,
    create_organization,
    create_vehicle,
    patch_account,
    patch_payment,
)
from fundpipe.sandbox._errors import ApiError, param
from fundpipe.sandbox._fields import Fields, read_payload
from fundpipe.sandbox._history import bulk_history
from fundpipe.sandbox._lifecycle import run_lifecycle
from fundpipe.sandbox._limits import FaultSettings
from fundpipe.sandbox._requests import json_response, sandbox_of
from fundpipe.timerules import TimeRuleError, parse_iso_datetime, render_utc

Endpoint = Callable[[Request], Awaitable[Response]]


async def reset(request: Request) -> Response:
    """POST /_sandbox/reset."""
    fields = Fields(await read_payload(request), {"seed"})
    seed = fields.string("seed") or "demo"
    if seed not in ("demo", "empty"):
        fields.problems.append(param("body.seed", "parameter_invalid", "demo or empty", seed))
    fields.check()
    sandbox = sandbox_of(request)
    sandbox.reset(seed)
    return json_response({"seed": seed, "now": render_utc(sandbox.now())})


async def get_clock(request: Request) -> Response:
    """GET /_sandbox/clock."""
    return json_response({"now": render_utc(sandbox_of(request).now())})


def _advance(request: Request, seconds: float) -> Response:
    sandbox = sandbox_of(request)
    with sandbox.store.write() as conn:
        before = sandbox.now_ts()
        try:
            sandbox.clock.advance(seconds)
        except (ValueError, OverflowError) as exc:
            raise ApiError(
                400,
                "The sandbox clock cannot move there.",
                "parameter_invalid",
                [param("body", "parameter_invalid", str(exc))],
            ) from None
        now = sandbox.now_ts()
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('clock_offset_s', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (repr(sandbox.clock.offset_s),),
        )
        executed = run_lifecycle(conn, before, now)
    return json_response({"now": render_utc(sandbox.now()), "executed": executed})


async def advance_clock(request: Request) -> Response:
    """POST /_sandbox/clock/advance `{"seconds"}`."""
    fields = Fields(await read_payload(request), {"seconds"})
    seconds = fields.number("seconds", 0, 100 * 365 * 86400, required=True)
    fields.check()
    assert seconds is not None
    return _advance(request, seconds)


async def set_clock(request: Request) -> Response:
    """POST /_sandbox/clock/set `{"now"}` (only forward)."""
    fields = Fields(await read_payload(request), {"now"})
    text = fields.string("now", required=True)
    fields.check()
    assert text is not None
    try:
        parsed = parse_iso_datetime(text)
    except TimeRuleError as exc:
        raise ApiError(
            400,
            "Invalid now.",
            "parameter_invalid",
            [param("body.now", "parameter_invalid", str(exc), text)],
        ) from None
    try:
        wall = parsed.wall if parsed.offset is None else parsed.wall - parsed.offset
        target = wall.replace(tzinfo=UTC).timestamp()
    except (OverflowError, ValueError):
        raise ApiError(
            400,
            "Invalid now.",
            "parameter_invalid",
            [param("body.now", "parameter_invalid", "out of range", text)],
        ) from None
    delta = target - sandbox_of(request).now_ts()
    if delta < 0:
        raise ApiError(
            400,
            "The sandbox clock only moves forward.",
            "parameter_invalid",
            [
                param(
                    "body.now",
                    "parameter_invalid",
                    "must not be before the current sandbox time",
                    text,
                )
            ],
        )
    return _advance(request, delta)


async def get_faults(request: Request) -> Response:
    """GET /_sandbox/faults."""
    return json_response(sandbox_of(request).faults.settings.as_dict())


async def put_faults(request: Request) -> Response:
    """PUT /_sandbox/faults."""
    body = await read_payload(request)
    fields = Fields(body, set(FaultSettings().as_dict()))
    defaults = FaultSettings()
    error_rate = fields.number("error_rate", 0, 1)
    statuses = body.get("statuses")
    if statuses is not None and (
        not isinstance(statuses, list)
        or not statuses
        or not all(type(s) is int and s in (408, 500, 502, 503, 429) for s in statuses)
    ):
        fields.problems.append(
            param(
                "body.statuses", "parameter_invalid", "a non-empty array of 500, 502, 503, 429, 408"
            )
        )
        statuses = None
    retry_after = fields.integer("retry_after_s", 1, 3600)
    latency = fields.integer("latency_ms", 0, 60_000)
    drop = fields.number("drop_after_commit_rate", 0, 1)
    seed = fields.integer("seed", -(2**63), 2**63 - 1)
    prefix = fields.string("path_prefix")
    org_id = fields.string("org_id")
    fields.check()
    settings = FaultSettings(
        error_rate=error_rate if error_rate is not None else defaults.error_rate,
        statuses=list(statuses) if statuses is not None else defaults.statuses,
        retry_after_s=retry_after if retry_after is not None else defaults.retry_after_s,
        latency_ms=latency if latency is not None else defaults.latency_ms,
        drop_after_commit_rate=drop if drop is not None else defaults.drop_after_commit_rate,
        seed=seed,
        path_prefix=prefix if prefix is not None else defaults.path_prefix,
        org_id=org_id,
    )
    sandbox_of(request).faults.configure(settings)
    return json_response(settings.as_dict())


async def delete_faults(request: Request) -> Response:
    """DELETE /_sandbox/faults."""
    sandbox = sandbox_of(request)
    sandbox.faults.clear()
    return json_response(sandbox.faults.settings.as_dict())


def _settings(request: Request) -> dict[str, Any]:
    sandbox = sandbox_of(request)
    out: dict[str, Any] = {
        "rate_limit_requests": sandbox.limiter.requests,
        "rate_limit_window_s": sandbox.limiter.window_s,
        "token_lifetime_s": sandbox.token_lifetime_s,
    }
    # Shown only when on: the settings of a sandbox in the current form read as they always did.
    if sandbox.legacy_pagination:
        out["legacy_pagination"] = True
    if sandbox.rate_limit_scope != "client":
        out["rate_limit_scope"] = sandbox.rate_limit_scope
    return out


async def get_settings(request: Request) -> Response:
    """GET /_sandbox/settings."""
    return json_response(_settings(request))


async def put_settings(request: Request) -> Response:
    """PUT /_sandbox/settings."""
    fields = Fields(
        await read_payload(request),
        {
            "rate_limit_requests",
            "rate_limit_window_s",
            "token_lifetime_s",
            "legacy_pagination",
            "rate_limit_scope",
        },
    )
    requests = fields.integer("rate_limit_requests", 1, 10_000_000)
    window = fields.number("rate_limit_window_s", 0.001, 86_400)
    lifetime = fields.integer("token_lifetime_s", 1, 10 * 365 * 86400)
    legacy = fields.boolean("legacy_pagination")
    scope = fields.string("rate_limit_scope")
    if scope is not None and scope not in RATE_LIMIT_SCOPES:
        fields.problems.append(
            param(
                "body.rate_limit_scope",
                "parameter_invalid",
                f"must be one of {', '.join(RATE_LIMIT_SCOPES)}",
                scope,
            )
        )
    fields.check()
    sandbox = sandbox_of(request)
    if requests is not None or window is not None:
        sandbox.limiter.configure(
            requests or sandbox.limiter.requests, window or sandbox.limiter.window_s
        )
    if lifetime is not None:
        sandbox.token_lifetime_s = lifetime
    if legacy is not None:
        sandbox.legacy_pagination = legacy
    if scope in RATE_LIMIT_SCOPES:
        sandbox.rate_limit_scope = "client_org" if scope == "client_org" else "client"
        sandbox.limiter.reset()
    return json_response(_settings(request))


async def get_requests(request: Request) -> Response:
    """GET /_sandbox/requests."""
    return json_response(sandbox_of(request).requests.as_dict())


async def delete_requests(request: Request) -> Response:
    """DELETE /_sandbox/requests."""
    counter = sandbox_of(request).requests
    counter.clear()
    return json_response(counter.as_dict())


async def get_request_log(request: Request) -> Response:
    """GET /_sandbox/request_log."""
    return json_response(sandbox_of(request).request_log.as_dict())


async def delete_request_log(request: Request) -> Response:
    """DELETE /_sandbox/request_log."""
    log = sandbox_of(request).request_log
    log.clear()
    return json_response(log.as_dict())


ROUTES: tuple[tuple[str, str, Endpoint], ...] = (
    ("POST", "/_sandbox/reset", reset),
    ("GET", "/_sandbox/clock", get_clock),
    ("POST", "/_sandbox/clock/advance", advance_clock),
    ("POST", "/_sandbox/clock/set", set_clock),
    ("GET", "/_sandbox/faults", get_faults),
    ("PUT", "/_sandbox/faults", put_faults),
    ("DELETE", "/_sandbox/faults", delete_faults),
    ("GET", "/_sandbox/settings", get_settings),
    ("PUT", "/_sandbox/settings", put_settings),
    ("GET", "/_sandbox/requests", get_requests),
    ("DELETE", "/_sandbox/requests", delete_requests),
    ("GET", "/_sandbox/request_log", get_request_log),
    ("DELETE", "/_sandbox/request_log", delete_request_log),
    ("POST", "/_sandbox/clients", create_client),
    ("POST", "/_sandbox/organizations", create_organization),
    ("POST", "/_sandbox/vehicles", create_vehicle),
    ("POST", "/_sandbox/bulk_financial_accounts", bulk_financial_accounts),
    ("POST", "/_sandbox/history", bulk_history),
    ("PATCH", "/_sandbox/distribution_payments/{dpmt_id}", patch_payment),
    ("POST", "/_sandbox/distributions/{dst_id}/cancel", cancel_distribution),
    ("PATCH", "/_sandbox/financial_accounts/{fa_id}", patch_account),
)


def register(app: FastAPI) -> None:
    """Add the control routes to `app`."""
    for method, path, endpoint in ROUTES:
        app.add_api_route(path, endpoint, methods=[method], include_in_schema=False)
