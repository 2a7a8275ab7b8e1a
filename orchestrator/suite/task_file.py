"""One task file, `suites/NAME/tasks/*.toml`, read and checked: its kind, input and truth, its
own `[grading]` rules, the commands it gives its arms and the figures a publication reported
(`[published.ARM]`); and the suite's `[grading]` rules, which a task's may override. The file
is checked against orchestrator/schemas/task.schema.json first (its keys, by kind, and their
types), then here for what a schema cannot say. Every error names the file and the key, the
expected and the found value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import COMMON_PLACEHOLDERS, EDGE_KINDS, INPUT_KEY, PLACEHOLDER
from orchestrator.parsers import PARSERS
from orchestrator.sandbox.shared_checks import check_schema, number, repo_path
from orchestrator.suite.model import (
    COMMAND_OUTPUTS, DECIMAL, GRADING_CHOICES, GRADING_KEYS, SCRIPT_PLACEHOLDER, TASK_ID,
    GradingRules, Published, Task, TaskCommand)

# What a task file may hold, checked before anything is read from it.
SCHEMA = "task.schema.json"


def bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def grading(path: Path, table: Any) -> dict[str, Any]:
    """A [grading] table: each key one of the rules, each value one of its choices."""
    if not isinstance(table, dict):
        raise bad(path, "grading", f"a table of {list(GRADING_KEYS)}", table)
    for key, value in table.items():
        if key == "precision_cap_multiple":
            number(path, "grading.precision_cap_multiple", value, "a positive whole number "
                   "(the cap is this x the task's graded set)", integer=True, minimum=1)
        elif key in GRADING_CHOICES:
            if value not in GRADING_CHOICES[key]:
                raise bad(path, f"grading.{key}", f"one of {list(GRADING_CHOICES[key])}",
                           value)
        else:
            raise bad(path, f"grading.{key}", f"one of {list(GRADING_KEYS)}", key)
    return dict(table)


def check_rules(path: Path, rules: GradingRules, declared: dict[str, Any]) -> None:
    """The rules a file leaves in force are whole: a multiple of the graded set needs its
    multiple, and a multiple is read only as one."""
    if rules.precision_cap == "graded-multiple" and rules.precision_cap_multiple is None:
        raise bad(path, "grading.precision_cap_multiple", "a positive whole number "
                   "(precision_cap = \"graded-multiple\")", None)
    if rules.precision_cap != "graded-multiple" and "precision_cap_multiple" in declared:
        raise bad(path, "grading.precision_cap", "\"graded-multiple\" (precision_cap_multiple "
                   "is only read with it)", rules.precision_cap)


def _digits(path: Path, key: str, value: Any) -> tuple[float, int]:
    """A published fraction and the decimals it was printed with: a number (its shortest
    spelling's decimals) or a string of the digits as printed ("1.000" keeps its zeros)."""
    if isinstance(value, str) and DECIMAL.match(value):
        number_value, text = float(value), value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number_value, text = float(value), repr(float(value))
    else:
        raise bad(path, key, "a fraction from 0 to 1, as a number or as printed (\"1.000\")",
                   value)
    number(path, key, number_value, "a fraction from 0 to 1", minimum=0, maximum=1)
    return number_value, len(text.partition(".")[2])


def _published(path: Path, table: Any) -> dict[str, Published]:
    """[published.ARM] tables: the figures a publication reported for that arm's cell (their
    keys and types checked by the schema)."""
    out = {}
    for arm, entry in table.items():
        at = f"published.{arm}"
        prefix = entry["path_prefix"]
        if prefix and (not prefix.endswith("/") or any(c in prefix for c in "\n\r")):
            raise bad(path, f"{at}.path_prefix", "the prefix its paths had, ending in '/' "
                       "(or empty)", prefix)
        recall = _digits(path, f"{at}.recall", entry["recall"]) if "recall" in entry else None
        precision = (_digits(path, f"{at}.precision", entry["precision"])
                     if "precision" in entry else None)
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
    if value is not None and "\n" in value:
        raise bad(path, key, "a non-empty one-line string", value)
    return value


def load_task(path: Path) -> Task:
    data = check_schema(path, read_toml(path), SCHEMA)
    if data["id"] != path.stem or not TASK_ID.match(data["id"]):
        raise bad(path, "id", f"{path.stem!r} (the file name, [a-z0-9-])", data["id"])
    kind = data["kind"]
    inputs, truth = data["input"], data["truth"]
    for key, value in truth.items():
        if key == "primary":
            repo_path(path, "truth.primary", value)
        elif key not in ("types", "rule"):
            for item in value:
                repo_path(path, f"truth.{key}", item)
    if kind == "impact":
        repo_path(path, "input.seed", inputs["seed"])
    if kind == "impact" and inputs["seed"] in truth["graded"]:
        raise bad(path, "truth.graded", "files beyond the seed", inputs["seed"])
    return Task(id=data["id"], kind=kind, language=data["language"],
                explanation=data["explanation"], input=dict(inputs), truth=dict(truth),
                path=path, commands=_commands(path, kind, data.get("commands", {})),
                grading=grading(path, data.get("grading", {})),
                published=_published(path, data.get("published", {})))


def _commands(path: Path, kind: str, table: Any) -> dict[str, TaskCommand]:
    """[commands.ARM] tables: each checked whole (which arms exist is the suite's to check)."""
    if table and kind in EDGE_KINDS:
        raise bad(path, "commands", f"absent: a {kind} task is graded on the edges an arm's "
                   "own parser reads, not on a command's rows", sorted(table))
    allowed = {INPUT_KEY[kind], *COMMON_PLACEHOLDERS, "corpus"}
    return {arm: _command(path, f"commands.{arm}", spec, allowed) for arm, spec in table.items()}


def _command(path: Path, key: str, spec: Any, allowed: set[str]) -> TaskCommand:
    if ("argv" in spec) == ("script" in spec):
        raise bad(path, key, "exactly one of argv (a list) and script (sh text)",
                   sorted(k for k in ("argv", "script") if k in spec))
    argv, script = spec.get("argv"), spec.get("script")
    pattern = PLACEHOLDER if argv is not None else SCRIPT_PLACEHOLDER
    for text in argv or [script]:
        for name in pattern.findall(text):
            if name not in allowed:
                raise bad(path, f"{key}.{'argv' if argv else 'script'}",
                           f"placeholders among {sorted(allowed)}", "{" + name + "}")
    output = spec.get("output", "tool")
    if output not in COMMAND_OUTPUTS and output not in PARSERS:
        raise bad(path, f"{key}.output", f"one of {list(COMMAND_OUTPUTS)} or a parser's name "
                   f"({', '.join(sorted(PARSERS))})", output)
    sections = spec.get("sections")
    if sections is not None and (not sections.strip() or "\n" in sections or "\r" in sections):
        raise bad(path, f"{key}.sections", "the separator line (non-empty, one line)", sections)
    answer = spec.get("answer_section", "last")
    if "answer_section" in spec and sections is None:
        raise bad(path, f"{key}.answer_section", "absent: without sections the whole output "
                   "is the answer", answer)
    if answer != "last" and (not isinstance(answer, int) or isinstance(answer, bool)
                             or answer < 1):
        raise bad(path, f"{key}.answer_section", '"last" or a 1-based section number', answer)
    return TaskCommand(argv=None if argv is None else tuple(argv), script=script, output=output,
                       sections=sections, answer_section=answer)
