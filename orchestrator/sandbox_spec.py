"""What an arm's container is: its limits, mounts, helper, environment and labels, as plain
data, built by `make` alone. The run, `sandbox check`, the engines' pre-flight and the compose
and Kubernetes exports all build it there, and every isolation setting it is created with
comes from orchestrator/isolation.py, so the container the engine is asked for, the one a
self-check verifies and the ones the exports describe cannot drift apart. Nothing here talks
to the engine."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import isolation, labels, runtimes
from orchestrator.isolation import HELPER_PATH as HELPER
from orchestrator.isolation import RESIDENT

if TYPE_CHECKING:  # the lock is only read here; importing it would pull in the engine
    from orchestrator.arms import ArmSpec
    from orchestrator.images import ImageLock

GIB = 1 << 30
MIB = 1 << 20

# How a measured command reaches the container: requests on PID 1's attach stream, answered
# by the helper's `serve` (no runtime exec per call), or one `docker exec` each (the fallback,
# chosen per run and disclosed in the report).
DOCKER_EXEC = "docker-exec"
EXEC_PATHS = (RESIDENT, DOCKER_EXEC)

# What every arm container gets: its corpus copy, its state and its output directory.
ARM_MOUNTS = (("corpus", "/corpus"), ("state", "/state"), ("out", "/out"))


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 * GIB
    pids: int = 512
    cpus: float = 2.0
    tmp_bytes: int = 512 * MIB
    # The writable mounts' own file systems (orchestrator/workfs.py); sparse, so a generous
    # bound costs nothing until a tool writes.
    state_bytes: int = 4 * GIB
    out_bytes: int = 1 * GIB
    corpus_margin_bytes: int = 1 * GIB

    @property
    def nano_cpus(self) -> int:
        return int(self.cpus * 1e9)


@dataclass(frozen=True)
class Mount:
    """A host path bind-mounted, or (on an engine of another host, orchestrator/remote.py)
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
class SandboxSpec:
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
    runtime: str = runtimes.DEFAULT  # the engine's container runtime (orchestrator/runtimes.py)
    # The user accepted that the engine does not enforce the limits (engine_limits): the
    # inside guards then report the limits in force without refusing the sandbox.
    unbounded_limits_accepted: bool = False
    engine: str = "docker"  # the engine's dialect: docker, or podman (orchestrator/podman.py)

    @property
    def labels(self) -> dict[str, str]:
        return labels.base_labels(**{labels.LABEL_RUN: self.run_id, labels.LABEL_ARM: self.arm,
                                     labels.LABEL_TOOL_VERSION: self.tool_version[:200]})

    @property
    def helper_mount(self) -> Mount:
        """The host's helper, read-only, at the one path every exec and PID 1 run."""
        return Mount(self.helper.source, HELPER, read_only=True)

    @property
    def tool_writable(self) -> list[str]:
        """Where the tool must be able to write, in the container: each writable mount, and
        a HOME the arm puts under /state (the probe proves each: orchestrator/in_force.py)."""
        home = _state_home(self)
        return [m.target for m in self.mounts if not m.read_only] + ([home] if home else [])

    def create_kwargs(self) -> dict[str, Any]:
        """Exactly what the engine is asked for, as plain data in the SDK's spelling: the
        isolation settings' arguments, the working directory, and a detached start."""
        return {**isolation.create_kwargs(self), "working_dir": self.workdir, "detach": True}


TOOL_USER = "65532:65532"  # owns nothing on the host, nor in any image sandbench builds


def default_user() -> str:
    """The tool's uid:gid in the container: SANDBENCH_USER, else `TOOL_USER` whoever runs
    sandbench (root, or a member of the docker group), so a tool sees the same owner of
    its files on every host and its grades do not depend on who started the run."""
    return os.environ.get("SANDBENCH_USER") or TOOL_USER


