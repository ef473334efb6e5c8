"""The nightly flow against a sandbox that serves only the documented interface, over loopback.

`fundpipe sandbox --strict-interface` runs as a separate process on a free port and fundpipe is
pointed at it as at a real service (`FUNDPIPE_BASE_URL`): the night must complete on documented
operations alone — distributions created exactly once, sync and reconcile done, what it could
not do listed as warnings. With `--public-forms --reject-unknown-fields` too (a service refusing
every field its public description does not allow, in the public error form), the night learns
the forms it takes and keeps them in the binding, and the same roster dropped again a day later
creates no investor, contact or payment instruction twice; the totals match the default form.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest

from fundpipe.app.prefect import flows as night_flows
from fundpipe.config import Settings

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
CLEAN = ("distributions_q4.csv", "distributions_q4_special.parquet", "roster_new_investors.xlsx")

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=240):
        yield


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sandbox:
    """`fundpipe sandbox` in its own process, on a free loopback port."""

    def __init__(self, root: Path, *flags: str) -> None:
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        command = [str(Path(sys.executable).parent / "fundpipe"), "sandbox"]
        command += ["--port", str(self.port), "--db", str(root / "sandbox.sqlite"), *flags]
        self.log = (root / "sandbox.log").open("w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.base_url}/_sandbox/clock", timeout=1).raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the sandbox did not start")

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call a `/_sandbox/` control route."""
        response = httpx.request(method, f"{self.base_url}/_sandbox/{path}", json=body)
        response.raise_for_status()
        return response.json()

    def stop(self) -> None:
        """Stop the process this test started."""
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def _env(base_url: str) -> dict[str, str]:
    return {
        "FUNDPIPE_BASE_URL": base_url,
        "FUNDPIPE_CLIENT_ID": "demo-client",
        "FUNDPIPE_CLIENT_SECRET": "demo-secret",
        "FUNDPIPE_ORG_ID": "org_demo",
        "FUNDPIPE_INBOX_SETTLE_S": "0",
    }


def _drop(data_dir: Path, names: tuple[str, ...] = CLEAN) -> None:
    inbox = data_dir / "orgs" / "org_demo" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(SAMPLES / name, inbox / name)


