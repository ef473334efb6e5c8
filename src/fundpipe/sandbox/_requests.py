"""What every API request goes through: authentication, rate limit, scope, organization, body
limits, idempotency and injected latency — in that order — and how responses are rendered.

Idempotency (per client, organization and key; 24 h on the sandbox clock): a key still in
flight → 409 `conflict`; a stored key with another fingerprint (method, path, canonical body) →
422 `idempotency_mismatch`; the same → the stored status and body again with
`Idempotent-Replayed: true`. Successful creates store their record in the same transaction as
the created rows; 4xx answers (but 408 and 429) are stored afterwards; 5xx never.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from fundpipe.sandbox._auth import Principal, authenticate, require_scope, resolve_organization
from fundpipe.sandbox._errors import ApiError, error_body, param
from fundpipe.sandbox._state import Sandbox

RETENTION_S = 24 * 3600
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def sandbox_of(request: Request) -> Sandbox:
    """The sandbox state behind the app serving `request`."""
    state: Sandbox = request.app.state.sandbox
    return state


def request_id_of(request: Request) -> str:
    """The id the middleware gave this request."""
    return str(request.scope.get("state", {}).get("request_id", "req_unknown"))


def dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON bytes.

    orjson first (a 100 × 10 create answers ~650 kB: ~1 ms instead of ~11 ms); the standard
    library for what orjson refuses (integers past 64 bits, non-string keys, lone surrogates),
    so every payload encodes, or fails, as it did with the standard library alone.
    """
    try:
        return orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON response."""
    return Response(dumps(payload), status, headers=headers, media_type="application/json")


def error_response(request_id: str, err: ApiError) -> Response:
    """The error object for `err`, with its headers."""
    body = error_body(
        err.status, err.message, request_id, code=err.code, params=err.params, extra=err.extra
    )
    return json_response(body, err.status, {**err.headers, "Request-Id": request_id})


@dataclass(frozen=True, slots=True)
class Call:
    """An authorized API call: who, for which organization, at what sandbox time."""

    sandbox: Sandbox
    principal: Principal
    org: str
    now_ts: float


async def authorize(
    request: Request,
    scope: str,
    *,
    needs_org: bool = True,
    query: frozenset[str] = frozenset(),
) -> Call:
    """Authenticate, rate-limit, check the scope, resolve the organization, and refuse query
    parameters outside `query` (400 `parameter_unknown`, `query.<name>`)."""
    sandbox = sandbox_of(request)
    now_ts = sandbox.now_ts()
    principal: Principal | None = None
    failure: ApiError | None = None
    with sandbox.store.read() as conn:
        try:
            principal = authenticate(conn, request.headers.get("authorization"), now_ts)
        except ApiError as exc:
            failure = exc
    host = request.client.host if request.client else "unknown"
    org_header = request.headers.get("x-organization-id")
    limit_key = (
        sandbox.limit_key(principal.client_id, org_header) if principal else f"anonymous:{host}"
    )
    retry_after = sandbox.limiter.check(limit_key)
    if retry_after is not None:
        raise ApiError(
            429,
            "Rate limit exceeded: retry after the number of seconds in Retry-After.",
            "rate_limit_exceeded",
            headers={"Retry-After": str(retry_after)},
        )
    if failure is not None:
        failure.headers.setdefault("WWW-Authenticate", 'Bearer realm="fund-distribution-service"')
        raise failure
    assert principal is not None
    require_scope(principal, scope)
    header = request.headers.get("x-organization-id")
    if needs_org:
        org = resolve_organization(principal, header)
    else:
        org = header or (principal.organizations[0] if principal.organizations else "")
        if header is not None:
            resolve_organization(principal, header)
    unknown = [name for name in dict.fromkeys(request.query_params.keys()) if name not in query]
    if unknown:
        raise ApiError(
            400,
            "Unknown query parameter.",
            "parameter_unknown",
            [
                param(f"query.{name}", "parameter_unknown", f"unknown parameter {name}")
                for name in unknown
            ],
        )
    latency = sandbox.faults.latency_s(request.url.path, request.headers.get("x-organization-id"))
    if latency and request.method == "GET":
        await asyncio.sleep(latency)
    return Call(sandbox, principal, org, now_ts)


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing more than `limit` bytes with 413."""
    declared = request.headers.get("content-length")
    too_big = ApiError(
        413,
        f"The request body is larger than {limit} bytes.",
        "parameter_invalid",
        [param("body", "parameter_invalid", f"at most {limit} bytes")],
    )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_big
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        parts.append(chunk)
    return b"".join(parts)


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


