"""The idempotency fingerprint is the same whichever encoder canonicalizes the body: keys stored
by an earlier sandbox (standard library only) keep matching their replays."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fundpipe.sandbox._requests import decode_body, fingerprint


def _reference(method: str, path: str, raw: bytes) -> str:
    """The fingerprint as the standard library alone computes it."""
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        canonical = raw
    return hashlib.sha256(method.encode() + b"\n" + path.encode() + b"\n" + canonical).hexdigest()


def _fast(raw: bytes) -> str:
    value, has_float = decode_body(raw)
    return fingerprint("POST", "/v1/distributions", raw, value, has_float=has_float)


BODIES = [
    b'[{"name":"a","payments":[{"amount":1,"entity":"ent_x","currency":"USD"}]}]',
    b'[{"b": 1, "a": {"z": [1, 2, {"y": null, "x": true}], "c": false}}]',
    '[{"name":"Zoë","e":"caf\u00e9 \u20ac"}]'.encode(),
    b'[{"name":"\\u00e9t\\u00e9","k":"a\\"b\\\\c\\/d"}]',
    b'[{"name":"tab\\there","nul":"\\u0000","del":"\\u007f","raw_del":"x\x7f"}]',
    b'[{"amount":1.0,"big":1e16,"small":1e-7,"neg":-0.0,"frac":12.5}]',
    b'[{"huge":123456789012345678901234567890,"neg":-9223372036854775809}]',
    b'[{"emoji":"\\ud83d\\ude00","\xc3\xa9":1,"e":2}]',
    b'{"\\u00e9":1,"z":2,"a":3}',
    b"[]",
    b"[" * 300 + b"]" * 300,
]


@pytest.mark.parametrize("raw", BODIES)
def test_fingerprint_matches_the_standard_library_encoding(raw: bytes) -> None:
    assert _fast(raw) == _reference("POST", "/v1/distributions", raw)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_fingerprint_matches_for_generated_bodies(value: Any) -> None:
    raw = json.dumps(value).encode()
    assert _fast(raw) == _reference("POST", "/v1/distributions", raw)
