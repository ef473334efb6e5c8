"""The CLI's surface: every command documented, help for each, configuration redacted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.warehouse.file import Warehouse

ROOT = Path(__file__).resolve().parents[2]
#: The CLI's registered commands, and each group's as "group command" (a new command is
#: checked without editing this file).
#: Every command a person is shown (not the hidden ones, such as `close`'s old spellings).
COMMANDS = [command.name or "" for command in app.registered_commands if not command.hidden] + [
    f"{group.name} {command.name}"
    for group in app.registered_groups
    for command in group.typer_instance.registered_commands
    if not command.hidden
]

runner = CliRunner()


def test_the_commands_are_read_from_the_cli() -> None:
    assert all(COMMANDS)
    assert {"run", "validate", "ingest", "sync", "reconcile", "sandbox", "serve", "config"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    # the help says what the command does, not just its options
    assert len(result.output.split("Options")[0].strip().splitlines()) >= 2
    # ... and shows how to call it
    assert re.search(rf"Example: fundpipe {command}\b", " ".join(result.output.split())), (
        result.output
    )


def test_top_level_help_lists_every_command_and_exit_codes() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command.split()[0] in result.output
    assert "Exit codes" in result.output


def test_readme_documents_every_command() -> None:
    readme = (ROOT / "README.md").read_text()
    for command in COMMANDS:
        assert re.search(rf"`fundpipe {command}\b", readme), f"README lacks `fundpipe {command}`"
    assert "make run" in readme
    assert "make test" in readme


def test_config_redacts_the_client_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "s3cr3t-value-never-shown")
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "https://api.example.com")
    for args in (["config"], ["config", "--json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "s3cr3t-value-never-shown" not in result.output
        assert "**********" in result.output
    values = json.loads(runner.invoke(app, ["config", "--json"]).output)
    assert values["service"]["base_url"] == "https://api.example.com"
    assert values["service"]["client_secret"] == "**********"
    assert list(values)[:6] == ["service", "sandbox", "http", "local", "pipeline", "orchestration"]
    assert values["mode"] == "configured service"


def test_config_without_base_url_uses_the_embedded_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUNDPIPE_BASE_URL", raising=False)
    values = json.loads(runner.invoke(app, ["config", "--json"]).output)
    assert values["mode"] == "embedded sandbox"


def test_bad_option_values_are_usage_errors_not_tracebacks() -> None:
    result = runner.invoke(app, ["reconcile", "--as-of", "30/11/2026"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["sandbox", "--seed", "nonsense"])
    assert result.exit_code == 2
    result = runner.invoke(app, ["sandbox", "--rate-limit-scope", "everyone"])
    assert result.exit_code == 2
    assert "client or client_org" in result.output


def test_sandbox_refuses_a_public_interface_unless_asked() -> None:
    result = runner.invoke(app, ["sandbox", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--allow-non-loopback" in result.output


def test_readme_explains_every_exit_code() -> None:
    from fundpipe.errors import ExitCode

    readme = " ".join((ROOT / "README.md").read_text().split())
    paragraph = readme.split("Exit codes:", 1)[1].split("## ", 1)[0]
    for code in ExitCode:
        assert f"`{int(code)}`" in paragraph, code


def test_a_make_run_data_folder_in_the_checkout_reaches_no_test(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, known_warehouse: Warehouse
) -> None:
    """After `make run`, `data/orgs/` where pytest starts holds two organizations; a CLI test
    that names none still works against its own folder (tests/conftest.py)."""
    checkout = request.config.invocation_params.dir
    made = [
        folder
        for folder in (checkout / "data" / "orgs" / org for org in ("org_demo", "org_demob"))
        if not folder.exists()
    ]
    for folder in made:
        folder.mkdir(parents=True)
    monkeypatch.setenv("FUNDPIPE_WAREHOUSE_PATH", str(known_warehouse.path))
    try:
        assert Path.cwd() != checkout
        listed = runner.invoke(app, ["exceptions", "list"])
        assert listed.exit_code == 0, listed.output
        assert "organizations are configured" not in listed.output
    finally:
        for folder in made:
            folder.rmdir()
