"""What every route of the desk shares: its state, who is signed in, the organization a page
is of, the right an act needs, and how a page is rendered.

Each route says who may open it in its OpenAPI description (``x-desk-access``: ``public``,
``signed-in`` or ``member``), which is what the HTTP tests read to cover every route. A page
of an organization answers 404 to whoever is not its member, exactly as for an organization
that does not exist (an id guessed tells nothing).
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape

from fundpipe.desk._accounts import Accounts, Throttle
from fundpipe.desk._config import Desk
from fundpipe.desk._log import DeskLog
from fundpipe.desk._members import Members, Right
from fundpipe.desk._oidc import OidcClient
from fundpipe.desk._reading import DeskOrg, desk_orgs
from fundpipe.desk._session import CSRF_FIELD, UNSAFE_METHODS, Person, Session, SessionCodec

__all__ = [
    "MEMBER",
    "PUBLIC",
    "SIGNED_IN",
    "DeskState",
    "MemberOrg",
    "NotSignedInError",
    "SignedIn",
    "address",
    "member_org",
    "page",
    "require",
    "session_of",
    "signed_in",
    "state_of",
]

PUBLIC = {"x-desk-access": "public"}
SIGNED_IN = {"x-desk-access": "signed-in"}
MEMBER = {"x-desk-access": "member"}


class NotSignedInError(Exception):
    """A page that needs a signed-in person was asked for without one."""


class DeskState:
    """What the routes share: the desk's configuration, accounts, members, log and templates."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self.log = DeskLog(desk.folder / "desk.log", desk.clock)
        self.accounts = Accounts(desk.folder / "accounts.json", desk.hasher)
        self.throttle = Throttle(desk.clock)
        self.members = Members(desk.members_file, self.log)
        self.codec = SessionCodec(desk.signing_key())
        self.oidc = OidcClient.configured(desk)
        env = Environment(
            loader=PackageLoader("fundpipe.desk", "templates"),
            autoescape=select_autoescape(default=True),
        )
        self.templates = Jinja2Templates(env=env)

    def orgs_of(self, person: Person) -> list[DeskOrg]:
        """The organizations of the data folder ``person`` is a member of, by name."""
        roles = self.members.roles(person.email)
        known = desk_orgs(self.desk.settings)
        return sorted((known[o] for o in roles if o in known), key=lambda o: o.name.lower())


def state_of(request: Request) -> DeskState:
    """The desk's state, from the app serving ``request``."""
    state: DeskState = request.app.state.desk
    return state


def session_of(request: Request) -> Session:
    """The session of ``request`` (read by the middleware before any route)."""
    session: Session = request.state.session
    return session


def address(request: Request) -> str:
    """The client's address, for the desk's log and the sign-in throttle."""
    return request.client.host if request.client else "unknown"


def person_or_none(request: Request) -> str | None:
    """The signed-in person's email, or None."""
    person = session_of(request).person
    return person.email if person else None


async def csrf_checked(request: Request) -> None:
    """Refuse (403) a state change whose CSRF token is not the session's."""
    if request.method not in UNSAFE_METHODS:
        return
    sent = request.headers.get("x-csrf-token")
    if sent is None and "form" in request.headers.get("content-type", ""):
        sent = str((await request.form()).get(CSRF_FIELD) or "")
    if not sent or not secrets.compare_digest(sent, session_of(request).csrf):
        state_of(request).log.event(
            "refused",
            path=request.url.path,
            address=address(request),
            detail="a state change without the session's CSRF token",
            email=person_or_none(request),
        )
        raise HTTPException(403, "This form has expired or did not come from the desk.")


def signed_in(request: Request) -> Person:
    """The signed-in person (else: to the sign-in page, or 401 for a non-page)."""
    person = session_of(request).person
    if person is None:
        raise NotSignedInError
    return person


SignedIn = Annotated[Person, Depends(signed_in)]


def member_org(org_id: str, request: Request, person: SignedIn) -> DeskOrg:
    """The organization ``org_id`` when ``person`` is its member; else 404, as for one that
    does not exist (an id guessed tells nothing)."""
    state = state_of(request)
    org = desk_orgs(state.desk.settings).get(org_id)
    if org is None or org_id not in state.members.roles(person.email):
        state.log.event(
            "refused",
            email=person.email,
            org=org_id,
            path=request.url.path,
            address=address(request),
            detail="not a member of this organization",
        )
        raise HTTPException(404, "No such page.")
    return org


MemberOrg = Annotated[DeskOrg, Depends(member_org)]


def require(request: Request, person: Person, org: DeskOrg, right: Right, what: str) -> None:
    """Refuse (403, logged) unless ``person``'s role in ``org`` has ``right``; ``what`` says
    the act in the refusal, e.g. "acknowledge exceptions"."""
    state = state_of(request)
    if state.members.may(person.email, org.id, right):
        return
    state.log.event(
        "refused",
        email=person.email,
        org=org.id,
        path=request.url.path,
        address=address(request),
        detail=f"the role may not {what}",
    )
    raise HTTPException(403, f"Your role here may not {what}.")


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` rendered with ``context``, the person and the CSRF token."""
    session = session_of(request)
    context |= {"person": session.person, "csrf": session.csrf, "csrf_field": CSRF_FIELD}
    return state_of(request).templates.TemplateResponse(request, name, context, status_code=status)
