"""Worlds for the submission tests: a seeded in-process sandbox and a data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import stamina
from submit_worlds import World

from fundpipe.config import Settings
from fundpipe.sandbox import SandboxConfig, create_app


@pytest.fixture(autouse=True)
def _no_retry_sleeps() -> Iterator[None]:
    """Retries run instantly; the client's own max_attempts still bounds them."""
    with stamina.set_testing(True, attempts=100, cap=True):
        yield


@pytest.fixture
def world(tmp_path: Path) -> World:
    app = create_app(SandboxConfig(rate_limit_requests=10_000, rate_limit_window_s=1))
    settings = Settings(
        data_dir=tmp_path / "data", rate_limit_per_s=1000.0, max_attempts=6
    ).with_service("http://sandbox.test")
    (tmp_path / "data" / "inbox").mkdir(parents=True)
    return World(settings=settings, transport=httpx.ASGITransport(app=app))
