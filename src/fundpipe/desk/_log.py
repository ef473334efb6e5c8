"""The desk's own log: sign-ins, refusals and every act, one JSON line each in
``<data_dir>/desk/desk.log``.

A line holds only the fields named in :data:`FIELDS` (who, where from, which organization and
page, what happened): a password, token, cookie or CSRF value has no field to go in, so it can
never reach the log.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from fundpipe.desk._config import Clock

__all__ = ["FIELDS", "DeskLog"]

#: The only fields a line of the desk's log may carry.
FIELDS = ("event", "email", "org", "path", "address", "detail")

log = logging.getLogger("fundpipe.desk")


class DeskLog:
    """Appends events to the desk's log file (and to the ``fundpipe.desk`` logger)."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()

    def event(self, event: str, **fields: str | None) -> None:
        """Record ``event`` with ``fields`` (each one of :data:`FIELDS`; a value of None is
        left out). An unknown field is a programming error, raised at once."""
        unknown = set(fields) - set(FIELDS)
        if unknown:
            raise ValueError(f"the desk's log has no field {sorted(unknown)}")
        line = {"at": self._clock().isoformat(), "event": event}
        line |= {k: v for k, v in fields.items() if v is not None}
        text = json.dumps(line, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(text + "\n")
        log.info("%s", text)

    def lines(self) -> list[dict[str, str]]:
        """Every line recorded so far, oldest first."""
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
