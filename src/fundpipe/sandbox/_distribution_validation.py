"""Validation of a create-distributions body: every failure of the batch at once.

Dates are checked against their distribution's zone (`fundpipe.timerules`): a date-time whose
UTC offset differs from its zone's is `validation_error` (answered 422 when it is the only kind
of failure); references to vehicles, entities and contacts are resolved in one query per kind.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fundpipe.sandbox._checks import (
    MAX_AMOUNT,
    MAX_NOTIFICATIONS,
    MAX_PAYMENTS,
    PATTERNS,
    Checker,
    Lookup,
    body_array,
)
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


def _datetime(
    checker: Checker, obj: dict[str, Any], name: str, path: str, zone: str | None
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
    body: Any, lookup: Lookup, *, public: bool = False
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-distributions body; returns (clean elements, problems).

    `public`: an amount such as `1000.0` is an integer (JSON Schema's `integer`, the public
    description); by default it is refused (DESIGN: a non-integer gets 400).
    """
    checker = Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(body_array(checker, body)):
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
                    "amount": _amount(checker, pay, ppath, public),
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


def _amount(checker: Checker, pay: dict[str, Any], path: str, public: bool) -> int | None:
    if "amount" not in pay:
        return None
    value = pay["amount"]
    where = f"{path}.amount"
    if public and isinstance(value, float) and value.is_integer():
        value = int(value)  # 1000.0 is an integer number of cents (JSON Schema's `integer`)
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


def _currency(checker: Checker, pay: dict[str, Any], path: str) -> str | None:
    value = checker.string(pay, "currency", path)
    if value is not None and value != "USD":
        checker.add(param(f"{path}.currency", "parameter_invalid", "currency must be USD", value))
        return None
    return value


def _notifications(checker: Checker, pay: dict[str, Any], path: str) -> list[str]:
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
