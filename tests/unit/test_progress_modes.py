"""`sandbench run` as scripts/demo calls it, in a process of its own (a run that reports two
cells, no engine): on a terminal (a pty) the live display; on a pipe in CI a short line per
arm and nothing that needs a terminal (no JSON line per cell, no control sequence)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN_RUN = REPO / "tests" / "golden" / "demo-run"

# The command with the engine, the plan and the run replaced: what reaches the display is
# what a real run's per-cell callback says.
SANDBENCH_RUN = f'''
import shutil, sys
from pathlib import Path
from orchestrator import log
from orchestrator.cli import app
from orchestrator.run import preflight, runner
from orchestrator.run.plan import ArmPlan, Plan

root = Path(sys.argv[1])
arm = ArmPlan("rg", None, None, "", None, (("a", 0), ("a", 1)))
preflight.check = lambda *_, **__: preflight.Preflight(Plan(None, (arm,), ()), (), ())

def execute(settings, options, checked, progress):
    log.get("sandbox").info("sandbox_started", arm="rg")  # the run log's, not the console's
    for task, rep in arm.cells:
        progress("rg", f"{{task}}/{{rep}}", "ok")
    (root / "run").mkdir(exist_ok=True)
    shutil.copyfile("{GOLDEN_RUN / "run.json"}", root / "run" / "run.json")
    return root / "run"

runner.execute = execute
app(["run", "demo", "--bench-root", str(root)], prog_name="sandbench")
'''


def _argv(tmp_path: Path) -> list[str]:
    return [sys.executable, "-c", SANDBENCH_RUN, str(tmp_path)]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def test_off_a_terminal_each_arm_says_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(_argv(tmp_path), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=_env(CI="true", TERM="dumb"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"run directory: {tmp_path / 'run'}\n"
    lines = proc.stderr.splitlines()
    assert lines[0] == "rg: started"
    assert re.fullmatch(r"rg: 2 cells, 0 failures, \d+\.\d s", lines[1]), lines
    assert len(lines) == 2 and "\x1b" not in proc.stderr


def test_on_a_terminal_the_live_display_shows(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(_argv(tmp_path), stdin=follower, stdout=follower, stderr=follower,
                            env=_env(TERM="xterm-256color", COLUMNS="100"))
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty's other end closed: the process is done writing
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=120) == 0, seen
    text = seen.decode("utf-8", errors="replace")
    assert "\x1b[" in text  # the display draws, and redraws, its line
    assert "2/2" in text  # cells done of the total
    assert "rg: started" in text and "rg: 2 cells, 0 failures" in text
    assert '"event"' not in text