def parse_json(raw: bytes) -> Any:
    """Decode a JSON body; 400 (`name` = `body`) when it is empty or malformed."""
    return decode_body(raw)[0]


def decode_body(raw: bytes) -> tuple[Any, bool]:
    """`parse_json`, also telling whether the body holds any JSON number with a fraction or an
    exponent (the fingerprint's fast path is only for bodies without)."""
    floats = False

    def on_float(text: str) -> float:
        nonlocal floats
        floats = True
        return float(text)

    if not raw.strip():
        raise ApiError(
            400,
            "The request body is empty.",
            "parameter_missing",
            [param("body", "parameter_missing", "a JSON array is required")],
        )
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=on_float)
        if _SURROGATE.search(raw):
            # A lone surrogate escape decodes to a string that cannot be stored or echoed.
            json.dumps(value, ensure_ascii=False).encode()
    except (ValueError, RecursionError) as exc:
        reason = (
            "malformed JSON" if not isinstance(exc, RecursionError) else "JSON nested too deeply"
        )
        raise ApiError(
            400,
            "The request body is not valid JSON.",
            "parameter_invalid",
            [param("body", "parameter_invalid", reason)],
        ) from None
    return value, floats


_UNPARSED = object()


def _canonical(value: Any, has_float: bool) -> bytes:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"))` as bytes.

    orjson gives the very same bytes when the value holds no float (their spellings differ,
    e.g. `1e+16` / `1e16`) and its output is plain ASCII without a backslash or DEL (so no
    string needed escaping, which the two encoders spell differently); anything else, and
    whatever orjson refuses (integers past 64 bits), goes through the standard library.
    """
    if not has_float:
        try:
            fast = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            if fast.isascii() and b"\\" not in fast and b"\x7f" not in fast:
                return fast
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def fingerprint(
    method: str, path: str, raw: bytes, parsed: Any = _UNPARSED, *, has_float: bool = True
) -> str:
    """Hash of method, path and canonical body (key order and whitespace do not matter).

    `parsed` is `raw` already decoded (saves decoding it again) and `has_float` whether it
    holds a float (see `decode_body`); the hash is the same either way.
    """
    try:
        if parsed is _UNPARSED:
            canonical = _canonical(json.loads(raw), True)
        else:
            canonical = _canonical(parsed, has_float)
    except (ValueError, RecursionError):
        canonical = raw
    digest = hashlib.sha256()
    for part in (method.encode(), b"\n", path.encode(), b"\n", canonical):
        digest.update(part)
    return digest.hexdigest()


def _store_record(
    conn: sqlite3.Connection,
    ikey: tuple[str, str, str],
    fp: str,
    status: int,
    body: bytes,
    now_ts: float,
) -> None:
    conn.execute(
        "INSERT INTO idempotency (client_id, org, key, fingerprint, status, body, created_ts) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (client_id, org, key) DO UPDATE SET "
        "fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body, "
        "created_ts = excluded.created_ts",
        (*ikey, fp, status, body.decode(), now_ts),
    )


#: A create handler: (call, parsed body, open transaction) → (status, payload).
Handler = Callable[[Call, Any, sqlite3.Connection], tuple[int, Any]]


async def mutate(request: Request, scope: str, handler: Handler) -> Response:
    """Run a mutating request through every check, the handler and idempotency."""
    call = await authorize(request, scope)
    sandbox = call.sandbox
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise ApiError(
            415,
            "Send the body as application/json.",
            "parameter_invalid",
            [
                param(
                    "header.Content-Type",
                    "parameter_invalid",
                    "must be application/json",
                    content_type,
                )
            ],
        )
    raw = await read_body(request, sandbox.config.max_body_bytes)
    key = request.headers.get("idempotency-key")
    if key == "" and sandbox.view.public:
        key = None  # the interface's "(string)": an empty key counts as none
    ikey: tuple[str, str, str] | None = None
    # Decoded once: the fingerprint and the handler share it; a decoding failure is answered
    # after the idempotency checks, as before.
    parse_error: ApiError | None = None
    has_float = True
    try:
        body, has_float = decode_body(raw)
    except ApiError as err:
        body, parse_error = _UNPARSED, err
    fp = fingerprint(request.method, request.url.path, raw, body, has_float=has_float)
    if key is not None:
        if not _KEY.fullmatch(key) and not sandbox.view.public:
            raise ApiError(
                400,
                "Invalid Idempotency-Key.",
                "parameter_invalid",
                [
                    param(
                        "header.Idempotency-Key",
                        "parameter_invalid",
                        "1 to 255 visible ASCII characters",
                    )
                ],
            )
        ikey = (call.principal.client_id, call.org, key)
        if not sandbox.claim(ikey):
            raise ApiError(
                409, "A request with this Idempotency-Key is still being processed.", "conflict"
            )
    try:
        if ikey is not None:
            replay = _lookup(sandbox, ikey, fp, call.now_ts)
            if replay is not None:
                return replay
        latency = sandbox.faults.latency_s(
            request.url.path, request.headers.get("x-organization-id")
        )
        if latency:
            await asyncio.sleep(latency)
        return _execute(request, call, handler, body, parse_error, ikey, fp)
    finally:
        if ikey is not None:
            sandbox.release(ikey)


def _lookup(
    sandbox: Sandbox, ikey: tuple[str, str, str], fp: str, now_ts: float
) -> Response | None:
    with sandbox.store.read() as conn:
        row = conn.execute(
            "SELECT fingerprint, status, body, created_ts FROM idempotency "
            "WHERE client_id = ? AND org = ? AND key = ?",
            ikey,
        ).fetchone()
    if row is None or row["created_ts"] + RETENTION_S <= now_ts:
        return None
    if row["fingerprint"] != fp:
        raise ApiError(
            422,
            "This Idempotency-Key was used with a different request; use a new key.",
            "idempotency_mismatch",
        )
    headers = {"Idempotent-Replayed": "true"}
    body = row["body"]
    if row["status"] >= 400:
        stored = json.loads(body)
        if isinstance(stored, dict) and isinstance(stored.get("request_id"), str):
            headers["Request-Id"] = stored["request_id"]
    return Response(body.encode(), row["status"], headers=headers, media_type="application/json")


def _execute(
    request: Request,
    call: Call,
    handler: Handler,
    body: Any,
    parse_error: ApiError | None,
    ikey: tuple[str, str, str] | None,
    fp: str,
) -> Response:
    sandbox = call.sandbox
    try:
        if parse_error is not None:
            raise parse_error
        with sandbox.store.write() as conn:
            status, payload = handler(call, body, conn)
            content = dumps(payload)
            if ikey is not None:
                _store_record(conn, ikey, fp, status, content, call.now_ts)
        return Response(content, status, media_type="application/json")
    except ApiError as err:
        response = error_response(request_id_of(request), err)
        if ikey is not None and err.status < 500 and err.status not in (408, 429):
            with sandbox.store.write() as conn:
                _store_record(conn, ikey, fp, err.status, bytes(response.body), call.now_ts)
        return response
