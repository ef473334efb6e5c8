"""Real Prefect processes for the end-to-end tests: a server, a worker, `fundpipe serve`.

Every process is started in its own session with its output in a log file, and stopped by its
pid (its whole process group) when the test ends. The API is read over plain HTTP, as the UI
does, so the tests see what a person would.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SAMPLES = ROOT / "data" / "samples"
PREFECT = str(BIN / "prefect")
FUNDPIPE = str(BIN / "fundpipe")
T = TypeVar("T")
#: Names a Prefect home whose database a server has already created (`build_home_template`):
#: `make test` builds one while lint and the unit suite run, and each test's Prefect home then starts as a
#: copy of it, so its server starts without first creating and migrating an empty database
#: (about 3 of the 7 CPU-seconds of a start, measured on 2 cores). A test run without it (a file alone) starts each home empty, as a new user does; the
#: late-night alert test always does.
HOME_TEMPLATE = "E2E_PREFECT_HOME_TEMPLATE"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env(prefect_home: Path, api_url: str | None, data_dir: Path) -> dict[str, str]:
    """The environment the README's commands run in: the venv first on PATH, our own Prefect
    home, analytics off, the data directory, and byte-code caching on (the CI image turns it off,
    which would make every flow-run subprocess recompile ~1,000 modules)."""
    template = Path(os.environ.get(HOME_TEMPLATE) or "/nonexistent")
    if (template / "prefect.db").is_file() and not prefect_home.exists():
        shutil.copytree(template, prefect_home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FUNDPIPE_"))}
    env.pop(HOME_TEMPLATE, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "PREFECT_HOME": str(prefect_home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "FUNDPIPE_DATA_DIR": str(data_dir),
            "FUNDPIPE_HOME": str(ROOT),
        }
    )
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


class Processes:
    """The processes one test started; :meth:`stop_all` ends every one of them by its pid."""

    def __init__(self, logs: Path) -> None:
        """Log files go under ``logs``."""
        self.logs = logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start ``args`` in its own session; its output goes to ``<logs>/<name>.log``."""
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.started.append(process)
        return process

    def log(self, name: str) -> str:
        """What a started process has written so far."""
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_all(self) -> None:
        """SIGTERM every process group we started, then SIGKILL what is left after 20 s."""
        for process in reversed(self.started):
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in reversed(self.started):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        # children of a group leader that already exited (a flow-run subprocess)
        for process in self.started:
            _signal_group(process.pid, signal.SIGKILL)


#: SQLite under a busy 2-core machine: a worker heartbeat or a log write waits past the
#: busy timeout and the server logs the error; the client retries and nothing is lost.
TRANSIENT_SERVER_ERRORS = ("database is locked",)


def unexpected_tracebacks(log: str) -> list[str]:
    """The tracebacks in a process log that are not a known transient server error.

    Each traceback runs from its ``Traceback`` line to the next blank-indented error line; a
    traceback whose text names one of :data:`TRANSIENT_SERVER_ERRORS` is left out, so a
    scheduler failure (the SQLAlchemy 2.1 ``bulk DML`` error) is still caught.
    """
    chunks = log.split("Traceback (most recent call last)")[1:]
    kept = []
    for chunk in chunks:
        # the chunk's own error: up to the next log record (a line starting with a timestamp)
        body = re.split(r"\n(?=\d{2}:\d{2}:\d{2}|\S+ \| )", chunk, maxsplit=1)[0]
        if not any(marker in body for marker in TRANSIENT_SERVER_ERRORS):
            kept.append(body[-600:])
    return kept


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@contextmanager
def processes(logs: Path) -> Iterator[Processes]:
    """A :class:`Processes` whose processes are all stopped when the block ends."""
    logs.mkdir(parents=True, exist_ok=True)
    started = Processes(logs)
    try:
        yield started
    finally:
        started.stop_all()


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, step: float = 0.5) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


def healthy(api_url: str) -> bool:
    """True once the Prefect API answers its health check."""
    try:
        return httpx.get(f"{api_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def run_cli(args: list[str], env: dict[str, str], timeout: float = 180) -> str:
    """Run a command to completion; fail with its output when it exits non-zero."""
    done = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


class PrefectApi:
    """The few reads of the Prefect REST API the tests need."""

    def __init__(self, api_url: str) -> None:
        """Talk to the server at ``api_url`` (ending in ``/api``)."""
        self.http = httpx.Client(base_url=api_url, timeout=15)

    def flow_runs(self, deployment: str) -> list[dict[str, Any]]:
        """Every flow run of the deployment named ``flow/deployment``, newest first."""
        flow_name, name = deployment.split("/")
        deployments = self.http.post(
            "/deployments/filter",
            json={
                "deployments": {"name": {"any_": [name]}},
                "flows": {"name": {"any_": [flow_name]}},
            },
        ).json()
        assert deployments, f"no deployment {deployment}"
        runs = self.http.post(
            "/flow_runs/filter",
            json={
                "flow_runs": {"deployment_id": {"any_": [deployments[0]["id"]]}},
                "sort": "EXPECTED_START_TIME_DESC",
                "limit": 200,
            },
        )
        runs.raise_for_status()
        result: list[dict[str, Any]] = runs.json()
        return result

    def artifacts(self, flow_run_id: str) -> dict[str, dict[str, Any]]:
        """The artifacts of a flow run, by key."""
        found = self.http.post(
            "/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}}
        ).json()
        return {a["key"]: a for a in found if a.get("key")}

    def logs(self, flow_run_id: str) -> list[str]:
        """The messages of a flow run's logs on the server."""
        found = self.http.post(
            "/logs/filter", json={"logs": {"flow_run_id": {"any_": [flow_run_id]}}, "limit": 200}
        ).json()
        return [entry["message"] for entry in found]

    def deployment_names(self) -> set[str]:
        """``flow/deployment`` names the server holds."""
        flows = {f["id"]: f["name"] for f in self.http.post("/flows/filter", json={}).json()}
        return {
            f"{flows[d['flow_id']]}/{d['name']}"
            for d in self.http.post("/deployments/filter", json={}).json()
        }


def tonight() -> str:
    """The date tonight's runs are named by (`nightly-<date>`, `org-night-<name>-<date>`), the
    night's date its artifacts carry: today in the default reporting timezone, as the runs
    themselves compute it."""
    from fundpipe.app.prefect.uiview import night_date
    from fundpipe.config import GROUPS

    return night_date(None, GROUPS["pipeline"].model_fields["reporting_timezone"].default)


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 recording every POST body; yields its URL and the bodies."""
    bodies: list[str] = []

    class Record(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            bodies.append(self.rfile.read(length).decode("utf-8", errors="replace"))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", bodies
    finally:
        server.shutdown()
        server.server_close()


def build_home_template(home: Path) -> None:
    """Start `prefect server start` in an empty Prefect home, wait until it answers, stop it:
    ``home`` then holds a created, migrated database (see :data:`HOME_TEMPLATE`). Built beside
    and renamed into place at the end, so a failed build leaves no half-made template."""
    os.environ.pop(HOME_TEMPLATE, None)
    building = home.with_name(home.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(building, None, building / "data")
    with processes(building.with_name(home.name + ".logs")) as procs:
        server = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
        procs.start("server", server, env)
        wait_for("the template's Prefect server", lambda: healthy(api_url), 300)
    assert (building / "prefect.db").is_file(), "the server left no database"
    shutil.rmtree(building / "data", ignore_errors=True)
    building.rename(home)


if __name__ == "__main__":
    build_home_template(Path(sys.argv[1]).resolve())
