"""An arm on an engine of another host: its bounded file systems, its corpus copy and the
timing helper made on that host, through that engine alone.

An engine bind-mounts from its own host, so nothing made here can be mounted there. On such
an engine each of an arm's writable mounts becomes what `workfs` makes here: a sparse ext4
image of the declared size (in the run's work volume on that host), attached to a loop
device and handed to the arm's container as a volume of the engine's local driver mounting
that device (the engine mounts it in its own namespace, so no mount propagation is needed).
The images, loop devices and the helper file are made by the engine agent
(`images/engine-agent`): a short-lived container from a locked image, no network, every
capability dropped but SYS_ADMIN and MKNOD, devices limited to the loop ones; it never runs a
tool, and no measured sandbox is given a capability. The corpus copy goes over the engine as
a tar of the pristine one and is read back as a tar: its snapshot, before and after the arm,
is of what that host holds, never of what was sent. The helper is placed in the work volume
and bind-mounted from there, its digest read back from that host at every sandbox start.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import corpus, log
from orchestrator.sandbox import workfs
from orchestrator.corpus.git import CLEAN_GIT_ENV
from orchestrator.engine import Engine
from orchestrator.errors import ContainerFailed, EngineError, EngineNotFound, SandbenchError
from orchestrator.isolation import folds
from orchestrator.isolation.setting import AGENT, HOLDER
from orchestrator.labels import LABEL_ARM, LABEL_RUN, base_labels
from orchestrator.untrusted import walk

AGENT_IMAGE = "engine-agent"
WORK = "/work"  # where the agent sees the run's work volume
HELPER_DIR = "helper"
AGENT_TIMEOUT_S = 600
# The local driver mounts the loop device as workfs mounts its image here (`loop` is mount(8)'s
# and the engine calls mount(2): the device is attached first).
VOLUME_MOUNT_OPTIONS = "nosuid,nodev,noatime,noinit_itable"
# Clean git for the agent: no system or global config, as corpus.git's clean_git here.
GIT_ENV = {**CLEAN_GIT_ENV, "HOME": "/nonexistent"}

# Every loop device backed by the image "$1", detached: found by the file's device and inode
# as the kernel keeps them (sysfs names the backing file only by a path inside a mount the
# agent cannot see, and losetup -j matches by that path), each device node made first: an
# agent's /dev is the one the engine gave it at its start.
_DETACH = r"""
img="$1"
node() { [ -b "/dev/loop$1" ] || mknod "/dev/loop$1" b 7 "$1"; }
want="$(stat -c '%Hd:%Ld %i' "$img")"
for sys in /sys/block/loop*; do
  [ -e "$sys/loop/backing_file" ] || continue
  n="${sys#/sys/block/loop}"
  node "$n"
  got="$(losetup --list -n -O BACK-MAJ:MIN,BACK-INO "/dev/loop$n" | awk '{print $1" "$2}')"
  if [ "$got" = "$want" ]; then losetup -d "/dev/loop$n"; fi
done
"""
# A free loop device attached to the image, after detaching any an earlier attempt left on it.
_ATTACH = _DETACH + r"""
for try in 1 2 3 4 5 6 7 8; do
  dev=$(losetup -f)
  node "${dev#/dev/loop}"
  if losetup "$dev" "$img"; then echo "$dev"; exit 0; fi