def with_home(spec: SandboxSpec, image_env: list[str]) -> SandboxSpec:
    """The spec with HOME=/ when neither the arm nor the image sets HOME. The container runs
    as the executor's uid 0, for which the engine would give HOME from the image's passwd
    (/root); the tool's uid has no entry there, for which the engine gave `/` while the tool
    was the container's user, so a tool's HOME stays what it was."""
    if "HOME" in spec.env or any(e.startswith("HOME=") for e in image_env):
        return spec
    return replace(spec, env={**spec.env, "HOME": "/"})


PREFLIGHT = "preflight"


def make(run_id: str, arm: ArmSpec | None, *, image_id: str, tool_version: str, user: str,
         helper: HelperFile, mounts: tuple[Mount, ...] = (), exec_path: str = RESIDENT,
         runtime: str = runtimes.DEFAULT) -> SandboxSpec:
    """The one constructor of a sandbox's spec. An arm's container takes the arm's
    environment and limits and works in its /corpus; with no arm it is an engine's
    pre-flight sandbox: no environment, the default limits, working in /."""
    if arm is None:
        return SandboxSpec(run_id=run_id, arm=PREFLIGHT, image_id=image_id,
                           tool_version=tool_version, user=user, env={}, helper=helper,
                           mounts=mounts, workdir="/", exec_path=exec_path, runtime=runtime)
    return SandboxSpec(run_id=run_id, arm=arm.name, image_id=image_id,
                       tool_version=tool_version, user=user, env=arm.env, helper=helper,
                       mounts=mounts, limits=arm.limits, workdir="/corpus",
                       exec_path=exec_path, runtime=runtime)


def arm_mounts(source: Callable[[str], Path], sizes: Mapping[str, int] | None = None,
               volume: bool = False) -> tuple[Mount, ...]:
    """An arm's writable /corpus, /state and /out: each from `source(name)`, bounded by
    `sizes[name]` when given."""
    return tuple(Mount(source(name), target, read_only=False,
                       size_bytes=sizes[name] if sizes is not None else None, volume=volume)
                 for name, target in ARM_MOUNTS)


def for_arm(lock: ImageLock, arm: ArmSpec, run_id: str, work: Path, user: str,
            sizes: Mapping[str, int], exec_path: str = RESIDENT,
            volumes: Mapping[str, str] | None = None, helper_path: Path | None = None,
            runtime: str = runtimes.DEFAULT) -> SandboxSpec:
    """The container an arm gets in a run: its locked image and the host's helper, its
    mounts the file systems mounted under `work` (workfs.mounted), each bounded by `sizes`;
    on an engine of another host, the `volumes` (name -> volume) mounting that host's file
    systems and the helper placed at `helper_path` there."""
    helper, digest = lock.helper()
    return make(run_id, arm, image_id=lock.image_id(arm.image),
                tool_version=lock.images.get(arm.image, {}).get("tool_version", ""),
                user=user, helper=HelperFile(helper_path or helper, digest),
                mounts=arm_mounts(lambda name: Path(volumes[name]) if volumes else work / name,
                                  sizes, volume=bool(volumes)),
                exec_path=exec_path, runtime=runtime)


def writable_dirs(spec: SandboxSpec) -> list[tuple[Path, Path]]:
    """(host directory, the directory it must stay inside) for every place the container
    user must be able to write: each writable mount, and a HOME the arm puts under /state."""
    dirs = [(m.source, m.source.parent) for m in spec.mounts if not m.read_only and not m.volume]
    home = _state_home(spec)
    state = next((m for m in spec.mounts if m.target == "/state" and not m.volume), None)
    if state is not None and home:
        dirs.append((state.source / home.removeprefix("/state/"), state.source.parent))
    return dirs


def _state_home(spec: SandboxSpec) -> str | None:
    """The arm's HOME when it is under a writable /state mount."""
    home = spec.env.get("HOME", "")
    state = any(m.target == "/state" and not m.read_only for m in spec.mounts)
    return home if state and home.startswith("/state/") else None
