"""A DuckDB file held by another process until the test releases it (no sleeps, no races)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def hold_until_released(path: Path) -> subprocess.Popen[str]:
    """Start a process that opens ``path`` for writing and holds it until :func:`release`.

    Returns once the file is held.
    """
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys\n"
            f"con = duckdb.connect({str(path)!r})\n"
            "print('held', flush=True)\n"
            "sys.stdin.readline()\n"
            "con.close()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    """Let go of the file and wait until the holder has exited (the lock is gone with it)."""
    if holder.poll() is None:
        assert holder.stdin is not None
        holder.stdin.write("release\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
