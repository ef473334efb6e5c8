"""The steps the flows are made of: one Prefect task per step, the settings a flow starts from,
and how a step's failure becomes the flow's plain final state (see `fundpipe.app.prefect.flows` for the
table of exit codes and states). Shared by `fundpipe.app.prefect.flows` and `fundpipe.app.prefect.fanout`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from prefect import State, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Cancelled, Completed, Failed

from fundpipe.app.embedded import NIGHT_LOCK_WAIT_S, night_settings
from fundpipe.app.prefect.oncall import night_sentence
from fundpipe.config import Settings
from fundpipe.errors import ExitCode

if TYPE_CHECKING:
    from fundpipe.night import StepRunner
    from fundpipe.nights import OrgNight
    from fundpipe.reconcile import ReconcileResult
    from fundpipe.submit import IngestResult
    from fundpipe.sync import SyncResult

#: How long a flow's ingest waits for another run holding the inbox lock before it is Cancelled.
FLOW_LOCK_WAIT_S = NIGHT_LOCK_WAIT_S
#: One plain line for a state message (`oncall.night_sentence`, Prefect-free: the direct
#: `fundpipe run` says it too).
_sentence = night_sentence

_R = TypeVar("_R")

_TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}

#: fundpipe exit code → the type of the flow run's final state (see the module docstring).
_STATE_FOR_EXIT: dict[ExitCode, Callable[..., State[Any]]] = {
    ExitCode.OK: Completed,
    ExitCode.USAGE: Failed,
    ExitCode.SERVICE: Failed,
    ExitCode.LOCKED: Cancelled,
    ExitCode.INTERNAL: Failed,
    ExitCode.INTERRUPTED: Cancelled,
}


def state_for(code: ExitCode) -> Callable[..., State[Any]]:
    """The state (constructor) a run ends in for exit code ``code``; a code without its own
    (one added later) fails the run."""
    if code == ExitCode.NEEDS_PERSON:  # a file rejected or a distribution needs a person
        from fundpipe.app.prefect.verdict_state import needing_a_person

        return needing_a_person
    return _STATE_FOR_EXIT.get(code, Failed)


class _NoTracebackForPlainFailures(logging.Filter):
    """Drop Prefect's "Engine execution exited with unexpected exception" record (and its
    traceback) when the exception is fundpipe's own plain error.

    Under a worker, Prefect reads a failed run's result, which raises the error in the state's
    data, and logs it with its traceback to the run's log; the run has already logged the plain
    sentence and ends in a state that carries it, so the traceback is noise for the on-call.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from fundpipe.errors import FundpipeError

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, FundpipeError)


class _OneLinePerFailedStep(logging.Filter):
    """Drop the task engine's own ERROR lines about a step that returned a Failed state: every
    fundpipe step runs under `_guard`, which has logged the plain sentence already, so
    "Task run failed with state: Failed(message=…)" (with a "NoneType: None" where a traceback
    would be) and "Finished in state Failed(…)" only repeat it in the run's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        text = str(record.msg)
        repeats = text.startswith(("Task run failed with state:", "Finished in state Failed("))
        return not (repeats and (record.exc_info is None or record.exc_info[1] is None))


# the logger Prefect's engine reports a flow run's end on (`flow_run_logger`), and a task run's
logging.getLogger("prefect.flow_runs").addFilter(_NoTracebackForPlainFailures())
logging.getLogger("prefect.task_runs").addFilter(_OneLinePerFailedStep())


def _refusal(exc: BaseException) -> State[Any]:
    """The state a step ends in when it raises: fundpipe's one-line, redacted message."""
    from fundpipe.errors import InternalError, LockHeld, as_fundpipe_error

    error = as_fundpipe_error(exc)
    logger = get_run_logger()
    if isinstance(error, InternalError):
        # a bug: its traceback goes to the run's log, and the message says so
        error = error.logged_at("this flow run's log")
        logger.error("internal error", exc_info=exc)
    else:
        # the traceback of an expected failure is for a developer with debug logging on
        logger.debug("step failed", exc_info=exc)
    code, message = error.exit_code, str(error)
    if isinstance(error, LockHeld):
        message = f"{message}; this run did nothing"
    from fundpipe.app.prefect.tell import TELLING_OF

    of = TELLING_OF.get()  # a run over several organizations: the line names which
    from fundpipe.app.prefect.oncall import in_words

    # the run's log line says what its internal words mean (ConnectError: not reached)
    logger.error(in_words(f"{of}: {message}" if of else message))
    # the error is the state's data: Prefect raises it when it reads a failed run's result (a
    # worker does), and `summary_of_run` reads its exit code
    return state_for(code)(message=message, data=error)


def _guard(work: Callable[..., _R], *args: Any) -> _R | State[Any]:
    """Run one step's work; an expected failure becomes a plain Failed/Cancelled state."""
    try:
        return work(*args)
    except Exception as exc:  # every failure becomes a sentence in the run's state
        return _refusal(exc)


def _finished(code: ExitCode, message: str, data: Any = None) -> State[Any]:
    """The final state of a flow whose steps all ran: Completed, with the night in one line
    (`_sentence`); exit code 1 (a file rejected, something needs a person) is the one "Needs a
    person" (FAILED type, `verdict_state.needing_a_person`). ``data`` is the flow's result."""
    return state_for(code)(message=message, data=data)


