"""Benchmark: a night's cost against the size of the night's work (issue 14), through the CLI.

    python benchmarks/scale.py [--scenario 10k@100 100k@1000]   (the default)
    python benchmarks/scale_300k.py                               (300k@1000)
    python benchmarks/scale_rate.py                               (100k@100)

Drives the product only as an operator does: `fundpipe sandbox` runs as a subprocess on
loopback (its per-client rate limit set to R requests per 1 s window through
`PUT /_sandbox/settings`) and `fundpipe ingest FILES`, `fundpipe sync` and `fundpipe reconcile`
run as separate subprocesses against it (`FUNDPIPE_BASE_URL`, the demo client,
`FUNDPIPE_RATE_LIMIT_PER_S=R`, `--data-dir`). Each phase is timed on the wall clock; its CPU
(user + sys) and peak RSS are the CLI process's own (`os.wait4`), its requests are what the
sandbox answered meanwhile (`GET /_sandbox/requests`, 429s included).

Scenario `P@R`: one file set of P payments across P/100 distributions (100 payments each, three
vehicles) paying E = P/10 new investors from a roster (one contact and one ACH instruction
each), dropped as two CSV files. First run = ingest + sync + reconcile; re-run = the same three
with nothing new (the same files again: the ledger knows them).

Baselines measured in the same run: the replay floor (`benchmarks/replay.py`: the night's own
requests, recorded in a run without a rate limit, sent again by a bare httpx client in the same
order and concurrency to the same sandbox under the same R), the rate-limit floor (requests /
R, the least time the requests can take), the CLI's start-up (`fundpipe config`: wall, CPU and RSS of doing nothing),
a bare httpx client's CPU per request against the same sandbox (the least CPU a request costs)
and the night's files read as Arrow tables (pyarrow, every column text).

After the scenarios, a first ingest of 10k payments (`--profile P`) runs under cProfile without a
rate limit: where its CPU goes by package, and its top functions beyond httpx's own stack.

Targets (one `target` line each, every one a ratio to a baseline of the same run, both figures
printed): each scenario's first night (ingest + sync + reconcile, start-ups included) ≤ 1.5 ×
its replay floor, with where the rest goes (start-ups, the ingest's and the sync's time beyond
their requests, reconcile; the ingest's stages: validation, snapshot, planning, submission); re-run with nothing new over 300k payments ≤ 3 × (three CLI start-ups + its reads made
by a bare httpx client against the same world, `bare_rereads`: the distribution list's pages
carry every payment, which requests / R, printed beside it, does not count); peak RSS at 300k ≤ 3 × (a CLI start-up + the files as Arrow); client CPU per request (the
ingest's, above one start-up) ≤ 1.5 × bare httpx's sending the same requests under the same R
(the replay; small unthrottled GETs' CPU is printed beside it). Absolute seconds stay in the table as
information. The history scenario (100k executed distributions, then a night of 1k) is
`benchmarks/scale_history.py`, which reuses this module's harness. Timings are noisy on a
shared machine; the ratios to the baselines are what to read.

Longer than ~400 lines: it is also the harness (world, sandbox, phases, baselines) that
`scale_300k.py` and `scale_history.py` import.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import replay
import targets

FUNDPIPE = str(Path(sys.executable).with_name("fundpipe"))
ORG = "org_demo"
VEHICLES = ("veh_demo1", "veh_demo2", "veh_demo3")
PAYMENTS_PER_DISTRIBUTION = 100
PHASE_TIMEOUT_S = 280
GIB_MB = 1024.0

ROSTER_HEADER = [
    "entity_name",
    "entity_type",
    "entity_external_reference",
    "contact_name",
    "contact_email",
    "contact_external_reference",
    "payment_type",
    "routing_number",
    "account_number",
    "payment_external_reference",
]
DISTRIBUTION_HEADER = [
    "Distribution Name",
    "Vehicle",
    "External Reference",
    "Payment Date",
    "Timezone",
    "Entity ID",
    "Amount ($)",
]


# --- the world ---------------------------------------------------------------------------------


def write_roster(path: Path, investors: int, prefix: str) -> None:
    """A roster CSV of `investors` new entities, each with one contact and one ACH instruction."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(ROSTER_HEADER)
        for e in range(investors):
            writer.writerow(
                [
                    f"Scale Investor {prefix}{e}",
                    "llc",
                    f"{prefix}E{e}",
                    f"Contact {e}",
                    f"investor{e}@example.com",
                    f"{prefix}C{e}",
                    "ach",
                    "021000021",
                    f"{10_000_000 + e}",
                    f"{prefix}P{e}",
                ]
            )


