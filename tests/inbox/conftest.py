"""The bucket inbox's fixtures: the record's moto S3 server on loopback, a bucket per test."""

from __future__ import annotations

import uuid
from typing import Any

import fsspec
import pytest

from record.conftest import point_at_s3, s3_endpoint  # the record's moto server, reused

__all__ = ["s3_endpoint"]


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty bucket on the loopback S3 server; fsspec is pointed at it as an operator does
    with ``FSSPEC_S3_ENDPOINT_URL`` and the usual AWS variables."""
    point_at_s3(s3_endpoint, monkeypatch)
    name = f"fund-ops-{uuid.uuid4().hex[:10]}"
    s3(s3_endpoint).mkdir(name)
    return name


def s3(endpoint: str) -> Any:
    """A fresh s3fs file system on the loopback server (no listing cache)."""
    return fsspec.filesystem(
        "s3",
        endpoint_url=endpoint,
        skip_instance_cache=True,
        use_listings_cache=False,
        key="testing",
        secret="testing",
    )
