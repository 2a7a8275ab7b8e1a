"""The engine on this host, driven by root: an arm's file systems are loop-mounted ext4 images
under its work dir (`workfs`), bind-mounted into its container with the host's helper file. What is
made here for the container's user is owned by that user's ids on the host: the same ids,
or on an engine that remaps them (userns-remap) the ones its user namespace maps them to."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import corpus, log
from orchestrator.sandbox import spec as sandbox_spec, userns, workfs
from orchestrator.arms import ArmSpec
from orchestrator.images import ImageLock
from orchestrator.isolation import guards
from orchestrator.sandbox.spec import SandboxSpec
from orchestrator.settings import Settings
from orchestrator.untrusted import walk

if TYPE_CHECKING:
    from orchestrator.run.pool import Member

logger = log.get(__name__)


KIND = "loop-here"


def accepts(member: Member | None) -> bool:
    """An engine that shares this host's file systems, driven by root here (loop mounts
    need it): `Member.mounts_here`."""
    return member is None or member.mounts_here


def open_engine(member: Member, settings: Settings, run_id: str) -> None:
    """Nothing to make there first: an arm's files are made under the run dir, as it
    starts."""


def facts(member: Member) -> dict[str, Any]:
    """Nothing beyond the engine's own facts: the arms' files are under the run dir here."""
    return {}


class LocalHelper:
    """The host's helper file, bind-mounted: its digest is of the file the engine mounted,
    the one opened before the start and still the one at its path after it. `ids`: how the
    engine maps its containers' ids to the host's (None: it does not)."""

    def __init__(self, ids: userns.IdMap | None = None) -> None:
        self.ids = ids

    @classmethod
    def of(cls, member: Member | None) -> LocalHelper:
        return cls(None if member is None else userns.IdMap.of(member.facts))

    def source(self, host_file: Path) -> Path:
        return host_file

    def start(self, spec: SandboxSpec, create_and_start: Callable[[], None]) -> dict[str, Any]:
        for path, within in sandbox_spec.writable_dirs(spec):
            workfs.prepare_writable(path, userns.host_owner(spec.user, self.ids), within)
        source = spec.helper.source
        try:
            helper = open(source, "rb")  # noqa: SIM115 - held open across the start
        except OSError as exc:
            logger.error("helper_unreadable", arm=spec.arm, path=str(source), error=str(exc))
            return guards.helper_facts(source, None, _errno_text(exc))
        with helper:
            opened = os.fstat(helper.fileno())
            create_and_start()
            digest = hashlib.file_digest(helper, "sha256").hexdigest()
            try:
                now = os.stat(source)
                same = (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
            except OSError:
                same = False
        return guards.helper_facts(source, digest, None if same else
                                   "replaced while the sandbox started")


class LocalPlacement:
    """An arm's file systems at `work/{corpus,state,out}`, mounted only while it runs."""

    def __init__(self, work: Path, helper: LocalHelper) -> None:
        self.work = work
        self.helper = helper

    @classmethod
    def of(cls, member: Member, arm: str, work: Path, scratch: Path) -> LocalPlacement:
        return cls(work, LocalHelper.of(member))

    def kept(self, names: Sequence[str]) -> bool:
        return workfs.image_path(self.work, "corpus").is_file()

    @contextmanager
    def filesystems(self, sizes: Mapping[str, int], owner: str, fresh: bool
                    ) -> Iterator[None]:
        with workfs.mounted(self.work, sizes, fresh=fresh):
            yield

    def copy_corpus(self, pristine: Path, pin: corpus.CorpusPin, owner: str,
                    home: str) -> corpus.Snapshot:
        """The copy made and verified by `corpus.make_arm_copy`; the HOME is made at every
        sandbox start (`LocalHelper.start`), as every writable place here is."""
        corpus.make_arm_copy(pristine, self.work / "corpus", pin,
                             owner=userns.host_owner(owner, self.helper.ids))
        return corpus.snapshot(self.work / "corpus")

    def sandbox_spec(self, lock: ImageLock, arm: ArmSpec, run_id: str, owner: str,
                     sizes: Mapping[str, int], exec_path: str) -> SandboxSpec:
        return sandbox_spec.for_arm(lock, arm, run_id, self.work, owner, sizes, exec_path)

    def snapshot(self, name: str, budget: walk.Budget) -> corpus.Snapshot:
        return corpus.snapshot(self.work / name, budget)


def _errno_text(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "OSError")
    return f"{name}: {exc.strerror or exc}"
