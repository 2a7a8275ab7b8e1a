"""Sealed task suites: tasks with their truth, a preregistration, and a manifest that hashes
every input before any arm runs, so a number can be traced to exactly what produced it.

`suites/NAME/suite.toml` declares the corpus, the arms, the baseline, the tool under test, the
reps, the time limit and the choices the methodology leaves open (the impact precision cap,
where ranked answers are cut, the bands, and in `[grading]` the grading rules).
`suites/NAME/tasks/*.toml` holds one task each (read by orchestrator/task_files.py): it may
override the suite's grading rules in its own `[grading]` and carry, per arm, the figures a
publication reported (`[published.ARM]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator import corpus, runtimes
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import EDGE_KINDS
from orchestrator.predictions.model import SuiteFacts, load_predictions
from orchestrator.shared_checks import number, repo_path
from orchestrator.untrusted.strings import portable_bytes
from orchestrator.suite_model import (
    BAND_KEYS, COMMAND_KEYS, COMMAND_OUTPUTS, CORPUS_ROOT, DECIMAL, EDGE_BAND_KEYS,
    FAMILIES, GRADING_CHOICES, GRADING_KEYS, GradingRules, LANGUAGES, MANIFEST,
    OPTIONAL_SUITE_KEYS, OPTIONAL_TASK_KEYS, ORACLE_KEYS, ORACLE_OPTIONAL_KEYS, OracleRef,
    PARSERS_PACKAGE, PREREGISTRATION, PUBLISHED_KEYS, PUBLISHED_OPTIONAL_KEYS, RECORDS_DIR,
    Published, SCORER_ENTRY, SCRIPT_PLACEHOLDER, SCRIPT_PRELUDE, SUITE_KEYS, Suite, TASK_ID,
    TASK_KEYS, TEST_FILES, TRUTH_DIR, TRUTH_KEYS, TRUTH_RULES, Task, TaskCommand, VERDICT_NAMES)
from orchestrator.suite_model import COMPARABLE_KEY, COMPARABLE_SHAPE, comparable_seals
from orchestrator.task_files import bad as _bad
from orchestrator.task_files import check_rules, grading, load_task
from orchestrator.sealing import (
    SealDifference, corpus_pin, every_scorer_source, manifest_sha256, parser_module,
    scorer_sources, seal, sealed_inputs, verify_seal)

# The model, one task file's reading and the seal live in modules of their own; callers reach
# them here too.
__all__ = [
    "BAND_KEYS", "COMMAND_KEYS", "COMMAND_OUTPUTS", "CORPUS_ROOT", "DECIMAL",
    "EDGE_BAND_KEYS", "FAMILIES", "GRADING_CHOICES", "GRADING_KEYS", "GradingRules",
    "LANGUAGES", "MANIFEST", "OPTIONAL_SUITE_KEYS", "OPTIONAL_TASK_KEYS", "ORACLE_KEYS",
    "ORACLE_OPTIONAL_KEYS", "OracleRef", "PARSERS_PACKAGE", "PREREGISTRATION",
    "PUBLISHED_KEYS", "PUBLISHED_OPTIONAL_KEYS", "Published", "RECORDS_DIR", "SCORER_ENTRY",
    "SCRIPT_PLACEHOLDER", "SCRIPT_PRELUDE", "SUITE_KEYS", "SealDifference", "Suite",
    "TASK_ID", "TASK_KEYS", "TEST_FILES", "TRUTH_DIR", "TRUTH_KEYS", "TRUTH_RULES", "Task",
    "TaskCommand", "VERDICT_NAMES", "check_rules", "check_truth_at_pin", "corpus_pin",
    "every_scorer_source", "grading", "known_suites", "load_suite", "load_task",
    "manifest_sha256", "parser_module", "scorer_sources", "seal", "sealed_inputs",
    "truth_rule", "truth_rule_version", "verify_seal"]


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
    data = read_toml(path)
    if unknown := sorted(set(data) - SUITE_KEYS - OPTIONAL_SUITE_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(SUITE_KEYS | OPTIONAL_SUITE_KEYS)}",
                   unknown[0])
    if missing := sorted(SUITE_KEYS - set(data)):
        raise _bad(path, missing[0], "present", None)
    number(path, "version", data["version"], "1", integer=True, minimum=1, maximum=1)
    if data["name"] != name:
        raise _bad(path, "name", repr(name), data["name"])
    arms = data["arms"]
    if not isinstance(arms, list) or not arms or not all(isinstance(a, str) for a in arms):
        raise _bad(path, "arms", "a non-empty list of arm names", arms)
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
    for key in ("reps", "precision_cap", "top_k"):
        number(path, key, data[key], "a positive integer", integer=True, minimum=1)
    number(path, "timeout_s", data["timeout_s"], "a positive number of seconds", minimum=0,
           exclusive_minimum=True)
    bands = data["bands"]
    if not isinstance(bands, dict) or not BAND_KEYS <= set(bands) <= BAND_KEYS | EDGE_BAND_KEYS:
        raise _bad(path, "bands", f"a table of numbers with exactly {sorted(BAND_KEYS)} (and "
                   f"{sorted(EDGE_BAND_KEYS)} for edge tasks)", bands)
    for key, value in bands.items():
        if key == "references_correct_max_outside":
            number(path, f"bands.{key}", value, "a whole number of files, 0 or more",
                   integer=True, minimum=0)
        else:
            number(path, f"bands.{key}", value, "a fraction from 0 to 1", minimum=0, maximum=1)
    if not isinstance(data["corpus"], str):
        raise _bad(path, "corpus", "the id of a corpus in corpus.lock", data["corpus"])
    if data.get("test_files", TEST_FILES[0]) not in TEST_FILES:
        raise _bad(path, "test_files", " or ".join(TEST_FILES), data["test_files"])
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
