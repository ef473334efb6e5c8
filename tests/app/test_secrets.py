"""The one Secret-block loader every entry point uses (`fundpipe.app.prefect.secrets`).

The Prefect server end of it (a real block, a CLI command configured only with the block name)
is `tests/e2e/test_secret_block.py`.
"""

from __future__ import annotations

import sys
import types

import pytest
from pydantic import SecretStr

from fundpipe.app.prefect.secrets import with_secret_block
from fundpipe.client import FundClient, errors
from fundpipe.config import Settings, grouped
from fundpipe.errors import ConfigurationError


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "base_url": "https://fund.example",
        "client_id": "fp-client",
        "client_secret": SecretStr("fp-secret"),
        "org_id": "org_a",
    }
    values.update(overrides)
    return Settings(**grouped(_env_file=None, **values))  # type: ignore[call-arg]


def _fake_prefect(monkeypatch: pytest.MonkeyPatch, value: object, loaded: list[str]) -> None:
    """A stand-in for prefect.blocks.system (importing Prefect costs seconds): same API,
    `await Secret.aload(name)` then `.get()`."""

    class Secret:
        def __init__(self, value: object) -> None:
            self._value = value

        @classmethod
        async def aload(cls, name: str) -> Secret:
            loaded.append(name)
            return cls(value)

        def get(self) -> object:
            return self._value

    system = types.ModuleType("prefect.blocks.system")
    system.Secret = Secret  # type: ignore[attr-defined]
    for name, module in (
        ("prefect", types.ModuleType("prefect")),
        ("prefect.blocks", types.ModuleType("prefect.blocks")),
        ("prefect.blocks.system", system),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    sys.modules["prefect"].blocks = sys.modules["prefect.blocks"]  # type: ignore[attr-defined]
    sys.modules["prefect.blocks"].system = system  # type: ignore[attr-defined]


def test_client_secret_can_come_from_a_prefect_secret_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded: list[str] = []
    _fake_prefect(monkeypatch, "from-the-block", loaded)
    settings = make_settings(client_secret=None, client_secret_block="fundpipe-client-secret")
    with pytest.raises(errors.ConfigurationError, match="Prefect Secret block"):
        FundClient(settings.client_config())
    resolved = with_secret_block(settings)
    assert loaded == ["fundpipe-client-secret"]
    assert resolved.service.client_secret is not None
    assert resolved.service.client_secret.get_secret_value() == "from-the-block"
    explicit = make_settings(client_secret_block="fundpipe-client-secret")
    assert with_secret_block(explicit) is explicit  # an explicit secret wins
    assert loaded == ["fundpipe-client-secret"]


def test_a_block_without_a_string_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_prefect(monkeypatch, {"not": "a string"}, [])
    settings = make_settings(client_secret=None, client_secret_block="wrong-block")
    with pytest.raises(ConfigurationError, match="'wrong-block' does not hold a string"):
        with_secret_block(settings)
