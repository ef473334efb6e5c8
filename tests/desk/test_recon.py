"""The reconciliation's pages: each tab of the latest report as the workbook shows it (names,
money right-aligned, a Total), the files rejected, downloads for members only, and any filed
as-of / as-known-at report opened."""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Callable

import pyarrow.parquet as pq
import time_machine
from desk_world import KNOWN_AS_OF, WORLD_START, DeskWorld, sign_in
from fastapi.testclient import TestClient

from fundpipe.reconcile import reconcile

HTML = {"accept": "text/html"}
NAMES = '[{"id": "org_demo", "name": "Alder Capital"}, {"id": "org_demob", "name": "Birch"}]'
BASE = "/orgs/org_demo/reconciliation"


def _cells(text: str, css: str) -> list[str]:
    """The text of every cell of class ``css``."""
    return re.findall(rf'<td class="{css}">([^<]*)</td>', text)


def _total_row(text: str) -> str:
    found = re.search(r'<tr class="total">(.*?)</tr>', text, re.S)
    assert found, "no Total row"
    return found.group(1)


def test_the_summary_names_the_organization_and_lists_the_rejected_file(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, orgs=NAMES)
    sign_in(client, "maria@example.com")
    page = client.get(BASE, headers=HTML)
    assert page.status_code == 200
    assert "<h1>Alder Capital: reconciliation as of 2026-11-30</h1>" in page.text
    assert "org_demo</td>" not in page.text  # its name, not its id
    money = _cells(page.text, "money")
    assert "$1,100.00" in money  # Depository available, right-aligned
    assert "$110.00" in money  # Shortfall
    # the tie-out's total lines, and the exceptions by kind with their Total
    assert '<tr class="total"><td>Disbursed + failed + cancelled + outstanding</td>' in page.text
    assert '<tr class="total"><td>Total</td><td class="money">10</td>' in page.text
    rejected = page.text.split("<h2>Files rejected</h2>")[1]
    assert "<td>bad.csv</td>" in rejected
    assert "fix the sheet and drop it in the inbox again" in rejected
    assert page.headers["cache-control"] == "no-store"


def test_each_tab_shows_names_right_aligned_money_and_a_total(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, orgs=NAMES)
    sign_in(client, "maria@example.com")
    funding = client.get(f"{BASE}/funding", headers=HTML)
    assert funding.status_code == 200
    assert "<h2>Funding</h2>" in funding.text
    assert "<td>Fund B</td>" in funding.text  # the vehicle by name
    assert "<td>veh_b</td>" not in funding.text  # its id is a detail the page leaves out
    assert '<th class="money">Shortfall (USD)</th>' in funding.text
    total = _total_row(funding.text)
    assert "<td>Total</td>" in total
    assert '<td class="money">$1,100.00</td>' in total  # available, over both vehicles
    assert '<td class="money">$110.00</td>' in total  # the shortfall

    rollforward = client.get(f"{BASE}/rollforward", headers=HTML)
    assert "<td>B dep</td>" in rollforward.text  # the account by name
    assert '<td class="money">-$10.00</td>' in _total_row(rollforward.text)  # unexplained

    tieout = client.get(f"{BASE}/tieout", headers=HTML)
    total = _total_row(tieout.text)
    assert '<td class="money">$717.77</td>' in total  # per the sheets, all distributions
    assert '<td class="money">$710.00</td>' in total  # at the service

    exceptions = client.get(f"{BASE}/exceptions", headers=HTML)
    assert all(i in exceptions.text for i in desk_world.open_ids["org_demo"])
    assert "<td>Sheet file rejected</td>" in exceptions.text  # the kind in words
    assert "<td>bad.csv</td>" in exceptions.text.split("<h2>Files rejected</h2>")[1]


