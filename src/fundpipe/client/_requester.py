"""The request chain behind `FundClient`: auth, rate gate, retries, decoding, pagination.

One `Requester` per client. `send` runs one logical request: the stamina retry loop around
attempts, each attempt waiting for the shared `RateGate`, authorized by the client-credentials
flow, logged (method, path, status, request id, attempt, latency; never a secret) and turned
into a typed error when the answer is not a success; a success is decoded by
`fundpipe.client._answers`. Longer than ~400 lines: one class, the chain every operation's
request goes through (sending, creates, pages), kept whole so that no step of it is skipped.
"""

from __future__ import annotations

import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from fundpipe import __version__
from fundpipe.client._answers import (
    CreatedDistribution,
    distribution_ids_of_list,
    ids_of_list,
    json_of,
    list_envelope,
    parse_list,
    parse_record,
)
from fundpipe.client._auth import ClientCredentialsAuth
from fundpipe.client._config import ClientConfig
from fundpipe.client._error_map import error_from_response, request_id_of
from fundpipe.client._errors import (
    ConfigurationError,
    PermissionDeniedError,
    RateLimitError,
    ResponseDecodeError,
    ServiceConnectionError,
)
from fundpipe.client._idempotency import (
    CanonicalBody,
    dumps_plain,
    key_of_canonical,
    to_json_value,
)
from fundpipe.client._pagination import PageAnswer, Paginator, trace_sent
from fundpipe.client._ratelimit import RateGate
from fundpipe.client._redact import account_numbers, redact
from fundpipe.client._retry import (
    RETRYABLE_TRANSPORT_ERRORS,
    Outage,
    RetryPolicy,
    Timer,
    parse_retry_after,
    reason_of,
    retrying,
)
from fundpipe.client._scopes import missing_scope_error, scope_for
from fundpipe.client._urls import check_url, token_endpoint

logger = logging.getLogger("fundpipe.client")

M = TypeVar("M", bound=BaseModel)

#: Literal secrets to scrub from an error's message, or a function that finds them on demand.
Secrets = tuple[str, ...] | Callable[[], tuple[str, ...]]


def _path_of(url: str) -> str:
    """The path of `url` for log lines; no URL parsing for the common plain relative path."""
    if url.startswith("/") and "%" not in url and "#" not in url:
        return url.partition("?")[0]
    return httpx.URL(url).path


def _body_secrets(content: bytes) -> tuple[str, ...]:
    """The account numbers and wire details of a JSON request body (for error messages)."""
    return account_numbers(json.loads(content))