done
echo "no loop device could be attached to $img" >&2
exit 1
"""
# A new sparse image of exactly SIZE bytes owned at its root by UID:GID, without the
# lost+found mke2fs makes (the arm's tree holds only what was put there).
_MAKE = r"""
img="$1"; size="$2"; owner="$3"; shift 3
mkdir -p "$(dirname "$img")"
rm -f "$img"
truncate -s "$size" "$img"
mkfs.ext4 "$@" -E "root_owner=$owner,lazy_itable_init=1,nodiscard" "$img"
debugfs -w -R "rmdir lost+found" "$img" >/dev/null 2>&1
"""


def work_volume_name(run_id: str) -> str:
    return f"sandbench-work-{run_id}"


def volume_name(run_id: str, arm: str, name: str) -> str:
    return f"sandbench-{run_id}-{arm}-{name}"


@dataclass
class RemoteSite:
    """The run's place on one engine of another host: its work volume, the agent's image,
    and the helper placed there."""

    engine: Engine
    engine_id: str
    run_id: str
    agent_image: str  # the locked id of AGENT_IMAGE
    helper_path: str | None = None  # on that host, once placed

    @property
    def work_volume(self) -> str:
        return work_volume_name(self.run_id)

    def _labels(self, arm: str | None = None) -> dict[str, str]:
        labels = base_labels(**{LABEL_RUN: self.run_id})
        return {**labels, LABEL_ARM: arm} if arm else labels

    # -- the agent and holders --------------------------------------------------------------

    def _agent(self, script: str, args: list[str], *, loop: bool = False, user: str = "0:0",
               mounts: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
               what: str) -> str:
        """One short-lived agent container: `script` under `sh -eu` with `args`, the work
        volume at WORK and `mounts` (volume -> target); its stdout, or the failure named."""
        spec: dict[str, Any] = {
            "image": self.agent_image, "command": ["sh", "-euc", script, "agent", *args],
            "user": user, "labels": self._labels(), "environment": dict(env or {}),
            "mounts": [_volume(self.work_volume, WORK),
                       *(_volume(v, t) for v, t in (mounts or {}).items())],
            **folds.own_create(AGENT),  # its hardening, from the isolation table
        }
        if loop:  # loop devices only: the control node, and block devices of major 7
            spec.update(cap_add=["SYS_ADMIN", "MKNOD"], devices=["/dev/loop-control"],
                        device_cgroup_rules=["b 7:* rwm"])
        try:
            return self.engine.run_once(spec, timeout_s=AGENT_TIMEOUT_S).decode().strip()
        except ContainerFailed as exc:
            raise SandbenchError(f"engine {self.engine_id}: cannot {what}", why=exc.why,
                                 fix="the engine's host needs loop devices (modprobe loop) "
                                     "and room in the engine's data root") from exc

    @contextmanager
    def _holder(self, mounts: Mapping[str, str], read_only: bool = False) -> Iterator[str]:
        """A created, never started, container with `mounts` (volume -> target): what the
        engine copies into and out of."""
        container = self.engine.create_container(
            {"image": self.agent_image, "command": ["true"], "labels": self._labels(),
             "detach": True, "mounts": [_volume(v, t, read_only) for v, t in mounts.items()],
             **folds.own_create(HOLDER)},
            what="create a copy holder")
        try:
            yield container
        finally:
            self.engine.remove_container(container)

    def _read(self, mounts: Mapping[str, str], path: str) -> Iterator[bytes]:
        with self._holder(mounts, read_only=True) as holder:
            yield from self.engine.stream_out(holder, path)

    # -- the run's work volume and the helper -----------------------------------------------

    def open(self) -> None:
        self.engine.create_volume(self.work_volume, self._labels())

    def close(self) -> None:
        """The run's place there taken down (`sandbench cleanup`): every arm's volume, each
        of its images detached from any loop device, and the work volume with them."""
        for volume in self.engine.list_volumes(f"{LABEL_RUN}={self.run_id}"):
            if volume["Name"] != self.work_volume:
                self.engine.remove_volume(volume["Name"])
        self._agent(f'set -- {WORK}/*/*{workfs.IMAGE_SUFFIX}; [ -f "$1" ] || exit 0; '
                    + _DETACH_EACH, [], loop=True, env={"DETACH": _DETACH},
                    what=f"detach the file systems of run {self.run_id}")
        self.engine.remove_volume(self.work_volume)

    def place_helper(self, local: Path, sha256: str) -> str:
        """The host's helper in the work volume on that host (root's, read and execute only),
        read back and hashed there; its path on that host."""
        name = f"{HELPER_DIR}/sandbench-exec-{sha256[:12]}"
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                folder = tarfile.TarInfo(HELPER_DIR)
                folder.type, folder.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(folder)
                tar.add(local, arcname=name, filter=_root_readonly)
            archive.seek(0)
            with self._holder({self.work_volume: WORK}) as holder:
                self.engine.copy_in(holder, WORK, archive)
        mountpoint = self.engine.inspect_volume(self.work_volume)["Mountpoint"]
        self.helper_path = f"{mountpoint}/{name}"
        found = self.helper_digest()
        if found != sha256:
            raise SandbenchError(f"engine {self.engine_id}: the helper placed at "
                                 f"{self.helper_path} hashes to {found}",
                                 why=f"the image lock gives {sha256}")
        return self.helper_path

    def helper_digest(self) -> str | None:
        """sha256 of the helper file as that host holds it (None when it cannot be read)."""
        assert self.helper_path is not None
        name = self.helper_path.rsplit("/", 1)[1]
        try:
            found = corpus.snapshot_of_archive(
                self._read({self.work_volume: WORK}, f"{WORK}/{HELPER_DIR}/{name}"))
        except (EngineError, SandbenchError):
            return None
        entry = found.entries.get(name)
        return entry.digest if entry is not None and entry.kind == "file" else None

    # -- an arm's file systems ----------------------------------------------------------------

    def _image(self, arm: str, name: str) -> str:
        return f"{WORK}/{arm}/{name}{workfs.IMAGE_SUFFIX}"

    def has_filesystems(self, arm: str, names: list[str]) -> bool:
        """Whether an earlier attempt of the run left the arm's images on that host."""
        found = self._agent('for f in "$@"; do [ -f "$f" ] || { echo no; exit 0; }; done; '
                            "echo yes", [self._image(arm, n) for n in names],
                            what=f"look for arm {arm}'s file systems")
        return found == "yes"

    @contextmanager
    def filesystems(self, arm: str, sizes: Mapping[str, int], owner: str, fresh: bool
                    ) -> Iterator[dict[str, str]]:
        """name -> volume: every file system of `sizes` made (when `fresh`) and attached on
        that host by one agent, each as a volume mounting it; detached by one agent and the
        volumes removed on the way out, whatever happened (the images stay, as workfs leaves
        them here)."""
        images = [self._image(arm, name) for name in sizes]
        volumes: dict[str, str] = {}
        try:
            devices = self._agent(
                _MAKE_AND_ATTACH, [owner, "1" if fresh else "0",
                                   *(f"{img}={size}" for img, size in zip(images, sizes.values(),
                                                                          strict=True))],
                loop=True, env={"MAKE": _MAKE, "ATTACH": _ATTACH,
                                "MKFS_OPTS": " ".join(_mkfs_options())},
                what=f"make and attach arm {arm}'s file systems ({dict(sizes)} bytes)"
            ).splitlines()
            if len(devices) != len(images):
                raise SandbenchError(f"engine {self.engine_id}: attaching arm {arm}'s file "
                                     f"systems gave {len(devices)} devices, expected "
                                     f"{len(images)}", why=repr(devices[:5]))
            for name, device in zip(sizes, devices, strict=True):
                volume = volume_name(self.run_id, arm, name)
                self.engine.remove_volume(volume)  # an earlier attempt's, pointing elsewhere
                self.engine.create_volume(volume, self._labels(arm), {
                    "type": "ext4", "device": device, "o": VOLUME_MOUNT_OPTIONS})
                volumes[name] = volume
            yield volumes
        finally:
            for volume in volumes.values():
                _quietly(self.engine.remove_volume, volume)
            _quietly(self._agent, _DETACH_EACH, images, loop=True, env={"DETACH": _DETACH},
                     what=f"detach arm {arm}'s file systems")

    def seed(self, volume: str, dirs: list[str], owner: str) -> None:
        """Directories the arm's user owns in a fresh file system (a HOME under /state)."""
        uid, gid = (int(x) for x in owner.split(":"))
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for rel in dirs:
                    info = tarfile.TarInfo(rel)
                    info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, uid, gid
                    tar.addfile(info)
            archive.seek(0)
            with self._holder({volume: "/fs"}) as holder:
                self.engine.copy_in(holder, "/fs", archive)

    def copy_corpus(self, pristine: Path, volume: str, owner: str, scratch: Path
                    ) -> corpus.Snapshot:
        """The pristine copy streamed into the arm's corpus file system on that host, its
        index refreshed there (git's stat data must be that file system's), and read back:
        every path, mode and byte the pristine's, the index aside. The snapshot read back."""
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=scratch) as archive:
            corpus.archive_tree(pristine, archive, owner)
            archive.seek(0)
            with self._holder({volume: "/corpus"}) as holder:
                self.engine.copy_in(holder, "/corpus", archive)
        self._agent('git -C /corpus update-index -q --refresh || true', [], user=owner,
                    mounts={volume: "/corpus"}, env=GIT_ENV,
                    what="refresh the index of the arm's corpus copy")
        copy = self.snapshot(volume, walk.Budget())  # the host's own copy, before any arm
        expected = corpus.snapshot(pristine)
        index = f"{corpus.GIT_DIR}/index"
        differ = sorted(p for p in expected.entries.keys() | copy.entries.keys()
                        if p != index and expected.entries.get(p) != copy.entries.get(p))
        if differ:
            raise SandbenchError(f"the corpus copy on engine {self.engine_id} is not the "
                                 "pristine one", why=f"{len(differ)} paths differ, first "
                                 f"{differ[:5]}", fix="check the engine's host and its disk")
        return copy

    def snapshot(self, volume: str, budget: walk.Budget) -> corpus.Snapshot:
        """Every path of a file system on that host, as `corpus.snapshot` gives one here."""
        return corpus.snapshot_of_archive(self._read({volume: "/fs"}, "/fs/."), budget)


