"""The service's enumerations the pipeline relies on, in one place.

Each is the enum of the same name in ``schemas/openapi.yaml`` (``components.schemas``); the sheet
templates (``schemas/templates/``) name the ones a sheet carries. ``tests/test_enums.py`` fails
when any of them drifts from those files. The sandbox reads `ENTITY_TYPES` and the public instruction fields from here (it
imports no other part of the pipeline; its other enumerations are tested against the same files
by tests/sandbox).
"""

from __future__ import annotations

__all__ = [
    "CURRENCIES",
    "DISTRIBUTION_STATUSES",
    "DOMESTIC_PAYMENT_TYPES",
    "ENTITY_TYPES",
    "FINANCIAL_ACCOUNT_TYPES",
    "PAYMENT_STATUSES",
    "PAYMENT_TYPES",
    "PUBLIC_ADDRESS_FIELDS",
    "PUBLIC_ADDRESS_REQUIRED",
    "PUBLIC_INSTRUCTION_FIELDS_BY_TYPE",
    "one_of",
]

#: ``EntityType``: the legal type of an entity.
ENTITY_TYPES = (
    "individual",
    "individual_retirement_plan",
    "corporation",
    "llc",
    "partnership",
    "trust",
    "joint_tenants_ros",
    "tenants_in_common",
    "community_property",
    "registered_investment_company",
    "foundation",
    "charitable_remainder_trust",
    "endowment",
    "employee_benefit_plan",
    "keogh_plan",
    "other_entity",
)
#: ``PaymentInstructionsType``: how an entity is paid.
PAYMENT_TYPES = ("ach", "domestic_wire", "international_wire")
#: The payment types that need a routing number (the rest are international).
DOMESTIC_PAYMENT_TYPES = ("ach", "domestic_wire")
#: ``DistributionStatus``.
DISTRIBUTION_STATUSES = ("draft", "published", "approved", "executed", "cancelled")
#: ``PaymentStatus``.
PAYMENT_STATUSES = (
    "staged",
    "recipient_confirmed",
    "verified",
    "disbursed",
    "failed",
    "cancelled",
)
#: ``FinancialAccountType``.
FINANCIAL_ACCOUNT_TYPES = ("depository", "brokerage")
#: ``Currency``: only USD.
CURRENCIES = ("USD",)


def one_of(values: tuple[str, ...]) -> str:
    """``("a", "b", "c")`` → ``"a, b or c"``, for messages an analyst reads."""
    return ", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1 else values[0]


#: The public description's payment-instruction inputs: the fields each ``type`` allows (ach,
#: domestic wire, international wire; no additional properties, no ``external_reference``). A
#: wire's ``address`` is an object of `PUBLIC_ADDRESS_FIELDS`. The plan sends only these; the
#: sandbox's strict forms refuse anything else.
_ACH_FIELDS = frozenset(
    {"type", "beneficiary_name", "account_number", "routing_number", "bank_name", "branch_code"}
)
_WIRE_FIELDS = frozenset(
    {
        "intermediary_party_name",
        "intermediary_party_swift_code",
        "originator_to_beneficiary_instructions_line1",
        "originator_to_beneficiary_instructions_line2",
        "originator_to_beneficiary_instructions_line3",
        "address",
    }
)
PUBLIC_INSTRUCTION_FIELDS_BY_TYPE: dict[str, frozenset[str]] = {
    "ach": _ACH_FIELDS,
    "domestic_wire": _ACH_FIELDS | _WIRE_FIELDS,
    "international_wire": (_ACH_FIELDS - {"routing_number"}) | _WIRE_FIELDS | {"swift_code"},
}
#: The public ``WireAddress``: these parts, `PUBLIC_ADDRESS_REQUIRED` required.
PUBLIC_ADDRESS_FIELDS = frozenset(
    {"street1", "street2", "city", "state", "postal_code", "country_code"}
)
PUBLIC_ADDRESS_REQUIRED = ("street1", "city", "country_code")
