"""The service's one error object, and the exception that carries it through the app.

Every failure becomes an :class:`ApiError`; the app renders it with :func:`error_body` as::

    {"object": "error", "type", "code", "message", "status", "request_id",
     "invalid-params": [{"code", "name", "reason", "value"?, "conflicts_with"?}]}

`conflicts_with` is the interface's: "for conflict errors, id of the existing resource".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Status → (type, default code), per docs/architecture.md "Statuses".
STATUS_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "parameter_invalid"),
    401: ("authentication_error", "unauthorized"),
    403: ("permission_error", "forbidden"),
    404: ("not_found_error", "resource_not_found"),
    405: ("invalid_request_error", "not_implemented"),
    408: ("request_timeout_error", "request_timeout"),
    409: ("conflict_error", "conflict"),
    413: ("invalid_request_error", "parameter_invalid"),
    415: ("invalid_request_error", "parameter_invalid"),
    422: ("unprocessable_entity_error", "validation_error"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("api_error", "internal_error"),
    502: ("api_error", "bad_gateway"),
    503: ("api_error", "internal_error"),
}

_SCALARS = (str, int, float, bool, type(None))
# Names are paths such as `body.[0].name`; a JSON key may hold line breaks, shown escaped.
_LINE_BREAKS = {10: "\\n", 13: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"}


@dataclass(slots=True)
class InvalidParam:
    """One `invalid-params` entry: a path into the request, a code and a reason.

    `conflicts_with` (rendered when set): the id of the existing resource a conflict is about.
    `missing`: the kind of a referenced object that does not exist (not rendered; public
    forms answer 404 when every problem is one of these).
    """

    name: str
    code: str
    reason: str
    value: Any = None
    has_value: bool = False
    conflicts_with: str | None = None
    missing: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form; `value` only for scalars (long strings are cut at 100 characters)."""
        name = self.name.translate(_LINE_BREAKS)
        if name.endswith("."):
            name += '""'  # an empty field or parameter name
        out: dict[str, Any] = {"code": self.code, "name": name, "reason": self.reason}
        if self.has_value and isinstance(self.value, _SCALARS):
            value = self.value
            if isinstance(value, str) and len(value) > 100:
                value = value[:100]
            out["value"] = value
        if self.conflicts_with is not None:
            out["conflicts_with"] = self.conflicts_with
        return out


def param(name: str, code: str, reason: str, *values: Any) -> InvalidParam:
    """Build an `InvalidParam`, with the offending value when one is given."""
    if values:
        return InvalidParam(name, code, reason, values[0], True)
    return InvalidParam(name, code, reason)


@dataclass(slots=True)
class ApiError(Exception):
    """An error answered with the service's error object."""

    status: int
    message: str
    code: str | None = None
    params: list[InvalidParam] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.status} {self.code or ''}: {self.message}"


def error_body(
    status: int,
    message: str,
    request_id: str,
    *,
    code: str | None = None,
    params: list[InvalidParam] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The error object for `status` (type from the status; code defaulted likewise)."""
    kind, default_code = STATUS_TYPES.get(
        status,
        ("api_error", "internal_error")
        if status >= 500
        else ("invalid_request_error", "parameter_invalid"),
    )
    body: dict[str, Any] = dict(extra or {})
    body.update(
        {
            "object": "error",
            "type": kind,
            "code": code or default_code,
            "message": message,
            "status": status,
            "request_id": request_id,
        }
    )
    if params:
        body["invalid-params"] = [p.as_dict() for p in params]
    return body


def validation_failure(params: list[InvalidParam]) -> ApiError:
    """The error for a body that failed validation.

    Only offset mismatches (`validation_error`) → 422; anything else → 400 listing every failure,
    with the first non-422 failure's code as the error's code.
    """
    others = [p for p in params if p.code != "validation_error"]
    if not others:
        return ApiError(
            422,
            "A date-time carries a UTC offset that differs from its distribution_timezone.",
            "validation_error",
            params,
        )
    count = len(params)
    noun = "parameter is" if count == 1 else "parameters are"
    return ApiError(400, f"{count} request {noun} invalid.", others[0].code, params)


def public_refusal(params: list[InvalidParam]) -> ApiError | None:
    """The public error form of a body with an unknown field: 400 `parameter_unknown` naming
    the (first) field in `param`, without `invalid-params`; None when no field is unknown."""
    unknown = next((p for p in params if p.code == "parameter_unknown"), None)
    if unknown is None:
        return None
    return ApiError(
        400,
        f"Received unknown parameter: {unknown.name}",
        "parameter_unknown",
        [],
        extra={"param": unknown.name},
    )


def not_found(what: str, ident: str) -> ApiError:
    """404 for an unknown id (the id is not echoed into the message beyond its kind)."""
    return ApiError(404, f"No such {what}: {ident}", "resource_not_found")
