"""A rootless dockerd on this machine, for the rootless test and figures: Docker's own
`dockerd-rootless.sh` (rootlesskit, slirp4netns) run as a dedicated test user, with its own
data root, exec root, socket and network namespace (its bridge lives there, never the
host's), so it touches nothing of the shared engine; stopped by its own pid, never by name.

Two things of this host it needs for its life, each undone on the way out:
- its root directory a shared mount of its own: the engine lives in a mount namespace of
  its own, and sees what this host mounts later (an arm's file systems under the run dir)
  only under a shared mount (systemd makes `/` shared; this machine's `/` is private);
- /dev/net/tun open to its user (slirp4netns makes its tap device with it; Debian's udev
  gives it mode 0666, this machine's devtmpfs 0600)."""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.second_engine import (add_subids, mounted, remove_subids, started,
                                      wait_until_answers)
from orchestrator.sandbox import cleanup
from orchestrator.engine import Engine

USER = "sandbench-rootless"
# Its subordinate range: far from any the host hands out and from second_engine's remap.
SUBID_BASE, SUBID_COUNT = 0x60000000, 65536
ENSURE = Path(__file__).resolve().parents[1] / "scripts" / "ensure-rootless"
TUN = Path("/dev/net/tun")


class RootlessEngine:
    """A rootless dockerd of this test's own in `root`, started and stopped by its pid."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home, self.runtime_dir = root / "home", root / "run"
        self.socket = self.runtime_dir / "docker.sock"
        self.url = f"unix://{self.socket}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._user_added = False
        self._subids: list[tuple[Path, str]] = []
        self._tun_mode: int | None = None
        self._shared = False

    @property
    def uid(self) -> int:
        return pwd.getpwnam(USER).pw_uid

    @property
    def gid(self) -> int:
        return pwd.getpwnam(USER).pw_gid

    def start(self) -> None:
        launcher = subprocess.run([str(ENSURE)], check=True, capture_output=True,
                                  text=True).stdout.strip()
        self._add_user()
        self._subids = add_subids(USER, SUBID_BASE, SUBID_COUNT)
        self._open_tun()
        self.root.chmod(0o711)  # the engine's user reaches the run dirs below, nothing else
        subprocess.run(["mount", "--bind", str(self.root), str(self.root)], check=True)
        subprocess.run(["mount", "--make-shared", str(self.root)], check=True)
        self._shared = True
        for own in (self.home, self.runtime_dir):
            own.mkdir(mode=0o700)
            os.chown(own, self.uid, self.gid)
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 - the daemon keeps it
        self.proc = subprocess.Popen(
            ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", launcher,
             "--data-root", str(self.home / "data"), "--exec-root", str(self.runtime_dir / "exec"),
             "--pidfile", str(self.runtime_dir / "dockerd.pid"), "-H", self.url],
            env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(self.home),
                 "XDG_RUNTIME_DIR": str(self.runtime_dir)},
            cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_until_answers(self.url, self.proc, self.root / "dockerd.log")

    def _add_user(self) -> None:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", USER], check=True)
            self._user_added = True

    def _open_tun(self) -> None:
        mode = stat.S_IMODE(os.stat(TUN).st_mode)
        if mode & 0o006 != 0o006:
            os.chmod(TUN, mode | 0o666)
            self._tun_mode = mode

    def stop(self) -> None:
        """Remove what a run left on it, SIGTERM its rootlesskit (which stops its dockerd and
        containerd) and wait; then what it needed of this host is put back."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                engine = Engine.connect(address=self.url)
                cleanup.remove(engine, cleanup.find(engine))
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=30)
            self._end_leftovers()
        finally:
            self._unmount_root()
            if self._tun_mode is not None:
                os.chmod(TUN, self._tun_mode)
            remove_subids(self._subids)
            if self._user_added:
                subprocess.run(["userdel", USER], check=False)

    def _end_leftovers(self) -> None:
        """Every process still running as the engine's user or one of its subordinate ids
        (the engine's own and its containers': it runs nothing else) ended by its pid, until
        none is left (at most 30 s): its namespace holds the root mount until then."""
        uid = self.uid
        ours = range(SUBID_BASE, SUBID_BASE + SUBID_COUNT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = []
            for entry in Path("/proc").iterdir():
                try:
                    if entry.name.isdigit() and (entry.stat().st_uid == uid
                                                 or entry.stat().st_uid in ours):
                        left.append(int(entry.name))
                except FileNotFoundError:
                    continue
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            time.sleep(0.2)

    def _unmount_root(self) -> None:
        """The root's bind mount taken down: tried for a few seconds while the engine's last
        processes go, then detached lazily (it holds nothing of the host's but this dir)."""
        if not self._shared:
            return
        for _ in range(20):
            if not mounted(str(self.root)):
                return
            subprocess.run(["umount", str(self.root)], check=False, capture_output=True)
            time.sleep(0.25)
        if mounted(str(self.root)):
            subprocess.run(["umount", "--lazy", str(self.root)], check=False)


@contextmanager
def rootless_dockerd() -> Iterator[RootlessEngine]:
    """A started rootless engine, stopped and its directories removed on the way out."""
    with started("sb-rootless-", RootlessEngine) as daemon:
        yield daemon
