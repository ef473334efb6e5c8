"""Organizations as configuration: FUNDPIPE_ORGS, FUNDPIPE_ORGS_FILE, the organization read, and
each organization's own settings — through `fundpipe.orgs.org_settings`, the one way every entry
point gets them."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from fundpipe.config import Organization, Settings, grouped
from fundpipe.errors import ConfigurationError
from fundpipe.orgs import Among, org_settings, organizations, parse_orgs, pick_org
from fundpipe.sandbox import SandboxConfig, create_app


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(**grouped(data_dir=tmp_path / "data", _env_file=None, **values))  # type: ignore[call-arg]


def test_the_short_form_and_the_json_list_give_the_same_organizations() -> None:
    assert parse_orgs("org_a, org_b") == parse_orgs('["org_a", {"id": "org_b"}]')
    (org,) = parse_orgs(
        '[{"id": "org_c", "name": "Crescent Partners", "base_url": "https://eu.example.com",'
        ' "client_id": "crescent", "secret_block": "crescent-secret"}]'
    )
    assert org == Organization(
        id="org_c",
        name="Crescent Partners",
        base_url="https://eu.example.com",
        client_id="crescent",
        secret_block="crescent-secret",
    )
    assert org.label == "org_c (Crescent Partners)"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[{"name": "No Id"}]', "FUNDPIPE_ORGS entry 1 has no id"),
        ("org_a,org_a", "FUNDPIPE_ORGS entry 2 repeats the organization org_a"),
        ('[{"id": "org_a", "colour": "red"}]', "FUNDPIPE_ORGS entry 1 has unknown keys ['colour']"),
        ('[{"id": "../etc"}]', "FUNDPIPE_ORGS entry 1: id '../etc' must be letters"),
        ('[{"id": "org_a", "base_url": "ftp://x"}]', "base_url 'ftp://x' is not an http(s) URL"),
        ('{"id": "org_a"}', "FUNDPIPE_ORGS must be a JSON list"),
        ("[oops", "FUNDPIPE_ORGS is not valid JSON"),
        (" , ", "FUNDPIPE_ORGS lists no organization"),
    ],
)
def test_a_wrong_entry_is_a_configuration_error_naming_it(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_orgs(text)
    assert says in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_toml_file_lists_organizations_as_tables(tmp_path: Path) -> None:
    path = tmp_path / "orgs.toml"
    path.write_text(
        '[[organizations]]\nid = "org_a"\nname = "Alder Capital"\n\n'
        '[[organizations]]\nid = "org_b"\nsecret_block = "org-b-secret"\n',
        encoding="utf-8",
    )
    orgs = organizations(_settings(tmp_path, orgs_file=path, base_url="https://x.example"))
    assert [(o.id, o.name, o.secret_block) for o in orgs] == [
        ("org_a", "Alder Capital", None),
        ("org_b", None, "org-b-secret"),
    ]
    path.write_text('[[organizations]]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"orgs.toml entry 1 has no id"):
        organizations(_settings(tmp_path, orgs_file=path))
    path.write_text("organizations = [", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="is not valid TOML"):
        organizations(_settings(tmp_path, orgs_file=path))


def test_each_organization_gets_its_own_state_reports_and_service(tmp_path: Path) -> None:
    top = _settings(
        tmp_path,
        base_url="https://api.example.com",
        client_id="shared",
        client_secret="shared-secret",
        reports_url="https://drive.example/fp",
    )
    own = Organization(
        id="org_b", base_url="https://eu.example.com", client_id="b", secret_block="b-secret"
    )
    b = top.for_org(own, several=True)
    assert b.service.org_id == "org_b"
    assert b.local.data_dir == tmp_path / "data" / "orgs" / "org_b"
    assert b.local.ledger_file == tmp_path / "data" / "orgs" / "org_b" / "ledger.duckdb"
    assert b.local.warehouse_file == tmp_path / "data" / "orgs" / "org_b" / "warehouse.duckdb"
    assert b.local.reports_folder == tmp_path / "data" / "reports" / "org_b"
    assert b.local.reports_url == "https://drive.example/fp/org_b"
    assert (b.service.base_url, b.service.client_id, b.service.client_secret_block) == (
        "https://eu.example.com",
        "b",
        "b-secret",
    )
    assert (
        b.service.client_secret is None
    )  # its own secret comes from its block, never the shared one
    a = top.for_org(Organization(id="org_a"), several=True)
    assert (a.service.base_url, a.service.client_id, a.service.client_secret) == (
        top.service.base_url,
        "shared",
        top.service.client_secret,
    )


def test_explicit_ledger_and_warehouse_paths_serve_a_single_organization_only(
    tmp_path: Path,
) -> None:
    top = _settings(tmp_path, ledger_path=tmp_path / "l.duckdb", warehouse_path=tmp_path / "w.db")
    one = top.for_org(Organization(id="org_a"), several=False)
    assert (one.local.ledger_file, one.local.warehouse_file) == (
        tmp_path / "l.duckdb",
        tmp_path / "w.db",
    )
    with pytest.raises(ConfigurationError, match="FUNDPIPE_LEDGER_PATH"):
        top.for_org(Organization(id="org_a"), several=True)


def _service(tmp_path: Path, *, strict: bool = False, **values: object) -> tuple[Settings, object]:
    app = create_app(SandboxConfig(seed="demo", demo_orgs=2, strict_interface=strict))
    settings = _settings(
        tmp_path,
        base_url="http://sandbox.test",
        client_id="demo-client",
        client_secret="demo-secret",
        **values,
    )
    return settings, httpx.ASGITransport(app=app)


def test_without_a_list_the_organizations_come_from_the_service(tmp_path: Path) -> None:
    settings, transport = _service(tmp_path)
    orgs = organizations(settings, transport)
    assert [o.id for o in orgs] == ["org_demo", "org_demob"]
    assert all(o.name for o in orgs)


def test_an_unserved_organization_read_degrades_to_fundpipe_org_id_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings, transport = _service(tmp_path, strict=True, org_id="org_demob")
    with caplog.at_level(logging.WARNING):
        orgs = organizations(settings, transport)
    assert orgs == [Organization(id="org_demob")]
    assert "does not serve the organization read" in caplog.text
    settings = settings.updated(service={"org_id": None})
    # no FUNDPIPE_ORG_ID: the client's own organization, no X-Organization-Id header
    assert organizations(settings, transport) == [Organization(id=None)]


def test_a_configured_list_needs_no_service(tmp_path: Path) -> None:
    settings = _settings(tmp_path, orgs=json.dumps(["org_x"]))
    assert organizations(settings) == [Organization(id="org_x")]


def test_org_is_required_only_when_several_are_configured() -> None:
    one = [Organization(id="org_a")]
    two = [*one, Organization(id="org_b")]
    assert pick_org(one, None) == one[0]
    assert pick_org(two, "org_b") == two[1]
    with pytest.raises(ConfigurationError, match=r"2 organizations .*name one with --org"):
        pick_org(two, None)
    with pytest.raises(ConfigurationError, match=r"--org org_z is not a configured organization"):
        pick_org(two, "org_z")


def test_validate_without_files_checks_what_waits_in_the_organization_s_inbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from fundpipe.app.cli import app

    samples = Path(__file__).resolve().parents[2] / "data" / "samples"
    inbox = tmp_path / "data" / "orgs" / "org_b" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "q4_typo.csv").write_bytes((samples / "broken" / "negative_amount.csv").read_bytes())
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FUNDPIPE_ORGS", "org_a,org_b")
    runner = CliRunner()
    result = runner.invoke(app, ["validate", "--org", "org_b", "--format", "json"])
    assert result.exit_code == 1, result.output
    assert [f["file"].rsplit("/", 1)[-1] for f in json.loads(result.stdout)["files"]] == [
        "q4_typo.csv"
    ]
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2
    assert "name one with --org" in " ".join(result.output.split())


def test_an_organization_s_night_goes_to_its_work_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With FUNDPIPE_FAN_OUT=deployments, an entry's `work_queue` routes its `org-night` run to
    the workers of that queue (where its files are); the others go to the deployment's own."""
    import uuid
    from types import SimpleNamespace

    import prefect.deployments
    from prefect.states import Completed

    from fundpipe.app.prefect import fanout, handoff

    orgs = parse_orgs('[{"id": "org_a", "work_queue": "group-a"}, "org_b"]')
    assert [o.work_queue for o in orgs] == ["group-a", None]
    started: dict[str, str | None] = {}

    def run_deployment(name: str, **kwargs: object) -> SimpleNamespace:
        assert name == "org-night/org-night"
        params = kwargs["parameters"]
        assert isinstance(params, dict)
        started[params["org"]] = kwargs.get("work_queue_name")  # type: ignore[assignment]
        # runs filter by organization: its name (its id when it has none), and its id
        assert kwargs.get("tags") == [f"org:{params['org']}", f"org-id:{params['org']}"]
        return SimpleNamespace(id=uuid.uuid4(), state=Completed())

    monkeypatch.setattr(prefect.deployments, "run_deployment", run_deployment)
    monkeypatch.setattr(fanout, "ensure_limit", lambda name, limit: None)
    monkeypatch.setattr(fanout, "check_deployment", lambda: None)
    monkeypatch.setattr(handoff, "row_left_by", lambda flow_run_id: {})
    rows = fanout.fan_out(
        _settings(tmp_path, base_url="https://x.example"),
        orgs,
        as_of=None,
        data_dir=None,
        base_url=None,
        mode="deployments",
    ).rows
    assert started == {"org_a": "group-a", "org_b": None}
    assert [(r.organization, r.state) for r in rows] == [
        ("org_a", "Completed"),
        ("org_b", "Completed"),
    ]


