"""Loading a suite: `suites/NAME/suite.toml`, checked against
orchestrator/schemas/suite.schema.json and then for what a schema cannot say (the name is the
folder's, the baseline and the tool under test are among the arms, the corpus and the arms
exist in the project, the edge tasks have their oracle and bands), with its task files.

`suites/NAME/suite.toml` declares the corpus, the arms, the baseline, the tool under test, the
reps, the time limit and the choices the methodology leaves open (the impact precision cap,
where ranked answers are cut, the bands, and in `[grading]` the grading rules).
`suites/NAME/tasks/*.toml` holds one task each (read by task_file.py): it may
override the suite's grading rules in its own `[grading]` and carry, per arm, the figures a
publication reported (`[published.ARM]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator import corpus
from orchestrator.sandbox import runtimes
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import EDGE_KINDS
from orchestrator.predictions.model import SuiteFacts, load_predictions
from orchestrator.sandbox.shared_checks import check_schema, number, repo_path
from orchestrator.untrusted.strings import portable_bytes
from orchestrator.suite.model import (
    COMPARABLE_KEY, COMPARABLE_SHAPE, EDGE_BAND_KEYS, FAMILIES, GRADING_KEYS,
    ORACLE_KEYS, ORACLE_OPTIONAL_KEYS, TEST_FILES, TRUTH_RULES,
    GradingRules, OracleRef, Suite, Task, comparable_seals)
from orchestrator.suite.task_file import bad as _bad, check_rules, grading, load_task

# What suite.toml may hold, checked before anything is read from it.
SCHEMA = "suite.schema.json"


def known_suites(suites_dir: Path) -> list[str]:
    """The suites: folders holding a suite.toml (suites/tools holds scripts, not a suite)."""
    return sorted(p.parent.name for p in suites_dir.glob("*/suite.toml")) \
        if suites_dir.is_dir() else []


def load_suite(suites_dir: Path, name: str) -> Suite:
    folder = suites_dir / name
    if not folder.is_dir():
        known = known_suites(suites_dir)
        raise InputError(f"unknown suite {name!r}", fix=f"known suites: {', '.join(known)}")
    path = folder / "suite.toml"
    data = check_schema(path, read_toml(path), SCHEMA)
    if data["name"] != name:
        raise _bad(path, "name", repr(name), data["name"])
    arms = data["arms"]
    if twice := sorted({a for a in arms if arms.count(a) > 1}):
        raise _bad(path, "arms", "each arm listed once", twice[0])
    if data["baseline"] not in arms:
        raise _bad(path, "baseline", f"one of the suite's arms {arms}", data["baseline"])
    tool = data.get("tool_under_test")
    if tool is not None and (tool not in arms or tool == data["baseline"]):
        raise _bad(path, "tool_under_test", f"one of the suite's arms {arms} other than the "
                   f"baseline {data['baseline']!r}", tool)
    if COMPARABLE_KEY in data and comparable_seals(data[COMPARABLE_KEY]) is None:
        raise _bad(path, COMPARABLE_KEY, COMPARABLE_SHAPE, data[COMPARABLE_KEY])
    bands = data["bands"]
    _check_project(path, suites_dir.parent, data["corpus"], arms)
    oracle = oracle_ref(path, data.get("oracle"))
    declared = grading(path, data.get("grading", {}))
    rules = GradingRules().over(declared)
    check_rules(path, rules, declared)
    tasks = tuple(load_task(p) for p in sorted((folder / "tasks").glob("*.toml")))
    if not tasks:
        raise InputError(f"{folder / 'tasks'}: the suite has no tasks", file=str(folder))
    _check_commands(suites_dir.parent, tasks, arms)
    for task in tasks:
        check_rules(task.path, rules.over(task.grading), task.grading)
        if strangers := sorted(set(task.published) - set(arms)):
            raise _bad(task.path, f"published.{strangers[0]}", f"one of the suite's arms "
                       f"{arms}", strangers[0])
    if edge_tasks := [t for t in tasks if t.kind in EDGE_KINDS]:
        if oracle is None or not oracle.edges:
            raise _bad(path, "oracle.edges", f"true: task {edge_tasks[0].id} is graded against "
                       "the oracle's edges", None if oracle is None else oracle.edges)
        if missing_bands := sorted(EDGE_BAND_KEYS - set(bands)):
            raise _bad(path, f"bands.{missing_bands[0]}", "a fraction from 0 to 1 (the suite "
                       "has edge tasks)", None)
    facts = SuiteFacts(arms, data["baseline"], {t.kind for t in tasks}, {t.id for t in tasks})
    return Suite(name=name, path=folder, corpus=data["corpus"], arms=tuple(arms),
                 baseline=data["baseline"], reps=data["reps"], timeout_s=float(data["timeout_s"]),
                 precision_cap=data["precision_cap"], top_k=data["top_k"],
                 bands={k: float(v) for k, v in bands.items()}, tasks=tasks, oracle=oracle,
                 tool_under_test=tool,
                 families_not_attempted=families(path, data.get("families_not_attempted", {})),
                 grading=rules, grading_declared=tuple(k for k in GRADING_KEYS if k in declared),
                 truth_rule=truth_rule(path, data.get("truth_rule")),
                 test_files=data.get("test_files", TEST_FILES[0]),
                 truth_rule_version=truth_rule_version(path, data),
                 runtime=runtime(path, data.get("runtime"), arms),
                 predictions=load_predictions(folder, facts))


def truth_rule(path: Path, value: Any) -> str | None:
    """The suite's declared truth rule (suite.toml `truth_rule`), or None if it declares none."""
    if value is not None and value not in TRUTH_RULES:
        raise _bad(path, "truth_rule", f"one of {list(TRUTH_RULES)}", value)
    return value


