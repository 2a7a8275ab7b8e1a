"""Hostile arms against what the host SPENDS on their files after them, on the real engine
(the probe image, each attack a short Python script in the arm's set-up):

- an extents arm: one file of 100,000 one-block extents in /state, hard-linked 64,999 times
  (the most ext4 allows): the host reads it once (its inode), enumerates its extents against
  the arm's budget (here 20,000 steps, so the budget is what stops it), and the listing is
  cut `extents`;
- a names arm: 1,000,000 empty files in /state: state.json and scores.json keep 10,000 names
  per list with the count and bytes of the rest, the listing is cut at its entry bound, and
  the orchestrator's peak memory for the whole run stays inside the stated budget;
- the same names arm under a 2-second budget: its listing stops, cut `time`.

Around both, rg (first) and rg-late (last) must answer as in a run without them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator import suite
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.untrusted import limits
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite
from tests.security.reading import arm_rows, arm_state, status_kib

pytestmark = pytest.mark.integration
EXTENTS, LINKS = 100_000, 64_999
NAMES = 1_000_000
EXTENT_STEPS = 20_000  # the budget in this test: 10 % of the file's 200,000 steps
SLOW_SECONDS = 2  # the budget of the time test: rg's listings take a fraction of it
# The orchestrator's peak for the whole run (rg, the two hostile arms, rg-late, jobs 1): the
# README's ~600 MiB for one arm's listings plus the process's own (`sandbench run` of the names
# arm alone peaked at 406 MiB, /usr/bin/time -v; main's code at 845 MiB).
PEAK_RSS_MIB = 1024
# Documents: 7 lists of at most 10,000 names; these names are 17-21 bytes.
STATE_JSON_MAX_BYTES = 4 << 20
SCORES_JSON_MAX_BYTES = 4 << 20

EXTENTS_SCRIPT = f"""
import os
fd = os.open('/state/extents', os.O_WRONLY | os.O_CREAT, 0o644)
for i in range({EXTENTS}):
    os.pwrite(fd, b'x', 2 * i * 4096)
os.close(fd)
os.mkdir('/state/links')
for i in range({LINKS}):
    os.link('/state/extents', '/state/links/%05d' % i)
