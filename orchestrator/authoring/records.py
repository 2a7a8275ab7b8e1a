"""The records file `suite add-tasks` reads: TOML, or JSON when its name ends in .json, checked
whole against orchestrator/schemas/records.schema.json (docs/records.example.json is one),
then for what a schema cannot say (which kinds a record's fields make)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.authoring._common import bad as _bad
from orchestrator.errors import InputError
from orchestrator.fsutil import read_json, read_toml
from orchestrator.sandbox.shared_checks import repo_path, schema_problem

SCHEMA_FILE = "records.schema.json"


@dataclass(frozen=True)
class Record:
    """One line of work: an issue and its fix (locate, e2e-retrieval), a symbol (references),
    a seed (impact), and per kind the task's own commands and published figures. `file` and
    `key` (record[i]) name it in errors."""

    file: str
    key: str
    id: str
    kinds: tuple[str, ...]
    issue: str | None = None
    title: str | None = None
    ticket: str | None = None
    e2e_ticket: str | None = None
    fix: tuple[str, ...] = ()
    symbol: str | None = None
    seed: str | None = None
    accept_unreachable: tuple[str, ...] = ()
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)
    published: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_records(path: Path) -> tuple[str, list[Record]]:
    """(language, records), or one InputError naming its key (record[i].KEY). A title or
    ticket with fix commits makes locate and e2e-retrieval, a symbol references, a seed impact;
    every key is described in the schema."""
    data = read_json(path) if path.suffix == ".json" else read_toml(path)
    if problem := schema_problem(data, SCHEMA_FILE):
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.where)
        raise _bad(key.lstrip(".") or "(top level)", problem.expected, problem.found, path)
    language = data.get("language", "csharp")
    records, seen = [], set()
    for i, body in enumerate(data["record"]):
        records.append(record := _record(path, i, body, language))
        if record.id in seen:
            raise _bad(f"record[{i}].id", "an id no other record has", record.id, path)
        seen.add(record.id)
    return language, records


def _record(path: Path, i: int, body: dict[str, Any], language: str) -> Record:
    """One record, its keys already checked against the schema: the kinds its fields make."""
    def bad(key: str, expected: str, found: object) -> InputError:
        return _bad(f"record[{i}].{key}", expected, found, path)

    fixes = body.get("fix", [])
    ticket = body.get("ticket") or body.get("title")
    possible = [*(("locate", "e2e-retrieval") if fixes and ticket else ()),
                *(("references",) if "symbol" in body else ()),
                *(("impact",) if "seed" in body else ())]
    kinds = body.get("kinds", possible)
    if not possible:
        raise bad("kinds", "a record that makes a task: a title or ticket with fix commits "
                  "(locate, e2e-retrieval), a symbol (references) or a seed (impact)", None)
    if unmade := [k for k in kinds if k not in possible]:
        raise bad("kinds", f"kinds this record's fields make: {possible}", unmade[0])
    for key in ("accept_unreachable", "commands", "published"):
        if stray := [k for k in body.get(key, ()) if k not in kinds]:
            raise bad(f"{key}.{stray[0]}", f"one of the kinds this record makes: {kinds}",
                      stray[0])
    if "impact" in kinds and language != "csharp":
        raise bad("seed", "no seed: the impact rule declares C# types only", body["seed"])
    if "seed" in body:
        repo_path(f"{path} record[{i}]", "seed", body["seed"])
    return Record(file=str(path), key=f"record[{i}]", id=body["id"], kinds=tuple(kinds),
                  issue=body.get("issue"), title=body.get("title"), ticket=ticket,
                  e2e_ticket=body.get("e2e_ticket") or ticket, fix=tuple(fixes),
                  symbol=body.get("symbol"), seed=body.get("seed"),
                  accept_unreachable=tuple(body.get("accept_unreachable", ())),
                  commands=body.get("commands", {}), published=body.get("published", {}))
