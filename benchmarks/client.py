"""Throughput of `fundpipe.client.FundClient` against the sandbox over loopback HTTP.

    python benchmarks/client.py [--rate auto|R] [--seconds 12] [--concurrency 8]

The sandbox runs in a child process (`SandboxServer` on 127.0.0.1, so that server and client do
not share one interpreter's GIL) with 20 ms of added latency per request (fault injection
`latency_ms`) and a per-client limit of R requests per 1 s window. Two light but real
workloads, measured in the same run:

- creates: `POST /v1/distributions` of 1 distribution x 1 payment, a new `external_reference`
  per request;
- paginated reads: `GET /v1/financial_accounts?limit=10` over a seeded set, following
  `next_page_url` (each cursor's pages follow one another; FundClient runs `concurrency`
  cursors side by side).

First a plain sequential `httpx.Client` loop (the baseline, no rate limit in its way), then
FundClient with `rate_limit_per_s = R` and `max_concurrency` in-flight requests. FundClient's
rate gate keeps at most ceil(R) sends in any window of ceil(R)/R + 30 ms, i.e. it paces at about
0.97 R, so that a fixed-window server limit of R is never overrun at a window edge; the target
stays >= 90 % of R. Targets (both workloads): FundClient's sustained throughput >= 90 % of R
and >= 5x the sequential loop. Both can only hold together when R >= 5x sequential / 0.9:
`--rate auto` (the default) takes the smallest whole R that satisfies this for the faster of
the two sequential loops measured in the same run, so that the two targets ask the same.

Also printed, to say what limits the result: a short FundClient run with no rate limit at all
(the machine's ceiling for this concurrency), the CPU each request costs in the client and in
the sandbox process (and how many cores that is at 90 % of R), the sandbox's own sequential
service time (no added latency), and the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import logging
import math
import multiprocessing
import os
import pstats
import sys
import time
from typing import Any

import httpx
import targets
from pydantic import SecretStr

from fundpipe.client import FundClient
from fundpipe.client._ratelimit import GUARD_MARGIN_S
from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID, Settings

LATENCY_MS = 20
WINDOW_S = 1.0
PAGE_SIZE = 10
SEQ_REQUESTS = 120
LIST_PATH = f"/v1/financial_accounts?limit={PAGE_SIZE}"


def _serve(queue: Any, stop: Any) -> None:
    """Child process: run the sandbox on loopback until told to stop."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    logging.disable(logging.CRITICAL)
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        queue.put(server.base_url)
        stop.wait()


def distribution(ref: str) -> dict[str, Any]:
    """One small distribution create body element (1 distribution x 1 payment)."""
    return {
        "name": f"Bench {ref}",
        "vehicle": "veh_demo1",
        "distribution_date": "2027-01-15T09:00:00Z",
        "external_reference": ref,
        "payments": [{"amount": 100, "currency": "USD", "entity": "ent_demo1"}],
    }


