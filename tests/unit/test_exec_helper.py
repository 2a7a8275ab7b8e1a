"""sandbench-exec (images/base/sandbench-exec.c) and its decoder (orchestrator.sandbox.execproto).

The helper is compiled with the host's C compiler, with the image's flags, and run as a
plain subprocess: no Docker. Its stdout is decoded with execproto exactly as the
orchestrator decodes a `docker exec` stream. The second half tests the decoder alone.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.sandbox import execproto
from orchestrator.sandbox.execproto import (
    FRAME_ERROR,
    FRAME_PROBE,
    FRAME_RESULT,
    FRAME_STDERR,
    FRAME_STDOUT,
    MAX_CHUNK,
    PROBE_KEYS,
    RESULT_KEYS,
    DecodedExec,
    decode_exec_stream,
    encode_frame,
)

PY = sys.executable
MiB = 1 << 20


# --------------------------------------------------------------------------------------
# Running the real helper


@dataclass
class Exec:
    decoded: DecodedExec
    stdout: bytes
    stderr: bytes
    helper_stderr: str
    returncode: int
    elapsed: float

    @property
    def result(self) -> dict[str, Any]:
        assert self.decoded.protocol_error is None, self.decoded
        assert self.decoded.result is not None
        return self.decoded.result


def _reads(fd: int) -> Iterator[bytes]:
    # An odd read size puts chunk boundaries inside frame headers now and then.
    while chunk := os.read(fd, 7919):
        yield chunk


def run_helper(helper: Path, *args: str, cap_bytes: int = 256 * MiB,
               during: Any = None, prefix: tuple[str, ...] = (), **popen: Any) -> Exec:
    """Run the helper (after `prefix`, e.g. nsenter), decode its stdout; `during(proc)` runs
    while it is being read."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as helper_err:
        proc = subprocess.Popen([*prefix, str(helper), *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=helper_err, **popen)
        assert proc.stdout is not None
        if during is not None:
            threading.Thread(target=during, args=(proc,), daemon=True).start()
        out, err = io.BytesIO(), io.BytesIO()
        decoded = decode_exec_stream(_reads(proc.stdout.fileno()), out, err, cap_bytes)
        proc.stdout.close()
        returncode = proc.wait(timeout=30)
        helper_err.seek(0)
        stderr_text = helper_err.read().decode(errors="replace")
    return Exec(decoded, out.getvalue(), err.getvalue(), stderr_text, returncode,
                time.monotonic() - started)


def run_tool(helper: Path, argv: list[str], *opts: str, **kwargs: Any) -> Exec:
    return run_helper(helper, "run", *opts, "--", *argv, **kwargs)


def py(code: str, *args: str, python: str = PY) -> list[str]:
    return [python, "-c", textwrap.dedent(code), *args]


# The system's interpreter, for tools that run as nobody (this checkout's virtualenv may lie
# under a directory only root can enter).
SYSTEM_PY = shutil.which("python3", path="/usr/bin:/bin") or PY


def pid_gone(pid: int) -> bool:
    """No process (not even a zombie) with this pid."""
    return not Path(f"/proc/{pid}").exists()


def wait_for_file(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    return path.read_text()


# --------------------------------------------------------------------------------------
# run: output


def test_output_is_byte_exact_with_nul_and_invalid_utf8(helper: Path, tmp_path: Path) -> None:
    noise = bytes(range(256)) * 97 + b"\x00\xff\xfe\xc3\x28\xed\xa0\x80" + os.urandom(200_000)
    out_data, err_data = noise + b"end-of-stdout", b"\x00" * 70_000 + noise[::-1]
    (tmp_path / "out").write_bytes(out_data)
    (tmp_path / "err").write_bytes(err_data)
    ex = run_tool(helper, ["sh", "-c", 'cat "$1"; cat "$2" >&2; cat "$1"', "sh",
                           str(tmp_path / "out"), str(tmp_path / "err")])
    assert ex.returncode == 0
    assert ex.stdout == out_data * 2
    assert ex.stderr == err_data
    r = ex.result
    assert (r["stdout_bytes"], r["stderr_bytes"]) == (2 * len(out_data), len(err_data))
    assert not r["stdout_truncated"] and not r["stderr_truncated"]
    assert ex.decoded.stdout_sha256 == hashlib.sha256(out_data * 2).hexdigest()
    assert ex.decoded.stderr_sha256 == hashlib.sha256(err_data).hexdigest()
    assert ex.decoded.helper_errors == []


def test_result_has_exactly_the_documented_keys(helper: Path) -> None:
    r = run_tool(helper, ["true"]).result
    assert set(r) == RESULT_KEYS
    assert r["helper_version"] == execproto.HELPER_VERSION
    assert (r["cap_bytes"], r["timeout_ms"], r["grace_ms"]) == (64 * MiB, 0, 2000)
    assert r["oom_kills"] is None or r["oom_kills"] == 0


def test_a_tool_printing_frames_only_produces_tool_output(helper: Path) -> None:
    forged = encode_frame(FRAME_RESULT, json.dumps({"wall_ns": 1}).encode())
    ex = run_tool(helper, py("import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))",
                             forged.hex()))
    assert ex.stdout == forged
    assert ex.result["wall_ns"] != 1


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_code(helper: Path, code: int) -> None:
    r = run_tool(helper, ["sh", "-c", f"exit {code}"]).result
    assert (r["exit_code"], r["signal"], r["spawn_error"]) == (code, None, None)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGUSR1])
