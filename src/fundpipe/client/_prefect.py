"""The client secret from a Prefect `Secret` block, for flows that keep it there."""

from __future__ import annotations

from pydantic import SecretStr

from fundpipe.client._errors import ConfigurationError
from fundpipe.config import Settings


async def with_prefect_secret(settings: Settings) -> Settings:
    """`settings` with `client_secret` loaded from the Prefect Secret block it names.

    Unchanged when a secret is already set or no `client_secret_block` is configured. Call it at
    the flow's entry point, before building the `FundClient`; Prefect is imported only here.
    """
    if settings.client_secret is not None or not settings.client_secret_block:
        return settings
    # Imported here: Prefect is only needed when a block is configured.
    from prefect.blocks.system import Secret

    block: Secret[str] = await Secret.aload(settings.client_secret_block)
    value: object = block.get()
    if not isinstance(value, str) or not value:
        msg = f"Prefect Secret block {settings.client_secret_block!r} does not hold a string"
        raise ConfigurationError(msg)
    return settings.model_copy(update={"client_secret": SecretStr(value)})