"""

NAMES_SCRIPT = f"""
import os
os.mkdir('/state/many')
for d in range({NAMES} // 1000):
    top = '/state/many/d%04d' % d
    os.mkdir(top)
    for f in range(1000):
        os.close(os.open(top + '/f%04d' % f, os.O_WRONLY | os.O_CREAT, 0o644))
"""


def _arm_toml(role: str, script: str) -> str:
    text = probe_arm("tests/security/test_host_budgets.py", role,
                     ["python3", "-c", "print()", "{symbol}"],
                     setup=["python3", "-c", script])
    return text.replace("timeout_s = 60", "timeout_s = 600")


@dataclass
class Budgets:
    engine: Engine
    settings: Settings

    def run(self, name: str, monkeypatch: pytest.MonkeyPatch, **bounds: int) -> Path:
        with monkeypatch.context() as mp:
            for key, value in bounds.items():
                mp.setattr(limits, key, value)
            return runner.run(self.settings, RunOptions(name), [pool.one(self.engine)])


@pytest.fixture(scope="module")
def project(engine: Engine, built: Settings,  # noqa: F811
            tmp_path_factory: pytest.TempPathFactory) -> Budgets:
    settings = project_copy(built, tmp_path_factory.mktemp("host-budgets"))
    arms = settings.project_root / "arms"
    (arms / "rg-late.toml").write_text((arms / "rg.toml").read_text())
    (arms / "h-extents.toml").write_text(_arm_toml("extents hard-linked", EXTENTS_SCRIPT))
    (arms / "h-names.toml").write_text(_arm_toml("a million names", NAMES_SCRIPT))
    suites = {"budgets": ["rg", "h-extents", "h-names", "rg-late"], "clean": ["rg"],
              "slow": ["rg", "h-names"]}
    for name, names in suites.items():
        write_suite(settings.project_root, name, names, TASKS[1:])
        suite.seal(suite.load_suite(settings.suites_dir, name), settings)
    return Budgets(engine, settings)


@dataclass
class Measured:
    run_dir: Path
    seconds: float
    peak_mib: float


@pytest.fixture(scope="module")
def budgets_run(project: Budgets) -> Measured:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from now: the run's own peak
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        run_dir = project.run("budgets", mp, WALK_MAX_EXTENT_STEPS=EXTENT_STEPS)
    seconds = time.monotonic() - started
    peak = status_kib("VmHWM") / 1024
    scorer.score_run(run_dir, project.settings.suite_dir("budgets"))
    return Measured(run_dir, seconds, peak)


def test_the_run_completes_and_the_well_behaved_arms_are_undisturbed(
        project: Budgets, budgets_run: Measured, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = json.loads((budgets_run.run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    clean = project.run("clean", monkeypatch)
    for arm in ("rg", "rg-late"):
        assert arm_rows(budgets_run.run_dir, arm) == arm_rows(clean, "rg")
        assert arm_state(budgets_run.run_dir, arm) == arm_state(clean, "rg")
    for arm in ("h-extents", "h-names"):
        setup = json.loads((budgets_run.run_dir / "cells" / arm / "_setup" / "record.json")
                           .read_text())
        assert setup["outcome"] == "ok", setup  # the attack was really made


def test_a_hard_linked_file_of_many_extents_is_enumerated_once_to_its_budget(
        budgets_run: Measured) -> None:
    state = arm_state(budgets_run.run_dir, "h-extents")
    (cut,) = state["state_cut"]
    assert cut["guard"] == "extents" and cut["limit"] == EXTENT_STEPS
    assert cut["at"] == "extents" or cut["at"].startswith("links/")
    size = 2 * (EXTENTS - 1) * 4096 + 1
    assert state["state_bytes"] == size  # 65,000 names, one inode
    assert len(state["state_files"]) == limits.DISCLOSED_NAMES
    assert state["state_files_omitted"] == {"count": LINKS + 1 - limits.DISCLOSED_NAMES,
                                            "bytes": (LINKS + 1 - limits.DISCLOSED_NAMES) * size}
    assert state["state_files"][0] == ["extents", size]  # byte order: before links/00000
    # The 1-byte writes left 100,000 blocks: the host's reading and enumeration of them is
    # one file's, whatever the count of links (before: 3.4 hours for this listing).
    assert budgets_run.seconds < 600


def test_a_million_names_cost_the_documents_and_the_host_a_bounded_amount(
        budgets_run: Measured) -> None:
    state = arm_state(budgets_run.run_dir, "h-names")
    (cut,) = state["state_cut"]
    assert cut["guard"] == "entries" and cut["limit"] == limits.WALK_MAX_ENTRIES
    assert len(state["state_files"]) == limits.DISCLOSED_NAMES
    assert [p for p, _ in state["state_files"][:2]] == ["many/d0000/f0000", "many/d0000/f0001"]
    omitted = state["state_files_omitted"]
    assert omitted["bytes"] == 0 and state["state_bytes"] == 0
    # Every file the listing held, listed or counted (the entry bound keeps the directories).
    assert len(state["state_files"]) + omitted["count"] > limits.WALK_MAX_ENTRIES - 1100
    assert (budgets_run.run_dir / "arms" / "h-names" / "state.json").stat().st_size \
        < STATE_JSON_MAX_BYTES
    assert (budgets_run.run_dir / "scores.json").stat().st_size < SCORES_JSON_MAX_BYTES
    scores = json.loads((budgets_run.run_dir / "scores.json").read_text())
    assert scores["state"]["h-names"]["state_files_omitted"] == omitted
    assert budgets_run.peak_mib < PEAK_RSS_MIB, budgets_run.peak_mib


def test_an_arms_listings_stop_at_its_deadline(project: Budgets,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = project.run("slow", monkeypatch, WALK_MAX_SECONDS=SLOW_SECONDS)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    state = arm_state(run_dir, "h-names")
    assert [c["guard"] for c in state["state_cut"]] == ["time"]
    assert state["state_cut"][0]["limit"] == SLOW_SECONDS
    # The corpus copy is listed first, inside the budget: its tamper comparison is whole.
    assert state["corpus_cut"] is None and state["corpus_changes"] == []
    assert arm_state(run_dir, "rg")["state_cut"] is None
