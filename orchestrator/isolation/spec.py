"""What an arm's container is: its limits, mounts, helper, environment and labels, as plain
data (`ContainerSpec`), which the isolation table's facets read. `sandbox_spec` builds it
(`make`) and adds the create arguments folded from the table. Nothing here talks to the
engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import labels
from orchestrator.sandbox import runtimes
from orchestrator.isolation.limits import Limits
from orchestrator.isolation.values import HELPER_PATH, RESIDENT


@dataclass(frozen=True)
class Mount:
    """A host path bind-mounted, or (on an engine of another host, orchestrator/sandbox/remote.py)
    a volume of the engine's, `source` then being the volume's name."""

    source: Path
    target: str
    read_only: bool = False
    size_bytes: int | None = None  # the bound of the file system behind a writable mount
    volume: bool = False

    @property
    def engine_spelling(self) -> dict[str, Any]:
        if self.volume:  # NoCopy: the image's files at the target never go into the volume
            return {"Target": self.target, "Source": str(self.source), "Type": "volume",
                    "ReadOnly": self.read_only, "VolumeOptions": {"NoCopy": True}}
        return {"Target": self.target, "Source": str(self.source), "Type": "bind",
                "ReadOnly": self.read_only}


@dataclass(frozen=True)
class HelperFile:
    """The host's timing helper as the image lock records it."""

    source: Path
    sha256: str


@dataclass(frozen=True)
class ContainerSpec:
    """An arm's container as plain data; `sandbox_spec.SandboxSpec` adds the create
    arguments the isolation table folds for it."""

    run_id: str
    arm: str
    image_id: str
    tool_version: str
    user: str
    env: dict[str, str]
    helper: HelperFile
    mounts: tuple[Mount, ...] = ()
    limits: Limits = field(default_factory=Limits)
    workdir: str = "/"
    exec_path: str = RESIDENT
    # The engine's container runtime (orchestrator/sandbox/runtimes.py).
    runtime: str = runtimes.DEFAULT
    # The user accepted that the engine does not enforce the limits (engine_limits): the
    # inside guards then report the limits in force without refusing the sandbox.
    unbounded_limits_accepted: bool = False
    # The engine's dialect: docker, or podman (orchestrator/sandbox/podman.py).
    engine: str = "docker"

    @property
    def labels(self) -> dict[str, str]:
        return labels.base_labels(**{labels.LABEL_RUN: self.run_id, labels.LABEL_ARM: self.arm,
                                     labels.LABEL_TOOL_VERSION: self.tool_version[:200]})

    @property
    def helper_mount(self) -> Mount:
        """The host's helper, read-only, at the one path every exec and PID 1 run."""
        return Mount(self.helper.source, HELPER_PATH, read_only=True)

    @property
    def tool_writable(self) -> list[str]:
        """Where the tool must be able to write, in the container: each writable mount, and
        a HOME the arm puts under /state (the probe proves each: isolation/in_force.py)."""
        home = state_home(self)
        return [m.target for m in self.mounts if not m.read_only] + ([home] if home else [])


def state_home(spec: ContainerSpec) -> str | None:
    """The arm's HOME when it is under a writable /state mount."""
    home = spec.env.get("HOME", "")
    state = any(m.target == "/state" and not m.read_only for m in spec.mounts)
    return home if state and home.startswith("/state/") else None
