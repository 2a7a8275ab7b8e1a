"""Hostile arms against what the HOST does with their files after them, on the real engine
(the probe image, each attack a short Python script):

- a git-config arm: its corpus copy's `.git` gets a config with many routes to a command
  (fsmonitor, sshCommand, a promisor remote's uploadpack with every object deleted, include.path
  to a pager and an alias, filter and textconv drivers, a credential helper, hooks in
  .git/hooks and in a core.hooksPath of its own), each command writing a marker file on the
  host if it ever ran there: none exists after the run, the scoring and an audit, and rg's
  cells are those of a run without it;
- a sparse-file arm: a 1 TiB file in /state and another in /out (no blocks, so the ext4 bound
  does not stop them) cost the host nothing; the listing names them, digested by extents;
- a deep tree (3,000 levels, past the recursion limit and PATH_MAX) in /state, then a resume:
  the resume completes and the listing says where it was cut;
- a HOME turned into a file or a symlink to a host directory, then a resume: refused with one
  clear message naming it, nothing chowned, no cell run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import line_index, suite
from orchestrator.engine import Engine
from orchestrator.errors import SandbenchError
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.untrusted import limits, walk
from orchestrator.isolation import guards
from orchestrator.run import pool, runner
from orchestrator.run.options import Progress, RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite
from tests.security.reading import arm_rows, arm_state

pytestmark = pytest.mark.integration
TIB = 1 << 40
DEEP = 3000

GIT_CONFIG_SCRIPT = """
import os, shutil, sys
M = sys.argv[1]
G = '/corpus/.git'
for d in (G + '/hooks', G + '/h'):
    os.makedirs(d, exist_ok=True)
    for hook in ('post-checkout', 'pre-commit', 'post-commit', 'reference-transaction',
                 'post-index-change', 'pre-auto-gc', 'post-rewrite', 'fsmonitor-watchman'):
        with open(d + '/' + hook, 'w') as f:
            f.write('#!/bin/sh\\ntouch ' + M + '-hook-' + hook + '\\n')
        os.chmod(d + '/' + hook, 0o755)
with open(G + '/extra.cfg', 'w') as f:
    f.write('[core]\\n\\tpager = touch ' + M + '-pager\\n'
            '[alias]\\n\\tls-tree = !touch ' + M + '-alias\\n')
with open(G + '/config', 'w') as f:
    f.write('[core]\\n\\trepositoryformatversion = 1\\n\\tfilemode = true\\n\\tbare = false\\n'
            '\\tfsmonitor = touch ' + M + '-fsmonitor; echo\\n'
            '\\tsshCommand = touch ' + M + '-ssh\\n'
            '\\thooksPath = ' + G + '/h\\n'
            '[remote "origin"]\\n\\turl = ssh://sandbench.invalid/x\\n\\tpromisor = true\\n'
            '\\tuploadpack = touch ' + M + '-uploadpack; exit 1; echo\\n'
            '[extensions]\\n\\tpartialClone = origin\\n'
            '[include]\\n\\tpath = ' + G + '/extra.cfg\\n'
            '[filter "x"]\\n\\tclean = touch ' + M + '-clean\\n'
            '\\tsmudge = touch ' + M + '-smudge\\n\\tprocess = touch ' + M + '-process\\n'
            '[diff "x"]\\n\\ttextconv = touch ' + M + '-textconv\\n'
            '[credential]\\n\\thelper = !touch ' + M + '-credential\\n')
with open('/corpus/.gitattributes', 'w') as f:
    f.write('* filter=x diff=x\\n')
for name in os.listdir(G + '/objects'):
    if name != 'info':
        shutil.rmtree(G + '/objects/' + name, ignore_errors=True)
if os.path.exists(G + '/shallow'):
    os.unlink(G + '/shallow')
print('planted', file=sys.stderr)
"""

SPARSE_SCRIPT = """
import os
with open('/state/huge', 'wb') as f:
    f.truncate(1 << 40)
    f.seek(1 << 39)
    f.write(b'sparse')
with open('/out/huge-out', 'wb') as f:
    f.truncate(1 << 40)
"""

DEEP_SCRIPT = f"""
import os
os.makedirs('/state/deep', exist_ok=True)
os.chdir('/state/deep')
for _ in range({DEEP}):
    os.mkdir('d')
    os.chdir('d')
with open('leaf', 'w') as f:
    f.write('deep')
"""

HOME_FILE_SCRIPT = """
import os
os.rmdir('/state/home')
with open('/state/home', 'w') as f:
    f.write('a file where HOME was')
"""

HOME_LINK_SCRIPT = """
import os, sys
os.rmdir('/state/home')
os.symlink(sys.argv[1], '/state/home')
"""


def _arm_toml(role: str, argv: list[str], setup: list[str] | None = None) -> str:
    return probe_arm("tests/security/test_host_side.py", role, argv, setup=setup)


def _py(script: str, *args: str) -> list[str]:
    assert "{" not in script and "}" not in script  # an arm's argv reads {name} as a value
    return ["python3", "-c", script, *args]


class _Interrupt(Exception):
    """Stands for a run stopped right after an arm's set-up (Ctrl-C, a lost engine)."""


def _stop_after_setup(arm: str) -> Callable[[str, str, str], None]:
    def progress(name: str, cell: str, outcome: str) -> None:
        if name == arm and cell == "_setup":
            raise _Interrupt
    return progress


@dataclass
class Project:
    engine: Engine
    settings: Settings
    markers: Path  # where a command run on the host would leave its marker
    victim: Path  # a host directory a planted link names

    def run(self, name: str, progress: Progress | None = None, **options: Any) -> Path:
        return runner.run(self.settings, RunOptions(name, **options), [pool.one(self.engine)],
                          progress=progress)


