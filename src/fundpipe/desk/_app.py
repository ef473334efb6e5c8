"""The desk's FastAPI app: :func:`create_app` builds it from a :class:`~fundpipe.desk.Desk`.

Every answer passes one middleware (`_session_and_headers`): it reads the signed session,
ends one past its idle or absolute timeout, and writes the cookie and the security headers
back. Every route runs one dependency first (`fundpipe.desk._web.csrf_checked`): a state change without the
session's CSRF token is refused (403) before anything else is looked at. A page of an
organization answers 404 to whoever is not its member, exactly as for an organization that
does not exist.

Each route says who may open it in its OpenAPI description (``x-desk-access``: ``public``,
``signed-in`` or ``member``), which is what the HTTP tests read to cover every route.
"""

from __future__ import annotations

import contextlib
import html
import logging
from datetime import timedelta
from importlib.resources import files
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.responses import Response as StarletteResponse

from fundpipe.desk import _close, _queue, _recon, _upload
from fundpipe.desk._config import Desk
from fundpipe.desk._session import COOKIE, Person, Session, local_path, security_headers
from fundpipe.desk._web import (
    PUBLIC,
    SIGNED_IN,
    DeskState,
    NotSignedInError,
    SignedIn,
    address,
    csrf_checked,
    page,
    person_or_none,
    session_of,
)
from fundpipe.warehouse import shared_reads

__all__ = ["DeskState", "create_app"]

log = logging.getLogger("fundpipe.desk")

#: The routers of the organizations' pages, each in its own module.
ROUTERS = [_queue.router, _recon.router, _close.router, _upload.router]


def _faultpage(request: Request, exc: Exception, state: DeskState) -> StarletteResponse:
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
        dependencies=[Depends(csrf_checked)],
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
        # a page's figures come from one read-only connection per warehouse (a GET writes
        # nothing; an act's POST opens its own, for writing)
        reads = shared_reads() if request.method == "GET" else contextlib.nullcontext()
        try:
            with reads:
                response: StarletteResponse = await call_next(request)
        except Exception as exc:  # a fault becomes one line on the page, never a traceback
            response = _faultpage(request, exc, state)
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
            return page(request, "message.html", error.status_code, message=error.detail)
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
        return RedirectResponse("/morning" if session_of(request).person else "/sign-in", 303)

    @app.get("/sign-in", openapi_extra=PUBLIC, summary="Sign-in page", response_class=HTMLResponse)
    def sign_inpage(request: Request, next: str = "/morning") -> Response:
        """The sign-in form (a local account, or the identity provider when configured)."""
        return page(request, "sign_in.html", next=local_path(next), oidc=state.oidc is not None)

    @app.post("/sign-in", openapi_extra=PUBLIC, summary="Sign in with a local account")
    def sign_in(
        request: Request,
        email: Annotated[str, Form()],
        password: Annotated[str, Form()],
        next: Annotated[str, Form()] = "/morning",
    ) -> Response:
        """Check a local account's password (failures throttled per account and address)."""
        client = address(request)
        if state.throttle.blocked(email, client):
            state.log.event(
                "sign_in_refused", email=email, address=client, detail="too many failures"
            )
            return page(
                request,
                "sign_in.html",
                429,
                next=local_path(next),
                oidc=state.oidc is not None,
                error="Too many failed sign-ins: wait a few minutes and try again.",
            )
        account = state.accounts.check(email, password)
        if account is None:
            state.throttle.failed(email, client)
            state.log.event(
                "sign_in_refused", email=email, address=client, detail="wrong email or password"
            )
            return page(
                request,
                "sign_in.html",
                401,
                next=local_path(next),
                oidc=state.oidc is not None,
                error="Wrong email or password.",
            )
        person = Person(account.email, account.name, "local")
        request.state.session = session_of(request).signed_in(person, desk.clock())
        state.log.event("signed_in", email=person.email, address=client, detail="local account")
        return RedirectResponse(local_path(next), status_code=303)

    @app.post("/sign-out", openapi_extra=PUBLIC, summary="Sign out")
    def sign_out(request: Request) -> Response:
        """End the session."""
        email = person_or_none(request)
        request.state.session = Session()
        if email:
            state.log.event("signed_out", email=email, address=address(request))
        return RedirectResponse("/sign-in", status_code=303)

    @app.get("/first-admin/{token}", openapi_extra=PUBLIC, summary="First admin's page")
    def first_adminpage(request: Request, token: str) -> Response:
        """The form that makes the first account, behind the one-time link printed at start."""
        if not state.accounts.token_valid(token):
            raise HTTPException(404, "This link was used already, or is not the one printed.")
        return page(request, "first_admin.html", token=token)

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
            return page(request, "first_admin.html", 400, token=token, error=str(error))
        if account is None:
            raise HTTPException(404, "This link was used already, or is not the one printed.")
        state.log.event("account_made", email=account.email, detail="first admin, by the link")
        return page(
            request,
            "message.html",
            message=f"The account {account.email} is made. List it in the members file "
            f"({desk.members_file}) to give it an organization, then sign in.",
        )

    if state.oidc is not None:
        state.oidc.add_routes(app, state.log, PUBLIC)

    for router in ROUTERS:
        app.include_router(router)

    return app
