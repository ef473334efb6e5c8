"""From an HTTP error answer to the client's typed error: the one mapping (see `_errors`).

`error_from_response` reads the service's error object, the older public form (nested under
`error`, the field in `param`), an RFC 6749 token error (`error`, `error_description`), an RFC
9457 problem (`title`, `detail`), the lists validating gateways answer with (`validation[]`
entries with `location` and `message`, as Prism's; `errors[]`; FastAPI's `detail[]` with `loc`
and `msg`) and plain text (its first characters kept in the message); `error_class_for`
chooses the class. Whatever the shape, a field the answer names ends up in
`invalid_params` or in the message, where the learned body forms look for it
(`fundpipe.client._forms`).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from fundpipe.client._errors import (
    AlreadyExistsError,
    APIError,
    APIServerError,
    AuthenticationError,
    ConflictError,
    IdempotencyMismatchError,
    InvalidParam,
    InvalidRequestError,
    NotFoundError,
    OperationUnavailableError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeoutError,
    UnprocessableEntityError,
)

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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _parse_invalid_params(raw: Any) -> tuple[InvalidParam, ...]:
    if not isinstance(raw, list):
        return ()
    params = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or entry.get("param") or "")
        value = entry.get("value")
        if "account_number" in name.lower():
            value = None  # never keep an account number on an exception
        params.append(
            InvalidParam(
                code=str(entry.get("code", "")),
                name=name,
                reason=str(entry.get("reason", "")),
                value=value,
                conflicts_with=_text(entry.get("conflicts_with")),
            )
        )
    return tuple(params)


#: How much of a plain-text error body the message keeps.
_TEXT_LIMIT = 300


def _location(entry: dict[str, Any]) -> str:
    """The parameter a gateway's list entry names (`location`/`loc` list, `path`, `name`...)."""
    for key in ("name", "param", "field", "location", "loc", "path", "instancePath", "pointer"):
        value = entry.get(key)
        if isinstance(value, list):
            return ".".join(str(v) for v in value)
        if isinstance(value, str) and value:
            return value
    return ""


def _listed_problems(raw: Any) -> tuple[InvalidParam, ...]:
    """`validation[]`, `errors[]` or `detail[]` entries as `InvalidParam`s (message as reason)."""
    if not isinstance(raw, list):
        return ()
    out = []
    for entry in raw:
        if isinstance(entry, str):
            out.append(InvalidParam(code="", name="", reason=entry))
            continue
        if not isinstance(entry, dict):
            continue
        reason = next(
            (
                entry[k]
                for k in ("message", "msg", "reason", "detail", "description")
                if isinstance(entry.get(k), str)
            ),
            "",
        )
        code = next(
            (str(entry[k]) for k in ("code", "keyword", "type") if isinstance(entry.get(k), str)),
            "",
        )
        name = _location(entry)
        out.append(InvalidParam(code=code, name=name, reason=reason))
    return tuple(out)


def _plain_text(body: bytes, content_type: str) -> str | None:
    """The start of a text body (not HTML), whitespace collapsed, or None."""
    if "html" in content_type.lower():
        return None
    try:
        text = " ".join(body.decode("utf-8").split())
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "…"


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
    if error is not None and isinstance(error.get("error"), dict):
        error = error["error"]  # the older public form: the error object nested under `error`

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
        for key in ("message", "error_description", "detail", "title"):
            if isinstance(error.get(key), str) and error[key]:
                message = error[key]
                break
        if isinstance(error.get("request_id"), str):
            request_id = error["request_id"]
        if isinstance(error.get("doc_url"), str):
            doc_url = error["doc_url"]
        invalid_params = _parse_invalid_params(
            error.get("invalid-params", error.get("invalid_params"))
        )
        for listed in ("validation", "errors", "detail"):  # gateways' lists of problems
            invalid_params += _listed_problems(error.get(listed))
        field = _text(error.get("param"))  # the older public form names the field in `param`
        if field and all(p.name != field for p in invalid_params):
            invalid_params += (
                InvalidParam(
                    code=code or "",
                    name=field,
                    reason=message,
                    conflicts_with=_text(error.get("conflicts_with")),
                ),
            )
    elif body:
        content_type = response.headers.get("content-type", "unknown type")
        text = _plain_text(body, content_type)
        if text is not None:
            message = f"{message}: {text}"
        else:
            message = f"{message} (non-JSON body, {content_type}, {len(body)} bytes)"

    cls = error_class_for(status, error_type, code)
    if cls is ConflictError and any(p.conflicts_with for p in invalid_params):
        cls = AlreadyExistsError
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


#: Statuses by which a server says it does not serve an operation at all.
_UNSERVED_STATUSES = frozenset({404, 405, 501})


def unavailable_error(exc: APIError, operation: str, path: str, ids: tuple[str, ...]) -> APIError:
    """`exc` as `OperationUnavailableError` when it says the operation is not served.

    404, 405 and 501 qualify; but a 404 whose message names one of the request's `ids` says
    that resource is missing (the operation exists) and stays a `NotFoundError`.
    """
    if exc.status not in _UNSERVED_STATUSES:
        return exc
    if isinstance(exc, NotFoundError) and any(i in exc.message for i in ids):
        return exc
    return OperationUnavailableError(
        f"{operation} is not served at {path} ({exc.status}: {exc.message}); it is an "
        "optional operation the interface does not show: set its path in FUNDPIPE_PATHS or "
        "go on without it",
        operation=operation,
        path=path,
        **exc.fields(),
    )