def test_signal_death(helper: Path, sig: signal.Signals) -> None:
    r = run_tool(helper, ["sh", "-c", f"kill -{sig.name[3:]} $$"]).result
    assert (r["exit_code"], r["signal"], r["timed_out"]) == (None, sig.value, False)


# --------------------------------------------------------------------------------------
# run: spawning


def test_spawn_failure_missing_program(helper: Path) -> None:
    for argv0 in ("/nonexistent/tool", "sandbench-no-such-command"):
        ex = run_tool(helper, [argv0])
        assert ex.returncode == 0
        r = ex.result
        assert r["spawn_error"] == "ENOENT: No such file or directory"
        assert (r["exit_code"], r["signal"]) == (None, None)


def test_spawn_failure_not_executable(helper: Path, tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho never\n")
    script.chmod(0o644)
    r = run_tool(helper, [str(script)]).result
    assert r["spawn_error"] == "EACCES: Permission denied"
    assert r["stdout_bytes"] == 0


def test_spawn_failure_bad_cwd(helper: Path, tmp_path: Path) -> None:
    r = run_tool(helper, ["true"], "--cwd", str(tmp_path / "missing")).result
    assert r["spawn_error"] == "chdir: ENOENT: No such file or directory"
    assert r["exit_code"] is None


def test_tool_starts_clean(helper: Path, tmp_path: Path) -> None:
    """stdin is /dev/null, env and cwd as asked, own process group, no ignored or blocked
    signals, even when the helper itself was started with some."""
    def dirty_signals() -> None:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})

    probe = py("""
        import json, os, sys
        stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
        status = dict(l.split(":", 1) for l in open("/proc/self/status"))
        print(json.dumps({
            "stdin": sys.stdin.buffer.read().decode(), "cwd": os.getcwd(),
            "env": os.environ.get("SANDBENCH_TEST_VAR"), "pid": os.getpid(),
            "pgrp": int(stat[2]),
            "stdin_target": os.readlink("/proc/self/fd/0"),
            "SigBlk": status["SigBlk"].strip(),
        }))
    """)
    # Python itself ignores SIGPIPE at start-up, so the dispositions are read by `cat`.
    env = {**os.environ, "SANDBENCH_TEST_VAR": "x y\tz"}
    facts = json.loads(run_tool(helper, probe, "--cwd", str(tmp_path), env=env,
                                preexec_fn=dirty_signals).stdout)
    assert facts == {"stdin": "", "cwd": str(tmp_path), "env": "x y\tz", "pid": facts["pid"],
                     "pgrp": facts["pid"], "stdin_target": "/dev/null",
                     "SigBlk": "0000000000000000"}
    status = run_tool(helper, ["cat", "/proc/self/status"], preexec_fn=dirty_signals).stdout
    fields = dict(line.split(":", 1) for line in status.decode().splitlines())
    assert fields["SigIgn"].strip() == "0000000000000000"
    assert fields["SigBlk"].strip() == "0000000000000000"


# --------------------------------------------------------------------------------------
# run: caps


def test_cap_truncates_but_counts_everything(helper: Path) -> None:
    total = 50_000_000
    ex = run_tool(helper, py("""
        import sys
        block = b"0123456789" * 100_000
        for _ in range(50):
            sys.stdout.buffer.write(block)
        sys.stderr.buffer.write(b"small")
    """), "--cap-bytes", str(MiB))
    r = ex.result
    assert (r["stdout_bytes"], r["stdout_truncated"]) == (total, True)
    assert (r["stderr_bytes"], r["stderr_truncated"]) == (5, False)
    assert r["cap_bytes"] == MiB
    expected = (b"0123456789" * 110_000)[:MiB]
    assert ex.stdout == expected and ex.decoded.stdout_written == MiB
    assert ex.decoded.stdout_sha256 == hashlib.sha256(expected).hexdigest()
    assert ex.stderr == b"small"


def test_output_of_exactly_the_cap_is_not_truncated(helper: Path) -> None:
    r = run_tool(helper, ["printf", "12345"], "--cap-bytes", "5").result
    assert (r["stdout_bytes"], r["stdout_truncated"]) == (5, False)
    r = run_tool(helper, ["printf", "12345"], "--cap-bytes", "0").result
    assert (r["stdout_bytes"], r["stdout_truncated"]) == (5, True)


def test_decoder_cap_is_a_second_line_of_defence(helper: Path) -> None:
    ex = run_tool(helper, ["head", "-c", "100000", "/dev/zero"], cap_bytes=1000)
    assert ex.result["stdout_bytes"] == 100_000
    assert ex.stdout == b"\0" * 1000 and ex.decoded.stdout_written == 1000


# --------------------------------------------------------------------------------------
# run: time, CPU, memory


def test_wall_time_of_a_sleep(helper: Path) -> None:
    ex = run_tool(helper, ["sleep", "0.2"])
    wall = ex.result["wall_ns"]
    assert 200_000_000 <= wall < 1_000_000_000
    assert wall <= ex.elapsed * 1e9


