"""The desk in a real browser: `fundpipe desk` as a subprocess on loopback over a data folder
with two organizations, Debian's chromium driven by Playwright. Sign in, see the morning,
acknowledge one exception; a viewer cannot act; another organization's page is 404.

Screenshots of every page, at 1280×800, are kept in `.pytest_cache/desk-screens/`.
Chromium is Debian's (`/usr/bin/chromium`): `tests/make_test.sh` installs it when running as
root, and Playwright's own browser download is never used.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import time_machine
from desk_world import PASSWORD, PEOPLE, QUICK_HASHER, DeskWorld, members_toml

from fundpipe.desk import Accounts

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENS = Path(__file__).resolve().parents[2] / ".pytest_cache" / "desk-screens"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: An admin of org_demo: an admin may close and review, so only identity keeps her from
#: reviewing the month she closed.
ADA = ("ada@example.com", "Ada Admin")


@pytest.fixture(scope="module")
def served_world(desk_world: DeskWorld, tmp_path_factory: pytest.TempPathFactory) -> DeskWorld:
    """The copy of the data folder the module's desk serves, with Ada, an admin, added."""
    world = desk_world.copy(tmp_path_factory.mktemp("browser") / "data")
    Accounts(world.data / "desk" / "accounts.json", QUICK_HASHER).add(*ADA, PASSWORD)
    people = PEOPLE | {ADA[0]: (ADA[1], [("org_demo", "admin")])}
    world.members.write_text(members_toml(people), encoding="utf-8")
    return world