@pytest.fixture(scope="module")
def project(engine: Engine, built: Settings,  # noqa: F811
            tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("host-side")
    settings = project_copy(built, root)
    markers, victim = root / "markers", root / "victim"
    markers.mkdir()
    victim.mkdir()
    (victim / "secret.txt").write_text("owned by the host\n")
    arms = {
        "h-gitcfg": _arm_toml("git config", _py(GIT_CONFIG_SCRIPT, str(markers / "m"),
                                                "{symbol}")),
        "h-sparse": _arm_toml("sparse files", _py(SPARSE_SCRIPT, "{symbol}")),
        "h-deep": _arm_toml("deep tree", _py("print()", "{symbol}"), _py(DEEP_SCRIPT)),
        "h-homefile": _arm_toml("home a file", _py("print()", "{symbol}"),
                                _py(HOME_FILE_SCRIPT)),
        "h-homelink": _arm_toml("home a link", _py("print()", "{symbol}"),
                                _py(HOME_LINK_SCRIPT, str(victim))),
    }
    for name, text in arms.items():
        (settings.project_root / "arms" / f"{name}.toml").write_text(text)
    suites = {"host": ["rg", "h-gitcfg", "h-sparse"], "clean": ["rg"],
              "deep": ["h-deep", "rg"], "homefile": ["h-homefile", "rg"],
              "homelink": ["h-homelink", "rg"]}
    for name, names in suites.items():
        write_suite(settings.project_root, name, names, TASKS if name in ("host", "clean")
                    else TASKS[1:])
        suite.seal(suite.load_suite(settings.suites_dir, name), settings)
    return Project(engine, settings, markers, victim)


@pytest.fixture(scope="module")
def host_run(project: Project) -> tuple[Path, float]:
    started = time.monotonic()
    run_dir = project.run("host")
    seconds = time.monotonic() - started
    scorer.score_run(run_dir, project.settings.suite_dir("host"))
    guards.audit(run_dir)
    return run_dir, seconds


def test_no_git_config_route_runs_a_command_on_the_host(project: Project,
                                                        host_run: tuple[Path, float]) -> None:
    run_dir, _ = host_run
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    changes = {c["path"] for c in arm_state(run_dir, "h-gitcfg")["corpus_changes"]}
    assert {".git/config", ".gitattributes", ".git/h/post-checkout"} <= changes  # planted
    assert any(p.startswith(".git/objects/") for p in changes)  # every object gone
    assert sorted(p.name for p in project.markers.iterdir()) == []
    index = json.loads((run_dir / line_index.PIN_LINES).read_text())
    assert index["source"] == line_index.PRISTINE and index["files"]
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["reach_index"]["available"] is True
    clean = project.run("clean", arms=("rg",))
    assert arm_rows(run_dir, "rg") == arm_rows(clean, "rg")


def test_huge_sparse_files_cost_the_host_nothing(host_run: tuple[Path, float]) -> None:
    run_dir, seconds = host_run
    state = arm_state(run_dir, "h-sparse")
    assert ["huge", TIB] in state["state_files"] and state["out_files"] == [["huge-out", TIB]]
    assert state["out_bytes"] == TIB
    assert state["sparse_files"] == {"corpus": [], "state": ["huge"], "out": ["huge-out"]}
    assert state["state_cut"] is None and state["out_cut"] is None
    assert seconds < 240  # hashing 2 TiB byte by byte took ~2.3 hours (1 TiB ~ 69 min)


def test_a_deep_tree_then_a_resume_is_listed_to_its_bound(project: Project) -> None:
    with pytest.raises(_Interrupt):
        project.run("deep", progress=_stop_after_setup("h-deep"))
    (run_dir,) = project.settings.runs_dir.glob("run-deep-*")
    run_dir = project.run("deep", resume=run_dir)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    state = arm_state(run_dir, "h-deep")
    (cut,) = state["state_cut"]
    assert cut["guard"] == "depth" and cut["limit"] == limits.WALK_MAX_DEPTH
    assert cut["at"] == "deep/" + "d/" * (limits.WALK_MAX_DEPTH - 1)
    assert all(p.count("/") < limits.WALK_MAX_DEPTH for p, _ in state["state_files"])
    record = json.loads((run_dir / "cells" / "h-deep" / TASKS[1] / "0" / "record.json")
                        .read_text())
    assert record["outcome"] == "ok"
    walk.remove_tree(run_dir / "work")  # images only, but removed as the rule says


@pytest.mark.parametrize("plant", ["homefile", "homelink"])
def test_a_home_swapped_before_a_resume_is_refused_with_one_message(project: Project,
                                                                    plant: str) -> None:
    victim = project.victim
    owner = victim.stat().st_uid, (victim / "secret.txt").stat().st_uid
    with pytest.raises(_Interrupt):
        project.run(plant, progress=_stop_after_setup(f"h-{plant}"))
    (run_dir,) = project.settings.runs_dir.glob(f"run-{plant}-*")
    with pytest.raises(SandbenchError) as refused:
        project.run(plant, resume=run_dir)
    home = run_dir / "work" / f"h-{plant}" / "state" / "home"
    assert refused.value.data["path"] == str(home)
    assert ("is a symbolic link" if plant == "homelink" else "is not a directory") \
        in refused.value.what
    assert "new run" in refused.value.fix
    assert (victim.stat().st_uid, (victim / "secret.txt").stat().st_uid) == owner
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert not (run_dir / "cells" / f"h-{plant}" / TASKS[1]).exists()
    assert os.listdir(victim) == ["secret.txt"]
