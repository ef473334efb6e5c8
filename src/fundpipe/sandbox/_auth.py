"""OAuth 2.0 client credentials (RFC 6749 §4.4), bearer tokens, scopes and organization access.

Tokens are opaque random strings; only their SHA-256 is stored. Scopes are `<resource>:read`,
`<resource>:write` and `<resource>:*` for the interface's six resources; `:*` covers both.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote_plus

from fundpipe.sandbox._checks import PATTERNS
from fundpipe.sandbox._errors import ApiError, param

RESOURCES = (
    "organizations",
    "distributions",
    "vehicles",
    "entities",
    "contacts",
    "financial_accounts",
)
ALL_SCOPES = frozenset(f"{r}:{a}" for r in RESOURCES for a in ("read", "write", "*"))
EVERY_SCOPE = tuple(f"{r}:*" for r in RESOURCES)
READ_SCOPES = tuple(f"{r}:read" for r in RESOURCES)


def hash_secret(value: str) -> str:
    """SHA-256 hex of a secret or token (what the database keeps)."""
    return hashlib.sha256(value.encode()).hexdigest()


def covers(granted: frozenset[str] | set[str], needed: str) -> bool:
    """True when the `granted` scopes allow `needed` (`<resource>:read|write`)."""
    resource, _, _ = needed.partition(":")
    return needed in granted or f"{resource}:*" in granted


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated client of a request."""

    client_id: str
    scopes: frozenset[str]
    organizations: tuple[str, ...]


class OAuthError(Exception):
    """An RFC 6749 §5.2 error (rendered with both the RFC fields and the error object)."""

    def __init__(self, status: int, error: str, description: str, *, basic: bool = False) -> None:
        """`error` is the RFC code (`invalid_client`, `invalid_scope`, …)."""
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.basic = basic


def upsert_client(
    conn: sqlite3.Connection,
    client_id: str,
    secret: str,
    scopes: list[str] | tuple[str, ...],
    organizations: list[str] | tuple[str, ...],
) -> None:
    """Create or replace a client."""
    conn.execute(
        "INSERT INTO clients (client_id, secret_hash, scopes, organizations) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (client_id) DO UPDATE SET secret_hash = excluded.secret_hash, "
        "scopes = excluded.scopes, organizations = excluded.organizations",
        (client_id, hash_secret(secret), json.dumps(list(scopes)), json.dumps(list(organizations))),
    )


def _credentials(authorization: str | None, form: dict[str, list[str]]) -> tuple[str, str, bool]:
    form_id = form.get("client_id", [None])[0]
    form_secret = form.get("client_secret", [None])[0]
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "basic":
            raise OAuthError(401, "invalid_client", "unsupported client authentication scheme")
        if form_secret is not None:
            raise OAuthError(
                400, "invalid_request", "use one client authentication method, not two"
            )
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise OAuthError(
                401, "invalid_client", "malformed Basic credentials", basic=True
            ) from exc
        user, sep, password = decoded.partition(":")
        if not sep:
            raise OAuthError(401, "invalid_client", "malformed Basic credentials", basic=True)
        return unquote_plus(user), unquote_plus(password), True
    if form_id is None or form_secret is None:
        raise OAuthError(401, "invalid_client", "client authentication is required")
    return form_id, form_secret, False


