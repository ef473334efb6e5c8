"""Throughput of `fundpipe.client.FundClient` against the sandbox over loopback HTTP.

    python benchmarks/client.py [--rate 50] [--seconds 20] [--concurrency 8]

The sandbox runs in a child process (`SandboxServer` on 127.0.0.1, so that server and client do
not share one interpreter's GIL on a 2-core machine) with 20 ms of added latency per request and
a per-client rate limit of R requests/s (R x window requests per window). The client is set to
R requests/s too. Measured in the same run:

- a plain sequential `httpx.Client` loop (the baseline): distribution creates, then paginated
  reads of vehicles' financial-account lists;
- `FundClient`: the same creates issued concurrently, and the same lists paginated concurrently
  (each list's pages follow one another; lists run side by side).

Targets: FundClient's sustained throughput ≥ 90 % of R and ≥ 5x the sequential loop, for both
creates and paginated reads. Both can only hold together when R ≥ 5x the sequential rate and the
sandbox can serve R: the script also measures the sandbox's own service time (no added latency)
and says when a target is out of reach for that reason. R defaults to 50/s.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import socket
import sys
import time
from typing import Any

import httpx
from pydantic import SecretStr

from fundpipe.client import FundClient
from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID, Settings

LATENCY_MS = 20
WINDOW_S = 2.0
ACCOUNTS_PER_VEHICLE = 30
PAGE_SIZE = 10


def _serve(queue: Any, stop: Any) -> None:
    """Child process: run the sandbox on loopback until told to stop."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    logging.disable(logging.CRITICAL)
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        # Without TCP_NODELAY on the listening socket that SandboxServer hands to uvicorn,
        # Nagle + delayed ACK add ~40 ms to every loopback request (reported to the sandbox
        # owner); accepted connections inherit the option, so set it until SandboxServer does.
        listener = getattr(server, "_socket", None)
        if isinstance(listener, socket.socket):
            listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        queue.put(server.base_url)
        stop.wait()


def distribution(ref: str) -> dict[str, Any]:
    """One small distribution create body element."""
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
        if "-> 429" in record.getMessage():
            self.count += 1


def sequential(base_url: str, n_creates: int, vehicles: list[str]) -> tuple[float, float]:
    """Requests/s of a plain sequential httpx loop: creates, then paginated reads."""
    with httpx.Client(base_url=base_url) as http:
        token = http.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET),
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        http.headers["X-Organization-Id"] = DEMO_ORG_ID
        started = time.perf_counter()
        for i in range(n_creates):
            response = http.post("/v1/distributions", json=[distribution(f"SEQ-{i}")])
            response.raise_for_status()
        creates = n_creates / (time.perf_counter() - started)
        pages = 0
        started = time.perf_counter()
        for veh in vehicles:
            url: str | None = f"/v1/vehicles/{veh}/financial_accounts?limit={PAGE_SIZE}"
            while url:
                response = http.get(url)
                response.raise_for_status()
                pages += 1
                url = response.json()["next_page_url"]
        reads = pages / (time.perf_counter() - started)
    return creates, reads


async def concurrent(
    settings: Settings, n_creates: int, vehicles: list[str]
) -> tuple[float, float, int, int]:
    """Requests/s of FundClient (concurrent creates, concurrent paginated reads), pages, 429s."""
    counter = Count429()
    logging.getLogger("stamina").setLevel(logging.ERROR)  # retries are counted, not printed
    log = logging.getLogger("fundpipe.client")
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    async with FundClient(settings) as client:
        await client.get_organization(DEMO_ORG_ID)  # token fetched outside the measurement
        await asyncio.sleep(WINDOW_S + 0.5)  # start with a fresh server-side window

        async def create(i: int) -> None:
            await client.create_distributions([distribution(f"CON-{i}")])

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(create(i) for i in range(n_creates)))
        creates = n_creates / (time.perf_counter() - started)
        cpu_ms = (time.process_time() - cpu) * 1000 / n_creates

        async def read(veh: str) -> int:
            pages = 0
            async for _ in client.list_vehicle_financial_accounts(veh, limit=PAGE_SIZE).pages():
                pages += 1
            return pages

        started = time.perf_counter()
        pages = sum(await asyncio.gather(*(read(v) for v in vehicles)))
        reads = pages / (time.perf_counter() - started)
    log.removeHandler(counter)
    print(f"FundClient CPU per create request: {cpu_ms:.1f} ms (client process only)")
    return creates, reads, pages, counter.count


