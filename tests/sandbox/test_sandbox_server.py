"""Over real HTTP: the threaded server, dropped connections, restarts and a SIGKILL mid-load."""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sandbox_support import distribution

from fundpipe.sandbox import SandboxConfig, SandboxServer, run_server


def _token(http: httpx.Client) -> dict[str, str]:
    response = http.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    )
    response.raise_for_status()
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def _all_distributions(http: httpx.Client, headers: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    url: str | None = "/v1/distributions?limit=100"
    while url:
        page = http.get(url, headers=headers).json()
        out += page["data"]
        url = page["next_page_url"]
    return out


def test_server_serves_on_a_free_loopback_port() -> None:
    with SandboxServer(SandboxConfig()) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=server.base_url) as http:
            vehicles = http.get("/v1/vehicles", headers=_token(http))
            assert vehicles.status_code == 200
            assert vehicles.headers["Request-Id"]


def test_non_loopback_hosts_are_refused() -> None:
    with pytest.raises(ValueError, match="non-loopback"):
        SandboxServer(SandboxConfig(), host="0.0.0.0")


def test_dropped_response_after_commit_over_http(capfd: pytest.CaptureFixture[str]) -> None:
    with SandboxServer(SandboxConfig()) as server, httpx.Client(base_url=server.base_url) as http:
        headers = {**_token(http), "Idempotency-Key": "drop-over-http"}
        http.put("/_sandbox/faults", json={"drop_after_commit_rate": 1.0})
        with pytest.raises(httpx.TransportError):
            http.post("/v1/distributions", headers=headers, json=[distribution(5)])
        http.delete("/_sandbox/faults")
        replay = http.post("/v1/distributions", headers=headers, json=[distribution(5)])
        assert replay.status_code == 201
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert len(_all_distributions(http, headers)) == 1
    assert "Traceback" not in capfd.readouterr().err


def test_restart_keeps_state_and_clock(tmp_path: Path) -> None:
    config = SandboxConfig(db_path=tmp_path / "sandbox.sqlite")
    with SandboxServer(config) as server, httpx.Client(base_url=server.base_url) as http:
        headers = _token(http)
        created = http.post("/v1/distributions", headers=headers, json=[distribution(3)]).json()[
            "data"
        ][0]
        moved = http.post("/_sandbox/clock/advance", json={"seconds": 86400}).json()["now"]
    with SandboxServer(config) as server, httpx.Client(base_url=server.base_url) as http:
        assert http.get("/_sandbox/clock").json()["now"] >= moved
        headers = _token(http)
        again = http.get(f"/v1/distributions/{created['id']}", headers=headers).json()
        assert again["id"] == created["id"]
        assert len(http.get("/v1/entities", headers=headers).json()["data"]) == 5  # not re-seeded


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _spawn(db: Path, port: int) -> multiprocessing.process.BaseProcess:
    # A forked child starts at once (no re-import) and is a real, separately killable process.
    proc = multiprocessing.get_context("fork").Process(
        target=run_server, args=("127.0.0.1", port, db, "demo"), daemon=True
    )
    proc.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_sandbox/clock", timeout=0.5).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("sandbox process did not start")


BATCH = 10
PAYMENTS = 20


def _batch(i: int) -> list[dict[str, Any]]:
    return [distribution(PAYMENTS, external_reference=f"batch-{i}") for _ in range(BATCH)]


@pytest.mark.slow
def test_sigkill_mid_load_leaves_no_half_batch(tmp_path: Path) -> None:
    db = tmp_path / "killed.sqlite"
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _spawn(db, port)
    acknowledged: list[int] = []
    attempted: list[int] = []
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            headers = _token(http)

            def load() -> None:
                for i in range(200):
                    attempted.append(i)
                    try:
                        response = http.post(
                            "/v1/distributions",
                            headers={**headers, "Idempotency-Key": f"k{i}"},
                            json=_batch(i),
                        )
                    except httpx.TransportError:
                        return
                    assert response.status_code == 201
                    acknowledged.append(i)

            worker = threading.Thread(target=load)
            worker.start()
            while len(acknowledged) < 3 and worker.is_alive():
                time.sleep(0.001)
            time.sleep(0.004)  # land inside the next request
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)
            worker.join(timeout=30)
    finally:
        proc.kill()
        proc.join()
    assert len(acknowledged) >= 3
    assert len(attempted) > len(acknowledged)  # the kill cut a request short

    proc = _spawn(db, port)
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            headers = _token(http)
            rows = _all_distributions(http, headers)
            per_batch = Counter(d["external_reference"] for d in rows)
            assert set(per_batch.values()) <= {BATCH}, per_batch  # whole batches only
            for i in acknowledged:
                assert per_batch[f"batch-{i}"] == BATCH
            # Every stored key still answers with its batch; retrying the interrupted one completes it.
            for i in attempted:
                retry = http.post(
                    "/v1/distributions",
                    headers={**headers, "Idempotency-Key": f"k{i}"},
                    json=_batch(i),
                )
                assert retry.status_code == 201
                committed_before = per_batch[f"batch-{i}"] == BATCH
                assert (retry.headers.get("Idempotent-Replayed") == "true") == committed_before
            rows = _all_distributions(http, headers)
            assert Counter(d["external_reference"] for d in rows) == {
                f"batch-{i}": BATCH for i in attempted
            }
            sample = http.get(
                f"/v1/distributions/{rows[0]['id']}/payments?limit=100", headers=headers
            ).json()
            assert len(sample["data"]) == PAYMENTS
    finally:
        proc.terminate()
        proc.join(timeout=10)
