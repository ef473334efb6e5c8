"""Pydantic models of the service's records (read side) and create bodies (write side).

Records ignore unknown fields (`extra="ignore"`) so that a newer service does not break the
client, and their datetimes are timezone-aware: both renderings the interface mentions (`Z` and an
explicit offset such as `-05:00`) are accepted; a datetime without zone is refused. Money is
integer cents (`int`); the currency is a separate field.

Create models (`DistributionCreate`, `EntityCreate`, ...) refuse unknown fields so a typo fails
before anything is sent; the `create_*` operations also accept plain dicts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator


class ServiceRecord(BaseModel):
    """Base of every record returned by the service."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    object: str | None = None
    livemode: bool | None = None
    id: str


class Organization(ServiceRecord):
    """An organization (`org_...`)."""

    name: str | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None


class Vehicle(ServiceRecord):
    """A fund vehicle (`veh_...`) of an organization."""

    organization: str | None = None
    name: str | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None


class Balance(BaseModel):
    """A financial account's balance, in integer cents."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    total: int
    available: int
    total_end_of_last_month: int
    currency: str


class FinancialAccount(ServiceRecord):
    """A vehicle's account at the partner bank (`fa_...`) with its balance."""

    vehicle: str
    name: str | None = None
    type: str | None = None
    bank_name: str | None = None
    account_number_last_four: str | None = None
    balance: Balance
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None


class NestedList(BaseModel):
    """A list envelope nested in a record (its first page); follow `next_page_url` for more."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    object: str | None = None
    data: list[Any] = Field(default_factory=list)
    next_page_url: str | None = None
    previous_page_url: str | None = None
    has_more: bool | None = None
    url: str | None = None


class DistributionNotification(ServiceRecord):
    """A contact notified about a payment (`dntf_...`)."""

    contact: str | None = None


class NotificationList(NestedList):
    """The nested list of a payment's notifications."""

    data: list[DistributionNotification] = Field(default_factory=list)  # type: ignore[assignment]


class DistributionPayment(ServiceRecord):
    """One payment of a distribution (`dpmt_...`); `amount` in integer cents."""

    distribution: str | None = None
    amount: int
    currency: str
    entity: str | None = None
    payment_instructions: str | None = None
    status: str | None = None
    distribution_date_override: AwareDatetime | None = None
    recipient_confirmed_at: AwareDatetime | None = None
    verified_at: AwareDatetime | None = None
    disbursed_at: AwareDatetime | None = None
    failed_at: AwareDatetime | None = None
    failure_reason: str | None = None
    notifications: NotificationList | None = None


class PaymentList(NestedList):
    """The nested list of a distribution's payments (first page)."""

    data: list[DistributionPayment] = Field(default_factory=list)  # type: ignore[assignment]


class Distribution(ServiceRecord):
    """A staged fund distribution (`dst_...`) with the first page of its payments."""

    name: str | None = None
    vehicle: str | None = None
    external_reference: str | None = None
    distribution_date: AwareDatetime | None = None
    distribution_timezone: str | None = None
    short_id: str | None = None
    status: str | None = None
    published_at: AwareDatetime | None = None
    approved_at: AwareDatetime | None = None
    executed_at: AwareDatetime | None = None
    cancelled_at: AwareDatetime | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None
    sender_url: str | None = None
    recipient_url: str | None = None
    payments: PaymentList | None = None


class Entity(ServiceRecord):
    """An entity paid by distributions (`ent_...`)."""

    name: str | None = None
    type: str | None = None
    external_type: str | None = None
    external_reference: str | None = None
    payment_instructions: list[str] = Field(default_factory=list)
    sender_payment_instructions_url: str | None = None
    recipient_payment_instructions_url: str | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None

    @field_validator("payment_instructions", mode="before")
    @classmethod
    def _ids_from_envelope(cls, value: Any) -> Any:
        return _ids(value)


class Contact(ServiceRecord):
    """A contact that may be notified of payments (`cnt_...`)."""

    name: str | None = None
    email: str | None = None
    external_reference: str | None = None
    entities: list[str] = Field(default_factory=list)
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None

    @field_validator("entities", mode="before")
    @classmethod
    def _ids_from_envelope(cls, value: Any) -> Any:
        return _ids(value)


class PaymentInstructions(ServiceRecord):
    """Payment instructions of an entity (`pmi_...`); only the account's last four digits."""

    entity: str | None = None
    type: str | None = None
    beneficiary_name: str | None = None
    bank_name: str | None = None
    routing_number: str | None = None
    account_number_last_four: str | None = None
    branch_code: str | None = None
    external_reference: str | None = None
    created_at: AwareDatetime | None = None


class EntityPaymentInstructions(BaseModel):
    """One element of the create-payment-instructions answer: an entity and its `pmi_` ids."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    object: str | None = None
    livemode: bool | None = None
    entity: str
    payment_instructions: list[str] = Field(default_factory=list)

    @field_validator("payment_instructions", mode="before")
    @classmethod
    def _ids_from_envelope(cls, value: Any) -> Any:
        return _ids(value)


def _ids(value: Any) -> Any:
    """Accept a list of ids, a list of records with `id`, or a list envelope of either."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = value.get("data", [])
    if isinstance(value, list):
        return [item.get("id") if isinstance(item, dict) else item for item in value]
    return value


# --- create bodies -------------------------------------------------------------------------


class CreateModel(BaseModel):
    """Base of the create-body models: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NotificationCreate(CreateModel):
    """A contact to notify about a payment."""

    contact: str


class PaymentCreate(CreateModel):
    """A payment element of a distribution create: `amount` in integer cents (> 0)."""

    amount: int = Field(gt=0, strict=True)
    currency: Literal["USD"] = "USD"
    entity: str
    notifications: list[NotificationCreate] | None = None
    distribution_date_override: str | AwareDatetime | None = None


class DistributionCreate(CreateModel):
    """A distribution element of `POST /v1/distributions`.

    `distribution_date` is a plain wall-clock string (read in `distribution_timezone`) or a
    datetime carrying that zone's exact offset on that date.
    """

    name: str = Field(min_length=1)
    vehicle: str
    distribution_date: str | AwareDatetime
    payments: list[PaymentCreate] = Field(min_length=1)
    external_reference: str | None = None
    distribution_timezone: str | None = None


class EntityCreate(CreateModel):
    """An element of `POST /v1/entities`."""

    name: str = Field(min_length=1, max_length=255)
    type: str
    external_type: str | None = None
    external_reference: str | None = None


class ContactCreate(CreateModel):
    """An element of `POST /v1/contacts`."""

    name: str = Field(min_length=1, max_length=255)
    email: str
    external_reference: str | None = None


class PaymentInstructionCreate(CreateModel):
    """One instruction of an entity (`ach`, `domestic_wire`, `international_wire`); partial OK."""

    model_config = ConfigDict(extra="allow", frozen=True)  # wires add SWIFT/address fields

    type: str | None = None
    beneficiary_name: str | None = None
    account_number: str | None = Field(default=None, repr=False)
    routing_number: str | None = None
    bank_name: str | None = None
    branch_code: str | None = None
    external_reference: str | None = None


class PaymentInstructionsCreate(CreateModel):
    """An element of `POST /v1/payment_instructions`: an entity and its instructions."""

    entity: str
    payment_instructions: list[PaymentInstructionCreate] = Field(min_length=1)
