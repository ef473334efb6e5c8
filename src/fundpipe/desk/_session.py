"""Sessions and the web's rules, in one place: the signed session cookie (HttpOnly,
SameSite=Lax, Secure off loopback; an idle and an absolute timeout), the CSRF token every
state change carries, and the security headers every answer has.

The session is a signed cookie (itsdangerous, with the desk's own key): it holds who signed in
(email, name, the identity provider's subject or ``local``), when, the CSRF token, and while a
sign-in through the provider is under way its state, nonce and PKCE verifier. Nothing in it is
a secret of the person's: no password, and no token of the provider's.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from itsdangerous import BadSignature, URLSafeSerializer

__all__ = [
    "COOKIE",
    "CSRF_FIELD",
    "UNSAFE_METHODS",
    "Person",
    "Session",
    "SessionCodec",
    "local_path",
    "security_headers",
]

COOKIE = "fundpipe_desk"
#: The form field (or the ``X-CSRF-Token`` header) a state change carries its token in.
CSRF_FIELD = "csrf_token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True, slots=True)
class Person:
    """Who is signed in: email, name, and the identity provider's subject (``local`` for a
    local account)."""

    email: str
    name: str
    subject: str

    @property
    def recorded_as(self) -> tuple[str, str]:
        """What a person's event records (`fundpipe.reconcile.lifecycle`): the name with the
        email, and in the user column where the identity comes from (``desk:local`` or
        ``desk:oidc:<subject>``) — never an operating-system user's name."""
        source = "desk:local" if self.subject == "local" else f"desk:oidc:{self.subject}"
        return f"{self.name} <{self.email}>", source

    @property
    def identity(self) -> str:
        """Who this is, whatever name they go by: ``desk:oidc:<subject>``, or
        ``desk:local:<email>`` for a local account (what a month's preparer and reviewer are
        told apart by)."""
        if self.subject == "local":
            return f"desk:local:{self.email.strip().lower()}"
        return f"desk:oidc:{self.subject}"


@dataclass(frozen=True, slots=True)
class Session:
    """One browser's session (the cookie's content)."""

    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    person: Person | None = None
    started: str | None = None
    seen: str | None = None
    #: an OpenID Connect sign-in under way: state, nonce, PKCE verifier, where to go after
    pending: dict[str, str] | None = None

    def signed_in(self, person: Person, now: datetime) -> Session:
        """The session after ``person`` signed in at ``now``: a new CSRF token too (a token
        known before signing in is worth nothing after)."""
        return Session(person=person, started=now.isoformat(), seen=now.isoformat())

    def touched(self, now: datetime) -> Session:
        """The session as of a request at ``now`` (the idle timeout counts from here)."""
        return replace(self, seen=now.isoformat()) if self.person else self

    def expired(self, now: datetime, *, idle: timedelta, absolute: timedelta) -> bool:
        """Whether a signed-in session has passed its idle or its absolute timeout."""
        if self.person is None or self.started is None or self.seen is None:
            return False
        started = datetime.fromisoformat(self.started)
        seen = datetime.fromisoformat(self.seen)
        return now - seen >= idle or now - started >= absolute


class SessionCodec:
    """Signs a session into a cookie value and reads one back (a bad signature: a new one)."""

    def __init__(self, key: bytes) -> None:
        self._serializer = URLSafeSerializer(key, salt="fundpipe-desk-session")

    def dumps(self, session: Session) -> str:
        """The cookie's value."""
        return str(self._serializer.dumps(asdict(session)))

    def loads(self, value: str | None) -> Session:
        """The session a cookie holds; none, tampered or of another shape: a new session."""
        if not value:
            return Session()
        try:
            data: dict[str, Any] = self._serializer.loads(value)
            person = data.get("person")
            return Session(
                csrf=str(data["csrf"]),
                person=Person(**person) if person else None,
                started=data.get("started"),
                seen=data.get("seen"),
                pending=data.get("pending"),
            )
        except (BadSignature, KeyError, TypeError, ValueError):
            return Session()


def security_headers(*, form_targets: str = "") -> dict[str, str]:
    """The headers on every answer: a Content-Security-Policy with no script at all (the desk
    has none), no framing, the referrer kept to the desk itself. ``form_targets``: the
    identity provider's origin, where the sign-in form's redirect goes."""
    policy = "; ".join(
        (
            "default-src 'none'",
            "script-src 'none'",
            "style-src 'self'",
            "img-src 'self'",
            f"form-action 'self'{' ' + form_targets if form_targets else ''}",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )
    return {
        "Content-Security-Policy": policy,
        "Referrer-Policy": "same-origin",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
    }


def local_path(target: str) -> str:
    """``target`` when it is a path of the desk itself, else the morning (no open redirect)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/morning"
    return target
