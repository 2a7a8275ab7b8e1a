"""4. Privilege: setuid binaries in the image, unshare, mount, ptrace of the timing helper,
raw sockets, device nodes, and the system calls the default seccomp profile refuses."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images
from orchestrator.errors import GuardViolation
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import HelperFile, Mount, SandboxSpec, default_user
from tests.security.conftest import MainRun, World

pytestmark = pytest.mark.integration


def test_setuid_binaries_gain_nothing(main_run: MainRun) -> None:
    tried = main_run.attempts("h-priv", 0)
    status = tried["own status"][1]
    # The bounding set keeps the executor's SETUID and SETGID (PID 1 needs them), which the
    # tool holds in no other set; no-new-privileges stops a setuid binary bringing them back.
    for field in ("CapPrm: 0000000000000000",
                  "CapEff: 0000000000000000", "CapBnd: 00000000000000c0",
                  "CapAmb: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2"):
        assert field in status, status
    setuid = tried["setuid binaries in the image"][1].split()
    assert {"/usr/local/bin/suid-python", "/usr/bin/mount", "/usr/bin/su"} <= set(setuid)
    assert tried["suid-python euid"] == ("OK", "euid 65532") or \
        tried["suid-python euid"][1].endswith(f"euid {default_user().split(':')[0]}")
    assert "PermissionError" in tried["suid-python setuid(0)"][1]
    assert tried["suid-id"][0] == "OK" and "euid=" not in tried["suid-id"][1]
    assert "must be superuser" in tried["mount (setuid) tmpfs on /tmp/m"][1]
    assert tried["su -c id"][0] != "OK"
    for what in ("setuid(0)", "setgid(0)", "chroot /tmp"):
        assert tried[what][0] == "EPERM", (what, tried[what])


def test_namespaces_and_mounts_are_refused(main_run: MainRun) -> None:
    tried = main_run.attempts("h-priv", 0)
    for what in ("unshare(user)", "unshare(mount)", "unshare(net)", "unshare(pid)",
                 "mount(2) tmpfs on /tmp", "mount(2) bind / on /tmp", "setns into own net ns"):
        assert tried[what][0] == "EPERM", (what, tried[what])
    # PID 1's namespace files do not even open now (it is non-dumpable); setns itself is
    # refused above on a namespace file that does.
    assert tried["setns into PID 1's net ns"][0] == "EACCES", tried["setns into PID 1's net ns"]
    for what in ("unshare -r (user ns, map root)", "unshare -m mount"):
        assert tried[what][0] != "OK" and "Operation not permitted" in tried[what][1]


def test_the_timing_helpers_cannot_be_traced_read_or_written(main_run: MainRun) -> None:
    tried = main_run.attempts("h-priv", 1)
    for who in ("helper", "PID 1 helper"):
        checks = [f"ptrace ATTACH {who}", f"ptrace SEIZE {who}", f"open /proc/{who}/mem rw",
                  f"open /proc/{who}/fd/1 for writing", f"listdir /proc/{who}/fd",
                  f"read /proc/{who}/environ", f"process_vm_readv {who}",
                  f"pidfd_getfd {who} stdout"]
        for what in checks:
            result, detail = tried[what]
            assert result in {"EPERM", "EACCES"}, (what, result, detail)
    # The tool's own descriptors are its stdio only: nothing leads to the exec stream.
    fds = tried["own descriptors"][1]
    assert fds.startswith("{0: '/dev/null', 1: 'pipe:") and "3:" not in fds


def test_pid1_is_the_idle_helper_and_cannot_be_traced_or_read(main_run: MainRun) -> None:
    """No docker-init: PID 1 is the PID 1 helper itself, non-dumpable, so neither ptrace nor
    its /proc entries (environ, root, exe, fd) are open to the tool, though it is the same
    uid; every path through /proc/1/root in the other attacks stops at EACCES."""
    tried = main_run.attempts("h-priv", 1)
    assert tried["PID 1"] == ("IS", "/.sandbench/sandbench-exec serve")
    assert tried["ptrace ATTACH PID 1"][0] == "EPERM", tried["ptrace ATTACH PID 1"]
    for what in ("read /proc/1/environ", "listdir /proc/1/root", "readlink /proc/1/exe"):
        assert tried[what][0] == "EACCES", (what, tried[what])
    via_root = {k: v for arm in ("h-read", "h-write")
                for phase in (0, 1) for k, v in main_run.attempts(arm, phase).items()
                if k.endswith("via /proc/1/root")}
    assert len(via_root) == 14, via_root
    assert {v[0] for v in via_root.values()} == {"EACCES"}, via_root
    assert main_run.attempts("h-log", 0)["open PID 1's stdout (the container log)"][0] == \
        "EACCES"


def test_raw_sockets_and_device_nodes_are_refused(main_run: MainRun) -> None:
    tried = main_run.attempts("h-priv", 2)
    for what in ("socket raw ICMP", "socket raw IP", "socket raw ICMPv6",
                 "socket packet (all protocols)", "socket packet dgram"):
        assert tried[what][0] == "EPERM", (what, tried[what])
    mknods = [k for k in tried if k.startswith("mknod ")]
    assert len(mknods) == 4 and all(tried[k][0] == "EPERM" for k in mknods)
    opens = [k for k in tried if k.startswith("open /dev/")]
    assert len(opens) == 10 and all(tried[k][0] in {"ENOENT", "ENXIO", "EACCES"} for k in opens)
    assert set(tried["/dev"][1].split()) == {"fd", "full", "mqueue", "null", "ptmx", "pts",
                                             "random", "shm", "stderr", "stdin", "stdout",
                                             "tty", "urandom", "zero"}
    assert tried["exec from /tmp (noexec)"][0] == "EACCES"
    assert tried["exec from /dev/shm (noexec)"][0] == "EACCES"
    assert tried["chown /state/forged-root to 0"][0] == "EPERM"
    # An unprivileged ICMP socket is allowed by the kernel; it reaches only the sandbox's own
    # loopback (and the host listener saw nothing: test_egress).
    assert "own loopback" in tried["ICMP datagram socket to 127.0.0.1"][1] or \
        tried["ICMP datagram socket to 127.0.0.1"][0] != "OK"


def test_dangerous_system_calls_are_refused(main_run: MainRun) -> None:
    tried = main_run.attempts("h-priv", 3)
    calls = {k: v for k, v in tried.items() if k.startswith("syscall ")}
    assert len(calls) >= 13
    for what, (result, detail) in calls.items():
        assert result == "EPERM", (what, result, detail)


def test_every_sandbox_ran_under_the_seccomp_filter(main_run: MainRun) -> None:
    """Guard `seccomp` (inside) saw filter mode in every arm that got as far as the probe."""
    for folder in sorted((main_run.run_dir / "guards").iterdir()):
        if folder.name == "h-volume":
            continue  # refused from outside before any probe (test_neighbours)
        verdict = {r["guard"]: r for r in json.loads((folder / "verdict.json").read_text())}
        assert verdict["seccomp"]["ok"] and verdict["seccomp"]["found"] == 2, \
            (folder.name, verdict["seccomp"])
        assert verdict["confinement"]["ok"], (folder.name, verdict["confinement"])


@dataclasses.dataclass(frozen=True)
class Unconfined(SandboxSpec):
    """The spec a run would use, created with one confinement opt-out added."""

    opt_out: str = "seccomp=unconfined"

    def create_kwargs(self) -> dict[str, Any]:
        kwargs = super().create_kwargs()
        return {**kwargs, "security_opt": [*kwargs["security_opt"], self.opt_out]}


@pytest.mark.parametrize("opt_out", ["seccomp=unconfined", "seccomp:unconfined",
                                     "apparmor=unconfined", "label=disable"])
def test_a_sandbox_opting_out_of_confinement_is_refused(world: World, tmp_path: Path,
                                              opt_out: str) -> None:
    """Refused from outside by guard `confinement`, before the probe runs anything in it."""
    lock = images.ImageLock.load(world.settings.images_lock)
    user = default_user()
    mounts = [Mount(tmp_path / name, f"/{name}") for name in ("corpus", "state", "out")]
    spec = Unconfined(run_id=f"security-{tmp_path.name}"[:60], arm="h-seccomp",
                      image_id=lock.image_id("hostile"), tool_version="test", user=user,
                      env={}, helper=HelperFile(*lock.helper()), mounts=tuple(mounts),
                      workdir="/corpus", opt_out=opt_out)
    with Sandbox(world.engine, spec) as box, pytest.raises(GuardViolation) as refused:
        box.verify(tmp_path / "guards")
    failed = refused.value.data["failures"]
    assert [(f.guard, f.side, f.found) for f in failed] == \
        [("confinement", "outside", [opt_out])], failed
    assert refused.value.why.startswith("confinement: ")
    assert not (tmp_path / "guards" / "probe.json").exists()
