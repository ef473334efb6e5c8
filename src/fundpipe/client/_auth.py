"""OAuth 2.0 client credentials as an `httpx.Auth` flow.

- The token is fetched on first use (RFC 6749 §4.4: form `grant_type=client_credentials`, plus
  `scope` only when scopes are configured, client authenticated with HTTP Basic) from
  `<token host>/oauth/token`. An `invalid_scope` answer raises `InvalidScopeError` naming the
  scopes asked for and the one the operation needs.
- It is refreshed `leeway_s` before it expires (at most half its lifetime, so a short-lived token
  is not refetched on every request).
- Concurrent requests share one in-flight fetch: the fetch runs under an `asyncio.Lock`, and a
  request that waited for the lock uses the token the other one fetched.
- On a 401 the token is fetched again once and the request replayed once; a second 401 is
  returned to the client, which raises `AuthenticationError` (never retried).

The token and the secret never leave this object except in the `Authorization` header.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx

from fundpipe.client._error_map import error_from_response, request_id_of
from fundpipe.client._errors import ResponseDecodeError
from fundpipe.client._redact import redact
from fundpipe.client._retry import parse_retry_after
from fundpipe.client._scopes import invalid_scope_error, scope_for

logger = logging.getLogger("fundpipe.client")

#: Lifetime assumed when the token answer carries no `expires_in` (the interface's 3600 s).
DEFAULT_TOKEN_LIFETIME_S = 3600


@dataclass(frozen=True)
class _Token:
    value: str = ""
    refresh_at: datetime | None = None


class ClientCredentialsAuth(httpx.Auth):
    """Bearer tokens from the client-credentials grant, shared by all requests of one client."""

    def __init__(
        self,
        *,
        token_url: str,
        client_id: str,
        client_secret: str,
        scopes: str | None,
        leeway_s: float,
        clock: Callable[[], datetime],
    ) -> None:
        """Fetch tokens from `token_url` (the full endpoint URL) for these credentials."""
        self._token_url = token_url
        self._basic = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode(
            "ascii"
        )
        self._secret = client_secret
        self._scopes = scopes
        self._leeway_s = leeway_s
        self._clock = clock
        self._token = _Token()
        self._lock = asyncio.Lock()
        #: Number of token fetches that succeeded (observable in tests and logs).
        self.fetch_count = 0

    @property
    def known_secrets(self) -> tuple[str, ...]:
        """The literal secrets this flow holds (for the redaction function)."""
        return (self._secret, self._token.value)

    def _valid(self, token: _Token) -> bool:
        return (
            bool(token.value) and token.refresh_at is not None and self._clock() < token.refresh_at
        )

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        """Not supported: the client is async only."""
        msg = "ClientCredentialsAuth works with httpx.AsyncClient only"
        raise RuntimeError(msg)
        yield request  # pragma: no cover - makes this a generator

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Authorize `request`, fetching a token when needed; re-fetch and replay once on 401."""
        token = self._token
        if not self._valid(token):
            async with self._lock:
                token = self._token
                if not self._valid(token):
                    token_request = self._token_request()
                    token_response = yield token_request
                    token = await self._store(token_response, request)
        request.headers["Authorization"] = f"Bearer {token.value}"
        response = yield request
        if response.status_code != 401:
            return

        stale = token.value
        async with self._lock:
            token = self._token
            if token.value == stale:  # nobody refreshed it meanwhile
                token_response = yield self._token_request()
                token = await self._store(token_response, request)
        logger.info(
            "401 on %s %s: token re-fetched, request replayed once",
            request.method,
            request.url.path,
        )
        request.headers["Authorization"] = f"Bearer {token.value}"
        yield request

    def _token_request(self) -> httpx.Request:
        data = {"grant_type": "client_credentials"}
        if self._scopes:
            data["scope"] = self._scopes
        return httpx.Request(
            "POST",
            self._token_url,
            data=data,
            headers={"Authorization": self._basic, "Accept": "application/json"},
        )

    async def _store(self, response: httpx.Response, request: httpx.Request) -> _Token:
        await response.aread()
        if response.status_code != 200:
            error = error_from_response(
                response,
                retry_after=parse_retry_after(response.headers.get("retry-after"), self._clock()),
                secrets=(self._secret,),
            )
            rfc_error = error.error.get("error") if error.error else None
            if "invalid_scope" in (error.code, rfc_error):
                needed = scope_for(request.method, request.url.path)
                raise invalid_scope_error(error, self._scopes, needed)
            raise error
        try:
            payload = json.loads(response.content)
            value = payload["access_token"]
            if not isinstance(value, str) or not value:
                raise TypeError
            lifetime = float(payload.get("expires_in") or DEFAULT_TOKEN_LIFETIME_S)
        except (ValueError, KeyError, TypeError):
            raise ResponseDecodeError(
                "token endpoint answered 200 without a usable access_token",
                status=response.status_code,
                request_id=request_id_of(response),
                body=response.content,
            ) from None
        leeway = min(self._leeway_s, lifetime / 2)
        token = _Token(value=value, refresh_at=self._clock() + timedelta(seconds=lifetime - leeway))
        self._token = token
        self.fetch_count += 1
        logger.debug(
            "token fetched (fetch %d, lifetime %.0f s, refresh in %.0f s)",
            self.fetch_count,
            lifetime,
            lifetime - leeway,
        )
        return token

    def __repr__(self) -> str:
        """No secrets in the representation."""
        return str(redact(f"ClientCredentialsAuth(token_url={self._token_url!r})"))
