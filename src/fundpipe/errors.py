"""Errors a person can act on, each with the CLI exit code it maps to.

    UserFacingError            (exit 1 unless a subclass says otherwise)
    ├── InputError             an input can't be read or a parameter is wrong (exit 2)
    ├── ServiceUnavailable     the service can't be reached or refused us (exit 3)
    └── LockHeld               another process holds the inbox lock or the warehouse (exit 4)

Sheet problems are not exceptions: they are data (`fundpipe.validate.Issue`). Service errors
have their own tree in `fundpipe.client.errors`; the CLI maps both to messages in one place.
Messages never carry secrets.
"""

from __future__ import annotations


class UserFacingError(Exception):
    """A failure with a message written for the person running fundpipe."""

    exit_code: int = 1


class InputError(UserFacingError):
    """An input file or parameter can't be used."""

    exit_code = 2


class ServiceUnavailable(UserFacingError):
    """The service can't be reached, or refused the credentials."""

    exit_code = 3


class LockHeld(UserFacingError):
    """Another fundpipe process holds a lock this one needs; the message names the holder."""

    exit_code = 4


def describe_failure(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one-line, redacted message for any failure of a run.

    One mapping for every shell: the CLI prints the message and exits with the code, a Prefect
    flow ends in the state the code maps to with the message as its state message.
    """
    import httpx

    from fundpipe.client.errors import FundServiceError, ServiceConnectionError
    from fundpipe.submit.inbox import InboxBusyError
    from fundpipe.warehouse.file import WarehouseLockedError

    if isinstance(exc, UserFacingError):
        return exc.exit_code, str(exc)
    if isinstance(exc, InboxBusyError | WarehouseLockedError):
        return LockHeld.exit_code, f"{exc}; this run did nothing"
    if isinstance(exc, ServiceConnectionError):
        return ServiceUnavailable.exit_code, f"could not reach the service: {exc}"
    if isinstance(exc, FundServiceError):
        return ServiceUnavailable.exit_code, f"the service refused the request: {exc}"
    if isinstance(exc, httpx.HTTPError):
        return ServiceUnavailable.exit_code, f"could not reach the service: {type(exc).__name__}"
    return ServiceUnavailable.exit_code, f"unexpected failure ({type(exc).__name__}): {exc}"
