"""A night's replay floor: the night's own requests sent again by a bare httpx client.

Used by `scale.py` (not run on its own). Three steps:

1. **record** (`record_night`): the night's CLI phases (ingest, then sync) run once more, each in
   a fresh data directory against a reset sandbox with no rate limit, through a wrapper that
   patches `httpx.AsyncClient.send` to note every request in the order it is sent (method, URL,
   Idempotency-Key, content type, body) and its answer, and that times the stages of the ingest
   (validation, snapshot, planning and pre-flight, submission) in CPU and wall seconds. The
   recorded run is not the measured one: the measured first night runs the plain CLI.
2. **replay** (`replay`): after another reset, a bare `httpx.AsyncClient` sends the same
   requests in the same order, with the same concurrency (8 in flight, contact associations in
   at most 4 of them while other creates are still to be answered, then in all 8, as the
   pipeline runs them), under the same rate limit R (paced evenly
   just under R, a 429 waits its Retry-After and is sent again). Ids the service made during the
   recorded run (entities, contacts) are mapped to the ids it makes during the replay, from
   the answers, so later requests name the right objects. A request is sent only after every
   request of an earlier phase (snapshot reads → entities → contacts → the rest) has its
   answer, as the pipeline does.

3. **profile** (`profile_ingest`, `print_profile`): a first ingest run once more under cProfile
   (CPU time of every thread, the ledger's writer included), its own time by package and its
   top functions beyond the request's own stack — what the pipeline spends around its requests.

The replay's wall time is the floor a first night cannot go below with this service, this
machine and this rate limit: what any client must spend to send these requests.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

KEPT_HEADERS = ("content-type", "idempotency-key", "x-organization-id")
_ID = re.compile(r"\b(?:ent|cnt)_[A-Za-z0-9]+")

# The wrapper the recording runs the CLI in (argv[1]: the log to write, the rest: CLI args).
RECORDER = r"""
import json, sys, time
import httpx

log, stages = [], {}
original = httpx.AsyncClient.send

async def send(self, request, **kwargs):
    entry = {
        "method": request.method,
        "url": str(request.url),
        "headers": {k: v for k, v in request.headers.items() if k.lower() in KEPT},
        "body": request.content.decode("utf-8"),
    }
    log.append(entry)
    response = await original(self, request, **kwargs)
    entry["status"] = response.status_code
    entry["answer"] = response.text if request.method == "POST" else ""
    return response

httpx.AsyncClient.send = send

def timed(module, name, stage):
    fn = getattr(module, name)
    is_async = hasattr(fn, "__code__") and fn.__code__.co_flags & 0x80
    def add(wall, cpu):
        w, c = stages.get(stage, (0.0, 0.0))
        stages[stage] = (w + wall, c + cpu)
    if is_async:
        async def wrapper(*a, **k):
            t, c = time.perf_counter(), time.process_time()
            try:
                return await fn(*a, **k)
            finally:
                add(time.perf_counter() - t, time.process_time() - c)
    else:
        def wrapper(*a, **k):
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                add(time.perf_counter() - t, time.process_time() - c)
    setattr(module, name, wrapper)

import fundpipe.submit.ingest as ingest
import fundpipe.validate.files as files
timed(files, "validate_files", "validation")
for name, stage in (
    ("load_snapshot", "snapshot reads"),
    ("with_distributions", "snapshot reads"),
    ("with_vehicles", "snapshot reads"),
    ("with_known_instructions", "snapshot reads"),
    ("build_plan", "planning + pre-flight"),
    ("preflight", "planning + pre-flight"),
):
    timed(ingest, name, stage)
timed(ingest._Run, "send", "submission (requests + ledger)")

from fundpipe.app.cli import main
sys.argv = ["fundpipe", *sys.argv[2:]]
started, cpu = time.perf_counter(), time.process_time()
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
finally:
    stages["whole process after imports"] = (time.perf_counter() - started, time.process_time() - cpu)
    with open(sys.argv_log, "w") as fh:
        json.dump({"requests": log, "stages": stages}, fh)
