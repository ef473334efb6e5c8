"""The desk's FastAPI app: :func:`create_app` builds it from a :class:`~fundpipe.desk.Desk`.

Every answer passes one middleware (`_session_and_headers`): it reads the signed session,
ends one past its idle or absolute timeout, and writes the cookie and the security headers
back. Every route runs one dependency first (`_csrf_checked`): a state change without the
session's CSRF token is refused (403) before anything else is looked at. A page of an
organization answers 404 to whoever is not its member, exactly as for an organization that
does not exist.

Each route says who may open it in its OpenAPI description (``x-desk-access``: ``public``,
``signed-in`` or ``member``), which is what the HTTP tests read to cover every route.
"""

from __future__ import annotations

import html
import logging
import secrets
from datetime import timedelta
from importlib.resources import files
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import Response as StarletteResponse

from fundpipe.desk._accounts import Accounts, Throttle
from fundpipe.desk._config import Desk
from fundpipe.desk._log import DeskLog
from fundpipe.desk._members import Members, Right
from fundpipe.desk._oidc import OidcClient
from fundpipe.desk._reading import (
    DeskOrg,
    acknowledge_exception,
    desk_orgs,
    open_exceptions,
    org_morning,
)
from fundpipe.desk._session import (
    COOKIE,
    CSRF_FIELD,
    UNSAFE_METHODS,
    Person,
    Session,
    SessionCodec,
    local_path,
    security_headers,
)

__all__ = ["DeskState", "create_app"]

log = logging.getLogger("fundpipe.desk")

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


def _state(request: Request) -> DeskState:
    state: DeskState = request.app.state.desk
    return state


def _session(request: Request) -> Session:
    session: Session = request.state.session
    return session


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def _csrf_checked(request: Request) -> None:
    """Refuse (403) a state change whose CSRF token is not the session's."""
    if request.method not in UNSAFE_METHODS:
        return
    sent = request.headers.get("x-csrf-token")
    if sent is None and "form" in request.headers.get("content-type", ""):
        sent = str((await request.form()).get(CSRF_FIELD) or "")
    if not sent or not secrets.compare_digest(sent, _session(request).csrf):
        _state(request).log.event(
            "refused",
            path=request.url.path,
            address=_address(request),
            detail="a state change without the session's CSRF token",
            email=_person_or_none(request),
        )
        raise HTTPException(403, "This form has expired or did not come from the desk.")


def _person_or_none(request: Request) -> str | None:
    person = _session(request).person
    return person.email if person else None


def signed_in(request: Request) -> Person:
    """The signed-in person (else: to the sign-in page, or 401 for a non-page)."""
    person = _session(request).person
    if person is None:
        raise NotSignedInError
    return person


SignedIn = Annotated[Person, Depends(signed_in)]


def member_org(org_id: str, request: Request, person: SignedIn) -> DeskOrg:
    """The organization ``org_id`` when ``person`` is its member; else 404, as for one that
    does not exist (an id guessed tells nothing)."""
    state = _state(request)
    org = desk_orgs(state.desk.settings).get(org_id)
    if org is None or org_id not in state.members.roles(person.email):
        state.log.event(
            "refused",
            email=person.email,
            org=org_id,
            path=request.url.path,
            address=_address(request),
            detail="not a member of this organization",
        )
        raise HTTPException(404, "No such page.")
    return org


MemberOrg = Annotated[DeskOrg, Depends(member_org)]


def _page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    session = _session(request)
    context |= {"person": session.person, "csrf": session.csrf, "csrf_field": CSRF_FIELD}
    return _state(request).templates.TemplateResponse(request, name, context, status_code=status)


def _fault_page(request: Request, exc: Exception, state: DeskState) -> StarletteResponse:
    """The page for a failure below the desk (a damaged or locked warehouse, a full disk, a
    bug): one line saying what, as the CLI says it (`fundpipe.errors.as_fundpipe_error`)."""
    from fundpipe.errors import InternalError, LockHeld, as_fundpipe_error

    error = as_fundpipe_error(exc)
    if isinstance(error, InternalError):
        log.exception("the desk failed on %s", request.url.path)
        text = "The desk failed: an internal error (its traceback is in the desk's server log)."
    else:
        text = f"The desk could not answer: {error}"
    state.log.event("failed", path=request.url.path, detail=text)
    status = 503 if isinstance(error, LockHeld) else 500
    return HTMLResponse(
        f"<!doctype html><title>fundpipe desk</title><p>{html.escape(text)}</p>", status
    )