def test_a_stopped_child_s_exit_code_reaches_the_parent_s_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child run on another worker that stopped (its inbox locked: Cancelled, exit 4; its
    configuration: exit 2) keeps its exit code in the parent's row; one that left none (it
    crashed) is 5, a bug's, never 3, the service's."""
    import uuid
    from types import SimpleNamespace

    import prefect.deployments
    from prefect.states import Cancelled, Failed

    from fundpipe.app.prefect import fanout, handoff

    states = {
        "org_a": Cancelled(message="inbox locked"),
        "org_b": Failed(message="no secret"),
        "org_c": Failed(message="crashed"),
    }
    left = {"org_a": {"exit_code": 4}, "org_b": {"exit_code": 2}, "org_c": {}}
    ids: dict[uuid.UUID, str] = {}

    def run_deployment(name: str, **kwargs: object) -> SimpleNamespace:
        org = kwargs["parameters"]["org"]  # type: ignore[index]
        run_id = uuid.uuid4()
        ids[run_id] = org
        return SimpleNamespace(id=run_id, state=states[org])

    monkeypatch.setattr(prefect.deployments, "run_deployment", run_deployment)
    monkeypatch.setattr(fanout, "ensure_limit", lambda name, limit: None)
    monkeypatch.setattr(fanout, "check_deployment", lambda: None)
    monkeypatch.setattr(handoff, "row_left_by", lambda run_id: left[ids[run_id]])
    rows = fanout.fan_out(
        _settings(tmp_path, base_url="https://x.example"),
        parse_orgs("org_a,org_b,org_c"),
        as_of=None,
        data_dir=None,
        base_url=None,
        mode="deployments",
    ).rows
    assert [(r.state, r.exit_code, r.message) for r in rows] == [
        ("Cancelled", 4, "inbox locked"),
        ("Failed", 2, "no secret"),
        ("Failed", 5, "crashed"),
    ]


# --- one way to an organization's settings (fundpipe.orgs.org_settings) ---------------------


def _loader(seen: list[str | None], blocks: dict[str, str]) -> Callable[[Settings], Settings]:
    """A stand-in for the shells' Prefect Secret-block loader (`blocks`: name → secret): records
    the block it was asked for and fills the secret the way `with_secret_block` does."""

    def load(settings: Settings) -> Settings:
        if settings.service.client_secret is not None or not settings.service.client_secret_block:
            return settings
        seen.append(settings.service.client_secret_block)
        value = SecretStr(blocks[settings.service.client_secret_block])
        return settings.updated(service={"client_secret": value})

    return load


def test_org_settings_asks_the_service_and_loads_each_organization_s_own_secret(
    tmp_path: Path,
) -> None:
    settings, transport = _service(tmp_path)
    seen: list[str | None] = []
    said: list[str] = []
    demob = org_settings(
        settings.updated(service={"client_secret": None, "client_secret_block": "shared"}),
        "org_demob",
        among=Among.SERVICE,
        load_secret=_loader(seen, {"shared": "demo-secret"}),
        say=said.append,
        transport=transport,
    )
    # the shared block is loaded before the service is asked which organizations there are
    # (the read authenticated with it)
    assert seen == ["shared"]
    assert demob.org.id == "org_demob"
    assert demob.settings.local.data_dir == tmp_path / "data" / "orgs" / "org_demob"
    assert demob.settings.service.client_secret == SecretStr("demo-secret")
    with pytest.raises(ConfigurationError, match=r"2 organizations .*name one with --org"):
        org_settings(settings, None, among=Among.SERVICE, load_secret=None, transport=transport)

    own = org_settings(
        _settings(
            tmp_path,
            base_url="https://x.example",
            client_secret="shared-secret",
            orgs='["org_a", {"id": "org_b", "secret_block": "org-b-secret"}]',
        ),
        "org_b",
        among=Among.SERVICE,
        load_secret=_loader(seen, {"org-b-secret": "b's own"}),
    )
    # an organization naming its own block never borrows the shared secret
    assert seen == ["shared", "org-b-secret"]
    assert own.settings.service.client_secret == SecretStr("b's own")
    assert said == []  # nothing was in the single-organization layout


def test_org_settings_from_local_folders_never_asks_the_service(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = _settings(tmp_path, base_url="http://127.0.0.1:9")  # nothing listens there
    # no organization configured and no folder yet: the single-organization layout as it is
    single = org_settings(settings, "org_x", among=Among.LOCAL, load_secret=None)
    assert (single.org.id, single.settings.local.data_dir) == ("org_x", data)
    with pytest.raises(ConfigurationError, match="--org org_y is not FUNDPIPE_ORG_ID"):
        org_settings(
            settings.updated(service={"org_id": "org_x"}),
            "org_y",
            among=Among.LOCAL,
            load_secret=None,
        )
    for name in ("org_a", "org_b"):
        (data / "orgs" / name).mkdir(parents=True)
    b = org_settings(settings, "org_b", among=Among.LOCAL, load_secret=None)
    assert b.settings.local.warehouse_file == data / "orgs" / "org_b" / "warehouse.duckdb"
    with pytest.raises(ConfigurationError, match="name one with --org"):
        org_settings(settings, None, among=Among.LOCAL, load_secret=None)
    # a single-organization layout is moved once a list names its organizations
    (data / "inbox").mkdir()
    (data / "inbox" / "q4.csv").write_text("a\n", encoding="utf-8")
    said: list[str] = []
    org_settings(
        settings.updated(service={"orgs": "org_a"}),
        "org_a",
        among=Among.LOCAL,
        load_secret=None,
        say=said.append,
    )
    assert (data / "orgs" / "org_a" / "inbox" / "q4.csv").exists()
    assert len(said) == 1


def test_a_fan_out_child_takes_its_organization_as_the_parent_named_it(tmp_path: Path) -> None:
    """A child reads its own environment: its configured entry, else the id it was given."""
    from fundpipe.app.prefect.fanout import _org_settings

    top = _settings(tmp_path, base_url="http://127.0.0.1:9", client_secret="s")
    org, child = _org_settings(top, "org_read", orgs_on_host=1, several=True)
    assert (org, child.service.org_id) == (Organization(id="org_read"), "org_read")
    org, child = _org_settings(top, "", orgs_on_host=1, several=False)
    assert (org.folder, child.local.data_dir) == ("default", tmp_path / "data" / "orgs" / "default")
    named = top.updated(service={"orgs": '[{"id": "org_a", "name": "Alder"}]'})
    org, child = _org_settings(named, "org_a", orgs_on_host=1, several=False)
    assert org.label == "org_a (Alder)"


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Replace `fundpipe.orgs.org_settings` by a recorder that stops the caller there: how each
    entry point asked (where the organizations come from, which secret loader)."""
    import fundpipe.orgs

    asked: list[tuple[str, str | None]] = []

    def recorder(settings: Settings, wanted: object = None, **kwargs: object) -> object:
        among = kwargs.get("among", Among.SERVICE)
        loader = kwargs.get("load_secret")
        asked.append(
            (
                str(among) if isinstance(among, Among) else "a list",
                getattr(loader, "__qualname__", None),
            )
        )
        raise ConfigurationError("stopped where the settings are made")

    monkeypatch.setattr(fundpipe.orgs, "org_settings", recorder)
    return asked


