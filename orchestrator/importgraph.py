"""The source files a module runs: its imports inside one package, followed from the source
text with `ast` (nothing is imported or executed), so that what a seal covers is found from the
code rather than kept in a list by hand.

Every import statement counts, wherever it stands (a function-level import runs as surely as a
top-level one), and importing a module runs its parent packages' `__init__.py` too, so those
count as well. Imports of modules outside the package (the standard library, dependencies) are
not followed: a seal covers this project's code, and the dependencies are pinned in
constraints.txt.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

from orchestrator.errors import InputError


def module_file(root: Path, module: str) -> Path | None:
    """Where `module` (dotted) lives under `root`: its `.py` file or its package's
    `__init__.py`; None when neither exists (a name imported from a module, not a module)."""
    base = root.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of `body`, nested ones included (in functions, classes, branches,
    handlers, match cases): an import is a statement, so no expression needs a visit."""
    stack: list[ast.stmt] = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for item in getattr(stmt, name, None) or ():
                if isinstance(item, ast.stmt):
                    stack.append(item)
                elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                    stack.extend(item.body)


def _imported(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module name an import statement of `tree` may load, absolute: for `from A import
    b`, both A and A.b (b is a submodule or a name inside A; the caller keeps what exists)."""
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                parts = package.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


# What each source file imports, by (module, file, mtime, size): a process that seals or
# verifies several suites parses each file once.
_IMPORTS: dict[tuple[str, Path, int, int], tuple[str, ...]] = {}


def _imports_of(module: str, file: Path) -> tuple[str, ...]:
    stat = file.stat()
    key = (module, file, stat.st_mtime_ns, stat.st_size)
    if (known := _IMPORTS.get(key)) is None:
        tree = ast.parse(file.read_bytes(), filename=str(file))
        known = _IMPORTS[key] = tuple(_imported(tree, module, file.name == "__init__.py"))
    return known


def module_files(root: Path, entry: str, *, package: str = "orchestrator",
                 stop: Callable[[str], bool] = lambda _: False) -> list[Path]:
    """The files of `entry` and of every module of `package` it imports, transitively, under
    `root`, sorted. A module for which `stop` is true is neither listed nor followed."""
    if module_file(root, entry) is None:
        raise InputError(f"{entry}: no such module under {root}", file=str(root))
    found: dict[str, Path] = {}
    todo = [entry]
    while todo:
        module = todo.pop()
        if module in found or stop(module) or not (
                module == package or module.startswith(package + ".")):
            continue
        file = module_file(root, module)
        if file is None:
            continue
        found[module] = file
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += _imports_of(module, file)
    return sorted(found.values())
