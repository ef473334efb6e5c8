"""The one loader of the client secret from a Prefect `Secret` block, for every entry point.

`FUNDPIPE_CLIENT_SECRET_BLOCK` (or an organization's `secret_block`) names the block; the CLI
commands, the flows and each organization of a fan-out all load it here, before a client is
built. Prefect is imported only when a block is named and no secret is set.
"""

from __future__ import annotations

import asyncio

from pydantic import SecretStr

from fundpipe.config import Settings
from fundpipe.errors import ConfigurationError

__all__ = ["with_secret_block"]


async def _load(block_name: str) -> str:
    from prefect.blocks.system import Secret

    try:
        block: Secret[str] = await Secret.aload(block_name)
    except ValueError as exc:  # Prefect's "Unable to find block document named …"
        raise ConfigurationError(
            f"FUNDPIPE_CLIENT_SECRET_BLOCK: no Prefect Secret block {block_name!r} on the "
            f"Prefect server ({exc})"
        ) from None
    value: object = block.get()
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"Prefect Secret block {block_name!r} does not hold a string")
    return value


def with_secret_block(settings: Settings) -> Settings:
    """`settings` with `client_secret` loaded from the Prefect Secret block it names.

    Unchanged when a secret is already set or no `client_secret_block` is configured. A block
    that is missing or holds no string is a configuration error (exit 2).
    """
    if settings.service.client_secret is not None or not settings.service.client_secret_block:
        return settings
    value = asyncio.run(_load(settings.service.client_secret_block))
    return settings.updated(service={"client_secret": SecretStr(value)})
