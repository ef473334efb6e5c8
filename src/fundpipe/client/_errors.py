"""The client's exception tree, built from the service's error object.

```
FundServiceError                      anything the client raises about the service
├── ConfigurationError                 settings that cannot work (no base URL, plain HTTP to a remote host)
├── ServiceConnectionError             no usable HTTP answer: connect/read timeout, dropped connection
├── ResponseDecodeError                a 2xx answer whose body is not the JSON the interface promises
└── APIError                           an HTTP error answer (status, code, message, request_id, ...)
    ├── InvalidRequestError            400 invalid_request_error (also 405, 413, 415)
    ├── AuthenticationError            401 authentication_error (token endpoint: invalid_client)
    ├── PermissionDeniedError          403 permission_error
    ├── NotFoundError                  404 not_found_error
    ├── RequestTimeoutError            408 request_timeout_error            retryable
    ├── ConflictError                  409 conflict_error, code `conflict`  retryable
    ├── IdempotencyMismatchError       code `idempotency_mismatch`, whatever the status: fatal
    ├── UnprocessableEntityError       422 unprocessable_entity_error (e.g. zone offset mismatch)
    ├── RateLimitError                 429 rate_limit_error                 retryable
    └── APIServerError                 5xx api_error                        retryable: 500/502/503/504
```

`error_from_response` is the one place that maps an answer to a class (`error_class_for`): the
code `idempotency_mismatch` first (the interface says 422, older public docs 409: we branch on
the code), then the transient statuses (5xx, 408, 429), then the error object's `type`, then the
HTTP status alone (for bodies that are not an error object, such as a
proxy's HTML 502 or an RFC 6749 token error). Every `APIError` keeps `status`, `type`, `code`,
`message`, `request_id`, `invalid_params`, `doc_url`, `retry_after` (seconds, when the answer
carried `Retry-After`), the parsed `error` object (or None) and the raw `body` bytes; the raw body
is never rendered by `str()` or `repr()`, and messages pass through the redaction function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from fundpipe.client._redact import redact

#: HTTP statuses of server errors that are safe and useful to retry.
RETRYABLE_SERVER_STATUSES = frozenset({500, 502, 503, 504})


class FundServiceError(Exception):
    """Base of every error the client raises about the Fund Distribution Service."""

    #: Whether the client's retry policy may try the same request again.
    retryable: bool = False


class ConfigurationError(FundServiceError):
    """The client's settings cannot work (missing base URL or credentials, insecure URL)."""


class ServiceConnectionError(FundServiceError):
    """No usable HTTP answer arrived (connect error, timeout, connection dropped mid-answer).

    Raised after the retry policy gave up; `__cause__` holds the underlying httpx error and
    `attempt` the number of the attempt that failed last.
    """

    retryable = True

    def __init__(self, message: str, *, attempt: int = 1) -> None:
        """A redacted description of the failure and the attempt it happened on."""
        super().__init__(redact(message))
        self.attempt = attempt


class ResponseDecodeError(FundServiceError):
    """A successful answer whose body is not valid JSON of the expected shape."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        request_id: str | None,
        body: bytes,
        secrets: tuple[str, ...] = (),
    ) -> None:
        """Keep the status, request id and raw body (the body is never rendered)."""
        super().__init__(redact(message, secrets))
        self.status = status
        self.request_id = request_id
        self.body = body


@dataclass(frozen=True)
class InvalidParam:
    """One entry of the error object's `invalid-params`."""

    code: str
    name: str
    reason: str
    value: Any = None
    conflicts_with: str | None = None


class APIError(FundServiceError):
    """The service (or a proxy in front of it) answered with an HTTP error status."""

    #: The error object's `type` this class stands for (None for status-only classes).
    error_type: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str | None = None,
        code: str | None = None,
        request_id: str | None = None,
        doc_url: str | None = None,
        invalid_params: tuple[InvalidParam, ...] = (),
        retry_after: float | None = None,
        error: dict[str, Any] | None = None,
        body: bytes = b"",
        secrets: tuple[str, ...] = (),
    ) -> None:
        """Build the error from the fields of the service's error object.

        `secrets` are literal values (e.g. account numbers of the request) scrubbed from the
        message wherever the service echoed them.
        """
        self._secrets = secrets
        self.message = redact(message, secrets)
        self.status = status
        self.type = type
        self.code = code
        self.request_id = request_id
        self.doc_url = doc_url
        self.invalid_params = invalid_params
        self.retry_after = retry_after
        self.error = error
        self.body = body
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [f"{self.status}"]
        if self.code:
            parts.append(self.code)
        text = f"[{' '.join(parts)}] {self.message}"
        for param in self.invalid_params:
            text += f"; {param.name}: {param.reason}"
        if self.request_id:
            text += f" (request_id={self.request_id})"
        return str(redact(text, self._secrets))

    def __repr__(self) -> str:
        """Class, status, code and request id; never the body."""
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"request_id={self.request_id!r})"
        )


class InvalidRequestError(APIError):
    """400 (and 405/413/415): the request is malformed or a parameter is invalid."""

    error_type = "invalid_request_error"


class AuthenticationError(APIError):
    """401: missing, invalid or expired credentials (after the one transparent re-fetch)."""

    error_type = "authentication_error"


class PermissionDeniedError(APIError):
    """403: the token lacks a scope or access to the organization."""

    error_type = "permission_error"