def _nightly(data_dir: Path, base_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with monkeypatch.context() as patch:
        for key, value in _env(base_url).items():
            patch.setenv(key, value)
        # the flow's result is typed; its JSON form is what `fundpipe run --json` prints
        night: dict[str, Any] = night_flows.nightly(data_dir=str(data_dir)).as_json()
    # one organization (FUNDPIPE_ORG_ID): its night is the one child run
    assert list(night["organizations"]) == ["org_demo"], night
    summary: dict[str, Any] = night["organizations"]["org_demo"]["summary"]
    return summary


async def _holdings(base_url: str) -> dict[str, Any]:
    """What the service holds: distributions (reference → payment totals), investors, contacts."""
    from fundpipe.client import FundClient

    settings = Settings(
        _env_file=None,
        service={
            "base_url": base_url,
            "client_id": "demo-client",
            "client_secret": "demo-secret",
            "org_id": "org_demo",
        },
    )
    async with FundClient(settings.client_config()) as client:
        distributions: dict[str, list[int]] = {}
        async for d in client.list_distributions():
            amounts = [p.amount async for p in client.list_distribution_payments(d.id)]
            distributions.setdefault(d.external_reference or "", []).append(sum(amounts))
        entities = [e async for e in client.list_entities()]
        contacts = [c async for c in client.list_contacts()]
    return {"distributions": distributions, "entities": entities, "contacts": contacts}


def _workbook_totals(summary: dict[str, Any]) -> dict[str, Any]:
    book = openpyxl.load_workbook(summary["reports"]["workbook"], read_only=True)
    cells = {r[0]: r[1] for r in book["Summary"].iter_rows(values_only=True) if r and r[0]}
    keys = ("Open obligations", "Sheet rows (ledger)", "Service payments", "Payments matching")
    return {k: cells[k] for k in keys}


def _each_once(holdings: dict[str, Any]) -> None:
    assert all(len(totals) == 1 for totals in holdings["distributions"].values())
    refs = [r for e in holdings["entities"] for r in e.external_references]
    assert len(refs) == len(set(refs)), "an investor exists twice"
    emails = [c.email for c in holdings["contacts"]]
    assert len(emails) == len(set(emails)), "a contact exists twice"
    instructions = [p for e in holdings["entities"] for p in e.payment_instructions]
    assert len(instructions) == len(set(instructions))


@pytest.fixture(scope="module")
def default_night(
    prefect_harness: None, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The samples' night on the default-form sandbox: the totals to compare with."""
    root = tmp_path_factory.mktemp("default")
    sandbox = Sandbox(root)
    try:
        _drop(root / "data")
        with pytest.MonkeyPatch.context() as patch:
            summary = _nightly(root / "data", sandbox.base_url, patch)
    finally:
        sandbox.stop()
    return summary


def test_the_night_completes_on_the_strict_interface(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = Sandbox(tmp_path, "--strict-interface")
    try:
        _drop(tmp_path / "data")
        summary = _nightly(tmp_path / "data", sandbox.base_url, monkeypatch)
        holdings = asyncio.run(_holdings(sandbox.base_url))
    finally:
        sandbox.stop()
    assert summary["exit_code"] == 0, summary
    assert summary["facts"]["files processed (new)"] == len(CLEAN)
    assert summary["facts"]["distributions submitted"] == 4
    assert summary["facts"]["accounts synced"] == 6  # through each vehicle's account list
    assert summary["facts"]["service objects"] == "test"
    _each_once(holdings)
    assert len(holdings["distributions"]) == 4
    warnings = "\n".join(summary["warnings"])
    assert "'vehicles'" in warnings  # the guessed vehicle list: a warning, not a failure
    assert "not associated" in warnings  # contact association is not served: per contact
    assert Path(summary["reports"]["workbook"]).exists()


def test_the_same_roster_a_day_later_on_the_public_forms_creates_nothing_twice(
    default_night: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = Sandbox(tmp_path, "--strict-interface", "--public-forms", "--reject-unknown-fields")
    data_dir = tmp_path / "data"
    try:
        _drop(data_dir)
        first = _nightly(data_dir, sandbox.base_url, monkeypatch)
        once = asyncio.run(_holdings(sandbox.base_url))
        sandbox.control("POST", "clock/advance", {"seconds": 25 * 3600})
        inbox = data_dir / "orgs" / "org_demo" / "inbox"
        inbox.mkdir(exist_ok=True)
        # re-saved by another program: the same rows in other bytes, so the ledger's file hash
        # does not recognise it and only matching by reference at the service can
        resaved = inbox / "roster (again).xlsx"
        openpyxl.load_workbook(SAMPLES / "roster_new_investors.xlsx").save(resaved)
        assert resaved.read_bytes() != (SAMPLES / "roster_new_investors.xlsx").read_bytes()
        os.utime(resaved, (time.time() - 60, time.time() - 60))  # settled
        second = _nightly(data_dir, sandbox.base_url, monkeypatch)
        twice = asyncio.run(_holdings(sandbox.base_url))
    finally:
        sandbox.stop()
    assert first["exit_code"] == second["exit_code"] == 0, (first, second)
    assert any("external_references" in note for note in first["notes"]), first["notes"]
    binding = json.loads(
        (data_dir / "orgs" / "org_demo" / "ledger.binding.json").read_text(encoding="utf-8")
    )
    # the learned forms, for every later night: contacts and instructions never carried a field
    # the public description forbids; entities learned its array form and to leave the type out
    assert binding["body_forms"] == {"/v1/entities": "external_references+no_external_type"}
    assert not any("does not take" in note for note in second["notes"])  # known from the start
    _each_once(twice)
    again = next(f for f in second["files"] if "again" in f["file"])
    assert again["state"] == "processed", again  # read and matched, not skipped by its hash
    assert sorted(e.id for e in twice["entities"]) == sorted(e.id for e in once["entities"])
    assert sorted(c.id for c in twice["contacts"]) == sorted(c.id for c in once["contacts"])
    assert twice["distributions"] == once["distributions"]
    assert _workbook_totals(first) == _workbook_totals(default_night)
    assert (
        first["facts"]["distributions submitted"]
        == default_night["facts"]["distributions submitted"]
    )
