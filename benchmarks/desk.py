"""Benchmark: the finance desk's pages at 300,000 payments, each against reading its figures.

Issue 42: "every page within 1.5× of that read, and under 300 ms on this machine".

Set-up: the reconcile benchmark's generated warehouse of 300,000 payments (`reconcile.py`'s
generator, cached in `benchmarks/out/`), copied into a data folder as organization
`org_bench`, reconciled once for its as-of day (so the exception log holds the night's
exceptions: ~300 amount mismatches and the missing and extra rows). One admin with a local
account. `fundpipe desk` is started as a subprocess on loopback, as a person runs it, and
signed in to over HTTP with httpx.

Each page is asked for 2 times to warm up, then REPEATS times, taking turns with its
baseline's two parts (so a change of the shared machine's load falls on both); its time is the
median round-trip. Its baseline, measured in the same run from this (warmed) process: the round-trip
of the desk's style sheet from the same server (what any page costs: the connection, the
session, the headers) plus a plain DuckDB read of the same figures the page shows — a fresh
read-only connection to the organization's warehouse, the page's rows (its first 500, as the
page shows them) and totals read from the same tables and Parquet files, fetched into Python.

Run: `.venv/bin/python benchmarks/desk.py`. The first run generates the warehouse (≈ 10 s).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import httpx
import targets

import reconcile as reconcile_bench

PAYMENTS = 300_000
ORG = "org_bench"
REPEATS = 15
PAGE_ROWS = 500
#: Goals (issue 42): each page ≤ 1.5× its floor, and the slowest under 300 ms.
VS_READ = 1.5
SLOWEST_MS = 300.0
EMAIL, NAME, PASSWORD = "ada@example.com", "Ada Admin", "bench password for the desk"
#: The night's clock: the as-of day itself, so its exceptions are the log's (not a past view).
NIGHT = dt.datetime(2026, 11, 30, 22, 0, tzinfo=dt.UTC)
#: Every exception's state now: the fold of its events (the warehouse's table macro).
STATES = "exception_states(TIMESTAMPTZ 'infinity')"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(data: Path) -> dict[str, Path]:
    """The data folder: the generated warehouse as `org_bench`'s, reconciled, with an admin."""
    from argon2 import PasswordHasher

    from fundpipe.config import Organization, Settings
    from fundpipe.desk import Accounts
    from fundpipe.orgs import org_settings
    from fundpipe.reconcile import reconcile

    root = reconcile_bench._cached_warehouse(PAYMENTS)
    top = Settings(_env_file=None, local={"data_dir": data})  # type: ignore[call-arg]
    settings = org_settings(
        top, ORG, among=[Organization(id=ORG, name="Bench Fund Admin")], load_secret=None
    ).settings
    settings.local.warehouse_file.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "warehouse.duckdb", settings.local.warehouse_file)
    started = time.perf_counter()
    result = reconcile(settings, as_of=NIGHT.date(), clock=lambda: NIGHT)
    print(f"reconcile of {PAYMENTS:,} payments: {time.perf_counter() - started:.1f} s")
    quick = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)
    Accounts(data / "desk" / "accounts.json", quick).add(EMAIL, NAME, PASSWORD)
    members = data / "desk" / "members.toml"
    members.write_text(
        f'[[member]]\nemail = "{EMAIL}"\nname = "{NAME}"\norg = "{ORG}"\nrole = "admin"\n',
        encoding="utf-8",
    )
    return {
        "warehouse": settings.local.warehouse_file,
        "report": result.out_dir,
        "members": members,
        "uploads": data / "desk" / "uploads" / f"{ORG}.jsonl",
        "inbox": settings.local.data_dir / "inbox",
    }


