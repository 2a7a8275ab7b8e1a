"""What an arm's container is: its limits, mounts, helper, environment and labels, as plain
data (isolation/spec.py), built by `make` alone. The run, `sandbox check`, the engines'
pre-flight and the compose and Kubernetes exports all build it there, and every isolation
setting it is created with comes from the isolation table (isolation/table.py), so the
container the engine is asked for, the one a self-check verifies and the ones the exports
describe cannot drift apart. Nothing here talks to the engine."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.sandbox import runtimes
from orchestrator.isolation import folds
from orchestrator.isolation.limits import GIB as GIB, Limits as Limits, MIB as MIB
from orchestrator.isolation.spec import (ContainerSpec, HelperFile as HelperFile, Mount as Mount,
                                         state_home)
from orchestrator.isolation.values import (DOCKER_EXEC as DOCKER_EXEC, EXEC_PATHS as EXEC_PATHS,
                                           RESIDENT, TOOL_USER)

if TYPE_CHECKING:  # the arm only arrives as an argument
    from orchestrator.arms import ArmSpec

# What every arm container gets: its corpus copy, its state and its output directory.
ARM_MOUNTS = (("corpus", "/corpus"), ("state", "/state"), ("out", "/out"))


class Lock(Protocol):
    """What `for_arm` reads of the image lock (images.ImageLock, which the engine's client
    comes with: a spec module imports neither, not even for its types)."""

    images: dict[str, dict[str, Any]]

    def helper(self) -> tuple[Path, str]: ...

    def image_id(self, name: str) -> str: ...


@dataclass(frozen=True)
class SandboxSpec(ContainerSpec):
    """An arm's container (isolation/spec.py) with what the engine is asked for."""

    def create_kwargs(self) -> dict[str, Any]:
        """Exactly what the engine is asked for, as plain data in the SDK's spelling: the
        isolation settings' arguments, the working directory, and a detached start."""
        return {**folds.create_kwargs(self), "working_dir": self.workdir, "detach": True}


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


def for_arm(lock: Lock, arm: ArmSpec, run_id: str, work: Path, user: str,
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
    home = state_home(spec)
    state = next((m for m in spec.mounts if m.target == "/state" and not m.volume), None)
    if state is not None and home:
        dirs.append((state.source / home.removeprefix("/state/"), state.source.parent))
    return dirs

