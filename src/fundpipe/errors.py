"""The application's errors and the one table of exit codes.

Exit codes (every command, every entry point):

| code | name | meaning |
|---|---|---|
| 0 | OK | success; every file valid |
| 1 | NEEDS_PERSON | a file was rejected, or a distribution needs a person (conflict, funding refusal) |
| 2 | USAGE | usage or configuration error, or an input that can't be read at all |
| 3 | SERVICE | the service failed or refused us (authentication, permission, network, retries exhausted), or outcomes are still unknown |
| 4 | LOCKED | another fundpipe process holds the inbox lock or the warehouse |
| 5 | INTERNAL | an internal error: a bug in fundpipe (the traceback is in the run's log file) |
| 6 | MACHINE | the machine: a damaged local file, a full disk or a refused permission (the message names the path and the next step) |
| 130 | INTERRUPTED | interrupted (Ctrl-C): the run stopped where it was |

The error tree (the exit code each maps to in brackets):

    FundpipeError                  a failure with a message for the person running fundpipe [1]
    ├── InputError                 an input can't be read or a parameter is wrong [2]
    │   └── ConfigurationError     the settings are missing something or contradict each other [2]
    ├── ServiceUnavailable         the service can't be reached or refused us [3]
    ├── LockHeld                   another process holds a lock this one needs [4]
    │   ├── InboxBusyError         … the inbox lock (``fundpipe.submit.inbox``)
    │   └── WarehouseLockedError   … the warehouse file (``fundpipe.warehouse.file``)
    ├── InternalError              an unexpected exception: a bug, never "the service failed" [5]
    └── MachineFault               the machine failed under fundpipe (``fundpipe.machine``) [6]
        ├── DamagedFileError       … a ledger or warehouse fails DuckDB's checksums: restore it
        ├── DiskFullError          … no space left on the device a file was being written to
        └── PermissionDeniedError  … the OS user may not read, write or change a file or folder

Sheet problems are not exceptions: they are data (``fundpipe.validate.issues.Issue``), and the
outcome of a file maps to an exit code through :data:`OUTCOME_EXIT_CODES`. Service errors have
their own tree in ``fundpipe.client.errors``; :func:`as_fundpipe_error` turns them (and any
other exception) into this tree, so the CLI decides messages and codes in one place: the
client's own ``ConfigurationError`` and an invalid setting are configuration errors [2], every
other client or transport error is the service's [3], a full disk, a damaged DuckDB file or a
refused permission is the machine's [6], and anything else is a bug [5].
Messages never carry secrets.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from enum import IntEnum
from pathlib import Path
from typing import Any

from fundpipe.machine import denied, fault_in, restore_command


class ExitCode(IntEnum):
    """The process exit codes of fundpipe (the table in the module docstring)."""

    OK = 0
    NEEDS_PERSON = 1
    USAGE = 2
    SERVICE = 3
    LOCKED = 4
    INTERNAL = 5
    MACHINE = 6
    INTERRUPTED = 130


#: One line per exit code, for help texts (the CLI's top-level help shows them).
EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.NEEDS_PERSON: "a file rejected or a distribution needs a person",
    ExitCode.USAGE: "usage or configuration error, or unreadable input",
    ExitCode.SERVICE: "service error",
    ExitCode.LOCKED: "lock held by another process",
    ExitCode.INTERNAL: "internal error (a bug; the traceback is in the log file named)",
    ExitCode.MACHINE: "the machine: a damaged local file, a full disk or a refused permission "
    "(path and next step named)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}

#: The exit code each outcome of a file asks for; a run exits with the highest of its files'.
#: Ingest outcomes (``fundpipe.submit.ingest.FileState``) and validation verdicts.
OUTCOME_EXIT_CODES: dict[str, ExitCode] = {
    "processed": ExitCode.OK,
    "duplicate": ExitCode.OK,
    "planned": ExitCode.OK,
    "valid": ExitCode.OK,
    "rejected": ExitCode.NEEDS_PERSON,
    "conflict": ExitCode.NEEDS_PERSON,
    "refused": ExitCode.NEEDS_PERSON,
    "invalid": ExitCode.NEEDS_PERSON,
    "unreadable": ExitCode.USAGE,
    "incomplete": ExitCode.SERVICE,
}


def exit_code_of(outcomes: Iterable[str]) -> ExitCode:
    """The exit code of a run whose files ended in ``outcomes`` (0 when there are none)."""
    return max((OUTCOME_EXIT_CODES[o] for o in outcomes), default=ExitCode.OK)


class FundpipeError(Exception):
    """A failure with a message written for the person running fundpipe."""

    exit_code: ExitCode = ExitCode.NEEDS_PERSON


#: The former name of :class:`FundpipeError`.
UserFacingError = FundpipeError


class InputError(FundpipeError):
    """An input file or parameter can't be used."""

    exit_code = ExitCode.USAGE