class Count429(logging.Handler):
    """Counts the client's log lines for answers with status 429."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        """Count one record if it reports a 429."""
        if "-> 429" in record.getMessage():
            self.count += 1


def sequential(base_url: str, n: int, tag: str) -> tuple[float, float]:
    """Requests/s of a plain sequential httpx loop: `n` creates, then `n` page reads."""
    with httpx.Client(base_url=base_url) as http:
        token = http.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        http.headers["X-Organization-Id"] = DEMO_ORG_ID
        started = time.perf_counter()
        for i in range(n):
            response = http.post("/v1/distributions", json=[distribution(f"SEQ-{tag}-{i}")])
            response.raise_for_status()
        creates = n / (time.perf_counter() - started)
        started = time.perf_counter()
        url: str | None = LIST_PATH
        for _ in range(n):
            response = http.get(url or LIST_PATH)  # start over if the list ends
            response.raise_for_status()
            url = response.json()["next_page_url"]
        reads = n / (time.perf_counter() - started)
    return creates, reads


class Phase:
    """Throughput and CPU per request (client and server processes) of one measured phase."""

    def __init__(self, server_pid: int | None) -> None:
        """Start measuring now."""
        self._pid = server_pid
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self._server = cpu_seconds(server_pid)
        self.rate = self.client_ms = self.server_ms = math.nan

    def stop(self, requests: int) -> None:
        """Stop measuring: `requests` were served since the start."""
        self.rate = requests / (time.perf_counter() - self._wall)
        self.client_ms = (time.process_time() - self._cpu) * 1000 / requests
        self.server_ms = (cpu_seconds(self._pid) - self._server) * 1000 / requests


async def concurrent(
    settings: Settings, n_creates: int, pages_per_cursor: int, server_pid: int | None
) -> tuple[Phase, Phase, int, int]:
    """FundClient: the creates phase, the page reads phase, pages read, 429 answers seen."""
    counter = Count429()
    logging.getLogger("stamina").setLevel(logging.ERROR)  # retries are counted, not printed
    log = logging.getLogger("fundpipe.client")
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    try:
        async with FundClient(settings.client_config()) as client:
            await client.get_organization(DEMO_ORG_ID)  # token fetched outside the measurement
            await asyncio.sleep(WINDOW_S + 0.2)  # start with a fresh server-side window

            async def create(i: int) -> None:
                await client.create_distributions([distribution(f"CON-{i}")])

            creates = Phase(server_pid)
            await asyncio.gather(*(create(i) for i in range(n_creates)))
            creates.stop(n_creates)

            async def read() -> int:
                pages = 0
                async for _ in client.list_financial_accounts(limit=PAGE_SIZE).pages():
                    pages += 1
                    if pages >= pages_per_cursor:
                        break
                return pages

            await asyncio.sleep(WINDOW_S + 0.2)
            reads = Phase(server_pid)
            cursors = settings.http.max_concurrency
            pages = sum(await asyncio.gather(*(read() for _ in range(cursors))))
            reads.stop(pages)
    finally:
        log.removeHandler(counter)
    return creates, reads, pages, counter.count


CPU_REQUESTS = 600
CPU_ROUNDS = 2
PROFILE_TOP = 25


async def bare_creates(base_url: str, n: int, concurrency: int, tag: str) -> float:
    """CPU ms per create of a bare `httpx.AsyncClient`: the same bodies, headers (bearer token,
    organization, Idempotency-Key) and concurrency as FundClient, the answer read and decoded."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        token = await http.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
        )
        headers = {
            "Authorization": f"Bearer {token.json()['access_token']}",
            "X-Organization-Id": DEMO_ORG_ID,
            "Content-Type": "application/json",
        }
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                body = json.dumps([distribution(f"BARE-{tag}-{i}")]).encode()
                answer = await http.post(
                    "/v1/distributions",
                    content=body,
                    headers={**headers, "Idempotency-Key": f"bare-{tag}-{i}"},
                )
                answer.raise_for_status()
                answer.json()

        cpu = time.process_time()
        await asyncio.gather(*(one(i) for i in range(n)))
        return (time.process_time() - cpu) * 1000 / n


async def fund_creates(
    settings: Settings, n: int, tag: str, profile: cProfile.Profile | None = None
) -> float:
    """CPU ms per create of FundClient (`create_distributions`, one element each), optionally
    under `profile`."""
    async with FundClient(settings.client_config()) as client:
        await client.get_organization(DEMO_ORG_ID)  # token fetched outside the measurement

        async def one(i: int) -> None:
            await client.create_distributions([distribution(f"FUND-{tag}-{i}")])

        cpu = time.process_time()
        if profile is not None:
            profile.enable()
        await asyncio.gather(*(one(i) for i in range(n)))
        if profile is not None:
            profile.disable()
        return (time.process_time() - cpu) * 1000 / n


