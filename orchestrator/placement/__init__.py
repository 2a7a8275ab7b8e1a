"""Where an arm runs, behind one interface: the run and the sandbox never ask which.

An arm needs the same things wherever its container lives: writable file systems of a
declared size (`/corpus`, `/state`, `/out`), a private copy of the pristine corpus in the
first, the timing helper mounted read-only and its digest guarded across the container's
start, and a snapshot of each file system read from where it lives (before the arm's first
command and after its last). A `Placement` gives exactly that for one arm; a
`MountedHelper` gives the helper's guard for one engine (a pre-flight sandbox has no arm).

Two placements exist: loop mounts made here (`local`: ext4 images under the arm's work dir,
loop-mounted by this process and bind-mounted, which needs root here and an engine that shares
this host's file systems) and file systems the engine makes (`engine_made`: the same images
made on the engine's host by the engine agent, mounted as volumes: an engine of another host,
or this host's driven by a user who is not root). Which one an engine gets is decided once per
engine member (`Member.mounts_here`), from what this process and that engine can do; a third
(a Kubernetes node, a VM) is one more implementation added with `register`, nothing else
changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from orchestrator import corpus
from orchestrator.arms import ArmSpec
from orchestrator.images import ImageLock
from orchestrator.sandbox.spec import SandboxSpec
from orchestrator.settings import Settings
from orchestrator.untrusted import walk

if TYPE_CHECKING:
    from orchestrator.run.pool import Member


@runtime_checkable
class MountedHelper(Protocol):
    """The timing helper as one engine mounts it into every sandbox it starts."""

    def source(self, host_file: Path) -> Path:
        """Where this engine mounts the helper from, given the host's helper file."""
        ...

    def start(self, spec: SandboxSpec, create_and_start: Callable[[], None]) -> dict[str, Any]:
        """Make the spec's writable places ready for its user, then `create_and_start` the
        container with the helper mounted, the helper's digest read where the engine reads
        it, before and after the start; returns those facts (`guards.helper_facts`). When
        the helper cannot be read no container is made: the helper's guard says why."""
        ...


@runtime_checkable
class Placement(Protocol):
    """Where one arm runs: its bounded file systems, its corpus copy, its sandbox's mounts
    and helper, and read-back of what is in each file system."""

    @property
    def helper(self) -> MountedHelper:
        """How this arm's engine mounts the helper."""
        ...

    def kept(self, names: Sequence[str]) -> bool:
        """Whether an earlier attempt of the run left the arm's file systems `names`."""
        ...

    def filesystems(self, sizes: Mapping[str, int], owner: str, fresh: bool
                    ) -> AbstractContextManager[None]:
        """Every file system of `sizes` (name -> bytes) ready for the arm's container for
        the duration: made anew when `fresh`, else the earlier attempt's as they were;
        taken down on the way out, whatever happened."""
        ...

    def copy_corpus(self, pristine: Path, pin: corpus.CorpusPin, owner: str,
                    home: str) -> corpus.Snapshot:
        """The pristine copy made in the arm's fresh corpus file system (with a `home`
        under /state its user owns), verified and read back from there."""
        ...

    def sandbox_spec(self, lock: ImageLock, arm: ArmSpec, run_id: str, owner: str,
                     sizes: Mapping[str, int], exec_path: str) -> SandboxSpec:
        """The arm's container, its writable mounts these file systems, the helper this
        engine mounts."""
        ...

    def snapshot(self, name: str, budget: walk.Budget) -> corpus.Snapshot:
        """The file system `name` as it is now, read where it lives, spending from the
        arm's `budget`."""
        ...


@dataclass(frozen=True)
class Kind:
    """One placement implementation: which engine members it serves, and its makers."""

    name: str
    accepts: Callable[[Member | None], bool]  # None: the engine on this host, by default
    arm: Callable[[Member, str, Path, Path], Placement]  # (member, arm, work dir, scratch)
    helper: Callable[[Member | None], MountedHelper]
    facts: Callable[[Member], dict[str, Any]]  # what run.json records of the run's place there
    # Images the placement itself runs on the engine, beside the arms' (sent there first).
    engine_images: tuple[str, ...]
    # The run's place on the engine made ready once, before any sandbox starts there:
    # (member, the settings, the run id).
    open: Callable[[Member, Settings, str], None]
    # What `open` made there, taken down when nothing is left to resume (a one-off sandbox).
    close: Callable[[Member], None] = lambda member: None


_KINDS: list[Kind] = []


def register(kind: Kind) -> None:
    """Add a placement; one registered later is asked first (it is the more specific)."""
    _KINDS.insert(0, kind)


def kind_of(member: Member | None) -> Kind:
    return next(k for k in _KINDS if k.accepts(member))


def for_arm(member: Member, arm: str, work: Path, scratch: Path) -> Placement:
    """The one choice of where arm `arm` runs: the placement of its engine member. `work`
    is the arm's work dir in the run, `scratch` room for transfers on this host."""
    return kind_of(member).arm(member, arm, work, scratch)


def mounted_helper(member: Member | None = None) -> MountedHelper:
    """The helper's guard on the engine `member` (the engine on this host when None)."""
    return kind_of(member).helper(member)


def engine_images(member: Member) -> tuple[str, ...]:
    """The images the placement of `member` runs there itself (none on this host)."""
    return kind_of(member).engine_images


def open_engine(member: Member, settings: Settings, run_id: str) -> None:
    """The run's place on `member` made ready (nothing to do on this host)."""
    kind_of(member).open(member, settings, run_id)


def close_engine(member: Member) -> None:
    """What the placement opened on `member` for the run taken down (nothing on this host)."""
    kind_of(member).close(member)


def engine_facts(member: Member) -> dict[str, Any]:
    """What run.json's engine entry records of where the run's arms live on `member`: the
    placement's name and what it opened there."""
    kind = kind_of(member)
    return {"placement": kind.name, **kind.facts(member)}


def _register_builtin() -> None:
    # The implementations do not import this package (no import cycle): they are made to
    # the protocols above, which mypy checks here.
    from orchestrator.placement import engine_made, local
    register(Kind(local.KIND, local.accepts, local.LocalPlacement.of, local.LocalHelper.of,
                  local.facts, (), local.open_engine))
    register(Kind(engine_made.KIND, engine_made.accepts, engine_made.EngineMadePlacement.of,
                  engine_made.EngineMadeHelper.of, engine_made.facts,
                  engine_made.ENGINE_IMAGES, engine_made.open_engine,
                  engine_made.close_engine))


_register_builtin()