def write_distributions(
    path: Path,
    distributions: int,
    entities: Sequence[str],
    prefix: str,
    per_distribution: int = PAYMENTS_PER_DISTRIBUTION,
) -> int:
    """A distribution CSV: `distributions` × `per_distribution` payments, entities in turn
    (distinct within a distribution while there are at least `per_distribution`); returns the
    payments written."""
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(DISTRIBUTION_HEADER)
        for d in range(distributions):
            name, vehicle = f"Scale {prefix}{d}", VEHICLES[d % len(VEHICLES)]
            ref, date = f"{prefix}D{d}", f"2027-{1 + d % 12:02d}-{1 + d % 28:02d} 09:00"
            for k in range(per_distribution):
                i = d * per_distribution + k
                cents = 100 + (i * 7919) % 5_000_000
                writer.writerow(
                    [
                        name,
                        vehicle,
                        ref,
                        date,
                        "America/New_York",
                        entities[i % len(entities)],
                        f"{cents // 100}.{cents % 100:02d}",
                    ]
                )
                rows += 1
    return rows


def write_drop(folder: Path, payments: int, prefix: str = "SCALE-") -> list[Path]:
    """The issue's file set: `payments` across payments/100 distributions paying payments/10
    new investors of a roster; returns [roster, distributions]."""
    investors = max(PAYMENTS_PER_DISTRIBUTION, payments // 10)
    roster, sheet = folder / "roster.csv", folder / "distributions.csv"
    write_roster(roster, investors, prefix)
    entities = [f"{prefix}E{e}" for e in range(investors)]
    write_distributions(sheet, payments // PAYMENTS_PER_DISTRIBUTION, entities, prefix)
    return [roster, sheet]


# --- the sandbox -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sandbox:
    """`fundpipe sandbox` in a subprocess on loopback, with its control routes at hand."""

    def __init__(self, folder: Path) -> None:
        """Start it (demo seed, state in `folder`) and wait until it answers."""
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self._log = open(folder / "sandbox.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [FUNDPIPE, "sandbox", "--port", str(port), "--seed", "demo",
             "--db", str(folder / "sandbox.sqlite")],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.http = httpx.Client(base_url=self.base_url, timeout=600)
        self.process = psutil.Process(self.proc.pid)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                if self.http.get("/_sandbox/clock").status_code == 200:
                    break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"the sandbox did not start; see {folder / 'sandbox.log'}")
            time.sleep(0.2)

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call a `/_sandbox/` route; its JSON answer."""
        answer = self.http.request(method, path, json=body)
        answer.raise_for_status()
        return answer.json()

    def reset(self, rate: int) -> None:
        """Back to the demo seed, limited to `rate` requests per second per client."""
        self.control("POST", "/_sandbox/reset", {"seed": "demo"})
        self.control(
            "PUT", "/_sandbox/settings", {"rate_limit_requests": rate, "rate_limit_window_s": 1}
        )

    def requests(self) -> dict[str, Any]:
        """The sandbox's request counts so far."""
        return dict(self.control("GET", "/_sandbox/requests"))

    def cpu_s(self) -> float:
        """CPU seconds (user + sys) the sandbox process has used."""
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def close(self) -> None:
        """Stop the sandbox process."""
        self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@contextlib.contextmanager
def sandbox_in(folder: Path) -> Iterator[Sandbox]:
    """A running sandbox for the `with` block."""
    sandbox = Sandbox(folder)
    try:
        yield sandbox
    finally:
        sandbox.close()


# --- one CLI phase -----------------------------------------------------------------------------


@dataclass
class Phase:
    """What one CLI subprocess cost."""

    name: str
    seconds: float
    cpu_s: float
    peak_rss_mb: float
    requests: int
    exit_code: int
    sandbox_cpu_s: float
    by_operation: dict[str, int] = field(default_factory=dict)
    output: str = ""


def _diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def cli_env(base_url: str, rate: float) -> dict[str, str]:
    """The environment of a CLI run against `base_url` at `rate` requests/s."""
    # as an installed product runs: byte code cached after the first run (a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every start-up compile every module again)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FUNDPIPE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        FUNDPIPE_BASE_URL=base_url,
        FUNDPIPE_CLIENT_ID="demo-client",
        FUNDPIPE_CLIENT_SECRET="demo-secret",  # noqa: S106 - the sandbox's public demo client
        FUNDPIPE_ORG_ID=ORG,
        FUNDPIPE_RATE_LIMIT_PER_S=str(rate),
        FUNDPIPE_LOG_LEVEL="WARNING",
    )
    return env


