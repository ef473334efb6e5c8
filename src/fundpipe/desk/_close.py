"""The close: each month's state (prepared, reviewed, changed after sign-off) and its acts —
a preparer closes a month (over open exceptions only when ticked), a reviewer (another
signed-in person, told apart by identity, not by name) reviews, rejects with a reason or
reopens it, and a person acknowledges the changes after sign-off. Every act goes through
`fundpipe.reconcile`, as `fundpipe close` does, recording the signed-in person (name and
email) and their identity (``desk:oidc:<subject>`` / ``desk:local:<email>``). A refusal of
the library (the same person reviewing, a month not yet ended) is shown on the month's page.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from fundpipe.desk._members import Right
from fundpipe.desk._reading import DeskOrg, beside, open_tally
from fundpipe.desk._session import Person
from fundpipe.desk._web import MEMBER, MemberOrg, SignedIn, page, require, state_of
from fundpipe.reconcile import (
    CloseError,
    SignOff,
    acknowledge_changes,
    close_period,
    identity_of,
    list_periods,
    reject_period,
    reopen_period,
    review_period,
    signoffs,
)

__all__ = ["router"]

router = APIRouter()
#: The open exceptions a month's page lists before the close (the queue has every one).
OPEN_LISTED = 50


def when(at: datetime | None) -> str:
    """A time as a person writes it: ``2026-12-01 21:35 UTC`` (empty for none)."""
    return "" if at is None else f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _months(request: Request, org: DeskOrg) -> list[SignOff]:
    """The organization's months, newest first, each with its changes after sign-off."""
    if not org.warehouse_file.exists():
        return []
    clock = state_of(request).desk.clock
    periods = list_periods(org.settings, clock=clock)
    return list(reversed(signoffs(org.settings, periods, clock=clock)))


def _month(request: Request, org: DeskOrg, period: str) -> SignOff:
    """One month of the organization (404 for a month it has none of, or not a month)."""
    for month in _months(request, org):
        if month.state.period == period:
            return month
    raise HTTPException(404, "No such month.")


@router.get("/orgs/{org_id}/close", openapi_extra=MEMBER, summary="The close: every month")
def months_page(request: Request, org: MemberOrg, person: SignedIn) -> Response:
    """Every month of the organization: open or closed, who prepared and reviewed it and when,
    and whether it changed after sign-off."""
    return page(request, "close.html", org=org, months=_months(request, org), when=when)


def _month_page(
    request: Request,
    org: DeskOrg,
    person: Person,
    period: str,
    *,
    refusal: str | None = None,
    status: int = 200,
) -> Response:
    members = state_of(request).members
    with beside(open_tally, org, order="age", limit=OPEN_LISTED) as open_now:
        month = _month(request, org, period)
        listed = open_now.result()
    # the person who closed it is offered no review of it (the library refuses one anyway)
    prepared_it = (
        identity_of(month.state.prepared_os_user) == person.identity
        and not org.settings.pipeline.one_person_close
    )
    return page(
        request,
        "close_month.html",
        status,
        org=org,
        month=month,
        open_now=listed,
        may_close=members.may(person.email, org.id, Right.CLOSE),
        may_review=members.may(person.email, org.id, Right.REVIEW) and not prepared_it,
        prepared_it=prepared_it,
        may_acknowledge=members.may(person.email, org.id, Right.ACKNOWLEDGE_CHANGES),
        done=request.query_params.get("done"),
        refusal=refusal,
        when=when,
    )


@router.get("/orgs/{org_id}/close/{period}", openapi_extra=MEMBER, summary="One month's close")
def month_page(request: Request, org: MemberOrg, person: SignedIn, period: str) -> Response:
    """One month: its state, its open exceptions, its changes after sign-off, and the acts
    the person's role allows (close; review, reject, reopen; acknowledge the changes)."""
    return _month_page(request, org, person, period)


