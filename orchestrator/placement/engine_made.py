"""File systems the engine makes: an arm's file systems, its corpus copy and the helper are
made on the engine's host through that engine (`remote.RemoteSite`), mounted as volumes. It
serves an engine of another host (nothing made here could be mounted there) and this host's
engine driven by a user who may not loop-mount (a member of the docker group): what needs
root is done by the engine agent, a container of the engine's."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import corpus, log
from orchestrator.sandbox import remote, spec as sandbox_spec
from orchestrator.arms import ArmSpec
from orchestrator.images import ImageLock
from orchestrator.isolation import guards
from orchestrator.errors import SandbenchError
from orchestrator.sandbox.remote import RemoteSite
from orchestrator.run.engines import ENGINE_MADE
from orchestrator.sandbox.spec import SandboxSpec
from orchestrator.settings import Settings
from orchestrator.untrusted import walk

if TYPE_CHECKING:
    from orchestrator.run.pool import Member

logger = log.get(__name__)


ENGINE_IMAGES = (remote.AGENT_IMAGE,)  # it makes the arms' file systems there


KIND = ENGINE_MADE


def accepts(member: Member | None) -> bool:
    """Every engine whose arms' file systems this process cannot loop-mount itself."""
    return member is not None and not member.mounts_here


def open_engine(member: Member, settings: Settings, run_id: str) -> None:
    """The run's place on that engine, once: its work volume, and the helper placed there
    and read back. A rootless engine cannot make them (its agent has no loop devices): it is
    refused by name, with the way to run there."""
    if member.site is not None:
        return
    if member.facts.get("rootless"):
        raise SandbenchError(
            f"engine {member.url} is rootless: it cannot make an arm's size-bounded file "
            "systems", why="its containers' root is a user, who may not attach loop devices, "
                           "and this process is not root here to loop-mount them itself",
            fix=f"run sandbench as root against it (DOCKER_HOST={member.url}), or use a "
                "rootful engine")
    lock = ImageLock.load(settings.images_lock)
    helper, digest = lock.helper()
    site = RemoteSite(member.engine, member.id, run_id, lock.image_id(remote.AGENT_IMAGE))
    site.open()
    site.place_helper(helper, digest)
    member.site = site


def close_engine(member: Member) -> None:
    """The run's work volume there removed, its file systems detached first."""
    if member.site is not None:
        _site(member).close()
        member.site = None


def _site(member: Member | None) -> RemoteSite:
    assert member is not None and isinstance(member.site, RemoteSite), \
        "placement.open_engine makes the run's place on an engine of another host first"
    assert member.site.helper_path
    return member.site


def facts(member: Member) -> dict[str, Any]:
    """The run's work volume on that host and the helper's path there."""
    site = _site(member)
    return {"work_volume": site.work_volume, "helper_path": site.helper_path}


class EngineMadeHelper:
    """The helper placed in the run's work volume on that host: its digest is read back
    from there before and after the start, and must agree."""

    def __init__(self, site: RemoteSite) -> None:
        self.site = site

    @classmethod
    def of(cls, member: Member | None) -> EngineMadeHelper:
        return cls(_site(member))

    def source(self, host_file: Path) -> Path:
        assert self.site.helper_path is not None  # placed when the site was opened
        return Path(self.site.helper_path)

    def start(self, spec: SandboxSpec, create_and_start: Callable[[], None]) -> dict[str, Any]:
        """No host directory is mounted (every writable mount is a volume there)."""
        source = spec.helper.source
        before = self.site.helper_digest()
        if before is None:
            logger.error("helper_unreadable", arm=spec.arm, path=str(source))
            return guards.helper_facts(source, None, "unreadable on the engine's host")
        create_and_start()
        after = self.site.helper_digest()
        return guards.helper_facts(source, after, None if after == before else
                                   "replaced while the sandbox started")


class EngineMadePlacement:
    """An arm's file systems as volumes on that host, known once `filesystems` made them."""

    def __init__(self, site: RemoteSite, arm: str, work: Path, scratch: Path) -> None:
        self.site = site
        self.arm = arm
        self.work = work  # named in the spec only; nothing of the arm's is made there
        self.scratch = scratch
        self.helper = EngineMadeHelper(site)
        self.volumes: dict[str, str] | None = None

    @classmethod
    def of(cls, member: Member, arm: str, work: Path, scratch: Path) -> EngineMadePlacement:
        return cls(_site(member), arm, work, scratch)

    def kept(self, names: Sequence[str]) -> bool:
        return self.site.has_filesystems(self.arm, list(names))

    @contextmanager
    def filesystems(self, sizes: Mapping[str, int], owner: str, fresh: bool
                    ) -> Iterator[None]:
        with self.site.filesystems(self.arm, sizes, owner, fresh=fresh) as volumes:
            self.volumes = volumes
            try:
                yield
            finally:
                self.volumes = None

    def _volume(self, name: str) -> str:
        assert self.volumes is not None, "the arm's file systems are not made"
        return self.volumes[name]

    def copy_corpus(self, pristine: Path, pin: corpus.CorpusPin, owner: str,
                    home: str) -> corpus.Snapshot:
        """The HOME seeded in the fresh /state (no host directory is prepared there), then
        the copy streamed there, verified and read back (`RemoteSite.copy_corpus`)."""
        if home.startswith("/state/"):
            parts = Path(home.removeprefix("/state/")).parts
            self.site.seed(self._volume("state"),
                           ["/".join(parts[:i + 1]) for i in range(len(parts))], owner)
        return self.site.copy_corpus(pristine, self._volume("corpus"), owner, self.scratch)

    def sandbox_spec(self, lock: ImageLock, arm: ArmSpec, run_id: str, owner: str,
                     sizes: Mapping[str, int], exec_path: str) -> SandboxSpec:
        assert self.volumes is not None and self.site.helper_path is not None
        return sandbox_spec.for_arm(lock, arm, run_id, self.work, owner, sizes, exec_path,
                                    volumes=self.volumes, helper_path=Path(self.site.helper_path))

    def snapshot(self, name: str, budget: walk.Budget) -> corpus.Snapshot:
        return self.site.snapshot(self._volume(name), budget)
