"""Arm specs: an arm is data, not code. One TOML per arm under arms/: its image, declared
environment, optional set-up step (the index build), one argv template per task kind it
attempts, the output parser's name, and for every kind it cannot express a `not_attempted`
entry quoting the tool's own documentation. An MCP arm (`protocol = "mcp"`) names its server
and protocol version instead, and one `tools/call` per kind (orchestrator/sandbox/mcp.py)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import parsers
from orchestrator.sandbox import mcp
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import COMMON_PLACEHOLDERS, INPUT_KEY, KINDS, PLACEHOLDER
from orchestrator.sandbox.mcp import ToolCall
from orchestrator.isolation.limits import GIB, MIB, Limits
from orchestrator.sandbox.shared_checks import check_schema, load_schema

SCHEMA_FILE = "arm.schema.json"
ARM_KEYS = set(load_schema(SCHEMA_FILE)["properties"])
LIMIT_KEYS = set(load_schema(SCHEMA_FILE)["properties"]["limits"]["properties"])
# Limits given in MiB, and the Limits field each sets (in bytes).
MIB_LIMITS = {"memory_mib": "memory_bytes", "tmp_mib": "tmp_bytes", "state_mib": "state_bytes",
              "out_mib": "out_bytes", "corpus_margin_mib": "corpus_margin_bytes"}
# The placeholders each kind's argv may use; {ext} and {lang} come from the task's language.
PLACEHOLDERS = {kind: {key} for kind, key in INPUT_KEY.items()}
DEFAULT_SETUP_TIMEOUT_S = 1800.0
DEFAULT_INITIALIZE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Setup:
    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_SETUP_TIMEOUT_S


@dataclass(frozen=True)
class NotAttempted:
    reason: str
    source: str


@dataclass(frozen=True)
class OracleSpec:
    """An oracle's one command (its stdout is the index), the language it covers and the
    index format its truth is decoded from."""

    argv: tuple[str, ...]
    language: str
    format: str
    timeout_s: float = DEFAULT_SETUP_TIMEOUT_S
    # The directory standing for the corpus root in the index's project root: /corpus, or
    # where the oracle exported the corpus (`git archive`) before indexing it.
    root: str = "/corpus"

    def render(self, project: str) -> list[str]:
        return [part.replace("{project}", project) for part in self.argv]


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
    protocol: str = "cli"
    mcp: mcp.Server | None = None  # an MCP arm's server; then calls replaces argv templates
    calls: dict[str, ToolCall] = field(default_factory=dict)
    kind: str = "arm"  # or "oracle": its transcript becomes truth (sandbench truth build)
    oracle: OracleSpec | None = None

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
                                  for k, v in self.not_attempted.items()},
                **({} if self.mcp is None else {
                    "protocol": self.protocol, "mcp": self.mcp.to_json(),
                    "calls": {k: v.to_json() for k, v in self.calls.items()}}),
                **({"kind": self.kind, "oracle": dataclasses.asdict(self.oracle)}
                   if self.oracle is not None else {})}


def _bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def load_arm(path: Path) -> ArmSpec:
    """arms/<name>.toml, checked against orchestrator/schemas/arm.schema.json, then for what
    a schema cannot say: a registered parser, each argv's placeholders, every kind covered."""
    data = check_schema(path, read_toml(path), SCHEMA_FILE)
    if data.get("kind", "arm") == "oracle":
        return _load_oracle(path, data)
    if "oracle" in data:
        raise _bad(path, "oracle", "absent: only an arm of kind = \"oracle\" has one",
                   "[oracle]")
    if "parser" not in data:
        raise _bad(path, "parser", "the name of an output parser", None)
    if data["parser"] not in parsers.PARSERS:
        raise _bad(path, "parser", f"one of {sorted(parsers.PARSERS)}", data["parser"])
    protocol = data.get("protocol", "cli")
    server = _mcp_server(path, data) if protocol == mcp.PROTOCOL else None
    if server is None and "mcp" in data:
        raise _bad(path, "mcp", 'absent: only an arm with protocol = "mcp" has a server',
                   "a [mcp] table")
    calls = {}
    tasks = {}
    for kind, spec in data.get("tasks", {}).items():
        if server is None:
            if "argv" not in spec or "tool" in spec or "arguments" in spec:
                raise _bad(path, f"tasks.{kind}", "a table with exactly one key, argv "
                           '(tool and arguments need protocol = "mcp")', sorted(spec))
            tasks[kind] = _argv(path, f"tasks.{kind}.argv", spec["argv"],
                                PLACEHOLDERS[kind] | COMMON_PLACEHOLDERS)
            continue
        if "argv" in spec or "tool" not in spec or "arguments" not in spec:
            raise _bad(path, f"tasks.{kind}", "a table with tool and arguments (an MCP arm "
                       "sends one tools/call per task)", sorted(spec))
        calls[kind] = _tool_call(path, f"tasks.{kind}", spec,
                                 PLACEHOLDERS[kind] | COMMON_PLACEHOLDERS)
        # What a reader (and the scorer's "attempted" check) sees: the call itself.
        tasks[kind] = ("tools/call", calls[kind].tool,
                       json.dumps(calls[kind].arguments, ensure_ascii=False, sort_keys=True))
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
    if server is not None:
        if setup is not None:
            raise _bad(path, "setup", "absent: an MCP arm's set-up is initialize and "
                       "[mcp] setup_calls", "a [setup] table")
        # The set-up cell: the server started and initialized (and its set-up calls).
        setup = {"argv": ["initialize", *server.argv], "timeout_s": server.initialize_timeout_s}
    return ArmSpec(name=path.stem, path=path, image=data["image"],
                   description=data.get("description", ""), env=dict(data.get("env", {})),
                   limits=_limits(data.get("limits", {})), parser=data["parser"],
                   setup=None if setup is None else Setup(
                       argv=_argv(path, "setup.argv", setup["argv"], set()),
                       timeout_s=float(setup.get("timeout_s", DEFAULT_SETUP_TIMEOUT_S))),
                   tasks=tasks, not_attempted=not_attempted, protocol=protocol, mcp=server,
                   calls=calls)


