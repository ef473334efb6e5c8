"""The building blocks of request validation: id shapes, batch limits, and `Checker`, which
collects every problem of a body at once, each named as a path into the body.

Paths look like `body.[0].payments.[2].amount`; codes are the interface's validation codes
(`parameter_missing`, `parameter_unknown`, `parameter_invalid`, `parameter_invalid_string`,
`parameter_invalid_string_empty`, `parameter_invalid_integer`). References to vehicles,
entities and contacts are collected while checking and resolved against the acting
organization in one query per kind (`Checker.resolve_refs`). The bodies themselves are checked
in `_validation` (entities, contacts, association, payment instructions) and
`_distribution_validation` (distributions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fundpipe.sandbox._errors import InvalidParam, param

MAX_ELEMENTS = 100
MAX_PAYMENTS = 1000
MAX_NOTIFICATIONS = 100
#: Largest accepted amount in cents (2**53 - 1, exact in every JSON reader).
MAX_AMOUNT = 9_007_199_254_740_991

PATTERNS = {
    "organization": re.compile(r"^org_[A-Za-z0-9]+$"),
    "vehicle": re.compile(r"^veh_[A-Za-z0-9]+$"),
    "financial_account": re.compile(r"^fa_[A-Za-z0-9]+$"),
    "entity": re.compile(r"^ent_[A-Za-z0-9]+$"),
    "contact": re.compile(r"^cnt_[A-Za-z0-9]+$"),
    "distribution": re.compile(r"^dst_[A-Za-z0-9]+$"),
    "distribution_payment": re.compile(r"^dpmt_[A-Za-z0-9]+$"),
    "payment_instructions": re.compile(r"^pmi_[A-Za-z0-9]+$"),
}
_PREFIX = {
    "organization": "org_",
    "vehicle": "veh_",
    "financial_account": "fa_",
    "entity": "ent_",
    "contact": "cnt_",
    "distribution": "dst_",
    "distribution_payment": "dpmt_",
    "payment_instructions": "pmi_",
}
#: (kind, ids) → the ids among them that exist in the acting organization.
Lookup = Callable[[str, set[str]], set[str]]


def id_problem(kind: str, value: Any, name: str) -> InvalidParam | None:
    """The problem with an id value of `kind`, or None when it has the right shape."""
    if not isinstance(value, str):
        return param(name, "parameter_invalid_string", f"must be a {kind} id string", value)
    if not PATTERNS[kind].fullmatch(value):
        pattern = PATTERNS[kind].pattern
        return param(name, "parameter_invalid", f"must match {pattern}", value)
    return None


@dataclass
class Checker:
    """The problems found so far in one body, and the references still to resolve."""

    problems: list[InvalidParam] = field(default_factory=list)
    refs: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, id, path)

    def add(self, problem: InvalidParam) -> None:
        """Record a problem."""
        self.problems.append(problem)

    def fields(self, obj: Any, path: str, required: Iterable[str], optional: Iterable[str]) -> bool:
        """Check `obj` is an object; report missing required and unknown fields."""
        if not isinstance(obj, dict):
            self.add(param(path, "parameter_invalid", "must be an object"))
            return False
        required = tuple(required)
        allowed = set(required) | set(optional)
        for name in required:
            if name not in obj:
                self.add(param(f"{path}.{name}", "parameter_missing", f"{name} is required"))
        for name in obj:
            if name not in allowed:
                self.add(param(f"{path}.{name}", "parameter_unknown", f"unknown field {name}"))
        return True

    def string(
        self,
        obj: dict[str, Any],
        name: str,
        path: str,
        *,
        max_len: int | None = None,
        nullable: bool = False,
    ) -> str | None:
        """A required-or-optional string field (absent → None, problems recorded)."""
        if name not in obj:
            return None
        value = obj[name]
        where = f"{path}.{name}"
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            self.add(param(where, "parameter_invalid_string", f"{name} must be a string", value))
            return None
        if value == "":
            self.add(
                param(where, "parameter_invalid_string_empty", f"{name} must not be empty", value)
            )
            return None
        if max_len is not None and len(value) > max_len:
            self.add(
                param(
                    where,
                    "parameter_invalid",
                    f"{name} must be at most {max_len} characters",
                    value,
                )
            )
            return None
        return value

    def ref(self, obj: dict[str, Any], name: str, path: str, kind: str) -> str | None:
        """A required reference id field; its existence is checked later in one query."""
        if name not in obj:
            return None
        where = f"{path}.{name}"
        problem = id_problem(kind, obj[name], where)
        if problem is not None:
            self.add(problem)
            return None
        value: str = obj[name]
        self.refs.append((kind, value, where))
        return value

    def array(self, value: Any, where: str, minimum: int, maximum: int) -> list[Any] | None:
        """An array with a bounded number of elements."""
        if not isinstance(value, list):
            self.add(param(where, "parameter_invalid", "must be an array"))
            return None
        if len(value) < minimum:
            self.add(param(where, "parameter_invalid", f"must hold at least {minimum} element(s)"))
            return None
        if len(value) > maximum:
            self.add(param(where, "parameter_invalid", f"must hold at most {maximum} elements"))
            return None
        return value

    def resolve_refs(self, lookup: Lookup) -> None:
        """Report every reference that does not exist in the acting organization."""
        wanted: dict[str, set[str]] = {}
        for kind, value, _ in self.refs:
            wanted.setdefault(kind, set()).add(value)
        found = {kind: lookup(kind, ids) for kind, ids in wanted.items()}
        for kind, value, where in self.refs:
            if value not in found[kind]:
                problem = param(
                    where, "parameter_invalid", f"no such {kind} in this organization", value
                )
                problem.missing = kind
                self.add(problem)


def body_array(checker: Checker, body: Any, maximum: int = MAX_ELEMENTS) -> list[Any]:
    """The elements of a batch body (1 to `maximum`); none when it is not such an array."""
    items = checker.array(body, "body", 1, maximum)
    return items or []


def prefix_of(kind: str) -> str:
    """The id prefix of `kind` (e.g. `dst_`)."""
    return _PREFIX[kind]
