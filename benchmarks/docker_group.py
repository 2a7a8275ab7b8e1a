"""A user who is not root but is in the docker group, for the docker-group test and the
host-kind figure: a checkout that user owns (a copy of this one's files as git lists them), a
bench root holding the built images' lock, and commands run there as that user, with a venv
made by `scripts/setup` from Debian's python (the project's interpreter may live where only
root may read).

The figure, `python -m benchmarks.docker_group [--rounds 2]`, times `sandbench run demo
--jobs 2` as root (the engine's file systems loop-mounted here) and as the docker-group user
(file systems the engine makes), rounds interleaved so both see the same load, and writes
bench/benchmarks/docker_group.json. Needs root, the built images and Debian's python3-venv."""

from __future__ import annotations

import argparse
import grp
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import publish
from orchestrator import images
from orchestrator.sandbox import cleanup, remote
from orchestrator.engine import Engine
from orchestrator.images import ImageLock
from orchestrator.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
USER = 47011  # the user's uid and gid: no passwd entry, owns nothing else here
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, readable by every user


class NeedsRoot(RuntimeError):
    """What the host lacks to act as another user."""


def _checkout_files() -> list[str]:
    """This checkout's files as git lists them (tracked and new, nothing ignored)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    return [f for f in listed.decode().split("\0") if f and (ROOT / f).is_file()]


@contextmanager
def users_home(built: Settings) -> Iterator[Path]:
    """A directory the user alone owns: `checkout/` (this checkout's files), `bench/` (the
    built images' lock) and `home/`; removed afterwards whatever happened."""
    if os.geteuid() != 0:
        raise NeedsRoot("acting as another user needs root")
    if not Path(SYSTEM_PYTHON).is_file():
        raise NeedsRoot(f"needs Debian's python at {SYSTEM_PYTHON} (apt-get install "
                        "python3-venv)")
    top = Path(tempfile.mkdtemp(prefix="sandbench-docker-group-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        for rel in _checkout_files():
            (top / "checkout" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, top / "checkout" / rel)
        images.share_lock(built, top / "bench")
        (top / "home").mkdir()
        for path in [top, *top.rglob("*")]:
            os.lchown(path, USER, USER)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def as_the_user(top: Path, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """`argv` in the checkout as uid and gid USER with the docker group alone, the PATH a
    user's login gives (no /usr/sbin), no terminal."""
    env = {"HOME": str(top / "home"), "PATH": "/usr/local/bin:/usr/bin:/bin", "CI": "true",
           "SANDBENCH_ROOT": str(top / "bench"), "PYTHON": SYSTEM_PYTHON, "LANG": "C.UTF-8"}
    if "DOCKER_HOST" in os.environ:
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    return subprocess.run(["setpriv", f"--reuid={USER}", f"--regid={USER}",
                           f"--groups={grp.getgrnam('docker').gr_gid}", "--", *argv],
                          cwd=top / "checkout", env=env, capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL, check=False)


def remove_work_volume(engine: Engine, lock: Settings, run_id: str) -> list[cleanup.Leftover]:
    """What a run the engine made file systems for left there, found as `sandbench cleanup`
    finds it and removed by its code: this run's alone (others may share the engine)."""
    found = [v for v in cleanup.find_volumes(engine) if v.detail == f"run={run_id}"]
    agent = ImageLock.load(lock.images_lock).image_id(remote.AGENT_IMAGE)
    return cleanup.remove(engine, found, agent)


def _timed(argv: list[str], run: Any) -> tuple[float, dict[str, Any]]:
    began = time.monotonic()
    done = run(argv)
    seconds = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def measure(built: Settings, rounds: int) -> dict[str, Any]:
    engine = Engine.connect()
    command = ["run", "demo", "--jobs", "2", "--json"]
    samples: dict[str, list[float]] = {"root": [], "docker-group": []}
    with users_home(built) as top:
        setup = as_the_user(top, ["bash", "-c", "source scripts/setup && sandbench corpus "
                                  "fetch demo --force >/dev/null"], 900)
        if setup.returncode != 0:
            raise RuntimeError(f"the user's set-up failed: {setup.stderr[-2000:]}")
        for _ in range(rounds):
            seconds, _doc = _timed([str(ROOT / ".venv" / "bin" / "sandbench"), *command],
                                   lambda a: subprocess.run(a, capture_output=True, text=True,
                                                            check=False, cwd=ROOT))
            samples["root"].append(seconds)
            seconds, doc = _timed([".venv/bin/sandbench", *command],
                                  lambda a: as_the_user(top, a, 1800))
            samples["docker-group"].append(seconds)
            run_json = Path(doc["run_dir"]) / "run.json"
            remove_work_volume(engine, built, json.loads(run_json.read_text())["run_id"])
    medians = {k: statistics.median(v) for k, v in samples.items()}
    return {"command": "sandbench " + " ".join(command), "rounds": rounds,
            "median_s": {k: round(v, 1) for k, v in medians.items()},
            "samples_s": {k: [round(x, 1) for x in v] for k, v in samples.items()},
            "docker_group_over_root": round(medians["docker-group"] / medians["root"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    publish("docker_group", measure(load_settings(), args.rounds))


if __name__ == "__main__":
    main()