class NotFoundError(APIError):
    """404: no such resource (or route)."""

    error_type = "not_found_error"


class RequestTimeoutError(APIError):
    """408: the service timed the request out; retried with the same Idempotency-Key."""

    error_type = "request_timeout_error"
    retryable = True


class ConflictError(APIError):
    """409 `conflict`: the same Idempotency-Key is still being processed; retried."""

    error_type = "conflict_error"

    def __init__(self, message: str, **kwargs: Any) -> None:
        """A 409 is retryable when its code is `conflict` (or absent, e.g. a proxy body)."""
        super().__init__(message, **kwargs)
        self.retryable = self.code in (None, "conflict")


class IdempotencyMismatchError(APIError):
    """The Idempotency-Key was used before with a different request: never retried.

    The interface answers 422, older public docs 409; the class is chosen by the code.
    """

    error_type = None


class UnprocessableEntityError(APIError):
    """422: the request is well formed but cannot be processed (e.g. a zone offset mismatch)."""

    error_type = "unprocessable_entity_error"


class RateLimitError(APIError):
    """429: over the rate limit; `retry_after` says when the window resets. Retried."""

    error_type = "rate_limit_error"
    retryable = True


class APIServerError(APIError):
    """5xx: the service or a gateway failed; 500, 502, 503 and 504 are retried."""

    error_type = "api_error"

    def __init__(self, message: str, **kwargs: Any) -> None:
        """Retryable only for the transient statuses 500, 502, 503 and 504."""
        super().__init__(message, **kwargs)
        self.retryable = self.status in RETRYABLE_SERVER_STATUSES


_BY_TYPE: dict[str, type[APIError]] = {
    cls.error_type: cls
    for cls in (
        InvalidRequestError,
        AuthenticationError,
        PermissionDeniedError,
        NotFoundError,
        RequestTimeoutError,
        ConflictError,
        UnprocessableEntityError,
        RateLimitError,
        APIServerError,
    )
    if cls.error_type
}
_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: InvalidRequestError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def request_id_of(response: httpx.Response) -> str | None:
    """The service's request id of an answer (`Request-Id` or `X-Request-Id` header)."""
    value: str | None = response.headers.get("request-id") or response.headers.get("x-request-id")
    return value


def error_class_for(status: int, error_type: str | None, code: str | None) -> type[APIError]:
    """The exception class for an error answer.

    The code `idempotency_mismatch` wins (whatever the status); then the transient statuses
    decide (5xx → `APIServerError`, 408, 429), so a mislabelled body cannot make a transient
    failure fatal; then the error object's `type`; then the status alone.
    """
    if code == "idempotency_mismatch":
        return IdempotencyMismatchError
    if status >= 500:
        return APIServerError
    if status in (408, 429):
        return _BY_STATUS[status]
    if error_type in _BY_TYPE:
        return _BY_TYPE[error_type]
    return _BY_STATUS.get(status, InvalidRequestError)


def _parse_invalid_params(raw: Any) -> tuple[InvalidParam, ...]:
    if not isinstance(raw, list):
        return ()
    params = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name", ""))
        value = entry.get("value")
        if "account_number" in name.lower():
            value = None  # never keep an account number on an exception
        params.append(
            InvalidParam(
                code=str(entry.get("code", "")),
                name=name,
                reason=str(entry.get("reason", "")),
                value=value,
                conflicts_with=entry.get("conflicts_with"),
            )
        )
    return tuple(params)


def error_from_response(
    response: httpx.Response,
    *,
    retry_after: float | None = None,
    secrets: tuple[str, ...] = (),
) -> APIError:
    """Build the typed error for an HTTP error `response` (its body must have been read).

    Works for the service's error object, an RFC 6749 token error (`error`,
    `error_description`) and any non-JSON body (an HTML 502 from a proxy, an empty body).
    `secrets` are scrubbed from the message (see `APIError`).
    """
    status = response.status_code
    body = response.content
    request_id = request_id_of(response)
    try:
        parsed: Any = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        parsed = None
    error: dict[str, Any] | None = parsed if isinstance(parsed, dict) else None

    error_type: str | None = None
    code: str | None = None
    message = f"HTTP {status} {response.reason_phrase}".strip()
    doc_url: str | None = None
    invalid_params: tuple[InvalidParam, ...] = ()
    if error is not None:
        if isinstance(error.get("type"), str):
            error_type = error["type"]
        if isinstance(error.get("code"), str):
            code = error["code"]
        elif isinstance(error.get("error"), str):  # RFC 6749 §5.2 token error
            code = error["error"]
        for key in ("message", "error_description"):
            if isinstance(error.get(key), str):
                message = error[key]
                break
        if isinstance(error.get("request_id"), str):
            request_id = error["request_id"]
        if isinstance(error.get("doc_url"), str):
            doc_url = error["doc_url"]
        invalid_params = _parse_invalid_params(
            error.get("invalid-params", error.get("invalid_params"))
        )
    elif body:
        content_type = response.headers.get("content-type", "unknown type")
        message = f"{message} (non-JSON body, {content_type}, {len(body)} bytes)"

    cls = error_class_for(status, error_type, code)
    return cls(
        message,
        status=status,
        type=error_type,
        code=code,
        request_id=request_id,
        doc_url=doc_url,
        invalid_params=invalid_params,
        retry_after=retry_after,
        error=error,
        body=body,
        secrets=secrets,
    )
