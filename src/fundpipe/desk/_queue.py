"""The morning and the exception queue: what was found last night, and acting on it.

The queue (`/orgs/{org_id}/exceptions`) filters by kind, owner and age and sorts by age,
amount or kind through its query (a GET only reads). Each exception has its page
(`/orgs/{org_id}/exceptions/{exception_id}`): its history as `fundpipe exceptions show` prints
it. A person with the right acknowledges, assigns (to a member of the organization), comments,
or assigns the exceptions ticked on the queue at once: each act is a POST with the CSRF token,
an event of the exception's history and of the durable record, by the signed-in person.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from fundpipe.desk._exceptions_reading import (
    AGES,
    QUEUE_PAGE,
    UNASSIGNED,
    Sort,
    act_on,
    exception_page,
    member_named,
    members_of,
    owner_text,
    queue,
    queue_view,
    unresolved_ids,
)
from fundpipe.desk._members import Right
from fundpipe.desk._reading import DeskOrg, org_morning
from fundpipe.desk._session import Person
from fundpipe.desk._upload import RECENT_DAYS, recent_uploads_of
from fundpipe.desk._web import MEMBER, SIGNED_IN, MemberOrg, SignedIn, page, require, state_of
from fundpipe.reconcile import acknowledge, assign, comment
from fundpipe.vocabulary import ExceptionRecord

__all__ = ["router"]

router = APIRouter()

#: What the page says after each act (the query's `act`), of the ids in `done`.
DONE = {"acknowledged": "acknowledged", "assigned": "assigned", "commented": "commented on"}
#: Where an act's form sends the person back to (its `back` field).
BACKS = ("queue", "exception")


@router.get("/morning", openapi_extra=SIGNED_IN, summary="The morning")
def morning(request: Request, person: SignedIn) -> Response:
    """One page across the person's organizations: last night's verdict, what to do."""
    orgs = state_of(request).orgs_of(person)
    mornings = [org_morning(org) for org in orgs]
    uploads = {org.id: recent_uploads_of(request, org, person.email) for org in orgs}
    return page(
        request, "morning.html", mornings=mornings, uploads=uploads, recent_days=RECENT_DAYS
    )


def _done(request: Request) -> str | None:
    """The line saying what the last act did (from the query an act redirected to)."""
    ids, act = request.query_params.get("done"), request.query_params.get("act", "acknowledged")
    if not ids or act not in DONE:
        return None
    return f"{ids} {DONE[act]}."


@router.get("/orgs/{org_id}/exceptions", openapi_extra=MEMBER, summary="The exception queue")
def exception_queue(request: Request, org: MemberOrg, person: SignedIn) -> Response:
    """The organization's open exceptions: age, owner, amount, what to do; filtered by kind,
    owner (or unassigned) and age, sorted by age, amount or kind (the query: ``kind``,
    ``owner``, ``age``, ``sort``); acknowledge or assign each, or assign those ticked."""
    try:
        view = queue_view(request.query_params)
    except ValueError as error:
        raise HTTPException(400, f"This queue cannot be shown: {error}.") from None
    state = state_of(request)
    return page(
        request,
        "exceptions.html",
        org=org,
        view=view,
        queue=queue(org, view),
        page_size=QUEUE_PAGE,
        sorts=list(Sort),
        ages=AGES,
        unassigned=UNASSIGNED,
        members=members_of(state.members, org.id),
        may_act=state.members.may(person.email, org.id, Right.ACT_ON_EXCEPTIONS),
        done=_done(request),
    )


@router.get(
    "/orgs/{org_id}/exceptions/{exception_id}",
    openapi_extra=MEMBER,
    summary="One exception and its history",
)
def exception_detail(
    request: Request, org: MemberOrg, person: SignedIn, exception_id: str
) -> Response:
    """One exception and its whole history, as `fundpipe exceptions show` prints it, with the
    acts the person's role may do on it."""
    shown = exception_page(org, exception_id)
    if shown is None:
        raise HTTPException(404, "No such page.")
    state = state_of(request)
    return page(
        request,
        "exceptions_one.html",
        org=org,
        shown=shown,
        members=members_of(state.members, org.id),
        may_act=state.members.may(person.email, org.id, Right.ACT_ON_EXCEPTIONS),
        done=_done(request),
    )


