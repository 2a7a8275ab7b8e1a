"""gVisor's own host pids in a runsc sandbox: the figures behind runtimes.RUNSC_PIDS_IDLE and
RUNSC_PIDS_PER_TASK. For each count K, a fresh rg sandbox under runsc: its pids as the engine
reports them (the container's pids cgroup, one-shot stats) before any command (`idle`), with
K live `sleep` processes under one shell (`live`), and once they ended (`after`: the sentry
keeps its threads for reuse). Each count's host pids per task of the tool's, and whether
runtimes.engine_pids covers what was seen.

Usage: python -m benchmarks.runsc_pids [--counts 0,1,4,16,32,64]
Written to bench/benchmarks/runsc-pids.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from orchestrator import arms, images, log
from orchestrator.sandbox import runtimes, workfs
from orchestrator.engine import Engine
from orchestrator.fsutil import atomic_write_json
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import SandboxSpec, default_user, for_arm
from orchestrator.settings import load_settings

# Besides the K sleeps, the cell's own tasks: the helper's child that runs the command, and
# the shell.
CELL_TASKS = 2
ROOM = 4096  # the arm's pids for the measurement: far above any count measured


def summary(k: int, idle: int, live: int, after: int) -> dict[str, Any]:
    """One count's figures: the most seen, per task beyond the idle sandbox, and whether
    the engine's limit for that many tasks holds it."""
    tasks = k + CELL_TASKS
    most = max(idle, live, after)
    return {"k": k, "idle": idle, "live": live, "after": after,
            "per_task": round((most - idle) / tasks, 2),
            "covered": most <= runtimes.engine_pids(runtimes.RUNSC, tasks)}


def _count(engine: Engine, spec: SandboxSpec, k: int, work: Path) -> dict[str, Any]:
    argv = ["sh", "-c", f"i=0; while [ $i -lt {k} ]; do sleep 4 & i=$((i+1)); done; wait"]
    with Sandbox(engine, spec) as box:
        cid = box.require_id()
        time.sleep(1.5)  # the sandbox settled, no command yet
        idle = engine.pids(cid)
        cell = threading.Thread(target=box.exec, args=(argv, work / f"k{k}"),
                                kwargs={"timeout_s": 30})
        cell.start()
        time.sleep(2.0)  # every sleep started, none ended
        live = engine.pids(cid)
        cell.join()
        after = engine.pids(cid)
    if idle is None or live is None or after is None:
        sys.exit("runsc_pids: the engine reports no pids count for its containers")
    return summary(k, idle, live, after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="0,1,4,16,32,64")
    args = parser.parse_args()
    log.configure(stream=open("/dev/null", "w"))  # noqa: SIM115 - lives as long as the process
    settings = load_settings()
    engine = Engine.connect()
    if not runtimes.engine_has(engine.info(), runtimes.RUNSC):
        sys.exit("runsc_pids: the engine has no runsc runtime: " + runtimes.REGISTER_FIX)
    lock = images.ImageLock.load(settings.images_lock)
    (arm,) = arms.load_arms(settings.arms_dir, ["rg"])
    arm = dataclasses.replace(arm, limits=dataclasses.replace(arm.limits, pids=ROOM))
    figures: dict[str, Any] = {"runsc_version": runtimes.RUNSC_VERSION,
                               "runsc_args": list(runtimes.RUNSC_ARGS),
                               "idle_constant": runtimes.RUNSC_PIDS_IDLE,
                               "per_task_constant": runtimes.RUNSC_PIDS_PER_TASK, "counts": []}
    with tempfile.TemporaryDirectory(dir=settings.bench_root, prefix="bench-") as tmp:
        work = Path(tmp)
        sizes = workfs.sizes(arm.limits, 0)
        with workfs.mounted(work / "rg", sizes, fresh=True):
            spec = dataclasses.replace(
                for_arm(lock, arm, "bench-runsc-pids", work / "rg", default_user(), sizes),
                runtime=runtimes.RUNSC)
            for k in (int(c) for c in args.counts.split(",")):
                figures["counts"].append(_count(engine, spec, k, work))
    atomic_write_json(settings.bench_root / "benchmarks" / "runsc-pids.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