def truth_rule_version(path: Path, data: dict[str, Any]) -> int | None:
    """The version of the rules that made the suite's truth (`truth_rule_version`, read only
    beside `truth_rule`), or None if it records none."""
    value = data.get("truth_rule_version")
    if value is not None and "truth_rule" not in data:
        raise _bad(path, "truth_rule_version", "absent (it is read only beside truth_rule)",
                   value)
    if value is not None:
        number(path, "truth_rule_version", value, "a whole number, 1 or more", integer=True,
               minimum=1)
    return value


def runtime(path: Path, table: Any, arms: list[str]) -> runtimes.Choice:
    if table is not None and (wrong := runtimes.problem(table, arms)):
        raise _bad(path, *wrong)
    return runtimes.choice(table)


def families(path: Path, table: Any) -> dict[str, tuple[str, str]]:
    if not isinstance(table, dict):
        raise _bad(path, "families_not_attempted", "a table of families", table)
    out = {}
    for family, entry in table.items():
        key = f"families_not_attempted.{family}"
        if family not in FAMILIES:
            raise _bad(path, key, f"one of {list(FAMILIES)}", family)
        if not isinstance(entry, dict) or set(entry) != {"reason", "source"} or not all(
                isinstance(v, str) and v.strip() for v in entry.values()):
            raise _bad(path, key, "a table with a non-empty reason and source", entry)
        out[family] = (entry["reason"], entry["source"])
    return out


def oracle_ref(path: Path, table: Any) -> OracleRef | None:
    if table is None:
        return None
    if not isinstance(table, dict) or not ORACLE_KEYS <= set(table) <= (
            ORACLE_KEYS | ORACLE_OPTIONAL_KEYS) or not all(
            isinstance(table[k], str) and table[k] for k in ORACLE_KEYS):
        raise _bad(path, "oracle", f"a table with {sorted(ORACLE_KEYS)} (strings) and optionally "
                   f"{sorted(ORACLE_OPTIONAL_KEYS)}", table)
    if not isinstance(edges := table.get("edges", False), bool):
        raise _bad(path, "oracle.edges", "true or false", edges)
    project = "." if table["project"] == "." else repo_path(path, "oracle.project",
                                                             table["project"])
    return OracleRef(arm=table["arm"], project=project, edges=edges)


def _check_project(path: Path, project: Path, corpus_id: str, arms: list[str]) -> None:
    """The corpus and arms a suite names exist in its project (the folder above suites/,
    holding corpus.lock and arms/). A sealed suite copied out on its own, as `score` reads
    one, has no project: the run it is scored with recorded both."""
    lock = project / corpus.LOCK_NAME
    if not lock.is_file():
        return
    if corpus_id not in (known := corpus.load_lock(lock)):
        raise _bad(path, "corpus", f"one of the ids in {lock}: {sorted(known)}", corpus_id)
    for arm in arms:
        if not (spec := project / "arms" / f"{arm}.toml").is_file():
            raise _bad(path, "arms", f"arms with a spec file ({spec} is missing)", arm)


def _check_commands(project: Path, tasks: Iterable[Task], arms: list[str]) -> None:
    """Each task's [commands.ARM] names one of the suite's arms, and (where the project's arm
    specs are at hand) a command-line arm that attempts the task's kind: an MCP arm sends one
    tools/call, it runs no command; an arm that declares the kind not attempted runs none."""
    for task in tasks:
        for arm in task.commands:
            key = f"commands.{arm}"
            if arm not in arms:
                raise _bad(task.path, key, f"one of the suite's arms {arms}", arm)
            spec = project / "arms" / f"{arm}.toml"
            if not spec.is_file():
                continue
            data = read_toml(spec)
            if data.get("protocol", "cli") != "cli":
                raise _bad(task.path, key, f"a command-line arm ({spec} has protocol = "
                           f"{data.get('protocol')!r}: it sends a tools/call, not a command)", arm)
            if task.kind not in data.get("tasks", {}):
                raise _bad(task.path, key, f"an arm that attempts {task.kind} tasks ({spec} has "
                           f"no [tasks.{task.kind}])", arm)


def check_truth_at_pin(suite: Suite, pristine: Path) -> None:
    """Every truth path (and impact seed) is a file tracked at the pinned commit."""
    with clean_git() as git:
        listed = git.run("ls-tree", "-r", "-z", "--name-only", "HEAD", cwd=pristine).stdout
    tracked = {portable_bytes(name) for name in listed.split(b"\0") if name}
    for task in suite.tasks:
        for rel in task.truth_paths():
            if rel not in tracked:
                raise _bad(task.path, "truth" if rel != task.input.get("seed") else "input.seed",
                           f"a file tracked at the pin of corpus {suite.corpus!r}", rel)
