"""Arm specs: an arm is data, not code. One TOML per arm under arms/: its image, declared
environment, optional set-up step (the index build), one argv template per task kind it
attempts, the output parser's name, and for every kind it cannot express a `not_attempted`
entry quoting the tool's own documentation."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import parsers
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import KINDS
from orchestrator.sandbox_spec import GIB, MIB, Limits
from orchestrator.values import number

ARM_KEYS = {"description", "image", "env", "limits", "parser", "setup", "tasks",
            "not_attempted"}
LIMIT_KEYS = {"memory_mib", "pids", "cpus", "tmp_mib", "state_mib", "out_mib",
              "corpus_margin_mib"}
# Limits given in MiB, and the Limits field each sets (in bytes).
MIB_LIMITS = {"memory_mib": "memory_bytes", "tmp_mib": "tmp_bytes", "state_mib": "state_bytes",
              "out_mib": "out_bytes", "corpus_margin_mib": "corpus_margin_bytes"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The placeholders each kind's argv may use; {ext} and {lang} come from the task's language.
PLACEHOLDERS = {"locate": {"ticket"}, "e2e-retrieval": {"ticket"}, "references": {"symbol"},
                "impact": {"seed"}}
COMMON_PLACEHOLDERS = {"ext", "lang"}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_SETUP_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Setup:
    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_SETUP_TIMEOUT_S


@dataclass(frozen=True)
class NotAttempted:
    reason: str
    source: str


@dataclass(frozen=True)
class ArmSpec:
    name: str
    path: Path
    image: str
    description: str
    env: dict[str, str]
    limits: Limits = field(default_factory=Limits)
    parser: str = ""
    setup: Setup | None = None
    tasks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    not_attempted: dict[str, NotAttempted] = field(default_factory=dict)

    def render(self, kind: str, values: dict[str, str]) -> list[str]:
        """The argv of one task: every {placeholder} replaced by the task's value."""
        return [PLACEHOLDER.sub(lambda m: values[m.group(1)], part) for part in self.tasks[kind]]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "image": self.image, "description": self.description,
                "env": self.env, "parser": self.parser,
                "limits": dataclasses.asdict(self.limits),
                "setup": None if self.setup is None else {"argv": list(self.setup.argv),
                                                          "timeout_s": self.setup.timeout_s},
                "tasks": {k: list(v) for k, v in self.tasks.items()},
                "not_attempted": {k: {"reason": v.reason, "source": v.source}
                                  for k, v in self.not_attempted.items()}}


def _bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def load_arm(path: Path) -> ArmSpec:
    data = read_toml(path)
    if unknown := sorted(set(data) - ARM_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(ARM_KEYS)}", unknown[0])
    image = data.get("image")
    if not isinstance(image, str) or not image:
        raise _bad(path, "image", "an image recipe name", image)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _bad(path, "description", "a string", description)
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise _bad(path, "env", "a table of NAME = \"value\"", env)
    for key, value in env.items():
        if not ENV_NAME.match(key) or not isinstance(value, str):
            raise _bad(path, f"env.{key}", "NAME = \"string\"", value)
    parser = data.get("parser")
    if not isinstance(parser, str) or not parser:
        raise _bad(path, "parser", "the name of an output parser", parser)
    if parser not in parsers.PARSERS:
        raise _bad(path, "parser", f"one of {sorted(parsers.PARSERS)}", parser)
    tasks = _tasks(path, data.get("tasks", {}))
    not_attempted = _not_attempted(path, data.get("not_attempted", {}))
    for kind in KINDS:
        if kind in tasks and kind in not_attempted:
            raise _bad(path, f"not_attempted.{kind}", "absent: the arm attempts this kind",
                       not_attempted[kind].reason)
        if kind not in tasks and kind not in not_attempted:
            raise _bad(path, f"tasks.{kind}", "an argv, or a [not_attempted." + kind +
                       "] entry quoting the tool's docs", None)
    return ArmSpec(name=path.stem, path=path, image=image, description=description,
                   env=dict(env), limits=_limits(path, data.get("limits", {})), parser=parser,
                   setup=_setup(path, data.get("setup")), tasks=tasks,
                   not_attempted=not_attempted)


