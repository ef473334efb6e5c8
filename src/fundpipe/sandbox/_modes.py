"""Which form of the service a sandbox serves, and what each form leaves out.

By default the sandbox serves every decision of DESIGN.md ("Decisions where the interface says
not shown"), ours included. Three switches change that (all off by default; see
`SandboxConfig`):

**Strict interface** (`strict_interface`, `fundpipe sandbox --strict-interface`): only the
documented surface — the interface's operations and those DESIGN.md takes from the public docs
or the public spec. The routes DESIGN.md marks *ours* are not served: they answer 404
`resource_not_found` in the error object, like any unknown route (`OUR_ROUTES`). The fields only
our decisions add are left out of the records (`OUR_FIELDS`):

- entity: `created_at`, `updated_at` (the public docs list the entity record without them);
- contact: `entities`, `created_at`, `updated_at` (the public docs' record is `object`,
  `livemode`, `id`, `name`, `email` and the caller's reference, here `external_references`);
- distribution payment: `distribution`, `disbursed_at`, `failed_at`, `failure_reason` (not in
  the interface's payment table);
- payment instructions record: everything but `object`, `livemode` and `id` (the interface shows
  only its `pmi_` id).

Financial accounts, distributions, notifications, list envelopes and the error object are the
interface's throughout; organization and vehicle records are only served by our routes.
Also in strict mode: a duplicate `external_reference` on entity or contact creates answers 409
`conflict` whose `invalid-params` entries carry `conflicts_with` (the existing object's id), and
the token endpoint also takes a JSON body.

Every form (issue 34), where the interface is silent: entity and contact records carry the
public spec's `external_references` (array of strings; `[ref]` for an element created with
`external_reference: ref`), the create-payment-instructions answer nests `{object, livemode,
id}` records, a payment without a date override leaves `distribution_date_override` out (the
public type is a string, never null), and a batch whose elements (or one element's list)
repeat a reference is taken (strict mode's 409 is only for a reference an existing object
holds).

**Public forms** (`public_forms`, `--public-forms`; combinable with strict): the public spec's
forms — entity and contact `external_references` on the create body instead of
`external_reference` (sending the latter answers 400 `parameter_unknown`); entity records
without `external_type` (the public Entity has no such field); the
entity's `payment_instructions` as a list envelope of `{object, livemode, id}`; a field without
a value left out instead of `null` (the financial account's `bank_name` and
`account_number_last_four` stay: the interface makes them required and nullable); none of our
extra payment fields; 404 `resource_not_found` ("vehicle, entity, or contact not found") when
the only problems of a distribution create are references that do not exist.

Where the interface is silent and the public description decides, public forms are no
stricter than it: an `Idempotency-Key` is any string (the interface: "(string)"; an empty one
counts as none); an empty `payment_instructions` list is taken (the operation "performs no
input validation"), and so are empty strings among `external_references`; `external_references:
null` is refused (the public schema: a non-nullable array of strings); the create-payment-
instructions answer nests `{object, livemode, id}` objects like the entity read; payments
leave out a `distribution_date_override` they do not have. An amount of
`1000.0` is an integer number of cents (JSON Schema's `integer`; by default DESIGN refuses it).

**Reject unknown fields** (`reject_unknown_fields`, `--reject-unknown-fields`): a rehearsal for
a strict real service. Create bodies with properties the public description does not allow —
an entity's `external_type` and payment instructions included, whose public inputs (ach, domestic and international wire) have
no `external_reference` and only their type's fields (`PUBLIC_INSTRUCTION_FIELDS_BY_TYPE`: a
wire's `intermediary_party_name`, `intermediary_party_swift_code`,
`originator_to_beneficiary_instructions_line1`…`3` and `address` object, an international
wire's `swift_code`) — are refused with 400 `parameter_unknown` in the public error form: the
field in `param`, no `invalid-params`. A wire `address` that is not an object of the public
`WireAddress` parts with `street1`, `city` and `country_code` is `parameter_invalid`.

**Legacy pagination** (`legacy_pagination`, `--legacy-pagination`, or `PUT /_sandbox/settings
{"legacy_pagination": true}`): every list envelope, nested ones too, in the older form with
`has_more` and `url` but without `next_page_url` and `previous_page_url`.

`GET /v1/distributions/{dst_id}` is in neither the interface nor DESIGN.md's table: strict mode
does not serve it either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fundpipe.enums import (
    PUBLIC_INSTRUCTION_FIELDS_BY_TYPE,
)

#: (method, path) of the routes DESIGN.md marks *ours*, plus the one it does not list at all;
#: none is served in strict mode.
OUR_ROUTES = frozenset(
    {
        ("GET", "/v1/organizations"),
        ("GET", "/v1/organizations/{org_id}"),
        ("GET", "/v1/vehicles"),
        ("GET", "/v1/vehicles/{veh_id}"),
        ("GET", "/v1/financial_accounts"),
        ("POST", "/v1/entities/{ent_id}/contacts"),
        ("GET", "/v1/payment_instructions/{pmi_id}"),
        ("GET", "/v1/distributions/{dst_id}"),
    }
)

#: Every field some public instruction input allows (the check when the `type` is unknown);
#: each type's fields and the address's parts are `fundpipe.enums`' (the plan sends the same).
PUBLIC_INSTRUCTION_FIELDS = frozenset().union(*PUBLIC_INSTRUCTION_FIELDS_BY_TYPE.values())

#: Record `object` → the fields only our decisions add (left out in strict mode).
OUR_FIELDS: dict[str, tuple[str, ...]] = {
    "entity": ("created_at", "updated_at"),
    "contact": ("entities", "created_at", "updated_at"),
    "distribution_payment": ("distribution", "disbursed_at", "failed_at", "failure_reason"),
    "payment_instructions": (
        "entity",
        "type",
        "beneficiary_name",
        "bank_name",
        "routing_number",
        "account_number_last_four",
        "branch_code",
        "external_reference",
        "created_at",
    ),
}


@dataclass(frozen=True, slots=True)
class View:
    """The form in force for one request: strict interface, public forms, legacy pagination."""

    strict: bool = False
    public: bool = False
    legacy_pages: bool = False
    reject_unknown: bool = False

    def omits(self, kind: str) -> tuple[str, ...]:
        """Fields of a `kind` record left out in this view (besides unset ones in public forms)."""
        if kind == "distribution_payment" and (self.strict or self.public):
            return OUR_FIELDS[kind]
        if self.strict:
            return OUR_FIELDS.get(kind, ())
        return ()

    def shape(self, record: dict[str, Any], kind: str) -> dict[str, Any]:
        """`record` as this view shows it (the same dict, edited in place)."""
        for name in self.omits(kind):
            record.pop(name, None)
        if self.public:
            drop_unset(record)
        return record

    @property
    def plain(self) -> bool:
        """True when records are rendered exactly as DESIGN.md decides (nothing to shape)."""
        return not (self.strict or self.public)


def drop_unset(record: dict[str, Any]) -> None:
    """Remove the `None` fields of `record` (in place): the public spec leaves them out."""
    for name in [k for k, v in record.items() if v is None]:
        del record[name]


#: The default view: DESIGN.md's decisions, current pagination.
DEFAULT_VIEW = View()