def create_app(desk: Desk) -> FastAPI:
    """The desk as an ASGI app over ``desk``'s data folder."""
    app = FastAPI(
        title="fundpipe desk",
        summary="The finance desk: the morning and the exception queue, signed in.",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(_csrf_checked)],
    )
    state = DeskState(desk)
    app.state.desk = state
    idle = timedelta(minutes=desk.desk.idle_minutes)
    absolute = timedelta(hours=desk.desk.absolute_hours)
    form_targets = state.oidc.origin if state.oidc else ""

    @app.middleware("http")
    async def _session_and_headers(request: Request, call_next: Any) -> StarletteResponse:
        now = desk.clock()
        session = state.codec.loads(request.cookies.get(COOKIE))
        if session.expired(now, idle=idle, absolute=absolute):
            state.log.event(
                "session_ended",
                email=session.person.email if session.person else None,
                detail="idle or absolute timeout",
            )
            session = Session()
        request.state.session = session.touched(now)
        try:
            response: StarletteResponse = await call_next(request)
        except Exception as exc:  # a fault becomes one line on the page, never a traceback
            response = _fault_page(request, exc, state)
        response.headers.update(security_headers(form_targets=form_targets))
        if request.url.path != "/static/desk.css":
            response.headers["Cache-Control"] = "no-store"
        response.set_cookie(
            COOKIE,
            state.codec.dumps(request.state.session),
            httponly=True,
            samesite="lax",
            secure=desk.secure_cookies,
            path="/",
        )
        return response

    @app.exception_handler(NotSignedInError)
    async def _to_sign_in(request: Request, _: NotSignedInError) -> Response:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return RedirectResponse(f"/sign-in?next={quote(request.url.path)}", status_code=303)
        return JSONResponse({"detail": "Sign in first."}, status_code=401)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, error: HTTPException) -> Response:
        if "text/html" in request.headers.get("accept", ""):
            return _page(request, "message.html", error.status_code, message=error.detail)
        return JSONResponse({"detail": error.detail}, status_code=error.status_code)

    @app.get("/openapi.json", openapi_extra=SIGNED_IN, summary="This description")
    def openapi(person: SignedIn) -> dict[str, Any]:
        """The desk's OpenAPI description, every route (for any signed-in person)."""
        return app.openapi()

    @app.get("/static/desk.css", openapi_extra=PUBLIC, summary="The desk's style sheet")
    def stylesheet() -> Response:
        """The one style sheet."""
        css = files("fundpipe.desk").joinpath("static/desk.css").read_text(encoding="utf-8")
        return Response(css, media_type="text/css")

    @app.get("/", openapi_extra=PUBLIC, summary="Home")
    def home(request: Request) -> Response:
        """To the morning when signed in, else to the sign-in page."""
        return RedirectResponse("/morning" if _session(request).person else "/sign-in", 303)

    @app.get("/sign-in", openapi_extra=PUBLIC, summary="Sign-in page", response_class=HTMLResponse)
    def sign_in_page(request: Request, next: str = "/morning") -> Response:
        """The sign-in form (a local account, or the identity provider when configured)."""
        return _page(request, "sign_in.html", next=local_path(next), oidc=state.oidc is not None)

    @app.post("/sign-in", openapi_extra=PUBLIC, summary="Sign in with a local account")
    def sign_in(
        request: Request,
        email: Annotated[str, Form()],
        password: Annotated[str, Form()],
        next: Annotated[str, Form()] = "/morning",
    ) -> Response:
        """Check a local account's password (failures throttled per account and address)."""
        address = _address(request)
        if state.throttle.blocked(email, address):
            state.log.event(
                "sign_in_refused", email=email, address=address, detail="too many failures"
            )
            return _page(
                request,
                "sign_in.html",
                429,
                next=local_path(next),
                oidc=state.oidc is not None,
                error="Too many failed sign-ins: wait a few minutes and try again.",
            )
        account = state.accounts.check(email, password)
        if account is None:
            state.throttle.failed(email, address)
            state.log.event(
                "sign_in_refused", email=email, address=address, detail="wrong email or password"
            )
            return _page(
                request,
                "sign_in.html",
                401,
                next=local_path(next),
                oidc=state.oidc is not None,
                error="Wrong email or password.",
            )
        person = Person(account.email, account.name, "local")
        request.state.session = _session(request).signed_in(person, desk.clock())
        state.log.event("signed_in", email=person.email, address=address, detail="local account")
        return RedirectResponse(local_path(next), status_code=303)

    @app.post("/sign-out", openapi_extra=PUBLIC, summary="Sign out")
    def sign_out(request: Request) -> Response:
        """End the session."""
        email = _person_or_none(request)
        request.state.session = Session()
        if email:
            state.log.event("signed_out", email=email, address=_address(request))
        return RedirectResponse("/sign-in", status_code=303)

    @app.get("/first-admin/{token}", openapi_extra=PUBLIC, summary="First admin's page")
    def first_admin_page(request: Request, token: str) -> Response:
        """The form that makes the first account, behind the one-time link printed at start."""
        if not state.accounts.token_valid(token):
            raise HTTPException(404, "This link was used already, or is not the one printed.")
        return _page(request, "first_admin.html", token=token)

    @app.post("/first-admin/{token}", openapi_extra=PUBLIC, summary="Make the first account")
    def first_admin(
        request: Request,
        token: str,
        email: Annotated[str, Form()],
        name: Annotated[str, Form()],
        password: Annotated[str, Form()],
    ) -> Response:
        """Make the first admin's local account (the link then stops working)."""
        from fundpipe.errors import InputError

        try:
            account = state.accounts.redeem(token, email, name, password)
        except InputError as error:
            return _page(request, "first_admin.html", 400, token=token, error=str(error))
        if account is None:
            raise HTTPException(404, "This link was used already, or is not the one printed.")
        state.log.event("account_made", email=account.email, detail="first admin, by the link")
        return _page(
            request,
            "message.html",
            message=f"The account {account.email} is made. List it in the members file "
            f"({desk.members_file}) to give it an organization, then sign in.",
        )

    if state.oidc is not None:
        state.oidc.add_routes(app, state.log, PUBLIC)

    @app.get("/morning", openapi_extra=SIGNED_IN, summary="The morning")
    def morning(request: Request, person: SignedIn) -> Response:
        """One page across the person's organizations: last night's verdict, what to do."""
        mornings = [org_morning(org) for org in state.orgs_of(person)]
        return _page(request, "morning.html", mornings=mornings)

    @app.get("/orgs/{org_id}/exceptions", openapi_extra=MEMBER, summary="The exception queue")
    def exception_queue(request: Request, org: MemberOrg, person: SignedIn) -> Response:
        """The organization's open exceptions: age, amount, what to do; acknowledge each."""
        return _page(
            request,
            "exceptions.html",
            org=org,
            exceptions=open_exceptions(org),
            may_act=state.members.may(person.email, org.id, Right.ACT_ON_EXCEPTIONS),
            done=request.query_params.get("done"),
        )

    @app.post(
        "/orgs/{org_id}/exceptions/{exception_id}/acknowledge",
        openapi_extra=MEMBER,
        summary="Acknowledge an exception",
    )
    def acknowledge(
        request: Request,
        org: MemberOrg,
        person: SignedIn,
        exception_id: str,
        note: Annotated[str, Form()],
    ) -> Response:
        """Acknowledge one open exception with a note, as the signed-in person."""
        if not state.members.may(person.email, org.id, Right.ACT_ON_EXCEPTIONS):
            state.log.event(
                "refused",
                email=person.email,
                org=org.id,
                path=request.url.path,
                address=_address(request),
                detail="the role may not act on exceptions",
            )
            raise HTTPException(403, "Your role here may not acknowledge exceptions.")
        if not note.strip():
            raise HTTPException(400, "An acknowledgement needs a note saying what was done.")
        done = acknowledge_exception(org, exception_id, note=note, person=person, now=desk.clock())
        if done is None:
            raise HTTPException(404, "No such open exception.")
        state.log.event(
            "acknowledged",
            email=person.email,
            org=org.id,
            path=request.url.path,
            detail=exception_id,
        )
        return RedirectResponse(
            f"/orgs/{quote(org.id)}/exceptions?done={quote(exception_id)}", status_code=303
        )

    return app
