"""Drift: the pipeline's enumerations (`fundpipe.enums`) match schemas/openapi.yaml and the
sheet templates that name them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fundpipe import enums

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


@pytest.fixture(scope="module")
def components() -> dict[str, Any]:
    spec = yaml.safe_load((SCHEMAS / "openapi.yaml").read_text(encoding="utf-8"))
    return spec["components"]["schemas"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("schema", "values"),
    [
        ("EntityType", enums.ENTITY_TYPES),
        ("PaymentInstructionsType", enums.PAYMENT_TYPES),
        ("DistributionStatus", enums.DISTRIBUTION_STATUSES),
        ("PaymentStatus", enums.PAYMENT_STATUSES),
        ("FinancialAccountType", enums.FINANCIAL_ACCOUNT_TYPES),
        ("Currency", enums.CURRENCIES),
    ],
)
def test_each_enum_is_the_openapi_one(
    components: dict[str, Any], schema: str, values: tuple[str, ...]
) -> None:
    assert tuple(components[schema]["enum"]) == values


def test_domestic_payment_types_are_payment_types() -> None:
    assert set(enums.DOMESTIC_PAYMENT_TYPES) < set(enums.PAYMENT_TYPES)


def test_the_roster_template_names_the_same_types() -> None:
    template = json.loads((SCHEMAS / "templates" / "roster_sheet.json").read_text())
    columns = {c["name"]: c for c in template["columns"]}
    payment = tuple(t.strip() for t in columns["payment_type"]["type"].split("|"))
    assert payment == enums.PAYMENT_TYPES
    assert columns["entity_type"]["type"] == "entity type enum"
    guide = (SCHEMAS / "templates" / "roster_sheet.md").read_text(encoding="utf-8")
    bullet = re.search(r"- \*\*entity_type\*\*:(.*?)(?:\n- |\n\n)", guide, re.DOTALL)
    assert bullet, "roster_sheet.md no longer explains entity_type"
    assert tuple(re.findall(r"`([a-z_]+)`", bullet.group(1))) == enums.ENTITY_TYPES


def test_one_of_reads_as_a_list() -> None:
    assert enums.one_of(("a", "b", "c")) == "a, b or c"
    assert enums.one_of(("a",)) == "a"
