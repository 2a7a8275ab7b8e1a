"""The test suite and the benchmarks never signal a daemon they did not start: an engine a
test stops, kills or restarts is a dockerd of its own (benchmarks/second_engine.py, the
`second_engine` fixture), signalled by the pid it was started with. Nothing here reads the
shared engine's pid file or signals processes by name."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The shared engine's pid file, and every way of signalling a process by its name or unit.
FORBIDDEN = re.compile(r"docker\.pid|/run/docker/containerd|\bpkill\b|\bkillall\b|"
                       r"systemctl\s+(stop|restart|kill)|service\s+docker")


def _sources() -> list[Path]:
    here = Path(__file__).resolve()
    files = [*sorted((REPO / "tests").rglob("*.py")), *sorted((REPO / "benchmarks").rglob("*.py"))]
    return [f for f in files if f != here]


def test_no_test_or_benchmark_signals_an_engine_it_did_not_start() -> None:
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in _sources()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if FORBIDDEN.search(line)]
    assert found == []


def test_the_check_sees_the_restart_that_stopped_the_shared_engine() -> None:
    # What the engine-restart fault test once did, before it got an engine of its own.
    assert FORBIDDEN.search('pid = int(Path("/var/run/docker.pid").read_text())')
    assert FORBIDDEN.search('subprocess.run(["pkill", "dockerd"])')
    assert not FORBIDDEN.search("os.kill(self.proc.pid, signal.SIGKILL)")
