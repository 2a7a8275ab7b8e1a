"""The demo as a user who is not root but is in the docker group: the README's main command
(`scripts/demo`) from a checkout that user owns, with a venv made from Debian's python (the
project's interpreter may live where only root may read), against the shared engine.

Loop mounts need root, so every arm gets file systems the engine makes (the engine agent's,
as for an engine of another host): the run says so in run.json, every guard passes, and every
arm gets the golden run's grades. What the run left on the engine is then found and removed by
`sandbench cleanup`'s own code, by its id alone."""

from __future__ import annotations

import grp
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import cleanup, images, remote
from orchestrator.engine import Engine
from orchestrator.images import ImageLock
from orchestrator.score import scorer
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "demo-run"
USER = 47011  # the test's own uid and gid: no passwd entry, owns nothing else here
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, readable by every user
DEMO_TIMEOUT_S = 1500


def _grades(cells: list[dict]) -> dict[tuple[str, str], tuple]:
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"],
                                    (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"))
            for c in cells}


def _checkout_files() -> list[str]:
    """The checkout's files as git lists them (tracked and new, nothing ignored)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    return [f for f in listed.decode().split("\0") if f and (ROOT / f).is_file()]


@pytest.fixture
def home_of_the_user(built: Settings) -> Iterator[Path]:
    """A directory only the test's user owns: a copy of the checkout, and a bench root
    holding the built images' lock; removed afterwards whatever happened."""
    if os.geteuid() != 0:
        pytest.fail("needs root: the test runs the demo as a user it makes up")
    if not Path(SYSTEM_PYTHON).is_file():
        pytest.fail(f"needs Debian's python at {SYSTEM_PYTHON} (apt-get install python3-venv)")
    top = Path(tempfile.mkdtemp(prefix="sandbench-docker-group-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        checkout = top / "checkout"
        for rel in _checkout_files():
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, checkout / rel)
        images.share_lock(built, top / "bench")
        (top / "home").mkdir()
        for path in [top, *top.rglob("*")]:
            os.lchown(path, USER, USER)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _as_the_user(top: Path, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """`argv` in the checkout as uid and gid USER with the docker group alone, the PATH a
    user's login gives (no /usr/sbin), no terminal."""
    docker_gid = grp.getgrnam("docker").gr_gid
    env = {"HOME": str(top / "home"), "PATH": "/usr/local/bin:/usr/bin:/bin", "CI": "true",
           "SANDBENCH_ROOT": str(top / "bench"), "PYTHON": SYSTEM_PYTHON, "LANG": "C.UTF-8"}
    if "DOCKER_HOST" in os.environ:
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    return subprocess.run(["setpriv", f"--reuid={USER}", f"--regid={USER}",
                           f"--groups={docker_gid}", "--", *argv], cwd=top / "checkout",
                          env=env, capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL, check=False)


def test_a_member_of_the_docker_group_runs_the_demo_with_the_golden_grades(
        engine: Engine, built: Settings, home_of_the_user: Path) -> None:
    top = home_of_the_user
    demo = _as_the_user(top, ["scripts/demo"], DEMO_TIMEOUT_S)
    assert demo.returncode == 0, demo.stderr[-3000:]
    run_dir = Path(demo.stdout.strip().splitlines()[-1].removeprefix("run directory: "))
    assert run_dir.parent == top / "bench" / "runs", demo.stdout[-500:]
    try:
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == "complete"
        (entry,) = meta["engines"].values()
        assert entry["placement"] == "engine-made" and entry["on_this_host"] is True
        assert not (run_dir / "work").exists() or not any((run_dir / "work").rglob("*.ext4"))
        for arm in meta["arms"]:
            if meta["arms"][arm].get("unavailable"):
                continue
            verdict = json.loads((run_dir / "guards" / arm / "verdict.json").read_text())
            assert verdict and all(g["ok"] for g in verdict), [g for g in verdict if not g["ok"]]
        # Every file the run wrote here is the user's: nothing needed root.
        assert {p.stat().st_uid for p in run_dir.rglob("*")} == {USER}

        settings = Settings(project_root=top / "checkout", bench_root=top / "bench")
        scores = scorer.score_run(run_dir, settings.suite_dir("demo"), update=False)
        golden = _grades(json.loads((GOLDEN / "scores.json").read_text())["cells"])
        found = _grades(scores["cells"])
        ran = {arm for arm, _ in found if not meta["arms"][arm].get("unavailable")}
        assert ran >= {"rg", "ctags", "code-review-graph"}, ran
        assert {k: v for k, v in found.items() if k[0] in ran} == {
            k: v for k, v in golden.items() if k[0] in ran}
    finally:
        _remove_the_runs_volume(engine, built, meta_run_id(run_dir))


def meta_run_id(run_dir: Path) -> str:
    return str(json.loads((run_dir / "run.json").read_text())["run_id"])


def _remove_the_runs_volume(engine: Engine, built: Settings, run_id: str) -> None:
    """What the run left on the engine, found as `sandbench cleanup` finds it and removed
    by its code, this run's alone (other tests' runs may be on the same engine)."""
    found = [v for v in cleanup.find_volumes(engine)
             if v.detail == f"run={run_id}"]
    assert [v.id for v in found] == [remote.work_volume_name(run_id)]
    agent = ImageLock.load(built.images_lock).image_id(remote.AGENT_IMAGE)
    assert cleanup.remove(engine, found, agent) == found
    assert not engine.list_volumes(f"sandbench.run={run_id}")