class ConfigurationError(InputError):
    """The settings are missing something the run needs, or contradict each other."""


class ServiceUnavailable(FundpipeError):
    """The service can't be reached, or refused the request or the credentials."""

    exit_code = ExitCode.SERVICE


class LockHeld(FundpipeError):
    """Another fundpipe process holds a lock this one needs; the message names the holder."""

    exit_code = ExitCode.LOCKED


class InboxBusyError(LockHeld):
    """Another ingest holds ``<data_dir>/.ingest.lock``."""


class WarehouseLockedError(LockHeld):
    """Another process held the warehouse file for longer than the retry deadline."""

    def __init__(self, path: Path, holder: str, waited_s: float) -> None:
        """Record the file, a description of the holder and how long fundpipe waited."""
        self.path = path
        self.holder = holder
        self.waited_s = waited_s
        super().__init__(
            f"warehouse {path} is held by {holder}; gave up after {waited_s:.1f} s. "
            "Wait for that process to finish (or stop it) and run again."
        )


class InternalError(FundpipeError):
    """An exception nobody expected: a bug in fundpipe, not the service or the input.

    Built by :meth:`of` from the original exception (kept as ``cause``); the edge (CLI, flow)
    writes the traceback to the run's log and names it with :meth:`logged_at`.
    """

    exit_code = ExitCode.INTERNAL
    cause: BaseException | None = None

    @classmethod
    def of(cls, cause: BaseException, where: str | None = None) -> InternalError:
        """The error for ``cause``; ``where`` names the log holding its traceback, when known."""
        told = f"; the traceback is in {where}" if where else ""
        error = cls(
            f"internal error ({type(cause).__name__}: {cause}) — a bug in fundpipe, not a "
            f"problem with the service or the input{told}"
        )
        error.cause = cause
        return error

    def logged_at(self, where: str) -> InternalError:
        """The same error, its message naming ``where`` the traceback was written."""
        return InternalError.of(self.cause, where) if self.cause is not None else self


class MachineFault(FundpipeError):
    """The machine failed under fundpipe, not fundpipe itself: the message names the path."""

    exit_code = ExitCode.MACHINE


class DamagedFileError(MachineFault):
    """A local DuckDB file (``what``: "ledger", "warehouse") fails its checksums or is cut off;
    nothing more is written to it, and the message names the restore command."""

    def __init__(
        self, path: Path | None, problem: str, *, what: str = "file", org: str | None = None
    ) -> None:
        """Record the file (None: not known), what is wrong with it and its organization."""
        self.path, self.problem = path, problem
        where = f"the {what} {path}" if path is not None else f"a local {what}"
        super().__init__(
            f"{where} is damaged ({problem}); fundpipe writes nothing to it until it is "
            f"restored from the organization's record: {restore_command(path, org)}"
        )


class DiskFullError(MachineFault):
    """No space was left on the device while ``path`` was written (what was written stays)."""

    def __init__(self, path: Path | str | None, writing: str | None = None) -> None:
        """Record the path being written (None: not known) and what it is, in words."""
        self.path = path
        what = f"{writing} " if writing else ""
        at = f"{what}{path}" if path is not None else (writing or "a file")
        super().__init__(
            f"the disk is full: no space left on the device while writing {at}; what was "
            "written before is kept. Free space on that disk and run again."
        )


class PermissionDeniedError(MachineFault):
    """The operating system refused fundpipe's OS user a file or folder: the message names the
    path, what was needed there (read or write access, or being its owner) and who ran."""

    def __init__(self, path: Path | str, *, owner_only: bool = False) -> None:
        """Record the refused path; ``owner_only`` when only its owner may do what was tried
        (change its mode): otherwise the access missing is read from the file system now."""
        self.path = Path(path)
        user = _running_user()
        if owner_only:
            needed = f"to own {self.path} to change its mode"
        else:
            needed = _access_needed(self.path)
        super().__init__(
            f"permission denied: the OS user {user} needed {needed} ({_owner_and_mode(self.path)}); "
            "give that user (or the organization's group) that access, or run as one who has it"
        )


def _running_user() -> str:
    import pwd

    try:
        return repr(pwd.getpwuid(os.geteuid()).pw_name)
    except (KeyError, OSError):
        return f"uid {os.geteuid()}"


