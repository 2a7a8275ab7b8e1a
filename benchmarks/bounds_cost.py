"""What the host-side bounds on tool output (`orchestrator/untrusted/`) cost a real run: the demo
suite run, scored and rendered by this checkout and by the code at an earlier commit, in
alternating rounds on one engine and one bench root, so both see the same machine load.

The earlier code is checked out from this repository into a temporary directory with a
virtualenv of its own (the pinned `constraints.txt` of that commit); both run the
`sandbench` command line as a user would, each with its own sealed suite. Prints per
checkout the median wall of `run demo --jobs 2`, of `score` and of `report`, and the ratio
of medians (this checkout over the earlier one), and writes them to
bench/benchmarks/NAME.json (`--name`, default bounds_cost). Needs the images built and the
demo corpus fetched (scripts/demo does both). Both checkouts use the one image lock, so the
image recipes of both must be the same: `--recipes-from-here` gives the earlier checkout this
checkout's `images/` (and says so in the figures) when only the recipes' layout changed.

    python -m benchmarks.bounds_cost [--before aca440f] [--rounds 3] [--name NAME]
                                     [--recipes-from-here]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings

BEFORE = "aca440f"  # main before the host-side trust boundary (issue 19)
STEPS = ("run", "score", "report")


def checkout(commit: str, into: Path, recipes_from_here: bool = False) -> Path:
    """A clean checkout of `commit` of this repository with its own virtualenv (and this
    checkout's image recipes, when asked)."""
    project = Path(__file__).resolve().parents[1]
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(project), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "-q", "--detach", commit], check=True)
    if recipes_from_here:
        shutil.rmtree(into / "images")
        shutil.copytree(project / "images", into / "images")
    subprocess.run([sys.executable, "-m", "venv", str(into / ".venv")], check=True)
    subprocess.run([str(into / ".venv/bin/python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", "-c", str(into / "constraints.txt"),
                    "-e", str(into)], check=True)
    return into


def one_round(project: Path, env: dict[str, str]) -> dict[str, float]:
    """Seconds of each step for one run of the demo suite by the checkout at `project`."""
    sandbench = str(project / ".venv/bin/sandbench")
    seconds: dict[str, float] = {}
    started = time.monotonic()
    done = subprocess.run([sandbench, "run", "demo", "--jobs", "2", "--json"], cwd=project,
                          env=env, check=True, capture_output=True, text=True)
    seconds["run"] = time.monotonic() - started
    run_dir = json.loads(done.stdout)["run_dir"]
    for step in STEPS[1:]:
        started = time.monotonic()
        subprocess.run([sandbench, step, run_dir], cwd=project, env=env, check=True,
                       capture_output=True)
        seconds[step] = time.monotonic() - started
    shutil.rmtree(run_dir, ignore_errors=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--name", default="bounds_cost", help="bench/benchmarks/NAME.json")
    parser.add_argument("--recipes-from-here", action="store_true",
                        help="the earlier checkout builds nothing: give it these recipes")
    args = parser.parse_args()
    settings = load_settings()
    env = {**os.environ, "SANDBENCH_ROOT": str(settings.bench_root), "CI": "true"}
    samples: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="sandbench-bounds-cost-") as tmp:
        projects = {"before": checkout(args.before, Path(tmp) / "before",
                                       args.recipes_from_here),
                    "after": settings.project_root}
        for number in range(args.rounds):
            order = ("before", "after") if number % 2 == 0 else ("after", "before")
            for which in order:
                samples[which].append(one_round(projects[which], env))
                print(f"round {number + 1} {which}: " + ", ".join(
                    f"{k} {v:.1f} s" for k, v in samples[which][-1].items()), file=sys.stderr)
    medians = {which: {step: statistics.median(s[step] for s in runs) for step in STEPS}
               for which, runs in samples.items()}
    figures: dict[str, Any] = {
        "before": args.before, "rounds": args.rounds, "samples": samples, "medians_s": medians,
        "recipes_from_here": args.recipes_from_here,
        "ratio_after_over_before": {step: medians["after"][step] / medians["before"][step]
                                    for step in STEPS},
        "load_average": os.getloadavg()}
    atomic_write_json(settings.bench_root / "benchmarks" / f"{args.name}.json", figures)
    for step in STEPS:
        print(f"{step:7} before {medians['before'][step]:7.2f} s  after "
              f"{medians['after'][step]:7.2f} s  ratio "
              f"{figures['ratio_after_over_before'][step]:.3f}")


if __name__ == "__main__":
    main()