sys.exit(code)
"""


@dataclass
class Recording:
    """The night's requests, per step, in the order they were sent; the ingest's stage times."""

    steps: list[list[dict[str, Any]]] = field(default_factory=list)
    #: stage → (wall s, CPU s) of the recorded ingest (no rate limit)
    stages: dict[str, tuple[float, float]] = field(default_factory=dict)


def record_night(
    files: Sequence[Path],
    env: dict[str, str],
    work: Path,
    steps: Sequence[str] = ("ingest", "sync"),
) -> Recording:
    """Run the night's `steps` in the recording wrapper (fresh data directory under `work`)."""
    data = work / "recorded-data"
    recording = Recording()
    for step in steps:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            out = Path(fh.name)
        args = [step, "--data-dir", str(data), *(map(str, files) if step == "ingest" else [])]
        code = RECORDER.replace("KEPT", repr(KEPT_HEADERS)).replace("sys.argv_log", repr(str(out)))
        proc = subprocess.run(
            [sys.executable, "-c", code, str(out), *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(
                f"recording {step} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
        got = json.loads(out.read_text())
        out.unlink()
        recording.steps.append(got["requests"])
        if step == "ingest":
            recording.stages = {k: tuple(v) for k, v in got["stages"].items()}  # type: ignore[misc]
    return recording


def _level(entry: dict[str, Any]) -> int:
    """The pipeline's phase order: reads, entities, contacts, then everything else."""
    if entry["method"] == "GET":
        return 0
    path = httpx.URL(entry["url"]).path
    return {"/v1/entities": 1, "/v1/contacts": 2}.get(path, 3)


@dataclass
class Replay:
    """What the replay took."""

    seconds: float
    requests: int
    rate_limited: int
    cpu_s: float
    #: wall seconds of each step's requests (ingest, sync)
    step_seconds: list[float] = field(default_factory=list)
    #: attempts sent again after a dropped connection or a 5xx
    retried: int = 0


class _Pacer:
    """Sends evenly spaced on absolute time, ceil(R) in every R-window stretched by 30 ms: the
    least margin that keeps a fixed-window limit of R from answering 429 at a window's edge
    (sent at exactly R, a replay drew dozens of 429s, each a second's pause, and its floor rose
    above the rate-limit floor by a fifth)."""

    def __init__(self, rate: float) -> None:
        n = math.ceil(rate)
        self.interval = (n / rate + 0.03) / n
        self.next = 0.0

    async def wait(self) -> None:
        now = time.monotonic()
        slot = max(now, self.next)
        self.next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


async def _replay(
    base_url: str, recording: Recording, rate: float, concurrency: int, steps: list[float]
) -> tuple[int, int, int]:
    ids: dict[str, str] = {}
    limited = retried = 0
    async with httpx.AsyncClient(
        timeout=600, limits=httpx.Limits(max_connections=concurrency)
    ) as http:
        token = await http.post(
            f"{base_url}/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("demo-client", "demo-secret"),
        )
        bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
        pacer = _Pacer(rate)
        gate = asyncio.Semaphore(concurrency)
        side = asyncio.Semaphore(max(1, concurrency // 2))

        def mapped(text: str) -> str:
            return _ID.sub(lambda m: ids.get(m.group(0), m.group(0)), text) if ids else text

        async def one(entry: dict[str, Any]) -> None:
            nonlocal limited, retried
            url = httpx.URL(entry["url"])
            target = f"{base_url}{mapped(url.raw_path.decode('ascii'))}"
            body = mapped(entry["body"]).encode("utf-8") if entry["body"] else None
            headers = {**entry["headers"], **bearer}
            async with side if _aside(entry) else _null(), gate:
                for attempt in range(1, 20):
                    await pacer.wait()
                    try:
                        answer = await http.request(
                            entry["method"], target, content=body, headers=headers
                        )
                    except httpx.TransportError:
                        # a loaded machine drops a connection now and then: sent again, as
                        # any client must (a create carries its Idempotency-Key)
                        retried += 1
                        await asyncio.sleep(0.1 * attempt)
                        continue
                    if answer.status_code == 429:
                        limited += 1
                        await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
                        continue
                    if answer.status_code in (500, 502, 503, 504):
                        retried += 1
                        await asyncio.sleep(0.1 * attempt)
                        continue
                    break
                else:
                    raise SystemExit(f"replay: {entry['method']} {url.path} failed 19 times")
            if answer.status_code >= 400 and answer.status_code != entry.get("status"):
                raise SystemExit(
                    f"replay: {entry['method']} {url.path} answered {answer.status_code} "
                    f"(recorded {entry.get('status')}): {answer.text[:300]}"
                )
            if entry["method"] == "POST" and _level(entry) in (1, 2) and entry.get("answer"):
                old = json.loads(entry["answer"]).get("data") or []
                new = answer.json().get("data") or []
                for before, now in zip(old, new, strict=False):
                    if (
                        isinstance(before, dict)
                        and isinstance(now, dict)
                        and before.get("id") not in (None, now.get("id"))
                    ):
                        ids[before["id"]] = now["id"]

        for step in recording.steps:  # ingest, then sync: one after the other, as in a night
            started = time.perf_counter()
            for level in range(3):
                await asyncio.gather(*(one(e) for e in step if _level(e) == level))
            # the rest: associations in at most half of the slots beside the other creates,
            # in all of them once those are answered (as the pipeline runs them)
            beside = asyncio.gather(*(one(e) for e in step if _level(e) == 3 and _aside(e)))
            await asyncio.gather(*(one(e) for e in step if _level(e) == 3 and not _aside(e)))
            for _ in range(concurrency - max(1, concurrency // 2)):
                side.release()
            await beside
            steps.append(time.perf_counter() - started)
    return sum(map(len, recording.steps)), limited, retried


def _aside(entry: dict[str, Any]) -> bool:
    """A contact association (`POST /v1/entities/{id}/contacts`): sent beside the other creates."""
    path = httpx.URL(entry["url"]).path
    return entry["method"] == "POST" and path.endswith("/contacts") and path != "/v1/contacts"


class _null:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


def replay(base_url: str, recording: Recording, rate: float, concurrency: int = 8) -> Replay:
    """Send the recorded requests with a bare httpx client; the wall time they took."""
    started, cpu = time.perf_counter(), time.process_time()
    steps: list[float] = []
    sent, limited, retried = asyncio.run(_replay(base_url, recording, rate, concurrency, steps))
    return Replay(
        time.perf_counter() - started, sent, limited, time.process_time() - cpu, steps, retried
    )


# --- where an ingest's CPU goes (cProfile) ------------------------------------------------------

# The wrapper a profiled ingest runs in (argv[1]: the stats file to write, the rest: CLI args):
# cProfile on CPU time in the main thread and in every pool thread (the ledger's writer).
PROFILER = r"""
import concurrent.futures.thread as pool_threads, cProfile, marshal, pstats, sys, time

profiles = []
_worker = pool_threads._worker

def worker(*args, **kwargs):
    profile = cProfile.Profile(time.thread_time)
    profiles.append(profile)
    profile.enable()
    try:
        return _worker(*args, **kwargs)
    finally:
        profile.disable()

pool_threads._worker = worker
main_profile = cProfile.Profile(time.thread_time)
from fundpipe.app.cli import main
out = sys.argv[1]
sys.argv = ["fundpipe", *sys.argv[2:]]
code = 0
main_profile.enable()
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
finally:
    main_profile.disable()
    stats = pstats.Stats(main_profile)
    for profile in profiles:
        stats.add(profile)
    stats.dump_stats(out)
sys.exit(code)
"""

#: Where a function's own time is counted: the first matching piece of its file's path.
_PACKAGES = (
    (
        "httpx, httpcore, h11, anyio (the request)",
        ("/httpx/", "/httpcore/", "/h11/", "/anyio/", "/sniffio/"),
    ),
    (
        "asyncio, selectors, ssl, socket (the event loop)",
        (
            "/asyncio/",
            "selectors.py",
            "ssl.py",
            "socket.py",
            "{method 'send'",
            "{method 'recv",
            "{method 'poll'",
            "{method 'getpeername'",
        ),
    ),
    ("fundpipe.client", ("/fundpipe/client/",)),
    ("fundpipe.submit (execute, ledger, ingest)", ("/fundpipe/submit/",)),
    ("fundpipe.plan", ("/fundpipe/plan/",)),
    ("fundpipe.validate + sheets", ("/fundpipe/validate/", "/fundpipe/sheets/")),
    ("fundpipe (other)", ("/fundpipe/",)),
    ("duckdb (the ledger's statements)", ("duckdb",)),
    ("pydantic", ("pydantic",)),
    ("json, orjson, hashlib", ("/json/", "orjson", "_json", "sha256", "hashlib")),
    ("pandas, pyarrow, pandera, numpy", ("/pandas/", "pyarrow", "/pandera/", "/numpy/")),
    (
        "imports",
        (
            "<frozen importlib",
            "{built-in method builtins.exec}",
            "marshal",
            "{built-in method _imp.",
        ),
    ),
)


@dataclass
class Profile:
    """An ingest's CPU under cProfile: total, own time by package, and the top functions."""

    total_s: float
    by_package: list[tuple[str, float]]
    top: list[tuple[str, int, float, float]]  # function, calls, own s, cumulative s


def _package(where: str) -> str:
    for name, pieces in _PACKAGES:
        if any(p in where for p in pieces):
            return name
    return "other (stdlib, rich, typer, …)"


def _function(key: tuple[str, int, str]) -> str:
    path, line, name = key
    if path == "~":
        return name
    for marker in ("/site-packages/", "/src/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{line}({name})"


def profile_ingest(
    files: Sequence[Path], env: dict[str, str], work: Path, top: int = 15
) -> Profile:
    """Run `fundpipe ingest FILES` (fresh data directory under `work`) under cProfile (CPU time
    of every thread); its own time by package and its `top` functions outside the request's
    own stack (httpx, httpcore, h11, anyio, asyncio)."""
    import pstats

    with tempfile.NamedTemporaryFile(suffix=".prof", delete=False) as fh:
        out = Path(fh.name)
    args = ["ingest", "--data-dir", str(work / "profiled-data"), *map(str, files)]
    proc = subprocess.run(
        [sys.executable, "-c", PROFILER, str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"profiled ingest failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    stats = pstats.Stats(str(out))
    if os.environ.get("KEEP_PROFILE"):  # for a closer look: pstats over this file
        out.rename(os.environ["KEEP_PROFILE"])
    else:
        out.unlink()
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    # a builtin's own time (isinstance, dict.get, …) counts in the functions that call it
    own: dict[tuple[str, int, str], float] = {key: row[2] for key, row in raw.items()}
    for key, (_, _, _, _, callers) in raw.items():
        if key[0] == "~" and callers:
            for caller, edge in callers.items():
                if caller in own and caller[0] != "~":
                    own[caller] += edge[2]
                    own[key] -= edge[2]
    packages: dict[str, float] = {}
    rows = []
    for key, (_, calls, _, cumulative, _) in raw.items():
        package = _package(key[0] + " " + _function(key))
        packages[package] = packages.get(package, 0.0) + own[key]
        if not package.startswith(("httpx", "asyncio")):
            rows.append((_function(key), calls, own[key], cumulative))
    rows.sort(key=lambda r: -r[2])
    return Profile(
        sum(packages.values()),
        sorted(packages.items(), key=lambda kv: -kv[1]),
        rows[:top],
    )


def print_profile(profile: Profile, label: str, requests: int) -> None:
    """The profile's own time by package and its top functions: CPU seconds under the profiler
    and shares of the whole (the profiler's own cost inflates small frequent calls several
    times: compare shares, and seconds only between two profiles)."""
    total = profile.total_s or 1.0
    print(
        f"  where the ingest's CPU goes ({label}, {requests:,} requests, no rate limit; cProfile "
        f"on CPU time of every thread, a builtin's time counted in its caller; {total:.2f} s "
        "under the profiler):"
    )
    for name, seconds in profile.by_package:
        if seconds >= 0.005 * total:
            print(f"    {name:<52} {seconds:>6.2f} s {seconds / total:>6.1%}")
    print("  its top functions beyond the request's stack (own s, share; cumulative s):")
    for function, calls, own, cumulative in profile.top:
        print(
            f"    {own:>5.2f} s {own / total:>5.1%}; {cumulative:>5.2f} s {calls:>9,}×  "
            f"{function[:100]}"
        )
