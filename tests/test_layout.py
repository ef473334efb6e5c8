"""The house tells the data path: the README's tree matches the code, the layers only point
down (app/ on top), no cycles.

Like the CLI's commands (tests/app/test_cli.py), the layout in the README is checked against the
code, so a new package or a moved module fails here until the README says where it lives.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "fundpipe"

#: Past this many lines a module says in its docstring why it is not split ("~400" in STYLE.md).
MAX_LINES = 420
#: The sandbox is reworked (and split) on its own; its modules answer to tests/sandbox.
SIZE_EXEMPT = ("sandbox/",)


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


MODULES = dict(_modules())


def _readme_tree() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### How the code is laid out", 1)[1]
    block = re.search(r"```\n(src/fundpipe/\n.*?)```", section, re.DOTALL)
    assert block, "the layout section has no src/fundpipe/ tree"
    lines = block.group(1).splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def test_the_readme_tree_lists_every_package_and_top_level_module() -> None:
    listed = _readme_tree()
    # packages and the package-data folders (schemas/, samples/) alike
    actual = {p.name + "/" for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")} | {
        p.name for p in SRC.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    }
    assert len(listed) == len(set(listed)), "a name is listed twice"
    assert set(listed) == actual


def test_the_data_path_packages_are_listed_in_the_order_data_flows() -> None:
    listed = [name for name in _readme_tree() if name.endswith("/")]
    path = ["sheets/", "validate/", "plan/", "submit/", "sync/", "warehouse/", "reconcile/"]
    assert [name for name in listed if name in path] == path
    assert listed[-1] == "app/"


def _imports(path: Path, *, eager_only: bool) -> Iterator[str]:
    """Modules of fundpipe imported by ``path`` (module level only when ``eager_only``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[ast.AST] = []
    if eager_only:
        for node in tree.body:
            is_type_checking = (
                isinstance(node, ast.If)
                and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"
            )
            if not is_type_checking:
                nodes.extend(ast.walk(node))
    else:
        nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif (
            # a string import: importlib.import_module("fundpipe...") or __import__("fundpipe...")
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        for name in names:
            if name in MODULES:
                yield name


def test_nothing_below_app_imports_app() -> None:
    offenders = {
        (name, imported)
        for name, path in MODULES.items()
        if not name.startswith("fundpipe.app")
        for imported in _imports(path, eager_only=False)
        if imported.startswith("fundpipe.app")
    }
    assert offenders == set()


@pytest.mark.parametrize("eager_only", [True, False], ids=["module-level", "lazy-and-string"])
def test_module_imports_have_no_cycles(eager_only: bool) -> None:
    """No cycle, counting function-level (lazy) imports and string imports too: a cycle hidden
    in a function (`fanout → samples → flows → fanout` through `import_module`) is one still."""
    graph = {
        name: {i for i in _imports(path, eager_only=eager_only) if i != name}
        for name, path in MODULES.items()
    }
    # a package's __init__ importing its own submodules is how a package exposes them
    for name in graph:
        graph[name] = {i for i in graph[name] if not (name and i.startswith(name + "."))}
    cycles = _cycles(graph)
    assert cycles == [], cycles


#: The layers, bottom first. A module imports only from its own unit or from a lower layer, and
#: the units of one layer import none of each other. A unit is a top-level module or a package of
#: src/fundpipe/ (a submodule listed on its own is a unit of its own: the longest name wins).
#: The night's readers sit on top of what they read: `night` runs the steps, `nights` every
#: organization's night, `morning` reads the nights; `reports` (the writers) sits below the steps
#: that write reports, and `Walk`, the paging stop rule, is the client's.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "keys",
        "sensitive",
        "cents",
        "words",
        "enums",
        "timerules",
        "progress",
        "resources",
        "arrowpandas",
        "machine",
        "clientpolicy",
        "faces",
    ),
    ("vocabulary", "client", "sandbox"),
    ("errors",),
    ("config",),
    ("layout", "sheets"),
    ("validate", "plan"),
    ("warehouse",),
    ("reports",),
    ("submit",),
    ("record", "orgs"),
    ("reconcile",),
    ("sync",),
    ("night",),
    ("nights",),
    ("morning",),
    # the desk sits on the whole library, beside the app in the tree; the app's CLI starts it
    ("desk",),
    ("app",),
)
_LAYER_OF = {unit: n for n, layer in enumerate(LAYERS) for unit in layer}


