"""The guard policy: everything one sandbox is checked against, resolved when it is created
and stored with the run (guards/ARM/policy.json), and one guard's verdict. Plain data, so an
auditor on another machine reads it back (`from_json`) and recomputes every verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.isolation.values import HELPER_PATH, RESIDENT
from orchestrator.sandbox.shared_checks import schema_problem


@dataclass(frozen=True)
class GuardResult:
    guard: str
    side: str  # outside | inside
    expected: Any
    found: Any
    ok: bool


@dataclass(frozen=True)
class DeclaredMount:
    source: str
    target: str
    read_only: bool
    size_bytes: int | None = None  # absent in runs recorded before mounts were bounded
    volume: bool = False  # an engine's volume, `source` its name (an engine of another host)


@dataclass(frozen=True)
class GuardPolicy:
    """Everything a sandbox is checked against, resolved when it is created."""

    run_id: str
    arm: str
    image_id: str
    user: str
    env: list[str]
    mounts: list[DeclaredMount]
    labels: dict[str, str] = field(default_factory=dict)
    # The host file mounted at HELPER_PATH and the sha256 the image lock gives it.
    helper: dict[str, str] = field(default_factory=dict)
    # "resident" or "docker-exec"; None in runs recorded before the resident executor, whose
    # PID 1 was always `idle` and which carry no channel guards.
    exec_path: str | None = None
    # Each isolation setting's values (isolation.folds.policy_values: tmpfs, memory_bytes, pids,
    # nano_cpus), stored beside the fields above.
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def resident(self) -> bool:
        return self.exec_path == RESIDENT

    @property
    def runtime(self) -> str | None:
        """runc or runsc; None in runs recorded before runtimes were declared (runc)."""
        return self.values.get("runtime")

    @property
    def executor_user(self) -> str | None:
        """PID 1's uid:gid, apart from the tool's (`user`); None in runs recorded before the
        split, where PID 1 and the tool shared the tool's uid."""
        return self.values.get("executor_user")

    @property
    def tmpfs(self) -> dict[str, str]:
        return dict(self.values.get("tmpfs") or {})

    def to_json(self) -> dict[str, Any]:
        """As stored: the settings' values as fields of their own; a bind mount is written as
        before volumes existed (no `volume` key)."""
        data = asdict(self)
        values = data.pop("values")
        data["mounts"] = [{k: v for k, v in m.items() if k != "volume" or v}
                          for m in data["mounts"]]
        return {**data, **values}

    @property
    def helper_mount(self) -> DeclaredMount:
        return DeclaredMount(self.helper.get("source", ""), HELPER_PATH, True)

    @classmethod
    def from_json(cls, data: Any, source: Path) -> GuardPolicy:
        """The stored policy, every field checked: the audit must fail on a bad key, never
        on a traceback."""
        if problem := schema_problem(data, POLICY_SCHEMA):
            if len(problem.where) == 3 and problem.where[0] == "mounts":
                _, index, key = problem.where
                raise _bad_member(source, int(index), str(key), problem.expected, problem.found)
            raise InputError.bad_value(source, problem.key, problem.expected, problem.found)
        named = {f.name for f in fields(cls)} - {"values", "mounts"}
        return cls(**{k: v for k, v in data.items() if k in named},
                   mounts=[DeclaredMount(**m) for m in data["mounts"]],
                   values={k: v for k, v in data.items() if k not in {*named, "mounts"}})

    @property
    def uid_gid(self) -> tuple[int, int]:
        uid, gid = self.user.split(":")
        return int(uid), int(gid)


POLICY_SCHEMA = "guard-policy.schema.json"


def _bad_member(source: Path, index: int, key: str, expected: str, found: Any) -> InputError:
    """A bad field of one declared mount, named with the mount's index."""
    return InputError(f"{source}: mounts[{index}].{key}: expected {expected}, found {found!r}",
                      file=str(source), key=key, expected=expected, found=found)
