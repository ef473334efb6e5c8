"""One redaction function for every log call and error message of the client.

`redact` walks strings, mappings, sequences and `httpx.Headers` and replaces secrets with
`REDACTED`: the `Authorization` header, bearer and basic credentials, OAuth tokens, the client
secret and account numbers (any key containing `account_number` except the last four digits the
service returns). Callers may also pass literal secrets they know (the client secret, the current
access token) so that they are scrubbed wherever they appear in free text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from fundpipe.sensitive import SENSITIVE_FIELDS

#: What replaces a secret.
REDACTED = "**********"

# Keys whose values are secrets, compared in lower case with `-` folded to `_`.
_SECRET_KEYS = (
    frozenset(
        {
            "authorization",
            "proxy_authorization",
            "access_token",
            "refresh_token",
            "id_token",
            "token",
            "client_secret",
            "password",
            "secret",
            "cookie",
            "set_cookie",
        }
    )
    | SENSITIVE_FIELDS
)  # the account number and a payment instruction's wire details
# Non-secret keys that contain a secret-looking word.
_ALLOWED_KEYS = frozenset({"account_number_last_four", "token_type"})

_KEY_ALTERNATION = "|".join(
    [
        r"authorization|access_token|refresh_token|id_token|client_secret|password",
        # the longest first: intermediary_swift_code before swift_code
        *sorted(SENSITIVE_FIELDS - {"account_number"}, key=len, reverse=True),
        r"account_number(?!_last_four)",
    ]
)
# "key": "value" (JSON), key=value (forms, query strings), key: value (headers, reprs). A quoted
# value is redacted to its closing quote, spaces and all ("Q4 distribution", "1234 5678").
_JSON_PAIR = re.compile(
    r'(?P<k>["\']?(?:' + _KEY_ALTERNATION + r')["\']?\s*[:=]\s*)'
    r'(?:(?P<q>["\'])(?:\\.|(?!(?P=q)).)*(?P=q)|[^"\'&,}\s]+)',
    re.IGNORECASE,
)
_SCHEME = re.compile(r"\b(?P<s>Bearer|Basic)\s+[A-Za-z0-9\-._~+/=]+", re.IGNORECASE)


def _is_secret_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    folded = key.lower().replace("-", "_")
    if folded in _ALLOWED_KEYS:
        return False
    return folded in _SECRET_KEYS or "account_number" in folded or folded.endswith("_secret")


def _redact_text(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _SCHEME.sub(lambda m: f"{m.group('s')} {REDACTED}", text)
    return _JSON_PAIR.sub(
        lambda m: f"{m.group('k')}{m.group('q') or ''}{REDACTED}{m.group('q') or ''}", text
    )


def redact(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """Return `value` with every secret replaced by `REDACTED`.

    Strings are scrubbed of bearer/basic credentials, `key=value` or `"key": "value"` pairs of
    secret keys and the literal `secrets`; mappings and `httpx.Headers` have the values of
    secret keys replaced (and the rest redacted recursively); lists and tuples are redacted
    element-wise; bytes are decoded (invalid UTF-8 replaced) and treated as text; other values
    are returned unchanged.
    """
    known = tuple(s for s in secrets if s)
    return _redact(value, known)


def _redact(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, bytes | bytearray):
        return _redact_text(bytes(value).decode("utf-8", errors="replace"), secrets)
    if isinstance(value, httpx.Headers):
        return {
            k: (REDACTED if _is_secret_key(k) else _redact_text(v, secrets))
            for k, v in value.items()
        }
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if _is_secret_key(k) and v is not None else _redact(v, secrets))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(_redact(v, secrets) for v in value)
    return value


def account_numbers(body: Any) -> tuple[str, ...]:
    """Every account number and wire detail in a request body, to scrub them from error
    messages."""
    found: list[str] = []
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if _is_secret_key(key) and isinstance(value, str) and value:
                    found.append(value)
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return tuple(found)
