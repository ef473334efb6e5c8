"""The ASGI app: routes, one error object everywhere, request ids, injected faults and drops."""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fundpipe.sandbox import _control, _routes
from fundpipe.sandbox._config import SandboxConfig
from fundpipe.sandbox._errors import ApiError, error_body, param
from fundpipe.sandbox._requests import dumps, error_response, request_id_of
from fundpipe.sandbox._state import Sandbox

log = logging.getLogger("fundpipe.sandbox")


class SimulatedDisconnect(httpx.RemoteProtocolError):
    """The sandbox dropped the connection after committing (fault `drop_after_commit_rate`).

    In-process (ASGI transport) the client sees this exception; over real HTTP the connection is
    closed mid-response and the client sees its own transport error.
    """


class SandboxMiddleware:
    """Outermost layer: request id on every response, request counts, injected errors, drops, and
    the 500 net."""

    def __init__(self, app: ASGIApp, sandbox: Sandbox) -> None:
        """Wrap `app` for `sandbox`."""
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = "req_" + secrets.token_hex(12)
        scope.setdefault("state", {})["request_id"] = rid
        path: str = scope["path"]
        faults = self.sandbox.faults
        org = _header(scope, b"x-organization-id")
        began = time.time()
        status = 0
        requests = self.sandbox.request_log
        try:
            injected = faults.error_status(path, org)
            if injected is not None:
                status = injected
                await self._send_error(send, rid, self._fault(injected))
                return
            status = await self._serve(scope, receive, send, rid, org)
        finally:
            if requests.logs(path):
                requests.record(began, org, scope["method"], path, status)
            if status:
                self.sandbox.requests.count(scope["method"], path, status)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, rid: str, org: str | None
    ) -> int:
        """Run the app; return the status answered (0 when the connection was dropped first)."""
        path: str = scope["path"]
        faults = self.sandbox.faults
        started = False
        status = 0
        is_post = scope["method"] == "POST"

        async def send_with_id(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                headers = MutableHeaders(scope=message)
                if "request-id" not in headers:
                    headers["Request-Id"] = rid
                if is_post and message["status"] == 201 and faults.drop(path, org):
                    await send(message)
                    raise SimulatedDisconnect("sandbox dropped the connection after committing")
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except SimulatedDisconnect:
            raise
        except Exception:
            log.exception("internal error (request %s)", rid)
            if started:
                raise
            status = 500
            await self._send_error(
                send,
                rid,
                ApiError(500, "Internal error; quote the request_id to support.", "internal_error"),
            )
        return status

    @staticmethod
    def _fault(status: int) -> ApiError:
        if status == 429:
            return ApiError(
                429,
                "Rate limit exceeded (injected).",
                "rate_limit_exceeded",
                headers={"Retry-After": "1"},
            )
        if status == 408:
            return ApiError(408, "Request timeout (injected).", "request_timeout")
        if status == 502:
            return ApiError(502, "Upstream service unavailable (injected).", "bad_gateway")
        return ApiError(status, "Internal error (injected).", "internal_error")

    async def _send_error(self, send: Send, rid: str, err: ApiError) -> None:
        if err.status == 429 and "Retry-After" in err.headers:
            err.headers["Retry-After"] = str(self.sandbox.faults.settings.retry_after_s)
        body = dumps(error_body(err.status, err.message, rid, code=err.code, params=err.params))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"request-id", rid.encode()),
            *((k.lower().encode(), v.encode()) for k, v in err.headers.items()),
        ]
        await send({"type": "http.response.start", "status": err.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(request_id_of(request), exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    rid = request_id_of(request)
    if exc.status_code == 404:
        err = ApiError(404, f"No route {request.url.path}.", "resource_not_found")
    elif exc.status_code == 405:
        err = ApiError(
            405, f"Method {request.method} is not allowed on {request.url.path}.", "not_implemented"
        )
        err.headers["Allow"] = ", ".join(_allowed_methods(request))
    else:
        err = ApiError(exc.status_code, str(exc.detail))
    return error_response(rid, err)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (routes are one per method)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "\x00"})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = [
        param(
            ".".join(str(p) for p in e.get("loc", ())),
            "parameter_invalid",
            str(e.get("msg", "invalid")),
        )
        for e in exc.errors()
    ]
    return error_response(
        request_id_of(request), ApiError(400, "Invalid request.", "parameter_invalid", problems)
    )


def create_app(config: SandboxConfig | None = None) -> FastAPI:
    """The sandbox's ASGI app (state opened, seeded when new, clock restored)."""
    config = config or SandboxConfig()
    sandbox = Sandbox(config)
    app = FastAPI(
        title="Fund Distribution Service (sandbox)",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.sandbox = sandbox
    _routes.register(app, strict_interface=config.strict_interface)
    if config.control_routes:
        _control.register(app)
    handlers: dict[Any, Any] = {
        ApiError: _api_error,
        StarletteHTTPException: _http_error,
        RequestValidationError: _validation_error,
    }
    for kind, handler in handlers.items():
        app.add_exception_handler(kind, handler)
    app.add_middleware(SandboxMiddleware, sandbox=sandbox)
    return app


def _header(scope: Scope, name: bytes) -> str | None:
    """The value of request header `name` (lower case), or None."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1").strip() or None
    return None