def run_phase(name: str, args: Sequence[str], env: dict[str, str], sandbox: Sandbox) -> Phase:
    """Run `fundpipe ARGS` to completion; its wall time, own CPU and peak RSS, and requests."""
    before, cpu_before = sandbox.requests(), sandbox.cpu_s()
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen([FUNDPIPE, *args], env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage (Popen.wait drops it)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        output = out.read().decode(errors="replace")
    after = sandbox.requests()
    return Phase(
        name=name,
        seconds=seconds,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        requests=after["total"] - before["total"],
        exit_code=os.waitstatus_to_exitcode(status),
        sandbox_cpu_s=sandbox.cpu_s() - cpu_before,
        by_operation=_diff(after["by_operation"], before["by_operation"]),
        output=output,
    )


def night(
    label: str, files: Sequence[Path], data_dir: Path, env: dict[str, str], sandbox: Sandbox
) -> list[Phase]:
    """ingest FILES, sync, reconcile — each its own subprocess; stops at a failed phase."""
    data = ["--data-dir", str(data_dir)]
    steps = [
        ("ingest", ["ingest", *data, *map(str, files)]),
        ("sync", ["sync", *data]),
        ("reconcile", ["reconcile", *data]),
    ]
    phases = []
    for name, args in steps:
        phase = run_phase(f"{label} {name}", args, env, sandbox)
        phases.append(phase)
        if phase.exit_code != 0:
            print(f"warning: {phase.name} exited {phase.exit_code}:\n{phase.output[-3000:]}")
            break
    return phases


# --- baselines ---------------------------------------------------------------------------------


async def _bare_headers(http: httpx.AsyncClient) -> dict[str, str]:
    """A bare client's headers: the demo client's token and the organization."""
    token = await http.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    return {"Authorization": f"Bearer {token.json()['access_token']}", "X-Organization-Id": ORG}


def _bare_client(base_url: str, count: int) -> None:
    """Child: `count` GETs of one page of distributions with a bare httpx client (8 at a time)."""
    import asyncio

    async def go() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
            headers = await _bare_headers(http)
            gate = asyncio.Semaphore(8)

            async def one() -> None:
                async with gate:
                    (await http.get("/v1/vehicles", headers=headers)).raise_for_status()

            await asyncio.gather(*(one() for _ in range(count)))

    asyncio.run(go())


def _bare_rereads(base_url: str, distribution_pages: int) -> None:
    """Child: what a re-run's sync reads, by a bare httpx client: a token, `distribution_pages`
    pages of the distribution list (100 a page, one cursor after the other, each answer
    parsed), each demo vehicle's accounts and the first page of contacts (beside them)."""
    import asyncio

    async def go() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as http:
            headers = await _bare_headers(http)

            async def get(url: str) -> Any:
                answer = await http.get(url, headers=headers)
                answer.raise_for_status()
                return answer.json()

            async def distributions() -> None:
                url: str | None = "/v1/distributions?limit=100"
                for _ in range(distribution_pages):
                    if url is None:
                        break
                    url = (await get(url))["next_page_url"]

            side = [get(f"/v1/vehicles/{v}/financial_accounts?limit=100") for v in VEHICLES]
            await asyncio.gather(distributions(), get("/v1/contacts?limit=100"), *side)

    asyncio.run(go())


def bare_rereads(sandbox: Sandbox, rerun: Sequence[Phase]) -> float:
    """Wall seconds a bare httpx client takes to read what the re-run's sync read (its
    distribution pages, accounts and contacts), in a process of its own, start-up excluded."""
    sync = next((p for p in rerun if p.name.endswith("sync")), None)
    pages = 0 if sync is None else sync.by_operation.get("GET /v1/distributions", 0)
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import scale"
    run = f"{code}; import time; t = time.perf_counter(); "
    run += f"scale._bare_rereads({sandbox.base_url!r}, {pages}); print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


@dataclass
class Baselines:
    """What the same machine costs for nothing (start-up) and for a bare request."""

    startup_s: float
    startup_cpu_s: float
    startup_rss_mb: float
    bare_cpu_ms_per_request: float
    bare_import_cpu_s: float
    #: the empty warehouse a first sync copies (`fundpipe.warehouse.template`), None if not kept
    warehouse_template: Path | None = None


def measure_baselines(sandbox: Sandbox) -> Baselines:
    """The CLI's start-up and a bare httpx client's CPU per request, now, on this machine."""
    sandbox.reset(10_000_000)
    env = cli_env(sandbox.base_url, 1000)
    # byte code for every module a night imports, once, outside the measurements
    warm = "import fundpipe.app.cli, fundpipe.submit.ingest, fundpipe.sync.pull, fundpipe.reconcile.run"
    subprocess.run([sys.executable, "-c", warm], env=env, check=True)
    startup = run_phase("startup", ["config"], env, sandbox)
    count = 2000
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import scale"
    empty = _child_usage([sys.executable, "-c", code])
    loaded = _child_usage(
        [sys.executable, "-c", f"{code}; scale._bare_client({sandbox.base_url!r}, {count})"]
    )
    return Baselines(
        startup_s=startup.seconds,
        startup_cpu_s=startup.cpu_s,
        startup_rss_mb=startup.peak_rss_mb,
        bare_cpu_ms_per_request=(loaded - empty) / count * 1000,
        bare_import_cpu_s=empty,
        warehouse_template=kept_template(),
    )


def kept_template() -> Path | None:
    """The empty warehouse of the current schema kept in the CLI's cache folder, if any (the
    first sync copies it; without it, that sync migrates and keeps one for the next)."""
    from fundpipe.config.local import user_cache_dir
    from fundpipe.warehouse.file import SCHEMA_FILE, VIEWS_FILE
    from fundpipe.warehouse.template import template_file

    cache = user_cache_dir()
    if cache is None:
        return None
    schema_text, views_text = (f.read_text(encoding="utf-8") for f in (SCHEMA_FILE, VIEWS_FILE))
    kept = template_file(cache, schema_text, views_text)
    return kept if kept.is_file() else None


def _child_usage(cmd: Sequence[str]) -> float:
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"baseline child failed: {cmd}")
    return float(usage.ru_utime + usage.ru_stime)


