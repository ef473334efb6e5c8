"""Which OAuth scope each operation needs, and errors that name a missing scope in plain words.

The interface states only `financial_accounts:read` for reading a financial account; the rest
follows the public spec (DESIGN, "Scope per operation"): reads need `<resource>:read`, creates
`<resource>:write`; payment instructions and contact association count as `entities`, a
distribution's payments and notifications as `distributions`, a vehicle's financial accounts as
`financial_accounts`. `<resource>:*` covers both.

A 403 is turned into `MissingScopeError` when the service names a scope (in its message or an
RFC 6750 `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` header), speaks of
scopes, or says nothing more; a 403 about organization access stays a `PermissionDeniedError`.
The token endpoint's `invalid_scope` (RFC 6749 §5.2) becomes `InvalidScopeError`.
"""

from __future__ import annotations

import re

from fundpipe.client._errors import (
    APIError,
    InvalidScopeError,
    MissingScopeError,
    PermissionDeniedError,
)

RESOURCES = (
    "organizations",
    "distributions",
    "vehicles",
    "entities",
    "contacts",
    "financial_accounts",
)
# Path segments whose operations count as another resource's.
_COUNTS_AS = {
    "payment_instructions": "entities",
    "distribution_payments": "distributions",
}
_NAMED_SCOPE = re.compile(r"\b(" + "|".join(RESOURCES) + r"):(read|write|\*)")
_HEADER_SCOPE = re.compile(r'scope="([^"]*)"')
_ADVICE = "ask the service administrator or set FUNDPIPE_SCOPES"


def scope_for(method: str, path: str) -> str | None:
    """The scope an operation needs (`entities:write`), or None for paths of no resource."""
    segments = [s for s in path.partition("?")[0].split("/") if s]
    if segments and segments[0] == "v1":
        segments = segments[1:]
    if not segments:
        return None
    resource = _COUNTS_AS.get(segments[0], segments[0])
    if resource == "vehicles" and len(segments) >= 3 and segments[2] == "financial_accounts":
        resource = "financial_accounts"
    if resource not in RESOURCES:
        return None
    action = "read" if method.upper() in ("GET", "HEAD") else "write"
    return f"{resource}:{action}"


def missing_scope_error(
    error: PermissionDeniedError, needed: str | None, www_authenticate: str | None = None
) -> PermissionDeniedError:
    """A 403 restated as `MissingScopeError` naming the scope, unless it is about the org."""
    said = error.message
    named = None
    if www_authenticate and (found := _HEADER_SCOPE.search(www_authenticate)):
        named = found.group(1).split()[0] if found.group(1).split() else None
    if named is None and (match := _NAMED_SCOPE.search(said)):
        named = match.group(0)
    about_scope = (
        named is not None
        or "scope" in said.lower()
        or "insufficient_scope" in (www_authenticate or "")
    )
    if not about_scope and "organization" in said.lower():
        return error  # organization access, not a scope: the service's words say it best
    scope = named or needed
    if scope is None:
        return error
    if about_scope:
        text = f"the client is not granted scope '{scope}'; {_ADVICE}"
    else:
        text = (
            f"the service refused this operation (403), which needs scope '{scope}': the "
            f"client is probably not granted it; {_ADVICE}"
        )
    return MissingScopeError(f"{text} (the service said: {said})", scope=scope, **error.fields())


def invalid_scope_error(
    error: APIError, requested: str | None, needed: str | None
) -> InvalidScopeError:
    """The token endpoint's `invalid_scope` restated with the scopes asked for and needed."""
    asked = tuple((requested or "").split())
    if asked:
        text = (
            "the token endpoint refused the requested scopes "
            + ", ".join(f"'{s}'" for s in asked)
            + ": the client is not granted at least one of them"
        )
    else:
        text = "the token endpoint wants a scope, and none is configured"
    if needed:
        text += f"; this operation needs scope '{needed}'"
    text += f"; {_ADVICE} (the service said: {error.message})"
    return InvalidScopeError(text, scopes=asked, scope=needed, **error.fields())
