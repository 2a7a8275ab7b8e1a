"""Sealed task suites: tasks with their truth, a preregistration, and a manifest that hashes
every input before any arm runs, so a number can be traced to exactly what produced it.

`suites/NAME/suite.toml` declares the corpus, the arms, the baseline, the tool under test, the
reps, the time limit and the choices the methodology leaves open (the impact precision cap,
where ranked answers are cut, the bands, and in `[grading]` the grading rules).
`suites/NAME/tasks/*.toml` holds one task each: it may override the suite's grading rules in
its own `[grading]` and carry, per arm, the figures a publication reported (`[published.ARM]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator import corpus, runtimes
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.parsers import PARSERS
from orchestrator.kinds import ALL_KINDS, COMMON_PLACEHOLDERS, EDGE_KINDS, INPUT_KEY, PLACEHOLDER
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
from orchestrator.sealing import (
    SealDifference, corpus_pin, every_scorer_source, manifest_sha256, parser_module,
    scorer_sources, seal, sealed_inputs, verify_seal)

# The model and the seal live in modules of their own; callers reach them here too.
__all__ = [
    "BAND_KEYS", "COMMAND_KEYS", "COMMAND_OUTPUTS", "CORPUS_ROOT", "DECIMAL",
    "EDGE_BAND_KEYS", "FAMILIES", "GRADING_CHOICES", "GRADING_KEYS", "GradingRules",
    "LANGUAGES", "MANIFEST", "OPTIONAL_SUITE_KEYS", "OPTIONAL_TASK_KEYS", "ORACLE_KEYS",
    "ORACLE_OPTIONAL_KEYS", "OracleRef", "PARSERS_PACKAGE", "PREREGISTRATION",
    "PUBLISHED_KEYS", "PUBLISHED_OPTIONAL_KEYS", "Published", "RECORDS_DIR", "SCORER_ENTRY",
    "SCRIPT_PLACEHOLDER", "SCRIPT_PRELUDE", "SUITE_KEYS", "SealDifference", "Suite",
    "TASK_ID", "TASK_KEYS", "TEST_FILES", "TRUTH_DIR", "TRUTH_KEYS", "TRUTH_RULES", "Task",
    "TaskCommand", "VERDICT_NAMES", "check_truth_at_pin", "corpus_pin",
    "every_scorer_source", "known_suites", "load_suite", "load_task", "manifest_sha256",
    "parser_module", "scorer_sources", "seal", "sealed_inputs", "truth_rule",
    "truth_rule_version", "verify_seal"]


def _bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def _str_list(path: Path, key: str, value: Any, allow_empty: bool) -> list[str]:
    if (not isinstance(value, list) or not all(isinstance(v, str) and v for v in value)
            or (not allow_empty and not value)):
        raise _bad(path, key, "a list of repo-relative paths" + ("" if allow_empty else
                   " (non-empty: an empty truth set satisfies every band vacuously)"), value)
    return [repo_path(path, key, v) for v in value]


def grading(path: Path, table: Any) -> dict[str, Any]:
    """A [grading] table: each key one of the rules, each value one of its choices."""
    if not isinstance(table, dict):
        raise _bad(path, "grading", f"a table of {list(GRADING_KEYS)}", table)
    for key, value in table.items():
        if key == "precision_cap_multiple":
            number(path, "grading.precision_cap_multiple", value, "a positive whole number "
                   "(the cap is this x the task's graded set)", integer=True, minimum=1)
        elif key in GRADING_CHOICES:
            if value not in GRADING_CHOICES[key]:
                raise _bad(path, f"grading.{key}", f"one of {list(GRADING_CHOICES[key])}",
                           value)
        else:
            raise _bad(path, f"grading.{key}", f"one of {list(GRADING_KEYS)}", key)
    return dict(table)


def check_rules(path: Path, rules: GradingRules, declared: dict[str, Any]) -> None:
    """The rules a file leaves in force are whole: a multiple of the graded set needs its
    multiple, and a multiple is read only as one."""
    if rules.precision_cap == "graded-multiple" and rules.precision_cap_multiple is None:
        raise _bad(path, "grading.precision_cap_multiple", "a positive whole number "
                   "(precision_cap = \"graded-multiple\")", None)
    if rules.precision_cap != "graded-multiple" and "precision_cap_multiple" in declared:
        raise _bad(path, "grading.precision_cap", "\"graded-multiple\" (precision_cap_multiple "
                   "is only read with it)", rules.precision_cap)


def _digits(path: Path, key: str, value: Any) -> tuple[float, int]:
    """A published fraction and the decimals it was printed with: a number (its shortest
    spelling's decimals) or a string of the digits as printed ("1.000" keeps its zeros)."""
    if isinstance(value, str) and DECIMAL.match(value):
        number_value, text = float(value), value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number_value, text = float(value), repr(float(value))
    else:
        raise _bad(path, key, "a fraction from 0 to 1, as a number or as printed (\"1.000\")",
                   value)
    number(path, key, number_value, "a fraction from 0 to 1", minimum=0, maximum=1)
    return number_value, len(text.partition(".")[2])


def _published(path: Path, table: Any) -> dict[str, Published]:
    """[published.ARM] tables: the figures a publication reported for that arm's cell."""
    if not isinstance(table, dict):
        raise _bad(path, "published", "a table per arm", table)
    out = {}
    allowed = PUBLISHED_KEYS | PUBLISHED_OPTIONAL_KEYS
    for arm, entry in table.items():
        at = f"published.{arm}"
        if not isinstance(entry, dict):
            raise _bad(path, at, f"a table with {sorted(PUBLISHED_KEYS)}", entry)
        if missing := sorted(PUBLISHED_KEYS - set(entry)):
            raise _bad(path, f"{at}.{missing[0]}", "present", None)
        if unknown := sorted(set(entry) - allowed):
            raise _bad(path, f"{at}.{unknown[0]}", f"one of {sorted(allowed)}", unknown[0])
        if not isinstance(entry["source"], str) or not entry["source"].strip():
            raise _bad(path, f"{at}.source", "a non-empty string naming the publication",
                       entry["source"])
        for key in ("lines", "bytes") if "lines" in entry else ("bytes",):
            number(path, f"{at}.{key}", entry[key], "a whole number, 0 or more", integer=True,
                   minimum=0)
        prefix = entry["path_prefix"]
        if not isinstance(prefix, str) or (prefix and (
                not prefix.endswith("/") or any(c in prefix for c in "\n\r"))):
            raise _bad(path, f"{at}.path_prefix", "the prefix its paths had, ending in '/' "
                       "(or empty)", prefix)
        if "grade" in entry and entry["grade"] not in VERDICT_NAMES:
            raise _bad(path, f"{at}.grade", f"one of {list(VERDICT_NAMES)}", entry["grade"])
        recall = _digits(path, f"{at}.recall", entry["recall"]) if "recall" in entry else None
        precision = (_digits(path, f"{at}.precision", entry["precision"])
                     if "precision" in entry else None)
        if "graded" in entry:
            number(path, f"{at}.graded", entry["graded"], "a whole number, 0 or more",
                   integer=True, minimum=0)
        out[arm] = Published(
            arm=arm, source=entry["source"], lines=entry.get("lines"), bytes=entry["bytes"],
            path_prefix=prefix, grade=entry.get("grade"),
            recall=None if recall is None else recall[0],
            recall_digits=None if recall is None else recall[1],
            precision=None if precision is None else precision[0],
            precision_digits=None if precision is None else precision[1],
            graded=entry.get("graded"), tool_version=_text(path, f"{at}.tool_version", entry),
            platform=_text(path, f"{at}.platform", entry))
    return out


def _text(path: Path, key: str, entry: dict[str, Any]) -> str | None:
    """An optional one-line string of a [published.ARM] table (its last key part)."""
    value = entry.get(key.rpartition(".")[2])
    if value is not None and (not isinstance(value, str) or not value.strip()
                              or "\n" in value):
        raise _bad(path, key, "a non-empty one-line string", value)
    return value


def load_task(path: Path) -> Task:
    data = read_toml(path)
    if unknown := sorted(set(data) - TASK_KEYS - OPTIONAL_TASK_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(TASK_KEYS | OPTIONAL_TASK_KEYS)}",
                   unknown[0])
    for key in ("id", "kind", "language", "explanation"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _bad(path, key, "a non-empty string", data.get(key))
    if data["id"] != path.stem or not TASK_ID.match(data["id"]):
        raise _bad(path, "id", f"{path.stem!r} (the file name, [a-z0-9-])", data["id"])
    kind = data["kind"]
    if kind not in ALL_KINDS:
        raise _bad(path, "kind", f"one of {list(ALL_KINDS)}", kind)
    if data["language"] not in LANGUAGES:
        raise _bad(path, "language", f"one of {sorted(LANGUAGES)}", data["language"])
    inputs = data.get("input")
    want = INPUT_KEY[kind]
    if not isinstance(inputs, dict) or set(inputs) != {want}:
        raise _bad(path, "input", f"a table with exactly {want!r} for a {kind} task", inputs)
    if not isinstance(inputs[want], str) or not inputs[want].strip():
        raise _bad(path, f"input.{want}", "a non-empty string", inputs[want])
    truth = data.get("truth")
    required, optional = TRUTH_KEYS[kind]
    if not isinstance(truth, dict):
        raise _bad(path, "truth", "a table", truth)
    if missing := sorted(required - set(truth)):
        raise _bad(path, f"truth.{missing[0]}", "present", None)
    if unknown := sorted(set(truth) - required - optional):
        raise _bad(path, f"truth.{unknown[0]}", f"one of {sorted(required | optional)}",
                   unknown[0])
    for key, value in truth.items():
        if key == "rule":
            if not isinstance(value, str) or not value.strip():
                raise _bad(path, "truth.rule", "a non-empty string stating the rule", value)
        elif key == "primary":
            repo_path(path, "truth.primary", value)
        elif key == "types":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _bad(path, "truth.types", "a list of type names", value)
        else:
            _str_list(path, f"truth.{key}", value, allow_empty=key in optional)
    if kind == "impact":
        repo_path(path, "input.seed", inputs["seed"])
    if kind == "impact" and inputs["seed"] in truth["graded"]:
        raise _bad(path, "truth.graded", "files beyond the seed", inputs["seed"])
    return Task(id=data["id"], kind=kind, language=data["language"],
                explanation=data["explanation"], input=dict(inputs), truth=dict(truth),
                path=path, commands=_commands(path, kind, data.get("commands", {})),
                grading=grading(path, data.get("grading", {})),
                published=_published(path, data.get("published", {})))


def _commands(path: Path, kind: str, table: Any) -> dict[str, TaskCommand]:
    """[commands.ARM] tables: each checked whole (which arms exist is the suite's to check)."""
    if not isinstance(table, dict):
        raise _bad(path, "commands", "a table of [commands.ARM] tables", table)
    if table and kind in EDGE_KINDS:
        raise _bad(path, "commands", f"absent: a {kind} task is graded on the edges an arm's "
                   "own parser reads, not on a command's rows", sorted(table))
    allowed = {INPUT_KEY[kind], *COMMON_PLACEHOLDERS, "corpus"}
    return {arm: _command(path, f"commands.{arm}", spec, allowed) for arm, spec in table.items()}


def _command(path: Path, key: str, spec: Any, allowed: set[str]) -> TaskCommand:
    if not isinstance(spec, dict):
        raise _bad(path, key, "a table with argv or script", spec)
    if unknown := sorted(set(spec) - COMMAND_KEYS):
        raise _bad(path, f"{key}.{unknown[0]}", f"one of {sorted(COMMAND_KEYS)}", unknown[0])
    if ("argv" in spec) == ("script" in spec):
        raise _bad(path, key, "exactly one of argv (a list) and script (sh text)",
                   sorted(k for k in ("argv", "script") if k in spec))
    argv, script = spec.get("argv"), spec.get("script")
    if argv is not None and (not isinstance(argv, list) or not argv or not all(
            isinstance(part, str) for part in argv) or not argv[0]):
        raise _bad(path, f"{key}.argv", "a non-empty list of strings, the program first", argv)
    if script is not None and (not isinstance(script, str) or not script.strip()):
        raise _bad(path, f"{key}.script", "non-empty sh text", script)
    pattern = PLACEHOLDER if argv is not None else SCRIPT_PLACEHOLDER
    for text in argv or [script]:
        for name in pattern.findall(text):
            if name not in allowed:
                raise _bad(path, f"{key}.{'argv' if argv else 'script'}",
                           f"placeholders among {sorted(allowed)}", "{" + name + "}")
    output = spec.get("output", "tool")
    if output not in COMMAND_OUTPUTS and output not in PARSERS:
        raise _bad(path, f"{key}.output", f"one of {list(COMMAND_OUTPUTS)} or a parser's name "
                   f"({', '.join(sorted(PARSERS))})", output)
    sections = spec.get("sections")
    if sections is not None and (not isinstance(sections, str) or not sections.strip()
                                 or "\n" in sections or "\r" in sections):
        raise _bad(path, f"{key}.sections", "the separator line (non-empty, one line)", sections)
    answer = spec.get("answer_section", "last")
    if "answer_section" in spec and sections is None:
        raise _bad(path, f"{key}.answer_section", "absent: without sections the whole output "
                   "is the answer", answer)
    if answer != "last" and (not isinstance(answer, int) or isinstance(answer, bool)
                             or answer < 1):
        raise _bad(path, f"{key}.answer_section", '"last" or a 1-based section number', answer)
    return TaskCommand(argv=None if argv is None else tuple(argv), script=script, output=output,
                       sections=sections, answer_section=answer)


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
