"""Reading control-route payloads: a JSON object whose typed fields collect every problem."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from fundpipe.sandbox._checks import PATTERNS
from fundpipe.sandbox._errors import ApiError, InvalidParam, param
from fundpipe.sandbox._requests import parse_json, read_body


async def read_payload(request: Request) -> dict[str, Any]:
    """The JSON object of a control request (`{}` when the body is empty)."""
    raw = await read_body(request, 1024 * 1024)
    if not raw.strip():
        return {}
    value = parse_json(raw)
    if not isinstance(value, dict):
        raise ApiError(
            400,
            "Send a JSON object.",
            "parameter_invalid",
            [param("body", "parameter_invalid", "must be an object")],
        )
    return value


class Fields:
    """Typed access to a control payload, collecting every problem."""

    def __init__(self, body: dict[str, Any], allowed: set[str]) -> None:
        """Wrap `body`; fields outside `allowed` are reported as `parameter_unknown`."""
        self.body = body
        self.problems: list[InvalidParam] = [
            param(f"body.{k}", "parameter_unknown", f"unknown field {k}")
            for k in body
            if k not in allowed
        ]

    def _get(self, name: str, required: bool) -> Any:
        if name not in self.body or self.body[name] is None:
            if required:
                self.problems.append(
                    param(f"body.{name}", "parameter_missing", f"{name} is required")
                )
            return None
        return self.body[name]

    def integer(self, name: str, lo: int, hi: int, *, required: bool = False) -> int | None:
        """An integer field within [lo, hi]."""
        value = self._get(name, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(
                param(f"body.{name}", "parameter_invalid_integer", "must be an integer", value)
            )
            return None
        if not lo <= value <= hi:
            self.problems.append(
                param(f"body.{name}", "parameter_invalid", f"must be from {lo} to {hi}", value)
            )
            return None
        return value

    def boolean(self, name: str) -> bool | None:
        """A boolean field."""
        value = self._get(name, False)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.problems.append(
                param(f"body.{name}", "parameter_invalid", "must be true or false", value)
            )
            return None
        return value

    def number(self, name: str, lo: float, hi: float, *, required: bool = False) -> float | None:
        """A number field within [lo, hi]."""
        value = self._get(name, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            self.problems.append(
                param(
                    f"body.{name}",
                    "parameter_invalid",
                    f"must be a number from {lo} to {hi}",
                    value,
                )
            )
            return None
        return float(value)

    def string(
        self, name: str, *, required: bool = False, pattern: str | None = None
    ) -> str | None:
        """A non-empty string field (optionally an id matching PATTERNS[pattern])."""
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            self.problems.append(
                param(
                    f"body.{name}", "parameter_invalid_string", "must be a non-empty string", value
                )
            )
            return None
        if pattern is not None and not PATTERNS[pattern].fullmatch(value):
            self.problems.append(
                param(
                    f"body.{name}",
                    "parameter_invalid",
                    f"must match {PATTERNS[pattern].pattern}",
                    value,
                )
            )
            return None
        return value

    def strings(self, name: str) -> list[str] | None:
        """An array-of-strings field."""
        value = self._get(name, False)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.append(
                param(f"body.{name}", "parameter_invalid", "must be an array of strings")
            )
            return None
        return list(value)

    def check(self) -> None:
        """Raise 400 with every problem collected so far."""
        if self.problems:
            raise ApiError(400, "Invalid control payload.", self.problems[0].code, self.problems)
