"""The morning and the exception queue: what was found last night, and acting on it."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from fundpipe.desk._members import Right
from fundpipe.desk._reading import acknowledge_exception, open_exceptions, org_morning
from fundpipe.desk._web import MEMBER, SIGNED_IN, MemberOrg, SignedIn, page, require, state_of

__all__ = ["router"]

router = APIRouter()


@router.get("/morning", openapi_extra=SIGNED_IN, summary="The morning")
def morning(request: Request, person: SignedIn) -> Response:
    """One page across the person's organizations: last night's verdict, what to do."""
    mornings = [org_morning(org) for org in state_of(request).orgs_of(person)]
    return page(request, "morning.html", mornings=mornings)


@router.get("/orgs/{org_id}/exceptions", openapi_extra=MEMBER, summary="The exception queue")
def exception_queue(request: Request, org: MemberOrg, person: SignedIn) -> Response:
    """The organization's open exceptions: age, amount, what to do; acknowledge each."""
    members = state_of(request).members
    return page(
        request,
        "exceptions.html",
        org=org,
        exceptions=open_exceptions(org),
        may_act=members.may(person.email, org.id, Right.ACT_ON_EXCEPTIONS),
        done=request.query_params.get("done"),
    )


@router.post(
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
    require(request, person, org, Right.ACT_ON_EXCEPTIONS, "acknowledge exceptions")
    if not note.strip():
        raise HTTPException(400, "An acknowledgement needs a note saying what was done.")
    state = state_of(request)
    done = acknowledge_exception(
        org, exception_id, note=note, person=person, now=state.desk.clock()
    )
    if done is None:
        raise HTTPException(404, "No such open exception.")
    state.log.event(
        "acknowledged", email=person.email, org=org.id, path=request.url.path, detail=exception_id
    )
    return RedirectResponse(
        f"/orgs/{quote(org.id)}/exceptions?done={quote(exception_id)}", status_code=303
    )