def test_a_member_downloads_the_workbook_and_each_parquet_file(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "maria@example.com")
    page = client.get(BASE, headers=HTML).text
    links = re.findall(r'href="(/orgs/org_demo/reconciliation/download\?[^"]+)"', page)
    names = {re.search(r"file=([^&]+)", link.replace("&amp;", "&")).group(1) for link in links}  # type: ignore[union-attr]
    assert {"reconciliation.xlsx", "funding.parquet", "exceptions.parquet"} <= names
    for link in links:
        answer = client.get(link.replace("&amp;", "&"))
        assert answer.status_code == 200, link
        assert "attachment" in answer.headers["content-disposition"]
    funding = client.get(f"{BASE}/download?file=funding.parquet")
    rows = pq.read_table(io.BytesIO(funding.content)).to_pylist()
    assert "Fund B" in {r["vehicle_name"] for r in rows}  # the same file the workbook read
    workbook = client.get(f"{BASE}/download")
    assert workbook.content[:2] == b"PK"  # the workbook, by default


def test_downloads_of_another_organization_or_a_guessed_path_are_404(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "bea@example.com")  # admin of org_demob only
    assert client.get("/orgs/org_demob/reconciliation/download").status_code == 200
    assert client.get(f"{BASE}/download").status_code == 404
    assert client.get(f"{BASE}/download?file=funding.parquet").status_code == 404
    for guessed in (
        "../../org_demo/latest/funding.parquet",
        "..%2F..%2Forg_demo%2Flatest%2Ffunding.parquet",
        "report.json",
        "/etc/passwd",
    ):
        answer = client.get(f"/orgs/org_demob/reconciliation/download?file={guessed}")
        assert answer.status_code == 404, guessed
    for query in ("as_of=../../org_demo&run=latest", "as_of=2026-11-30&run=..", "as_of=x"):
        answer = client.get(f"/orgs/org_demob/reconciliation/download?{query}")
        assert answer.status_code == 404, query


def test_a_viewer_sees_the_pages_but_cannot_download(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "victor@example.com")
    page = client.get(BASE, headers=HTML)
    assert page.status_code == 200
    assert "/download?" not in page.text
    assert client.get(f"{BASE}/download").status_code == 403


def test_a_past_as_of_and_known_at_report_is_listed_and_opened(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    known = dt.datetime(2026, 11, 28, 8, 0, tzinfo=dt.UTC)
    with time_machine.travel(WORLD_START + dt.timedelta(hours=1), tick=False):
        past = reconcile(
            own_world.org_settings("org_demo"), as_of=KNOWN_AS_OF - dt.timedelta(days=5)
        )
        as_known = reconcile(own_world.org_settings("org_demo"), as_of=KNOWN_AS_OF, known_at=known)
    client = client_of(own_world)
    sign_in(client, "maria@example.com")
    latest = client.get(BASE, headers=HTML).text
    # the default is still the latest night; both other reports are listed
    assert "reconciliation as of 2026-11-30</h1>" in latest
    assert "<strong>known at 2026-11-28 09:00 UTC</strong>" in latest
    assert f"as_of=2026-11-25&amp;run={past.out_dir.name}" in latest
    assert f"as_of=2026-11-30&amp;run={as_known.out_dir.name}" in latest
    opened = client.get(f"{BASE}?as_of=2026-11-25&run={past.out_dir.name}", headers=HTML)
    assert "reconciliation as of 2026-11-25</h1>" in opened.text
    assert "a past as-of" in opened.text
    again = client.get(f"{BASE}/funding?as_of=2026-11-30&run={as_known.out_dir.name}", headers=HTML)
    assert "Known at 2026-11-28 08:00 UTC" in again.text
    # the download is that report's own file
    answer = client.get(
        f"{BASE}/download?as_of=2026-11-25&run={past.out_dir.name}&file=funding.parquet"
    )
    assert answer.content == (past.out_dir / "funding.parquet").read_bytes()
    assert client.get(f"{BASE}?as_of=2026-11-29", headers=HTML).status_code == 404


def test_the_morning_shows_the_health_and_the_summary_figures_in_words(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, orgs=NAMES)
    sign_in(client, "maria@example.com")
    morning = client.get("/morning", headers=HTML).text
    assert "Last good night: <strong>none yet</strong>" in morning  # 10 exceptions open
    assert '<td class="money">$110.00</td>' in morning  # the shortfall
    # the unexplained -$10.00 is said as an amount and which way, never a signed sum
    assert '<td class="money">$10.00 less at the service</td>' in morning
    assert "-$10.00</td>" not in morning
    assert 'href="/orgs/org_demo/reconciliation"' in morning