def serve(data: Path, members: Path) -> tuple[subprocess.Popen[str], str]:
    """`fundpipe desk` over `data`, answering."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUNDPIPE_")}
    env["FUNDPIPE_DESK_MEMBERS"] = str(members)
    fundpipe = Path(sys.executable).with_name("fundpipe")
    process = subprocess.Popen(
        [str(fundpipe), "desk", "--port", str(port), "--data-dir", str(data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/sign-in", timeout=1)
            return process, url
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                out = process.stdout.read() if process.stdout else ""
                raise SystemExit(f"fundpipe desk did not start: {out}") from None
            time.sleep(0.2)


_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def signed_in(url: str) -> httpx.Client:
    """A client signed in as the admin."""
    client = httpx.Client(base_url=url, headers={"accept": "text/html"}, timeout=30)
    found = _CSRF.search(client.get("/sign-in").text)
    assert found, "the sign-in page has no CSRF token"
    answer = client.post(
        "/sign-in",
        data={"email": EMAIL, "password": PASSWORD, "csrf_token": found.group(1)},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    return client


def timed(*fns: Callable[[], object]) -> list[float]:
    """Each of `fns`' median seconds over REPEATS calls, after 2 to warm up; the calls take
    turns (one of each, then again), so that a change of the shared machine's load falls on
    a page and its baseline alike."""
    for _ in range(2):
        for fn in fns:
            fn()
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(REPEATS):
        for fn, times in zip(fns, runs, strict=True):
            started = time.perf_counter()
            fn()
            times.append(time.perf_counter() - started)
    return [statistics.median(times) for times in runs]


def reads(files: dict[str, Path], exception_id: str) -> dict[str, Callable[[], object]]:
    """Per page, a plain DuckDB read of the figures it shows (a fresh read-only connection)."""
    warehouse = str(files["warehouse"])

    def parquet(view: str) -> str:
        return f"read_parquet('{files['report'] / f'{view}.parquet'}')"

    summary_sql = [
        f"SELECT count(*), sum(available_cents), sum(shortfall_cents) FROM {parquet('funding')}",
        f"SELECT count(*), count(*) FILTER (WHERE match = 'ok') FROM {parquet('sheet_vs_service')}",
        f"SELECT * FROM {parquet('distribution_tieout')} WHERE is_total",
        f"SELECT kind, count(*) FROM {parquet('exceptions')} GROUP BY kind",
        "SELECT max(finished_at) FROM syncs",
        "SELECT * FROM period_events",
    ]

    def read(*sql: str, params: list[object] | None = None) -> Callable[[], object]:
        def run() -> object:
            con = duckdb.connect(warehouse, read_only=True)
            try:
                return [con.execute(q, params if "?" in q else None).fetchall() for q in sql]
            finally:
                con.close()

        return run

    def tab(view: str) -> Callable[[], object]:
        return read(
            f"SELECT * FROM {parquet(view)} LIMIT {PAGE_ROWS}",
            f"SELECT count(*), sum(COLUMNS(lambda c: c LIKE '%cents')) FROM {parquet(view)}",
        )

    open_log = (
        f"SELECT * FROM {STATES} WHERE state <> 'resolved' ORDER BY first_seen, id "
        f"LIMIT {PAGE_ROWS}"
    )

    def upload() -> object:
        log = files["uploads"]
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        inbox = files["inbox"]
        return lines, sorted(p.name for p in inbox.iterdir()) if inbox.is_dir() else []

    return {
        "morning": read(*summary_sql, open_log),
        "summary": read(*summary_sql),
        "rollforward": tab("rollforward"),
        "tieout": tab("distribution_tieout"),
        "funding": tab("funding"),
        "exceptions_tab": tab("exceptions"),
        "queue": read(open_log, f"SELECT state, count(*) FROM {STATES} GROUP BY state"),
        "one_exception": read(
            f"SELECT * FROM {STATES} WHERE id = ?",
            "SELECT * FROM exception_events WHERE exception_id = ? ORDER BY seq",
            params=[exception_id],
        ),
        "close": read("SELECT * FROM period_events ORDER BY period, seq"),
        # the month's events and the open exceptions its page lists (the first 50 and the
        # count; a kind count of the report's exceptions was read here before: not what the
        # page shows)
        "close_month": read(
            "SELECT * FROM period_events WHERE period = ? ORDER BY seq",
            f"SELECT * FROM {STATES} WHERE state = 'open' ORDER BY first_seen, id LIMIT 50",
            f"SELECT count(*) FROM {STATES} WHERE state = 'open'",
            params=["2026-11"],
        ),
        "upload": upload,
    }


def main() -> None:
    """Time every page of the desk against its floor; print one target line per page."""
    with tempfile.TemporaryDirectory(prefix="bench-desk-") as tmp:
        data = Path(tmp) / "data"
        files = build(data)
        con = duckdb.connect(str(files["warehouse"]), read_only=True)
        row = con.execute(
            f"SELECT id, count(*) OVER () FROM {STATES} WHERE state = 'open' ORDER BY id"
        ).fetchone()
        con.close()
        assert row, "the reconciled world has no open exception"
        exception_id, open_count = str(row[0]), int(row[1])
        print(f"{open_count:,} open exceptions; report folder {files['report'].name}")
        process, url = serve(data, files["members"])
        try:
            client = signed_in(url)
            base = f"/orgs/{ORG}"
            pages = {
                "morning": "/morning",
                "summary": f"{base}/reconciliation",
                "rollforward": f"{base}/reconciliation/rollforward",
                "tieout": f"{base}/reconciliation/tieout",
                "funding": f"{base}/reconciliation/funding",
                "exceptions_tab": f"{base}/reconciliation/exceptions",
                "queue": f"{base}/exceptions",
                "one_exception": f"{base}/exceptions/{exception_id}",
                "close": f"{base}/close",
                "close_month": f"{base}/close/2026-11",
                "upload": f"{base}/upload",
            }
            for name, path in pages.items():
                answer = client.get(path)
                assert answer.status_code == 200, f"{path}: {answer.status_code}"
                print(f"  {name:<15} {path}  {len(answer.content) / 1024:,.0f} KiB")
            figures = reads(files, exception_id)
            measured = {}
            floors = []
            for name, path in pages.items():
                page_s, floor, read_s = timed(
                    lambda path=path: client.get(path),
                    lambda: client.get("/static/desk.css"),
                    figures[name],
                )
                measured[name] = (page_s, floor + read_s)
                floors.append(floor)
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(
        "the style sheet's round-trip (every baseline's floor), median over the pages: "
        f"{statistics.median(floors) * 1000:.1f} ms"
    )
    print(json.dumps({k: [round(v * 1000, 2) for v in t] for k, t in measured.items()}))
    for name, (page_s, base_s) in measured.items():
        print(
            targets.ratio(
                f"desk_page_{name}",
                page_s * 1000,
                base_s * 1000,
                VS_READ,
                against="its figures read from the warehouse + a round-trip",
                unit=" ms",
                spec=".1f",
            )
        )
    slowest = max(measured, key=lambda k: measured[k][0])
    print(
        targets.count(
            "desk_slowest_page_ms",
            measured[slowest][0] * 1000,
            SLOWEST_MS,
            how=f"milliseconds, the slowest page: {slowest}, on this machine",
        )
    )


if __name__ == "__main__":
    main()
