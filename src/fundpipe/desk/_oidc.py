"""Sign-in through the team's OpenID Connect provider: the authorization code flow with PKCE
(S256), its state and nonce checked, and the ID token's signature (the provider's published
keys), issuer, audience and expiry verified before anyone is signed in.

Configured by `FUNDPIPE_DESK_OIDC_ISSUER`, `FUNDPIPE_DESK_OIDC_CLIENT_ID`,
`FUNDPIPE_DESK_OIDC_CLIENT_SECRET` and `FUNDPIPE_DESK_URL` (the address people use: the
redirect is ``<url>/oidc/callback``). The grant's parameters and the PKCE challenge are
authlib's (`authlib.oauth2`); the ID token is verified with joserfc, the JOSE library authlib
itself moved to. The provider's discovery document and keys are read when the first person
signs in, not at start.

The person is the token's ``email`` (members are listed by email), ``name`` and ``sub``: the
subject is what their acts record.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import httpx
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import RedirectResponse, Response
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from fundpipe.desk._config import Desk
from fundpipe.desk._session import Person, Session, local_path

if TYPE_CHECKING:
    from fundpipe.desk._log import DeskLog

__all__ = ["OidcClient"]

#: Signing algorithms accepted for an ID token (never "none", never a symmetric one).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")


class OidcClient:
    """One identity provider, as the desk's configuration names it."""

    def __init__(
        self, issuer: str, client_id: str, client_secret: str, redirect_uri: str, desk: Desk
    ):
        self.issuer = issuer
        self.client_id = client_id
        self._secret = client_secret
        self.redirect_uri = redirect_uri
        self._desk = desk
        self._metadata: dict[str, Any] | None = None

    @classmethod
    def configured(cls, desk: Desk) -> OidcClient | None:
        """The provider of ``desk``'s settings (None when none is configured)."""
        settings = desk.desk
        if not settings.oidc_issuer or not settings.oidc_client_id:
            return None
        base = (settings.url or f"http://{desk.host}").rstrip("/")
        secret = (
            settings.oidc_client_secret.get_secret_value() if settings.oidc_client_secret else ""
        )
        return cls(
            settings.oidc_issuer.rstrip("/"),
            settings.oidc_client_id,
            secret,
            f"{base}/oidc/callback",
            desk,
        )

    @property
    def origin(self) -> str:
        """The provider's origin (the sign-in form may be sent on there)."""
        parts = urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}"

    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (read once); its issuer must be the configured one."""
        if self._metadata is None:
            answer = httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10)
            answer.raise_for_status()
            found: dict[str, Any] = answer.json()
            if str(found.get("issuer", "")).rstrip("/") != self.issuer:
                raise ValueError("the provider's discovery document names another issuer")
            self._metadata = found
        return self._metadata

    def start(self, session: Session, next_path: str) -> tuple[Session, str]:
        """The session holding a new state, nonce and PKCE verifier, and the provider's
        authorization URL to send the browser to."""
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        url = prepare_grant_uri(
            self.metadata()["authorization_endpoint"],
            client_id=self.client_id,
            response_type="code",
            redirect_uri=self.redirect_uri,
            scope="openid email profile",
            state=state,
            nonce=nonce,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
        )
        pending = {"state": state, "nonce": nonce, "verifier": verifier, "next": next_path}
        return Session(csrf=session.csrf, pending=pending), url

    def finish(self, pending: dict[str, str], code: str) -> Person:
        """Exchange ``code`` (with the PKCE verifier) and verify the ID token; the person it
        names. A token that fails any check is a ValueError saying which."""
        meta = self.metadata()
        answer = httpx.post(
            meta["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "code_verifier": pending["verifier"],
            },
            auth=(self.client_id, self._secret),
            timeout=10,
        )
        if answer.status_code != 200:
            raise ValueError(f"the provider refused the code (HTTP {answer.status_code})")
        id_token = answer.json().get("id_token")
        if not id_token:
            raise ValueError("the provider's answer has no ID token")
        keys = KeySet.import_key_set(httpx.get(meta["jwks_uri"], timeout=10).json())
        try:
            token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            jwt.JWTClaimsRegistry(
                now=lambda: int(self._desk.clock().timestamp()),
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.client_id},
                exp={"essential": True},
                sub={"essential": True},
                nonce={"essential": True, "value": pending["nonce"]},
            ).validate(token.claims)
        except (JoseError, ValueError) as error:
            raise ValueError(f"the ID token failed a check: {error}") from None
        claims = token.claims
        email = str(claims.get("email") or "").strip().lower()
        if not email:
            raise ValueError("the ID token names no email (ask for the email scope)")
        return Person(email, str(claims.get("name") or email), str(claims["sub"]))

    def add_routes(self, app: FastAPI, log: DeskLog, access: dict[str, Any]) -> None:
        """The two routes of the sign-in: start (a form, CSRF-checked) and the callback."""

        @app.post("/oidc/start", openapi_extra=access, summary="Sign in with the provider")
        def oidc_start(request: Request) -> Response:
            """Send the browser to the identity provider."""
            next_path = local_path(request.query_params.get("next", "/morning"))
            request.state.session, url = self.start(request.state.session, next_path)
            return RedirectResponse(url, status_code=303)

        @app.get("/oidc/callback", openapi_extra=access, summary="The provider's answer")
        def oidc_callback(
            request: Request,
            code: Annotated[str, Query()] = "",
            state_: Annotated[str, Query(alias="state")] = "",
        ) -> Response:
            """Where the provider sends the browser back: checks the state, then the token."""
            session: Session = request.state.session
            pending = session.pending
            address = request.client.host if request.client else "unknown"
            if not pending or not state_ or not secrets.compare_digest(state_, pending["state"]):
                log.event(
                    "sign_in_refused", address=address, detail="provider answer without our state"
                )
                raise HTTPException(400, "This sign-in was not started here: start again.")
            try:
                person = self.finish(pending, code)
            except (ValueError, httpx.HTTPError) as error:
                request.state.session = Session(csrf=session.csrf)
                log.event("sign_in_refused", address=address, detail=str(error))
                raise HTTPException(401, "The identity provider's answer failed a check.") from None
            request.state.session = session.signed_in(person, self._desk.clock())
            log.event("signed_in", email=person.email, address=address, detail="identity provider")
            return RedirectResponse(pending.get("next", "/morning"), status_code=303)
