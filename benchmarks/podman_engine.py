"""A `podman system service` of this process's own, for the Podman test and figure: Podman's
Docker API on a socket of its own, over storage of its own (`--root`, `--runroot`,
`--tmpdir`), so it sees no other container or image of this host and leaves none behind;
stopped by its own pid, never by a name.

Its containers.conf sets the default rlimits to the service's own hard limits, as the kernel
shows them for its pid (Podman changes its own on start): Podman asks for 1048576 open files
and processes for a rootful container, which a host whose root lacks CAP_SYS_RESOURCE (this
machine, many CI runners) may not raise to, and every start would fail ("error setting
rlimits"). Docker's containers inherit dockerd's limits; this gives Podman's the service's.
The service is started once to read them, then again with them."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.second_engine import started
from orchestrator.engine import Engine
from orchestrator.errors import EngineError


class PodmanService:
    """A Podman service of this process's own and the engine answering at its socket."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "podman.sock"
        self.url = f"unix://{self.socket}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "service.log"

    def podman(self, *argv: str) -> list[str]:
        """A podman command line on this service's storage alone."""
        return ["podman", "--root", str(self.root / "storage"), "--runroot",
                str(self.root / "run"), "--tmpdir", str(self.root / "tmp"),
                "--cgroup-manager", "cgroupfs", "--events-backend", "file", *argv]

    def _write_conf(self, limits: list[str]) -> Path:
        conf = self.root / "containers.conf"
        quoted = ", ".join(f'"{limit}"' for limit in limits)
        conf.write_text(f"[containers]\ndefault_ulimits = [{quoted}]\n", encoding="utf-8")
        return conf

    def _own_limits(self) -> list[str]:
        """The running service's hard limits on open files and processes, as containers.conf
        spells them (an unlimited one is left to Podman)."""
        assert self.proc is not None
        rows = {"Max open files": "nofile", "Max processes": "nproc"}
        limits = []
        for line in Path(f"/proc/{self.proc.pid}/limits").read_text().splitlines():
            name = next((n for row, n in rows.items() if line.startswith(row)), None)
            hard = line.split()[-2] if name else "unlimited"
            if name and hard.isdigit():
                limits.append(f"{name}={hard}:{hard}")
        return limits

    def start(self, timeout_s: float = 60) -> Engine:
        self._launch(self._write_conf([]), timeout_s)
        limits = self._own_limits()
        self._end()
        self.socket.unlink(missing_ok=True)
        return self._launch(self._write_conf(limits), timeout_s)

    def _launch(self, conf: Path, timeout_s: float) -> Engine:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.podman("system", "service", "--time=0", self.url),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "CONTAINERS_CONF": str(conf)})
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"podman system service exited {self.proc.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                if self.socket.is_socket():
                    return Engine.connect(address=self.url)
            except EngineError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"podman system service did not answer within {timeout_s} s")
            time.sleep(0.5)

    def stop(self) -> None:
        """Its containers and images removed (its storage's alone), then the service ended by
        its pid; the storage's mounts end with them."""
        if self.proc is not None and self.proc.poll() is None:
            for argv in (("rm", "--all", "--force"), ("rmi", "--all", "--force")):
                subprocess.run(self.podman(*argv), capture_output=True, timeout=300,
                               check=False)
            self._end()

    def _end(self) -> None:
        """The service ended by its own pid."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@contextmanager
def podman_service() -> Iterator[PodmanService]:
    """A started Podman service in a temporary directory, stopped and removed on exit."""
    with started("sandbench-podman-", PodmanService) as service:
        yield service
