"""The desk in a real browser: `fundpipe desk` as a subprocess on loopback over a data folder
with two organizations, Debian's chromium driven by Playwright. Sign in, see the morning,
acknowledge one exception; a viewer cannot act; another organization's page is 404.

Screenshots of every page, at 1280×800, are kept in `.pytest_cache/desk-screens/`.
Chromium is Debian's (`/usr/bin/chromium`): `tests/make_test.sh` installs it when running as
root, and Playwright's own browser download is never used.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from desk_world import PASSWORD, DeskWorld

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


@pytest.fixture(scope="module")
def desk_url(desk_world: DeskWorld, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`fundpipe desk` serving a copy of the data folder, until the module ends."""
    world = desk_world.copy(tmp_path_factory.mktemp("browser") / "data")
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