def _mcp_server(path: Path, data: dict[str, Any]) -> mcp.Server:
    """The [mcp] table of an MCP arm: the server's argv, its protocol version, set-up calls."""
    table = data.get("mcp")
    if table is None:
        raise _bad(path, "mcp", "a table with server and protocol_version (protocol = "
                   '"mcp")', None)
    return mcp.Server(
        argv=_argv(path, "mcp.server", table["server"], set()),
        protocol_version=table["protocol_version"],
        initialize_timeout_s=float(table.get("initialize_timeout_s",
                                             DEFAULT_INITIALIZE_TIMEOUT_S)),
        setup_calls=tuple(_tool_call(path, f"mcp.setup_calls.{i}", call, set())
                          for i, call in enumerate(table.get("setup_calls", []))))


def _tool_call(path: Path, key: str, spec: dict[str, Any], allowed: set[str]) -> mcp.ToolCall:
    """One tools/call, once every {placeholder} in its arguments is one its kind provides."""
    for name in sorted(mcp.placeholders(spec["arguments"])):
        if name not in allowed:
            raise _bad(path, f"{key}.arguments", f"placeholders among {sorted(allowed)}",
                       "{" + name + "}")
    return mcp.ToolCall(tool=spec["tool"], arguments=spec["arguments"])


def _load_oracle(path: Path, data: dict[str, Any]) -> ArmSpec:
    """An oracle: its [oracle] table, and none of an answering arm's keys."""
    for key in ("parser", "tasks", "not_attempted", "setup"):
        if key in data:
            raise _bad(path, key, "absent: an oracle answers no task, its index is the truth",
                       key)
    if "oracle" not in data:
        raise _bad(path, "oracle", "an [oracle] table with argv, language and format", None)
    table = data["oracle"]
    return ArmSpec(name=path.stem, path=path, image=data["image"],
                   description=data.get("description", ""), env=dict(data.get("env", {})),
                   limits=_limits(data.get("limits", {})), kind="oracle",
                   oracle=OracleSpec(argv=_argv(path, "oracle.argv", table["argv"],
                                                {"project"}),
                                     language=table["language"], format=table["format"],
                                     timeout_s=float(table.get("timeout_s",
                                                               DEFAULT_SETUP_TIMEOUT_S)),
                                     root=table.get("root", "/corpus")))


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
    """The named arms (all when none: oracles included), each from arms/<name>.toml."""
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


__all__ = ["ArmSpec", "OracleSpec", "load_arm", "load_arms", "GIB"]
