"""The kernel boundary: the attacks that go through the kernel (privilege, system calls, raw
sockets and devices, tracing the helpers, egress) run in a hostile arm's sandbox under each
container runtime, runc (the host's kernel) and runsc (gVisor's), and every guard is verified
under both; plus an arm that claims runsc on a container the engine runs under runc.

These attacks run in a sandbox of their own, not through a run, each by a plain exec of the
engine as the tool's uid beside the PID 1 helper (runsc runs without the engine's seccomp
profile, see inside.UNDER_GVISOR, so they meet gVisor's kernel alone). With the split uids
and Debian trixie's runsc every guard holds under both kernels and the timing helper runs
commands under both; the whole hostile suite then runs under runsc too, and its every
attempt is compared with the same attempt under runc (RUN_DIFFERS lists what differs).
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import arms
from orchestrator.sandbox import canary as canary_mod, one_sandbox, runtimes
from orchestrator.errors import GuardViolation
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import default_user
from orchestrator.run.transcripts import read_record
from orchestrator.isolation import guards, inside
from orchestrator.isolation.policy import GuardResult
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.security.conftest import MAIN_REFUSED, MAIN_RUN_ID, MainRun, World, attempts_in

pytestmark = pytest.mark.integration

PRIV_PHASES = ("privilege", "ptrace_targets", "raw_and_devices", "syscalls")
NET_PHASES = ("egress", "egress_loop")


@dataclass
class Attacked:
    runtime: str
    verdict: list[GuardResult]
    refused: list[str]  # the guards that failed
    helper_run: tuple[str, list[str]]  # a command through the helper: outcome, its errors
    priv: list[dict[str, tuple[str, str]]]  # the attempts of each phase of `attack priv`
    net: list[dict[str, tuple[str, str]]]
    arrived: list[tuple[str, bytes]]  # what reached the host's loopback listener
    nnp: str  # prctl(PR_GET_NO_NEW_PRIVS) as the tool reads it


def _plain(box: Sandbox, argv: list[str], out: Path) -> Path:
    """`argv` by a plain exec of the engine (no timing helper), its stdout kept in `out`."""
    stream = box.engine.exec(box.require_id(), argv, user=box.spec.user, timeout_s=120)
    try:
        with out.open("wb") as fh:
            for stdout, _ in stream.chunks():
                fh.write(stdout or b"")
        assert stream.broken is None, stream.broken
    finally:
        stream.close()
    return out


def _attack(box: Sandbox, world: World, role: str, phases: int, folder: Path,
            *extra: str) -> list[dict[str, tuple[str, str]]]:
    argv = ["attack", role, "--bench", str(world.bench), "--run-dir",
            str(world.bench / "runs" / MAIN_RUN_ID), *extra, "--", "Money"]
    return [attempts_in(_plain(box, argv, folder / f"{role}-{phase}.out"))
            for phase in range(phases)]


_ATTACKED: dict[str, Attacked] = {}


@pytest.fixture(scope="module", params=runtimes.RUNTIMES)
def attacked(request: pytest.FixtureRequest, world: World,
             tmp_path_factory: pytest.TempPathFactory) -> Attacked:
    return _attack_under(request.param, world, tmp_path_factory)


def _attack_under(runtime: str, world: World,
                  tmp_path_factory: pytest.TempPathFactory) -> Attacked:
    """The h-priv arm's sandbox under one runtime: verified, then attacked (once a module)."""
    if runtime in _ATTACKED:
        return _ATTACKED[runtime]
    folder = tmp_path_factory.mktemp(f"runtime-{runtime}")
    (arm,) = arms.load_arms(world.settings.arms_dir, ["h-priv"])
    listener = world.listener
    before = len(listener.arrived)
    run_id, user = f"security-{runtime}", default_user()
    with one_sandbox.member(world.engine, world.settings, run_id, user) as one, \
            one_sandbox.arm_sandbox(one, world.settings, arm, run_id, folder, user,
                                    runtime=runtime) as box:
        try:
            verdict = box.verify(folder / "guards" / arm.name)
        except GuardViolation:
            verdict = guards.audit(folder)[0].results
        through_helper = box.exec(["true"], folder / "helper-run", timeout_s=30)
        priv = _attack(box, world, "priv", len(PRIV_PHASES), folder)
        # Its own /state holds the phase of each role: net starts at its phase 0 after priv.
        _plain(box, ["rm", "-f", "/state/.attack-phase"], folder / "reset.out")
        net = _attack(box, world, "net", len(NET_PHASES), folder, "--port",
                      str(listener.port))
        nnp = _plain(box, ["python3", "-c", "import ctypes; print(ctypes.CDLL(None).prctl("
                           "39, 0, 0, 0, 0))"], folder / "nnp.out").read_text()
        time.sleep(0.3)  # a late datagram still reaches the listener
    _ATTACKED[runtime] = Attacked(
        runtime, verdict, sorted(r.guard for r in guards.failures(verdict)),
        (through_helper.outcome, list(through_helper.helper.get("errors") or [])),
        priv, net, listener.arrived[before:], nnp)
    return _ATTACKED[runtime]