def verdict(name: str, measured: float, goal: float) -> str:
    """One `target` line."""
    status = "met" if measured >= goal else "short"
    return f"target {name}: {measured:.1f} vs {goal:.1f} — {status}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results and target lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0, help="R, requests per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase at R")
    parser.add_argument("--concurrency", type=int, default=8, help="client max_concurrency")
    args = parser.parse_args(argv)
    rate: float = args.rate

    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(queue, stop), daemon=True)
    proc.start()
    try:
        base_url = queue.get(timeout=60)
        with httpx.Client(base_url=base_url) as control:
            n_vehicles = max(1, int(rate * args.seconds / (ACCOUNTS_PER_VEHICLE / PAGE_SIZE)))
            seeded = control.post(
                "/_sandbox/bulk_financial_accounts",
                json={
                    "organization": DEMO_ORG_ID,
                    "vehicles": n_vehicles,
                    "accounts_per_vehicle": ACCOUNTS_PER_VEHICLE,
                },
            )
            seeded.raise_for_status()
            vehicles: list[str] = seeded.json()["vehicles"]
            control.put("/_sandbox/faults", json={"latency_ms": LATENCY_MS}).raise_for_status()

            def limit(requests: float, window: float) -> None:
                control.put(
                    "/_sandbox/settings",
                    json={"rate_limit_requests": int(requests), "rate_limit_window_s": window},
                ).raise_for_status()

            # Baseline: without the rate limit (a sequential loop stays far below R anyway).
            limit(1_000_000, WINDOW_S)
            # The one-process sandbox's own service time bounds any client's throughput.
            control.put("/_sandbox/faults", json={"latency_ms": 0}).raise_for_status()
            ceiling_creates, ceiling_reads = sequential(base_url, 60, vehicles[-20:])
            control.put("/_sandbox/faults", json={"latency_ms": LATENCY_MS}).raise_for_status()
            seq_n = 150
            seq_creates, seq_reads = sequential(base_url, seq_n, vehicles[: seq_n // 3])

            limit(rate * WINDOW_S, WINDOW_S)
            settings = Settings(  # type: ignore[call-arg]
                _env_file=None,
                base_url=base_url,
                client_id=DEMO_CLIENT_ID,
                client_secret=SecretStr(DEMO_CLIENT_SECRET),
                org_id=DEMO_ORG_ID,
                rate_limit_per_s=rate,
                max_concurrency=args.concurrency,
            )
            n_creates = int(rate * args.seconds)
            con_creates, con_reads, pages, n429 = asyncio.run(
                concurrent(settings, n_creates, vehicles)
            )
    finally:
        stop.set()
        proc.join(timeout=15)
        if proc.is_alive():
            proc.terminate()

    print(
        f"sandbox: loopback, +{LATENCY_MS} ms per request, rate limit R = {rate:.0f} req/s "
        f"({rate * WINDOW_S:.0f} per {WINDOW_S:.0f} s window)"
    )
    print(f"client: rate_limit_per_s = {rate:.0f}, max_concurrency = {args.concurrency}")
    print()
    print(f"{'workload':<34}{'sequential httpx':>18}{'FundClient':>12}{'R':>8}")
    print(
        f"{'creates (' + str(n_creates) + ' requests)':<34}{seq_creates:>16.1f}/s"
        f"{con_creates:>10.1f}/s{rate:>7.0f}"
    )
    print(
        f"{'paginated reads (' + str(pages) + ' pages)':<34}{seq_reads:>16.1f}/s"
        f"{con_reads:>10.1f}/s{rate:>7.0f}"
    )
    print(f"429 answers seen by FundClient: {n429}")
    print(
        f"sandbox service time without added latency: creates {1000 / ceiling_creates:.1f} ms, "
        f"page reads {1000 / ceiling_reads:.1f} ms per request (one process: a ceiling of about "
        f"{ceiling_creates:.0f} and {ceiling_reads:.0f} requests/s for any client)"
    )
    print()
    lines = [
        verdict("creates vs R (>= 90 %)", con_creates, 0.9 * rate),
        verdict("creates vs sequential (>= 5x)", con_creates, 5 * seq_creates),
        verdict("paginated reads vs R (>= 90 %)", con_reads, 0.9 * rate),
        verdict("paginated reads vs sequential (>= 5x)", con_reads, 5 * seq_reads),
    ]
    print("\n".join(lines))
    ceiling = min(ceiling_creates, ceiling_reads)
    if 5 * max(seq_creates, seq_reads) > rate:
        print(f"note: 5x the sequential loop exceeds R = {rate:.0f}/s: raise --rate to test it")
    if 0.9 * rate > ceiling:
        print(f"note: 90 % of R exceeds what this one-process sandbox serves (~{ceiling:.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
