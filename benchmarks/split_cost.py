"""What the split uids cost each measured command: the resident executor's round trip for
`run -- true`, this checkout's helper (PID 1 as root, each command `--as` another uid) against
the helper of an earlier commit (PID 1 and the tool one uid), requests interleaved one by one
so both see the same machine load.

Both helpers are compiled here with the image's flags and served as PID 1 of a pid namespace
of their own (`unshare --pid`), as the sandbox's PID 1 serves them; the earlier one runs
entirely as the tool's uid (`setpriv`), as it did in a sandbox. The container runtime's share
of a call is the same for both and is measured apart (benchmarks.runtime_bench). Prints the
median and 95th percentile of each and the difference of medians, and writes
bench/benchmarks/split_cost.json. Needs root (a uid to drop to), gcc, unshare and setpriv.

    python -m benchmarks.split_cost [--before 46c6bce] [--calls 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.sandbox_bench import ms, p95
from orchestrator.sandbox.execproto import Envelope, encode_request
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings

BEFORE = "46c6bce"  # main before the split uids (issue 30)
TOOL = "65534:65534"
SOURCE = "images/base/sandbench-exec.c"
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-static")


def compile_helper(source: str, into: Path) -> Path:
    (into / "sandbench-exec.c").write_text(source)
    out = into / "sandbench-exec"
    subprocess.run(["gcc", *CFLAGS, "-o", str(out), str(into / "sandbench-exec.c")],
                   check=True, capture_output=True)
    return out


class ServedHelper:
    """A helper serving as PID 1 of its own pid namespace, and its channel."""

    def __init__(self, helper: Path, as_tool: bool) -> None:
        drop = [] if not as_tool else ["setpriv", "--reuid", TOOL.split(":")[0], "--regid",
                                       TOOL.split(":")[1], "--clear-groups"]
        self.proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", *drop,
                                      str(helper), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def call(self, args: list[str]) -> int:
        """Nanoseconds from sending the request to the end of its answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        began = time.monotonic_ns()
        self.proc.stdin.write(encode_request(args))
        self.proc.stdin.flush()
        envelope = Envelope()
        while envelope.end is None:
            header = self.proc.stdout.read(5)
            if len(header) != 5:
                raise SystemExit("split_cost: the helper's channel ended")
            envelope.feed(header + self.proc.stdout.read(int.from_bytes(header[1:], "big")))
            if envelope.error is not None:
                raise SystemExit(f"split_cost: {envelope.error}")
        took = time.monotonic_ns() - began
        if envelope.exit_code() != 0:
            raise SystemExit(f"split_cost: {' '.join(args)} answered {envelope.end!r}")
        return took

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def measure(before: str, calls: int) -> dict[str, Any]:
    project = Path(__file__).resolve().parents[1]
    old_source = subprocess.run(["git", "-C", str(project), "show", f"{before}:{SOURCE}"],
                                check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory(prefix="sandbench-split-") as tmp:
        (Path(tmp) / "old").mkdir()
        (Path(tmp) / "new").mkdir()
        old = ServedHelper(compile_helper(old_source, Path(tmp) / "old"), as_tool=True)
        new = ServedHelper(compile_helper((project / SOURCE).read_text(), Path(tmp) / "new"),
                           as_tool=False)
        seen: dict[str, list[int]] = {"one_uid": [], "split": []}
        try:
            for _ in range(calls):
                seen["one_uid"].append(old.call(["run", "--sweep", "--", "true"]))
                seen["split"].append(new.call(["run", "--as", TOOL, "--sweep", "--", "true"]))
        finally:
            old.close()
            new.close()
    medians = {k: statistics.median(v) for k, v in seen.items()}
    return {"before": before, "calls": calls,
            **{f"{k}_median_ms": ms(v) for k, v in medians.items()},
            **{f"{k}_p95_ms": ms(p95(v)) for k, v in seen.items()},
            "split_minus_one_uid_ms": ms(medians["split"] - medians["one_uid"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    figures = measure(args.before, args.calls)
    atomic_write_json(load_settings().bench_root / "benchmarks" / "split_cost.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