# --- the scenarios -----------------------------------------------------------------------------


@dataclass
class Result:
    """One scenario's first run and re-run."""

    label: str
    payments: int
    investors: int
    rate: int
    first: list[Phase]
    rerun: list[Phase]
    arrow_mb: float = 0.0
    recording: replay.Recording | None = None
    floor: replay.Replay | None = None
    #: a bare httpx client reading what the re-run's sync read (`bare_rereads`)
    rereads_s: float = 0.0

    def total(self, phases: list[Phase], attr: str) -> float:
        """Sum of `attr` over `phases`."""
        return float(sum(getattr(p, attr) for p in phases))

    @property
    def ok(self) -> bool:
        """Every phase ran and exited 0."""
        return (
            len(self.first) == 3
            and len(self.rerun) in (0, 3)
            and all(p.exit_code == 0 for p in self.first + self.rerun)
        )


def run_scenario(label: str, sandbox: Sandbox, work: Path, *, rerun: bool = True) -> Result:
    """`label` is `P@R` (P payments, e.g. `100k`; R requests/s)."""
    size, rate_text = label.split("@")
    payments = int(float(size.rstrip("k")) * 1000) if size.endswith("k") else int(size)
    rate = int(rate_text)
    folder = work / label.replace("@", "_at_")
    folder.mkdir()
    files = write_drop(folder, payments)
    sandbox.reset(rate)
    env = cli_env(sandbox.base_url, rate)
    first = night("first", files, folder / "data", env, sandbox)
    again = night("re-run", files, folder / "data", env, sandbox) if rerun else []
    investors = max(100, payments // 10)
    result = Result(label, payments, investors, rate, first, again, arrow_mb(files))
    if again:  # the same reads by a bare client, against the same world, under the same R
        result.rereads_s = bare_rereads(sandbox, again)
    # the replay floor: the same night's requests, recorded without a rate limit, then sent
    # again by a bare httpx client under the same R
    sandbox.reset(10_000_000)
    result.recording = replay.record_night(files, cli_env(sandbox.base_url, 10_000_000), folder)
    sandbox.reset(rate)
    result.floor = replay.replay(sandbox.base_url, result.recording, rate)
    return result


def _fmt_phases(phases: list[Phase], attr: str, spec: str) -> str:
    return " / ".join(format(getattr(p, attr), spec) for p in phases) or "-"


def print_table(results: list[Result], base: Baselines) -> None:
    """The issue's table, one row per scenario, and the per-phase detail."""
    print(
        f"{'P / E':<14} {'R':>5} {'first run s (ingest / sync / reconcile)':>40} "
        f"{'requests':>9} {'floor s':>8} {'CPU ms/req':>10} {'re-run s (requests)':>22} "
        f"{'peak RSS MB (i / s / r)':>24}"
    )
    for r in results:
        first, again = r.first, r.rerun
        requests = int(r.total(first, "requests"))
        cpu = r.total(first, "cpu_s")
        firsts = f"{r.total(first, 'seconds'):.1f} ({_fmt_phases(first, 'seconds', '.1f')})"
        reruns = (
            f"{r.total(again, 'seconds'):.1f} ({int(r.total(again, 'requests'))})" if again else "-"
        )
        print(
            f"{r.payments // 1000}k / {r.investors // 1000}k".ljust(14)
            + f" {r.rate:>5} {firsts:>40} {requests:>9,} {requests / r.rate:>8.1f} "
            f"{cpu / max(requests, 1) * 1000:>10.2f} {reruns:>22} "
            f"{_fmt_phases(first + again, 'peak_rss_mb', '.0f'):>24}"
        )
    print(
        f"baselines: CLI start-up (fundpipe config) {base.startup_cpu_s:.2f} s CPU, "
        f"{base.startup_rss_mb:.0f} MB RSS; bare httpx client {base.bare_cpu_ms_per_request:.2f} "
        "ms CPU per request (same sandbox, 8 in flight)"
    )
    for r in results:
        for p in r.first + r.rerun:
            top = sorted(p.by_operation.items(), key=lambda kv: -kv[1])[:4]
            ops = ", ".join(f"{k} {v}" for k, v in top)
            print(
                f"  {r.label:<10} {p.name:<17} {p.seconds:>6.1f} s  CPU {p.cpu_s:>6.1f} s  "
                f"RSS {p.peak_rss_mb:>5.0f} MB  requests {p.requests:>6}  sandbox CPU "
                f"{p.sandbox_cpu_s:>6.1f} s  exit {p.exit_code}  [{ops}]"
            )


def verdict(met: bool) -> str:
    """`met` or `short`."""
    return "met" if met else "short"


def print_breakdown(results: list[Result], base: Baselines) -> None:
    """Where a first night's time goes beyond its replay floor (issue 33)."""
    for r in results:
        if r.floor is None or r.recording is None:
            continue
        phases = {p.name.split()[-1]: p for p in r.first}
        total = r.total(r.first, "seconds")
        floor = r.floor
        ingest_floor, sync_floor = [*floor.step_seconds, 0.0, 0.0][:2]
        print(
            f"{r.label}: first night {total:.1f} s vs replay floor {floor.seconds:.1f} s "
            f"({floor.requests:,} requests by a bare httpx client, 8 in flight, paced just under R = "
            f"{r.rate}; {floor.rate_limited} answered 429, {floor.retried} sent again; its CPU "
            f"{floor.cpu_s:.1f} s)"
        )
        rows = [
            ("process start-ups (3 × fundpipe config)", 3 * base.startup_s),
            (
                "ingest beyond its requests' floor",
                phases["ingest"].seconds - ingest_floor if "ingest" in phases else 0.0,
            ),
            (
                "sync beyond its requests' floor",
                phases["sync"].seconds - sync_floor if "sync" in phases else 0.0,
            ),
            (
                "reconcile (no requests)",
                phases["reconcile"].seconds if "reconcile" in phases else 0.0,
            ),
        ]
        print(
            f"  the rest, {total - floor.seconds:.1f} s (start-ups counted inside each phase; "
            "a phase's own CPU beside it: on a shared machine the wall time moves with the load)"
        )
        cpu = {
            "process start-ups (3 × fundpipe config)": 3 * base.startup_cpu_s,
            **{f"{name} beyond its requests' floor": p.cpu_s for name, p in phases.items()},
            "reconcile (no requests)": phases["reconcile"].cpu_s if "reconcile" in phases else 0.0,
        }
        for what, seconds in rows:
            print(f"    {what:<44} {seconds:>6.1f} s   CPU {cpu.get(what, 0.0):>4.1f} s")
        if r is results[0]:
            kept = base.warehouse_template
            print(
                "  the first sync's new warehouse: "
                + (
                    f"copied from the empty one kept in {kept.parent} (a machine's first sync "
                    "under a new schema migrates it, ~0.8 s more CPU, and keeps it)"
                    if kept
                    else "migrated (no empty warehouse kept yet for this schema; now kept)"
                )
            )
        print("  the ingest's stages, recorded in a run without a rate limit (wall / CPU s):")
        for stage, (wall, cpu) in r.recording.stages.items():
            print(f"    {stage:<44} {wall:>6.1f} / {cpu:.1f}")


def arrow_mb(files: Sequence[Path]) -> float:
    """The night's files read as Arrow tables of text (pyarrow's CSV reader), in MB."""
    from pyarrow import csv as pacsv

    total = 0
    for path in files:
        with open(path, newline="", encoding="utf-8") as fh:
            names = next(csv.reader(fh))
        table = pacsv.read_csv(
            path, convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, "string"))
        )
        total += table.nbytes
    return total / 1e6


