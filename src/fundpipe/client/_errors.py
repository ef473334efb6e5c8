"""The client's exception tree, built from the service's error object.

```
FundServiceError                      anything the client raises about the service
├── ConfigurationError                 settings that cannot work (no base URL, plain HTTP to a remote host)
├── ServiceConnectionError             no usable HTTP answer: connect/read timeout, dropped connection
│   └── ServiceOutageError             retried failures outlasted the retry deadline
├── ResponseDecodeError                a 2xx answer whose body is not the JSON the interface promises
├── IncompleteListError                a page said `has_more` but gave no `next_page_url`
└── APIError                           an HTTP error answer (status, code, message, request_id, ...)
    ├── InvalidRequestError            400 invalid_request_error (also 405, 413, 415)
    │   └── InvalidScopeError          400 `invalid_scope` from the token endpoint
    ├── AuthenticationError            401 authentication_error (token endpoint: invalid_client)
    ├── PermissionDeniedError          403 permission_error (e.g. no access to the organization)
    │   └── MissingScopeError          403 for a scope the client is not granted (`scope`)
    ├── NotFoundError                  404 not_found_error
    ├── OperationUnavailableError      404/405/501 of an operation the interface does not show
    ├── RequestTimeoutError            408 request_timeout_error            retryable
    ├── ConflictError                  409 conflict_error, code `conflict`  retryable
    │   └── AlreadyExistsError         409 naming `conflicts_with`: definitive, never retried
    ├── IdempotencyMismatchError       code `idempotency_mismatch`, whatever the status: fatal
    ├── UnprocessableEntityError       422 unprocessable_entity_error (e.g. zone offset mismatch)
    ├── RateLimitError                 429 rate_limit_error                 retryable
    └── APIServerError                 5xx api_error                        retryable: 500/502/503/504
```

`error_from_response` is the one place that maps an answer to a class (`error_class_for`): the
code `idempotency_mismatch` first (the interface says 422, older public docs 409: we branch on
the code), then the transient statuses (5xx, 408, 429), then the error object's `type`, then the
HTTP status alone (for bodies that are not an error object, such as a
proxy's HTML 502 or an RFC 6749 token error); a 409 whose `invalid-params` name the existing
resource (`conflicts_with`) is an `AlreadyExistsError`. The older public error form — the object
nested under `error`, the failing field in `param` — is read too. Every `APIError` keeps `status`, `type`, `code`,
`message`, `request_id`, `invalid_params`, `doc_url`, `retry_after` (seconds, when the answer
carried `Retry-After`), the parsed `error` object (or None) and the raw `body` bytes; the raw body
is never rendered by `str()` or `repr()`, and messages pass through the redaction function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

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


class ServiceOutageError(ServiceConnectionError):
    """The service kept failing (5xx, 408, 429, timeouts, dropped connections) for longer than
    the retry deadline; the message says for how long, what it answered and that nothing was
    lost (every create is resent with the same Idempotency-Key or looked up on the next run).

    `seconds`: how long the service was unavailable to this request; `attempts`: how many were
    made; `reason`: what the last one got (e.g. `503 internal_error`). Not retried again.
    """

    retryable = False

    def __init__(self, message: str, *, seconds: float, attempts: int, reason: str) -> None:
        """The plain sentence and the numbers behind it."""
        super().__init__(message, attempt=attempts)
        self.seconds = seconds
        self.attempts = attempts
        self.reason = reason


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


class IncompleteListError(FundServiceError):
    """A list page said `has_more: true` but gave no `next_page_url` to continue from.

    The older public form of the list envelope; stopping silently would lose records, so the
    listing stops loudly instead. `path` is the list's path, `resource` its plain name.
    """

    def __init__(self, path: str, resource: str) -> None:
        """Name the list that cannot be continued."""
        super().__init__(
            f"GET {path}: the service said there are more {resource} but gave no way to "
            "continue (has_more is true, next_page_url is missing); stopping so nothing is missed"
        )
        self.path = path
        self.resource = resource


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

    def fields(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this error's fields on another class."""
        return {
            "status": self.status,
            "type": self.type,
            "code": self.code,
            "request_id": self.request_id,
            "doc_url": self.doc_url,
            "invalid_params": self.invalid_params,
            "retry_after": self.retry_after,
            "error": self.error,
            "body": self.body,
            "secrets": self._secrets,
        }

    @property
    def param(self) -> str | None:
        """The request field the failure is about (first `invalid-params` name, or `param`)."""
        for entry in self.invalid_params:
            if entry.name:
                return entry.name
        return None

    def _render(self) -> str:
        parts = [f"{self.status}"]
        if self.code:
            parts.append(self.code)
        text = f"[{' '.join(parts)}] {self.message}"
        for param in self.invalid_params:
            if param.reason and param.reason != self.message:
                text += f"; {param.name}: {param.reason}"
            else:
                text += f" (field {param.name})"
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


class MissingScopeError(PermissionDeniedError):
    """403 because the client is not granted a scope; `scope` names it (when known).

    The message says so in plain words: which scope, and to ask the service administrator or
    set FUNDPIPE_SCOPES.
    """

    def __init__(self, message: str, *, scope: str | None = None, **kwargs: Any) -> None:
        """`scope` is the missing scope (the service's word, else the operation's own)."""
        self.scope = scope
        super().__init__(message, **kwargs)


class InvalidScopeError(InvalidRequestError):
    """400 `invalid_scope` from the token endpoint: a requested scope is not granted.

    `scopes` are the scopes the client asked for (FUNDPIPE_SCOPES); `scope` is the one the
    failing operation needs, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        scopes: tuple[str, ...] = (),
        scope: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Keep the requested scopes and the operation's scope."""
        self.scopes = scopes
        self.scope = scope
        super().__init__(message, **kwargs)


class NotFoundError(APIError):
    """404: no such resource (or route)."""

    error_type = "not_found_error"


class OperationUnavailableError(APIError):
    """404, 405 or 501 from an operation the interface does not show (a guessed path).

    Raised only by the optional operations (vehicles, organizations, the organization-wide
    financial account list, contact association), whose paths are settings: callers turn it
    into a warning. `operation` names the client method, `path` the path tried; `__cause__`
    holds the original error.
    """

    error_type = None

    def __init__(self, message: str, *, operation: str, path: str, **kwargs: Any) -> None:
        """Name the operation and the path that the service does not serve."""
        self.operation = operation
        self.path = path
        super().__init__(message, **kwargs)


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


class AlreadyExistsError(ConflictError):
    """409 naming the existing resource (`conflicts_with`): definitive, never retried.

    E.g. an entity or distribution whose `external_reference` the service already holds.
    `conflicts_with` lists the ids of the existing resources, so the caller can link to them.
    """

    def __init__(self, message: str, **kwargs: Any) -> None:
        """Never retried: the conflict is with a stored resource, not a request in flight."""
        super().__init__(message, **kwargs)
        self.retryable = False

    @property
    def conflicts_with(self) -> tuple[str, ...]:
        """Ids of the existing resources the service named, in order, without repeats."""
        ids = (p.conflicts_with for p in self.invalid_params if p.conflicts_with)
        return tuple(dict.fromkeys(ids))


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