def _unit(module: str) -> str | None:
    """The unit of LAYERS a module of fundpipe belongs to (None: the package itself)."""
    parts = module.split(".")[1:]
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in _LAYER_OF:
            return ".".join(parts[:end])
    return parts[0] if parts else None


def _arrows_up(imports: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports (module → module it imports) that do not point to a lower layer."""
    found = []
    for module, imported in sorted(imports.items()):
        here = _unit(module)
        for other in sorted(imported):
            there = _unit(other)
            if here is None or there is None or there == here:
                continue
            if _LAYER_OF.get(there, len(LAYERS)) >= _LAYER_OF.get(here, -1):
                found.append((module, other))
    return found


def test_every_unit_has_one_layer() -> None:
    units = {
        p.name if p.is_dir() else p.stem
        for p in SRC.iterdir()
        if (p.is_dir() and (p / "__init__.py").is_file())
        or (p.suffix == ".py" and p.name != "__init__.py")
    }
    listed = [unit for layer in LAYERS for unit in layer]
    assert len(listed) == len(set(listed)), "a unit is in two layers"
    assert units - set(listed) == set(), "a package or module has no layer"


def test_imports_only_point_down_the_layers() -> None:
    """Every import — at module level, in a function, under TYPE_CHECKING or by name — points to
    a lower layer (LAYERS): an arrow back up (`reports` reading the `nights` above it, `submit`
    taking `sync`'s stop rule) fails here."""
    imports = {name: set(_imports(path, eager_only=False)) for name, path in MODULES.items()}
    assert _arrows_up(imports) == []
    # the check itself sees an arrow back up
    assert _arrows_up(
        {
            "fundpipe.reports.morning": {"fundpipe.nights", "fundpipe.reports.publish"},
            "fundpipe.submit.snapshot": {"fundpipe.sync.incremental", "fundpipe.client"},
        }
    ) == [
        ("fundpipe.reports.morning", "fundpipe.nights"),
        ("fundpipe.submit.snapshot", "fundpipe.sync.incremental"),
    ]


def test_nothing_below_app_imports_prefect() -> None:
    """Only the Prefect shell (`fundpipe.app.prefect`) and the CLI commands that start flows use
    Prefect; the library and the client never import it."""
    offenders = {
        name
        for name, path in MODULES.items()
        if not name.startswith("fundpipe.app") and "prefect" in _third_party_imports(path)
    }
    assert offenders == set()


def test_the_app_is_two_shells() -> None:
    """`app/` holds the CLI shell, the Prefect shell and what both share, nothing else."""
    app = SRC / "app"
    shells = {p.name for p in app.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert shells == {"cli", "prefect"}
    shared = {p.name for p in app.glob("*.py")}
    assert shared == {"__init__.py", "__main__.py", "embedded.py", "outcomes.py", "samples.py"}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in MODULES.values()
        if not any(str(p.relative_to(SRC)).startswith(x) for x in SIZE_EXEMPT)
    ],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_a_long_module_says_why(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines <= MAX_LINES:
        return
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "Longer than ~400 lines" in docstring, f"{path.name}: {lines} lines and no reason"


def _third_party_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_library_returns_data_and_only_app_renders() -> None:
    """Below app/ nothing imports rich or typer, and nothing calls print()."""
    offenders = []
    for name, path in MODULES.items():
        if name.startswith("fundpipe.app"):
            continue
        shells = _third_party_imports(path) & {"rich", "typer"}
        prints = [
            node.lineno
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ]
        if shells or prints:
            offenders.append((name, sorted(shells), prints))
    assert offenders == []


def test_only_app_starts_the_embedded_sandbox() -> None:
    """The sandbox's server is started by app/embedded.py alone (tests and benchmarks aside)."""
    starters = {
        name
        for name, path in MODULES.items()
        if not name.startswith("fundpipe.sandbox")
        and re.search(r"\bSandboxServer\b|\brun_server\b", path.read_text(encoding="utf-8"))
    }
    assert starters <= {"fundpipe.app.embedded", "fundpipe.app.cli.sandbox"}


def test_the_readme_app_tree_matches_the_code() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### How the code is laid out", 1)[1]
    block = re.search(r"```\n(app/\n.*?)```", section, re.DOTALL)
    assert block, "the layout section has no app/ tree"
    listed = [
        line.split()[0]
        for line in block.group(1).splitlines()[1:]
        if line.startswith("  ") and not line.startswith("   ")
    ]
    app = SRC / "app"
    actual = {p.name + "/" for p in app.iterdir() if (p / "__init__.py").is_file()} | {
        p.name for p in app.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    }
    assert sorted(listed) == sorted(actual)


#: Calls that change what the whole process shares: the cyclic garbage collector, Arrow's
#: allocator, loggers' levels, handlers and filters. ("gc", name): only as `gc.name(...)`.
PROCESS_WIDE = {
    ("gc", "disable"),
    ("gc", "enable"),
    ("gc", "freeze"),
    ("gc", "unfreeze"),
    ("gc", "set_threshold"),
    (None, "set_memory_pool"),
    (None, "setLevel"),
    (None, "addHandler"),
    (None, "addFilter"),
    (None, "basicConfig"),
    (None, "dictConfig"),
}
#: The library's functions that make such a choice for an entry point to call.
ENTRY_POINT_CHOICES = {"use_system_allocator", "quiet_fastexcel"}
#: The sandbox is the service's stand-in, a server of its own: it filters its own uvicorn logger.
OWN_PROCESS = ("fundpipe.app", "fundpipe.sandbox")


def _process_wide_calls(path: Path) -> Iterator[tuple[str | None, int, str]]:
    """(enclosing top-level function or None at import, line, call) of every process-wide call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for top in tree.body:
        owner = top.name if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) else None
        for node in ast.walk(top):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            base = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            name = node.func.attr
            if (base, name) in PROCESS_WIDE or (None, name) in PROCESS_WIDE:
                yield owner, node.lineno, f"{base or '…'}.{name}"


def test_only_entry_points_make_process_wide_choices() -> None:
    """GC pausing or freezing, the allocator and logging setup are chosen by the CLI and the
    flows (during a fan-out organizations share one process in threads: a library's
    `gc.enable()` would end another organization's pause). Below app/ such a call sits only in
    a function made for an entry point to call, and only app/ calls those."""
    offenders = [
        (name, line, call)
        for name, path in MODULES.items()
        if not name.startswith(OWN_PROCESS)
        for owner, line, call in _process_wide_calls(path)
        if owner not in ENTRY_POINT_CHOICES
    ]
    assert offenders == []
    callers = {
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
        in ENTRY_POINT_CHOICES
    }
    assert callers, "the entry points make these choices"
    assert {c for c in callers if not c.startswith("fundpipe.app.")} == set()


def test_the_readme_says_how_tests_are_laid_out() -> None:
    """Each folder of tests/ is a package of src/fundpipe/ or one the README names."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders = {
        p.name
        for p in (ROOT / "tests").iterdir()
        if p.is_dir() and not p.name.startswith((".", "_"))
    }
    named = {f for f in folders - packages if f"`tests/{f}/`" in readme}
    assert folders - packages == named, "a tests/ folder neither a package nor in the README"
    assert "a folder per package of `src/fundpipe/`" in readme


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _fundpipe_names(tree: ast.Module) -> set[str]:
    """The names a test module binds to fundpipe's modules and objects by importing them."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if a.name.startswith("fundpipe")
            }
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fundpipe"):
            names |= {a.asname or a.name for a in node.names}
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _private_patches(source: str) -> Iterator[tuple[int, str]]:
    """Each `monkeypatch.setattr`/`delattr`, `patch(…)` or `patch.object(…)` in a test module's
    `source` that replaces a leading-underscore name of fundpipe: (line, the name)."""
    tree = ast.parse(source)
    ours = _fundpipe_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in {"setattr", "delattr", "patch", "object"}:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            target = first.value  # "fundpipe.module.name"
            if target.startswith("fundpipe.") and _private(target.rsplit(".", 1)[-1]):
                yield node.lineno, target
        elif len(node.args) > 1 and _root(first) in ours:
            attr = node.args[1]
            if (
                isinstance(attr, ast.Constant)
                and isinstance(attr.value, str)
                and _private(attr.value)
            ):
                yield node.lineno, f"{ast.unparse(first)}.{attr.value}"


def test_no_test_patches_a_private_name() -> None:
    """Tests replace what a caller could replace (a parameter, a hook, a public name), never a
    module's `_private` function or constant: a private name may be renamed or inlined, and a
    test patching it then passes while testing nothing."""
    offenders = [
        (str(path.relative_to(ROOT)), line, name)
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, name in _private_patches(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    found = list(
        _private_patches(
            "import fundpipe.reports.sheetxml as sheetxml\n"
            "def test(monkeypatch):\n"
            "    monkeypatch.setattr(sheetxml, '_buffer', None)\n"
            "    monkeypatch.setattr('fundpipe.client._requester._sleep', None)\n"
            "    monkeypatch.setattr(sheetxml, 'public', None)\n"
        )
    )
    assert found == [(3, "sheetxml._buffer"), (4, "fundpipe.client._requester._sleep")]


#: The packages whose `__init__` names what other packages may use (`__all__`); a name there
#: that is a module of the package (`fundpipe.client.errors`, `fundpipe.submit.ingest`) is public
#: as a whole.
FACED = ("client", "submit", "reconcile", "sync", "reports", "validate", "warehouse")


def _face(package: str) -> set[str]:
    """The names in `fundpipe.<package>.__all__`, read from its source (nothing imported)."""
    tree = ast.parse((SRC / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def _behind_faces(imports: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, module it imports) where the second is a module of a faced package other than
    the first's own, and not a public one (named in the package's `__all__`)."""
    faces = {package: _face(package) for package in FACED}
    found = set()
    for module, imported in imports.items():
        for other in imported:
            parts = other.split(".")
            if len(parts) < 3 or parts[1] not in faces or module.startswith(f"fundpipe.{parts[1]}"):
                continue
            if parts[2] not in faces[parts[1]]:
                found.add((module, other))
    return found


def test_packages_are_used_through_their_faces() -> None:
    """Another package's code imports `from fundpipe.warehouse import Warehouse`, never
    `from fundpipe.warehouse.file import Warehouse`: a package's modules may then be split,
    merged or renamed without touching its callers."""
    imports = {name: set(_imports(path, eager_only=False)) for name, path in MODULES.items()}
    found = _behind_faces(imports)
    assert found == set(), "import these from the package instead"
    # the check itself sees a way around a face, and lets a public module and a package's own
    # modules through
    assert _behind_faces(
        {
            "fundpipe.sync.pull": {"fundpipe.warehouse.file", "fundpipe.warehouse"},
            "fundpipe.night": {"fundpipe.submit.ingest", "fundpipe.client.errors"},
            "fundpipe.warehouse.known": {"fundpipe.warehouse.file"},
        }
    ) == {("fundpipe.sync.pull", "fundpipe.warehouse.file")}


@pytest.mark.parametrize("package", FACED)
def test_every_name_of_a_face_is_there_and_said_in_its_docstring(package: str) -> None:
    """Each public name resolves (its module is imported when it is first asked for) and the
    package's docstring gives it a line; a name not in the face is an AttributeError."""
    module = importlib.import_module(f"fundpipe.{package}")
    docstring = module.__doc__ or ""
    for name in module.__all__:
        assert getattr(module, name) is not None
        if package != "client":  # the client's docstring lists its surface in one sentence
            assert f"- `{name}` — " in docstring, name
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")  # noqa: B009 - a missing name, on purpose


@pytest.mark.parametrize(
    ("package", "heavy", "name"),
    [
        ("submit", "fundpipe.submit.ingest", "ingest"),
        ("warehouse", "duckdb", "Warehouse"),
        ("reconcile", "duckdb", "reconcile"),
    ],
)
def test_importing_a_package_imports_none_of_its_modules(
    package: str, heavy: str, name: str
) -> None:
    """A package's face costs nothing until a name is used (`fundpipe validate` loads no
    warehouse, client or Prefect by naming `fundpipe.submit`'s inbox suffixes); using the name
    imports its module."""
    probe = (
        f"import sys; import fundpipe.{package} as p; print({heavy!r} in sys.modules); "
        f"p.{name}; print({heavy!r} in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "True"]
