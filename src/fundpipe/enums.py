"""The service's enumerations the pipeline relies on, in one place.

Each is the enum of the same name in ``schemas/openapi.yaml`` (``components.schemas``); the sheet
templates (``schemas/templates/``) name the ones a sheet carries. ``tests/test_enums.py`` fails
when any of them drifts from those files. The sandbox reads `ENTITY_TYPES` from here (it
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
