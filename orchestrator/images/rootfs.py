"""The root file system a bootstrapped recipe builds FROM. Debian's mmdebstrap makes it as
a tar in its unshare mode (one command for root and users; a user's adds a user namespace
mapped to the user's ids of /etc/subuid and /etc/subgid; the bytes are the same), every
timestamp fixed to the recipe's `source_date_epoch`. The engine gets it as an image archive
whose config is fixed too (created = that epoch), loaded rather than imported (an import
stamps the current time), so two hosts that bootstrap the same package versions get the same
tar and the same image id; the lock keeps the tar's sha256, the epoch and the package list's
sha256 to check it. A digest-pinned registry image (SANDBENCH_BASE_IMAGE) replaces the
bootstrap."""

from __future__ import annotations

import io
import os
import pwd
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import log
from orchestrator.engine.calls import TransientFailure, is_transient
from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.fsutil import canonical_json, sha256_bytes, sha256_file
from orchestrator.images.build_faults import retried, transient_mark
from orchestrator.images.build_inputs import debian_mirror
from orchestrator.images.recipes import REPOSITORY, Bootstrap, Recipe
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.engine import Engine

SOURCE = "mmdebstrap"
DIGEST_PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
# Where Debian installs programs: a user's PATH often lacks the sbin ones.
INSTALL_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SUBID_FILES = (Path("/etc/subuid"), Path("/etc/subgid"))
SUBIDS_NEEDED = 65536  # a whole 16-bit id space: what Debian's packages may use
# Debian's architecture names as the engine spells them (Go's GOARCH).
ENGINE_ARCH = {"amd64": "amd64", "arm64": "arm64", "armhf": "arm", "i386": "386",
               "ppc64el": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
DPKG_STATUS = "var/lib/dpkg/status"

logger = log.get(__name__)


def host_tool(name: str, package: str) -> str:
    """The path of `name` on this process's PATH. One that is installed where the PATH does
    not look (a docker-group user's PATH often lacks /usr/sbin) is named with its folder."""
    if found := shutil.which(name):
        return found
    for folder in INSTALL_DIRS:
        if os.access(candidate := os.path.join(folder, name), os.X_OK):
            raise SandbenchError(f"{name} is installed at {candidate} but {folder} is not on "
                                 "your PATH", fix=f"export PATH=\"$PATH:{folder}\" and rerun")
    raise SandbenchError(f"{name} is not installed", fix=f"apt-get install {package} "
                         "(scripts/ensure-docker does, as root)")


def subid_problem(user: str, uid: int, file: Path, text: str) -> str | None:
    """Why `file` (/etc/subuid or /etc/subgid, its `text`) gives `user` no range of at least
    SUBIDS_NEEDED ids for mmdebstrap's unshare mode; None when it does. Read as mmdebstrap
    reads it: the first line naming the user by name (a uid there is not looked for)."""
    for line in text.splitlines():
        fields = line.strip().split(":")
        if fields[0] == user:
            if len(fields) == 3 and fields[2].isdigit() and int(fields[2]) >= SUBIDS_NEEDED:
                return None
            break
    return f"{file} has no range of {SUBIDS_NEEDED} ids for user {user!r} (uid {uid})"


def check_subids(uid: int, files: tuple[Path, ...] | None = None) -> None:
    """A user's unshare-mode bootstrap maps the tree's ids to the user's subordinate ids: one
    error naming the file, the user and the command that adds them, when a range is missing."""
    user = pwd.getpwuid(uid).pw_name
    for file in files or SUBID_FILES:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        if problem := subid_problem(user, uid, file, text):
            raise SandbenchError(
                f"cannot bootstrap the root file system as {user}: {problem}",
                why="mmdebstrap's unshare mode maps the tree's users to subordinate ids",
                fix=f"as root: usermod --add-subuids 100000-165535 --add-subgids "
                    f"100000-165535 {user}", file=str(file), user=user)


def as_user() -> bool:
    """Whether the bootstrap maps a user namespace (not root): it needs newuidmap and the
    user's subordinate ids."""
    return os.geteuid() != 0


def mmdebstrap_argv(tool: str, bootstrap: Bootstrap, mirror: str, tarball: Path) -> list[str]:
    """The bootstrap command, the same for root and users. The host's resolv.conf and
    hostname, which mmdebstrap copies in, are removed (the engine mounts its own): with them
    the tar would differ per host."""
    return [tool, "--mode=unshare", f"--variant={bootstrap.variant}", "--format=tar",
            "--customize-hook=rm -f \"$1/etc/resolv.conf\" \"$1/etc/hostname\"",
            bootstrap.suite, str(tarball), mirror]


def created(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_config(diff_id: str, bootstrap: Bootstrap, arch: str) -> bytes:
    """The image's config: nothing in it depends on the host or the clock (its sha256 is the
    image id)."""
    when = created(bootstrap.source_date_epoch)
    return canonical_json({
        "architecture": arch, "os": "linux", "created": when, "config": {},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": when, "created_by": f"mmdebstrap --variant="
                     f"{bootstrap.variant} --format=tar {bootstrap.suite}"}]}).encode()