def test_every_guard_holds_under_either_kernel(attacked: Attacked) -> None:
    """Every guard runs and holds under runc and under runsc: with the split uids the
    executor's channel stays closed to the tool under gVisor too."""
    by_guard = {r.guard: r for r in attacked.verdict}
    assert by_guard["runtime"].found == attacked.runtime
    assert by_guard["kernel"].ok, by_guard["kernel"]
    assert set(inside.UNDER_GVISOR) <= set(by_guard)
    assert attacked.refused == []


def test_the_timing_helper_runs_commands_under_either_kernel(attacked: Attacked) -> None:
    """Trixie's gVisor has PR_SET_CHILD_SUBREAPER: the helper runs a command under both."""
    assert attacked.helper_run == ("ok", [])


def test_pid1_cannot_be_traced_nor_its_descriptors_opened_under_either_kernel(
        attacked: Attacked) -> None:
    tried = attacked.priv[1]
    assert tried["PID 1"] == ("IS", "/.sandbench/sandbench-exec serve")
    who = "PID 1 helper"
    for what in (f"ptrace ATTACH {who}", f"ptrace SEIZE {who}", f"process_vm_readv {who}",
                 f"pidfd_getfd {who} stdout", "ptrace ATTACH PID 1"):
        assert tried[what][0] != "OK", (attacked.runtime, what, tried[what])
    # gVisor ignores PR_SET_DUMPABLE: what keeps the descriptor closed there is the uid.
    opened = tried[f"open /proc/{who}/fd/1 for writing"]
    assert opened[0] in {"EPERM", "EACCES"}, (attacked.runtime, opened)


def test_no_privilege_is_gained_under_either_kernel(attacked: Attacked) -> None:
    tried = attacked.priv[0]
    for what in ("setuid(0)", "setgid(0)", "chroot /tmp", "mount(2) tmpfs on /tmp",
                 "mount(2) bind / on /tmp"):
        # Under gVisor a mount after its own unshare(user) is in its own namespaces.
        expected = GVISOR_DIFFERS.get(("priv", 0, what), "EPERM") \
            if attacked.runtime == runtimes.RUNSC else "EPERM"
        assert tried[what][0] == expected, (attacked.runtime, what, tried[what])
    assert "PermissionError" in tried["suid-python setuid(0)"][1]
    assert tried["su -c id"][0] != "OK"
    status = tried["own status"][1]
    for line in ("CapPrm: 0000000000000000", "CapEff: 0000000000000000",
                 "CapBnd: 00000000000000c0"):
        assert line in status, (attacked.runtime, status)
    # The engine's seccomp profile filters the tool's calls under runc only: runsc runs
    # without --oci-seccomp (inside.UNDER_GVISOR), so these attempts meet gVisor's kernel.
    assert f"Seccomp: {2 if attacked.runtime == runtimes.RUNC else 0}" in status, status
    # gVisor prints no NoNewPrivs line; the flag itself is set under both kernels.
    assert attacked.nnp.strip() == "1", attacked.nnp


