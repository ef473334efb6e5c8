"""The durable record's fixtures: an S3-compatible server on loopback, and a test pointed at it."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import fsspec
import pytest

#: The credentials moto accepts, as an operator's AWS variables.
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on loopback, for the whole module."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def point_at_s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's process talks to the loopback server as an operator's would: the AWS
    variables, and fsspec's S3 endpoint (what FSSPEC_S3_ENDPOINT_URL sets when fsspec is
    imported)."""
    for name, value in AWS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": s3_endpoint})
