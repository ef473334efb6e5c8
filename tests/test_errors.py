"""One error tree, one exit-code table: every failure maps to the code the table names."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from fundpipe import errors
from fundpipe.client import errors as client_errors
from fundpipe.errors import ExitCode


def test_lock_errors_are_lock_held_and_exit_4() -> None:
    busy = errors.InboxBusyError("another fundpipe ingest is running (pid 1)")
    locked = errors.WarehouseLockedError(Path("w.duckdb"), "PID 7 (python)", 1.5)
    for error in (busy, locked):
        assert isinstance(error, errors.LockHeld)
        assert errors.as_fundpipe_error(error).exit_code == ExitCode.LOCKED == 4
    assert "PID 7 (python)" in str(locked)


def test_a_configuration_problem_is_a_usage_error() -> None:
    problem = errors.ConfigurationError("FUNDPIPE_ORG_ID is required")
    assert isinstance(problem, errors.InputError)
    assert problem.exit_code == ExitCode.USAGE == 2


@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError("refused"), client_errors.ServiceConnectionError("refused")],
    ids=["transport", "client-transport"],
)
def test_transport_failures_become_service_unavailable(failure: Exception) -> None:
    error = errors.as_fundpipe_error(failure)
    assert isinstance(error, errors.ServiceUnavailable)
    assert error.exit_code == ExitCode.SERVICE == 3


def test_an_unexpected_exception_is_an_internal_error_not_the_service() -> None:
    error = errors.as_fundpipe_error(RuntimeError("boom"))
    assert isinstance(error, errors.InternalError)
    assert error.exit_code == ExitCode.INTERNAL == 5
    assert "RuntimeError: boom" in str(error)
    assert "bug in fundpipe" in str(error)
    assert "service failed" not in str(error)
    told = error.logged_at("data/logs/fundpipe.log")
    assert "the traceback is in data/logs/fundpipe.log" in str(told)
    assert told.exit_code == 5


def test_a_refused_permission_is_the_machine_s_fault_naming_the_path_and_what_was_needed(
    tmp_path: Path,
) -> None:
    """The issue's review that said "a bug in fundpipe": a chmod of a folder another OS user
    owns (EPERM), a file this user may not open (EACCES, DuckDB's words too): exit 6, one line
    naming the path, what was needed and who ran, never a bug."""
    import errno

    import duckdb

    folder = tmp_path / "closed" / "2026-12"
    folder.mkdir(parents=True)
    chmod = PermissionError(errno.EPERM, "Operation not permitted", str(folder))
    warehouse = tmp_path / "warehouse.duckdb"
    warehouse.write_bytes(b"")
    opened = duckdb.IOException(f'IO Error: Cannot open file "{warehouse}": Permission denied')
    for failure, needed in (
        (chmod, f"needed to own {folder} to change its mode"),
        (opened, f"{warehouse} ("),
        (OSError(errno.EACCES, "Permission denied", str(warehouse)), f"{warehouse} ("),
    ):
        try:
            raise RuntimeError("while reviewing") from failure
        except RuntimeError as exc:
            error = errors.as_fundpipe_error(exc)
        assert isinstance(error, errors.PermissionDeniedError)
        assert error.exit_code == ExitCode.MACHINE == 6
        message = str(error)
        assert message.startswith("permission denied: the OS user "), message
        assert needed in message
        assert "owned by " in message
        assert "bug" not in message
        assert "\n" not in message


def test_the_clients_configuration_error_is_a_configuration_error() -> None:
    error = errors.as_fundpipe_error(client_errors.ConfigurationError("no client secret"))
    assert isinstance(error, errors.ConfigurationError)
    assert error.exit_code == ExitCode.USAGE == 2
    assert "no client secret" in str(error)


def test_an_invalid_setting_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from fundpipe.config import Settings

    monkeypatch.setenv("FUNDPIPE_INBOX_SETTLE_S", "soon")
    with pytest.raises(ValidationError) as caught:
        Settings()
    error = errors.as_fundpipe_error(caught.value)
    assert isinstance(error, errors.ConfigurationError)
    assert error.exit_code == 2
    # the variable as it is set, and the value it was given
    assert "FUNDPIPE_INBOX_SETTLE_S='soon': " in str(error)


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (client_errors.AuthenticationError("bad credentials", status=401), 3),
        (client_errors.PermissionDeniedError("no scope", status=403), 3),
        (client_errors.RateLimitError("slow down", status=429), 3),
        (client_errors.APIServerError("down", status=503), 3),
        (client_errors.IncompleteListError("/v1/payments", "payments"), 3),
        (client_errors.ResponseDecodeError("not JSON", status=200, request_id=None, body=b""), 3),
        (client_errors.ServiceConnectionError("refused"), 3),
        (client_errors.ConfigurationError("no base URL"), 2),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_client_error_has_its_exit_code(failure: Exception, code: int) -> None:
    assert errors.as_fundpipe_error(failure).exit_code == code


@pytest.mark.parametrize(
    ("outcomes", "code"),
    [
        ([], 0),
        (["processed", "duplicate", "planned"], 0),
        (["processed", "rejected"], 1),
        (["conflict"], 1),
        (["refused", "processed"], 1),
        (["valid", "invalid", "unreadable"], 2),
        (["rejected", "incomplete"], 3),
    ],
)
def test_a_run_exits_with_its_worst_file(outcomes: list[str], code: int) -> None:
    assert errors.exit_code_of(outcomes) == code


def test_every_exit_code_has_a_meaning() -> None:
    """Every code in the table, 130 (interrupted) included, says what it means."""
    assert set(errors.EXIT_CODE_MEANINGS) == set(ExitCode)
