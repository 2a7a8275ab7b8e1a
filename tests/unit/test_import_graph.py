"""The shape of `orchestrator/`: no import cycle (imports under `if TYPE_CHECKING:` included: a
cycle that only the type checker follows still ties the modules together), no module over
MAX_LINES lines, no import of another module's private name, the run never loads the scorer,
and the spec modules stay free of the engine. Read from the sources' AST (imports inside
functions count; for what a module loads, imports under `if TYPE_CHECKING:` do not, they never
run)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(tree: ast.Module, this: str, is_package: bool, known: set[str],
             type_only: bool = False) -> set[str]:
    """The modules of `known` that `tree` imports when it runs, and with `type_only` also those
    it imports for the type checker alone."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = this.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # a submodule by name, else a name of the module
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in known and m != this}


def graph(sources: dict[str, tuple[str, bool]], type_only: bool = False) -> dict[str, set[str]]:
    """module -> the modules it imports, for sources given as name -> (text, is_package)."""
    known = set(sources)
    return {name: imported(ast.parse(text), name, is_package, known, type_only)
            for name, (text, is_package) in sources.items()}


def package_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in sorted(PACKAGE.rglob("*.py"))}


def package_graph(type_only: bool = False) -> dict[str, set[str]]:
    return graph(package_sources(), type_only)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return sorted(groups)


def loaded_by(edges: dict[str, set[str]], start: str) -> set[str]:
    """Everything importing `start` runs: its imports, theirs, and every parent package."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(edges.get(name, ()))
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    return seen - {start}


# Past this a module holds more than one idea: split it in the change that grows it.
MAX_LINES = 450


def test_the_package_has_no_import_cycle_type_only_imports_included() -> None:
    assert cycles(package_graph(type_only=True)) == []


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(PACKAGE.rglob("*.py"))}
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}


def private_imports(tree: ast.Module, this: str, modules: set[str]) -> list[str]:
    """`module.name` for every private name (one leading underscore) `tree` imports from a
    module of this package: what a module keeps private is free to change under its callers.
    A private submodule is its package's own: modules of that package may import it."""
    return [f"{node.module}.{alias.name}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orchestrator")
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.startswith("__")
            and not (f"{node.module}.{alias.name}" in modules
                     and (this == node.module or this.startswith(f"{node.module}.")))]


def test_no_module_imports_a_private_name_of_another() -> None:
    sources = package_sources()
    found = {name: private_imports(ast.parse(text), name, set(sources))
             for name, (text, _) in sources.items()}
    assert {name: names for name, names in found.items() if names} == {}


def test_a_private_import_is_found_and_a_package_may_use_its_private_module() -> None:
    tree = ast.parse("from orchestrator.run import _Run, RunContext\n"
                     "from orchestrator import __version__\n"
                     "from orchestrator.cli import _usage\n")
    modules = {"orchestrator.run", "orchestrator.cli._usage"}
    assert private_imports(tree, "orchestrator.cli.main", modules) == ["orchestrator.run._Run"]
    assert private_imports(tree, "orchestrator.score", modules) == [
        "orchestrator.run._Run", "orchestrator.cli._usage"]


def test_a_cycle_is_found_and_a_type_only_one_when_asked() -> None:
    sources = {"p": ("", True), "p.a": ("from p.b import X", False),
               "p.b": ("from p import a\n", False),
               "p.c": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from p import a\n", False),
               "p.d": ("from p import c\n", False)}
    sources["p.a"] = ("from p.b import X\nfrom p import d\n", False)
    assert cycles(graph(sources)) == [["p.a", "p.b"]]
    assert "p.a" not in graph(sources)["p.c"]
    assert cycles(graph(sources, type_only=True)) == [["p.a", "p.b", "p.c", "p.d"]]


def test_a_lazy_import_inside_a_function_still_counts() -> None:
    edges = graph({"p": ("", True), "p.a": ("def f():\n    from p import b\n", False),
                   "p.b": ("from . import a\n", False)})
    assert cycles(edges) == [["p.a", "p.b"]]


def test_the_run_does_not_load_the_scorer() -> None:
    edges = package_graph()
    stages = [m for m in edges if m.startswith("orchestrator.run.")]
    assert "orchestrator.run.runner" in stages
    loaded = set().union(*(loaded_by(edges, m) for m in stages))
    assert sorted(m for m in loaded if m.startswith("orchestrator.score")) == []


@pytest.mark.parametrize("module", ["orchestrator.arms", "orchestrator.sandbox.workfs",
                                    "orchestrator.sandbox.spec", "orchestrator.kinds",
                                    "orchestrator.line_index", "orchestrator.suite",
                                    "orchestrator.run.document"])
def test_spec_modules_load_neither_the_runtime_nor_the_engine(module: str) -> None:
    loaded = loaded_by(package_graph(), module)
    assert not loaded & {"orchestrator.sandbox.container", "orchestrator.sandbox.selfcheck",
                         "orchestrator.engine", "orchestrator.run.runner"}, sorted(loaded)


@pytest.mark.parametrize("script", sorted(p.stem for p in
                                          (PACKAGE.parent / "benchmarks").glob("*.py")
                                          if p.stem != "__init__"))
def test_every_benchmark_script_imports(script: str) -> None:
    """scripts/bench is not run by the test suite: a renamed module must still fail here."""
    importlib.import_module(f"benchmarks.{script}")
