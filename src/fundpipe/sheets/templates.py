"""Sheet templates and header matching.

The templates live in ``schemas/templates/*.json`` (the single source: the Markdown pages beside
them document the same columns and a test keeps both in step). A header cell matches a column
when it equals the column's canonical name or one of its aliases after *normalisation*: case,
spaces and punctuation are ignored, so ``Amount ($)``, ``amount`` and ``AMOUNT`` all match.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from fundpipe.resources import SCHEMAS_DIR

#: Where the template JSON files live (package data: the repository's ``schemas/templates``).
TEMPLATES_DIR = SCHEMAS_DIR / "templates"

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalize_header(text: str) -> str:
    """Lower-case ``text`` and drop everything but letters and digits (``Amount ($)`` → ``amount``)."""
    return _NON_ALNUM.sub("", str(text).strip().lower())


@dataclass(frozen=True)
class TemplateColumn:
    """One column of a template."""

    name: str
    type: str
    required: bool
    aliases: tuple[str, ...]
    example: str


@dataclass(frozen=True)
class Template:
    """A sheet template: its canonical columns and how headers map onto them."""

    name: str
    title: str
    columns: tuple[TemplateColumn, ...]
    lookup: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def required(self) -> tuple[str, ...]:
        """Canonical names of the required columns."""
        return tuple(c.name for c in self.columns if c.required)

    @property
    def column_names(self) -> tuple[str, ...]:
        """Canonical names of every column, in template order."""
        return tuple(c.name for c in self.columns)

    def canonical(self, header: str) -> str | None:
        """The canonical column ``header`` means in this template, or None."""
        return self.lookup.get(normalize_header(header))


def _load(path: Path) -> Template:
    raw = json.loads(path.read_text(encoding="utf-8"))
    columns = tuple(
        TemplateColumn(
            name=c["name"],
            type=c["type"],
            required=bool(c["required"]),
            aliases=tuple(c.get("aliases", ())),
            example=str(c.get("example", "")),
        )
        for c in raw["columns"]
    )
    lookup: dict[str, str] = {}
    for col in columns:
        for spelling in (col.name, *col.aliases):
            key = normalize_header(spelling)
            if key in lookup and lookup[key] != col.name:
                msg = f"{path.name}: header {spelling!r} maps to both {lookup[key]} and {col.name}"
                raise ValueError(msg)
            lookup[key] = col.name
    return Template(name=raw["template"], title=raw["title"], columns=columns, lookup=lookup)


@cache
def load_templates(directory: Path = TEMPLATES_DIR) -> dict[str, Template]:
    """Every template in ``directory``, keyed by template name (``distribution``, ``roster``)."""
    templates = [_load(p) for p in sorted(directory.glob("*.json"))]
    return {t.name: t for t in templates}


@dataclass(frozen=True)
class HeaderMatch:
    """How one sheet's header row maps onto a template."""

    template: Template
    #: canonical column name → position of the column in the sheet
    positions: dict[str, int]
    #: canonical column name → the header as the analyst wrote it
    headers: dict[str, str]
    #: headers that match no column of the template (position, text)
    unknown: list[tuple[int, str]]
    #: canonical columns claimed by more than one header: name → the headers
    duplicates: dict[str, list[str]]
    missing: tuple[str, ...]

    @property
    def score(self) -> tuple[float, int]:
        """Share of required columns found, then the number of known columns (higher is better)."""
        required = self.template.required
        found = sum(1 for r in required if r in self.positions)
        return (found / len(required) if required else 0.0, len(self.positions))


def match_header(header: list[str], template: Template) -> HeaderMatch:
    """Map the cells of a header row onto ``template``'s canonical columns."""
    positions: dict[str, int] = {}
    headers: dict[str, str] = {}
    unknown: list[tuple[int, str]] = []
    duplicates: dict[str, list[str]] = {}
    for pos, text in enumerate(header):
        if not str(text).strip():
            unknown.append((pos, ""))
            continue
        name = template.canonical(text)
        if name is None:
            unknown.append((pos, str(text)))
        elif name in positions:
            duplicates.setdefault(name, [headers[name]]).append(str(text))
        else:
            positions[name] = pos
            headers[name] = str(text)
    missing = tuple(r for r in template.required if r not in positions)
    return HeaderMatch(template, positions, headers, unknown, duplicates, missing)


def best_match(header: list[str], templates: dict[str, Template] | None = None) -> HeaderMatch:
    """The template whose columns best explain ``header`` (it may still miss required columns)."""
    candidates = [match_header(header, t) for t in (templates or load_templates()).values()]
    return max(candidates, key=lambda m: m.score)
