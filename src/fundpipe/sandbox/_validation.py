"""Request-body validation: every failure of a batch at once, named as a path into the body.

Paths look like `body.[0].payments.[2].amount`; codes are the interface's validation codes
(`parameter_missing`, `parameter_unknown`, `parameter_invalid`, `parameter_invalid_string`,
`parameter_invalid_string_empty`, `parameter_invalid_integer`, and `validation_error` for a
date-time whose offset differs from its zone's). References to vehicles, entities and contacts
are checked against the acting organization through a lookup callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from fundpipe.sandbox._errors import InvalidParam, param
from fundpipe.timerules import (
    AmbiguousTimeError,
    NonexistentTimeError,
    OffsetMismatchError,
    TimeRuleError,
    UnknownTimeZoneError,
    get_zone,
    parse_iso_datetime,
    resolve_in_zone,
)

#: Entity `type` values (interface, "Entity").
ENTITY_TYPES = frozenset(
    {
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
    }
)
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
#: The HTML5 "valid e-mail address" grammar: ASCII letters, digits and the listed punctuation
#: only (no control characters, spaces or non-ASCII). schemas/openapi.yaml documents this very
#: pattern (ContactCreate.email; tests/contract checks they are identical).
EMAIL_PATTERN = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)

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
class _Checker:
    problems: list[InvalidParam] = field(default_factory=list)
    refs: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, id, path)

    def add(self, problem: InvalidParam) -> None:
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
                self.add(
                    param(where, "parameter_invalid", f"no such {kind} in this organization", value)
                )


def _body_array(checker: _Checker, body: Any, maximum: int = MAX_ELEMENTS) -> list[Any]:
    items = checker.array(body, "body", 1, maximum)
    return items or []


def _datetime(
    checker: _Checker, obj: dict[str, Any], name: str, path: str, zone: str | None
) -> float | None:
    """A date-time field checked against `zone` (None: zone invalid, format checked only)."""
    text = checker.string(obj, name, path, nullable=name != "distribution_date")
    if text is None:
        return None
    ts, code, reason = _resolve(text, zone)
    if code is not None:
        checker.add(param(f"{path}.{name}", code, reason, text))
    return ts


@lru_cache(maxsize=4096)
def _resolve(text: str, zone: str | None) -> tuple[float | None, str | None, str]:
    """(epoch seconds, None, "") for a date-time valid in `zone`, else (None, code, reason).

    Pure (time zone rules are fixed data), so cached: a batch repeats its dates and zones.
    """
    try:
        if zone is None:
            parse_iso_datetime(text)
            return None, None, ""
        return resolve_in_zone(text, zone).timestamp(), None, ""
    except OffsetMismatchError as exc:
        return None, "validation_error", str(exc)
    except (NonexistentTimeError, AmbiguousTimeError) as exc:
        return None, "parameter_invalid", str(exc)
    except TimeRuleError as exc:
        return None, "parameter_invalid", str(exc)


def validate_distributions(
    body: Any, lookup: Lookup
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-distributions body; returns (clean elements, problems)."""
    checker = _Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(_body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(
            element,
            path,
            ("name", "vehicle", "distribution_date", "payments"),
            ("external_reference", "distribution_timezone"),
        ):
            continue
        zone: str | None = "UTC"
        if element.get("distribution_timezone") is not None:
            zone = checker.string(element, "distribution_timezone", path)
            if zone is not None:
                try:
                    get_zone(zone)
                except UnknownTimeZoneError:
                    checker.add(
                        param(
                            f"{path}.distribution_timezone",
                            "parameter_invalid",
                            "must be an IANA time zone such as America/New_York",
                            zone,
                        )
                    )
                    zone = None
            else:
                zone = None
        payments: list[dict[str, Any]] = []
        dist: dict[str, Any] = {
            "name": checker.string(element, "name", path),
            "vehicle": checker.ref(element, "vehicle", path, "vehicle"),
            "external_reference": checker.string(
                element, "external_reference", path, nullable=True
            ),
            "timezone": zone or "UTC",
            "date_ts": _datetime(checker, element, "distribution_date", path, zone),
            "payments": payments,
        }
        pays = None
        if "payments" in element:
            pays = checker.array(element["payments"], f"{path}.payments", 1, MAX_PAYMENTS)
        entity_shape = PATTERNS["entity"].fullmatch
        for j, pay in enumerate(pays or []):
            # Fast path for the common payment: exactly amount, currency and entity, each valid
            # (what the full checks below would accept without a problem); anything else takes
            # the full checks, which report every problem.
            if type(pay) is dict and len(pay) == 3:
                amount = pay.get("amount")
                entity = pay.get("entity")
                if (
                    type(amount) is int
                    and 0 < amount <= MAX_AMOUNT
                    and pay.get("currency") == "USD"
                    and type(entity) is str
                    and entity_shape(entity)
                ):
                    checker.refs.append(("entity", entity, f"{path}.payments.[{j}].entity"))
                    payments.append(
                        {
                            "amount": amount,
                            "currency": "USD",
                            "entity": entity,
                            "override_ts": None,
                            "notifications": [],
                        }
                    )
                    continue
            ppath = f"{path}.payments.[{j}]"
            if not checker.fields(
                pay,
                ppath,
                ("amount", "currency", "entity"),
                ("notifications", "distribution_date_override"),
            ):
                continue
            payments.append(
                {
                    "amount": _amount(checker, pay, ppath),
                    "currency": _currency(checker, pay, ppath),
                    "entity": checker.ref(pay, "entity", ppath, "entity"),
                    "override_ts": _datetime(
                        checker, pay, "distribution_date_override", ppath, zone
                    ),
                    "notifications": _notifications(checker, pay, ppath),
                }
            )
        clean.append(dist)
    # Unknown references are reported together with every other failure (all at once).
    checker.resolve_refs(lookup)
    return clean, checker.problems


def _amount(checker: _Checker, pay: dict[str, Any], path: str) -> int | None:
    if "amount" not in pay:
        return None
    value = pay["amount"]
    where = f"{path}.amount"
    if isinstance(value, bool) or not isinstance(value, int):
        checker.add(
            param(
                where,
                "parameter_invalid_integer",
                "amount must be an integer number of cents",
                value,
            )
        )
        return None
    if value <= 0:
        checker.add(param(where, "parameter_invalid", "amount must be greater than 0", value))
        return None
    if value > MAX_AMOUNT:
        checker.add(
            param(where, "parameter_invalid", f"amount must be at most {MAX_AMOUNT}", value)
        )
        return None
    return value


def _currency(checker: _Checker, pay: dict[str, Any], path: str) -> str | None:
    value = checker.string(pay, "currency", path)
    if value is not None and value != "USD":
        checker.add(param(f"{path}.currency", "parameter_invalid", "currency must be USD", value))
        return None
    return value


def _notifications(checker: _Checker, pay: dict[str, Any], path: str) -> list[str]:
    if pay.get("notifications") is None:
        return []
    items = checker.array(pay["notifications"], f"{path}.notifications", 0, MAX_NOTIFICATIONS)
    out: list[str] = []
    for k, note in enumerate(items or []):
        npath = f"{path}.notifications.[{k}]"
        if checker.fields(note, npath, ("contact",), ()):
            contact = checker.ref(note, "contact", npath, "contact")
            if contact is not None:
                out.append(contact)
    return out


def validate_entities(body: Any) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-entities body."""
    checker = _Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(_body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(
            element, path, ("name", "type"), ("external_type", "external_reference")
        ):
            continue
        kind = checker.string(element, "type", path)
        if kind is not None and kind not in ENTITY_TYPES:
            checker.add(param(f"{path}.type", "parameter_invalid", "not an entity type", kind))
        clean.append(
            {
                "name": checker.string(element, "name", path, max_len=255),
                "type": kind,
                "external_type": checker.string(element, "external_type", path, nullable=True),
                "external_reference": checker.string(
                    element, "external_reference", path, nullable=True
                ),
            }
        )
    return clean, checker.problems


def validate_contacts(body: Any) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-contacts body."""
    checker = _Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(_body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(element, path, ("name", "email"), ("external_reference",)):
            continue
        email = checker.string(element, "email", path, max_len=254)
        if email is not None and not EMAIL_PATTERN.fullmatch(email):
            checker.add(param(f"{path}.email", "parameter_invalid", "not an email address", email))
        clean.append(
            {
                "name": checker.string(element, "name", path, max_len=255),
                "email": email,
                "external_reference": checker.string(
                    element, "external_reference", path, nullable=True
                ),
            }
        )
    return clean, checker.problems


def validate_association(body: Any, lookup: Lookup) -> tuple[list[str], list[InvalidParam]]:
    """Validate an associate-contacts body (`[{id: cnt_…}]`, 1 to 100 elements)."""
    checker = _Checker()
    ids: list[str] = []
    for i, element in enumerate(_body_array(checker, body)):
        path = f"body.[{i}]"
        if checker.fields(element, path, ("id",), ()):
            contact = checker.ref(element, "id", path, "contact")
            if contact is not None:
                ids.append(contact)
    checker.resolve_refs(lookup)
    return ids, checker.problems


_INSTRUCTION_FIELDS = (
    "type",
    "beneficiary_name",
    "bank_name",
    "routing_number",
    "branch_code",
    "external_reference",
)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def validate_payment_instructions(
    body: Any, lookup: Lookup
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-payment-instructions body.

    Only the shape and the entity reference are checked: the instructions themselves are taken
    as given (partial instructions accepted; the interface says no input validation).
    """
    checker = _Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(_body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(element, path, ("entity", "payment_instructions"), ()):
            continue
        entity = checker.ref(element, "entity", path, "entity")
        items = None
        if "payment_instructions" in element:
            items = checker.array(
                element["payment_instructions"], f"{path}.payment_instructions", 1, MAX_ELEMENTS
            )
        instructions: list[dict[str, Any]] = []
        for j, item in enumerate(items or []):
            if not isinstance(item, dict):
                checker.add(
                    param(
                        f"{path}.payment_instructions.[{j}]",
                        "parameter_invalid",
                        "must be an object",
                    )
                )
                continue
            record = {name: _text(item.get(name)) for name in _INSTRUCTION_FIELDS}
            digits = re.sub(r"\D", "", _text(item.get("account_number")) or "")
            record["last_four"] = digits[-4:] if digits else None
            instructions.append(record)
        clean.append({"entity": entity, "payment_instructions": instructions})
    checker.resolve_refs(lookup)
    return clean, checker.problems


def prefix_of(kind: str) -> str:
    """The id prefix of `kind` (e.g. `dst_`)."""
    return _PREFIX[kind]
