"""Print a SHA-256 of every report the sample night writes, reproducibly (issue 41's proof).

The redesign promised the sample night's reports are byte-for-byte what they were before it.
A night's reports carry the sandbox's random ids and the run's instant, so this runs the
organization's night (`fundpipe.night.night`) in-process against the embedded sandbox with
both pinned: the clock stands at 2026-12-01 09:00 UTC (time-machine, not ticking) and the
random sources (`secrets`, `uuid.uuid4`) is a seeded generator. Run it at two commits and compare (an argument: a folder the reports are copied to):

    .venv/bin/python tests/tools/sample_night_digest.py > after.txt
    git worktree add /tmp/before <commit> && (cd /tmp/before && make install &&
        .venv/bin/python /path/to/this/script > before.txt)
    diff before.txt after.txt

Each line is `<sha256>  <path under the reports folder>`; the report folder's own name
(its instant) is the same in both, since the clock is pinned.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import shutil
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import time_machine

INSTANT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _seeded_secrets(seed: int) -> None:
    rng = random.Random(seed)

    def token_bytes(n: int | None = None) -> bytes:
        return rng.randbytes(32 if n is None else n)

    def token_hex(n: int | None = None) -> str:
        return token_bytes(n).hex()

    secrets.token_bytes = token_bytes
    secrets.token_hex = token_hex
    secrets.token_urlsafe = token_hex
    secrets.randbelow = rng.randrange
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)


def main() -> int:
    """Run the sample night with a pinned clock and random source; print each report's hash."""
    _seeded_secrets(41)
    from fundpipe.app.samples import copy_samples
    from fundpipe.config import Settings
    from fundpipe.night import night
    from fundpipe.sandbox import SandboxConfig, create_app

    # one fixed folder: a report names the path its sheet was read from
    data = Path(tempfile.gettempdir()) / "fundpipe-sample-night"
    shutil.rmtree(data, ignore_errors=True)
    try:
        with time_machine.travel(INSTANT, tick=False):
            app = create_app(SandboxConfig(rate_limit_requests=10_000, rate_limit_window_s=1))
            settings = Settings(
                _env_file=None,
                local={"data_dir": data, "inbox_settle_s": 0},
                http={"rate_limit_per_s": 1000.0},
            ).with_service("http://sandbox.test")
            copy_samples(settings)
            night(settings, transport=httpx.ASGITransport(app=app))
            root = settings.local.reports_folder
        if len(sys.argv) > 1:
            shutil.copytree(root, sys.argv[1], dirs_exist_ok=True)
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            print(f"{digest}  {path.relative_to(root)}")
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
