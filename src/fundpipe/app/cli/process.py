"""Process-wide choices, made by entry points only (the CLI's commands, the flows).

A library function never changes state the whole process shares (the garbage collector, the
allocator, logging handlers): during a fan-out several organizations run in threads of one
process, and one organization's `gc.unfreeze()` would undo another's `gc.freeze()`.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_gc", "leave_objects_at_exit", "paused_gc"]


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