def write_image_archive(tarball: Path, out: Path, ref: str, bootstrap: Bootstrap,
                        arch: str) -> str:
    """A `docker save` archive at `out`: the tar as the one layer, the fixed config, and a
    manifest naming `ref`. Returns the image id the config makes."""
    diff_id = "sha256:" + sha256_file(tarball)
    config = image_config(diff_id, bootstrap, arch)
    config_name = f"{sha256_bytes(config)}.json"
    layer_name = f"{diff_id.removeprefix('sha256:')}/layer.tar"
    manifest = canonical_json([{"Config": config_name, "RepoTags": [ref],
                                "Layers": [layer_name]}]).encode()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), bootstrap.source_date_epoch, 0o644
            archive.addfile(info, io.BytesIO(data))
        layer = archive.gettarinfo(str(tarball), arcname=layer_name)
        layer.mtime, layer.mode, layer.uid, layer.gid = bootstrap.source_date_epoch, 0o644, 0, 0
        layer.uname = layer.gname = ""
        with open(tarball, "rb") as fh:
            archive.addfile(layer, fh)
    return "sha256:" + sha256_bytes(config)


def dpkg_manifest(tarball: Path) -> str:
    """`name=version` of every installed package in the tar, sorted, one per line: the same
    text as the image's dpkg manifest (images.manifests), so its sha256 compares with it.
    The tar is the one mmdebstrap just wrote here, not a tool's output."""
    with tarfile.open(tarball) as tar:
        member = next((m for m in tar if m.name.removeprefix("./") == DPKG_STATUS), None)
        fh = tar.extractfile(member) if member is not None and member.isfile() else None
        if fh is None:
            raise SandbenchError(f"the bootstrapped tar {tarball} has no /{DPKG_STATUS}")
        text = fh.read().decode("utf-8", errors="replace")
    lines = []
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines()
                      if ": " in line and not line.startswith(" "))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            lines.append(f"{fields['Package']}={fields.get('Version', '')}\n")
    return "".join(sorted(lines))


def bootstrap_key(bootstrap: Bootstrap, mirror: str) -> str:
    return sha256_bytes(canonical_json({
        "tool": SOURCE, "suite": bootstrap.suite, "variant": bootstrap.variant,
        "source_date_epoch": bootstrap.source_date_epoch, "mirror": mirror}).encode())


def rootfs(engine: Engine, settings: Settings, recipe: Recipe) -> tuple[str, dict[str, Any]]:
    """The image the base recipe builds FROM: a digest-pinned registry image where the user
    configured one, else the bootstrapped tree loaded into the engine (cached by its key).
    A tree made here says how long the bootstrap and the load took (`bootstrap_seconds`):
    part of what building the image costs."""
    assert recipe.bootstrap is not None
    if configured := os.environ.get("SANDBENCH_BASE_IMAGE"):
        if not DIGEST_PINNED.match(configured):
            raise InputError.bad_value("SANDBENCH_BASE_IMAGE", "SANDBENCH_BASE_IMAGE",
                                       "name@sha256:<64 hex> (a floating tag is refused)",
                                       configured)
        if (base_id := engine.image_id(configured)) is None:
            engine.pull(*configured.split("@", 1))
            base_id = engine.inspect_image(configured)["Id"]
        return base_id, {"source": "registry", "reference": configured}
    boot, mirror = recipe.bootstrap, debian_mirror()
    key = bootstrap_key(boot, mirror)
    ref = f"{REPOSITORY}/rootfs:{key[:12]}"
    info = {"source": SOURCE, "suite": boot.suite, "variant": boot.variant, "mirror": mirror,
            "key": key, "source_date_epoch": boot.source_date_epoch}
    if (rootfs_id := engine.image_id(ref)) is not None:
        return rootfs_id, info
    return bootstrap_image(engine, settings, boot, mirror, ref, info)


