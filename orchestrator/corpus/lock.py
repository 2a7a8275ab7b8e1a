"""corpus.lock: the pinned corpora, checked against orchestrator/schemas/corpus-lock.schema.json,
then for what a schema cannot say (a table name is an id equal to its `id`, builtin names)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.fsutil import duplicate_toml_key
from orchestrator.settings import Settings
from orchestrator.sandbox.shared_checks import load_schema, schema_problem

LOCK_NAME = "corpus.lock"
SCHEMA_FILE = "corpus-lock.schema.json"
FIELDS = tuple(load_schema(SCHEMA_FILE)["$defs"]["pin"]["properties"])
BUILTIN_SCHEME = "builtin:"
BUILTINS = ("demo",)

_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
_HEADER = re.compile(r"\s*\[\s*(?:\"([^\"]+)\"|([A-Za-z0-9_-]+))\s*\]\s*(?:#.*)?")



@dataclass(frozen=True)
class CorpusPin:
    """One corpus as corpus.lock pins it. A proposed corpus without a sha cannot be fetched;
    one with a sha is a disclosed substitute, fetched and run like a registered one."""

    id: str
    repo: str
    url: str
    sha: str | None
    license: str
    kind: str
    status: str
    note: str

    @property
    def builtin(self) -> str | None:
        """The embedded corpus this pin names (`builtin:demo`), or None for a remote one."""
        return self.url.removeprefix(BUILTIN_SCHEME) if self.url.startswith(BUILTIN_SCHEME) \
            else None

    def fetch_hint(self, force: bool = False) -> str:
        """The command that fetches this pin, offline path first: most hosts that run
        sandbench reach no git host, and a bare mirror or clone brought there serves."""
        again = " --force" if force else ""
        if self.builtin is not None:
            return f"sandbench corpus fetch {self.id}{again}"
        return (f"sandbench corpus fetch {self.id}{again} --from PATH/TO/MIRROR (a local clone, "
                f"bare mirror or bundle of {self.repo}; with network access, leave out --from "
                f"to fetch {self.url})")


def lock_path(settings: Settings) -> Path:
    return settings.project_root / LOCK_NAME


def fetch_hint(settings: Settings, corpus_id: str) -> str:
    """What fetches the corpus a suite names, from the project's lock."""
    pins = load_lock(lock_path(settings))
    return pins[corpus_id].fetch_hint() if corpus_id in pins else \
        f"pin {corpus_id!r} in {LOCK_NAME}, then fetch it"


def load_lock(path: Path) -> dict[str, CorpusPin]:
    """Parse and check corpus.lock; any problem is one InputError naming file, table and key."""
    path = Path(path)
    return parse_lock(path, read_lock_text(path))


def read_lock_text(path: Path) -> str:
    """The lock's text, or one InputError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"{path}: cannot read the corpus lock", why=err.strerror,
                         fix="run from the checkout, or pass --lock", file=str(path)) from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: does not parse: not UTF-8 text ({err.reason} at byte "
                         f"{err.start})", file=str(path)) from err


def parse_lock(path: Path, text: str) -> dict[str, CorpusPin]:
    """The pins of the lock text `text`, checked as load_lock checks them (errors name `path`)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _duplicate_table(path, text) or duplicate_toml_key(path, text, err) or InputError(
            f"{path}: not valid TOML: {err}", fix="fix the syntax at the position named",
            file=str(path)) from err
    if problem := schema_problem(data, SCHEMA_FILE):
        table, key = (None, *problem.where)[-2:]
        raise InputError.bad_value(where(path, text, table, str(key)), problem.key,
                                   problem.expected, problem.found)
    return {table: _pin(path, text, table, body) for table, body in data.items()
            if table != "version"}


def _pin(path: Path, text: str, table: str, body: dict[str, Any]) -> CorpusPin:
    """One table, its fields already checked against the schema: what the schema cannot say."""
    def bad(key: str, expected: str, found: object) -> InputError:
        return InputError.bad_value(where(path, text, table, key), f"{table}.{key}",
                                    expected, found)

    if not _ID.fullmatch(table):
        raise bad("id", "a table name of lower-case letters, digits and dashes", table)
    if body["id"] != table:
        raise bad("id", f"the table name {table!r}", body["id"])
    url = body["url"]
    if url.startswith(BUILTIN_SCHEME) and url.removeprefix(BUILTIN_SCHEME) not in BUILTINS:
        raise bad("url", "one of " + ", ".join(BUILTIN_SCHEME + b for b in BUILTINS), url)
    return CorpusPin(id=table, repo=body["repo"], url=url, sha=body.get("sha"),
                     license=body["license"], kind=body["kind"], status=body["status"],
                     note=body["note"])


def where(path: Path, text: str, table: str | int | None, key: str) -> str:
    """`file:line` of `key` in `[table]` (top level if None), else of the table's header."""
    current: str | None = None
    header_line: int | None = None
    key_line = re.compile(rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for line_no, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.fullmatch(line):
            current = header.group(1) or header.group(2)
            if header_line is None and current == (key if table is None else table):
                header_line = line_no
        elif current == table and key_line.match(line):
            return f"{path}:{line_no}"
    return f"{path}:{header_line}" if header_line else str(path)


def _duplicate_table(path: Path, text: str) -> InputError | None:
    """A corpus declared twice is a TOML error; name it as the duplicate id it is."""
    seen: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.fullmatch(line):
            name = header.group(1) or header.group(2)
            if name in seen:
                return InputError(
                    f"{path}:{line_no}: {name}.id: duplicate id {name!r} "
                    f"(first declared at line {seen[name]})",
                    fix="give each corpus one table", file=str(path), key=f"{name}.id",
                    expected="a unique id", found=name, line=line_no)
            seen[name] = line_no
    return None


def pin_for(pins: Mapping[str, CorpusPin], corpus_id: str, lock: Path) -> CorpusPin:
    """The pin for `corpus_id`, or an InputError listing the known ids."""
    if corpus_id not in pins:
        raise InputError(f"no corpus {corpus_id!r} in {lock}",
                         fix="known corpora: " + (", ".join(sorted(pins)) or "none"),
                         file=str(lock), key=corpus_id)
    return pins[corpus_id]

