"""How long `scripts/demo` takes a new user: cold (a clean clone of this checkout's HEAD, no
virtualenv, an engine holding no image) and then warm (the same clone and engine again).

Each cold sample gets a private dockerd of its own (benchmarks/second_engine.py: its own data
root, exec root, pid file, socket and bridge under a temporary directory, reached through
DOCKER_HOST; the shared engine is never used or signalled), so nothing any other checkout
built is reused. scripts/demo prints each step's seconds ("demo: STEP N s"); they are kept
with the wall time and the machine's load average (sampled every 5 s), printed, and written
to bench/benchmarks/cold_demo.json.

    .venv/bin/python -m benchmarks.cold_demo [--cold 1] [--warm 3] [--rev HEAD] [--keep]

`--rev` measures another commit of this repository the same way (one that has the step
lines: a63a167 or later), for a before and after on the same machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.second_engine import SecondEngine
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
STEP = re.compile(r"^demo: (\w+) (\d+) s$")
# Variables that would point the clone at this checkout's venv, bench root or engines.
DROPPED = ("SANDBENCH_ROOT", "SANDBENCH_VENV", "SANDBENCH_ENGINES", "SANDBENCH_PROJECT",
           "VIRTUAL_ENV", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")


class LoadSampler:
    """The 1-minute load average every `every` seconds while a sample runs."""

    def __init__(self, every: float = 5.0) -> None:
        self.every, self.values = every, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.values.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        return {"mean": round(statistics.fmean(self.values), 2),
                "max": round(max(self.values), 2)}


def clean_clone(into: Path, rev: str) -> str:
    """A clone of this checkout's commit `rev` (what a new user gets): no venv, no bench."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "-q", head], check=True)
    return head


def demo_env(engine: SecondEngine) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    venv_bin = str(REPO / ".venv" / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p != venv_bin)
    env["DOCKER_HOST"] = engine.url
    return env


def run_demo(clone: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """One `scripts/demo` in `clone`: wall seconds, its steps' seconds, the load meanwhile."""
    with LoadSampler() as load, open(log, "wb") as out:
        began = time.monotonic()
        proc = subprocess.run([str(clone / "scripts" / "demo")], cwd=clone, env=env,
                              stdout=out, stderr=subprocess.STDOUT, check=False)
        wall = time.monotonic() - began
    text = log.read_text(errors="replace")
    if proc.returncode != 0:
        tail = "\n".join(text.splitlines()[-30:])
        raise SystemExit(f"scripts/demo exited {proc.returncode} (log {log}):\n{tail}")
    steps = {m[1]: int(m[2]) for line in text.splitlines() if (m := STEP.match(line))}
    return {"wall_s": round(wall, 1), "steps_s": steps, "load_1min": load.summary()}


def image_seconds(clone: Path) -> dict[str, float]:
    """Each image's build seconds as the clone's lock recorded them (bootstrap included)."""
    import json
    lock = json.loads((clone / "bench" / "images.lock").read_text())
    return {name: entry["build_seconds"] for name, entry in lock["images"].items()}


def one_cold_sample(warm: int, keep: bool, rev: str) -> dict[str, Any]:
    # A short path: the engine's unix socket path holds at most 107 bytes.
    top = Path(tempfile.mkdtemp(prefix="sb-cold-", dir="/tmp"))
    (top / "engine").mkdir()
    engine = SecondEngine(top / "engine", outbound=True)
    try:
        commit = clean_clone(top / "clone", rev)
        engine.start()
        env = demo_env(engine)
        cold = run_demo(top / "clone", env, top / "cold.log")
        print(f"cold: {cold}", flush=True)
        warms = []
        for i in range(warm):
            warms.append(run_demo(top / "clone", env, top / f"warm-{i}.log"))
            print(f"warm: {warms[-1]}", flush=True)
        return {"commit": commit, "cold": cold, "warm": warms,
                "images_s": image_seconds(top / "clone")}
    finally:
        engine.stop()
        if keep:
            print(f"kept {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=1, help="cold samples (each a new engine)")
    parser.add_argument("--warm", type=int, default=3, help="warm samples after each cold one")
    parser.add_argument("--keep", action="store_true", help="keep the clone and logs")
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD)")
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        raise SystemExit("a private dockerd needs root and dockerd")
    samples = [one_cold_sample(args.warm, args.keep, args.rev) for _ in range(args.cold)]
    cold = [s["cold"]["wall_s"] for s in samples]
    warm = [w["wall_s"] for s in samples for w in s["warm"]]
    result = {"cpus": os.cpu_count(), "samples": samples,
              "cold_median_s": statistics.median(cold),
              "warm_median_s": statistics.median(warm) if warm else None}
    out = load_settings().bench_root / "benchmarks" / "cold_demo.json"
    atomic_write_json(out, result)
    print(f"cold demo: median {result['cold_median_s']} s of {cold}; warm: median "
          f"{result['warm_median_s']} s of {warm}; written to {out}")


if __name__ == "__main__":
    main()