def print_targets(results: dict[str, Result], base: Baselines) -> None:
    """One `target` line per target the run measured: each a ratio to a same-run baseline."""
    for r in results.values():
        if r.floor is None:
            continue
        total, requests = r.total(r.first, "seconds"), r.total(r.first, "requests")
        print(
            targets.ratio(
                f"first_night_vs_replay ({r.label})",
                total,
                r.floor.seconds,
                1.5,
                against="its replay floor",
                unit=" s",
                spec=".1f",
                note=f"{requests:,.0f} requests; rate-limit floor {requests / r.rate:.1f} s",
            )
        )
        if not r.ok:
            print("  (a phase failed: the line above does not count)")
    if (r := results.get("300k@1000")) is not None:
        again = r.total(r.rerun, "seconds")
        asked = r.total(r.rerun, "requests")
        # its floor: three start-ups and its reads, as a bare httpx client makes them (the
        # service's answers are 3,000 distributions with their 300,000 payments: requests / R
        # alone, printed beside it, would count none of that)
        floor = 3 * base.startup_s + max(r.rereads_s, asked / r.rate)
        print(
            targets.ratio(
                "rerun_nothing_new_300k",
                again,
                floor,
                3.0,
                against="three CLI start-ups + its reads by a bare httpx client",
                unit=" s",
                spec=".1f",
                note=f"{asked:.0f} requests; the bare reads {r.rereads_s:.1f} s, "
                f"requests / R {asked / r.rate:.2f} s",
            )
        )
        peak = max(p.peak_rss_mb for p in r.first + r.rerun)
        where = max(r.first + r.rerun, key=lambda p: p.peak_rss_mb).name
        data = r.arrow_mb
        print(
            targets.ratio(
                "peak_rss_300k",
                peak,
                base.startup_rss_mb + data,
                3.0,
                against="a CLI start-up + the night's files as Arrow",
                unit=" MB",
                spec=".0f",
                note=f"{where}; start-up {base.startup_rss_mb:.0f} MB + Arrow {data:.0f} MB",
            )
        )
    measured = [r for r in results.values() if r.first]
    if measured:
        # the ingest sends the night's requests: its CPU above one CLI start-up, per request,
        # in the largest scenario (where the fixed costs of a run weigh least)
        largest = max(measured, key=lambda r: r.total(r.first, "requests"))
        ingest = next(p for p in largest.first if p.name.endswith("ingest"))
        working = max(ingest.cpu_s - base.startup_cpu_s, 0.0) / ingest.requests * 1000
        whole = largest.total(largest.first, "cpu_s") / largest.total(largest.first, "requests")
        print(
            f"client CPU per request: ingest of {largest.label} above one CLI start-up "
            f"{working:.2f} ms; whole first run incl. start-ups, sync and reconcile "
            f"{whole * 1000:.2f} ms; bare httpx {base.bare_cpu_ms_per_request:.2f} ms (small "
            "GETs, 8 in flight, no rate limit)"
            + (
                f"; bare httpx replaying the same night's requests under the same R "
                f"{largest.floor.cpu_s / largest.floor.requests * 1000:.2f} ms"
                if largest.floor
                else ""
            )
        )
        # The baseline: a bare httpx client sending the same requests under the same R (the
        # replay), when there is one; pacing alone roughly doubles a bare client's CPU per
        # request against unthrottled small GETs.
        if largest.floor is not None:
            baseline = largest.floor.cpu_s / largest.floor.requests * 1000
            against = "bare httpx sending the same requests"
        else:
            baseline, against = base.bare_cpu_ms_per_request, "bare httpx"
        print(
            targets.ratio(
                "client_cpu_per_request",
                working,
                baseline,
                1.5,
                against=against,
                unit=" ms",
                note=f"ingest of {largest.label} above a start-up, validation and planning "
                "included",
            )
        )


