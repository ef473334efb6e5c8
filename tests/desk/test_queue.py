"""The exception queue as a person works it: filters and sorts that change what is shown, an
exception's page showing its history as `fundpipe exceptions show` prints it, and the acts —
assign, assign the ticked, comment — each recorded with the signed-in person, refused to a
viewer, to another organization's member and for an assignee who is not a member."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

from desk_world import DeskWorld, sign_in
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fundpipe.app.cli import app as cli
from fundpipe.reconcile import list_exceptions
from fundpipe.record import Record, read_decisions
from fundpipe.vocabulary import ExceptionRecord, kind_words
from fundpipe.warehouse import Warehouse

HTML = {"accept": "text/html"}
QUEUE = "/orgs/org_demo/exceptions"
ROW = re.compile(r'<tr id="(EX-[^"]+)">')
MARIA = "Maria Lopez <maria@example.com>"
VICTOR = "Victor Viewer <victor@example.com>"


def _shown(client: TestClient, query: str = "") -> list[str]:
    """The ids of the queue's rows, in the order shown."""
    page = client.get(f"{QUEUE}{query}", headers=HTML)
    assert page.status_code == 200, page.text
    return ROW.findall(page.text)


def _open(world: DeskWorld) -> dict[str, ExceptionRecord]:
    wh = Warehouse(world.org_settings("org_demo").local.warehouse_file)
    return {e.id: e for e in list_exceptions(wh, state="open")}


def _show(world: DeskWorld, exception_id: str, *args: str) -> Any:
    said = CliRunner().invoke(
        cli,
        ["exceptions", "show", exception_id, "--org", "org_demo", *args],
        env={"FUNDPIPE_DATA_DIR": str(world.data)},
    )
    assert said.exit_code == 0, said.output
    return json.loads(said.output) if "--json" in args else said.output


