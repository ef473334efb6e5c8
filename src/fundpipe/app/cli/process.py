"""Process-wide choices, made by entry points only (the CLI's commands, the flows).

A library function never changes state the whole process shares (the garbage collector, the
allocator, logging handlers): during a fan-out several organizations run in threads of one
process, and one organization's `gc.unfreeze()` would undo another's `gc.freeze()`.
"""

from __future__ import annotations

import atexit
import gc
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "LOCK_LOGGERS",
    "frozen_gc",
    "leave_objects_at_exit",
    "paused_gc",
    "say_lock_lines",
    "say_on_stderr",
]

#: The loggers whose lines tell who holds a lock a run waits for, or whose lock it took over.
LOCK_LOGGERS = ("fundpipe.record.lock", "fundpipe.submit.inbox")


class _ToStderr(logging.Handler):
    """Each line as it is, on the standard error the process has when it is told."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:  # logging's own contract: a handler never raises
            self.handleError(record)


def say_lock_lines() -> None:
    """Print the locks' lines (a wait: who holds the lock and until when; a takeover of a
    holder that is gone) on standard error whatever Prefect's console shows: `fundpipe run`
    quiets Prefect's console handlers, and a night waiting for a lock must never be silent.
    For the `fundpipe` console script (`main`) only; idempotent."""
    for name in LOCK_LOGGERS:
        say_on_stderr(name, logging.WARNING)
        logging.getLogger(name).propagate = False


def say_on_stderr(name: str, level: int) -> None:
    """Print the lines of the logger `name` at `level` and above on standard error, each as it
    is (the direct `fundpipe run --verbose` shows its run-log lines this way). Idempotent."""
    logger = logging.getLogger(name)
    if not any(isinstance(h, _ToStderr) for h in logger.handlers):
        logger.addHandler(_ToStderr(level))
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)


def leave_objects_at_exit() -> None:
    """When the interpreter exits, freeze every object still alive out of the garbage
    collector, so its last collections do not walk them: the operating system takes the
    process's memory back whole.

    Without it the end of a 10k-payment `fundpipe ingest` (its plan, answers and ledger rows
    still referenced) spent 0.7–0.9 s after its last line of work, about 0.05 s with it. What
    must be written is written before: files and DuckDB connections are closed by the
    commands' own `with` blocks, logging is flushed by its own exit hook; only finalizers of
    objects caught in reference cycles no longer run, as Python never promised they would.
    For the `fundpipe` console script (`main`) only: a test session calling commands in-process
    keeps its collector.
    """
    atexit.register(gc.freeze)


@contextmanager
def frozen_gc() -> Iterator[None]:
    """Freeze the objects alive now (a planned night: the plan and the service's state) out of
    the garbage collector's full collections while the body runs.

    They live as long as the run: frozen, full collections do not walk them again and again
    (seconds on a big night). The thresholds stay: raised, the garbage of each chunk's requests
    and responses outlived its chunk (+60 MB peak at 300k payments). Only for a process that
    runs one ingest at a time (the `fundpipe ingest` command), never around one organization of
    a fan-out.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while an XLSX sheet becomes Python objects (the
    readers' `around_cells`) and while a drop's plan is built (ingest's `around_planning`).

    python-calamine hands over one Python object per cell (800k for a 100k-row sheet), and a
    100k-payment plan is about as many; hardly any of them form cycles (a 100k plan leaves
    ~200 objects for the collector), but making them starts collections that walk every object
    alive: half of the planning's CPU. What the pause leaves is looked at by the first young
    collection after it. Only for a process reading one drop at a time (`fundpipe validate`,
    `fundpipe ingest`), never around one organization of a fan-out: another thread's pause
    would end with this one's. Nested pauses end with the outermost.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