@pytest.fixture(scope="module")
def desk_url(served_world: DeskWorld) -> Iterator[str]:
    """`fundpipe desk` serving `served_world`, until the module ends."""
    world = served_world
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUNDPIPE_DESK_")}
    env["FUNDPIPE_DESK_MEMBERS"] = str(world.members)
    fundpipe = Path(sys.executable).with_name("fundpipe")
    process = subprocess.Popen(
        [str(fundpipe), "desk", "--port", str(port), "--data-dir", str(world.data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/sign-in", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    out = process.stdout.read() if process.stdout else ""
                    pytest.fail(f"fundpipe desk did not start: {out}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_sign_in_see_the_morning_act_and_be_refused(desk_url: str, desk_world: DeskWorld) -> None:
    assert CHROMIUM.exists(), (
        f"{CHROMIUM} is missing: apt-get install chromium (tests/make_test.sh does as root)"
    )
    from playwright.sync_api import expect, sync_playwright

    SCREENS.mkdir(parents=True, exist_ok=True)
    exception_id = desk_world.open_ids["org_demo"][0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            shot = lambda name: page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=True)  # noqa: E731

            def sign_in(email: str) -> None:
                page.goto(f"{desk_url}/morning")
                expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
                page.get_by_label("Email").fill(email)
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in", exact=True).click()

            # a preparer: the morning, the queue, one acknowledgement
            sign_in("maria@example.com")
            shot("1-sign-in-done-morning")
            expect(page.get_by_role("heading", name="The morning")).to_be_visible()
            expect(page.get_by_text("NEEDS A PERSON")).to_be_visible()
            page.get_by_role("link", name=exception_id).first.click()
            # each line of the morning opens its exception's own page; the queue is a link away
            expect(page.get_by_role("heading", name=exception_id, exact=True)).to_be_visible()
            page.get_by_role("link", name="open exceptions").first.click()
            expect(page.locator(f"tr#{exception_id}")).to_be_visible()
            shot("2-exception-queue")
            row = page.locator(f"tr#{exception_id}")
            row.get_by_placeholder("What was done").fill("investor confirmed; paid by wire")
            row.get_by_role("button", name="Acknowledge").click()
            expect(page.get_by_text(f"{exception_id} acknowledged.")).to_be_visible()
            expect(page.locator(f"tr#{exception_id}")).to_have_count(0)
            shot("3-acknowledged")
            page.get_by_role("button", name="Sign out").click()

            # a viewer sees the queue and no way to act
            sign_in("victor@example.com")
            page.goto(f"{desk_url}/orgs/org_demo/exceptions")
            expect(page.get_by_text("may look but not act")).to_be_visible()
            expect(page.get_by_role("button", name="Acknowledge")).to_have_count(0)
            shot("4-viewer-queue")
            page.get_by_role("button", name="Sign out").click()

            # another organization's member: org_demo's pages are not found
            sign_in("bea@example.com")
            answer = page.goto(f"{desk_url}/orgs/org_demo/exceptions")
            assert answer is not None
            assert answer.status == 404
            expect(page.get_by_text("No such page.")).to_be_visible()
            shot("5-other-org-404")
        finally:
            browser.close()
    assert {p.name for p in SCREENS.glob("*.png")} >= {
        "1-sign-in-done-morning.png",
        "2-exception-queue.png",
        "3-acknowledged.png",
        "4-viewer-queue.png",
        "5-other-org-404.png",
    }


def test_an_analyst_uploads_sees_every_bad_cell_at_once_fixes_it_and_follows_it(
    desk_url: str, tmp_path: Path
) -> None:
    """Issue 43's walk: a sheet with five kinds of problem (the entity typo only the service
    can tell included) is refused with all five listed and their cells marked; the fixed
    sheet goes into the inbox and its page says it waits for the night."""
    from playwright.sync_api import expect, sync_playwright
    from test_upload import CLEAN, _broken, _sheet

    SCREENS.mkdir(parents=True, exist_ok=True)
    bad = _sheet(tmp_path / "q4_browser.csv", _broken())
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    fixed = _sheet(fixed_dir / "q4_browser.csv", CLEAN)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            shot = lambda name: page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=True)  # noqa: E731
            page.goto(f"{desk_url}/morning")
            page.get_by_label("Email").fill("maria@example.com")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.get_by_role("link", name="Upload a sheet").first.click()
            expect(page.get_by_role("heading", name="upload a sheet")).to_be_visible()
            page.locator("input[type=file]").set_input_files(str(bad))
            page.get_by_role("button", name="Check and drop").click()
            expect(page.get_by_text("q4_browser.csv was not dropped")).to_be_visible()
            # six lines: the misspelt timezone is also one the distribution's rows disagree on
            listed = page.locator("#problem-list tbody tr")
            expect(listed).to_have_count(6)
            expect(listed.nth(2)).to_contain_text("ent_dmeo3")  # in row order, row 4
            for value in ("$1,000.0x", "USX", "ent_dmeo3", "America/Chicgo", "2026-13-18 10:30"):
                expect(page.locator("td.bad", has_text=value)).to_have_count(1)
            shot("6-upload-five-problems")
            page.locator("input[type=file]").set_input_files(str(fixed))
            page.get_by_role("button", name="Check and drop").click()
            expect(page.get_by_text("Checked and dropped in the inbox")).to_be_visible()
            expect(page.locator("#progress")).to_contain_text("waiting")
            shot("7-upload-dropped-waiting")
        finally:
            browser.close()


def _learned_after_the_close(world: DeskWorld) -> dt.datetime:
    """The service's answer changes a November payment after the month was closed
    (test_desk_close's change: dpmt_1, $300.00 in the closed report, now $325.00), learned
    when the month was reviewed — after its close, and already past on the desk's clock,
    which is the machine's."""
    from test_desk_close import _payment_changes

    from fundpipe.warehouse import Warehouse

    with Warehouse(world.org_settings("org_demo").local.warehouse_file).read() as con:
        row = con.execute(
            "SELECT max(event_at) FROM period_events WHERE event = 'reviewed' AND period = '2026-11'"
        ).fetchone()
    assert row is not None
    assert row[0] is not None, "November was not reviewed"
    at: dt.datetime = row[0]
    _payment_changes(world, at)
    return at


def test_the_walk_act_close_review_refuse_and_see_the_change_after_sign_off(
    desk_url: str, served_world: DeskWorld
) -> None:
    """Issue 42's walk. A preparer acknowledges one exception and assigns another; an admin
    closes November and cannot review it (the same person, by identity); a reviewer reviews
    it; a viewer cannot act; a member of org_demob gets 404 for org_demo's pages and download,
    the ids guessed or not; a change learned after the close shows as changed after sign-off;
    and the CLI's `exceptions show` and `close list` name the same people."""
    from playwright.sync_api import expect, sync_playwright
    from typer.testing import CliRunner

    from fundpipe.app.cli import app as cli

    acked, assigned = served_world.open_ids["org_demo"][1:3]
    november = f"{desk_url}/orgs/org_demo/close/2026-11"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            shot = lambda name: page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=True)  # noqa: E731

            def sign_in(email: str) -> None:
                page.goto(f"{desk_url}/morning")
                page.get_by_label("Email").fill(email)
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in", exact=True).click()
                expect(page.get_by_role("heading", name="The morning")).to_be_visible()

            def sign_out() -> None:
                page.get_by_role("button", name="Sign out").click()

            # 1. the preparer acknowledges one exception and assigns another
            sign_in("maria@example.com")
            page.goto(f"{desk_url}/orgs/org_demo/exceptions")
            row = page.locator(f"tr#{acked}")
            row.get_by_placeholder("What was done").fill("bank confirmed the return")
            row.get_by_role("button", name="Acknowledge").click()
            expect(page.get_by_text(f"{acked} acknowledged.")).to_be_visible()
            row = page.locator(f"tr#{assigned}")
            row.get_by_label(f"Owner for {assigned}").select_option(label="Rita Reviewer")
            row.get_by_role("button", name="Assign", exact=True).click()
            expect(page.locator(f"tr#{assigned}")).to_contain_text("Rita Reviewer")
            shot("8-walk-acknowledged-and-assigned")
            sign_out()

            # 2. an admin closes November over its open exceptions, and cannot review it
            sign_in(ADA[0])
            page.goto(november)
            page.get_by_label("still open").check()
            page.get_by_role("button", name="Close 2026-11").click()
            expect(page.get_by_text("Done: closed.")).to_be_visible()
            expect(page.get_by_role("button", name="Review 2026-11")).to_have_count(0)
            expect(page.locator("#prepared-it")).to_contain_text("review is by another")
            shot("9-walk-closer-cannot-review")
            sign_out()

            # 3. a reviewer, another person, reviews it
            sign_in("rita@example.com")
            page.goto(november)
            page.get_by_role("button", name="Review 2026-11").click()
            expect(page.get_by_text("Done: reviewed.")).to_be_visible()
            expect(page.locator("table").first).to_contain_text("Rita Reviewer")
            shot("10-walk-reviewed")
            sign_out()

            # 4. a viewer cannot act
            sign_in("victor@example.com")
            page.goto(november)
            expect(page.get_by_text("may look but not act")).to_be_visible()
            expect(page.get_by_role("button", name="Reopen")).to_have_count(0)
            page.goto(f"{desk_url}/orgs/org_demo/exceptions")
            expect(page.get_by_role("button", name="Assign")).to_have_count(0)
            shot("11-walk-viewer")
            sign_out()

            # 5. org_demob's member: every org_demo page and download is not found
            sign_in("bea@example.com")
            for path in (
                "/exceptions",
                f"/exceptions/{assigned}",
                "/exceptions/EX-GUESSED0000",
                "/reconciliation",
                "/reconciliation/download?file=reconciliation.xlsx",
                "/reconciliation/download?file=payments.parquet",
                "/close",
                "/close/2026-11",
                "/upload",
            ):
                answer = page.goto(f"{desk_url}/orgs/org_demo{path}")
                assert answer is not None
                assert answer.status == 404, (path, answer.status)
            shot("12-walk-other-org-404")
            sign_out()

            # 6. a change learned after the close shows as changed after sign-off
            learned = _learned_after_the_close(served_world)
            sign_in("rita@example.com")
            page.goto(f"{desk_url}/orgs/org_demo/close")
            expect(page.locator("#month-2026-11")).to_contain_text("changed after sign-off")
            page.goto(november)
            expect(page.locator("#changed")).to_contain_text("+$25.00")
            shot("13-walk-changed-after-sign-off")
        finally:
            browser.close()

    # 7. the CLI shows the same people, on a clock just after the change (this module's own
    # clock is still the morning every test starts at, before any of this happened)
    env = {"FUNDPIPE_DATA_DIR": str(served_world.data)}
    runner = CliRunner()
    with time_machine.travel(learned + dt.timedelta(minutes=1), tick=False):
        shown = runner.invoke(
            cli, ["exceptions", "show", acked, "--org", "org_demo", "--json"], env=env
        )
        listed = runner.invoke(cli, ["close", "list", "--org", "org_demo"], env=env)
    assert shown.exit_code == 0, shown.output
    by = [e["by"] for e in json.loads(shown.output)["events"]]
    assert "Maria Lopez <maria@example.com>" in by
    assert listed.exit_code == 0, listed.output
    said = " ".join(listed.stdout.split())
    assert "prepared by Ada Admin <ada@example.com>" in said
    assert "Rita Reviewer <rita@example.com>" in said
    assert "CHANGED AFTER SIGN-OFF: 1 adjustment(s), +$25.00" in said
