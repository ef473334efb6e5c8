"""A night of ``org_demo`` in a process of its own that stops at a named point and waits there to
be killed: ``python night_until_killed.py STEP MARKER AS_OF``.

The night is ``fundpipe.night.night`` — the sequence the `org-night` flow runs, in its durable
record (the lease taken first, renewed while it runs, the snapshot last) — with its settings
from the environment as an entry point builds them. At ``STEP`` it writes its pid to ``MARKER``
and sleeps, the lease's renewal thread still running, until the test sends SIGKILL:

- ``ingest``: the service has answered a create of distributions, the ledger not yet told;
- ``sync``: the distributions are pulled, the rest of the sync not yet;
- ``reports``: the report folder and its Parquet are written, the workbook and `latest` not yet;
- ``snapshot``: the snapshot's first file is in the record, its manifest not yet.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
from pathlib import Path
from typing import Any

STEP, MARKER, AS_OF = sys.argv[1], Path(sys.argv[2]), dt.date.fromisoformat(sys.argv[3])


def hold() -> None:
    """Tell the test where the night is, then wait for SIGKILL."""
    MARKER.write_text(str(os.getpid()))
    while True:  # no clock involved (under libfaketime a long time.sleep may fail)
        signal.pause()


def pause_at(step: str) -> None:
    """Wrap the function the night reaches at ``step`` so that it holds there."""
    if step == "ingest":
        from fundpipe.submit import execute

        send = execute._send

        async def send_then_hold(client: Any, request: Any) -> list[Any]:
            answered = await send(client, request)
            if request.phase == "distributions":
                hold()
            return answered

        execute._send = send_then_hold  # type: ignore[assignment]
    elif step == "sync":
        from fundpipe.sync import pull

        distributions = pull._Puller.distributions

        async def pulled_then_hold(self: Any) -> None:
            await distributions(self)
            hold()

        pull._Puller.distributions = pulled_then_hold  # type: ignore[method-assign]
    elif step == "reports":
        from fundpipe.reconcile import views

        views.write_workbook = lambda *a, **k: hold()  # type: ignore[assignment]
    elif step == "snapshot":
        from fundpipe.record.store import Record

        create_from = Record.create_from

        def created_then_hold(self: Record, name: str, source: Path) -> None:
            create_from(self, name, source)
            hold()

        Record.create_from = created_then_hold  # type: ignore[method-assign]
    else:
        raise SystemExit(f"no such step: {step}")


if __name__ == "__main__":
    from fundpipe.config import Organization, Settings
    from fundpipe.night import night

    pause_at(STEP)
    settings = Settings(_env_file=None).for_org(Organization(id="org_demo"), several=False)  # type: ignore[call-arg]
    night(settings, as_of=AS_OF)
    raise SystemExit(f"the night reached its end without passing {STEP}")