def test_filters_and_sorts_change_what_the_queue_shows(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    sign_in(client, "maria@example.com")
    found = _open(desk_world)
    everything = _shown(client)
    assert sorted(everything) == sorted(found)

    kinds = {e.kind for e in found.values()}
    assert len(kinds) > 1  # else a kind filter could not show less
    kind = found[everything[0]].kind
    assert _shown(client, f"?kind={kind}") == [i for i in everything if found[i].kind == kind]
    assert (
        f'<option value="{kind}" selected>{kind_words(kind)}</option>'
        in client.get(f"{QUEUE}?kind={kind}", headers=HTML).text
    )

    assert _shown(client, "?owner=unassigned") == everything  # nobody owns any yet
    assert _shown(client, "?owner=Somebody+Else") == []
    assert _shown(client, "?age=7") == []  # every one was found on the last night
    assert (
        "No open exception matches these filters" in client.get(f"{QUEUE}?age=7", headers=HTML).text
    )

    by_amount = _shown(client, "?sort=amount")
    sizes = [abs(found[i].amount_cents or 0) for i in by_amount]
    assert sizes == sorted(sizes, reverse=True)
    by_kind = _shown(client, "?sort=kind")
    words = [kind_words(found[i].kind).lower() for i in by_kind]
    assert words == sorted(words)
    assert sorted(by_amount) == sorted(by_kind) == sorted(everything)
    assert by_amount != everything or by_kind != everything  # a sort that changed the order

    bad = client.get(f"{QUEUE}?sort=colour", headers=HTML)
    assert bad.status_code == 400
    assert "sort='colour' is not one of age, amount, kind" in html.unescape(bad.text)
    assert "Traceback" not in bad.text


def test_assign_and_bulk_assign_are_recorded_with_the_person_and_filter_by_owner(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "maria@example.com")
    first, second, third, *_ = own_world.open_ids["org_demo"]
    queue = client.get(QUEUE, headers=HTML).text
    assert '<option value="victor@example.com">Victor Viewer</option>' in queue
    assert "bea@example.com" not in queue  # not a member here: not offered

    one = client.post(
        f"{QUEUE}/{first}/assign", data={"csrf_token": token, "to": "victor@example.com"}
    )
    assert one.status_code == 200
    assert f"{first} assigned." in one.text
    ticked = client.post(
        f"{QUEUE}/bulk-assign",
        data={"csrf_token": token, "to": "maria@example.com", "exception_id": [second, third]},
    )
    assert ticked.status_code == 200
    assert f"{second}, {third} assigned." in ticked.text

    assert _shown(client, f"?owner={VICTOR}") == [first]
    assert sorted(_shown(client, f"?owner={MARIA}")) == sorted([second, third])
    assert not {first, second, third} & set(_shown(client, "?owner=unassigned"))
    for exception_id, owner in ((first, VICTOR), (second, MARIA), (third, MARIA)):
        event = _show(own_world, exception_id, "--json")["events"][-1]
        assert (event["event"], event["assignee"], event["by"], event["os_user"]) == (
            "assigned",
            owner,
            MARIA,
            "desk:local",
        )
    record = Record(own_world.org_settings("org_demo").local.record_location)
    assigned = [d for d in read_decisions(record) if d.decision == "assigned"]
    assert sorted(d.rows["exception_events"][0]["exception_id"] for d in assigned) == sorted(
        [first, second, third]
    )


def test_a_comment_is_in_the_history_the_page_and_the_cli_show(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "maria@example.com")
    exception_id = own_world.open_ids["org_demo"][0]
    done = client.post(
        f"{QUEUE}/{exception_id}/comment",
        data={"csrf_token": token, "note": "asked the bank for the trace"},
    )
    assert done.status_code == 200
    assert f"{exception_id} commented on." in done.text
    assert f"History of {exception_id}" in done.text  # back on the exception's page
    printed = _show(own_world, exception_id)
    cells = [
        html.unescape(c)
        for c in re.findall(r"<td[^>]*>([^<]*)</td>", done.text.split("History of")[-1])
    ]
    assert "commented" in cells
    assert "asked the bank for the trace" in cells
    assert MARIA in cells
    for cell in filter(None, cells):  # the page says what `exceptions show` prints
        assert cell in printed, cell
    event = _show(own_world, exception_id, "--json")["events"][-1]
    assert (event["event"], event["by"], event["os_user"], event["note"]) == (
        "commented",
        MARIA,
        "desk:local",
        "asked the bank for the trace",
    )
    assert exception_id in _shown(client)  # a comment leaves it open
    empty = client.post(f"{QUEUE}/{exception_id}/comment", data={"csrf_token": token, "note": " "})
    assert empty.status_code == 400
    assert "A comment needs its text." in empty.text


def test_an_assignee_who_is_not_a_member_is_refused_and_nothing_is_recorded(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "maria@example.com")
    first, second, *_ = own_world.open_ids["org_demo"]
    before = _show(own_world, first, "--json")["events"]
    for to in ("bea@example.com", "stranger@example.com", ""):  # another org's member, nobody
        one = client.post(f"{QUEUE}/{first}/assign", data={"csrf_token": token, "to": to})
        assert one.status_code == 400, to
        assert "only to a member of this organization" in one.text
        ticked = client.post(
            f"{QUEUE}/bulk-assign",
            data={"csrf_token": token, "to": to, "exception_id": [first, second]},
        )
        assert ticked.status_code == 400, to
    guessed = client.post(
        f"{QUEUE}/bulk-assign",
        data={"csrf_token": token, "to": "maria@example.com", "exception_id": [first, "EX-NOPE"]},
    )
    assert guessed.status_code == 404
    assert _show(own_world, first, "--json")["events"] == before  # nothing was assigned
    assert first in _shown(client, "?owner=unassigned")


def test_a_viewer_sees_an_exception_s_history_and_may_not_act(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    token = sign_in(client, "victor@example.com")
    exception_id = own_world.open_ids["org_demo"][0]
    page = client.get(f"{QUEUE}/{exception_id}", headers=HTML)
    assert page.status_code == 200
    assert f"History of {exception_id}" in page.text
    assert "opened" in page.text
    assert "may look but not act" in page.text
    assert "<form" not in page.text.split("</header>")[-1]  # no act offered
    assert 'form="bulk"' not in client.get(QUEUE, headers=HTML).text
    for act, data in (
        (f"{exception_id}/assign", {"to": "victor@example.com"}),
        (f"{exception_id}/comment", {"note": "sneaky"}),
        ("bulk-assign", {"to": "victor@example.com", "exception_id": exception_id}),
    ):
        refused = client.post(f"{QUEUE}/{act}", data={"csrf_token": token, **data})
        assert refused.status_code == 403, act
        assert "Your role here may not" in refused.text
    assert [e["event"] for e in _show(own_world, exception_id, "--json")["events"]] == ["opened"]


def test_another_organizations_exception_or_a_guessed_one_is_404(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    exception_id = own_world.open_ids["org_demo"][0]
    maria = client_of(own_world)
    sign_in(maria, "maria@example.com")
    assert maria.get(f"{QUEUE}/EX-NOPE", headers=HTML).status_code == 404
    assert maria.get(f"/orgs/org_demob/exceptions/{exception_id}", headers=HTML).status_code == 404
    bea = client_of(own_world)
    token = sign_in(bea, "bea@example.com")  # org_demob's admin: the same ids, her own copy
    assert bea.get(f"/orgs/org_demob/exceptions/{exception_id}", headers=HTML).status_code == 200
    page = bea.get(f"{QUEUE}/{exception_id}", headers=HTML)
    assert page.status_code == 404
    assert exception_id not in page.text
    answer = bea.post(
        f"{QUEUE}/{exception_id}/comment", data={"csrf_token": token, "note": "mine now"}
    )
    assert answer.status_code == 404
    assert [e["event"] for e in _show(own_world, exception_id, "--json")["events"]] == ["opened"]


def test_an_act_without_the_csrf_token_is_refused(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    sign_in(client, "maria@example.com")
    exception_id = own_world.open_ids["org_demo"][0]
    for act, data in (
        (f"{exception_id}/assign", {"to": "maria@example.com"}),
        (f"{exception_id}/comment", {"note": "no token"}),
        ("bulk-assign", {"to": "maria@example.com", "exception_id": exception_id}),
    ):
        assert client.post(f"{QUEUE}/{act}", data=data).status_code == 403, act
    assert [e["event"] for e in _show(own_world, exception_id, "--json")["events"]] == ["opened"]