def _volume(name: str, target: str, read_only: bool = False) -> dict[str, Any]:
    return {"Type": "volume", "Source": name, "Target": target, "ReadOnly": read_only,
            "VolumeOptions": {"NoCopy": True}}


def _root_readonly(info: Any) -> Any:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o555
    return info


# Each IMAGE=SIZE made (when FRESH is 1) and attached, its loop device printed, in order;
# the scripts above come in the environment (MAKE, ATTACH, MKFS_OPTS: no option has a space).
_MAKE_AND_ATTACH = r"""
owner="$1"; fresh="$2"; shift 2
for spec in "$@"; do
  img="${spec%=*}"; size="${spec##*=}"
  if [ "$fresh" = 1 ]; then sh -euc "$MAKE" make "$img" "$size" "$owner" $MKFS_OPTS; fi
  sh -euc "$ATTACH" attach "$img"
done
"""
# Every image given detached from any loop device (DETACH in the environment).
_DETACH_EACH = r"""
for img in "$@"; do sh -euc "$DETACH" detach "$img"; done
"""


def _mkfs_options() -> list[str]:
    """workfs's mke2fs options, its -E aside (the agent adds the root's owner to it)."""
    options = list(workfs.MKFS_OPTIONS)
    at = options.index("-E")
    return options[:at] + options[at + 2:]


def _quietly(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except (EngineError, EngineNotFound, SandbenchError) as exc:
        log.get(__name__).warning("remote.cleanup_failed", what=getattr(exc, "what", str(exc)))
