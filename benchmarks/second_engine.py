"""A second dockerd on this machine, for the multi-engine test and figures: its own data
root, exec root, pid file, socket and bridge, no iptables and a cgroup parent of its own, so
it touches nothing of the shared engine; stopped by its own pid (and its containerd by the
pid that containerd wrote), never by a name.

It gets a bridge of its own rather than `--bridge=none`: a dockerd started without a bridge
deletes the host's `docker0`, which is the shared engine's."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator import cleanup
from orchestrator.engine import Engine
from orchestrator.errors import EngineError


class SecondEngine:
    """A dockerd of this test's own, stopped by its own pid (and its containerd by the pid
    it wrote), never by name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "docker.sock"
        self.url = f"unix://{self.socket}"
        self.proc: subprocess.Popen[bytes] | None = None
        # An interface name holds at most 15 bytes; a random one never meets the host's.
        self.bridge = f"sbtest{secrets.token_hex(3)}"

    def _add_bridge(self) -> None:
        """The engine's own bridge, with an address from a block docker0 never takes; the
        containers of a run have no network, so nothing is routed through it."""
        if Path(f"/sys/class/net/{self.bridge}").exists():
            return
        octet = 16 + secrets.randbelow(200)
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        subprocess.run(["ip", "addr", "add", f"10.213.{octet}.1/24", "dev", self.bridge],
                       check=True)
        subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)

    def _remove_bridge(self) -> None:
        if Path(f"/sys/class/net/{self.bridge}").exists():
            subprocess.run(["ip", "link", "delete", self.bridge], check=False)

    def start(self) -> None:
        self._add_bridge()
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 - the daemon keeps it
        self.proc = subprocess.Popen(
            ["dockerd", "--data-root", str(self.root / "data"),
             "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "dockerd.pid"),
             "-H", self.url, f"--bridge={self.bridge}", "--iptables=false", "--ip6tables=false",
             "--ip-masq=false", "--cgroup-parent=/sandbench-test-engine"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while True:
            try:
                Engine.connect(timeout_s=5, address=self.url)
                return
            except EngineError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.5)

    def kill(self) -> None:
        """The engine lost: SIGKILL to this dockerd alone."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """Remove what a killed run left on it (through the daemon, started again when it was
        killed), then SIGTERM it and, if it outlived it, its containerd."""
        if self.proc is not None and self.proc.poll() is not None:
            self.start()
        if self.proc is None:
            self._remove_bridge()
            return
        engine = Engine.connect(address=self.url)
        cleanup.remove(engine, cleanup.find(engine))
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=90)
        pidfile = self.root / "exec" / "containerd" / "containerd.pid"
        if pidfile.is_file():
            pid = int(pidfile.read_text().strip() or 0)
            cmdline = Path(f"/proc/{pid}/cmdline")
            if pid and cmdline.exists() and str(self.root).encode() in cmdline.read_bytes():
                os.kill(pid, signal.SIGTERM)
        # dockerd makes its data root a mount of its own; one killed and started again
        # leaves one mount per start: unmount each (a bounded number of times).
        # (A bind mount of a directory on itself keeps its device and inode, so
        # os.path.ismount cannot see it: the mount table says.)
        data = str(self.root / "data")
        for _ in range(8):
            if not _mounted(data):
                break
            subprocess.run(["umount", data], check=False)
        self._remove_bridge()


def _mounted(point: str) -> bool:
    """Whether `point` is a mount point in this mount namespace (/proc/self/mountinfo)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        return any(line.split()[4] == point for line in table)


@contextmanager
def second_dockerd() -> Iterator[SecondEngine]:
    """A started second engine, stopped and its directories removed on the way out."""
    # A short path: a unix socket's path holds at most 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="sb-engine-", dir="/tmp"))
    daemon = SecondEngine(root)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
