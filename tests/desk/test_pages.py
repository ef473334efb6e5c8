"""The morning and the exception queue, as a signed-in person sees and works them; an
acknowledgement on the desk is the one `fundpipe exceptions show` prints."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Callable

from desk_world import KNOWN_AS_OF, WORLD_START, DeskWorld, csrf_of, sign_in
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fundpipe.app.cli import app as cli
from fundpipe.reconcile import list_exceptions, reconcile
from fundpipe.warehouse import Warehouse

HTML = {"accept": "text/html"}


def test_the_morning_names_each_organization_with_a_line_per_thing_to_do(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "maria@example.com")
    page = client.get("/morning", headers=HTML)
    assert page.status_code == 200
    assert "NEEDS A PERSON" in page.text
    assert "Last night: 2026-11-30" in page.text
    ids = desk_world.open_ids["org_demo"]
    assert ids
    for exception_id in ids:  # each line links to where it is dealt with
        assert f'href="/orgs/org_demo/exceptions/{exception_id}"' in page.text
    assert page.text.count("<li>") == len(ids)
    assert "org_demob" not in page.text  # maria is not its member


def test_the_morning_calls_each_organization_by_its_configured_name(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    names = '[{"id": "org_demo", "name": "Alder Capital"}, {"id": "org_demob", "name": "Birch"}]'
    client = client_of(desk_world, orgs=names)
    sign_in(client, "maria@example.com")
    morning = client.get("/morning", headers=HTML)
    assert "<h2>Alder Capital" in morning.text
    assert "Birch" not in morning.text
    queue = client.get("/orgs/org_demo/exceptions", headers=HTML)
    assert "Alder Capital: open exceptions" in queue.text


def test_signed_in_but_in_no_organization_sees_nothing(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "nobody@example.com")
    page = client.get("/morning", headers=HTML)
    assert page.status_code == 200
    assert "not a member of any organization" in page.text
    assert "org_demo" not in page.text
    assert "EX-" not in page.text
    assert client.get("/orgs/org_demo/exceptions", headers=HTML).status_code == 404


def test_a_preparer_acknowledges_and_the_cli_shows_who(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "maria@example.com")
    exception_id = own_world.open_ids["org_demo"][0]
    queue = client.get("/orgs/org_demo/exceptions", headers=HTML)
    assert f'id="{exception_id}"' in queue.text
    done = client.post(
        f"/orgs/org_demo/exceptions/{exception_id}/acknowledge",
        data={"csrf_token": token, "note": "investor confirmed; paid by wire"},
        headers=HTML,
    )
    assert done.status_code == 200
    assert f"{exception_id} acknowledged." in done.text
    assert f'id="{exception_id}"' not in done.text  # it left the open queue
    shown = CliRunner().invoke(
        cli,
        ["exceptions", "show", exception_id, "--org", "org_demo", "--json"],
        env={"FUNDPIPE_DATA_DIR": str(own_world.data)},
    )
    assert shown.exit_code == 0, shown.output
    event = json.loads(shown.output)["events"][-1]
    assert event["event"] == "acknowledged"
    assert event["by"] == "Maria Lopez <maria@example.com>"
    assert event["os_user"] == "desk:local"
    assert event["note"] == "investor confirmed; paid by wire"
    # the other organization's copy of the same exception is untouched
    other = CliRunner().invoke(
        cli,
        ["exceptions", "list", "--org", "org_demob", "--state", "open", "--json"],
        env={"FUNDPIPE_DATA_DIR": str(own_world.data)},
    )
    assert exception_id in other.output
    acts = [line for line in _log(own_world) if line["event"] == "acknowledged"]
    assert acts == [
        {**acts[0], "email": "maria@example.com", "org": "org_demo", "detail": exception_id}
    ]


def test_a_viewer_sees_the_queue_and_cannot_act(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "victor@example.com")
    queue = client.get("/orgs/org_demo/exceptions", headers=HTML)
    assert queue.status_code == 200
    assert "may look but not act" in queue.text
    assert "/acknowledge" not in queue.text
    exception_id = own_world.open_ids["org_demo"][0]
    refused = client.post(
        f"/orgs/org_demo/exceptions/{exception_id}/acknowledge",
        data={"csrf_token": token, "note": "sneaky"},
    )
    assert refused.status_code == 403
    assert f'id="{exception_id}"' in client.get("/orgs/org_demo/exceptions", headers=HTML).text
    assert csrf_of(client, "/morning") == token


def _log(world: DeskWorld) -> list[dict[str, str]]:
    path = world.data / "desk" / "desk.log"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_damaged_warehouse_is_one_line_naming_it(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    sign_in(client, "maria@example.com")
    warehouse = own_world.org_settings("org_demo").local.warehouse_file
    warehouse.write_bytes(b"this is not a DuckDB file" * 100)
    page = client.get("/orgs/org_demo/exceptions", headers=HTML)
    assert page.status_code == 500
    assert str(warehouse) in page.text
    assert "Traceback" not in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def _many_open(world: DeskWorld, extra: int) -> int:
    """`extra` more sheet rows whose payments the service does not have, reconciled: each an
    open exception. Returns how many are open now."""
    settings = world.org_settings("org_demo")
    wh = Warehouse(settings.local.warehouse_file)
    with wh.write() as con:
        con.execute(
            "INSERT INTO ledger_payments SELECT one.* REPLACE ('dpmt_gone_' || i AS payment_id, "
            '10000 + i AS "row", 100 + i AS amount_cents) '
            "FROM (SELECT * FROM ledger_payments WHERE payment_id IS NOT NULL LIMIT 1) one, "
            "range(?) t(i)",
            [extra],
        )
    reconcile(settings, as_of=KNOWN_AS_OF, clock=lambda: WORLD_START + dt.timedelta(days=2))
    return len(list_exceptions(wh, state="open"))


def test_a_night_of_many_exceptions_is_a_morning_to_read_and_a_queue_in_pages(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    """A bad night (here 130 more open exceptions) lists the first 20 on the morning and counts
    the rest by kind, each count a link to the queue of that kind; the queue shows 100 a page,
    its filters kept from page to page."""
    total = _many_open(own_world, 130)
    assert total > 130
    client = client_of(own_world)
    sign_in(client, "maria@example.com")
    morning = client.get("/morning", headers=HTML).text
    assert morning.count("<li>") == 20
    more = re.search(r'<li class="more">(.*?)</li>', morning, re.S)
    assert more, morning[:3000]
    assert f"and {total - 20:,} more in the queue" in more[1]
    counts = re.findall(r'href="/orgs/org_demo/exceptions\?kind=(\w+)">([\d,]+) ', more[1])
    assert sum(int(n.replace(",", "")) for _, n in counts) == total - 20
    assert f"{total:,} open exceptions" in morning

    first = client.get("/orgs/org_demo/exceptions", headers=HTML).text
    assert first.count('<tr id="EX-') == 100
    assert f"1–100 of {total:,} open exceptions" in first
    assert 'rel="prev"' not in first
    nxt = re.search(r'href="\?([^"]*)" rel="next"', first)
    assert nxt
    assert nxt[1] == "page=2"
    second = client.get(f"/orgs/org_demo/exceptions?{nxt[1]}", headers=HTML).text
    assert second.count('<tr id="EX-') == total - 100
    assert 'rel="next"' not in second
    first_ids = set(re.findall(r'<tr id="(EX-\w+)"', first))
    assert not first_ids & set(re.findall(r'<tr id="(EX-\w+)"', second))
    # a filter and an order are kept on the next page's link
    kind, _ = counts[0]
    sorted_pages = client.get(
        f"/orgs/org_demo/exceptions?kind={kind}&sort=amount", headers=HTML
    ).text
    link = re.search(r'href="\?([^"]*)" rel="next"', sorted_pages)
    assert link, "the 130 sheet rows the service lacks are more than a page of one kind"
    assert html.unescape(link[1]) == f"kind={kind}&sort=amount&page=2"
    assert client.get("/orgs/org_demo/exceptions?page=0", headers=HTML).status_code == 400
    past = client.get("/orgs/org_demo/exceptions?page=9", headers=HTML).text
    assert "past the last of the" in past
