"""A Prefect server of its own for `fundpipe serve`, when no `PREFECT_API_URL` is configured.

Prefect's serve loop only runs what a server's scheduler has created, and the temporary server
Prefect starts for a plain flow call has no scheduler and no automations: a served deployment
would never fire. So `fundpipe serve` starts the real thing (`prefect server start`, SQLite in
`PREFECT_HOME`) on loopback as a child process, waits until it answers, and stops it (by its
pid) when serving ends. With `PREFECT_API_URL` set, the configured server is used instead.

SIGTERM — what systemd and container runtimes send — stops `fundpipe serve` as Ctrl-C does,
from its first instant: Prefect's serve loop installs its own SIGTERM handler only once it starts,
and a SIGTERM before that would kill the process at once, leaving the server it started behind.
The server is stopped as a process group (its own session), and only once it no longer answers
does `fundpipe serve` exit.

Stopping pauses no deployment (`fundpipe.app.prefect.pauses`): the nights are the server's, and
with a configured server (`PREFECT_API_URL`) they fall due, go Late and are alerted without this
process. A server started here stops with it, and with it everything that would alert.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from fundpipe.config import Settings
from fundpipe.errors import InputError

#: How long a fresh server may take to migrate its database and answer (10–12 s measured).
STARTUP_TIMEOUT_S = 120.0


def prefect_executable() -> str:
    """The `prefect` command installed beside this Python (the venv's own)."""
    candidate = Path(sys.executable).with_name("prefect")
    return str(candidate) if candidate.exists() else "prefect"


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


@contextmanager
def local_prefect_server(port: int, log_path: Path) -> Iterator[str]:
    """Start `prefect server start` on ``127.0.0.1:port``; yield its API URL; stop it after.

    The server's output goes to ``log_path``. A port already in use, or a server that exits or
    does not answer in time, is an :class:`InputError` naming the log.
    """
    import httpx

    if not port_is_free(port):
        raise InputError(
            f"port {port} is in use (another Prefect server?): set PREFECT_API_URL to use that "
            "server, or FUNDPIPE_PREFECT_PORT to start one on another port"
        )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(  # noqa: S603 - our own venv's prefect, fixed arguments
            [prefect_executable(), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    api_url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise InputError(f"the Prefect server exited at start; see {log_path}")
            try:
                if httpx.get(f"{api_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise InputError(f"the Prefect server did not answer in time; see {log_path}")
            time.sleep(0.5)
        yield api_url
    finally:
        _stop_group(process, port)


def _stop_group(process: subprocess.Popen[bytes], port: int, timeout_s: float = 20.0) -> None:
    """Stop the server started in its own session: SIGTERM to its process group, SIGKILL if it
    has not exited (and let go of ``port``) within ``timeout_s``."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    try:
        process.wait(timeout=timeout_s)
        while not port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.2)
    except subprocess.TimeoutExpired:
        pass
    if process.poll() is None or not port_is_free(port):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class SignalledStop:
    """SIGTERM stops `fundpipe serve` the way Ctrl-C does, and a lost stop is asked for again.

    Until Prefect's serve loop installs its own handler, SIGTERM raises KeyboardInterrupt in
    the main thread. A KeyboardInterrupt raised while the main thread is in a finalizer (an
    asyncio transport's ``__del__``, say) is printed as "Exception ignored" and lost, and the
    serve went on serving. So each signal is delivered again every ``again_after_s`` seconds
    until `begun` is called as the serve's contexts unwind; the Prefect server's own shutdown
    is never interrupted by a second one.

    The wait between deliveries is a plain sleep in a daemon thread, not a timed lock wait:
    libfaketime (the suite's any-day runs) shifts the absolute deadlines of the latter."""

    def __init__(self, again_after_s: float = 3.0) -> None:
        self.again_after_s = again_after_s
        self._begun = threading.Event()
        self._before: Callable[[Any], object] = sys.unraisablehook

    def install(self) -> None:
        """Take SIGTERM over in this process (only the main thread may), and catch a stop lost
        in a finalizer whoever's handler raised it (Prefect's serve loop raises its
        TerminationSignal): it is said in one line, not a traceback, and the signal delivered
        again."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._interrupt)
            self._before = sys.unraisablehook
            sys.unraisablehook = self._lost_in_a_finalizer

    def _lost_in_a_finalizer(self, unraisable: Any) -> None:
        lost = unraisable.exc_value
        if not isinstance(lost, BaseException) or isinstance(lost, Exception):
            self._before(unraisable)  # an error of the object's own, as Python reports it
            return
        if not isinstance(lost, KeyboardInterrupt) and type(lost).__name__ != "TerminationSignal":
            self._before(unraisable)
            return
        print(
            "fundpipe serve: the stop arrived while Python was tidying an object away; "
            "it is asked for again",
            file=sys.stderr,
            flush=True,
        )
        if not self._begun.is_set():
            threading.Thread(
                target=self._deliver_again,
                args=(signal.SIGTERM,),
                name="stop-again",
                daemon=True,
            ).start()

    def begun(self) -> None:
        """The stop is under way: no signal is delivered again after this."""
        self._begun.set()

    def _interrupt(self, signum: int, frame: object) -> None:
        if not self._begun.is_set():
            threading.Thread(
                target=self._deliver_again, args=(signum,), name="stop-again", daemon=True
            ).start()
        raise KeyboardInterrupt(f"signal {signum}")

    def _deliver_again(self, signum: int) -> None:
        time.sleep(self.again_after_s)
        if not self._begun.is_set():
            os.kill(os.getpid(), signum)


def serve(settings: Settings, say: Callable[[str], object]) -> None:
    """`fundpipe serve`: the deployments and the inbox watcher, on the configured Prefect
    server or on one started here (stopped when serving ends)."""
    stop = SignalledStop()
    stop.install()
    # how often the served deployments look for runs to start (Prefect's default is 10 s)
    os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "2")
    try:
        _serve(settings, say, stop)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM before the serve loop took it over
        say("stopped")


def _serve(settings: Settings, say: Callable[[str], object], stop: SignalledStop) -> None:
    with ExitStack() as stack:
        if not os.environ.get("PREFECT_API_URL"):
            log = settings.local.data_dir / "prefect-server.log"
            say(f"starting a Prefect server on 127.0.0.1:{settings.orchestration.prefect_port}")
            url = stack.enter_context(
                local_prefect_server(settings.orchestration.prefect_port, log)
            )
            # before anything imports prefect's settings in this process
            os.environ["PREFECT_API_URL"] = url
            say(f"Prefect UI: {url.removesuffix('/api')}  (server log: {log})")
        from fundpipe.app.prefect.watch import inboxes

        watched = ", ".join(str(p) for p in inboxes(settings))
        say(f"serving nightly, inbox, org-night and night-check; watching {watched} (Ctrl-C stops)")
        from fundpipe.app.prefect import flows

        # the last context entered is the first to leave: a stop under way is not re-signalled
        stack.callback(stop.begun)
        flows.serve_all(say)
