"""A second dockerd on this machine, for the multi-engine test and figures: its own data
root, exec root, pid file, socket and bridge, no iptables and a cgroup parent of its own, so
it touches nothing of the shared engine; stopped by its own pid (and its containerd by the
pid that containerd wrote), never by a name.

It gets a bridge of its own rather than `--bridge=none`: a dockerd started without a bridge
deletes the host's `docker0`, which is the shared engine's."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from orchestrator.sandbox import cleanup
from orchestrator.engine import Engine
from orchestrator.errors import EngineError


def wait_until_answers(url: str, proc: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    """Until the dockerd just started at `url` answers; its log's end in the error when it
    exits or does not answer in time."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            Engine.connect(timeout_s=5, address=url)
            return
        except EngineError:
            if time.monotonic() > deadline or proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise EngineError(f"the dockerd at {url} did not answer", why=tail) from None
            time.sleep(0.5)


# The subordinate range of a userns-remap engine: an existing account with no files of its
# own, and ids far above any the host hands out.
REMAP_USER, REMAP_GROUP = "nobody", "nogroup"
REMAP_BASE, REMAP_COUNT = 0x70000000, 65536


class SecondEngine:
    """A dockerd of this test's own, stopped by its own pid (and its containerd by the pid
    it wrote), never by name."""

    def __init__(self, root: Path, tls: bool = False, outbound: bool = False,
                 userns_remap: bool = False) -> None:
        self.root = root
        self.socket = root / "docker.sock"
        self.url = f"unix://{self.socket}"
        self.proc: subprocess.Popen[bytes] | None = None
        # With `tls`, the engine also listens on tcp://127.0.0.1:PORT with mutual TLS: to
        # sandbench an engine of another host (it shares nothing of this one but the kernel).
        self.certs = root / "tls" if tls else None
        self.tcp_url: str | None = None
        # An interface name holds at most 15 bytes; a random one never meets the host's.
        self.bridge = f"sbtest{secrets.token_hex(3)}"
        self.subnet = f"10.213.{16 + secrets.randbelow(200)}"
        # With `outbound`, its containers (image builds) reach the network: through netfilter
        # rules of its own, named by its bridge and subnet, deleted by the same specs on stop
        # (the shared engine's DOCKER chains are never touched).
        self.outbound = outbound
        # With `userns_remap`, container uid/gid 0 is REMAP_BASE on the host (REMAP_USER's
        # subordinate range, written to /etc/subuid and /etc/subgid for the engine's life).
        self.userns_remap = userns_remap
        self._subids_added: list[tuple[Path, str]] = []

    def _add_bridge(self) -> None:
        """The engine's own bridge, with an address from a block docker0 never takes; the
        containers of a run have no network, so nothing is routed through it."""
        if Path(f"/sys/class/net/{self.bridge}").exists():
            return
        subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
        subprocess.run(["ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge],
                       check=True)
        subprocess.run(["ip", "link", "set", self.bridge, "up"], check=True)
        if self.outbound:
            for table, chain, rule in self._outbound_rules():
                subprocess.run(["iptables", "-t", table, "-I", chain, *rule], check=True)

    def _outbound_rules(self) -> list[tuple[str, str, list[str]]]:
        """(table, chain, rule): out of this bridge, the answers back in, and masquerading of
        this engine's subnet only."""
        return [("filter", "FORWARD", ["-i", self.bridge, "!", "-o", self.bridge, "-j",
                                       "ACCEPT"]),
                ("filter", "FORWARD", ["-o", self.bridge, "-m", "conntrack", "--ctstate",
                                       "RELATED,ESTABLISHED", "-j", "ACCEPT"]),
                ("nat", "POSTROUTING", ["-s", f"{self.subnet}.0/24", "!", "-o", self.bridge,
                                        "-j", "MASQUERADE"])]

    def _remove_bridge(self) -> None:
        if self.outbound:
            for table, chain, rule in self._outbound_rules():
                subprocess.run(["iptables", "-t", table, "-D", chain, *rule], check=False,
                               capture_output=True)
        if Path(f"/sys/class/net/{self.bridge}").exists():
            subprocess.run(["ip", "link", "delete", self.bridge], check=False)

    def _add_subids(self) -> list[str]:
        """The remap range in /etc/subuid and /etc/subgid (dockerd reads them as it starts);
        the dockerd argument that uses it."""
        if not self.userns_remap:
            return []
        self._subids_added += add_subids(REMAP_USER, REMAP_BASE, REMAP_COUNT)
        return [f"--userns-remap={REMAP_USER}:{REMAP_GROUP}"]

    def _remove_subids(self) -> None:
        remove_subids(self._subids_added)

    def _tls_arguments(self) -> list[str]:
        """A CA, a server certificate for 127.0.0.1 and a client certificate (Docker's
        ca.pem/cert.pem/key.pem in `certs`, for DOCKER_CERT_PATH), and dockerd's TLS flags."""
        assert self.certs is not None
        if self.tcp_url is None:
            with socket.socket() as probe:  # a free port, taken once
                probe.bind(("127.0.0.1", 0))
                self.tcp_url = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
        certs = self.certs
        if not (certs / "server-cert.pem").is_file():
            certs.mkdir(parents=True, exist_ok=True)
            _make_certificates(certs)
        return ["-H", self.tcp_url, "--tlsverify", f"--tlscacert={certs / 'ca.pem'}",
                f"--tlscert={certs / 'server-cert.pem'}", f"--tlskey={certs / 'server-key.pem'}"]

    def start(self) -> None:
        self._add_bridge()
        self._forget_dead_containerd()
        tls = self._tls_arguments() if self.certs is not None else []
        remap = self._add_subids()
        if remap:  # the remapped root must reach its data root's subdirectory
            self.root.chmod(0o711)
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 - the daemon keeps it
        self.proc = subprocess.Popen(
            ["dockerd", "--data-root", str(self.root / "data"),
             "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "dockerd.pid"),
             "-H", self.url, *tls, *remap, f"--bridge={self.bridge}", "--iptables=false",
             "--ip6tables=false", "--ip-masq=false", "--cgroup-parent=/sandbench-test-engine"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_until_answers(self.url, self.proc, self.root / "dockerd.log")

    def restart(self) -> None:
        """The engine restarted under a run: SIGTERM to this dockerd (its own pid), waited
        for, its containerd stopped if it outlived it, then started again on the same roots
        (its images and containers kept)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=90)
        self._signal_containerd(signal.SIGTERM)
        for _ in range(150):
            if not self._containerd_alive():
                break
            time.sleep(0.2)
        self.start()

    def _containerd_alive(self) -> bool:
        pid = self._containerd_pid()
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return False
        return bool(pid) and state not in ("Z", "X")

    def kill(self) -> None:
        """The engine lost: SIGKILL to this dockerd, then to its containerd (a containerd
        that outlives its dockerd keeps its database locked, and no dockerd on this root
        starts again)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._signal_containerd(signal.SIGKILL)

    @property
    def _containerd_pidfile(self) -> Path:
        return self.root / "exec" / "containerd" / "containerd.pid"

    def _containerd_pid(self) -> int:
        try:
            return int(self._containerd_pidfile.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def _signal_containerd(self, signum: int) -> None:
        """`signum` to this engine's containerd: the pid it wrote, checked to be ours."""
        pid = self._containerd_pid()
        cmdline = Path(f"/proc/{pid}/cmdline")
        if pid and cmdline.exists() and str(self.root).encode() in cmdline.read_bytes():
            os.kill(pid, signum)

    def _detach_loop_devices(self) -> None:
        """Loop devices left attached to file-system images in this engine's volumes (an
        engine of another host killed mid-arm cannot detach them): found by the image's
        inode, each detached, before its directory is removed."""
        images = {(os.stat(f).st_dev, os.stat(f).st_ino)
                  for f in (self.root / "data" / "volumes").glob("*/_data/*/*.ext4")}
        if not images:
            return
        listed = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-INO,MAJ:MIN,"
                                 "BACK-MAJ:MIN"], capture_output=True, text=True, check=False)
        for device in (json.loads(listed.stdout or "{}").get("loopdevices") or []):
            major, minor = (int(x) for x in str(device.get("back-maj:min", "0:0")).split(":"))
            if (os.makedev(major, minor), int(device.get("back-ino") or 0)) in images:
                subprocess.run(["losetup", "-d", device["name"]], check=False)

    def _forget_dead_containerd(self) -> None:
        """A killed dockerd's containerd dies with it but may linger as a zombie until this
        machine's init reaps it, and a dockerd finding its pid file then waits for it to
        answer, forever: the pid file of a containerd that is gone or a zombie is removed."""
        pid = self._containerd_pid()
        if not pid:
            return
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            state = "gone"
        if state in ("gone", "Z", "X"):
            self._containerd_pidfile.unlink(missing_ok=True)

    def stop(self) -> None:
        """Remove what a killed run left on it (through the daemon, started again when it was
        killed), then SIGTERM it and, if it outlived it, its containerd. Its bridge and
        subordinate ids go whatever happened (an engine that never started included)."""
        try:
            self._stop_daemon()
        finally:
            self._remove_bridge()
            self._remove_subids()

    def _stop_daemon(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self.start()
        if self.proc is None:
            return
        engine = Engine.connect(address=self.url)
        cleanup.remove(engine, cleanup.find(engine))
        self._detach_loop_devices()  # its containers gone, their volumes are unmounted
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=90)
        self._signal_containerd(signal.SIGTERM)
        # dockerd makes its data root a mount of its own; one killed and started again
        # leaves one mount per start: unmount each (a bounded number of times).
        # (A bind mount of a directory on itself keeps its device and inode, so
        # os.path.ismount cannot see it: the mount table says.)
        data = str(self.root / "data")
        for _ in range(8):
            if not mounted(data):
                break
            subprocess.run(["umount", data], check=False)


def add_subids(user: str, base: int, count: int) -> list[tuple[Path, str]]:
    """`user`'s subordinate range in /etc/subuid and /etc/subgid (looked up by name), each
    line added unless present; returns the lines this call wrote, for `remove_subids`."""
    added = []
    for table in (Path("/etc/subuid"), Path("/etc/subgid")):
        line = f"{user}:{base}:{count}\n"
        present = table.read_text() if table.exists() else ""
        if line not in present.splitlines(keepends=True):
            with open(table, "a", encoding="utf-8") as fh:
                fh.write(("" if not present or present.endswith("\n") else "\n") + line)
            added.append((table, line))
    return added


def remove_subids(added: list[tuple[Path, str]]) -> None:
    """Exactly the lines `add_subids` wrote, nothing else of the tables (emptied as it goes)."""
    while added:
        table, line = added.pop()
        if table.exists():
            table.write_text("".join(x for x in table.read_text().splitlines(keepends=True)
                                     if x != line))


def _make_certificates(certs: Path) -> None:
    """openssl: a throwaway CA signing a server certificate (127.0.0.1) and a client one."""
    def run(*argv: str) -> None:
        subprocess.run(["openssl", *argv], cwd=certs, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=sb-ca",
        "-keyout", "ca-key.pem", "-out", "ca.pem")
    (certs / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (certs / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject in (("server", "/CN=127.0.0.1"), ("client", "/CN=sandbench")):
        key = "key.pem" if name == "client" else "server-key.pem"
        cert = "cert.pem" if name == "client" else "server-cert.pem"
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", key,
            "-out", f"{name}.csr")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", cert)


def mounted(point: str) -> bool:
    """Whether `point` is a mount point in this mount namespace (/proc/self/mountinfo)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        return any(line.split()[4] == point for line in table)


@contextmanager
def second_dockerd(tls: bool = False, outbound: bool = False,
                   userns_remap: bool = False) -> Iterator[SecondEngine]:
    """A started second engine (with a mutual-TLS tcp:// listener too when `tls`, a way out
    for its containers when `outbound`, its containers' ids remapped when `userns_remap`),
    stopped and its directories removed on the way out."""
    with started("sb-engine-", lambda root: SecondEngine(root, tls, outbound, userns_remap)
                 ) as daemon:
        yield daemon


class Daemon(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


D = TypeVar("D", bound=Daemon)


@contextmanager
def started(prefix: str, make: Callable[[Path], D]) -> Iterator[D]:
    """`make(root)` started in a new directory under /tmp (short: a unix socket's path holds
    at most 107 bytes), stopped and the directory removed on the way out."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    daemon = make(root)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