def test_raw_sockets_devices_and_dangerous_system_calls_are_refused(
        attacked: Attacked) -> None:
    devices, calls = attacked.priv[2], attacked.priv[3]
    for what, (result, detail) in devices.items():
        if what.startswith(("socket raw", "socket packet", "mknod", "open /dev/")) and (
                attacked.runtime, what) not in GVISOR_OWN:
            assert result != "OK", (attacked.runtime, what, detail)
    for what, (result, detail) in calls.items():
        if what.startswith("syscall ") and (attacked.runtime, what) not in GVISOR_OWN:
            assert result in {"EPERM", "ENOSYS", "EINVAL", "EFAULT", "EACCES", "ENODEV"}, \
                (attacked.runtime, what, result, detail)


def test_nothing_reaches_the_hosts_loopback_under_either_kernel(attacked: Attacked) -> None:
    assert attacked.arrived == []
    for phase in attacked.net:
        for what, (result, detail) in phase.items():
            if "host" in what and what.startswith(("tcp", "udp", "connect")):
                assert result != "OK" or "received" not in detail, (what, result, detail)


# What a tool may do under gVisor 2022-12 that runc refuses, each inside the sandbox kernel
# only: its namespaces, device nodes and devices are the Sentry's, not the host's.
GVISOR_OWN = {(runtimes.RUNSC, what) for what in (
    "mknod /tmp/null", "mknod /dev/shm/mem", "open /dev/fuse", "open /dev/net/tun",
    # After its own unshare(user) and unshare(mount), which gVisor allows: a tmpfs in the
    # sandbox kernel's own mount namespace, and a key in its own keyring.
    "mount(2) tmpfs on /tmp", "syscall keyctl")}
# Every attempt of the kernel-boundary phases whose result differs under gVisor (phase file,
# attempt) -> its result there (runc's in the comment); every other attempt's result is the
# same under both kernels. Measured with Debian trixie's runsc 0.0~20240729 and the split uids.
GVISOR_DIFFERS = {
    ("priv", 0, "mount(2) bind / on /tmp"): "EINVAL",  # runc EPERM
    ("priv", 0, "mount(2) tmpfs on /tmp"): "OK",  # runc EPERM; in its own namespaces
    ("priv", 0, "setns into PID 1's net ns"): "EPERM",  # runc EACCES
    ("priv", 0, "setns into own net ns"): "OK",  # runc EPERM
    ("priv", 0, "unshare -m mount"): "ENOMEM",  # runc RuntimeError
    ("priv", 0, "unshare(mount)"): "OK",  # runc EPERM
    ("priv", 0, "unshare(net)"): "OK",  # runc EPERM
    ("priv", 0, "unshare(pid)"): "OK",  # runc EPERM
    ("priv", 0, "unshare(user)"): "OK",  # runc EPERM
    # gVisor ignores the dumpable flag: PID 1's fd list shows, none of them opens (another
    # uid's, mode 0600), and its environment reads back as the zeros PID 1 left there.
    ("priv", 1, "listdir /proc/PID 1 helper/fd"): "OK",  # runc EACCES
    ("priv", 1, "read /proc/1/environ"): "OK",  # runc EACCES
    ("priv", 1, "read /proc/PID 1 helper/environ"): "OK",  # runc EACCES
    ("priv", 1, "pidfd_getfd PID 1 helper stdout"): "ENOSYS",  # runc EPERM
    ("priv", 1, "pidfd_getfd helper stdout"): "ENOSYS",  # runc EINVAL
    ("priv", 1, "process_vm_readv PID 1 helper"): "EPERM",  # runc EACCES
    ("priv", 2, "mknod /dev/shm/mem"): "OK",  # runc EPERM
    ("priv", 2, "mknod /tmp/null"): "OK",  # runc EPERM
    ("priv", 2, "open /dev/fuse"): "OK",  # runc ENOENT
    ("priv", 2, "open /dev/net/tun"): "OK",  # runc ENOENT
    ("priv", 2, "open /dev/tty"): "EIO",  # runc ENXIO
    ("priv", 3, "syscall add_key"): "EACCES",  # runc EPERM
    ("priv", 3, "syscall keyctl"): "OK",  # runc EPERM; gVisor's own keyring
    ("priv", 3, "syscall perf_event_open"): "ENODEV",  # runc EPERM
    ("priv", 3, "syscall userfaultfd"): "ENOSYS",  # runc EPERM
    ("net", 0, "dns-udp [::1]:53"): "ECONNREFUSED",  # runc EADDRNOTAVAIL
}
# Attempts whose target is this process's own parent: under a plain exec that is outside the
# container (runc: pid 0) or the runtime's exec shim, so its results say nothing here.
PARENT = ("helper", "ptrace ATTACH helper", "ptrace SEIZE helper", "open /proc/helper/mem rw",
          "open /proc/helper/fd/1 for writing", "listdir /proc/helper/fd",
          "read /proc/helper/environ", "process_vm_readv helper")