def issue_token(
    conn: sqlite3.Connection,
    body: bytes,
    content_type: str,
    authorization: str | None,
    now_ts: float,
    lifetime_s: int,
    admit: Callable[[str], None],
    *,
    json_body: bool = False,
) -> dict[str, object]:
    """Run the token exchange; returns the token response or raises OAuthError.

    `admit(client_id)` runs once the client is authenticated (the rate limit: it raises to
    refuse), before any token is stored. `json_body` also accepts the same parameters as a
    JSON object (strict-interface mode) besides the RFC 6749 form body.

    Scopes (RFC 6749 §3.3, as the public docs describe): no `scope` grants every scope the
    client has; a requested scope the client lacks (or an unknown one) is `invalid_scope`.
    """
    media = content_type.split(";")[0].strip().lower()
    if json_body and media == "application/json":
        form = _json_parameters(body)
    elif media != "application/x-www-form-urlencoded":
        accepted = "application/x-www-form-urlencoded" + (" or JSON" if json_body else "")
        raise OAuthError(400, "invalid_request", f"the body must be {accepted}")
    else:
        try:
            form = parse_qs(body.decode(), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError as exc:
            raise OAuthError(400, "invalid_request", "the body is not UTF-8") from exc
    for name, values in form.items():
        if len(values) > 1:
            raise OAuthError(400, "invalid_request", f"parameter {name} repeated")
    client_id, secret, basic = _credentials(authorization, form)
    row = conn.execute("SELECT * FROM clients WHERE client_id = ?", (client_id,)).fetchone()
    if row is None or not hmac.compare_digest(row["secret_hash"], hash_secret(secret)):
        raise OAuthError(401, "invalid_client", "unknown client or wrong secret", basic=basic)
    admit(client_id)
    grant = form.get("grant_type", [None])[0]
    if grant is None:
        raise OAuthError(400, "invalid_request", "grant_type is required")
    if grant != "client_credentials":
        raise OAuthError(400, "unsupported_grant_type", "only client_credentials is supported")
    allowed = frozenset(json.loads(row["scopes"]))
    requested_text = form.get("scope", [None])[0]
    if requested_text is None or not requested_text.strip():
        granted = sorted(allowed)
    else:
        requested = requested_text.split()
        bad = [s for s in requested if s not in ALL_SCOPES or not _grantable(allowed, s)]
        if bad:
            raise OAuthError(400, "invalid_scope", "requested scope not allowed for this client")
        granted = list(dict.fromkeys(requested))
    token = secrets.token_urlsafe(32)
    conn.execute(
        "INSERT INTO tokens (token_hash, client_id, scopes, expires_at) VALUES (?, ?, ?, ?)",
        (hash_secret(token), client_id, json.dumps(granted), now_ts + lifetime_s),
    )
    return {
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": lifetime_s,
        "scope": " ".join(granted),
    }


def _json_parameters(body: bytes) -> dict[str, list[str]]:
    """A JSON token request as form parameters: an object whose values are strings."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise OAuthError(400, "invalid_request", "the body is not valid JSON") from exc
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise OAuthError(400, "invalid_request", "the JSON body must be an object of strings")
    return {name: [text] for name, text in value.items()}


def _grantable(allowed: frozenset[str], scope: str) -> bool:
    _resource, _, action = scope.partition(":")
    if action == "*":
        return scope in allowed
    return covers(allowed, scope)


def authenticate(conn: sqlite3.Connection, authorization: str | None, now_ts: float) -> Principal:
    """The principal behind `Authorization: Bearer …`; 401 when missing/malformed/unknown/expired."""
    if not authorization:
        raise ApiError(401, "Missing access token: send Authorization: Bearer <token>.")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 512:
        raise ApiError(401, "Malformed Authorization header: expected Bearer <token>.")
    row = conn.execute(
        "SELECT t.client_id, t.scopes, t.expires_at, c.organizations FROM tokens t "
        "JOIN clients c ON c.client_id = t.client_id WHERE t.token_hash = ?",
        (hash_secret(token),),
    ).fetchone()
    if row is None:
        raise ApiError(401, "Unknown access token.")
    if row["expires_at"] <= now_ts:
        raise ApiError(401, "Expired access token: exchange the credentials again.")
    return Principal(
        row["client_id"],
        frozenset(json.loads(row["scopes"])),
        tuple(json.loads(row["organizations"])),
    )


def require_scope(principal: Principal, needed: str) -> None:
    """403 unless the token carries `needed` (or `<resource>:*`)."""
    if not covers(principal.scopes, needed):
        raise ApiError(403, f"The access token lacks the scope {needed}.", "forbidden")


def resolve_organization(principal: Principal, header: str | None) -> str:
    """The organization acted on: the header's, or the client's only one."""
    if header is not None:
        if not PATTERNS["organization"].fullmatch(header):
            raise ApiError(
                400,
                "Invalid X-Organization-Id.",
                "parameter_invalid",
                [
                    param(
                        "header.X-Organization-Id",
                        "parameter_invalid",
                        "must match ^org_[A-Za-z0-9]+$",
                        header,
                    )
                ],
            )
        if header not in principal.organizations:
            raise ApiError(403, "This client cannot act for that organization.", "forbidden")
        return header
    if len(principal.organizations) == 1:
        return principal.organizations[0]
    if not principal.organizations:
        raise ApiError(403, "This client has access to no organization.", "forbidden")
    raise ApiError(
        400,
        "This client can act for several organizations: send X-Organization-Id.",
        "parameter_missing",
        [
            param(
                "header.X-Organization-Id",
                "parameter_missing",
                "required when the client has several organizations",
            )
        ],
    )
