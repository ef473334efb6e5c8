"""Worlds for sandbox tests: a fresh demo sandbox in-process and tokens of its demo clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sandbox_support import bearer, make_client, token_for

from fundpipe.sandbox import SandboxConfig, create_app


@pytest.fixture
def app() -> Any:
    """A fresh demo sandbox (in-memory state)."""
    return create_app(SandboxConfig(seed="demo"))


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the fresh sandbox (no credentials attached)."""
    async with make_client(app) as c:
        yield c


@pytest.fixture
async def writer(client: httpx.AsyncClient) -> dict[str, str]:
    """Headers carrying a token of demo-client (every scope)."""
    return bearer(await token_for(client, "demo-client", "demo-secret"))


@pytest.fixture
async def reader(client: httpx.AsyncClient) -> dict[str, str]:
    """Headers carrying a token of demo-reader (read scopes only)."""
    return bearer(await token_for(client, "demo-reader", "reader-secret"))