def test_what_gvisor_does_differently_is_exactly_the_known_list(
        world: World, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every attempt of the kernel-boundary phases, runc against runsc: the results differ
    exactly where GVISOR_DIFFERS says, and nowhere else."""
    runc, runsc = (_attack_under(r, world, tmp_path_factory) for r in runtimes.RUNTIMES)
    differs = {}
    for role in ("priv", "net"):
        for phase, (under_runc, under_runsc) in enumerate(zip(
                getattr(runc, role), getattr(runsc, role), strict=True)):
            for what in sorted(set(under_runc) | set(under_runsc)):
                if what in PARENT:
                    continue
                a, b = under_runc.get(what, ("absent", ""))[0], under_runsc.get(
                    what, ("absent", ""))[0]
                if a != b:
                    differs[(role, phase, what)] = b
    assert differs == GVISOR_DIFFERS


def test_an_arm_that_claims_runsc_on_a_runc_container_is_refused(
        world: World, tmp_path: Path) -> None:
    """The engine is asked for runc while the spec (and so the guard policy) says runsc:
    the outside guard refuses it, and the probe's kernel would too."""
    (arm,) = arms.load_arms(world.settings.arms_dir, ["rg"])
    user = default_user()
    with one_sandbox.member(world.engine, world.settings, "security-claim", user) as one, \
            one_sandbox.arm_sandbox(one, world.settings, arm, "security-claim", tmp_path, user,
                                    runtime=runtimes.RUNC) as box:
        claimed = dataclasses.replace(box.spec, runtime=runtimes.RUNSC)
        assert box.policy is not None
        box.policy = dataclasses.replace(box.policy, values={**box.policy.values,
                                                             "runtime": runtimes.RUNSC})
        box.spec = claimed
        with pytest.raises(GuardViolation) as refused:
            box.verify(tmp_path / "guards")
        failed = refused.value.data["failures"]
        assert [(r.guard, r.expected, r.found) for r in failed] == \
            [("runtime", runtimes.RUNSC, runtimes.RUNC)]
        with canary_mod.loopback_canary() as canary:
            facts = box._probe(canary.port)
        kernel = {r.guard: r for r in guards.check_inside(box.policy, {"facts": facts})}
        assert kernel["kernel"].found == inside.HOST_KERNEL and not kernel["kernel"].ok


# Every attempt of the hostile suite whose result differs when its arms run under runsc,
# (arm, attempt) -> (under runc, under runsc), a pid in an attempt's name written N; every
# other attempt of every cell gives the same result under both kernels.
# Measured with Debian trixie's runsc 0.0~20240729 and the split uids. What gVisor allows is
# its own kernel's (namespaces, devices, keyring, the fd list of PID 1, none of which opens,
# and PID 1's environment, which reads back as zeros); what it refuses it refuses with another
# errno; its loopback has an ::1 (runc's sandbox has none).
RUN_DIFFERS: dict[tuple[str, str], tuple[str, str]] = {
    ('h-channel', "list PID 1's descriptors"): ('EACCES', 'OK'),
    ('h-channel', 'pidfd_getfd PID 1 fd 0'): ('EPERM', 'ENOSYS'),
    ('h-channel', 'pidfd_getfd PID 1 fd 1'): ('EPERM', 'ENOSYS'),
    ('h-channel', 'pidfd_getfd the runner fd 0'): ('EPERM', 'ENOSYS'),
    ('h-channel', 'pidfd_getfd the runner fd 1'): ('EPERM', 'ENOSYS'),
    ('h-net', 'dns-udp [::1]:53'): ('EADDRNOTAVAIL', 'ECONNREFUSED'),
    ('h-net', 'tcp [::1]:PORT'): ('EADDRNOTAVAIL', 'ECONNREFUSED'),
    ('h-net', 'udp-roundtrip [::1]:PORT'): ('EADDRNOTAVAIL', 'ECONNREFUSED'),
    ('h-net', 'udp-sendto [::1]:PORT'): ('EADDRNOTAVAIL', 'OK'),
    ('h-priv', 'mount(2) bind / on /tmp'): ('EPERM', 'EINVAL'),
    ('h-priv', 'mount(2) tmpfs on /tmp'): ('EPERM', 'OK'),
    ('h-priv', "setns into PID 1's net ns"): ('EACCES', 'EPERM'),
    ('h-priv', 'setns into own net ns'): ('EPERM', 'OK'),
    ('h-priv', 'unshare(mount)'): ('EPERM', 'OK'),
    ('h-priv', 'unshare(net)'): ('EPERM', 'OK'),
    ('h-priv', 'unshare(pid)'): ('EPERM', 'OK'),
    ('h-priv', 'unshare(user)'): ('EPERM', 'OK'),
    ('h-priv', 'listdir /proc/PID 1 helper/fd'): ('EACCES', 'OK'),
    ('h-priv', 'listdir /proc/helper/fd'): ('EACCES', 'OK'),
    ('h-priv', 'pidfd_getfd PID 1 helper stdout'): ('EPERM', 'ENOSYS'),
    ('h-priv', 'pidfd_getfd helper stdout'): ('EPERM', 'ENOSYS'),
    ('h-priv', 'process_vm_readv PID 1 helper'): ('EACCES', 'EPERM'),
    ('h-priv', 'process_vm_readv helper'): ('EACCES', 'EPERM'),
    ('h-priv', 'read /proc/N/environ'): ('EACCES', 'OK'),
    ('h-priv', 'read /proc/PID 1 helper/environ'): ('EACCES', 'OK'),
    ('h-priv', 'read /proc/helper/environ'): ('EACCES', 'OK'),
    ('h-priv', 'mknod /dev/shm/mem'): ('EPERM', 'OK'),
    ('h-priv', 'mknod /tmp/null'): ('EPERM', 'OK'),
    ('h-priv', 'open /dev/fuse'): ('ENOENT', 'OK'),
    ('h-priv', 'open /dev/net/tun'): ('ENOENT', 'OK'),
    ('h-priv', 'open /dev/tty'): ('ENXIO', 'EIO'),
    ('h-priv', 'syscall add_key'): ('EPERM', 'EACCES'),
    ('h-priv', 'syscall keyctl'): ('EPERM', 'OK'),
    ('h-priv', 'syscall perf_event_open'): ('EPERM', 'ENODEV'),
    ('h-priv', 'syscall userfaultfd'): ('EPERM', 'ENOSYS'),
    ('h-read', 'read /proc/N/environ'): ('EACCES', 'OK'),
    ('h-read', 'read /proc/N/environ (/.sandbench/sandbench-exec serve)'): ('EACCES', 'OK'),
    ('h-read', 'read /proc/kmsg'): ('EACCES', 'ENOENT'),
    ('h-read', 'name_to_handle_at /corpus'): ('EPERM', 'ENOTSUP'),
    ('h-read', 'open_by_handle_at host root via /corpus'): ('EPERM', 'ENOTSUP'),
    ('h-read', 'open_by_handle_at host root via /state'): ('EPERM', 'ENOTSUP'),
    ('h-write', 'write /etc/sandbench-hostile'): ('EROFS', 'EACCES'),
    ('h-write', 'write /proc/sysrq-trigger'): ('ENOENT', 'EACCES'),
    ('h-write', 'write /sandbench-hostile'): ('EROFS', 'EACCES'),
    ('h-write', 'write /usr/bin/rg'): ('EROFS', 'EACCES'),
}
# Arms whose sandbox gVisor itself ends: past the pids limit its Sentry crashes (exit 2), past
# the memory limit the engine kills it (137, OOM); the first cell is `sandbox-died`, every
# later one `sandbox-died` flagged `not-attempted`, and the run goes on. Under runc the same
# attacks get EAGAIN and an OOM kill of the tool alone, and the arm runs every cell.
SANDBOX_DIES = {"h-fork": 2, "h-oom": 137}
_PID = re.compile(r"/proc/\d+/")
_PORT = re.compile(r":\d{4,5}$")  # the canary's port, new each run


def _cells(run_dir: Path) -> dict[tuple[str, str, int], Path]:
    return {(p.parent.parent.parent.name, p.parent.parent.name, int(p.parent.name)): p.parent
            for p in (run_dir / "cells").glob("*/*/*/record.json")}


def _attempts(cell: Path) -> dict[str, str]:
    return {_PORT.sub(":PORT", _PID.sub("/proc/N/", what)): result
            for what, (result, _) in attempts_in(cell / "stdout").items()}


def test_the_hostile_suite_under_runsc_runs_and_differs_from_runc_as_listed(
        world: World, main_run: MainRun) -> None:
    """The whole hostile suite with --runtime runsc: the same arms are refused as under runc
    (the forging helper's by image_helpers, the VOLUME arm by its mounts), the arms gVisor
    ends are classified so and the run goes on, and every attempt of every other cell gives
    its result under runc except where RUN_DIFFERS says."""
    run_dir = runner.run(world.settings, RunOptions("main", jobs=2, runtime=runtimes.RUNSC),
                         [pool.one(world.engine)])
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "refused-arms"
    assert {a["runtime"] for a in meta["arms"].values()} == {runtimes.RUNSC}
    refused = {name for name, arm in meta["arms"].items() if arm.get("refused")}
    assert refused == MAIN_REFUSED == {name for name, arm in main_run.meta["arms"].items()
                                       if arm.get("refused")}
    under_runc, under_runsc = _cells(main_run.run_dir), _cells(run_dir)
    assert set(under_runsc) == set(under_runc)
    for cell in sorted(c for c in under_runsc if c[0] in SANDBOX_DIES):
        record = read_record(under_runsc[cell] / "record.json")
        first = cell == min(c for c in under_runsc if c[0] == cell[0])
        assert record.outcome == "sandbox-died", (cell, record.outcome)
        assert record.flags == ([] if first else ["not-attempted"]), (cell, record.flags)
        assert record.exit["sandbox"]["exit_code"] == SANDBOX_DIES[cell[0]], record.exit
    differs: dict[tuple[str, str], Any] = {}
    for cell in sorted(c for c in under_runc if c[0] not in SANDBOX_DIES):
        a, b = _attempts(under_runc[cell]), _attempts(under_runsc[cell])
        for what in sorted(set(a) | set(b)):
            pair = (a.get(what, "absent"), b.get(what, "absent"))
            if pair[0] != pair[1]:
                differs[(cell[0], what)] = pair if differs.get((cell[0], what), pair) == pair \
                    else "differs from cell to cell"
    assert differs == RUN_DIFFERS