def _access_needed(path: Path) -> str:
    """What the running user lacks at ``path``, in words: write access to it, read access to it,
    or (when it does not exist) write access to the folder it would be created in."""
    if not path.exists():
        folder = path.parent
        if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
            return f"write access to {folder} to create {path.name} in it"
        return f"access to {path}"
    if not os.access(path, os.R_OK):
        return f"read access to {path}"
    if not os.access(path, os.W_OK):
        return f"write access to {path}"
    return f"access to {path}"


def _owner_and_mode(path: Path) -> str:
    """``owned by ana:team, -rw-r--r--`` for ``path`` (or ``<folder> is owned by …`` for the
    folder it would be created in)."""
    import grp
    import pwd
    import stat

    target = path if path.exists() else path.parent
    try:
        info = target.stat()
    except OSError:
        return "its owner could not be read"
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    where = "" if target == path else f"{target} is "
    return f"{where}owned by {owner}:{group}, {stat.filemode(info.st_mode)}"


def machine_fault(
    exc: BaseException, *, path: Path | None = None, what: str | None = None, org: str | None = None
) -> MachineFault | None:
    """``exc`` as the machine's fault (``fundpipe.machine.fault_in``: ``path``/``what`` name the
    DuckDB file the caller holds), or None when it is not one."""
    if isinstance(exc, MachineFault):
        return exc
    fault = fault_in(exc, path=path, what=what)
    if fault is None:
        return None
    where = Path(fault.path) if fault.path is not None else None
    if fault.kind == "disk_full":
        return DiskFullError(where, f"the {fault.what}" if fault.what else None)
    return DamagedFileError(where, fault.problem, what=fault.what or "file", org=org)


def _setting_problem(error: Mapping[str, Any]) -> str:
    """One invalid setting in words: its environment variable, the value given (never a
    secret's) and what it should be, e.g. ``FUNDPIPE_COMPLETE_BY='25:00': expected HH:MM …``."""
    where = [str(part) for part in error["loc"]]
    if len(where) > 1:  # settings.<group>.<field>[…]: the variable is FUNDPIPE_<FIELD>
        where = where[1:]
    message = str(error["msg"]).removeprefix("Value error, ")
    if not where:
        return f"settings: {message}"
    variable = f"FUNDPIPE_{where[0].upper()}" + "".join(f"[{part}]" for part in where[1:])
    value = error.get("input")
    secret = any(word in where[0] for word in ("secret", "token", "password"))
    shown = "" if secret or not isinstance(value, str | int | float) else f"={str(value)!r}"
    return f"{variable}{shown}: {message}"


def as_fundpipe_error(exc: BaseException) -> FundpipeError:
    """``exc`` as an error of this tree: the one place failures are classified.

    Errors of this tree pass through; the client's own ``ConfigurationError`` and an invalid
    setting (pydantic's ``ValidationError`` from ``Settings``) become :class:`ConfigurationError`
    [2]; the service client's other errors and transport errors become
    :class:`ServiceUnavailable` [3] (with a redacted message); a full disk, a damaged DuckDB
    file or a refused permission anywhere becomes a :class:`MachineFault` [6]; anything else is a bug:
    :class:`InternalError` [5].
    """
    import httpx
    import pydantic

    from fundpipe.client.errors import ConfigurationError as ClientConfigurationError
    from fundpipe.client.errors import (
        FundServiceError,
        IncompleteListError,
        ServiceConnectionError,
    )

    if isinstance(exc, FundpipeError):
        return exc
    if (fault := machine_fault(exc)) is not None:
        return fault
    # told here, not by machine_fault: a reader that can do without a file it may not open
    # (`fundpipe.warehouse.known.read_known`) still gets DuckDB's own error inside its block
    if (refused := denied(exc)) is not None:
        return PermissionDeniedError(refused.path, owner_only=refused.owner_only)
    if isinstance(exc, ClientConfigurationError):
        return ConfigurationError(f"configuration: {exc}")
    if isinstance(exc, pydantic.ValidationError) and exc.title == "Settings":
        problems = "; ".join(_setting_problem(e) for e in exc.errors(include_url=False))
        return ConfigurationError(f"invalid settings: {problems}")
    if isinstance(exc, ServiceConnectionError):
        return ServiceUnavailable(f"could not reach the service: {exc}")
    if isinstance(exc, IncompleteListError):
        return ServiceUnavailable(f"stopped before going on with half a list: {exc}")
    if isinstance(exc, FundServiceError):
        return ServiceUnavailable(f"the service refused the request: {exc}")
    if isinstance(exc, httpx.HTTPError):
        return ServiceUnavailable(f"could not reach the service: {type(exc).__name__}")
    return InternalError.of(exc)
