"""The client's view of the deterministic keys: the recipe lives in :mod:`fundpipe.keys`."""

from fundpipe.keys import (
    KEY_PREFIX,
    CanonicalBody,
    canonical_json,
    dumps_plain,
    idempotency_key,
    key_of_canonical,
    to_json_value,
)

__all__ = [
    "KEY_PREFIX",
    "CanonicalBody",
    "canonical_json",
    "dumps_plain",
    "idempotency_key",
    "key_of_canonical",
    "to_json_value",
]
