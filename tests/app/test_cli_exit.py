"""The `fundpipe` command leaves its heap to the operating system when it exits: the
interpreter's last garbage collections no longer walk what a big ingest still holds (0.7–0.9 s
after a 10k-payment night's last request), and what the command wrote is whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# A cycle with a finalizer stands for the objects a command leaves behind: held until the
# interpreter exits, then dropped (an exit hook registered before the command's runs after
# it), so only a collection at exit could reach its finalizer. `fundpipe config` runs through
# the console script's own entry point, in a fresh interpreter.
EXIT_AFTER_COMMAND = """
import atexit
import sys

class Held:
    def __del__(self):
        print("walked at exit", flush=True)

held = Held()
held.me = held

def drop():
    global held
    del held

atexit.register(drop)

from fundpipe.app.cli import main

sys.argv = ["fundpipe", "config", "--json"]
main()
"""


def _run(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FUNDPIPE_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


def test_the_command_exits_without_walking_what_it_leaves_and_its_output_is_whole(
    tmp_path: Path,
) -> None:
    done = _run(tmp_path, EXIT_AFTER_COMMAND)
    assert done.returncode == 0, done.stderr
    assert "walked at exit" not in done.stdout
    assert done.stdout.rstrip().endswith("}")  # the JSON was written out whole
    assert '"mode": "embedded sandbox"' in done.stdout


def test_a_plain_interpreter_still_collects_at_exit(tmp_path: Path) -> None:
    # the check above can fail: without the command's entry point the same cycle is collected
    done = _run(tmp_path, EXIT_AFTER_COMMAND.replace("main()", "pass"))
    assert done.returncode == 0, done.stderr
    assert "walked at exit" in done.stdout
