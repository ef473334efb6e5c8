"""Canonical JSON, deterministic Idempotency-Keys and content hashes: the one recipe of each.

Pure (no I/O but reading a file's bytes for :func:`file_hash` and :func:`stream_hash`, the
one chunked SHA-256 of fundpipe); used by the plan (the keys of
its requests), the ledger (the bodies it stores), the client (the key it sends when none is
given) and ingest (how a re-dropped file is recognised).

The key of a mutating request is

    "fp1_" + sha256(canonical_json(["fp1", org_id or "", METHOD, path, body])).hexdigest()

where `canonical_json` is JSON with sorted object keys, no whitespace (`,` and `:` separators),
`ensure_ascii=True` and no NaN/Infinity. `path` is the request path without query string (e.g.
`/v1/distributions`), `METHOD` is upper case and `body` is the JSON request body. The result only
depends on those values: it is the same across processes, machines, Python versions and the
insertion order of dict keys, so a re-run after a crash sends the same key for the same request.
`fp1` is the version of this recipe; a different recipe would use another prefix.

Money must be integer cents: floats (and Decimals) are refused rather than hashed, so `100` and
`100.0` can never produce two keys for one payment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

#: Prefix (and version) of every derived key.
KEY_PREFIX = "fp1_"


#: Exact types returned as they are (the common leaves of a request body).
_LEAVES = frozenset({str, int, bool, type(None)})


def to_json_value(value: Any) -> Any:
    """Convert `value` to plain JSON data (dict/list/str/int/bool/None) for hashing and sending.

    Pydantic models are dumped in JSON mode without None fields; aware datetimes and dates become
    ISO 8601 strings; tuples become lists. Floats and other types raise `TypeError`.
    """
    kind = type(value)
    # Fast path for what request bodies are made of: plain dicts and lists of plain leaves
    # (exact types only; anything else takes the general path below, with the same result).
    if kind in _LEAVES:
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                return _general(value)
            out[key] = item if type(item) in _LEAVES else to_json_value(item)
        return out
    if kind is list:
        return [item if type(item) in _LEAVES else to_json_value(item) for item in value]
    return _general(value)


def _general(value: Any) -> Any:
    """`to_json_value` for every other type (models, dates, mappings, sequences)."""
    if isinstance(value, BaseModel):
        return to_json_value(value.model_dump(mode="json", exclude_none=True, by_alias=True))
    if value is None or isinstance(value, bool | int | str):
        # bool is an int subclass: both pass through unchanged.
        return value
    if isinstance(value, float):
        msg = "floats are not allowed in request bodies: money is integer cents"
        raise TypeError(msg)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            msg = "naive datetime in a request body: pass an ISO string or an aware datetime"
            raise TypeError(msg)
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                msg = f"JSON object keys must be strings, got {type(key).__name__}"
                raise TypeError(msg)
            out[key] = to_json_value(item)
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [to_json_value(item) for item in value]
    msg = f"cannot encode {type(value).__name__} as JSON"
    raise TypeError(msg)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value`: sorted keys, no whitespace, ASCII only."""
    return dumps_plain(to_json_value(value))


def dumps_plain(plain: Any) -> str:
    """Canonical JSON of data already converted by `to_json_value`."""
    return json.dumps(
        plain,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )


class CanonicalBody(list[Any]):
    """A create body (plain JSON elements) with its canonical JSON already made, by
    :meth:`fundpipe.plan.PlannedRequest.resolve`: the client sends that text and derives the
    key from it as it is, without converting or encoding the elements again."""

    def __init__(self, elements: Iterable[Any], text: str) -> None:
        """``text`` must be ``dumps_plain(to_json_value(elements))``."""
        super().__init__(elements)
        self.text = text


def content_hash(data: bytes) -> str:
    """SHA-256 hex digest of a file's bytes: how a re-dropped file is recognised."""
    return hashlib.sha256(data).hexdigest()


#: How much of a file :func:`stream_hash` reads at a time.
_CHUNK = 1 << 20


def stream_hash(source: IO[bytes], *, copy_to: IO[bytes] | None = None) -> str:
    """:func:`content_hash` of the bytes left in ``source``, read in 1 MiB chunks; with
    ``copy_to``, each chunk is also written there (a copy checked as it is made)."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: source.read(_CHUNK), b""):
        digest.update(chunk)
        if copy_to is not None:
            copy_to.write(chunk)
    return digest.hexdigest()


def file_hash(path: Path) -> str:
    """:func:`content_hash` of the file at ``path``, read in chunks (:func:`stream_hash`)."""
    with open(path, "rb") as handle:
        return stream_hash(handle)


def idempotency_key(org_id: str | None, method: str, path: str, body: Any) -> str:
    """The deterministic Idempotency-Key of one request (recipe in the module docstring).

    `org_id` is the organization acted on (None when the token is bound to one), `method` the
    HTTP method, `path` the path without query string and `body` the JSON body (dicts, lists or
    pydantic models).
    """
    return key_of_canonical(org_id, method, path, dumps_plain(to_json_value(body)))


def key_of_canonical(org_id: str | None, method: str, path: str, body_json: str) -> str:
    """:func:`idempotency_key` of a body whose canonical JSON is ``body_json`` (as
    :func:`canonical_json` makes it), without converting or encoding the body again.

    The recipe's payload is a JSON array, so its canonical text is the canonical texts of its
    items joined by ``,`` inside ``[]``: the body's own text goes in as it is.
    """
    head = dumps_plain(["fp1", org_id or "", method.upper(), path.split("?", 1)[0]])
    payload = f"{head[:-1]},{body_json}]"
    return KEY_PREFIX + hashlib.sha256(payload.encode("ascii")).hexdigest()
