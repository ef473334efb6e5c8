"""`FundClient`: the async client of the Fund Distribution Service.

Longer than ~400 lines: one class whose methods are the service's operations, one each (the
public surface in one place); what they share lives in the private modules beside it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from fundpipe.client._answers import CreatedDistribution
from fundpipe.client._config import ClientConfig
from fundpipe.client._error_map import unavailable_error
from fundpipe.client._errors import APIError, NotFoundError
from fundpipe.client._forms import ReferenceForm
from fundpipe.client._models import (
    Contact,
    Distribution,
    DistributionNotification,
    DistributionPayment,
    Entity,
    EntityPaymentInstructions,
    FinancialAccount,
    Organization,
    PaymentInstructions,
    Vehicle,
)
from fundpipe.client._pagination import (
    AnswerFetcher,
    PageFetcher,
    Paginator,
    iter_raw_pages,
    iter_raw_pages_ahead,
)
from fundpipe.client._ratelimit import RateGate
from fundpipe.client._requester import Requester
from fundpipe.client._retry import Outage, Timer, describe_seconds

logger = logging.getLogger("fundpipe.client")

#: Page size the list operations ask for (the interface's maximum).
DEFAULT_PAGE_SIZE = 100

CreateElements = Sequence[Mapping[str, Any] | BaseModel]
M = TypeVar("M", bound=BaseModel)
P = TypeVar("P")
A = ParamSpec("A")


def _segment(value: str) -> str:
    """A path segment from an id: percent-encoded so an id can never change the path."""
    if not value:
        msg = "an id must not be empty"
        raise ValueError(msg)
    return quote(value, safe="")


class FundClient:
    """Async client of the Fund Distribution Service; use as
    `async with FundClient(settings.client_config()) as c:` (a `ClientConfig`).

    Operations (lists return a lazy `Paginator`, creates a list of the created records):

    - distributions: `create_distributions` (`create_distribution_ids` for the ids only),
      `list_distributions`, `get_distribution`,
      `list_distribution_payments`, `list_payment_notifications`
    - entities: `create_entities`, `list_entities`, `get_entity`, `associate_contacts`,
      `list_entity_payment_instructions`
    - contacts: `create_contacts`, `list_contacts`, `get_contact`
    - payment instructions: `create_payment_instructions`, `get_payment_instructions`
    - financial accounts: `list_financial_accounts` (organization, optional `ids` filter),
      `list_vehicle_financial_accounts`, `get_financial_account`
    - vehicles and organizations: `list_vehicles`, `get_vehicle`, `list_organizations`,
      `get_organization`
    - bulk reads: `raw_pages(path, params, operation=None)` yields the raw JSON pages of any
      list.

    Optional operations — the ones the interface does not show (`list_vehicles`,
    `get_vehicle`, `list_organizations`, `get_organization`, the organization-wide
    `list_financial_accounts`, `associate_contacts`) — take their paths from `config.paths`
    (`path_of(name, **ids)`) and raise `OperationUnavailableError` on 404/405/501, for callers
    to turn into a warning. Entity, contact and payment-instruction creates adapt to the form
    the service takes once per path (`fundpipe.client._forms`); `body_forms` holds the learned
    forms (pass an earlier night's as `body_forms=`), `notes` says so for the run summary, and
    `outages` lists the service outages ridden out or given up on.

    Every request is authorized by the client-credentials flow, carries `X-Organization-Id`
    when `config.org_id` is set, waits for the client-side rate limit and concurrency bound,
    and is retried by the policy in `fundpipe.client._retry`. Creates send a deterministic
    `Idempotency-Key` (`idempotency_key(org_id, "POST", path, body)`) unless one is passed.
    `transport` replaces the network (tests pass `httpx.ASGITransport(app=create_app())`);
    `clock` returns the current aware datetime (token expiry, HTTP-date `Retry-After`);
    `rate_gate` replaces the client-side rate limit (tests pass a `RateGate` on a virtual clock);
    `timer` is the clock of the retry deadline, told of each wait (tests pass a virtual one).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], datetime] | None = None,
        rate_gate: RateGate | None = None,
        timer: Timer | None = None,
        body_forms: Mapping[str, str] | None = None,
    ) -> None:
        """Configure the client from `config`; no network I/O happens before the first call."""
        if not isinstance(config, ClientConfig):
            msg = "FundClient takes a ClientConfig: pass settings.client_config()"
            raise TypeError(msg)
        self.config = config
        self._requester = Requester(
            config, transport=transport, clock=clock, rate_gate=rate_gate, timer=timer
        )
        self._reference_form = ReferenceForm(self._requester, config.org_id, body_forms)
        # Where payment instructions are read: the interface's path first (see
        # `get_payment_instructions`); the /v1 one once it is the one that answered.
        self._pmi_paths = ("/payment_instructions/", "/v1/payment_instructions/")

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Enter the client's context; connections are opened on demand."""
        await self._requester.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close every pooled connection."""
        await self._requester.aclose()

    async def aclose(self) -> None:
        """Close every pooled connection (for use without `async with`)."""
        await self._requester.aclose()

    @property
    def body_forms(self) -> dict[str, str]:
        """Create path → the body form the service was found to want (`external_references`).

        Learned during this client's life; paths not listed send `external_reference`.
        """
        return self._reference_form.body_forms

    @property
    def outages(self) -> list[Outage]:
        """The runs of retried failures so far: ridden out (`ended`) or given up on."""
        return list(self._requester.outages)

    @property
    def notes(self) -> list[str]:
        """Plain-language notes for the run summary: a body form that was learned, and the
        longest outage ridden out (how long the service was unavailable)."""
        notes = list(self._reference_form.notes)
        ridden = [o for o in self._requester.outages if o.ended]
        if ridden:
            longest = max(ridden, key=lambda o: o.seconds)
            notes.append(
                f"the service was unavailable for up to {describe_seconds(longest.seconds)} "
                f"({longest.reason or 'failures'} on {longest.method} {longest.path}, "
                f"{longest.attempts} attempts; {len(ridden)} outage(s) in all) and the run "
                "waited it out"
            )
        return notes

    @property
    def token_fetches(self) -> int:
        """How many access tokens this client has fetched so far."""
        return self._requester.auth.fetch_count

    def raw_pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        operation: str | None = None,
        ahead: bool | Callable[[], bool] = False,
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the raw JSON pages (dicts with `data`, `next_page_url`, ...) of any list.

        For bulk ingestion (e.g. into Arrow): the records are not validated into models. Pages
        are fetched one at a time as they are consumed; with `ahead`, the next page is asked
        for while the current one is decoded and used (`iter_raw_pages_ahead`, for lists of
        large pages; a callable `ahead` says, before each page, whether the caller will read
        past it: only then is the next one asked for early). With
        `operation` (a name of `config.paths`, for `path_of(operation)`), a 404/405/501
        raises `OperationUnavailableError`.
        """
        if ahead:
            answers: AnswerFetcher = self._requester.fetch_answer
            if operation is not None:
                answers = self._guarded(answers, operation, path)
            wanted = ahead if callable(ahead) else None
            return iter_raw_pages_ahead(answers, path, params, wanted=wanted)
        fetch: PageFetcher = self._requester.fetch_page
        if operation is not None:
            fetch = self._guarded(fetch, operation, path)
        return iter_raw_pages(fetch, path, params)

    def path_of(self, operation: str, **ids: str) -> str:
        """The configured path of a guessed operation (`config.paths`), ids filled in.

        Names: `vehicles`, `vehicle` (veh_id), `organizations`, `organization` (org_id),
        `financial_accounts`, `entity_contacts` (ent_id).
        """
        template = self.config.paths[operation]
        return template.format(**{k: _segment(v) for k, v in ids.items()})

    def _guarded(
        self, fetch: Callable[A, Awaitable[P]], operation: str, path: str
    ) -> Callable[A, Awaitable[P]]:
        async def guarded(*args: A.args, **kwargs: A.kwargs) -> P:
            """One page; a 404/405/501 becomes `OperationUnavailableError`."""
            try:
                return await fetch(*args, **kwargs)
            except APIError as exc:
                raise unavailable_error(exc, operation, path, ()) from exc

        return guarded

    def _optional_list(
        self, operation: str, model: type[M], params: Mapping[str, Any]
    ) -> Paginator[M]:
        path = self.path_of(operation)
        fetch = self._guarded(self._requester.fetch_page, operation, path)
        return Paginator(fetch, path, params, lambda item: self._requester.parse(model, item))

    async def _optional_get(self, operation: str, model: type[M], **ids: str) -> M:
        path = self.path_of(operation, **ids)
        try:
            return await self._requester.get_object(path, model)
        except APIError as exc:
            raise unavailable_error(exc, operation, path, tuple(ids.values())) from exc

    # --- distributions -----------------------------------------------------------------------

    async def create_distributions(
        self, elements: CreateElements, *, idempotency_key: str | None = None
    ) -> list[Distribution]:
        """Create distributions atomically (`POST /v1/distributions`, 1–100 elements).

        Elements are dicts or `DistributionCreate` models; amounts are integer cents.
        """
        return await self._requester.create(
            "/v1/distributions", elements, Distribution, idempotency_key
        )

    async def create_distribution_ids(
        self, elements: CreateElements, *, idempotency_key: str | None = None
    ) -> list[CreatedDistribution]:
        """`create_distributions` (the same request and errors), answering each created
        distribution's id, reference and first page of payment ids only: no `Distribution` is
        built (a 100-distribution create answers 10k nested payments)."""
        return await self._requester.create_distribution_ids(
            "/v1/distributions", elements, idempotency_key
        )

    def list_distributions(self, *, limit: int = DEFAULT_PAGE_SIZE) -> Paginator[Distribution]:
        """The organization's distributions, newest first."""
        return self._requester.paginate("/v1/distributions", Distribution, {"limit": limit})

    async def get_distribution(self, dst_id: str) -> Distribution:
        """One distribution by id."""
        return await self._requester.get_object(
            f"/v1/distributions/{_segment(dst_id)}", Distribution
        )

    def list_distribution_payments(
        self, dst_id: str, *, limit: int = DEFAULT_PAGE_SIZE
    ) -> Paginator[DistributionPayment]:
        """The payments of one distribution."""
        path = f"/v1/distributions/{_segment(dst_id)}/payments"
        return self._requester.paginate(path, DistributionPayment, {"limit": limit})

    def list_payment_notifications(
        self, dpmt_id: str, *, limit: int = DEFAULT_PAGE_SIZE
    ) -> Paginator[DistributionNotification]:
        """The notifications of one distribution payment."""
        path = f"/v1/distribution_payments/{_segment(dpmt_id)}/notifications"
        return self._requester.paginate(path, DistributionNotification, {"limit": limit})

    # --- entities, contacts, payment instructions --------------------------------------------

    async def create_entities(
        self, elements: CreateElements, *, idempotency_key: str | None = None
    ) -> list[Entity]:
        """Create entities atomically (`POST /v1/entities`); dicts or `EntityCreate` models.

        The body form of `external_reference` adapts to the service (`ReferenceForm.create` in
        `fundpipe.client._forms`): `body_forms` and `notes` record a switch.
        """
        return await self._reference_form.create("/v1/entities", elements, Entity, idempotency_key)

    def list_entities(self, *, limit: int = DEFAULT_PAGE_SIZE) -> Paginator[Entity]:
        """The organization's entities."""
        return self._requester.paginate("/v1/entities", Entity, {"limit": limit})

    async def get_entity(self, ent_id: str) -> Entity:
        """One entity by id (with its payment-instructions URLs)."""
        return await self._requester.get_object(f"/v1/entities/{_segment(ent_id)}", Entity)

    def list_entity_payment_instructions(
        self, ent_id: str, *, limit: int = DEFAULT_PAGE_SIZE
    ) -> Paginator[PaymentInstructions]:
        """The payment instructions of one entity."""
        path = f"/v1/entities/{_segment(ent_id)}/payment_instructions"
        return self._requester.paginate(path, PaymentInstructions, {"limit": limit})

    async def associate_contacts(
        self, ent_id: str, contact_ids: Sequence[str], *, idempotency_key: str | None = None
    ) -> list[Contact]:
        """Associate 1–100 contacts with an entity (path `paths["entity_contacts"]`); optional
        (the interface does not show the path): a 404/405/501 not naming `ent_id` raises
        `OperationUnavailableError`."""
        return await self._associate(ent_id, contact_ids, idempotency_key, Contact)

    async def associate_contact_ids(
        self, ent_id: str, contact_ids: Sequence[str], *, idempotency_key: str | None = None
    ) -> list[str]:
        """`associate_contacts` (the same request and errors), answering only the ids of the
        contacts associated: no `Contact` is built."""
        return await self._associate(ent_id, contact_ids, idempotency_key, None)

    async def _associate(
        self, ent_id: str, contact_ids: Sequence[str], key: str | None, model: type[M] | None
    ) -> list[Any]:
        path = self.path_of("entity_contacts", ent_id=ent_id)
        body = [{"id": contact_id} for contact_id in contact_ids]
        try:
            if model is None:
                return await self._requester.create_ids(path, body, key)
            return await self._requester.create(path, body, model, key)
        except APIError as exc:
            raise unavailable_error(exc, "associate_contacts", path, (ent_id,)) from exc

    async def create_contacts(
        self, elements: CreateElements, *, idempotency_key: str | None = None
    ) -> list[Contact]:
        """Create contacts atomically (`POST /v1/contacts`); dicts or `ContactCreate` models.

        The body form of `external_reference` adapts as for `create_entities`.
        """
        return await self._reference_form.create("/v1/contacts", elements, Contact, idempotency_key)

    def list_contacts(self, *, limit: int = DEFAULT_PAGE_SIZE) -> Paginator[Contact]:
        """The organization's contacts."""
        return self._requester.paginate("/v1/contacts", Contact, {"limit": limit})

    async def get_contact(self, cnt_id: str) -> Contact:
        """One contact by id."""
        return await self._requester.get_object(f"/v1/contacts/{_segment(cnt_id)}", Contact)

    async def create_payment_instructions(
        self, elements: CreateElements, *, idempotency_key: str | None = None
    ) -> list[EntityPaymentInstructions]:
        """Create payment instructions for entities (`POST /v1/payment_instructions`).

        Elements are `{entity, payment_instructions: [...]}` dicts or
        `PaymentInstructionsCreate` models. Account numbers are sent, never logged. An
        instruction's `external_reference` is left out once the service refuses it (as for
        `create_entities`).
        """
        return await self._reference_form.create(
            "/v1/payment_instructions", elements, EntityPaymentInstructions, idempotency_key
        )

    async def get_payment_instructions(self, pmi_id: str) -> PaymentInstructions:
        """One payment instructions record by id.

        `GET /payment_instructions/{id}` as the interface writes it; on a 404 there,
        `GET /v1/payment_instructions/{id}` once (every other path carries `/v1`, so the
        interface's may be a slip), and the path that answered is tried first from then on.
        """
        first, second = self._pmi_paths
        try:
            return await self._requester.get_object(first + _segment(pmi_id), PaymentInstructions)
        except NotFoundError:
            record = await self._requester.get_object(
                second + _segment(pmi_id), PaymentInstructions
            )
            self._pmi_paths = (second, first)
            return record

    # --- financial accounts, vehicles, organizations -----------------------------------------

    def list_financial_accounts(
        self, ids: Sequence[str] | None = None, *, limit: int = DEFAULT_PAGE_SIZE
    ) -> Paginator[FinancialAccount]:
        """The organization's financial accounts, newest first; `ids` filters (1–100 ids).

        Optional (path `paths["financial_accounts"]`, filter name `ids` are guesses): a
        404/405/501 raises `OperationUnavailableError` when iterated.
        """
        params: dict[str, Any] = {"limit": limit}
        if ids is not None:
            if not 1 <= len(ids) <= 100:
                msg = "ids filters on 1 to 100 financial account ids"
                raise ValueError(msg)
            params["ids"] = list(ids)
        return self._optional_list("financial_accounts", FinancialAccount, params)

    def list_vehicle_financial_accounts(
        self, veh_id: str, *, limit: int = DEFAULT_PAGE_SIZE
    ) -> Paginator[FinancialAccount]:
        """The financial accounts of one vehicle."""
        path = f"/v1/vehicles/{_segment(veh_id)}/financial_accounts"
        return self._requester.paginate(path, FinancialAccount, {"limit": limit})

    async def get_financial_account(self, fa_id: str) -> FinancialAccount:
        """One financial account (with its balance) by id."""
        return await self._requester.get_object(
            f"/v1/financial_accounts/{_segment(fa_id)}", FinancialAccount
        )

    def list_vehicles(self, *, limit: int = DEFAULT_PAGE_SIZE) -> Paginator[Vehicle]:
        """The organization's vehicles (optional: `OperationUnavailableError` when unserved)."""
        return self._optional_list("vehicles", Vehicle, {"limit": limit})

    async def get_vehicle(self, veh_id: str) -> Vehicle:
        """One vehicle by id (optional: `OperationUnavailableError` when unserved)."""
        return await self._optional_get("vehicle", Vehicle, veh_id=veh_id)

    def list_organizations(self, *, limit: int = DEFAULT_PAGE_SIZE) -> Paginator[Organization]:
        """The organizations this client may act on (optional, as `list_vehicles`)."""
        return self._optional_list("organizations", Organization, {"limit": limit})

    async def get_organization(self, org_id: str) -> Organization:
        """One organization by id (optional, as `get_vehicle`)."""
        return await self._optional_get("organization", Organization, org_id=org_id)
