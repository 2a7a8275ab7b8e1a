"""What the limits-in-force facts add to each sandbox start: the probe's own wall time, this
checkout's helper (cgroup limits, MemTotal, a file written and removed in /corpus, /state
and /out) against the helper of an earlier commit, in one container per runtime, probes
interleaved one by one so both see the same machine load.

Each probe runs under this checkout's `run --as` (the tool's uid, no capability, as the
sandbox's probe does), and its time is the `wall_ns` of that result: the engine's exec,
which costs both the same, is left out. Prints the median and 95th percentile of each and
the difference of medians, and writes bench/benchmarks/probe_cost.json. Needs gcc and the
locked base image.

    python -m benchmarks.probe_cost [--before 584dd2f] [--probes 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.sandbox_bench import ms, p95
from benchmarks.split_cost import SOURCE, compile_helper
from orchestrator.sandbox import runtimes
from orchestrator.fsutil import atomic_write_json
from orchestrator.images import ImageLock
from orchestrator.sandbox.spec import Limits
from orchestrator.settings import load_settings

BEFORE = "584dd2f"  # main before the limits-in-force guards (issue 31)
TOOL = "65534:65534"
WRITABLE = ("/corpus", "/state", "/out")


def _result_wall_ns(stream: bytes) -> int:
    """The wall_ns of the `r` frame ending a helper's frame stream."""
    at = 0
    while at + 5 <= len(stream):
        kind, length = stream[at:at + 1], int.from_bytes(stream[at + 1:at + 5], "big")
        payload = stream[at + 5:at + 5 + length]
        at += 5 + length
        if kind == b"r":
            result: dict[str, Any] = json.loads(payload)
            if result.get("exit_code") != 0:
                raise SystemExit(f"probe_cost: the probe failed: {result}")
            return int(result["wall_ns"])
    raise SystemExit("probe_cost: no result frame")


def _container(image: str, runtime: str, helpers: Path) -> str:
    limits = Limits()
    tmpfs = [a for d in WRITABLE for a in ("--tmpfs", f"{d}:uid=65534,gid=65534,mode=0755")]
    argv = ["docker", "run", "-d", "--rm", "--runtime", runtime, "--network", "none",
            "--read-only", "--cap-drop", "ALL", "--cap-add", "SETUID", "--cap-add", "SETGID",
            "--security-opt", "no-new-privileges:true", "--user", "0:0",
            "--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes),
            "--pids-limit", str(runtimes.engine_pids(runtime, limits.pids)),
            "--cpus", str(limits.cpus), "-v", f"{helpers}:/h:ro", *tmpfs,
            "--label", "sandbench.temporary=true", "--entrypoint", "/h/after", image, "idle"]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def _probe(container: str, helper: str) -> int:
    extra = [a for d in WRITABLE for a in ("--writable", d)] if helper == "after" else []
    argv = ["docker", "exec", container, "/h/after", "run", "--as", TOOL, "--", f"/h/{helper}",
            "probe", "--write", "/.sandbench-probe-root-write", *extra]
    return _result_wall_ns(subprocess.run(argv, check=True, capture_output=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--probes", type=int, default=30)
    args = parser.parse_args()
    settings = load_settings()
    image = ImageLock.load(settings.images_lock).image_id("base")
    before = subprocess.run(["git", "show", f"{args.before}:{SOURCE}"], check=True,
                            capture_output=True, text=True).stdout
    figures: dict[str, Any] = {"before": args.before, "probes": args.probes}
    with tempfile.TemporaryDirectory() as tmp:
        helpers = Path(tmp)
        helpers.chmod(0o755)  # the tool's uid runs the helpers from it
        for name, source in (("before", before), ("after", Path(SOURCE).read_text())):
            build = helpers / f"build-{name}"
            build.mkdir()
            compile_helper(source, build).rename(helpers / name)
        for runtime in runtimes.RUNTIMES:
            container = _container(image, runtime, helpers)
            try:
                times: dict[str, list[int]] = {"before": [], "after": []}
                for _ in range(args.probes):
                    for name in times:
                        times[name].append(_probe(container, name))
            finally:
                subprocess.run(["docker", "rm", "-f", container], check=True,
                               capture_output=True)
            medians = {n: statistics.median(t) for n, t in times.items()}
            figures[runtime] = {n: {"median_ms": ms(medians[n]), "p95_ms": ms(p95(t))}
                                for n, t in times.items()}
            figures[runtime]["added_median_ms"] = ms(medians["after"] - medians["before"])
            print(runtime, json.dumps(figures[runtime]))
    atomic_write_json(settings.bench_root / "benchmarks" / "probe_cost.json", figures)


if __name__ == "__main__":
    main()