def bootstrap_image(engine: Engine, settings: Settings, boot: Bootstrap, mirror: str, ref: str,
                    info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Bootstrap `boot` from `mirror` now and load it into the engine as `ref`: its image
    id, and `info` with the tar's and packages' digests and the seconds it took."""
    tool = host_tool("mmdebstrap", "mmdebstrap")
    if as_user():
        host_tool("newuidmap", "uidmap")
        check_subids(os.geteuid())
    scratch = settings.bench_root / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=scratch, prefix="rootfs-") as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        logger.info("bootstrap", suite=boot.suite, variant=boot.variant, as_user=as_user(),
                    mirror=mirror, source_date_epoch=boot.source_date_epoch)

        def attempt() -> None:  # safe to repeat: the tar is written afresh
            tarball.unlink(missing_ok=True)
            run_host(mmdebstrap_argv(tool, boot, mirror, tarball), "mmdebstrap",
                     bootstrap_env(boot))
        retried("bootstrap the root file system", attempt)
        rootfs_id, info = load_tarball(engine, tarball, ref, boot, info)
    return rootfs_id, {**info, "bootstrap_seconds": round(time.monotonic() - started, 3)}


def bootstrap_env(boot: Bootstrap) -> dict[str, str]:
    return {"SOURCE_DATE_EPOCH": str(boot.source_date_epoch)}


def load_tarball(engine: Engine, tarball: Path, ref: str, boot: Bootstrap,
                 info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Load mmdebstrap's tar as image `ref` (an archive written beside it): its image id, and
    `info` with the tar's and packages' digests."""
    arch = ENGINE_ARCH.get(host_arch := _host_output(["dpkg", "--print-architecture"]))
    if arch is None:
        raise SandbenchError(f"no engine architecture known for Debian's {host_arch!r}",
                             fix=f"one of {sorted(ENGINE_ARCH)}")
    packages = dpkg_manifest(tarball)
    info = {**info, "tar_sha256": sha256_file(tarball), "packages": len(packages.splitlines()),
            "packages_sha256": sha256_bytes(packages.encode())}
    archive = tarball.with_name(f"{tarball.name}.image")
    try:
        expected = write_image_archive(tarball, archive, ref, boot, arch)
        with open(archive, "rb") as fh:
            engine.load(fh)
    except EngineError as err:
        # Never retried (the archive streams once): when the answer was lost on the way, the
        # tag says whether the load happened.
        if not is_transient(err.__cause__ or err) or engine.image_id(ref) is None:
            raise
    finally:
        archive.unlink(missing_ok=True)
    if (rootfs_id := engine.image_id(ref)) is None:
        raise EngineError(f"the engine loaded the root file system but has no {ref}",
                          why=f"the archive's config makes image {expected}")
    return rootfs_id, info


def carried_over(base_info: dict[str, Any], entry: dict[str, Any] | None) -> float:
    """What the root file system cost: measured now, or, when the engine still held the tree
    (cached by its key), as the lock recorded it for the same key, with its tar and package
    digests; 0 without a bootstrap."""
    if base_info.get("source") != SOURCE:
        return 0.0
    if "bootstrap_seconds" not in base_info:
        before = (entry or {}).get("base", {})
        if before.get("key") == base_info["key"]:
            base_info |= {k: before[k] for k in ("bootstrap_seconds", "tar_sha256", "packages",
                                                  "packages_sha256") if k in before}
    return float(base_info.get("bootstrap_seconds", 0.0))


def _host_output(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def run_host(argv: list[str], what: str, env: dict[str, str] | None = None) -> None:
    """Run a host program of ours; its failure quotes its last lines, and is transient (so
    retried by a caller that may repeat it) when its output says the network failed."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).splitlines()
        failed = f"{what} failed with exit code {proc.returncode}"
        if mark := transient_mark(output):
            raise TransientFailure(failed, why="\n".join([mark, *output[-5:]]))
        raise SandbenchError(failed, why="\n".join(output[-5:]))