def _argv(path: Path, key: str, value: Any, allowed: set[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _bad(path, key, "a non-empty list of strings", value)
    for part in value:
        for name in PLACEHOLDER.findall(part):
            if name not in allowed:
                raise _bad(path, key, f"placeholders among {sorted(allowed)}", "{" + name + "}")
    return tuple(value)


def _tasks(path: Path, table: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(table, dict):
        raise _bad(path, "tasks", "a table of task kinds", table)
    tasks = {}
    for kind, spec in table.items():
        if kind not in KINDS:
            raise _bad(path, f"tasks.{kind}", f"a task kind among {list(KINDS)}", kind)
        if not isinstance(spec, dict) or set(spec) != {"argv"}:
            raise _bad(path, f"tasks.{kind}", "a table with exactly one key, argv", spec)
        tasks[kind] = _argv(path, f"tasks.{kind}.argv", spec["argv"],
                            PLACEHOLDERS[kind] | COMMON_PLACEHOLDERS)
    return tasks


def _not_attempted(path: Path, table: Any) -> dict[str, NotAttempted]:
    if not isinstance(table, dict):
        raise _bad(path, "not_attempted", "a table of task kinds", table)
    entries = {}
    for kind, spec in table.items():
        if kind not in KINDS:
            raise _bad(path, f"not_attempted.{kind}", f"a task kind among {list(KINDS)}", kind)
        if not isinstance(spec, dict) or set(spec) != {"reason", "source"}:
            raise _bad(path, f"not_attempted.{kind}", "a table with reason and source", spec)
        for key in ("reason", "source"):
            if not isinstance(spec[key], str) or not spec[key].strip():
                raise _bad(path, f"not_attempted.{kind}.{key}", "a non-empty string", spec[key])
        entries[kind] = NotAttempted(reason=spec["reason"], source=spec["source"])
    return entries


def _setup(path: Path, table: Any) -> Setup | None:
    if table is None:
        return None
    if not isinstance(table, dict) or not set(table) <= {"argv", "timeout_s"} or "argv" not in table:
        raise _bad(path, "setup", "a table with argv and an optional timeout_s", table)
    timeout = table.get("timeout_s", DEFAULT_SETUP_TIMEOUT_S)
    number(path, "setup.timeout_s", timeout, "a positive number of seconds", minimum=0,
           exclusive_minimum=True)
    return Setup(argv=_argv(path, "setup.argv", table["argv"], set()), timeout_s=float(timeout))


def _limits(path: Path, table: Any) -> Limits:
    if not isinstance(table, dict):
        raise _bad(path, "limits", "a table", table)
    if unknown := sorted(set(table) - LIMIT_KEYS):
        raise _bad(path, f"limits.{unknown[0]}", f"one of {sorted(LIMIT_KEYS)}", unknown[0])
    defaults = Limits()
    values = {"pids": defaults.pids, "cpus": defaults.cpus,
              **{key: getattr(defaults, field) // MIB for key, field in MIB_LIMITS.items()},
              **table}
    for key in ("pids", *MIB_LIMITS):
        number(path, f"limits.{key}", values[key], "a positive integer", integer=True, minimum=1)
    number(path, "limits.cpus", values["cpus"], "a positive number", minimum=0,
           exclusive_minimum=True)
    return Limits(pids=values["pids"], cpus=float(values["cpus"]),
                  **{field: values[key] * MIB for key, field in MIB_LIMITS.items()})


def load_arms(arms_dir: Path, names: list[str] | None = None) -> list[ArmSpec]:
    """The named arms (all when none), each from arms/<name>.toml."""
    available = {p.stem: p for p in sorted(arms_dir.glob("*.toml"))}
    if not names:
        return [load_arm(p) for p in available.values()]
    unknown = [n for n in names if n not in available]
    if unknown:
        missing = arms_dir / f"{unknown[0]}.toml"
        raise InputError(f"unknown arm {unknown[0]!r}: {missing} is missing",
                         fix=f"known arms: {', '.join(available) or '(none)'}", name=unknown[0],
                         file=str(missing))
    return [load_arm(available[n]) for n in names]


__all__ = ["ArmSpec", "load_arm", "load_arms", "GIB"]
