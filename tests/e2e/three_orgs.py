"""Three demo organizations for the end-to-end tests of a night on several workers: their
sheets, the distributions they ask for, what the sandbox holds afterwards, and how many of them
talked to the service at once (from the sandbox's request log).

`fundpipe sandbox --demo-orgs 3` serves `org_demo`, `org_demob` and `org_democ`; org_democ's
sheet is org_demob's sample rewritten onto org_democ's vehicles and investors.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
from prefect_processes import SAMPLES

from fundpipe.validate.files import validate_files

ORGS = ("org_demo", "org_demob", "org_democ")


def sheets(folder: Path) -> list[Path]:
    """The sheets in ``folder`` (not its README)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".md")


def democ_sheet() -> str:
    """org_democ's sheet: org_demob's sample over org_democ's vehicles and investors."""
    (sample,) = sheets(SAMPLES / "org_demob")
    text = sample.read_text(encoding="utf-8")
    for old, new in (("demob", "democ"), ("DEMOB", "DEMOC"), ("Demo B", "Demo C"), (".b@", ".c@")):
        text = text.replace(old, new)
    return text


def fill_inbox(data_dir: Path, org: str) -> dict[str, int]:
    """``org``'s sample sheets in its inbox under ``data_dir`` (their mtime kept: already
    settled); the cents each external reference of its sheets asks for."""
    inbox = data_dir / "orgs" / org / "inbox"
    inbox.mkdir(parents=True)
    if org == "org_democ":
        (inbox / "distributions_q4_c.csv").write_text(democ_sheet(), encoding="utf-8")
    else:
        for sheet in sheets(SAMPLES if org == "org_demo" else SAMPLES / org):
            shutil.copy2(sheet, inbox / sheet.name)
    expected: dict[str, int] = {}
    for report in validate_files(sheets(inbox)):
        assert report.valid, report
        if report.distributions is None:  # a roster
            continue
        sums = report.distributions.groupby("external_reference")["amount_cents"].sum()
        for ref, cents in sums.items():
            expected[str(ref)] = expected.get(str(ref), 0) + int(cents)
    return expected


def most_at_once(requests: list[dict[str, Any]]) -> tuple[int, dict[str, tuple[float, float]]]:
    """How many organizations were talking to the service at the same moment, at most: each
    organization is active from its first request's start to its last request's end."""
    spans: dict[str, tuple[float, float]] = {}
    for r in requests:
        if r["org_id"]:
            start, end = spans.get(r["org_id"], (r["started_s"], r["ended_s"]))
            spans[r["org_id"]] = (min(start, r["started_s"]), max(end, r["ended_s"]))
    edges = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()])
    active = most = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        active += step
        most = max(most, active)
    return most, spans


def held_distributions(sandbox_url: str, org: str) -> dict[str, int]:
    """External reference → how many distributions the service holds for `org`."""
    token = httpx.post(
        f"{sandbox_url}/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    ).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}", "X-Organization-Id": org}
    found: dict[str, int] = {}
    url: str | None = f"{sandbox_url}/v1/distributions?limit=100"
    while url:
        page = httpx.get(url, headers=headers).json()
        for d in page["data"]:
            found[d["external_reference"]] = found.get(d["external_reference"], 0) + 1
        after = page["data"][-1]["id"] if page.get("has_more") else None
        url = f"{sandbox_url}/v1/distributions?limit=100&starting_after={after}" if after else None
    return found


def table_row(markdown: str, org: str) -> list[str]:
    """The cells of `org`'s row in the parent's cross-organization table."""
    (line,) = [ln for ln in markdown.splitlines() if ln.startswith(f"| {org} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def answers(url: str) -> bool:
    """True once ``url`` answers 200."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