@pytest.mark.parametrize(
    ("args", "among", "loader"),
    [
        (["ingest", "--dry-run"], "service", "with_secret_block"),
        (["sync"], "service", "with_secret_block"),
        (["validate"], "configured", None),
        (["reconcile"], "local", None),
        # a reading command finds every organization, then takes each from the list found
        (["exceptions", "list"], "a list", None),
        (["exceptions", "show", "EX-1"], "local", None),
        (["close", "list"], "a list", None),
        (["close", "verify", "2026-11"], "local", None),
        (["close", "--list"], "a list", None),  # the spellings before `close list`, `verify`
        (["close", "2026-11", "--verify"], "local", None),
        (["backup"], "a list", None),
        (["config"], "a list", None),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_every_cli_command_gets_its_organization_s_settings_from_org_settings(
    args: list[str],
    among: str,
    loader: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each command's organization comes from `fundpipe.orgs.org_settings`, the commands that
    talk to the service with the one Prefect Secret-block loader: a command that built its
    settings another way (and so, perhaps, without the block's secret) fails here."""
    from typer.testing import CliRunner

    from fundpipe.app.cli import app

    for name in ("FUNDPIPE_CLIENT_SECRET", "FUNDPIPE_ORGS_FILE", "FUNDPIPE_ORG_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "http://127.0.0.1:9")  # never reached
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET_BLOCK", "fundpipe-client-secret")
    monkeypatch.setenv("FUNDPIPE_ORGS", "org_a")
    asked = _record(monkeypatch)
    result = CliRunner().invoke(app, args)
    assert asked == [(among, loader)], result.output
    assert result.exit_code == 2
    assert "stopped where the settings are made" in result.output


def test_every_flow_gets_its_organization_s_settings_from_org_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flows' ingest and sync (`one_org`), inbox and reconcile flows, a fan-out's child and
    the watcher's inboxes."""
    from fundpipe.app.embedded import one_org
    from fundpipe.app.prefect import flows
    from fundpipe.app.prefect.fanout import _org_settings
    from fundpipe.app.prefect.watch import inboxes

    settings = _settings(tmp_path, base_url="http://127.0.0.1:9", orgs="org_a")
    for name in ("FUNDPIPE_ORG_ID", "FUNDPIPE_ORGS_FILE", "FUNDPIPE_LEDGER_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "http://127.0.0.1:9")  # never reached
    monkeypatch.setenv("FUNDPIPE_ORGS", "org_a")
    from fundpipe.app.prefect import steps

    for shell in (flows, steps):  # outside a flow run: a plain logger
        monkeypatch.setattr(shell, "get_run_logger", lambda: logging.getLogger("test"))
    asked = _record(monkeypatch)
    with pytest.raises(ConfigurationError), one_org(settings, None, print):
        pass
    state = flows._inbox_flow(str(tmp_path / "data"), None)
    assert "stopped where the settings are made" in (state.message or "")
    with pytest.raises(ConfigurationError):
        flows._reconcile_flow(str(tmp_path / "data"), None, None)
    with pytest.raises(ConfigurationError):
        _org_settings(settings, "org_a", orgs_on_host=1, several=False)
    with pytest.raises(ConfigurationError):
        inboxes(settings)
    assert asked == [
        ("service", "with_secret_block"),
        ("a list", "with_secret_block"),
        ("local", None),
        ("configured", "with_secret_block"),
        ("a list", None),
    ]


def test_settings_for_org_is_called_by_org_settings_alone() -> None:
    """One way to an organization's settings: `Settings.for_org` is called only by
    `fundpipe.orgs.org_settings`, the one-time layout move only while finding the organizations,
    and the Secret-block loader is never called by name — entry points hand it to
    `org_settings` as `load_secret`."""
    import ast

    src = Path(__file__).resolve().parents[2] / "src" / "fundpipe"
    calls: dict[str, set[str]] = {"for_org": set(), "migrate_layout": set()}
    loader_uses: set[str] = set()
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(src))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                    if name in calls:
                        calls[name].add(f"{where}:{func.name}")
                    if name == "with_secret_block":
                        loader_uses.add(f"{where}:{func.name} calls it")
                    for kw in node.keywords:
                        named = (
                            isinstance(kw.value, ast.Name) and kw.value.id == "with_secret_block"
                        )
                        if named and kw.arg != "load_secret":
                            loader_uses.add(f"{where}:{func.name} passes it as {kw.arg}")
    assert calls == {
        "for_org": {"orgs.py:org_settings"},
        "migrate_layout": {"orgs.py:find_organizations"},
    }
    assert loader_uses == set()