def _outcome(step: State[Any]) -> tuple[Any, State[Any] | None]:
    """A step's result, or the state the flow must end in because the step did not complete."""
    if step.is_completed():
        return step.result(), None
    # a new state for the flow, with the step's sentence (returning the task's own state would
    # make Prefect summarise it as "1/1 states failed")
    from fundpipe.errors import as_fundpipe_error

    data = step.result(raise_on_failure=False)
    if not isinstance(data, BaseException):
        data = as_fundpipe_error(RuntimeError(step.message or step.name))
    final = Cancelled if step.is_cancelled() else Failed
    return None, final(message=step.message, data=data)


def _settings(data_dir: str | None) -> Settings:
    """Settings from the environment, before any organization is chosen: one organization's come
    from `fundpipe.orgs.org_settings` (which loads the secret from a Prefect Secret block with
    `fundpipe.app.prefect.secrets.with_secret_block`). Every flow starts here, so this is also
    where the process picks Arrow's allocator (`use_system_allocator`) and quiets fastexcel's
    fallback warnings (`quiet_fastexcel`), and where the run is named in the nightly's timezone
    (`uiview.name_run`: its name needs the settings, so no run-name callback builds them)."""
    from fundpipe.app.prefect.uiview import name_run
    from fundpipe.sheets.frames import quiet_fastexcel, use_system_allocator

    use_system_allocator()
    quiet_fastexcel()

    settings = night_settings(data_dir)  # the 300 s inbox-lock wait, shared with `fundpipe run`
    name_run(settings)
    return settings


# --- tasks: one per file and per step --------------------------------------------------------


@task(name="ingest-inbox", **_TASK_OPTIONS)
def ingest_drop(settings: Settings) -> IngestResult | State[Any]:
    """Ingest every complete file waiting in the inbox as one drop.

    One task for the drop, not one per file: a distribution sheet may name entities by the
    `external_reference` of a roster dropped with it, so the files of a drop are validated and
    planned together. The per-file outcomes are in the result (and the run's artifacts).
    """
    from fundpipe.submit import ingest

    return _guard(lambda: ingest.ingest(settings, None))


@task(name="ingest-file", **_TASK_OPTIONS)
def ingest_one(settings: Settings, path: str) -> IngestResult | State[Any]:
    """Validate, plan and submit one sheet exactly once; returns the typed ingest result."""
    from fundpipe.submit import ingest

    return _guard(lambda: ingest.ingest(settings, [Path(path)]))


@task(name="sync", **_TASK_OPTIONS)
def sync_step(settings: Settings) -> SyncResult | State[Any]:
    """Pull the service's state into the warehouse; returns the typed sync result."""
    from fundpipe.sync import sync as run_sync

    return _guard(lambda: run_sync(settings))


@task(name="reconcile", **_TASK_OPTIONS)
def reconcile_step(settings: Settings, as_of: str | None) -> ReconcileResult | State[Any]:
    """Build the reconciliation views and write the reports; returns the typed result."""
    from fundpipe.reconcile import reconcile

    report_date = date.fromisoformat(as_of) if as_of else None
    return _guard(lambda: reconcile(settings, as_of=report_date))


#: The Prefect task each step of `fundpipe.night.night` shows as (the UI's names, as before).
NIGHT_TASKS = {"ingest": "ingest-inbox", "sync": "sync", "reconcile": "reconcile"}


@task(name="night-step", **_TASK_OPTIONS)
def night_step(work: Callable[[], _R]) -> _R | State[Any]:
    """One step of `fundpipe.night.night` (named by `NIGHT_TASKS`); a failure becomes the
    step's plain Failed/Cancelled state."""
    return _guard(work)


class StepStopped(Exception):
    """A step of the night did not complete: the flow ends in ``state`` (its plain sentence)."""

    def __init__(self, state: State[Any]) -> None:
        """The state the flow ends in."""
        super().__init__(state.message)
        self.state = state


def prefect_step(settings: Settings, held: dict[str, Any] | None = None) -> StepRunner:
    """The `org-night` flow's step runner for `fundpipe.night.night`: each step a Prefect task,
    its lines and events told on the run's log after it (`tell`); a step that did not complete
    raises `StepStopped` with the state the flow ends in.

    With ``held`` (a dict), the alerts' events (a file rejected, an exception opened) are not
    emitted here: the ingest's result is kept in ``held["ingest"]`` and the night tells them
    once its reports are published, each with its report's link (`tell.tell_incidents`)."""
    from fundpipe.app.prefect.tell import tell_ingest, tell_reconcile, tell_sync
    from fundpipe.night import exceptions_of

    def step(name: str, work: Callable[[], _R], /) -> _R:
        task_run = night_step.with_options(name=NIGHT_TASKS.get(name, name))
        result, stopped = _outcome(task_run(work, return_state=True))
        if stopped is not None:
            raise StepStopped(stopped)
        alert = held is None
        if name == "ingest":
            tell_ingest(result, settings, alert=alert)
            if held is not None:
                held["ingest"] = result
        elif name == "sync":
            tell_sync(result, settings)
        elif name == "reconcile":
            tell_reconcile(result, exceptions_of(result), settings, alert=alert)
        return result  # type: ignore[no-any-return]

    return step


@task(name="publish-artifacts", **_TASK_OPTIONS)
def publish(night: OrgNight, settings: Settings) -> None:
    """The night's artifacts: a markdown summary linking the reports, a link to the published
    workbook (with `FUNDPIPE_REPORTS_URL`), a table of each rejected file's errors, and the
    exceptions table."""
    from fundpipe.app.prefect.artifacts import publish_artifacts

    publish_artifacts(night, settings)
