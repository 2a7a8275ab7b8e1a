"""How long `sandbench --version` and `sandbench --help` take to start, and their peak memory:
this checkout against the code at an earlier commit (its tree extracted to a temporary
directory, run with this virtualenv), with `python -c pass` as the floor, in alternating
rounds; medians, each command's excess over the floor, and whether it is within the bound.

    python -m benchmarks.cli_startup [--before 60b00886] [--rounds 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import publish

BEFORE = "60b00886"  # main before the CLI loaded its commands' modules lazily (issue 33)
PROJECT = Path(__file__).resolve().parents[1]
BOUND_S = 0.3  # issue 33: --help and --version start in under 0.3 s
GNU_TIME = "/usr/bin/time"  # Debian's package `time`
COMMANDS = {"floor": ["-c", "pass"], "version": ["-m", "orchestrator.cli", "--version"],
            "help": ["-m", "orchestrator.cli", "--help"]}


def timed(code: Path, argv: list[str]) -> tuple[float, int]:
    """One run of the interpreter in `code` (`-m` looks in the working directory first):
    wall seconds and peak RSS in kB. The peak is GNU time's: a child forked or spawned from
    here would start with this process's pages and count them in its own peak. Exits naming
    the command when it fails."""
    with tempfile.NamedTemporaryFile("r") as peak:
        started = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-f", "%M", "-o", peak.name, sys.executable, *argv],
                              cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"cli_startup: python {' '.join(argv)} in {code} exited "
                     f"{proc.returncode}: {proc.stderr[-500:]}")
        return wall, int(peak.read().split()[-1])


def measure(checkouts: dict[str, Path], rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """Median wall (s) and peak RSS (MB) of every command on every checkout, the rounds
    alternating so that a busy moment of the host falls on all of them alike; one warm-up run
    each first (it writes the bytecode)."""
    samples: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for name, code in checkouts.items():
        for what, argv in COMMANDS.items():
            timed(code, argv)
            samples[(name, what)] = []
    for _ in range(rounds):
        for name, code in checkouts.items():
            for what, argv in COMMANDS.items():
                samples[(name, what)].append(timed(code, argv))
    return {name: {what: {"median_s": round(statistics.median(w for w, _ in runs), 4),
                          "peak_rss_mb": round(statistics.median(r for _, r in runs) / 1024, 1)}
                   for (at, what), runs in samples.items() if at == name}
            for name in checkouts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    if not os.access(GNU_TIME, os.X_OK):
        sys.exit(f"cli_startup: {GNU_TIME} (GNU time) is missing: it measures each run's peak "
                 "memory; Debian: apt-get install time")
    with tempfile.TemporaryDirectory(prefix="sandbench-cli-startup-") as tmp:
        earlier = Path(tmp)
        archive = subprocess.run(["git", "-C", str(PROJECT), "archive", args.before],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(earlier)], input=archive, check=True)
        found = measure({"before": earlier, "now": PROJECT}, args.rounds)
    for name, figures in found.items():
        floor = figures["floor"]["median_s"]
        for what in ("version", "help"):
            figures[what]["excess_s"] = round(figures[what]["median_s"] - floor, 4)
            figures[what]["within_bound"] = figures[what]["median_s"] < BOUND_S
            print(f"{name:6} sandbench --{what:7} {figures[what]['median_s']:.3f} s "
                  f"(floor {floor:.3f} s), {figures[what]['peak_rss_mb']} MB", file=sys.stderr)
    publish("cli_startup", {"before": args.before, "rounds": args.rounds, "bound_s": BOUND_S,
                            "python": sys.version.split()[0], **found})


if __name__ == "__main__":
    main()
