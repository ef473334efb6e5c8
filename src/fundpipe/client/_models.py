"""Pydantic models of the service's records (read side) and create bodies (write side).

Records ignore unknown fields (`extra="ignore"`) so that a newer service does not break the
client, and read every public form of the service in this one module, so no caller has to:

- an optional field that is null reads as its default, as an absent one does (lists become
  empty): the fields' own types take a null (no validator runs per record; a big night parses
  100k nested payments), and the list fields turn a null into `[]`; a contact's `entities`
  that is null is also left out of `model_fields_set`, as an absent one (the snapshot tells
  "not listed" from "none" that way);
- entities and contacts carry `external_reference` (a string, the interface and public docs) or
  `external_references` (an array of strings, the public spec): both are read, and the record
  exposes `external_reference` (the first) and `external_references` (all of them);
- lists of ids (`payment_instructions` of an entity, `entities` of a contact) may be bare ids,
  `{object, livemode, id}` objects, or a list envelope of either: they read as a list of ids;
- fields that are ours rather than the interface's (a payment's `distribution`, `disbursed_at`,
  `failed_at`, `failure_reason`, a contact's `entities`) are optional.

Their datetimes are timezone-aware: both renderings the interface mentions (`Z` and an
explicit offset such as `-05:00`) are accepted; a datetime without zone is refused. Money is
integer cents (`int`); the currency is a separate field.

Create models (`DistributionCreate`, `EntityCreate`, ...) refuse unknown fields so a typo fails
before anything is sent; the `create_*` operations also accept plain dicts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator


class _Record(BaseModel):
    """Base of every model read from the service."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ServiceRecord(_Record):
    """Base of every record returned by the service."""

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


class Balance(_Record):
    """A financial account's balance, in integer cents."""

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


class NestedList(_Record):
    """A list envelope nested in a record (its first page); follow `next_page_url` for more."""

    object: str | None = None
    data: list[Any] = Field(default_factory=list)
    next_page_url: str | None = None
    previous_page_url: str | None = None
    has_more: bool | None = None
    url: str | None = None

    @field_validator("data", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def more_to_fetch(self) -> bool:
        """Whether the list goes on past this first page.

        True with a `next_page_url`, and also with `has_more: true` and no URL (the older
        public form): then list the rest through the list operation of the parent record
        (e.g. `FundClient.list_distribution_payments`), which raises `IncompleteListError`
        if the service cannot continue there either.
        """
        return bool(self.next_page_url) or self.has_more is True


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

    @field_validator("payment_instructions", mode="before")
    @classmethod
    def _id_from_object(cls, value: Any) -> Any:
        return value.get("id") if isinstance(value, dict) else value


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
    external_references: list[str] = Field(default_factory=list)
    payment_instructions: list[str] = Field(default_factory=list)
    sender_payment_instructions_url: str | None = None
    recipient_payment_instructions_url: str | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _either_reference_form(cls, value: Any) -> Any:
        return _references(value)

    @field_validator("payment_instructions", mode="before")
    @classmethod
    def _ids_from_envelope(cls, value: Any) -> Any:
        return _ids(value)


class Contact(ServiceRecord):
    """A contact that may be notified of payments (`cnt_...`)."""

    name: str | None = None
    email: str | None = None
    external_reference: str | None = None
    external_references: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _either_reference_form(cls, value: Any) -> Any:
        out = _references(value)
        if isinstance(out, dict) and "entities" in out and out["entities"] is None:
            del out["entities"]  # a fresh dict: null reads as absent (`model_fields_set`)
        return out

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


class EntityPaymentInstructions(_Record):
    """One element of the create-payment-instructions answer: an entity and its `pmi_` ids."""

    object: str | None = None
    livemode: bool | None = None
    entity: str
    payment_instructions: list[str] = Field(default_factory=list)

    @field_validator("payment_instructions", mode="before")
    @classmethod
    def _ids_from_envelope(cls, value: Any) -> Any:
        return _ids(value)


def _references(value: Any) -> Any:
    """Read `external_reference` (string) and `external_references` (array) as one union.

    The result carries both: `external_references` lists every reference (the string first,
    then the array's others, without repeats or empty strings) and `external_reference` is its
    first element (None when there is none).
    """
    if not isinstance(value, dict):
        return value
    single = value.get("external_reference")
    many = value.get("external_references")
    if isinstance(many, str):
        many = [many]
    refs: list[Any] = []
    for ref in ([single] if single is not None else []) + (many if isinstance(many, list) else []):
        if ref != "" and ref not in refs:
            refs.append(ref)
    if many is not None and not isinstance(many, list):
        refs.append(many)  # not a list: let validation name the problem
    return {
        **value,
        "external_reference": refs[0] if refs else None,
        "external_references": refs,
    }


def _ids(value: Any) -> Any:
    """Accept a list of ids, a list of records with `id`, or a list envelope of either."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = value.get("data", [])
    if isinstance(value, list):
        return [item.get("id") if isinstance(item, dict) else item for item in value]
    return value


#: Fields of raw records that are lists of ids in either form, by record `object`.
_ID_LISTS = {"entity": ("payment_instructions",), "contact": ("entities",)}


def one_form(kind: str, record: dict[str, Any]) -> dict[str, Any]:
    """A raw `entity` or `contact` record (a dict) in one form, for bulk readers that skip
    the models: `external_reference` the first reference and `external_references` all of
    them, id lists as bare ids — whichever form the service answered in."""
    out: dict[str, Any] = _references(record)
    for name in _ID_LISTS.get(kind, ()):
        if name in out:
            out[name] = _ids(out[name])
    return out


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
    external_references: list[str] | None = None  # the public spec's form


class ContactCreate(CreateModel):
    """An element of `POST /v1/contacts`."""

    name: str = Field(min_length=1, max_length=255)
    email: str
    external_reference: str | None = None
    external_references: list[str] | None = None  # the public spec's form


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