def _back(org: DeskOrg, back: str, ids: list[str], act: str) -> RedirectResponse:
    """To the queue (or the one exception's page) saying what was done."""
    where = f"/orgs/{quote(org.id)}/exceptions"
    if back == "exception" and len(ids) == 1:
        where += f"/{quote(ids[0])}"
    query = urlencode({"done": ", ".join(ids), "act": act})
    return RedirectResponse(f"{where}?{query}", status_code=303)


def _act(
    request: Request,
    org: DeskOrg,
    person: Person,
    ids: list[str],
    act: Callable[..., ExceptionRecord],
    event: str,
    **fields: str,
) -> None:
    """Do ``act`` on each of ``ids`` as ``person``, and log each (404 for an id that is not an
    unresolved exception of the organization)."""
    state = state_of(request)
    for exception_id in ids:
        done = act_on(org, act, exception_id, person=person, now=state.desk.clock(), **fields)
        if done is None:
            raise HTTPException(404, "No such open exception.")
        state.log.event(
            event, email=person.email, org=org.id, path=request.url.path, detail=exception_id
        )


def _assignee(request: Request, org: DeskOrg, to: str) -> str:
    """The owner an assignment to ``to`` (an email) records; refused (400) unless ``to`` is a
    member of the organization."""
    member = member_named(state_of(request).members, org.id, to)
    if member is None:
        raise HTTPException(
            400, "An exception can be assigned only to a member of this organization."
        )
    return owner_text(member)


@router.post(
    "/orgs/{org_id}/exceptions/{exception_id}/acknowledge",
    openapi_extra=MEMBER,
    summary="Acknowledge an exception",
)
def acknowledge_one(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    exception_id: str,
    note: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "queue",
) -> Response:
    """Acknowledge one open exception with a note, as the signed-in person."""
    require(request, person, org, Right.ACT_ON_EXCEPTIONS, "acknowledge exceptions")
    if not note.strip():
        raise HTTPException(400, "An acknowledgement needs a note saying what was done.")
    _act(request, org, person, [exception_id], acknowledge, "acknowledged", note=note)
    return _back(org, back, [exception_id], "acknowledged")


@router.post(
    "/orgs/{org_id}/exceptions/{exception_id}/assign",
    openapi_extra=MEMBER,
    summary="Assign an exception to a member",
)
def assign_one(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    exception_id: str,
    to: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "queue",
) -> Response:
    """Make a member of the organization (``to``: their email) the owner of one exception."""
    require(request, person, org, Right.ACT_ON_EXCEPTIONS, "assign exceptions")
    owner = _assignee(request, org, to)
    _act(request, org, person, [exception_id], assign, "assigned", to=owner)
    return _back(org, back, [exception_id], "assigned")


@router.post(
    "/orgs/{org_id}/exceptions/{exception_id}/comment",
    openapi_extra=MEMBER,
    summary="Comment on an exception",
)
def comment_one(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    exception_id: str,
    note: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "exception",
) -> Response:
    """Add the signed-in person's comment to one exception's history."""
    require(request, person, org, Right.ACT_ON_EXCEPTIONS, "comment on exceptions")
    if not note.strip():
        raise HTTPException(400, "A comment needs its text.")
    _act(request, org, person, [exception_id], comment, "commented", note=note)
    return _back(org, back, [exception_id], "commented")


@router.post(
    "/orgs/{org_id}/exceptions/bulk-assign",
    openapi_extra=MEMBER,
    summary="Assign the exceptions ticked to a member",
)
def assign_ticked(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    exception_id: Annotated[list[str] | None, Form()] = None,
    to: Annotated[str, Form()] = "",
) -> Response:
    """Make a member of the organization (``to``: their email) the owner of every exception
    ticked on the queue (``exception_id``, one per tick); nothing is assigned when one of them
    is not an unresolved exception of the organization."""
    require(request, person, org, Right.ACT_ON_EXCEPTIONS, "assign exceptions")
    ids = list(dict.fromkeys(i.strip() for i in exception_id or () if i.strip()))
    if not ids:
        raise HTTPException(400, "Tick the exceptions to assign first.")
    owner = _assignee(request, org, to)
    if set(ids) - unresolved_ids(org):
        raise HTTPException(404, "No such open exception: nothing was assigned.")
    _act(request, org, person, ids, assign, "assigned", to=owner)
    return _back(org, "queue", ids, "assigned")