def _act(
    request: Request,
    org: DeskOrg,
    person: Person,
    period: str,
    name: str,
    act: Callable[[Any], object],
) -> Response:
    """Run one act of the library on the month, as ``person``; a refusal is the month's page
    saying why (409), a success goes back to it saying what was done."""
    _month(request, org, period)  # 404 for a month the organization has none of
    state = state_of(request)
    try:
        act(state.desk.clock)
    except CloseError as refused:
        state.log.event(
            "refused", email=person.email, org=org.id, path=request.url.path, detail=str(refused)
        )
        return _month_page(request, org, person, period, refusal=str(refused), status=409)
    state.log.event(name, email=person.email, org=org.id, path=request.url.path, detail=period)
    return RedirectResponse(
        f"/orgs/{quote(org.id)}/close/{quote(period)}?done={quote(name)}", status_code=303
    )


def _reason(reason: str, what: str) -> str:
    if not reason.strip():
        raise HTTPException(400, f"{what} needs a reason, in a few words.")
    return reason


@router.post("/orgs/{org_id}/close/{period}/close", openapi_extra=MEMBER, summary="Close a month")
def close_month(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    period: str,
    with_open_exceptions: Annotated[str, Form()] = "",
) -> Response:
    """Close the month as the signed-in preparer: its final report filed with its manifest.
    With exceptions open it is refused unless ``with_open_exceptions`` is ticked."""
    require(request, person, org, Right.CLOSE, "close a month")
    by = person.recorded_as[0]
    return _act(
        request,
        org,
        person,
        period,
        "closed",
        lambda clock: close_period(
            org.settings,
            period,
            prepared_by=by,
            with_open_exceptions=with_open_exceptions == "yes",
            clock=clock,
            user=person.identity,
        ),
    )


@router.post("/orgs/{org_id}/close/{period}/review", openapi_extra=MEMBER, summary="Review a month")
def review_month(request: Request, org: MemberOrg, person: SignedIn, period: str) -> Response:
    """Sign the month's close as its reviewer: another signed-in person than its preparer."""
    require(request, person, org, Right.REVIEW, "review a month")
    by = person.recorded_as[0]
    return _act(
        request,
        org,
        person,
        period,
        "reviewed",
        lambda clock: review_period(
            org.settings, period, reviewed_by=by, clock=clock, user=person.identity
        ),
    )


@router.post("/orgs/{org_id}/close/{period}/reject", openapi_extra=MEMBER, summary="Reject a month")
def reject_month(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    period: str,
    reason: Annotated[str, Form()] = "",
) -> Response:
    """Send the month's close back, with the reason (the reviewer's decision)."""
    require(request, person, org, Right.REVIEW, "reject a month")
    why = _reason(reason, "A rejection")
    by = person.recorded_as[0]
    return _act(
        request,
        org,
        person,
        period,
        "rejected",
        lambda clock: reject_period(
            org.settings, period, rejected_by=by, reason=why, clock=clock, user=person.identity
        ),
    )


@router.post("/orgs/{org_id}/close/{period}/reopen", openapi_extra=MEMBER, summary="Reopen a month")
def reopen_month(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    period: str,
    reason: Annotated[str, Form()] = "",
) -> Response:
    """Open a reviewed or rejected month again, with the reason; its next close is a new
    version beside the old."""
    require(request, person, org, Right.REVIEW, "reopen a month")
    why = _reason(reason, "A reopening")
    by = person.recorded_as[0]
    return _act(
        request,
        org,
        person,
        period,
        "reopened",
        lambda clock: reopen_period(
            org.settings, period, by=by, reason=why, clock=clock, user=person.identity
        ),
    )


@router.post(
    "/orgs/{org_id}/close/{period}/acknowledge-changes",
    openapi_extra=MEMBER,
    summary="Acknowledge a month's changes after sign-off",
)
def acknowledge_month_changes(
    request: Request, org: MemberOrg, person: SignedIn, period: str
) -> Response:
    """Record that the signed-in person saw the closed month's changes after sign-off: the
    month no longer shows as changed until another change comes."""
    require(request, person, org, Right.ACKNOWLEDGE_CHANGES, "acknowledge changes after sign-off")
    by = person.recorded_as[0]
    return _act(
        request,
        org,
        person,
        period,
        "changes_acknowledged",
        lambda clock: acknowledge_changes(
            org.settings, period, by=by, user=person.identity, clock=clock
        ),
    )