class Requester:
    """Everything between a typed operation and the network, for one client."""

    def __init__(
        self,
        settings: ClientConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], datetime] | None = None,
        rate_gate: RateGate | None = None,
        timer: Timer | None = None,
    ) -> None:
        """Check `settings` and build the HTTP client (no network I/O); `timer`: the retry clock."""
        if not settings.base_url:
            msg = (
                "no service configured (FUNDPIPE_BASE_URL is unset): start the embedded sandbox "
                "and pass settings.with_service(url)"
            )
            raise ConfigurationError(msg)
        if not settings.client_id or settings.client_secret is None:
            msg = "FUNDPIPE_CLIENT_ID and FUNDPIPE_CLIENT_SECRET are required"
            if settings.client_secret_block:
                msg += " (the entry point loads the Prefect Secret block it names first)"
            raise ConfigurationError(msg)
        injected = transport is not None
        base_url = check_url("FUNDPIPE_BASE_URL", settings.base_url, transport_injected=injected)
        token_url = check_url(
            "FUNDPIPE_TOKEN_URL",
            settings.effective_token_url or settings.base_url,
            transport_injected=injected,
        )
        self.settings = settings
        policy = settings.http
        self._clock = clock or (lambda: datetime.now(UTC))
        self.auth = ClientCredentialsAuth(
            token_url=token_endpoint(str(token_url)),
            client_id=settings.client_id,
            client_secret=settings.client_secret.get_secret_value(),
            scopes=settings.scopes,
            leeway_s=policy.token_leeway_s,
            clock=self._clock,
        )
        self.gate = rate_gate or RateGate(policy.rate_limit_per_s, policy.max_concurrency)
        self.timer = timer or Timer()
        #: The outages this client rode out or gave up on (see `Outage`), for the run summary.
        self.outages: list[Outage] = []
        self._retry = RetryPolicy.of(policy)
        headers = {
            "Accept": "application/json",
            "User-Agent": f"fundpipe/{__version__} httpx/{httpx.__version__}",
        }
        if settings.org_id:
            headers["X-Organization-Id"] = settings.org_id
        verify: ssl.SSLContext | bool = True
        if policy.ca_bundle is not None:
            verify = ssl.create_default_context(cafile=str(policy.ca_bundle))
        self.http = httpx.AsyncClient(
            base_url=base_url,
            auth=self.auth,
            headers=headers,
            timeout=httpx.Timeout(
                policy.read_timeout_s,
                connect=policy.connect_timeout_s,
                pool=policy.read_timeout_s,
            ),
            limits=httpx.Limits(
                max_connections=policy.max_concurrency,
                max_keepalive_connections=policy.max_concurrency,
            ),
            http1=True,
            http2=False,
            verify=verify,
            transport=transport,
            follow_redirects=False,
        )
        self._base_url = base_url
        # the client's base URL as text, ending in "/": a plain relative path is joined to it
        # as text (`_absolute`), not merged by httpx, which parses it twice a request
        base = self.http.base_url
        self._base_text = None if base.query or base.fragment else str(base).rstrip("/") + "/"

    async def __aenter__(self) -> None:
        """Open the HTTP client."""
        await self.http.__aenter__()

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self.http.aclose()

    # --- the request chain --------------------------------------------------------------------

    def _log(self, level: int, msg: str, *args: Any) -> None:
        if logger.isEnabledFor(level):
            secrets = self.auth.known_secrets
            logger.log(level, msg, *(redact(a, secrets) for a in args))

    async def _attempt(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None,
        content: bytes | None,
        headers: Mapping[str, str],
        attempt: int,
        secrets: Secrets,
        on_sent: Callable[[], None] | None = None,
    ) -> httpx.Response:
        async with self.gate.slot():
            started = time.perf_counter()
            try:
                response = await self.http.request(
                    method,
                    self._absolute(url),
                    params=params,
                    content=content,
                    headers=headers,
                    extensions={"trace": trace_sent(on_sent)} if on_sent else None,
                )
            except httpx.TransportError as exc:
                path = httpx.URL(url).path
                self._log(
                    logging.INFO,
                    "%s %s -> %s (attempt %d, %.0f ms)",
                    method,
                    path,
                    type(exc).__name__,
                    attempt,
                    (time.perf_counter() - started) * 1000,
                )
                # Our own exception (redacted text, raw httpx error as __cause__), so that no
                # logger of the retry machinery renders the transport's message unredacted.
                text = redact(
                    f"{method} {path}: {type(exc).__name__}: {exc}", self.auth.known_secrets
                )
                failure = ServiceConnectionError(str(text), attempt=attempt)
                failure.retryable = isinstance(exc, RETRYABLE_TRANSPORT_ERRORS)
                raise failure from exc
        latency_ms = (time.perf_counter() - started) * 1000
        request_id = request_id_of(response)
        replayed = response.headers.get("idempotent-replayed") == "true"
        self._log(
            logging.DEBUG if response.is_success else logging.INFO,
            "%s %s -> %d (request_id=%s, attempt %d, %.0f ms%s)",
            method,
            response.request.url.path,
            response.status_code,
            request_id,
            attempt,
            latency_ms,
            ", idempotent replay" if replayed else "",
        )
        if response.is_success:
            return response
        retry_after = parse_retry_after(response.headers.get("retry-after"), self._clock())
        known = secrets() if callable(secrets) else secrets
        error = error_from_response(
            response, retry_after=retry_after, secrets=known + self.auth.known_secrets
        )
        if isinstance(error, PermissionDeniedError):
            error = missing_scope_error(
                error,
                scope_for(method, response.request.url.path),
                response.headers.get("www-authenticate"),
            )
        if isinstance(error, RateLimitError):
            # Every request of this client waits, not only the one that was refused.
            pause = retry_after if retry_after is not None else self._retry.jitter(attempt)
            self.gate.penalize(min(pause, self._retry.retry_after_cap_s))
        raise error

    def _absolute(self, url: str) -> str:
        """``url`` joined to the base URL as httpx joins a relative one (the base's path, then
        the url's without its leading "/"); anything but a plain path is left to httpx."""
        if (
            self._base_text is not None
            and url.startswith("/")
            and not url.startswith("//")
            and "%" not in url
            and "#" not in url
        ):
            return self._base_text + url[1:]
        return url

    def _on_retry(self, method: str, path: str) -> Callable[[BaseException, int, float], None]:
        def log_retry(exc: BaseException, retry_number: int, delay: float) -> None:
            """Log a retry: method, path, cause, retry number and wait."""
            reason = reason_of(exc)
            self._log(
                logging.WARNING,
                "%s %s failed (%s); retry %d in %.2f s",
                method,
                path,
                reason,
                retry_number,
                delay,
            )

        return log_retry

    async def send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: Secrets = (),
        on_sent: Callable[[], None] | None = None,
    ) -> httpx.Response:
        """Send one request, retried as `fundpipe.client._retry.retrying` says (outages are
        recorded in `outages`); the successful response, or a typed error. `on_sent` is called
        each time the request has been written to the connection. `secrets`: literal values
        scrubbed from an error's message, or a function that finds them (called only when an
        answer is an error, so a success never pays for the search)."""
        path = _path_of(url)

        def attempt(number: int) -> Awaitable[httpx.Response]:
            return self._attempt(
                method,
                url,
                params=params,
                content=content,
                headers=headers or {},
                attempt=number,
                secrets=secrets,
                on_sent=on_sent,
            )

        return await retrying(
            attempt,
            self._retry,
            self.timer,
            self.outages,
            what=(method, path),
            on_retry=self._on_retry(method, path),
        )

    #: `data` as a `model`, or the error (`fundpipe.client._answers.parse_record`).
    parse = staticmethod(parse_record)

    async def get_object(self, path: str, model: type[M]) -> M:
        """GET one record at `path` as a `model`."""
        response = await self.send("GET", path)
        return parse_record(model, json_of(response), response)

    async def create(
        self,
        path: str,
        body: Any,
        model: type[M],
        idempotency_key_: str | None,
    ) -> list[M]:
        """POST a create body (list) with a derived or given Idempotency-Key; the created records."""
        response = await self._post_create(path, body, idempotency_key_)
        return parse_list(model, response, f"POST {path}")

    async def create_ids(self, path: str, body: Any, idempotency_key_: str | None) -> list[str]:
        """As `create`, but only the ids of the records answered (no record validated)."""
        response = await self._post_create(path, body, idempotency_key_)
        return ids_of_list(response, f"POST {path}")

    async def create_distribution_ids(
        self, path: str, body: Any, idempotency_key_: str | None
    ) -> list[CreatedDistribution]:
        """As `create` for distributions, but read for their ids and references only."""
        response = await self._post_create(path, body, idempotency_key_)
        return distribution_ids_of_list(response, f"POST {path}")

    async def _post_create(
        self, path: str, body: Any, idempotency_key_: str | None
    ) -> httpx.Response:
        if isinstance(body, CanonicalBody) and body:
            text = body.text  # made once, when the plan resolved the request
        else:
            json_body = to_json_value(body)
            if not isinstance(json_body, list) or not json_body:
                msg = "a create takes a non-empty list of elements"
                raise ValueError(msg)
            text = dumps_plain(json_body)
            del json_body  # not held while the request is in flight (a big body: ~1 MB)
        key = idempotency_key_ or key_of_canonical(self.settings.org_id, "POST", path, text)
        content = text.encode("ascii")
        del text
        response = await self.send(
            "POST",
            path,
            content=content,
            headers={"Content-Type": "application/json", "Idempotency-Key": key},
            # the body's account numbers, looked for only when an error message could show them
            secrets=partial(_body_secrets, content),
        )
        del content
        return response

    def _resolve_page_url(self, url: str) -> str:
        target = httpx.URL(url)
        if target.is_absolute_url:
            same_origin = (target.scheme, target.host, target.port) == (
                self._base_url.scheme,
                self._base_url.host,
                self._base_url.port,
            )
            if not same_origin:
                # The bearer token must never be sent to a host named by a response.
                msg = f"pagination URL points to another origin: {target.host}"
                raise ResponseDecodeError(msg, status=200, request_id=None, body=b"")
            base_path = self._base_url.raw_path.decode("ascii").rstrip("/")
            relative = target.raw_path.decode("ascii")
            if base_path and relative.startswith(base_path + "/"):
                relative = relative[len(base_path) :]
            return relative
        return url

    async def fetch_page(self, url: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """GET one list page (relative URL or same-origin absolute URL) as its JSON object."""
        return (await self.fetch_answer(url, params)).decode()

    async def fetch_answer(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        on_sent: Callable[[], None] | None = None,
    ) -> PageAnswer:
        """GET one list page, not yet decoded (see `iter_raw_pages_ahead`); `on_sent` is
        called once the request is on the wire."""
        target = self._resolve_page_url(url)
        if params and "?" in target:
            # httpx's `params=` would replace the cursor URL's query: merge instead.
            target = str(httpx.URL(target).copy_merge_params(dict(params)))
            params = None
        response = await self.send("GET", target, params=params, on_sent=on_sent)

        what = f"GET {response.request.url.path}"
        return PageAnswer(response.content, lambda: list_envelope(response, what))

    def paginate(
        self, path: str, model: type[M], params: Mapping[str, Any] | None = None
    ) -> Paginator[M]:
        """A lazy `Paginator` over the list at `path`, records parsed as `model`."""
        return Paginator(self.fetch_page, path, params, lambda item: parse_record(model, item))
