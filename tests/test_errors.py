"""One error tree, one exit-code table: every failure maps to the code the table names."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from fundpipe import errors
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
    [httpx.ConnectError("refused"), RuntimeError("boom")],
    ids=["transport", "unexpected"],
)
def test_other_failures_become_service_unavailable(failure: Exception) -> None:
    error = errors.as_fundpipe_error(failure)
    assert isinstance(error, errors.ServiceUnavailable)
    assert error.exit_code == ExitCode.SERVICE == 3


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


def test_every_exit_code_but_an_interrupt_has_a_meaning() -> None:
    assert set(errors.EXIT_CODE_MEANINGS) == set(ExitCode) - {ExitCode.INTERRUPTED}