#: The ingest profiled after the scenarios (cProfile roughly triples its CPU: a small night).
PROFILED_PAYMENTS = 10_000


def profile_night(payments: int, sandbox: Sandbox, work: Path) -> tuple[replay.Profile, str, int]:
    """A first ingest of `payments` under cProfile, without a rate limit, in its own folder:
    the profile, its label and the requests it sent."""
    folder = work / f"profiled-{payments}"
    folder.mkdir()
    files = write_drop(folder, payments)
    sandbox.reset(10_000_000)
    before = sandbox.requests()["total"]
    profile = replay.profile_ingest(files, cli_env(sandbox.base_url, 10_000_000), folder)
    label = f"a first ingest of {payments // 1000}k payments"
    return profile, label, sandbox.requests()["total"] - before


#: What this script runs by default (~2.5 min on 2 shared cores); 300k@1000 is scale_300k.py.
SCENARIOS = ("10k@100", "100k@1000")


def main(
    default: Sequence[str] = SCENARIOS, description: str = __doc__, *, rerun: bool = True
) -> None:
    """Start the sandbox, measure the baselines and the chosen scenarios, print the table."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--scenario", nargs="+", default=list(default), metavar="P@R")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument(
        "--profile",
        type=int,
        default=PROFILED_PAYMENTS,
        metavar="P",
        help=f"profile an ingest of P payments (default {PROFILED_PAYMENTS:,}; 0: none)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, sandbox_in(Path(tmp)) as sb:
        base = measure_baselines(sb)
        results = {
            label: run_scenario(label, sb, Path(tmp), rerun=rerun) for label in args.scenario
        }
        profiled = profile_night(args.profile, sb, Path(tmp)) if args.profile else None
    print_table(list(results.values()), base)
    print_breakdown(list(results.values()), base)
    if profiled is not None:
        replay.print_profile(*profiled)
    print_targets(results, base)
    if args.json:
        args.json.write_text(
            json.dumps(
                {k: {"first": [vars(p) for p in r.first], "rerun": [vars(p) for p in r.rerun]}
                 for k, r in results.items()},
                default=str,
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()