def test_cpu_time_and_peak_rss(helper: Path) -> None:
    r = run_tool(helper, py("""
        import time
        block = bytearray(100 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
    """)).result
    assert r["user_us"] + r["sys_us"] >= 250_000
    assert r["maxrss_kb"] >= 100 * 1024


# --------------------------------------------------------------------------------------
# run: timeouts and leftover processes


def test_timeout_sigterm_is_enough_for_a_polite_tool(helper: Path) -> None:
    ex = run_tool(helper, ["sleep", "30"], "--timeout-ms", "200", "--grace-ms", "10000")
    r = ex.result
    assert (r["timed_out"], r["signal"], r["exit_code"]) == (True, signal.SIGTERM, None)
    assert 200_000_000 <= r["wall_ns"] < 3_000_000_000
    assert ex.elapsed < 5


def test_timeout_kills_a_tool_ignoring_sigterm_after_the_grace(helper: Path,
                                                               tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    ex = run_tool(helper, py("""
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
    """, str(pidfile)), "--timeout-ms", "600", "--grace-ms", "500")
    r = ex.result
    assert (r["timed_out"], r["signal"], r["exit_code"]) == (True, signal.SIGKILL, None)
    assert 1_100_000_000 <= r["wall_ns"] < 4_000_000_000
    assert (r["timeout_ms"], r["grace_ms"]) == (600, 500)
    assert pid_gone(int(pidfile.read_text()))


@pytest.mark.parametrize("main_ignores_term", [False, True])
def test_timeout_reaches_a_setsid_grandchild_ignoring_sigterm(
        helper: Path, tmp_path: Path, main_ignores_term: bool) -> None:
    pidfile = tmp_path / "pid"
    ex = run_tool(helper, py("""
        import os, signal, sys, time
        if os.fork() == 0:
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open(sys.argv[1], "w").write(str(os.getpid()))
            time.sleep(60)
            os._exit(0)
        if sys.argv[2] == "True":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
    """, str(pidfile), str(main_ignores_term)), "--timeout-ms", "700", "--grace-ms", "400")
    r = ex.result
    assert r["timed_out"] is True
    if main_ignores_term:
        # Both got SIGKILL at the end of the grace, before the tool exited: no strays.
        assert (r["signal"], r["stray_killed"]) == (signal.SIGKILL, 0)
        assert r["wall_ns"] >= 1_100_000_000
    else:
        # The tool died of SIGTERM; the grandchild outlived it and was swept at once.
        assert (r["signal"], r["stray_killed"]) == (signal.SIGTERM, 1)
        assert r["wall_ns"] < 1_100_000_000
    assert pid_gone(int(pidfile.read_text()))
    assert ex.elapsed < 6


def test_a_double_forked_daemon_does_not_outlive_the_exec(helper: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    ex = run_tool(helper, py("""
        import os, signal, sys, time
        pidfile = sys.argv[1]
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                # The daemon keeps the tool's stdout open and ignores SIGTERM.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                open(pidfile + ".tmp", "w").write(str(os.getpid()))
                os.rename(pidfile + ".tmp", pidfile)
                while True:
                    print("daemon alive", flush=True)
                    time.sleep(0.05)
            os._exit(0)
        os.wait()
        while not os.path.exists(pidfile):
            time.sleep(0.01)
        print("parent done", flush=True)
    """, str(pidfile)))
    r = ex.result
    assert (r["exit_code"], r["timed_out"], r["stray_killed"]) == (0, False, 1)
    assert b"parent done\n" in ex.stdout
    assert pid_gone(int(pidfile.read_text()))
    assert ex.elapsed < 10


@pytest.fixture
def sandbox_pids(helper: Path) -> Iterator[tuple[str, ...]]:
    """A pid namespace shaped like a sandbox's: the idle helper as its PID 1, a /proc of its
    own. Yields the nsenter prefix that starts a process in it from outside, as docker exec
    does (so the process's parent is invisible to it: getppid() == 0), as nobody: as root
    the helper there is the executor, which runs a tool only `--as` another uid."""
    unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
    if unshare is None or nsenter is None or os.geteuid() != 0:
        pytest.skip("needs unshare and nsenter as root")
    outer = subprocess.Popen([unshare, "--pid", "--fork", "--mount-proc", str(helper), "idle"])
    children = Path(f"/proc/{outer.pid}/task/{outer.pid}/children")
    deadline = time.monotonic() + 10
    while not children.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.01)
    (init,) = map(int, children.read_text().split())
    try:
        yield (nsenter, "-t", str(init), "--pid", "--mount", "--", "setpriv", "--reuid",
               "65534", "--regid", "65534", "--clear-groups")
    finally:
        os.kill(init, signal.SIGKILL)  # the namespace's init: the kernel ends the rest
        outer.wait(timeout=10)


PIDS_SEEN = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"


def test_a_sweep_kills_what_earlier_execs_left_and_spares_pid_1(
        helper: Path, sandbox_pids: tuple[str, ...]) -> None:
    """A daemon whose own run helper was killed lives on under PID 1; the next exec's
    helper kills it (and anything it forks meanwhile) before the tool starts."""
    leftovers = py(python=SYSTEM_PY, code="""
        import os, signal, time
        for ignore_term in (False, True):
            if os.fork() == 0:
                os.setsid()
                if ignore_term:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                if os.fork() == 0:  # a second generation, forking on while it lives
                    while True:
                        if os.fork() == 0:
                            time.sleep(0.2)
                            os._exit(0)
                        time.sleep(0.05)
                time.sleep(1000)
        """)
    subprocess.run([*sandbox_pids, *leftovers], check=True, timeout=30)
    time.sleep(0.3)
    ex = run_tool(helper, py(PIDS_SEEN, python=SYSTEM_PY), "--sweep", prefix=sandbox_pids)
    r = ex.result
    assert r["exit_code"] == 0 and r["stray_swept"] >= 4, r
    assert ex.decoded.helper_errors == []
    # The tool saw only PID 1, its helper and itself.
    seen = json.loads(ex.stdout)
    assert len(seen) == 3 and seen[0] == 1, seen
    # The sweep is not the tool's time: the tool started after it.
    assert r["wall_ns"] < ex.elapsed * 1e9
    again = run_tool(helper, ["true"], "--sweep", prefix=sandbox_pids).result
    assert again["stray_swept"] == 0 and again["exit_code"] == 0
    # kill(-1) spares the namespace's init: the same PID 1 still runs.
    init = int(sandbox_pids[2])
    assert Path(f"/proc/{init}/cmdline").read_bytes().split(b"\0")[1] == b"idle"


def test_a_sweep_is_refused_where_kill_minus_1_would_reach_the_host(helper: Path) -> None:
    """Started by a process it can see (on a host, or by a tool inside the sandbox), the
    helper refuses to sweep: kill(-1) would reach every process of the user."""
    ex = run_tool(helper, ["true"], "--sweep")
    assert ex.returncode == 125 and ex.decoded.result is None
    (error,) = ex.decoded.helper_errors
    assert error.startswith(f"run --sweep: refused: the parent (pid {os.getpid()}) is inside")


def test_without_sweep_nothing_outside_the_tree_is_touched(
        helper: Path, sandbox_pids: tuple[str, ...]) -> None:
    subprocess.run([*sandbox_pids, "sh", "-c", "sleep 30 &"], check=True, timeout=30)
    time.sleep(0.2)
    r = run_tool(helper, py(PIDS_SEEN, python=SYSTEM_PY), prefix=sandbox_pids).result
    assert r["stray_swept"] == 0
    r = run_tool(helper, ["true"], "--sweep", prefix=sandbox_pids).result
    assert r["stray_swept"] == 1


def test_the_tool_cannot_write_into_the_helpers_stdout(helper: Path) -> None:
    """PR_SET_DUMPABLE 0 closes /proc/<helper>/fd/1 to same-uid processes. Root could
    open it anyway (CAP_SYS_PTRACE), so as root the helper is run as nobody."""
    forge = ["sh", "-c", 'printf "r\\000\\000\\000\\002{}" > /proc/$PPID/fd/1']
    if os.geteuid() != 0:
        ex = run_tool(helper, forge)
    else:
        private = Path(tempfile.mkdtemp(prefix="sandbench-exec-"))
        try:
            private.chmod(0o755)
            binary = private / "sandbench-exec"
            shutil.copy2(helper, binary)
            binary.chmod(0o755)
            ex = run_tool(binary, forge, user=65534, group=65534, extra_groups=[], cwd="/")
        finally:
            shutil.rmtree(private)
    r = ex.result
    assert r["exit_code"] != 0
    assert b"Permission denied" in ex.stderr
    assert ex.stdout == b""


def test_helper_killed_by_sigterm_kills_the_tool_and_still_reports(helper: Path,
                                                                  tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"

    def interrupt(proc: subprocess.Popen[bytes]) -> None:
        wait_for_file(pidfile)
        proc.send_signal(signal.SIGTERM)

    ex = run_tool(helper, py("""
        import os, sys, time
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
    """, str(pidfile)), during=interrupt)
    r = ex.result
    assert ex.returncode == 0
    assert (r["signal"], r["timed_out"]) == (signal.SIGKILL, False)
    assert any("SIGTERM" in e for e in ex.decoded.helper_errors)
    assert pid_gone(int(pidfile.read_text()))


def test_a_vanished_reader_gives_epipe_not_death(helper: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    tool = py("""
        import os, sys
        open(sys.argv[1], "w").write(str(os.getpid()))
        while True:
            sys.stdout.buffer.write(b"y" * 65536)
    """, str(pidfile))
    proc = subprocess.Popen([str(helper), "run", "--", *tool], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100_000)
    proc.stdout.close()
    returncode = proc.wait(timeout=20)
    helper_err = proc.stderr.read().decode()
    proc.stderr.close()
    assert returncode == 125, helper_err          # not -SIGPIPE
    assert "EPIPE" in helper_err
    assert pid_gone(int(pidfile.read_text()))


# --------------------------------------------------------------------------------------
# Command line


@pytest.mark.parametrize("args, message", [
    ([], "missing command"),
    (["frobnicate"], "unknown command"),
    (["run"], "missing --"),
    (["run", "true"], "unknown option 'true'"),
    (["run", "--"], "no command after --"),
    (["run", "--timeout-ms", "-1", "--", "true"], "whole number"),
    (["run", "--cap-bytes", "12k", "--", "true"], "whole number"),
    (["run", "--grace-ms"], "needs a value"),
    (["probe", "--connect", "localhost:80"], "IPV4:PORT"),
    (["probe", "--connect", "10.0.0.1:0"], "IPV4:PORT"),
    (["probe", "--bogus", "x"], "unknown option"),
    (["probe", "--nameserver", "resolver.test"], "--nameserver wants"),
    (["probe", "--nameserver", "[::1]:99999"], "--nameserver wants"),
    (["idle", "extra"], "no arguments"),
])
def test_usage_errors(helper: Path, args: list[str], message: str) -> None:
    ex = run_helper(helper, *args)
    assert ex.returncode == 125
    assert ex.decoded.result is None and ex.decoded.probe is None
    assert ex.decoded.protocol_error == "stream ended without a result or probe report"
    assert len(ex.decoded.helper_errors) == 1 and message in ex.decoded.helper_errors[0]
    assert message in ex.helper_stderr and "usage:" in ex.helper_stderr


def test_version(helper: Path) -> None:
    out = subprocess.run([str(helper), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout == f"sandbench-exec {execproto.HELPER_VERSION}\n"


def test_idle_handles_no_signal_and_reaps_orphans(helper: Path) -> None:
    """Outside a pid namespace SIGTERM keeps its default action (as PID 1 inside one, the
    kernel drops it instead); SIGCHLD wakes the reaper and nothing else happens."""
    proc = subprocess.Popen([str(helper), "idle"])
    time.sleep(0.2)
    proc.send_signal(signal.SIGCHLD)
    time.sleep(0.1)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == -signal.SIGTERM


# --------------------------------------------------------------------------------------
# probe


def test_probe_reports_every_fact(helper: Path) -> None:
    ex = run_helper(helper, "probe")
    assert ex.returncode == 0 and ex.decoded.protocol_error is None
    p = ex.decoded.probe
    assert p is not None and set(p) == PROBE_KEYS
    assert (p["uid"], p["gid"]) == (os.getuid(), os.getgid())
    assert sorted(p["groups"]) == sorted(os.getgroups())
    assert set(p["status"]) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                                "NoNewPrivs", "Seccomp"}
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        int(p["status"][key], 16)
    assert isinstance(p["status"]["NoNewPrivs"], int)
    assert isinstance(p["status"]["Seccomp"], int)
    assert p["interfaces"] == sorted(os.listdir("/sys/class/net"))
    assert p["routes_v4"] == Path("/proc/net/route").read_text().splitlines()[1:]
    assert all(isinstance(line, str) for line in p["routes_v6"] or [])
    assert (p["lookup"], p["connect"], p["udp"], p["write"]) == (None, None, None, None)
    assert "/" in {m["mount_point"] for m in p["mounts"]}
    assert all(set(m) == {"mount_point", "fstype", "source", "options", "super_options",
                          "size_bytes"} for m in p["mounts"])
    root = next(m for m in p["mounts"] if m["mount_point"] == "/")
    st = os.statvfs("/")
    assert root["size_bytes"] == st.f_blocks * st.f_frsize


def test_probe_reads_its_cgroups_limits_and_writes_where_asked(helper: Path,
                                                               tmp_path: Path) -> None:
    ex = run_helper(helper, "probe", "--writable", str(tmp_path), "--writable",
                    str(tmp_path / "missing"))
    p = ex.decoded.probe
    assert p is not None
    assert [(w["path"], w["ok"], w["error"]) for w in p["writable"]] == [
        (f"{tmp_path}/.sandbench-probe-writable", True, None),
        (f"{tmp_path}/missing/.sandbench-probe-writable", False,
         "open: ENOENT: No such file or directory")]
    assert list(tmp_path.iterdir()) == []  # created, then removed
    cgroup = p["cgroup"]
    # The limit read is the file of the directory the probe resolved for its own cgroup.
    if cgroup["version"] == "v1":
        limit = Path(cgroup["dirs"]["memory"], "memory.limit_in_bytes")
    else:
        limit = Path(cgroup["dirs"]["unified"], "memory.max")
    assert cgroup["memory_max"] == limit.read_text().strip()
    assert cgroup["meminfo_total_kb"] > 0
    too_many = [a for i in range(9) for a in ("--writable", f"/d{i}")]
    assert run_helper(helper, "probe", *too_many).returncode == 125


@contextmanager
def fake_nameserver(rcode: int = 3) -> Iterator[tuple[int, list[bytes]]]:
    """A UDP DNS server on the host's 127.0.0.1 that answers every query with `rcode`."""
    queries: list[bytes] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(0.1)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    query, peer = sock.recvfrom(512)
                except TimeoutError:
                    continue
                queries.append(query)
                flags = bytes([0x81, 0x80 | rcode])  # QR, RD, RA
                sock.sendto(query[:2] + flags + query[4:], peer)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield sock.getsockname()[1], queries
        finally:
            stop.set()
            thread.join(timeout=2)


def test_probe_network_lookup_and_write(helper: Path, tmp_path: Path) -> None:
    with socket.socket() as listener, socket.socket() as closed, \
            fake_nameserver() as (dns_port, queries):
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        open_port, closed_port = listener.getsockname()[1], closed.getsockname()[1]
        target = tmp_path / "w"
        p = run_helper(helper, "probe", "--connect", f"127.0.0.1:{open_port}",
                       "--lookup", "example.com", "--nameserver", f"127.0.0.1:{dns_port}",
                       "--write", str(target)).decoded.probe
        refused = run_helper(helper, "probe", "--connect", f"127.0.0.1:{closed_port}",
                             "--write", str(tmp_path / "no" / "dir")).decoded.probe
    assert p is not None and refused is not None
    assert p["connect"] == {"host": "127.0.0.1", "port": open_port, "ok": True,
                            "errno": None, "error": None}
    assert p["udp"]["ok"] is True
    # Any reply counts as resolved (here NXDOMAIN): a resolver was reached.
    assert p["lookup"] == {"name": "example.com", "ok": True, "error": None, "servers": [
        {"server": "127.0.0.1", "answered": True, "rcode": 3, "errno": None, "error": None}]}
    (query,) = queries
    assert query[2:6] == b"\x01\x00\x00\x01"  # RD, one question
    assert query[12:] == b"\x07example\x03com\x00\x00\x01\x00\x01"  # A, IN
    assert p["write"] == {"path": str(target), "ok": True, "errno": None, "error": None}
    assert not target.exists()
    assert refused["connect"]["ok"] is False
    assert refused["connect"]["errno"] == 111  # ECONNREFUSED on Linux
    assert refused["connect"]["error"] == "connect: ECONNREFUSED: Connection refused"
    assert refused["write"]["ok"] is False
    assert refused["write"]["error"] == "open: ENOENT: No such file or directory"


def test_probe_lookup_failure_is_a_fact(helper: Path) -> None:
    # A name that is not even syntactically resolvable: no network traffic is needed.
    p = run_helper(helper, "probe", "--lookup", "").decoded.probe
    assert p is not None
    assert p["lookup"] == {"name": "", "ok": False, "error": "not a DNS name", "servers": []}


def test_probe_lookup_with_no_resolver_listening_fails_at_once(helper: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    ex = run_helper(helper, "probe", "--lookup", "example.com", "--nameserver",
                    f"127.0.0.1:{port}")
    lookup = ex.decoded.probe["lookup"]  # type: ignore[index]
    assert lookup["ok"] is False
    assert lookup["error"] == "127.0.0.1: recv: ECONNREFUSED: Connection refused"
    assert ex.elapsed < 1.5  # a connected socket hears the refusal; no resolver timeout


def test_probe_lookup_asks_the_nameservers_of_resolv_conf(helper: Path, tmp_path: Path
                                                          ) -> None:
    """No NSS, no libc resolver: the probe reads /etc/resolv.conf (the engine's file) and
    asks each server itself; none named means 127.0.0.1, as libc does."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs unshare as root to bind a resolv.conf of its own")
    results = {}
    for name, text in (("listed", "# x\nnameserver 127.0.0.9\nnameserver ::1\n"
                                  "search example\nnameserver 127.0.0.10\nnameserver 127.0.0.11\n"),
                       ("empty", "search example\n")):
        conf = tmp_path / name
        conf.write_text(text)
        script = (f'mount --bind "{conf}" /etc/resolv.conf && '
                  f'exec "{helper}" probe --lookup example.com')
        proc = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c",
                               script], capture_output=True, timeout=30)
        if proc.returncode != 0:
            pytest.skip(f"cannot bind a resolv.conf here: {proc.stderr.decode().strip()}")
        probe = decode_exec_stream([proc.stdout], io.BytesIO(), io.BytesIO(), 0).probe
        assert probe is not None
        results[name] = [s["server"] for s in probe["lookup"]["servers"]]
    assert results == {"listed": ["127.0.0.9", "::1", "127.0.0.10"], "empty": ["127.0.0.1"]}


def test_the_helper_is_static(helper: Path) -> None:
    """No program interpreter and no dynamic section: the dynamic loader never runs, so an
    image's LD_PRELOAD or /etc/ld.so.preload cannot put code into the helper."""
    data = helper.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2  # ELF64
    phoff = int.from_bytes(data[32:40], "little")
    phentsize, phnum = (int.from_bytes(data[54 + 2 * i:56 + 2 * i], "little") for i in range(2))
    types = {int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], "little")
             for i in range(phnum)}
    PT_DYNAMIC, PT_INTERP = 2, 3
    assert PT_INTERP not in types and PT_DYNAMIC not in types, types
    env = {**os.environ, "LD_PRELOAD": "/nonexistent/sandbench-forge.so"}
    ex = run_tool(helper, ["true"], env=env)
    assert ex.result["exit_code"] == 0 and "preload" not in ex.helper_stderr


def test_probe_lists_helpers_the_image_carries(helper: Path, tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sandbench-exec").write_text("#!/bin/sh\n")
    env = {**os.environ, "PATH": f"{fake}:/nonexistent:relative:{fake}"}
    ex = run_helper(helper, "probe", env=env)
    old_place = [p for p in ["/usr/local/bin/sandbench-exec"] if os.path.lexists(p)]
    # Its old place first, then each PATH directory once; relative entries are skipped.
    assert ex.decoded.probe["image_helpers"] == [  # type: ignore[index]
        *old_place, f"{fake}/sandbench-exec"]


def test_probe_decodes_octal_escapes_in_mount_points(helper: Path, tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare not installed")
    point = tmp_path / "with space\tand tab"
    point.mkdir()
    script = f'mount -t tmpfs "" "{point}" && exec "{helper}" probe'
    argv = [unshare, "--mount", "--propagation", "private", "sh", "-c", script]
    if os.geteuid() != 0:
        argv[1:1] = ["--map-root-user"]
    proc = subprocess.run(argv, capture_output=True, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"cannot make a private mount here: {proc.stderr.decode().strip()}")
    out, err = io.BytesIO(), io.BytesIO()
    p = decode_exec_stream([proc.stdout], out, err, 0).probe
    assert p is not None
    mounts = {m["mount_point"]: m for m in p["mounts"]}
    assert mounts[str(point)]["fstype"] == "tmpfs"
    assert mounts[str(point)]["source"] == ""  # empty source: two spaces in mountinfo


# --------------------------------------------------------------------------------------
# Decoder alone


def result_json(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "helper_version": execproto.HELPER_VERSION, "wall_ns": 1, "user_us": 0, "sys_us": 0,
        "maxrss_kb": 1, "exit_code": 0, "signal": None, "timed_out": False, "oom_kills": None,
        "stdout_bytes": 0, "stderr_bytes": 0, "stdout_truncated": False,
        "stderr_truncated": False, "stray_killed": 0, "stray_swept": 0, "spawn_error": None,
        "cap_bytes": 1 << 26, "timeout_ms": 0, "grace_ms": 2000,
    }
    return base | overrides


def result_frame(**overrides: Any) -> bytes:
    return encode_frame(FRAME_RESULT, json.dumps(result_json(**overrides)).encode())


def decode(stream: bytes | list[bytes], cap: int = 1 << 30
           ) -> tuple[DecodedExec, bytes, bytes]:
    out, err = io.BytesIO(), io.BytesIO()
    chunks = [stream] if isinstance(stream, bytes) else stream
    decoded = decode_exec_stream(chunks, out, err, cap)
    return decoded, out.getvalue(), err.getvalue()


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


frames_st = st.lists(st.one_of(
    st.tuples(st.sampled_from([FRAME_STDOUT, FRAME_STDERR]), st.binary(max_size=400)),
    st.tuples(st.just(FRAME_ERROR), st.text(max_size=50).map(str.encode)),
), max_size=25)


def build_stream(frames: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes, bytes]:
    out = b"".join(p for k, p in frames if k == FRAME_STDOUT)
    err = b"".join(p for k, p in frames if k == FRAME_STDERR)
    stream = b"".join(encode_frame(k, p) for k, p in frames)
    stream += result_frame(stdout_bytes=len(out), stderr_bytes=len(err))
    return stream, out, err


@settings(max_examples=300, deadline=None)
@given(frames=frames_st, cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_any_chunk_split_decodes_the_same(frames: list[tuple[bytes, bytes]],
                                          cuts: list[int]) -> None:
    stream, out, err = build_stream(frames)
    decoded, got_out, got_err = decode(split_at(stream, cuts))
    assert decoded.protocol_error is None
    assert (got_out, got_err) == (out, err)
    assert decoded.result == result_json(stdout_bytes=len(out), stderr_bytes=len(err))
    assert decoded.helper_errors == [p.decode() for k, p in frames if k == FRAME_ERROR]
    assert decoded.stdout_sha256 == hashlib.sha256(out).hexdigest()
    assert decoded.stderr_sha256 == hashlib.sha256(err).hexdigest()


@settings(max_examples=200, deadline=None)
@given(frames=frames_st, data=st.data())
def test_a_truncated_stream_is_a_protocol_error(frames: list[tuple[bytes, bytes]],
                                                data: st.DataObject) -> None:
    stream, _, _ = build_stream(frames)
    cut = data.draw(st.integers(min_value=0, max_value=len(stream) - 1))
    decoded, _, _ = decode(stream[:cut])
    assert decoded.result is None
    assert decoded.protocol_error in ("stream ended in the middle of a frame",
                                      "stream ended without a result or probe report")


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(min_size=1, max_size=5000), cap=st.integers(0, 6000),
       cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_decoder_side_cap(payload: bytes, cap: int, cuts: list[int]) -> None:
    stream = b"".join(encode_frame(FRAME_STDOUT, payload[i:i + 700])
                      for i in range(0, len(payload), 700))
    stream += result_frame(stdout_bytes=len(payload))
    decoded, out, _ = decode(split_at(stream, cuts), cap=cap)
    assert decoded.protocol_error is None
    assert out == payload[:cap] and decoded.stdout_written == min(cap, len(payload))
    assert decoded.stdout_sha256 == hashlib.sha256(payload[:cap]).hexdigest()


def test_empty_stream() -> None:
    decoded, _, _ = decode(b"")
    assert decoded.protocol_error == "stream ended without a result or probe report"
    assert decoded.stdout_sha256 == hashlib.sha256(b"").hexdigest()


def test_unknown_frame_type_stops_decoding() -> None:
    stream = (encode_frame(FRAME_STDOUT, b"a") + b"z\0\0\0\1!" + encode_frame(FRAME_STDOUT, b"b")
              + result_frame(stdout_bytes=2))
    decoded, out, _ = decode(stream)
    assert decoded.protocol_error == "unknown frame type 0x7a"
    assert out == b"a" and decoded.result is None


def test_frame_after_the_result() -> None:
    decoded, out, _ = decode(result_frame() + encode_frame(FRAME_STDOUT, b"late"))
    assert decoded.protocol_error == "frame 'o' after the result"
    assert out == b""
    assert decoded.result is not None  # valid in itself, but the stream is not


def test_frame_after_the_probe() -> None:
    probe = json.dumps(dict.fromkeys(PROBE_KEYS)).encode()
    decoded, _, _ = decode(encode_frame(FRAME_PROBE, probe))
    assert decoded.protocol_error is None and decoded.probe == dict.fromkeys(PROBE_KEYS)
    decoded, _, _ = decode(encode_frame(FRAME_PROBE, probe) + encode_frame(FRAME_ERROR, b"x"))
    assert decoded.protocol_error == "frame 'x' after the probe report"


def test_probe_missing_keys() -> None:
    decoded, _, _ = decode(encode_frame(FRAME_PROBE, b'{"uid": 0}'))
    assert decoded.probe is None
    assert decoded.protocol_error is not None and "lacks keys" in decoded.protocol_error


@pytest.mark.parametrize("kind, length", [(FRAME_STDOUT, MAX_CHUNK + 1),
                                          (FRAME_STDERR, MAX_CHUNK + 1),
                                          (FRAME_RESULT, execproto.MAX_META_PAYLOAD + 1)])
def test_oversize_frame_is_refused_from_its_header(kind: bytes, length: int) -> None:
    # Only the header is sent: the decoder must not wait for (or buffer) the payload.
    decoded, _, _ = decode(kind + length.to_bytes(4, "big"))
    assert decoded.protocol_error is not None and "exceeds the limit" in decoded.protocol_error


@pytest.mark.parametrize("payload, message", [
    (b"not json", "not valid JSON"),
    (b"\xff{}", "not UTF-8"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({k: v for k, v in result_json().items() if k != "wall_ns"}).encode(),
     "missing ['wall_ns']"),
    (json.dumps(result_json(extra=1)).encode(), "unknown ['extra']"),
    (json.dumps(result_json(wall_ns=True)).encode(), "result wall_ns: expected int"),
    (json.dumps(result_json(timed_out=0)).encode(), "result timed_out: expected bool"),
    (json.dumps(result_json(exit_code="0")).encode(), "result exit_code"),
    (json.dumps(result_json(wall_ns=-5)).encode(), "expected >= 0"),
    (json.dumps(result_json(wall_ns=1.5)).encode(), "result wall_ns"),
    (b'{"wall_ns": 1, "wall_ns": 2}', "duplicate key 'wall_ns'"),
    (b'{"wall_ns": NaN}', "non-standard JSON constant NaN"),
])
def test_invalid_result(payload: bytes, message: str) -> None:
    decoded, _, _ = decode(encode_frame(FRAME_RESULT, payload))
    assert decoded.result is None
    assert decoded.protocol_error is not None and message in decoded.protocol_error


def test_result_must_agree_with_the_frames() -> None:
    chunk = encode_frame(FRAME_STDOUT, b"abc")
    # A lost or extra frame shows as a count mismatch.
    decoded, _, _ = decode(chunk + result_frame(stdout_bytes=4))
    assert decoded.result is None
    assert decoded.protocol_error == ("stdout frames carried 3 bytes but the result reports 4 "
                                      "(cap 67108864)")
    # Past the cap only `cap` bytes are relayed, and the flag must say so.
    assert decode(chunk + result_frame(stdout_bytes=10, cap_bytes=3,
                                       stdout_truncated=True))[0].protocol_error is None
    decoded, _, _ = decode(chunk + result_frame(stdout_bytes=10, cap_bytes=3))
    assert decoded.protocol_error is not None and "stdout_truncated" in decoded.protocol_error


def test_the_rest_of_the_stream_is_consumed_after_an_error() -> None:
    consumed = []

    def chunks() -> Iterator[bytes]:
        yield b"z\0\0\0\0"
        for i in range(3):
            consumed.append(i)
            yield b"garbage"

    decoded = decode_exec_stream(chunks(), io.BytesIO(), io.BytesIO(), 10)
    assert decoded.protocol_error is not None and consumed == [0, 1, 2]


def test_zero_length_frames_and_helper_error_text() -> None:
    stream = (encode_frame(FRAME_STDOUT, b"") + encode_frame(FRAME_ERROR, b"bad \xff byte")
              + result_frame())
    decoded, out, _ = decode([stream[i:i + 1] for i in range(len(stream))])
    assert decoded.protocol_error is None and out == b""
    assert decoded.helper_errors == ["bad \ufffd byte"]


def test_decoder_memory_stays_flat_on_a_large_stream() -> None:
    chunk = encode_frame(FRAME_STDOUT, b"\xab" * MAX_CHUNK)
    count = 512  # 32 MiB of tool output

    def stream() -> Iterator[bytes]:
        for _ in range(count):
            # Re-split each frame unevenly, as a socket would.
            yield chunk[:3]
            yield chunk[3:40_001]
            yield chunk[40_001:]
        yield result_frame(stdout_bytes=count * MAX_CHUNK)

    tracemalloc.start()
    try:
        decoded = decode_exec_stream(stream(), io.BytesIO(), io.BytesIO(), MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded.protocol_error is None and decoded.stdout_written == MiB
    assert peak < 4 * MiB


def test_encode_frame_refuses_unknown_types() -> None:
    with pytest.raises(ValueError, match="unknown frame type"):
        encode_frame(b"q", b"")
