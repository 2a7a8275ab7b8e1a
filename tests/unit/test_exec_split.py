"""The executor and the tool under two uids (sandbench-exec `--as`), on the host's kernel:
the serving helper is PID 1 of its own pid namespace as root, each command's tool runs as
another uid, and the tool tries what a hostile one would against PID 1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_exec_helper import run_helper, run_tool
from tests.unit.test_exec_serve import Served

TOOL = "65534:65534"
MARKER = "sandbench-marker-7f3a"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the split needs the helper as root")

# What a hostile tool of another uid tries against PID 1, one line per try.
ATTACKS = r"""
for how in 'exec 3>/proc/1/fd/1' 'exec 3</proc/1/fd/0' 'exec 3</proc/1/environ' 'kill -0 1' \
           'kill -KILL 1'; do
  if (eval "$how") 2>/dev/null; then echo "$how: done"; else echo "$how: refused"; fi
done
"""


@pytest.fixture
def served(helper: Path) -> Iterator[Served]:
    with Served(helper, env={"PATH": os.environ["PATH"], "MARKER": MARKER}) as s:
        yield s


def _pid1_on_the_host(served: Served) -> int:
    children = Path(f"/proc/{served.proc.pid}/task/{served.proc.pid}/children").read_text()
    return int(children.split()[0])


def test_the_tool_runs_as_its_uid_with_no_capability(served: Served) -> None:
    answer = served.ask("run", "--as", TOOL, "--", "sh", "-c",
                        "id -u; id -g; id -G; grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status")
    lines = answer.stdout.decode().split("\n")
    assert lines[:3] == ["65534", "65534", "65534"], lines
    assert all(line.endswith("0000000000000000") for line in lines[3:7]), lines


def test_every_attack_on_pid_1_is_refused_and_the_container_lives(served: Served) -> None:
    answer = served.ask("run", "--as", TOOL, "--", "sh", "-c", ATTACKS)
    assert answer.result["exit_code"] == 0
    assert answer.stdout.decode().count(": refused") == 5, answer.stdout
    assert served.ask("run", "--as", TOOL, "--", "true").result["exit_code"] == 0


def test_pid_1s_environment_is_zeroed_yet_the_tool_gets_it(served: Served) -> None:
    answer = served.ask("run", "--as", TOOL, "--", "sh", "-c", 'echo "$MARKER"')
    assert answer.stdout == f"{MARKER}\n".encode()
    environ = Path(f"/proc/{_pid1_on_the_host(served)}/environ").read_bytes()
    assert environ and set(environ) == {0}, environ[:80]


def test_the_tool_can_reopen_its_stdout_and_stderr(served: Served) -> None:
    answer = served.ask("run", "--as", TOOL, "--", "sh", "-c",
                        "echo out > /dev/stdout; echo err > /dev/stderr")
    assert answer.result["exit_code"] == 0 and answer.stdout == b"out\n"


def test_the_runner_still_times_out_and_sweeps_the_tools_processes(served: Served) -> None:
    slow = served.ask("run", "--as", TOOL, "--timeout-ms", "300", "--grace-ms", "100", "--",
                      "sh", "-c", "trap '' TERM; sleep 30")
    assert slow.result["timed_out"] and slow.result["signal"] == 9
    # The tool cannot kill its runner any more (another real uid), so nothing it starts
    # outlives the command: the runner kills it, and the next sweep finds nothing.
    left = served.ask("run", "--as", TOOL, "--", "sh", "-c",
                      "setsid sleep 30 & kill -KILL $PPID; true")
    assert left.result["stray_killed"] >= 1
    assert served.ask("run", "--as", TOOL, "--sweep", "--", "true").result["stray_swept"] == 0


def test_the_probe_reports_from_the_tools_side(served: Served) -> None:
    probe = served.ask("probe", "--as", TOOL).decoded.probe
    assert probe is not None
    assert (probe["uid"], probe["gid"], probe["groups"]) == (65534, 65534, [])
    assert probe["pid1_status"]["Uid"] == "0 0 0 0"
    assert probe["pid1_signal"].startswith("kill: EPERM")
    assert probe["pid1_environ"].startswith("open: EACCES")
    assert probe["pid1_fd_opens"]["opened"] == []
    assert probe["no_new_privs"] in (0, 1)


@pytest.mark.parametrize("ids", ["0:0", "0:5", "x:1", "1", "1:", ":1", "-1:1"])
def test_as_refuses_root_and_malformed_ids(helper: Path, ids: str) -> None:
    ex = run_tool(helper, ["true"], "--as", ids)
    assert ex.returncode == 125 and "--as wants UID:GID" in ex.helper_stderr


def test_only_uid_0_may_start_a_tool_as_another_uid(helper: Path) -> None:
    ex = run_helper(helper, "run", "--as", "65533:65533", "--", "true",
                    prefix=("setpriv", "--reuid", "65534", "--regid", "65534",
                            "--clear-groups"))
    assert ex.returncode == 125
    assert any("refused" in e and "uid 65534" in e for e in ex.decoded.helper_errors)
