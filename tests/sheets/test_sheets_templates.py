"""The template pages in schemas/templates and the JSON the code reads cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fundpipe.sheets.templates import TEMPLATES_DIR, load_templates, normalize_header
from fundpipe.validate.models import DistributionSheetModel, RosterSheetModel

TEMPLATES = sorted(TEMPLATES_DIR.glob("*.json"))


def documented_columns(page: Path) -> dict[str, tuple[bool, list[str]]]:
    """column → (required, aliases) from the page's column table."""
    out: dict[str, tuple[bool, list[str]]] = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `(\w+)` \| .*? \| (yes|no) \| (.*?) \|", line)
        if m:
            out[m.group(1)] = (m.group(2) == "yes", re.findall(r"`([^`]+)`", m.group(3)))
    return out


@pytest.mark.parametrize("source", TEMPLATES, ids=lambda p: p.stem)
def test_template_page_documents_exactly_the_columns_the_code_reads(source: Path) -> None:
    spec = json.loads(source.read_text(encoding="utf-8"))
    expected = {c["name"]: (c["required"], c["aliases"]) for c in spec["columns"]}
    assert documented_columns(source.with_suffix(".md")) == expected


def test_both_templates_are_loaded() -> None:
    templates = load_templates()
    assert set(templates) == {"distribution", "roster"}
    assert templates["distribution"].canonical("Amount ($)") == "amount"
    assert templates["distribution"].canonical("entity id") == "entity"
    assert templates["distribution"].canonical("Payment-Date") == "distribution_date"
    assert normalize_header("  Amount ($) ") == "amount"


def test_pandera_models_cover_the_templates_required_columns() -> None:
    templates = load_templates()
    distribution = set(DistributionSheetModel.to_schema().columns)
    roster = set(RosterSheetModel.to_schema().columns)
    assert set(templates["distribution"].required) - {"amount", "distribution_date"} <= distribution
    assert set(templates["roster"].required) <= roster