def request_cpu(settings: Settings, base_url: str) -> tuple[float, float, str]:
    """Best-of-rounds CPU ms per create (bare httpx, FundClient), no rate limit in the way,
    interleaved; and the top of FundClient's profile (cProfile, CPU time) over the same work."""
    bare, fund = [], []
    for r in range(CPU_ROUNDS):
        bare.append(
            asyncio.run(
                bare_creates(base_url, CPU_REQUESTS, settings.http.max_concurrency, f"b{r}")
            )
        )
        fund.append(asyncio.run(fund_creates(settings, CPU_REQUESTS, f"f{r}")))
    profile = cProfile.Profile(time.process_time)
    asyncio.run(fund_creates(settings, CPU_REQUESTS, "prof", profile))
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(PROFILE_TOP)
    return min(bare), min(fund), out.getvalue()


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) used so far by process `pid` (Linux /proc), or NaN."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return math.nan


def auto_rate(seq_creates: float, seq_reads: float) -> float:
    """The smallest whole R (req/s) with 90 % of it >= 5x the faster sequential loop."""
    return float(math.ceil(5 * max(seq_creates, seq_reads) / 0.9))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results and target lines."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", default="auto", help="R in requests/s, or 'auto'")
    parser.add_argument("--seconds", type=float, default=12.0, help="length of each phase at R")
    parser.add_argument("--concurrency", type=int, default=8, help="client max_concurrency")
    args = parser.parse_args(argv)
    wall = time.perf_counter()
    load_before = os.getloadavg()

    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(queue, stop), daemon=True)
    proc.start()
    try:
        base_url = queue.get(timeout=60)
        with httpx.Client(base_url=base_url) as control:

            def limit(requests: float) -> None:
                control.put(
                    "/_sandbox/settings",
                    json={"rate_limit_requests": int(requests), "rate_limit_window_s": WINDOW_S},
                ).raise_for_status()

            def latency(ms: int) -> None:
                control.put("/_sandbox/faults", json={"latency_ms": ms}).raise_for_status()

            # Enough accounts that no cursor reaches the end of the list (R is at most ~1000).
            max_rate = 1000.0 if args.rate == "auto" else float(args.rate)
            pages_per_cursor = math.ceil(max_rate * args.seconds / args.concurrency)
            control.post(
                "/_sandbox/bulk_financial_accounts",
                json={
                    "organization": DEMO_ORG_ID,
                    "vehicles": max(1, math.ceil(pages_per_cursor * PAGE_SIZE / 100)),
                    "accounts_per_vehicle": 100,
                },
            ).raise_for_status()

            # Baselines, without the rate limit (a sequential loop stays far below R anyway).
            limit(1_000_000)
            latency(0)  # the one-process sandbox's own service time bounds any client
            ceiling_creates, ceiling_reads = sequential(base_url, 60, "ceiling")
            latency(LATENCY_MS)
            seq_creates, seq_reads = sequential(base_url, SEQ_REQUESTS, "seq")

            rate = auto_rate(seq_creates, seq_reads) if args.rate == "auto" else float(args.rate)
            pages_per_cursor = math.ceil(rate * args.seconds / args.concurrency)
            limit(rate * WINDOW_S)
            settings = Settings(
                _env_file=None,
                service={
                    "base_url": base_url,
                    "client_id": DEMO_CLIENT_ID,
                    "client_secret": SecretStr(DEMO_CLIENT_SECRET),
                    "org_id": DEMO_ORG_ID,
                },
                http={"rate_limit_per_s": rate, "max_concurrency": args.concurrency},
            )
            n_creates = int(rate * args.seconds)
            creates, reads, pages, n429 = asyncio.run(
                concurrent(settings, n_creates, pages_per_cursor, proc.pid)
            )
            # What this machine allows at all: FundClient without any rate limit (short run).
            limit(1_000_000)
            unlimited = settings.updated(http={"rate_limit_per_s": 100_000.0})
            n_free = max(100, n_creates // 4)
            free_creates, free_reads, _, _ = asyncio.run(
                concurrent(unlimited, n_free, math.ceil(n_free / args.concurrency), proc.pid)
            )
            bare_ms, fund_ms, profile_top = request_cpu(unlimited, base_url)
    finally:
        stop.set()
        proc.join(timeout=15)
        if proc.is_alive():
            proc.terminate()
    load_after = os.getloadavg()

    n = math.ceil(rate)
    pace = n / (n / rate + GUARD_MARGIN_S)
    print(
        f"sandbox: loopback, +{LATENCY_MS} ms per request, rate limit R = {rate:.0f} req/s "
        f"({rate * WINDOW_S:.0f} per {WINDOW_S:.0f} s fixed window)"
        + (" [R auto: smallest whole R with 0.9 R >= 5x sequential]" if args.rate == "auto" else "")
    )
    print(
        f"client: rate_limit_per_s = {rate:.0f} (paces at {pace:.1f}/s = {pace / rate:.1%} of R), "
        f"max_concurrency = {args.concurrency}"
    )
    print()
    print(f"{'workload':<34}{'sequential httpx':>18}{'FundClient':>12}{'client pace':>13}{'R':>7}")
    for name, seq, phase in (
        (f"creates ({n_creates} requests)", seq_creates, creates),
        (f"paginated reads ({pages} pages)", seq_reads, reads),
    ):
        print(f"{name:<34}{seq:>16.1f}/s{phase.rate:>10.1f}/s{pace:>11.1f}/s{rate:>7.0f}")
    print(f"429 answers seen by FundClient: {n429}")
    print(
        f"FundClient without any rate limit (same concurrency, short run): creates "
        f"{free_creates.rate:.1f}/s, page reads {free_reads.rate:.1f}/s — this machine's ceiling"
    )
    for name, phase in (("creates", creates), ("page reads", reads)):
        cores = (phase.client_ms + phase.server_ms) * 0.9 * rate / 1000
        print(
            f"CPU per {name[:-1]}: FundClient {phase.client_ms:.2f} ms + sandbox "
            f"{phase.server_ms:.2f} ms; at 90 % of R that is {cores:.2f} cores of {os.cpu_count()}"
        )
    print(
        f"sandbox service time without added latency (sequential): creates "
        f"{1000 / ceiling_creates:.1f} ms, page reads {1000 / ceiling_reads:.1f} ms per request "
        f"(client+server round trip; one server process)"
    )
    print(
        f"load average (1/5/15 min) before {load_before[0]:.2f}/{load_before[1]:.2f}/"
        f"{load_before[2]:.2f}, after {load_after[0]:.2f}/{load_after[1]:.2f}/"
        f"{load_after[2]:.2f}; {os.cpu_count()} CPUs; wall {time.perf_counter() - wall:.0f} s"
    )
    print()
    print(
        f"CPU per create, no rate limit, {args.concurrency} in flight, best of {CPU_ROUNDS} x "
        f"{CPU_REQUESTS}: bare httpx.AsyncClient {bare_ms:.2f} ms, FundClient {fund_ms:.2f} ms"
    )
    print(f"FundClient's creates under cProfile (CPU time), top {PROFILE_TOP} by own time:")
    print("\n".join(line for line in profile_top.splitlines() if line.strip())[:6000])
    print()
    lines = [
        targets.ratio(
            "client_cpu_per_create",
            fund_ms,
            bare_ms,
            1.5,
            against="bare httpx",
            unit=" ms",
            note="the same creates, concurrency and sandbox",
        ),
        *(
            targets.ratio(
                f"{name}_vs_{what}",
                phase.rate,
                base,
                goal,
                against=against,
                unit="/s",
                spec=".1f",
                higher_is_better=True,
            )
            for name, phase, seq in (("creates", creates, seq_creates), ("reads", reads, seq_reads))
            for what, base, goal, against in (
                ("rate_limit", rate, 0.9, "R"),
                ("sequential", seq, 5.0, "sequential httpx"),
            )
        ),
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
