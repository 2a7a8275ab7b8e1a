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
from orchestrator.values import check_schema, load_schema

SCHEMA_FILE = "arm.schema.json"
ARM_KEYS = set(load_schema(SCHEMA_FILE)["properties"])
LIMIT_KEYS = set(load_schema(SCHEMA_FILE)["properties"]["limits"]["properties"])
# Limits given in MiB, and the Limits field each sets (in bytes).
MIB_LIMITS = {"memory_mib": "memory_bytes", "tmp_mib": "tmp_bytes", "state_mib": "state_bytes",
              "out_mib": "out_bytes", "corpus_margin_mib": "corpus_margin_bytes"}
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
    """arms/<name>.toml, checked against orchestrator/schemas/arm.schema.json, then for what
    a schema cannot say: a registered parser, each argv's placeholders, every kind covered."""
    data = check_schema(path, read_toml(path), SCHEMA_FILE)
    if data["parser"] not in parsers.PARSERS:
        raise _bad(path, "parser", f"one of {sorted(parsers.PARSERS)}", data["parser"])
    tasks = {kind: _argv(path, f"tasks.{kind}.argv", spec["argv"],
                         PLACEHOLDERS[kind] | COMMON_PLACEHOLDERS)
             for kind, spec in data.get("tasks", {}).items()}
    not_attempted = {kind: NotAttempted(reason=spec["reason"], source=spec["source"])
                     for kind, spec in data.get("not_attempted", {}).items()}
    for kind in KINDS:
        if kind in tasks and kind in not_attempted:
            raise _bad(path, f"not_attempted.{kind}", "absent: the arm attempts this kind",
                       not_attempted[kind].reason)
        if kind not in tasks and kind not in not_attempted:
            raise _bad(path, f"tasks.{kind}", "an argv, or a [not_attempted." + kind +
                       "] entry quoting the tool's docs", None)
    setup = data.get("setup")
    return ArmSpec(name=path.stem, path=path, image=data["image"],
                   description=data.get("description", ""), env=dict(data.get("env", {})),
                   limits=_limits(data.get("limits", {})), parser=data["parser"],
                   setup=None if setup is None else Setup(
                       argv=_argv(path, "setup.argv", setup["argv"], set()),
                       timeout_s=float(setup.get("timeout_s", DEFAULT_SETUP_TIMEOUT_S))),
                   tasks=tasks, not_attempted=not_attempted)


def _argv(path: Path, key: str, argv: list[str], allowed: set[str]) -> tuple[str, ...]:
    """The argv as a tuple, once every {placeholder} in it is one its kind provides."""
    for part in argv:
        for name in PLACEHOLDER.findall(part):
            if name not in allowed:
                raise _bad(path, key, f"placeholders among {sorted(allowed)}", "{" + name + "}")
    return tuple(argv)


def _limits(table: dict[str, Any]) -> Limits:
    """The declared limits (in MiB where named so), the defaults for the rest."""
    defaults = Limits()
    return Limits(pids=table.get("pids", defaults.pids),
                  cpus=float(table.get("cpus", defaults.cpus)),
                  **{field: table[key] * MIB if key in table else getattr(defaults, field)
                     for key, field in MIB_LIMITS.items()})


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
